"""Time sessionlens on generated SGLang server logs, side by side with cat, grep and a
hand-written parser, in one run; print Markdown tables (time, ratio to grep, peak RSS).

    python3 benchmarks/run.py                    # 100 MB, sessions of 1/10/100 files
    python3 benchmarks/run.py --sizes 1G         # the 1 GB run
    python3 benchmarks/run.py --full             # scaling: 100 MB, 300 MB and 1 GB
    python3 benchmarks/run.py --sizes 1G --tp 1  # a log where only rank 0 prints
    python3 benchmarks/run.py --shapes all       # every log shape (gen_shapes.py), 256 MB each
    python3 benchmarks/run.py --shapes all --against /work/main   # and another tree, alternating

Generated logs are cached in --workdir (default /tmp/sessionlens-bench), never in the repo.
sessionlens runs as `python -m sessionlens` from this working tree. Peak RSS is each child
process's own (`os.wait4`). See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import gen_sglang_log as gen  # noqa: E402
import gen_shapes  # noqa: E402

GREP = ["grep", "-c", "Decode batch"]


@dataclass
class Timing:
    seconds: float
    rss_mb: float
    cpu: float = 0.0  # user + system CPU-seconds (GNU time), 0 when unknown


GNU_TIME = Path("/usr/bin/time")  # for a clean peak RSS (see run_once)


def run_once(cmd: list[str], env: dict[str, str] | None = None) -> Timing:
    """Wall time and peak RSS of one child process.

    Output goes to a file, not /dev/null: GNU grep stops at the first match when it writes
    to /dev/null (cat's output does go there: it is only read). The peak RSS comes from GNU
    time when there is one: a child forked from this Python process would report this
    process's size until it execs.
    """
    out_path = Path(tempfile.gettempdir()) / f"sessionlens-bench-{os.getpid()}.out"
    rss_path = out_path.with_suffix(".rss")
    wrapped = cmd
    if GNU_TIME.exists():
        wrapped = [str(GNU_TIME), "-f", "%M %U %S", "-o", str(rss_path), *cmd]
    with out_path.open("wb") as out:
        sink = subprocess.DEVNULL if cmd[0] == "cat" else out
        start = time.perf_counter()
        # run from a neutral folder: `python -m` puts the working folder first on sys.path,
        # before the PYTHONPATH that picks the tree measured
        proc = subprocess.Popen(
            wrapped, stdout=sink, stderr=subprocess.DEVNULL, env=env, cwd=tempfile.gettempdir()
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    out_path.unlink()
    # grep exits 1 when nothing matches (a vLLM log holds no `Decode batch`): no failure
    if proc.returncode != 0 and not (cmd[0] == "grep" and proc.returncode == 1):
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}")
    rss_kb = usage.ru_maxrss  # KiB on Linux
    cpu = usage.ru_utime + usage.ru_stime
    if wrapped is not cmd:
        rss, user, system = rss_path.read_text().split()[-3:]
        rss_kb, cpu = int(rss), float(user) + float(system)
        rss_path.unlink()
    return Timing(seconds, rss_kb / 1024, cpu)


def measure(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> Timing:
    """Median time and largest peak RSS over `repeat` runs."""
    runs = [run_once(cmd, env) for _ in range(max(repeat, 1))]
    return summary(runs)


def summary(runs: list[Timing]) -> Timing:
    """Median time and CPU, largest peak RSS."""
    return Timing(
        statistics.median(r.seconds for r in runs),
        max(r.rss_mb for r in runs),
        statistics.median(r.cpu for r in runs),
    )


def sessionlens_env(root: Path = ROOT) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def sessionlens(*args: str) -> list[str]:
    return [sys.executable, "-m", "sessionlens", *args]


def link(src: Path, dst: Path) -> None:
    """Put a log into a session folder without copying a gigabyte."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists() or dst.is_symlink():
        dst.unlink()
    try:
        os.link(src, dst)
    except OSError:
        dst.symlink_to(src)


def warm(path: Path) -> None:
    """Read a file once so every command finds it in the page cache."""
    with path.open("rb") as fh:
        while fh.read(1 << 24):
            pass


def fmt_size(n: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def line_count(path: Path) -> int:
    n = 0
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 24):
            n += chunk.count(b"\n")
    return n


# ---------------------------------------------------------------------- the benchmarks


def log_kind(args: argparse.Namespace) -> str:
    """The generated logs' shape as the tables name it (`TP8`, `TP1, ANSI`)."""
    return f"TP{args.tp}" + (", ANSI" if args.ansi else "")


def one_file(size: int, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Timing]:
    """cat, grep, the reference parser, parse and report on one log of `size` bytes."""
    work = Path(args.workdir)
    log = gen.cached(size, tp=args.tp, ansi=args.ansi, folder=str(work))
    shape = "" if (args.tp, args.ansi) == (8, False) else f"-tp{args.tp}{'-ansi' * args.ansi}"
    session = work / f"session-{size}{shape}"
    link(log, session / "server.log")
    warm(log)
    out: dict[str, Timing] = {}
    out["cat"] = measure(["cat", str(log)], args.repeat)
    out["grep -c 'Decode batch'"] = measure([*GREP, str(log)], args.repeat)
    if not args.skip_reference:
        ref = [sys.executable, str(HERE / "reference_parser.py"), str(log)]
        out["reference parser (Python)"] = measure(ref, args.ref_repeat)
    parquet = work / "samples.parquet"
    out["sessionlens parse --format parquet"] = measure(
        sessionlens("parse", str(log), "--format", "parquet", "--out", str(parquet)),
        args.repeat,
        env,
    )
    out["sessionlens report"] = measure(
        sessionlens("report", str(session), "--out", str(work / "report.md"), "--quiet"),
        args.repeat,
        env,
    )
    lines = line_count(log)
    print(f"\n### One log of {fmt_size(log.stat().st_size)}, {log_kind(args)} ({lines:,} lines)\n")
    grep = out["grep -c 'Decode batch'"].seconds
    print("| command | time (s) | × grep | peak RSS (MB) |")
    print("|---|---:|---:|---:|")
    for name, t in out.items():
        print(f"| `{name}` | {t.seconds:.2f} | {t.seconds / grep:.1f} | {t.rss_mb:.0f} |")
    sys.stdout.flush()
    return out


def sessions(total: int, counts: list[int], args: argparse.Namespace, env: dict[str, str]) -> None:
    """`report` on sessions of n files that hold `total` bytes between them."""
    work = Path(args.workdir)
    print(f"\n### Sessions of {fmt_size(total)} in 1 to {max(counts)} files, {log_kind(args)}\n")
    print("| files | configs | grep, all files (s) | report (s) | × grep | peak RSS (MB) |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in counts:
        folder = work / f"sessions-{total}-{n}"
        if folder.exists():
            shutil.rmtree(folder)
        logs = []
        for i in range(n):
            log = gen.cached(
                total // n, tp=args.tp, seed=100 + i, ansi=args.ansi, folder=str(work / "logs")
            )
            config = "a" if n == 1 or i < n // 2 else "b"
            link(log, folder / config / f"server-{i:03d}.log")
            logs.append(log)
            warm(log)
        grep = measure([*GREP, *map(str, logs)], args.repeat)
        report = measure(
            sessionlens("report", str(folder), "--out", str(work / "report.md"), "--quiet"),
            args.repeat,
            env,
        )
        configs = 1 if n == 1 else 2
        print(
            f"| {n} | {configs} | {grep.seconds:.2f} | {report.seconds:.2f} | "
            f"{report.seconds / grep.seconds:.1f} | {report.rss_mb:.0f} |"
        )
        sys.stdout.flush()


def shapes(names: list[str], args: argparse.Namespace, env: dict[str, str]) -> None:
    """Every log shape side by side: grep, then `parse --format parquet` (and `report` on a
    session holding the log, with `--shape-report`) of this tree and, with `--against`, of
    another tree, run in turn (A B A B ...) so both see the same moments of a busy machine.
    Ratios are to grep over the same log in the same run (timed in milliseconds)."""
    work = Path(args.workdir)
    size = gen.parse_size(args.shape_size)
    trees = [("this tree", env)]
    if args.against:
        trees.append((Path(args.against).name, sessionlens_env(Path(args.against).resolve())))
    commands = ["parse"] + (["report"] if args.shape_report else [])
    head = "| shape | MB | grep (ms) |" + "".join(
        f" {cmd} {tree}: s/GB | × grep | CPU-s | RSS (MB) |"
        for cmd in commands
        for tree, _ in trees
    )
    print(f"\n### Log shapes of {fmt_size(size)} (median of {args.repeat})\n")
    print(head)
    print("|---|---:|---:|" + "---:|---:|---:|---:|" * (len(commands) * len(trees)))
    for name in names:
        log = gen_shapes.cached(name, size, str(work / "shapes"))
        session = work / f"session-shape-{name}"
        link(log, session / "server.log")
        warm(log)
        grep = measure([*GREP, str(log)], args.repeat)
        gb = log.stat().st_size / (1 << 30)
        runs: dict[tuple[str, str], list[Timing]] = {}
        parquet = work / "samples.parquet"
        argv = {
            "parse": ["parse", str(log), "--format", "parquet", "--out", str(parquet)],
            "report": ["report", str(session), "--out", str(work / "report.md"), "--quiet"],
        }
        for k in range(max(args.repeat, 1)):
            for cmd in commands:
                for i, (tree, tree_env) in enumerate(trees):
                    if i and k >= args.against_repeat > 0:
                        continue  # the other tree's slow runs: fewer of them
                    t = run_once(sessionlens(*argv[cmd]), tree_env)
                    runs.setdefault((cmd, tree), []).append(t)
        row = f"| {name} | {log.stat().st_size / (1 << 20):.0f} | {grep.seconds * 1000:.0f} |"
        for cmd in commands:
            for tree, _ in trees:
                t = summary(runs[(cmd, tree)])
                row += (
                    f" {t.seconds / gb:.1f} | {t.seconds / grep.seconds:.0f} | {t.cpu:.1f} |"
                    f" {t.rss_mb:.0f} |"
                )
        print(row)
        sys.stdout.flush()


def startup(env: dict[str, str]) -> None:
    """`--help` and `--version` (median of 10), and what `import sessionlens` imports."""
    print("\n### Start-up\n")
    print("| command | time (s) | peak RSS (MB) |")
    print("|---|---:|---:|")
    for args in (["--help"], ["--version"]):
        t = measure(sessionlens(*args), 10, env)
        print(f"| `sessionlens {' '.join(args)}` | {t.seconds:.3f} | {t.rss_mb:.0f} |")
    code = (
        "import sys, sessionlens; "
        "print(','.join(m for m in ('polars', 'scipy', 'numpy') if m in sys.modules) or 'none')"
    )
    heavy = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.strip()
    print(f"\n`import sessionlens` imports of polars/scipy/numpy: {heavy}")


def scaling(results: dict[int, dict[str, Timing]]) -> None:
    if len(results) < 2:
        return
    print("\n### Scaling with the log's size\n")
    print("| size | grep (s) | parse (s) | s/GB | report (s) | s/GB | RSS parse, report (MB) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size, out in sorted(results.items()):
        gb = size / (1 << 30)
        p = out["sessionlens parse --format parquet"]
        r = out["sessionlens report"]
        g = out["grep -c 'Decode batch'"]
        print(
            f"| {fmt_size(size)} | {g.seconds:.2f} | {p.seconds:.2f} | {p.seconds / gb:.1f} | "
            f"{r.seconds:.2f} | {r.seconds / gb:.1f} | {p.rss_mb:.0f}, {r.rss_mb:.0f} |"
        )


def machine() -> None:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import polars

        polars_version = polars.__version__
    except ImportError:
        polars_version = "?"
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    changed = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    tree = "plus uncommitted changes" if changed else "(a clean tree)"
    now = dt.datetime.now(dt.UTC)
    print(f"- date: {now:%Y-%m-%d %H:%M} UTC; commit {commit or '?'} {tree}")
    print(f"- machine: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}")
    print(f"- Python {platform.python_version()}, polars {polars_version}")
    print(f"- load average before the run: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    script = Path(sys.argv[0]).name
    print(f"- command: `python3 benchmarks/{script} {' '.join(sys.argv[1:])}`".rstrip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100M", help="log sizes, comma-separated (100M,1G)")
    ap.add_argument("--full", action="store_true", help="scaling run: 100M,300M,1G")
    ap.add_argument("--sessions", default="1,10,100", help="files per session ('' to skip)")
    ap.add_argument("--session-total", default="100M", help="bytes held by each session")
    ap.add_argument("--repeat", type=int, default=3, help="runs per command (median)")
    ap.add_argument("--ref-repeat", type=int, default=1, help="runs of the reference parser")
    ap.add_argument("--skip-reference", action="store_true", help="leave the reference out")
    ap.add_argument("--workdir", default="/tmp/sessionlens-bench", help="generated logs")
    ap.add_argument(
        "--tp", type=int, default=8, help="TP ranks printing batch lines (1: only rank 0 prints)"
    )
    ap.add_argument("--ansi", action="store_true", help="uvicorn's INFO coloured as on a tty")
    ap.add_argument(
        "--shapes",
        default="",
        help=f"log shapes to time side by side ('all': {','.join(gen_shapes.SHAPES)}); "
        "then only these are run",
    )
    ap.add_argument("--shape-size", default="256M", help="bytes of each shape's log")
    ap.add_argument("--shape-report", action="store_true", help="time `report` on each shape too")
    ap.add_argument("--against", default="", help="another working tree to time alongside")
    ap.add_argument(
        "--against-repeat", type=int, default=0, help="runs of the other tree (0: --repeat)"
    )
    args = ap.parse_args(argv)
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    env = sessionlens_env()
    sizes = [gen.parse_size(s) for s in ("100M,300M,1G" if args.full else args.sizes).split(",")]
    print("## sessionlens benchmark\n")
    machine()
    if args.shapes:
        names = list(gen_shapes.SHAPES) if args.shapes == "all" else args.shapes.split(",")
        unknown = [n for n in names if n not in gen_shapes.SHAPES]
        if unknown:
            ap.error(f"unknown shape(s): {', '.join(unknown)}")
        shapes(names, args, env)
        print(f"\n- load average after the run: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0
    startup(env)
    results = {size: one_file(size, args, env) for size in sizes}
    scaling(results)
    if args.sessions:
        counts = [int(n) for n in args.sessions.split(",")]
        sessions(gen.parse_size(args.session_total), counts, args, env)
    print(f"\n- load average after the run: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
