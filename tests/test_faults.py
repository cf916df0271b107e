"""CLI faults (issue 8, item 3): each gives one clear stderr line, the DESIGN §1 exit code and
no traceback; no partial or temp output is ever left, and an existing report stays untouched.

Tests run as root, where file modes do not stop reads or writes: unreadable files are
simulated by making `Path.open` raise PermissionError (or EIO mid-read), unwritable places are
a path under a regular file, /proc, or `os.open` raising; a full disk is `os.write` raising
ENOSPC after a partial write; interrupts are real SIGINT/SIGTERM sent to a subprocess.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessionlens.cli import main

from .conftest import FIXTURES, ROOT

SEED = FIXTURES / "formats" / "bench-stdout" / "seed-truncated.log"
SERVER = FIXTURES / "formats" / "sglang-server" / "d07-p06-0.5.1-eagle3-tp2.log"
EXAMPLE = FIXTURES / "sessions" / "eagle3-attention-mode"
SHAPE = re.compile(
    r"^(?P<path>\S.*?)(?::(?P<line>\d+))?: (?P<level>info|warning|error): (?P<msg>.+) "
    r"\[(?P<code>[a-z0-9-]+)\]$"
)
OLD = "an existing report that must survive\n"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _as_at_a_terminal() -> None:
    """SIGINT handled as at a terminal, in a child about to be interrupted: a test run
    started in the background by a shell inherits it ignored, and sessionlens (rightly)
    keeps ignored a signal it finds ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str, pattern: str) -> re.Match[str]:
    """Every stderr line has the diagnostic shape; exactly one matches `pattern`."""
    assert "Traceback" not in err
    lines = err.splitlines()
    for line in lines:
        assert SHAPE.match(line), f"not in `path:line: level: message [code]` shape: {line!r}"
    hits = [m for line in lines if (m := re.search(pattern, line))]
    assert len(hits) == 1, f"{pattern!r} should match one line of:\n{err}"
    return hits[0]


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def make_session(root: Path) -> Path:
    for name in ("base", "cand"):
        (root / name).mkdir(parents=True)
        (root / name / "bench.log").write_bytes(SEED.read_bytes())
    return root


# ---------------------------------------------------------------- missing and unreadable


@pytest.mark.parametrize("command", ["parse", "report", "check"])
def test_missing_path_is_usage_exit_2(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, command, "nope/x.log")
    assert (code, out) == (2, "")
    m = one_line(err, r"^nope/x\.log: error: no such (file or )?folder")
    assert m.string.endswith("[usage]")


@pytest.fixture
def deny(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """Names whose `Path.open` raises PermissionError, as a non-root user would see."""
    denied: set[str] = set()
    real = Path.open

    def fake(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name in denied:
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", fake)
    return denied


def test_unreadable_file_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, deny: set[str]
) -> None:
    log = tmp_path / "secret.log"
    log.write_bytes(SEED.read_bytes())
    session = make_session(tmp_path / "s")
    (session / "cand" / "secret.log").write_bytes(SEED.read_bytes())
    deny.add("secret.log")
    code, out, err = run(capsys, "parse", str(log))
    assert (code, out) == (2, "")
    one_line(
        err,
        rf"^{re.escape(str(log))}: error: cannot read the file: Permission denied \[unreadable-file\]$",
    )
    one_line(err, r"^sessionlens: error: no sample could be read from 1 file \[input\]$")

    # in a session the other inputs still make the report (exit 0), the fault is named once
    code, out, err = run(capsys, "report", str(session), "--quiet", "--format", "json")
    assert code == 0
    assert '"code": "unreadable-file"' in out or '"code":"unreadable-file"' in out
    one_line(err, r"^cand/secret\.log: error: cannot read the file: Permission denied")


def test_file_failing_mid_read_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EIO after the first block (a dying disk, a stale NFS handle): no traceback, no guess."""
    log = tmp_path / "flaky.log"
    log.write_bytes(SEED.read_bytes() * 4000)  # ~2 MB: more than one read
    real = Path.open

    class Flaky:
        def __init__(self, fh: Any) -> None:
            self.fh, self.reads = fh, 0

        def read(self, n: int = -1) -> bytes:
            self.reads += 1
            if self.reads > 3:
                raise OSError(errno.EIO, "Input/output error")
            return bytes(self.fh.read(n))

        def __getattr__(self, name: str) -> Any:
            return getattr(self.fh, name)

        def __enter__(self) -> Flaky:
            return self

        def __exit__(self, *exc: object) -> None:
            self.fh.close()

    def fake(self: Path, *args: Any, **kwargs: Any) -> Any:
        fh = real(self, *args, **kwargs)
        return Flaky(fh) if self.name == "flaky.log" else fh

    monkeypatch.setattr(Path, "open", fake)
    code, out, err = run(capsys, "parse", str(log), "--format", "csv")
    one_line(err, r"flaky\.log: error: reading failed: Input/output error \[unreadable-file\]$")
    # what was read before the failure is true and kept (exit 0 with the error listed)
    assert code == 0
    rows = out.splitlines()[1:]
    assert 0 < len(rows) < 20 * 4000
    code, seed_csv, _ = run(capsys, "parse", str(SEED), "--format", "csv")

    # line..ts and metric,value (the launch names the folder as given, which differs)
    def row(r: str) -> tuple[str, str]:
        cells = r.split(",")
        return ",".join(cells[2:7]), ",".join(cells[-2:])

    seed_values = {row(r) for r in seed_csv.splitlines()[1:]}
    assert {row(r) for r in rows} <= seed_values


def test_fifo_in_a_session_is_not_waited_for(tmp_path: Path) -> None:
    """A named pipe nobody writes to would block a read forever: it is named, not opened."""
    session = make_session(tmp_path / "s")
    os.mkfifo(session / "cand" / "live.log")
    os.symlink("/dev/zero", session / "cand" / "zeros.log")  # endless, and outside: never read
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sessionlens",
            "report",
            str(session),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        check=False,
    )
    assert proc.returncode == 0
    one_line(
        proc.stderr,
        r"^cand/live\.log: error: not a regular file \(a named pipe\); not read \[unreadable-file\]$",
    )
    one_line(
        proc.stderr,
        r"^cand/zeros\.log: warning: this link leads outside the session \(to /dev/zero\); not read \[outside-session\]$",
    )


def test_fifo_given_on_the_command_line_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`sessionlens parse <(zcat run.log.gz)` passes a pipe: named explicitly, it is read."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as fh:
            fh.write(SEED.read_bytes())

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    code, out, _ = run(capsys, "parse", str(fifo), "--format", "csv")
    writer.join(10)
    assert code == 0
    assert out.count("throughput_tok_s") == 5


def test_folder_where_a_file_is_expected_and_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    session = make_session(tmp_path / "s")
    code, out, err = run(capsys, "report", str(session), "--quiet", "--out", str(tmp_path))
    assert (code, out) == (2, "")
    one_line(
        err, rf"^{re.escape(str(tmp_path))}: error: cannot write: the path is a folder \[output\]$"
    )
    code, out, err = run(capsys, "report", str(SEED))
    assert (code, out) == (2, "")
    one_line(err, r"error: not a folder: `report` takes a session folder \[usage\]$")


def test_symlink_loops_are_named_once_and_not_followed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    session = make_session(tmp_path / "s")
    os.symlink("..", session / "cand" / "up")  # back to the session: an endless tree
    os.symlink("self.log", session / "cand" / "self.log")  # a link to itself (ELOOP)
    os.symlink("missing.log", session / "cand" / "gone.log")
    code, out, err = run(capsys, "parse", str(session), "--format", "csv")
    assert code == 0
    assert out.count("throughput_tok_s") == 10  # both real logs, once each
    shown = re.escape(str(session))
    one_line(
        err,
        rf"^{shown}/cand/up: error: this link leads back to a folder that holds it; not followed \[symlink-loop\]$",
    )
    one_line(
        err,
        rf"^{shown}/cand/self\.log: error: this link loops on itself; not followed \[symlink-loop\]$",
    )
    one_line(err, rf"^{shown}/cand/gone\.log: error: broken symbolic link \[unreadable-file\]$")
    code, _, err = run(capsys, "report", str(session), "--quiet", "--format", "json")
    assert code == 0
    one_line(err, r"^cand/up: error: .*\[symlink-loop\]$")


# ---------------------------------------------------------------- odd contents


def test_a_100_mb_line_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """A `--log-requests` line can be huge: it is one line, the samples around it all count.

    Peak RSS is a sanity bound only (measured ~0.45 GB for the 100 MB line): it fails if the
    line were copied many times over or the whole file held several times.
    """
    lines = SERVER.read_bytes().split(b"\n")
    huge = (
        b"[2025-01-01 10:00:00 TP0] Finish: obj=GenerateReqInput(text='"
        + b"x" * (100 << 20)
        + b"')"
    )
    big = tmp_path / "server.log"
    big.write_bytes(b"\n".join([*lines[:20], huge, *lines[20:]]))
    out = tmp_path / "rows.csv"
    probe = textwrap.dedent(
        f"""
        import resource, sys
        from sessionlens.cli import main
        code = main(["parse", {str(big)!r}, "--out", {str(out)!r}])
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
        sys.exit(code)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=300,
        env=ENV,
        check=False,
    )
    *_diags, peak_kib = proc.stderr.splitlines()
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert int(peak_kib) < 1_500_000, f"peak RSS {int(peak_kib) // 1024} MiB for a 100 MiB line"
    small = tmp_path / "small.log"
    small.write_bytes(SERVER.read_bytes())
    expected = subprocess.run(
        [sys.executable, "-m", "sessionlens", "parse", str(small), "--format", "csv"],
        capture_output=True,
        text=True,
        env=ENV,
        check=True,
    ).stdout

    def pairs(csv: str) -> list[tuple[str, str]]:
        return sorted((r.split(",")[-2], r.split(",")[-1]) for r in csv.splitlines()[1:])

    assert pairs(out.read_text()) == pairs(expected)


def test_binary_files_are_unknown_not_fatal(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    session = make_session(tmp_path / "s")
    elf = session / "cand" / "a.out"
    elf.write_bytes(Path(sys.executable).resolve().read_bytes()[: 2 << 20])
    gz = session / "cand" / "run.log.gz"
    gz.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 64)  # gzip magic, then junk
    png = session / "cand" / "plot.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64)
    code, out, err = run(capsys, "parse", str(elf))
    assert (code, out) == (2, "")
    shown = re.escape(str(elf))
    one_line(err, rf"^{shown}: error: an executable, not a text log; .*\[unknown-format\]$")
    code, out, err = run(capsys, "report", str(session), "--format", "json")
    assert code == 0
    # one line each, not a line for its NULs and another for its bytes that are not UTF-8
    assert [ln for ln in err.splitlines() if "a.out" in ln or "plot.png" in ln] == [
        'cand/a.out: error: an executable, not a text log; leave it out: exclude = ["cand/a.out"] '
        "in sessionlens.toml [unknown-format]",
        "cand/plot.png: error: a PNG image, not a text log; leave it out: "
        'exclude = ["cand/plot.png"] in sessionlens.toml [unknown-format]',
    ]
    sources = {s["path"]: s for s in json.loads(out)["sources"]}  # in the digest all the same
    assert sources["cand/plot.png"]["sha256"] == hashlib.sha256(png.read_bytes()).hexdigest()
    one_line(
        err,
        r"^cand/run\.log\.gz: warning: the gzip stream is cut or corrupt .*\[truncated-output\]$",
    )


@pytest.mark.parametrize("indent", [None, 2])
def test_a_profiler_trace_is_named_not_read_as_lines(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, indent: int | None
) -> None:
    """PyTorch's `*.pt.trace.json` (SGLang's and vLLM's `--profile`), one line or
    pretty-printed: one line says what it is; its bytes are hashed, not held as a line."""
    trace = tmp_path / "rank0.pt.trace.json"
    events = [{"ph": "X", "name": "aten::mm", "ts": i, "dur": 2} for i in range(3)]
    trace.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=indent))
    code, out, err = run(capsys, "parse", str(trace), "--format", "json")
    assert (code, out) == (2, "")
    assert err.splitlines()[0] == (
        f"{trace}: error: a profiler trace (JSON), not a log; leave it out with `exclude` in "
        "sessionlens.toml [unknown-format]"
    )


def test_values_near_the_float_limit_are_reported_not_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A log printing absurd values (309 digits of throughput, a running count near 1e308)
    is reported like any: sums beyond float range do not end the run."""
    huge = "9" * 308 + ".00"
    for config in ("base", "cand"):
        folder = tmp_path / "s" / config
        folder.mkdir(parents=True)
        (folder / "server.log").write_text(
            "".join(
                f"[2025-11-14 09:00:0{s} TP0] Decode batch, #running-req: {huge[:-3]}, "
                f"#token: 100, token usage: 0.01, accept len: 2.00, "
                f"gen throughput (token/s): {huge}, #queue-req: 0, \n"
                for s in range(1, 4)
            )
        )
    for fmt in ("md", "json"):
        code, out, err = run(capsys, "report", str(tmp_path / "s"), "--format", fmt)
        assert code == 0, err
        assert "Traceback" not in err
        assert "Warning" not in err  # no numpy RuntimeWarning either
        assert "gen_throughput_tok_s" in out
    code, out, err = run(capsys, "parse", str(tmp_path / "s" / "base" / "server.log"))
    assert code == 0, err
    row = next(line for line in out.splitlines() if "gen_throughput_tok_s" in line)
    assert " inf " not in row  # the mean of three values near 1e308 is one of them


# ---------------------------------------------------------------- where --out points


def _out_is_input_cases(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    log = tmp_path / "in" / "run.log"
    log.parent.mkdir()
    log.write_bytes(SEED.read_bytes())
    yield log, log
    yield log, tmp_path / "in" / ".." / "in" / "run.log"
    (tmp_path / "link.log").symlink_to(log)
    yield log, tmp_path / "link.log"
    os.link(log, tmp_path / "hard.log")
    yield log, tmp_path / "hard.log"


def test_out_that_is_an_input_by_any_path_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for log, out in _out_is_input_cases(tmp_path):
        code, stdout, err = run(capsys, "parse", str(log), "--format", "csv", "--out", str(out))
        assert (code, stdout) == (2, ""), out
        one_line(err, r"refusing to overwrite an input file with the output \[usage\]$")
        assert log.read_bytes() == SEED.read_bytes()
    session = make_session(tmp_path / "s")
    (tmp_path / "report.md").symlink_to(session / "base" / "bench.log")
    code, _, err = run(
        capsys, "report", str(session), "--quiet", "--out", str(tmp_path / "report.md")
    )
    assert code == 2
    one_line(err, r"refusing to overwrite an input file with the output \[usage\]$")
    assert (session / "base" / "bench.log").read_bytes() == SEED.read_bytes()


@pytest.mark.parametrize(
    "where",
    ["under-a-file", "proc", "denied"],
)
def test_unwritable_out_keeps_the_old_report(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    session = make_session(tmp_path / "s")
    old = tmp_path / "report.md"
    old.write_text(OLD)
    if where == "under-a-file":
        out, msg = old / "report.md", rf"cannot write: {re.escape(str(old))} is not a folder"
    elif where == "proc":
        out, msg = Path("/proc/sessionlens-report.md"), r"cannot write: "
    else:
        out, msg = old, r"cannot write: Permission denied"
        real = os.open

        def deny(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if flags & os.O_CREAT:
                raise PermissionError(errno.EACCES, "Permission denied")
            return real(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", deny)
    code, stdout, err = run(capsys, "report", str(session), "--quiet", "--out", str(out))
    assert (code, stdout) == (2, "")
    one_line(err, rf"^{re.escape(str(out))}: error: {msg}.*\[output\]$")
    assert old.read_text() == OLD
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(
    ("command", "suffix"),
    [
        ("report", "md"),
        ("report", "html"),
        ("report", "json"),
        ("parse", "csv"),
        ("parse", "parquet"),
    ],
)
def test_full_disk_leaves_no_partial_file(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    suffix: str,
) -> None:
    """ENOSPC after some bytes made it: the temp file goes, the old output stays whole."""
    session = make_session(tmp_path / "s")
    out = tmp_path / f"result.{suffix}"
    out.write_text(OLD)
    real = os.write

    def full(fd: int, data: Any) -> int:
        if fd > 2:
            real(fd, bytes(data[:100]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    args = ["report", str(session), "--quiet"] if command == "report" else ["parse", str(session)]
    code, stdout, err = run(capsys, *args, "--out", str(out))
    assert (code, stdout) == (2, "")
    one_line(
        err, rf"^{re.escape(str(out))}: error: cannot write: No space left on device \[output\]$"
    )
    assert out.read_text() == OLD
    assert leftovers(tmp_path) == []


def test_fsync_failure_is_a_write_failure(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Delayed allocation reports a full disk or a dying device at fsync, not at write."""
    out = tmp_path / "rows.json"
    out.write_text(OLD)

    def broken(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    code, _, err = run(capsys, "parse", str(SEED), "--out", str(out))
    assert code == 2
    one_line(err, r"cannot write: Input/output error \[output\]$")
    assert out.read_text() == OLD
    assert leftovers(tmp_path) == []


def test_out_to_a_pipe_is_written_through_not_replaced(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`--out /dev/stdout` or a FIFO cannot be renamed over: replacing it would turn the
    device node into a regular file (as root: /dev/stdout itself)."""
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, _, _ = run(capsys, "parse", str(SEED), "--out", str(fifo))
    reader.join(10)
    assert code == 0
    assert fifo.is_fifo()
    assert got
    assert got[0].startswith(b"{")
    assert b"throughput_tok_s" in got[0]
    assert leftovers(tmp_path) == []


def test_out_through_a_symlink_writes_the_target(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    real = tmp_path / "reports" / "latest.json"
    real.parent.mkdir()
    real.write_text(OLD)
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    code, _, _ = run(capsys, "parse", str(SEED), "--out", str(link))
    assert code == 0
    assert link.is_symlink()
    assert real.read_text().startswith("{")
    assert leftovers(tmp_path) == leftovers(real.parent) == []


# ---------------------------------------------------------------- interrupts


def test_signal_while_writing_removes_the_temp_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real SIGINT delivered between two writes of the output: exit 130, nothing half-written."""
    # as at a terminal (see `_as_at_a_terminal`)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _interrupt_a_write(capsys, tmp_path, monkeypatch)
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def _interrupt_a_write(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = make_session(tmp_path / "s")
    out = tmp_path / "report.html"
    out.write_text(OLD)
    real = os.write

    def slow(fd: int, data: Any) -> int:
        if fd > 2:
            n = real(fd, bytes(data[:64]))
            signal.raise_signal(signal.SIGINT)
            return n
        return real(fd, data)

    monkeypatch.setattr(os, "write", slow)
    code, stdout, err = run(capsys, "report", str(session), "--quiet", "--out", str(out))
    assert (code, stdout, err) == (130, "", "sessionlens: error: interrupted [interrupted]\n")
    assert out.read_text() == OLD
    assert leftovers(tmp_path) == []


def _big_session(root: Path, copies: int = 1000) -> Path:
    text = SERVER.read_bytes()
    for name in ("base", "cand"):
        (root / name).mkdir(parents=True)
        (root / name / "server.log").write_bytes(text * copies)  # 1000: ~11 MB, seconds to parse
    return root


def _reading(pid: int, folder: Path) -> bool:
    try:
        return any(
            os.readlink(f"/proc/{pid}/fd/{fd}").startswith(str(folder))
            for fd in os.listdir(f"/proc/{pid}/fd")
        )
    except OSError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_mid_report_exits_130_and_leaves_nothing(tmp_path: Path, signum: int) -> None:
    session = _big_session(tmp_path / "s")
    out = tmp_path / "report.md"
    out.write_text(OLD)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sessionlens", "report", str(session), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        preexec_fn=_as_at_a_terminal,
    )
    try:
        deadline = time.monotonic() + 60
        # what was seen, not a second look: between two inputs none is open
        while not (started := _reading(proc.pid, session)) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)
        assert started, "the report never started reading its inputs"
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()  # also closes the pipes (no ResourceWarning in a later test)
    assert proc.returncode == 130
    assert (stdout, stderr) == ("", "sessionlens: error: interrupted [interrupted]\n")
    assert out.read_text() == OLD
    assert leftovers(tmp_path) == []


def test_closed_stdout_pipe_is_quiet(tmp_path: Path) -> None:
    """`sessionlens parse … | head -1`: the reader goes away; no traceback, no noise."""
    session = _big_session(tmp_path / "s", copies=100)  # ~0.5 MB of CSV: more than a pipe holds
    with (tmp_path / "err.txt").open("w+b") as err_file:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sessionlens",
                "parse",
                str(session / "base"),
                "--format",
                "csv",
            ],
            stdout=subprocess.PIPE,
            stderr=err_file,
            env=ENV,
        )
        assert proc.stdout is not None
        first = proc.stdout.readline()
        proc.stdout.close()
        proc.wait(60)
        err_file.seek(0)
        err = err_file.read().decode()
    assert first.startswith(b"config,source,line")
    assert "Traceback" not in err
    assert "Exception ignored" not in err
    assert proc.returncode == 0


def test_control_characters_in_names_cannot_break_lines_or_drive_the_terminal(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "run\n\x1b[2J\x1b]0;owned\x07.log").write_bytes(b"\x00" * 16 + b"\x1b[31mjunk\n")
    (folder / "ok.log").write_bytes(SEED.read_bytes())
    code, _, err = run(capsys, "parse", str(folder), "--format", "csv")
    assert code == 0
    assert "\x1b" not in err
    assert "\x07" not in err
    one_line(err, r"run\\n\\x1b\[2J\\x1b\]0;owned\\x07\.log: error: no parser recognises this file")


def test_names_that_are_not_utf8_are_hashed_as_bytes_and_shown_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 19, case 7: `caf\\xe9.log` (Latin-1 bytes) crashed `report` and `check` with exit
    3 (UnicodeEncodeError in the digest), and `parse --format csv` in polars."""
    session = tmp_path / "s"
    seed = SEED.read_bytes()
    for folder, name in ((b"a", b"caf\xe9.log"), (b"caf\xe9", b"run.log"), (b"b", b"run.log")):
        os.makedirs(os.fsencode(session) + b"/" + folder, exist_ok=True)
        with open(os.fsencode(session) + b"/" + folder + b"/" + name, "wb") as fh:
            fh.write(seed)
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "report", "s", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert [s["path"] for s in doc["sources"]] == [
        "a/caf\\xe9.log",
        "b/run.log",
        "caf\\xe9/run.log",
    ]
    assert [c["name"] for c in doc["configs"]] == ["a", "b", "caf\\xe9"]
    sha = hashlib.sha256(seed).hexdigest()
    lines = sorted([b"a/caf\xe9.log", b"b/run.log", b"caf\xe9/run.log"])
    expected = hashlib.sha256(b"".join(p + f"\t{sha}\n".encode() for p in lines)).hexdigest()
    assert doc["inputs_digest"] == f"sha256:{expected}"  # the names' own bytes
    assert "a/caf\\xe9.log:14: warning: the results section is cut" in err
    assert run(capsys, "report", "s", "--out", "s/report.md", "--quiet")[0] == 0
    assert "| a | a | a/caf\\\\xe9.log |" in (session / "report.md").read_text(encoding="utf-8")
    assert run(capsys, "check") == (0, "sessionlens check: 1 report fresh\n", "")
    with open(os.fsencode(session) + b"/a/caf\xe9.log", "ab") as fh:
        fh.write(b"  Run 6/5: 2048 tokens in 33.00s = 62.1 tok/s (prompt: 30 toks)\n")
    code, out, err = run(capsys, "check")
    assert code == 1
    assert err.splitlines()[0].startswith("s/report.md:1: error: its session's inputs changed")
    # a session folder whose own name is not UTF-8: the header names it escaped, check reads
    # the byte back
    os.rename(session, os.fsencode(tmp_path) + b"/r\xe9")
    assert run(capsys, "report", "r\udce9", "--out", "r.md", "--quiet")[0] == 0
    assert '"session":"r\\\\xe9"' in (tmp_path / "r.md").read_text(encoding="utf-8")
    (tmp_path / "r\udce9" / "report.md").unlink()
    assert run(capsys, "check", "r.md") == (0, "sessionlens check: 1 report fresh\n", "")
    for fmt in ("csv", "parquet"):
        code, _, err = run(capsys, "parse", "r\udce9", "--format", fmt, "--out", f"x.{fmt}")
        assert code == 0, err
    assert "r\\xe9/a/caf\\xe9.log" in (tmp_path / "x.csv").read_text(encoding="utf-8")


def test_out_is_never_the_sessions_manifest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 19, case 8: `report S --out S/sessionlens.toml` replaced the manifest."""
    session = make_session(tmp_path / "s")
    manifest = session / "sessionlens.toml"
    manifest.write_text('title = "kept"\n')
    (tmp_path / "alias.toml").symlink_to(manifest)
    for out in (manifest, tmp_path / "alias.toml"):
        code, stdout, err = run(capsys, "report", str(session), "--quiet", "--out", str(out))
        assert (code, stdout) == (2, "")
        assert err.splitlines()[-1] == (
            f"{out}: error: refusing to overwrite the session's sessionlens.toml with the "
            "output [usage]"
        )
        assert manifest.read_text() == 'title = "kept"\n'
        assert leftovers(session) == []


HOSTILE_MANIFESTS = {
    "400-nested-inline-tables": (
        "[configs.base]\n[configs.cand]\nsettings = " + "{a = " * 400 + "1" + "}" * 400 + "\n",
        "s/sessionlens.toml:3: error: values nest deeper than 32 arrays or tables [manifest]",
    ),
    "5000-deep-array": (
        "[configs.base]\nsettings = { x = " + "[" * 5000 + "1" + "]" * 5000 + " }\n",
        "s/sessionlens.toml:2: error: values nest deeper than 32 arrays or tables [manifest]",
    ),
    "alpha-5e-324": (
        "alpha = 5e-324\n",
        "s/sessionlens.toml:1: error: alpha must be a number from 0.000001 to below 0.5, "
        "not 5e-324 [manifest]",
    ),
    **{
        f"target-{bad}": (
            f"target_tok_s = {bad}\n",
            "s/sessionlens.toml:1: error: target_tok_s must be a positive number of tok/s up "
            f"to 1e+09, not {shown} [manifest]",
        )
        for bad, shown in (("nan", "nan"), ("inf", "inf"), ("1e308", "1e+308"))
    },
    "min-effect-1e308": (
        '[[hypotheses]]\nbaseline = "base"\ncandidate = "cand"\nmin_effect = 1e308\n',
        "s/sessionlens.toml:4: error: min_effect must be a fraction from 0 to 1000 (0.20 for "
        "20 %), not 1e+308 [manifest]",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_MANIFESTS))
def test_a_hostile_manifest_is_one_error_line_exit_2_and_a_check_finding(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
) -> None:
    """Issue 19, case 9: RecursionError, StatisticsError (exit 3), or a value silently
    dropped (nan, inf) or printed as "inf" (1e308)."""
    text, line = HOSTILE_MANIFESTS[case]
    make_session(tmp_path / "s")
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "report", "s", "--out", "s/report.md", "--quiet")[0] == 0
    (tmp_path / "s" / "sessionlens.toml").write_text(text)
    code, out, err = run(capsys, "report", "s", "--quiet")
    assert (code, out, err) == (2, "", line + "\n")
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    monkeypatch.delenv("GIT_INDEX_FILE", raising=False)
    code, out, err = run(capsys, "check")
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == line.replace("[manifest]", "[bad-manifest]")


@pytest.mark.parametrize("kind", ["dangling-link", "folder", "link-to-dev-zero", "fifo"])
def test_a_manifest_that_is_no_file_is_an_error_not_ignored(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    session = make_session(tmp_path / "s")
    manifest = session / "sessionlens.toml"
    if kind == "dangling-link":
        manifest.symlink_to("gone.toml")
    elif kind == "folder":
        manifest.mkdir()
    elif kind == "link-to-dev-zero":
        manifest.symlink_to("/dev/zero")
    else:
        os.mkfifo(manifest)
    why = {
        "dangling-link": "the manifest is a broken symbolic link",
        "folder": "the manifest is a folder, not a file",
        "link-to-dev-zero": "the manifest is a link that leads outside the session",
        "fifo": "the manifest is not a regular file (a device, pipe or socket)",
    }[kind]
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "report", "s", "--quiet")
    assert (code, out, err) == (2, "", f"s/sessionlens.toml: error: {why} [manifest]\n")


def test_a_toml_datetime_setting_is_reported_as_its_text(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 19, case 9: `--format json` died on the datetime (exit 3)."""
    session = make_session(tmp_path / "s")
    (session / "sessionlens.toml").write_text(
        "[configs.base]\nsettings = { launched = 2025-12-01T10:00:00Z, day = 2025-12-01 }\n"
        "[configs.cand]\n"
    )
    code, out, _ = run(capsys, "report", str(session), "--format", "json", "--quiet")
    assert code == 0
    settings = json.loads(out)["configs"][0]["settings"]
    assert (settings["launched"], settings["day"]) == ("2025-12-01T10:00:00+00:00", "2025-12-01")


def test_an_effect_too_large_to_print_is_refused_on_the_command_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    session = make_session(tmp_path / "s")
    code, out, err = run(capsys, "report", str(session), "--hypothesis", "cand > base by 200000%")
    assert (code, out) == (2, "")
    assert err == (
        "sessionlens: error: --hypothesis 'cand > base by 200000%': the effect after `by` is "
        "too large to use (at most 100000%) [usage]\n"
    )


@pytest.mark.parametrize("command", ["report", "parse"])
def test_out_with_a_trailing_slash_names_a_folder(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """Issue 19, case 16: `--out /tmp/nonexist/` wrote a file named `nonexist`."""
    session = make_session(tmp_path / "s")
    what = str(session) if command == "report" else str(session / "base" / "bench.log")
    monkeypatch.chdir(tmp_path)
    for out, why in (
        ("nonexist/", "--out ends in /, so it names a folder; give the file to write"),
        ("s/", "--out ends in /, so it names a folder; give the file to write"),
        ("s/.", "--out names a folder; give the file to write"),
    ):
        code, stdout, err = run(capsys, command, what, "--out", out)
        assert (code, stdout, err) == (2, "", f"{out}: error: {why} [usage]\n")
    assert not (tmp_path / "nonexist").exists()
    code, stdout, _ = run(capsys, command, what, "--out", "-", "--format", "json")
    assert code == 0
    assert json.loads(stdout)  # `--out -` is stdout (DESIGN §1)


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _wait_until_idle(proc: subprocess.Popen[bytes]) -> None:
    """Until the process has done its work and waits (its CPU time stands still)."""
    deadline = time.monotonic() + 120
    last = -1
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        now = _cpu_ticks(proc.pid)
        if now == last:
            return
        last = now
        time.sleep(0.5)
    raise AssertionError("the process never came to wait")


@pytest.mark.parametrize("where", ["fifo-nobody-opens", "fifo-nobody-reads", "stdout-nobody-reads"])
def test_sigint_stops_a_blocked_open_or_write(tmp_path: Path, where: str) -> None:
    """Issue 19, case 11: `report --out FIFO` with no reader could not be stopped by Ctrl-C:
    polars installs an SA_RESTART SIGINT handler, so the blocked open() or write() was
    restarted by the kernel and Python never ran its handler."""
    session = _big_session(tmp_path / "s", copies=100)  # ~0.5 MB of CSV: more than a pipe holds
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    command = [sys.executable, "-m", "sessionlens", "parse", str(session / "base"), "-f", "csv"]
    if where == "fifo-nobody-opens":
        command = [sys.executable, "-m", "sessionlens", "report", str(session), "-q"]
    if where != "stdout-nobody-reads":
        command += ["--out", str(fifo)]
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK) if where == "fifo-nobody-reads" else -1
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
        preexec_fn=_as_at_a_terminal,
    )
    try:
        _wait_until_idle(proc)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=20)  # it hung here, however long
        assert proc.stderr is not None
        err = proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
        if reader >= 0:
            os.close(reader)
    assert code == 130
    assert err.splitlines()[-1] == "sessionlens: error: interrupted [interrupted]"


# ---------------------------------------------------------------- memory (issue 19, case 10)


def _memory_session(tmp_path: Path) -> Path:
    """About 60 MB of server log (in memory where /dev/shm is: the test reads it at once)."""
    import tempfile

    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(dir=shm)) if os.access(shm, os.W_OK) else tmp_path
    (root / "s" / "base").mkdir(parents=True)
    text = SERVER.read_bytes()
    (root / "s" / "base" / "server.log").write_bytes(text * ((60 << 20) // len(text)))
    return root


@pytest.mark.parametrize("command", ["report", "parse-csv"])
def test_out_of_memory_is_one_line_exit_2_and_nothing_half_written(
    tmp_path: Path, command: str
) -> None:
    """Under `ulimit -v` a big `report` died with MemoryError and a traceback, `parse
    --format csv` with SIGABRT (polars' allocator aborts), and OpenBLAS could hang."""
    import resource
    import shutil

    root = _memory_session(tmp_path)
    try:
        out = root / ("report.md" if command == "report" else "rows.csv")
        out.write_text(OLD)
        args = (
            ["report", str(root / "s"), "--out", str(out), "-q"]
            if command == "report"
            else ["parse", str(root / "s" / "base" / "server.log"), "-f", "csv", "--out", str(out)]
        )

        def bounded() -> None:  # 1.3 GB: more than the libraries need to start, not enough
            resource.setrlimit(resource.RLIMIT_AS, (1300 << 20, 1300 << 20))

        proc = subprocess.run(
            [sys.executable, "-m", "sessionlens", *args],
            capture_output=True,
            text=True,
            timeout=300,
            env=ENV,
            check=False,
            preexec_fn=bounded,
        )
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr
        last = proc.stderr.splitlines()[-1]
        assert re.fullmatch(
            r"sessionlens: error: not enough memory to read \S+: [\d,]+ MB of the 1,300 MB "
            r"address-space limit are in use; raise the limit \(ulimit -v\) or read fewer or "
            r"smaller files \[memory\]",
            last,
        ), last
        assert out.read_text() == OLD
        assert leftovers(root) == []
    finally:
        if root != tmp_path:
            shutil.rmtree(root, ignore_errors=True)


def test_the_memory_guard_names_the_file_and_a_memory_error_is_no_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessionlens import _memory

    session = make_session(tmp_path / "s")
    monkeypatch.chdir(tmp_path)
    for key in ("OPENBLAS_NUM_THREADS", "_RJEM_MALLOC_CONF"):  # what `frugal` sets: restored
        monkeypatch.delenv(key, raising=False)
    used = iter([1 << 30, 1 << 30, 1946 << 20])
    monkeypatch.setattr(_memory, "limit", lambda: 2 << 30)
    monkeypatch.setattr(_memory, "in_use", lambda: next(used))
    code, out, err = run(capsys, "report", "s", "--out", "s/report.md", "-q")
    assert (code, out, err) == (
        2,
        "",
        "sessionlens: error: not enough memory to read s/cand/bench.log: 1,946 MB of the "
        "2,048 MB address-space limit are in use; raise the limit (ulimit -v) or read fewer "
        "or smaller files [memory]\n",
    )
    monkeypatch.setattr(_memory, "limit", lambda: None)

    def no_memory(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr("sessionlens.analysis.analyze", no_memory)
    code, out, err = run(capsys, "report", "s", "--out", "s/report.md", "-q")
    assert (code, out, err) == (
        2,
        "",
        "sessionlens: error: not enough memory to finish: an allocation failed; raise the "
        "limit (ulimit -v) or read fewer or smaller files [memory]\n",
    )
    assert not (session / "report.md").exists()
    assert leftovers(session) == []


def test_csv_is_streamed_and_the_same_as_the_whole_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`parse --format csv` writes the table part by part (a CSV of millions of rows was one
    string, twice: in polars and in Python); the bytes are `render.parsed.to_csv`'s."""
    from sessionlens import parse_file
    from sessionlens.render import parsed

    from .fixture_cases import cases

    for path in cases():
        whole = parsed.to_csv(parse_file(path))
        code, out, _ = run(capsys, "parse", str(path), "--format", "csv")
        if code != 0:  # no sample at all: exit 2 either way
            continue
        assert out == whole, path
        target = tmp_path / "rows.csv"
        assert run(capsys, "parse", str(path), "--format", "csv", "--out", str(target))[0] == 0
        assert target.read_text(encoding="utf-8") == whole, path


def test_jemalloc_arenas_per_cpu_only_where_it_has_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from sessionlens import _memory

    assert _memory.per_cpu_arenas_supported("linux", "glibc", (8, 8, 8))
    assert not _memory.per_cpu_arenas_supported("linux", "glibc", (8, 8, 2))  # taskset
    assert not _memory.per_cpu_arenas_supported("linux", "glibc", (6, 8, 6))  # CPUs offline
    assert not _memory.per_cpu_arenas_supported("linux", "")  # musl: no libc_ver
    assert not _memory.per_cpu_arenas_supported("darwin", "")
    assert not _memory.per_cpu_arenas_supported("win32", "")
    monkeypatch.setattr(_memory, "limit", lambda: None)
    monkeypatch.setattr(_memory, "per_cpu_arenas_supported", lambda: True)
    monkeypatch.delenv("_RJEM_MALLOC_CONF", raising=False)
    _memory.frugal()
    assert os.environ["_RJEM_MALLOC_CONF"] == _memory.PER_CPU_ARENAS
    monkeypatch.setenv("_RJEM_MALLOC_CONF", "narenas:4")  # the user's choice wins
    _memory.frugal()
    assert os.environ["_RJEM_MALLOC_CONF"] == "narenas:4"
    monkeypatch.delenv("_RJEM_MALLOC_CONF")
    monkeypatch.setattr(_memory, "per_cpu_arenas_supported", lambda: False)
    _memory.frugal()
    assert "_RJEM_MALLOC_CONF" not in os.environ


def _allocator_probe(pin: bool) -> tuple[str, str]:
    """`parse` in a fresh process (on one CPU with `pin`): its stderr, and the allocator
    setting it ran with."""
    env = {k: v for k, v in ENV.items() if k != "_RJEM_MALLOC_CONF"}
    probe = (
        "import os, sys\n"
        "if sys.argv[1] == 'pin': os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        "from sessionlens import _memory\n"
        "from sessionlens.cli import main\n"
        "code = main(sys.argv[2:])\n"
        "print(_memory.per_cpu_arenas_supported(), os.environ.get('_RJEM_MALLOC_CONF'))\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            probe,
            "pin" if pin else "-",
            "parse",
            "--format",
            "csv",
            str(SERVER),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("config,source,line")
    return proc.stderr, proc.stdout.splitlines()[-1]


def test_the_allocator_setting_is_taken_without_a_word() -> None:
    """A fresh process gets the arenas per CPU where jemalloc gives them, and jemalloc says
    nothing (it prints `<jemalloc>: Invalid conf pair` for an option it does not take, and
    a warning for per-CPU arenas when the process may not run on every CPU)."""
    err, said = _allocator_probe(pin=False)
    assert "jemalloc" not in err
    from sessionlens import _memory

    if _memory.per_cpu_arenas_supported():
        assert said.startswith("True ")
        assert said.endswith(_memory.PER_CPU_ARENAS)
    else:
        assert _memory.PER_CPU_ARENAS not in said
    if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 1:
        err, said = _allocator_probe(pin=True)  # as under `taskset -c 0`
        assert "jemalloc" not in err
        assert said.startswith("False")
        assert _memory.PER_CPU_ARENAS not in said


def test_the_heap_is_trimmed_once_the_resident_set_has_grown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`Trimmer.step` trims only once the resident set is `slack` above where it was at the
    last trim (each trim makes the next step fault its pages in again); where the resident
    set cannot be read, at every step."""
    from sessionlens import _memory

    trims: list[int] = []
    rss = [100]
    monkeypatch.setattr(_memory, "trim", lambda: trims.append(rss[0]))
    monkeypatch.setattr(_memory, "resident", lambda: rss[0])
    t = _memory.Trimmer(slack=50)
    for level in (100, 140, 150, 151, 120, 190, 201, 202, 260):
        rss[0] = level
        t.step()
    assert trims == [151, 202, 260]
    # the real resident set: a number of bytes, above zero
    monkeypatch.undo()
    now = _memory.resident()
    assert now is None or now > 0
    monkeypatch.setattr(_memory, "trim", lambda: trims.append(-1))
    monkeypatch.setattr(_memory, "resident", lambda: None)
    trims.clear()
    t = _memory.Trimmer(slack=50)
    for _ in range(3):
        t.step()
    assert trims == [-1, -1, -1]
