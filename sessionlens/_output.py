"""Writing output files atomically and refusing to overwrite inputs.

Owns the one place where sessionlens writes files: a temp file in the target's folder, then
`os.replace`. On any failure (or an interrupt) the temp file is removed and an existing target
stays untouched. A target that is no regular file (`/dev/stdout`, a FIFO, a device) is written
through, never replaced.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import select
import stat
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .errors import RenderError, UsageError


def refuse_inputs(out: Path, inputs: Iterable[Path], what: str = "an input file") -> None:
    """Exit-2 error when `out` is one of the inputs (the same file by any path or link)."""
    try:
        target = out.resolve()
        target_st = os.stat(target) if target.exists() else None
    except OSError:
        return
    for p in inputs:
        try:
            src = p.resolve()
            same = target == src or (
                target_st is not None and os.path.samefile(target, src)  # a hard link
            )
        except OSError:
            continue
        if same:
            raise UsageError(f"refusing to overwrite {what} with the output", path=str(out))


def _cannot(out: Path, reason: str) -> RenderError:
    return RenderError(f"cannot write: {reason}", path=str(out))


def _encode(text: str) -> bytes:
    """UTF-8; a lone surrogate (a file name's non-UTF-8 byte that escaped being shown as
    `\\xNN` upstream) is written escaped, never a UnicodeEncodeError."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        from ._discover import display

        return display(text).encode("utf-8", "backslashreplace")


def write_stdout(text: str) -> None:
    """Text to stdout, escaped as `_encode` does when it cannot be encoded as it is. (A pipe
    that stops being read does not hold up SIGINT here: CPython's buffered writer runs the
    signal handlers after each partial write, before it blocks again.)"""
    try:
        try:
            sys.stdout.write(text)
        except UnicodeEncodeError:  # raised before anything is written: encoded whole
            from ._discover import display

            sys.stdout.write(display(text).encode("utf-8", "backslashreplace").decode("utf-8"))
    except BrokenPipeError:  # `… | head`: the reader is gone, which is no error (DESIGN §1)
        _quiet_stdout()


def _quiet_stdout() -> None:
    """Point stdout at /dev/null: what is left to write (now or at exit) goes nowhere."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class _FdWriter:
    """A binary file object over a descriptor for a writer that streams (polars' CSV): each
    piece is written whole with `os.write`."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.error: OSError | None = None  # what failed, whatever the writer raises for it

    def write(self, data: bytes | bytearray | memoryview) -> int:
        view = memoryview(data).cast("B")
        n = len(view)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as exc:
            self.error = exc
            raise
        return n

    def flush(self) -> None:
        pass


Writer = Callable[[Any], None]  # streams the output into a binary file object


def write_atomic(out: Path, data: str | bytes | Writer) -> None:
    """Write text, bytes or what a writer streams to `out` atomically (a special file is
    written through). A writer never holds the whole output in memory (a CSV of millions of
    samples), except for a special file."""
    if callable(data):
        stream: Writer | None = data
        raw = b""
    else:
        stream = None
        raw = _encode(data) if isinstance(data, str) else data
    try:
        st = os.stat(out)  # follows a link: a link to a file is written at its target
    except (FileNotFoundError, NotADirectoryError):  # the folder checks below say which
        st = None
    except OSError as exc:
        raise _cannot(out, exc.strerror or str(exc)) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise _cannot(out, "the path is a folder")
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stream is not None:
            import io

            buf = io.BytesIO()
            stream(buf)
            raw = buf.getvalue()
        _write_through(out, raw)
        return
    target = out.resolve() if out.is_symlink() else out
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.exists():
        raise _cannot(out, "the folder does not exist")
    if not folder.is_dir():
        raise _cannot(out, f"{folder} is not a folder")
    # A name of our own (random, O_EXCL) rather than mkstemp: we know it before the file
    # exists, so an interrupt at any point can still remove it.
    tmp = folder / f".{target.name}.{secrets.token_hex(6)}.tmp"
    fd = -1
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        if stream is not None:
            writer = _FdWriter(fd)
            try:
                stream(writer)
            except Exception:
                if writer.error is not None:  # a full disk, as polars rewords it
                    raise writer.error from None
                raise
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
        os.close(fd)
        fd = -1
        with contextlib.suppress(OSError):
            if st is not None:
                os.chmod(tmp, st.st_mode & 0o777)
            else:
                umask = os.umask(0)
                os.umask(umask)
                os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except BaseException as exc:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise _cannot(out, exc.strerror or str(exc)) from None
        raise


# How long one wait for a FIFO's reader (or for room in it) lasts before Python looks at its
# signals again. A blocking open() or write() is not enough: polars installs a SIGINT handler
# with SA_RESTART, so the kernel restarts the call and Ctrl-C never got through.
_POLL_S = 0.05


def _write_through(out: Path, raw: bytes) -> None:
    """`/dev/stdout`, a FIFO or a device: it cannot be replaced, so write into it. The open
    and every write are non-blocking, waiting in short polls: SIGINT stops them."""
    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        try:
            fd = os.open(out, flags)
            break
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO that nobody reads yet: wait for a reader
                time.sleep(_POLL_S)
                continue
            raise _cannot(out, exc.strerror or str(exc)) from None
    try:
        _write_all(fd, raw)
    except OSError as exc:
        raise _cannot(out, exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def _write_all(fd: int, raw: bytes) -> None:
    """Every byte to a non-blocking descriptor, polling (interruptibly) while it is full."""
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    view = memoryview(raw)
    while view:
        try:
            view = view[os.write(fd, view[: 1 << 16]) :]
        except BlockingIOError:
            poller.poll(int(_POLL_S * 1000))


DATASET_PREFIX = "session="  # the top folders of a hive-partitioned history dataset


def write_dataset(out: Path, parts: Iterable[tuple[str, bytes]]) -> int:
    """Write a dataset folder (relative paths and bytes) as a whole: into a temp folder
    beside `out`, then renamed into place, so an interrupt or a failure leaves no half
    dataset and an earlier one stays whole. An existing `out` is replaced only when it holds
    a dataset and nothing else (`session=…` folders); otherwise it is a usage error. Returns
    the number of files written."""
    import shutil

    target = Path(os.path.abspath(out))
    if target.exists() or target.is_symlink():
        if target.is_symlink() or not target.is_dir():
            raise UsageError("--out must name a folder for the dataset", path=str(out))
        foreign = [e.name for e in os.scandir(target) if not e.name.startswith(DATASET_PREFIX)]
        if foreign:
            raise UsageError(
                f"the folder holds {foreign[0]!r}, which is not part of a sessionlens dataset; "
                "choose a new or empty folder",
                path=str(out),
            )
    parent = target.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _cannot(out, exc.strerror or str(exc)) from None
    tmp = parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
    old = parent / f".{target.name}.{secrets.token_hex(6)}.old"
    count = 0
    try:
        tmp.mkdir()
        for rel, data in parts:
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            count += 1
        if target.exists():
            os.replace(target, old)
        os.replace(tmp, target)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not target.exists():
            with contextlib.suppress(OSError):
                os.replace(old, target)
        if isinstance(exc, OSError):
            raise _cannot(out, exc.strerror or str(exc)) from None
        raise
    shutil.rmtree(old, ignore_errors=True)
    return count
