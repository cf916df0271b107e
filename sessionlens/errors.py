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


class SessionlensError(Exception):
    """Base of every error that stops the tool with one line on stderr."""

    code: str = "error"
    exit_code: int = 2

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line

    def __str__(self) -> str:
        where = self.path or "sessionlens"
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: error: {self.message} [{self.code}]"


class UsageError(SessionlensError):
    """The command line cannot be carried out as given."""

    code = "usage"


class InputError(SessionlensError):
    """The inputs exist but give nothing to work with, or would be overwritten."""

    code = "input"


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
