"""Finding the input files of a folder: deterministic order, non-inputs skipped, loops caught.

Owns the DESIGN §2 list of non-inputs and the recursive walk (symlink loops and unreadable
folders become diagnostics). It must not open files for reading or know any format.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
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

    def visit(folder: Path, ancestors: frozenset[str]) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            where = rel_of(folder).as_posix() if folder != root else shown
            diags.append(
                dg.make(
                    "unreadable-file", where, None, f"cannot list the folder: {exc.strerror or exc}"
                )
            )
            return
        for entry in entries:
            path = Path(entry.path)
            rel = rel_of(path)
            if is_non_input(rel, exclude):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                is_dir = False
            if is_dir:
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
                visit(path, ancestors | {real})
            elif entry.is_symlink() and not path.exists():
                diags.append(
                    dg.make("unreadable-file", rel.as_posix(), None, "broken symbolic link")
                )
            else:
                found.append(path)

    visit(root, frozenset({os.path.realpath(root)}))
    found.sort(key=lambda p: rel_of(p).as_posix())
    return found, diags
