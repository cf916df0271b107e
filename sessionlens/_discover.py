"""Finding the input files of a folder: deterministic order, non-inputs skipped, loops caught.

Owns the DESIGN §2 list of non-inputs and the recursive walk (symlink loops and unreadable
folders become diagnostics). It must not open files for reading or know any format.
"""

from __future__ import annotations

import contextlib
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


def _skipped(rel: str, name: str, exclude: Sequence[str]) -> bool:
    """`is_non_input` for an entry whose folders the walk already let through (none of them
    is a dot-folder), on strings: no per-entry path object, so a deep tree stays linear."""
    if name.startswith("."):
        return True
    lower = name.lower()
    if name == MANIFEST or lower.endswith(".md") or lower.startswith(("readme", "report.")):
        return True
    return any(fnmatch.fnmatchcase(rel, pattern) for pattern in exclude)


def _within(real: str, root_real: str) -> bool:
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _pasted(rel: str, name: str, exclude: Sequence[str]) -> bool:
    """A Markdown file skipped as a non-input that may hold pasted benchmark output: not a
    README or a report by its name, not left out by `exclude`."""
    lower = name.lower()
    if name.startswith(".") or not lower.endswith(".md"):
        return False
    if lower.startswith(("readme", "report", "changelog", "license")):
        return False
    return not any(fnmatch.fnmatchcase(rel, pattern) for pattern in exclude)


def walk(
    root: Path,
    exclude: Sequence[str] = (),
    display_root: str | None = None,
    markdown: list[Path] | None = None,
) -> tuple[list[Path], list[dg.Diagnostic]]:
    """Input files under `root`, sorted by their posix path relative to it. Into `markdown`,
    when given, the skipped Markdown files that may hold pasted output (`_pasted`): the
    caller says a word about each (DESIGN §2: Markdown is never an input).

    A symbolic link that resolves inside `root` is walked or read as its target; one that
    leaves it is an `outside-session` diagnostic and is never opened (DESIGN §8). The walk is
    linear in the entries: real paths are carried down the folders (only a link costs a
    `realpath`), and the folders on the way down are one set.
    """
    found: list[tuple[str, Path]] = []
    diags: list[dg.Diagnostic] = []
    shown = display_root if display_root is not None else display(str(root))
    root_real = os.path.realpath(root)

    def listing(folder: str, rel: str) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(folder) as it:
                return sorted(it, key=lambda e: e.name)
        except OSError as exc:
            where = display(rel.rstrip("/")) or shown
            diags.append(
                dg.make(
                    "unreadable-file", where, None, f"cannot list the folder: {exc.strerror or exc}"
                )
            )
            return []

    # Depth first in name order, with a stack of open listings (no recursion: any depth
    # of nested folders is walked). Each level: its entries, its relative prefix, its real path.
    stack: list[tuple[Iterator[os.DirEntry[str]], str, str]] = [
        (iter(listing(str(root), "")), "", root_real)
    ]
    ancestors = {root_real}
    while stack:
        entries, prefix, folder_real = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            ancestors.discard(folder_real)
            continue
        rel = prefix + entry.name
        if _skipped(rel, entry.name, exclude):
            if markdown is not None and _pasted(rel, entry.name, exclude):
                with contextlib.suppress(OSError):  # a regular file, never a link or a FIFO
                    if entry.is_file(follow_symlinks=False):
                        markdown.append(Path(entry.path))
            continue
        try:
            is_link = entry.is_symlink()
        except OSError:
            is_link = False
        if is_link:
            real = os.path.realpath(entry.path)
            if not _within(real, root_real):
                diags.append(_outside(display(rel), entry.path))
                continue
        else:
            real = os.path.join(folder_real, entry.name)
        try:
            if is_link:
                mode = os.stat(entry.path).st_mode  # the target's
            elif entry.is_dir(follow_symlinks=False):  # the listing's file type: no syscall
                mode = stat.S_IFDIR
            elif entry.is_file(follow_symlinks=False):
                mode = stat.S_IFREG
            else:
                mode = entry.stat(follow_symlinks=False).st_mode
        except OSError as exc:
            diags.append(_unstattable(display(rel), is_link, exc))
            continue
        if stat.S_ISDIR(mode):
            if real in ancestors:
                diags.append(
                    dg.make(
                        "symlink-loop",
                        display(rel),
                        None,
                        "this link leads back to a folder that holds it; not followed",
                    )
                )
                continue
            stack.append((iter(listing(entry.path, rel + "/")), rel + "/", real))
            ancestors.add(real)
        elif stat.S_ISREG(mode):
            found.append((rel, Path(entry.path)))
        else:
            # a FIFO would block the read forever, a device may never end: not inputs
            diags.append(
                dg.make(
                    "unreadable-file",
                    display(rel),
                    None,
                    f"not a regular file ({kind(mode)}); not read",
                )
            )

    found.sort(key=lambda item: item[0])
    return [path for _, path in found], diags


def _outside(rel: str, path: str) -> dg.Diagnostic:
    try:
        target = display(os.readlink(path))
    except OSError:
        target = "an unreadable target"
    return dg.make(
        "outside-session",
        rel,
        None,
        f"this link leads outside the session (to {target}); not read",
    )


def _unstattable(rel: str, is_link: bool, exc: OSError) -> dg.Diagnostic:
    if exc.errno == errno.ELOOP:
        return dg.make("symlink-loop", rel, None, "this link loops on itself; not followed")
    if is_link and exc.errno == errno.ENOENT:
        return dg.make("unreadable-file", rel, None, "broken symbolic link")
    return dg.make("unreadable-file", rel, None, f"cannot read: {exc.strerror or exc}")


def display(text: str) -> str:
    """A path for text output: bytes of a name that are not UTF-8 (held as surrogate escapes,
    as `os.fsdecode` gives them) shown as `\\xNN`; the name itself stays bytes-faithful."""
    if text.isascii():
        return text
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
        return text.encode("utf-8", "backslashreplace").decode("ascii")
    return raw.decode("utf-8", "backslashreplace")


def kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"
