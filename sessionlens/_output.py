"""Writing output files atomically and refusing to overwrite inputs.

Owns the one place where sessionlens writes files: a temp file in the target's folder, then
`os.replace`. On any failure (or an interrupt) the temp file is removed and an existing target
stays untouched.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from .errors import RenderError, UsageError


def refuse_inputs(out: Path, inputs: Iterable[Path]) -> None:
    """Exit-2 error when `out` is one of the inputs (or a file inside an input folder)."""
    try:
        target = out.resolve()
    except OSError:
        return
    for p in inputs:
        try:
            src = p.resolve()
        except OSError:
            continue
        if target == src:
            raise UsageError("refusing to overwrite an input file with the output", path=str(out))


def write_atomic(out: Path, data: str | bytes | Callable[[Path], None]) -> None:
    """Write text, bytes, or whatever `data(tmp_path)` writes, to `out` atomically."""
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise RenderError("cannot write: the folder does not exist", path=str(out))
    if out.is_dir():
        raise RenderError("cannot write: the path is a folder", path=str(out))
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise RenderError(f"cannot write: {exc.strerror or exc}", path=str(out)) from None
    tmp = Path(tmp_name)
    try:
        if callable(data):
            os.close(fd)
            data(tmp)
        else:
            raw = data.encode("utf-8") if isinstance(data, str) else data
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
                fh.flush()
                os.fsync(fh.fileno())
        with contextlib.suppress(OSError):
            if out.exists():
                os.chmod(tmp, out.stat().st_mode & 0o777)
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, out)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise RenderError(f"cannot write: {exc.strerror or exc}", path=str(out)) from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
