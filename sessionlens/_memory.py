"""Memory limits: stop with one clear line before the address space runs out.

Owns the guard that reading feeds (DESIGN §1: out of memory is exit 2, one line). Under an
address-space limit (`ulimit -v`, RLIMIT_AS) a native library that runs out does not raise:
polars' allocator aborts the process (SIGABRT), OpenBLAS retries its allocation forever. So the
guard raises `OutOfMemory`, naming the file being read, while some room is still left; a
`MemoryError` that Python raises anyway is worded the same way by the CLI. It must not read or
parse input files.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .errors import OutOfMemory

# Room kept free for what follows the reading (statistics, rendering) and for the native
# libraries' next reservation (arenas and thread stacks come in tens of MB): the larger of
# RESERVE_BYTES and RESERVE_SHARE of the limit.
RESERVE_BYTES = 384 << 20
RESERVE_SHARE = 0.2
CHECK_EVERY = 8 << 20  # bytes read between two looks at the address space in use

# Below this limit the native libraries cannot even start (polars' thread pool and
# allocator arenas, numpy, scipy): refused at once instead of an abort at start-up.
MIN_START_BYTES = 1 << 30

_reading: list[str] = []  # the file being read, for the message of a MemoryError


def limit() -> int | None:
    """The address-space limit in bytes, or None without one (or where it cannot be told)."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return None
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY or soft <= 0 else int(soft)


def frugal() -> None:
    """Ask the native libraries to hold less (before they load; a choice the user made in
    the environment wins). Under an address-space limit: OpenBLAS one thread instead of
    one per core, each with a 32 MB buffer (it retries a failed allocation forever), and
    polars' jemalloc one arena and no background thread (about 400 MB less address space
    for a 300 MB log, the same speed within noise). Else, on glibc Linux, jemalloc's arenas
    per CPU instead of per thread (`PER_CPU_ARENAS`)."""
    if limit() is None:
        if per_cpu_arenas_supported():
            os.environ.setdefault("_RJEM_MALLOC_CONF", PER_CPU_ARENAS)
        return
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("_RJEM_MALLOC_CONF", "background_thread:false,narenas:1")


# A thread's jemalloc arena keeps the pages freed into it until that arena is used again.
# The reader's worker threads make the sample table and then go idle; the table's pages,
# freed as the report drains it, then stayed resident while the main thread allocated anew
# (a 1 GB vLLM log's report: 1.35 GB peak RSS with arenas per thread, 1.08-1.11 GB with
# arenas per CPU, the same time; benchmarks/RESULTS.md).
PER_CPU_ARENAS = "percpu_arena:percpu"


def per_cpu_arenas_supported(
    platform: str | None = None, libc: str | None = None, cpus: tuple[int, ...] | None = None
) -> bool:
    """Whether jemalloc gives arenas per CPU here without a word: Linux with glibc
    (`sched_getcpu`), and a process that may run on every CPU (`cpus`: the CPUs online,
    configured, and in its affinity mask, which jemalloc compares: under `taskset`, a
    cpuset or a pinned container it prints a warning and turns the option off). Asked at
    every start: no module is imported for it."""
    import sys

    if platform is None:
        platform = sys.platform
    if libc is None:
        try:  # what `platform.libc_ver` asks first: "glibc 2.36"
            libc = (os.confstr("CS_GNU_LIBC_VERSION") or "").split(" ")[0]
        except (AttributeError, ValueError, OSError):  # no glibc (musl, macOS, Windows)
            libc = ""
    if not (platform.startswith("linux") and libc == "glibc"):
        return False
    if cpus is None:
        try:
            cpus = (
                os.sysconf("SC_NPROCESSORS_ONLN"),
                os.sysconf("SC_NPROCESSORS_CONF"),
                len(os.sched_getaffinity(0)),
            )
        except (AttributeError, OSError, ValueError):
            return False
    return len(set(cpus)) == 1 and cpus[0] > 0


def can_start(what: str) -> None:
    """Under an address-space limit, start the native libraries before reading `what` (their
    thread pools and arenas reserve hundreds of MB at first use, in one step no check between
    two pieces read could catch), then check that room is left: `OutOfMemory` if not."""
    cap = limit()
    if cap is None:
        return
    if cap < MIN_START_BYTES:
        raise OutOfMemory(
            f"not enough memory to read {what}: the address-space limit is {_mb(cap)}, and "
            f"sessionlens needs at least {_mb(MIN_START_BYTES)} to start; raise the limit "
            "(ulimit -v)"
        )
    import polars as pl
    import scipy.special  # noqa: F401  (its OpenBLAS, numpy's)

    pl.DataFrame({"k": [0, 1, 0], "v": [1.0, 2.0, 3.0]}).group_by("k").agg(pl.col("v").sum())
    check(what, cap)


def in_use() -> int | None:
    """The address space this process has mapped, in bytes (Linux), else None."""
    return _statm(0)


def resident() -> int | None:
    """The bytes of this process resident in memory (Linux), else None."""
    return _statm(1)


def _statm(field: int) -> int | None:
    """Field `field` of `/proc/self/statm` (0: size, 1: resident), in bytes; else None."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            pages = int(fh.read().split()[field])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def _mb(n: int) -> str:
    return f"{n / (1 << 20):,.0f} MB"


def check(what: str, cap: int | None) -> None:
    """`OutOfMemory` when reading `what` has left less room under `cap` than the reserve."""
    if cap is None:
        return
    used = in_use()
    if used is not None and used + max(RESERVE_BYTES, int(cap * RESERVE_SHARE)) > cap:
        raise OutOfMemory(
            f"not enough memory to read {what}: {_mb(used)} of the {_mb(cap)} address-space "
            "limit are in use; raise the limit (ulimit -v) or read fewer or smaller files",
        )


def feeding(advance: Callable[[int], None], what: str) -> Callable[[int], None]:
    """A progress feed for reading `what` that also watches the address space."""
    _reading[:] = [what]
    cap = limit()
    check(what, cap)
    if cap is None:
        return advance
    since = 0

    def feed(n: int) -> None:
        nonlocal since
        advance(n)
        since += n
        if since >= CHECK_EVERY:
            since = 0
            check(what, cap)

    return feed


def reading() -> str | None:
    """The file most recently being read (for wording a MemoryError)."""
    return _reading[0] if _reading else None


def done() -> None:
    """Reading is over: a later MemoryError is not about a file."""
    _reading.clear()


_libc: list[object] = []  # glibc's malloc_trim, once looked up (an empty list: none)


def trim() -> None:
    """Give the C heap's free pages back to the system (glibc's `malloc_trim`; nothing
    elsewhere). numpy's arrays live there: a fold's working arrays, freed slice after
    slice, otherwise stay resident beside the table that grows."""
    if not _libc:
        import ctypes
        import ctypes.util
        import sys

        found = None
        if sys.platform.startswith("linux"):
            try:
                found = ctypes.CDLL("libc.so.6").malloc_trim
            except (OSError, AttributeError):
                found = None
        _libc.append(found)
    fn = _libc[0]
    if fn is not None:
        fn(0)  # type: ignore[operator]


# Resident growth since the last trim that `Trimmer.step` lets stand (see there).
TRIM_SLACK = 64 << 20


class Trimmer:
    """`trim` for a loop that frees working arrays step after step, only once the resident
    set has grown by `slack` bytes since the last trim (or since the first step). A trim
    hands back every free page, and the next step faults them in again: trimming after
    each 256k-row slice of the rank fold cost a 1 GB phase-line log's report 4 million
    page faults and a quarter of its time, for about 80 MB less at its peak. Where the
    resident set cannot be read, every step trims."""

    def __init__(self, slack: int = TRIM_SLACK) -> None:
        self.slack = slack
        self.base: int | None = None  # the resident set at the last trim (before it)

    def step(self) -> None:
        now = resident()
        if now is None:
            trim()
            return
        if self.base is None or now > self.base + self.slack:
            if self.base is not None:
                trim()
            self.base = now
