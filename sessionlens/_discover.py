"""Finding the input files of a folder: deterministic order, non-inputs skipped, loops caught.

Owns the DESIGN §2 list of non-inputs and the recursive walk (symlink loops and unreadable
folders become diagnostics). It must not open files for reading or know any format.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

from . import diagnostics as dg

MANIFEST = "sessionlens.toml"


def is_non_input(rel: PurePosixPath, exclude: Sequence[str] = ()) -> bool:
    """Whether a path (relative to the session) is never an input (DESIGN §2)."""
    name = rel.name
    if any(part.startswith(".") for part in rel.parts):
        return True
    lower = name.lower()
    if name == MANIFEST or lower.endswith(".md") or lower.startswith("readme"):
        return True
    if lower.startswith("report."):
        return True
    text = rel.as_posix()
    return any(fnmatch.fnmatchcase(text, pattern) for pattern in exclude)


def walk(
    root: Path, exclude: Sequence[str] = (), display_root: str | None = None
) -> tuple[list[Path], list[dg.Diagnostic]]:
    """Input files under `root`, sorted by their posix path relative to it."""
    found: list[Path] = []
    diags: list[dg.Diagnostic] = []
    shown = display_root if display_root is not None else str(root)

    def rel_of(p: Path) -> PurePosixPath:
        return PurePosixPath(p.relative_to(root).as_posix())

    def listing(folder: Path) -> list[os.DirEntry[str]]:
        try:
            return sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            where = rel_of(folder).as_posix() if folder != root else shown
            diags.append(
                dg.make(
                    "unreadable-file", where, None, f"cannot list the folder: {exc.strerror or exc}"
                )
            )
            return []

    # Depth first in name order, with a stack of open listings (no recursion: any depth
    # of nested folders is walked).
    stack: list[tuple[Iterator[os.DirEntry[str]], frozenset[str]]] = [
        (iter(listing(root)), frozenset({os.path.realpath(root)}))
    ]
    while stack:
        entries, ancestors = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        path = Path(entry.path)
        rel = rel_of(path)
        if is_non_input(rel, exclude):
            continue
        try:
            mode = os.stat(path).st_mode  # follows links
        except OSError as exc:
            diags.append(_unstattable(rel.as_posix(), entry.is_symlink(), exc))
            continue
        if stat.S_ISDIR(mode):
            real = os.path.realpath(path)
            if real in ancestors:
                diags.append(
                    dg.make(
                        "symlink-loop",
                        rel.as_posix(),
                        None,
                        "this link leads back to a folder that holds it; not followed",
                    )
                )
                continue
            stack.append((iter(listing(path)), ancestors | {real}))
        elif stat.S_ISREG(mode):
            found.append(path)
        else:
            # a FIFO would block the read forever, a device may never end: not inputs
            diags.append(
                dg.make(
                    "unreadable-file",
                    rel.as_posix(),
                    None,
                    f"not a regular file ({_kind(mode)}); not read",
                )
            )

    found.sort(key=lambda p: rel_of(p).as_posix())
    return found, diags


def _unstattable(rel: str, is_link: bool, exc: OSError) -> dg.Diagnostic:
    if exc.errno == errno.ELOOP:
        return dg.make("symlink-loop", rel, None, "this link loops on itself; not followed")
    if is_link and exc.errno == errno.ENOENT:
        return dg.make("unreadable-file", rel, None, "broken symbolic link")
    return dg.make("unreadable-file", rel, None, f"cannot read: {exc.strerror or exc}")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"
