"""The one place sessionlens runs a program: `git`, for `check` inside a commit (DESIGN §8).

Owns running `git` with a fixed argument list (never a shell, never text from a log or a
report as a command) and turning its failures into `GitError`. Everything else in the package
reads files itself; only the staged versions of a commit need git to be read faithfully
(its index, packs, filters and symlinks).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path


class GitError(Exception):
    """git is missing or failed; the message is one line for a finding."""


def absolute_env(cwd: Path) -> dict[str, str]:
    """The environment with git's path variables made absolute (hooks may get relative ones,
    e.g. `GIT_INDEX_FILE=.git/index.lock`), so git can be run from another folder."""
    env = dict(os.environ)
    for key in ("GIT_INDEX_FILE", "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR"):
        value = env.get(key)
        if value and not os.path.isabs(value):
            env[key] = os.path.join(cwd, value)
    return env


def run(args: Sequence[str], cwd: Path, env: dict[str, str], stdin: bytes | None = None) -> bytes:
    """`git ARGS` in `cwd`; its stdout, or `GitError` with git's first line of stderr."""
    exe = shutil.which("git")
    if exe is None:
        raise GitError("git is not installed, so the staged changes cannot be read")
    try:
        proc = subprocess.run(
            [exe, *args],
            cwd=cwd,
            env=env,
            input=stdin if stdin is not None else b"",
            capture_output=True,
            check=False,
            shell=False,
        )
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        first = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        why = first[0] if first else f"exit status {proc.returncode}"
        raise GitError(f"git {args[0]} failed: {why}")
    return proc.stdout
