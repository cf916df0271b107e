"""Exceptions that stop sessionlens; bad log lines are never exceptions (they are diagnostics).

Hierarchy::

    SessionlensError            one user-ready line, an exit code per command
    ├── UsageError              bad command line, missing path, conflicting formats   (exit 2)
    ├── InputError              nothing readable at all, input used as --out          (exit 2)
    │   └── OutOfMemory         the address-space limit is nearly used up             (exit 2)
    ├── ManifestError           malformed sessionlens.toml (2 for report, 1 for check)
    ├── RenderError             cannot write or render the output                     (exit 2)
    └── ParseError              strict-mode parse: the first error-level diagnostic   (exit 2)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .diagnostics import Diagnostic


class SessionlensError(Exception):
    """Base of every error that stops the tool. It carries data, not CLI text:

    - `message`: what went wrong, in the user's words (no location, no code);
    - `path`: the file or folder it concerns, or None (the command line itself);
    - `line`: the 1-based line of `path`, or None;
    - `code`: the class's short code (`usage`, `input`, `manifest`, `output`, `parse`);
    - `exit_code`: the CLI's exit code for it (DESIGN §1).

    `str(exc)` is `path:line: message` (the parts that exist); the CLI alone prints
    `cli_line()`, the one-line form `path:line: error: message [code]`.
    """

    code: str = "error"
    exit_code: int = 2

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line

    def _where(self) -> str | None:
        if self.path is None:
            return None
        return self.path if self.line is None else f"{self.path}:{self.line}"

    def __str__(self) -> str:
        where = self._where()
        return self.message if where is None else f"{where}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, path={self.path!r}, line={self.line!r})"

    def cli_line(self) -> str:
        """The line the CLI prints on stderr (DESIGN §1): `sessionlens` stands for no path."""
        return f"{self._where() or 'sessionlens'}: error: {self.message} [{self.code}]"


class UsageError(SessionlensError):
    """The command line cannot be carried out as given."""

    code = "usage"


class InputError(SessionlensError):
    """The inputs exist but give nothing to work with, or would be overwritten.

    `diagnostics` holds what was said of the inputs on the way (why nothing could be read:
    a binary file, an empty one, an unknown format); the CLI prints them before the error."""

    code = "input"

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        diagnostics: Sequence[Diagnostic] = (),
    ) -> None:
        super().__init__(message, path=path, line=line)
        self.diagnostics = list(diagnostics)


class OutOfMemory(InputError):
    """Reading would need more memory than the process may have (DESIGN §1: exit 2)."""

    code = "memory"


class ManifestError(SessionlensError):
    """`sessionlens.toml` is malformed; the message names the line."""

    code = "manifest"


class RenderError(SessionlensError):
    """The output cannot be rendered or written."""

    code = "output"


class ParseError(SessionlensError):
    """Strict parsing met an error-level diagnostic."""

    code = "parse"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the known name closest to a misspelt one, else ``."""
    import difflib

    by_lower: dict[str, str] = {}
    for k in known:
        by_lower.setdefault(k.lower(), k)
    near = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return f"; did you mean {by_lower[near[0]]!r}?" if near else ""
