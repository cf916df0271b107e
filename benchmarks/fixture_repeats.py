"""Every server-log and `/metrics` fixture made long: speed on shapes nobody tuned for (issue 22).

Issue 22 measured its logs this way: "a fixture's launch once and then repeating its steady
part (what a long-running server of that version writes)". Each fixture here is a real shape
(another version, another prefix, colours, a docker or journald collector, errors between the
lines), and none is the benchmark generator's. This writes each one's first lines once, then
its steady part (from its first batch, engine or metrics line on; the cut last line left out)
over and over, every timestamp moved on by a minute a repeat, to about `--size` bytes, and
times `parse --format parquet` against `grep -c` over the same file, side by side with
another tree with `--against`.

    python3 benchmarks/fixture_repeats.py --size 256M [--only 'vllm-server/*'] [--against DIR]

A fixture this tree reads far slower than the rest is a shape its fast path does not cover.
"""

from __future__ import annotations

import argparse
import datetime as dt
import fnmatch
import re
import sys
from pathlib import Path

import gen_sglang_log as gen
import run

FORMATS = run.ROOT / "fixtures" / "formats"
FOLDERS = ("sglang-server", "vllm-server", "prometheus")
_FULL = re.compile(r"(\d{4})-(\d{2})-(\d{2})([ T])(\d{2}):(\d{2}):(\d{2})")
_SHORT = re.compile(r"(?<![\d-])(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?!\d)")
_EPOCH = re.compile(r"(?<=# scrape )(\d{10})(?=[.\s]|$)")  # a scrape's unix time
_MARKS = ("Decode batch", "Prefill batch", "throughput:", "ms/cyc", "Engine 0", "# scrape")


def _moved(text: str, seconds: int) -> str:
    """`text` with every timestamp moved on by `seconds` (a time it cannot move, as is)."""

    def full(m: re.Match[str]) -> str:
        try:
            t = dt.datetime(*(int(m[k]) for k in (1, 2, 3, 5, 6, 7)))
        except ValueError:
            return m.group()
        return (t + dt.timedelta(seconds=seconds)).strftime(f"%Y-%m-%d{m[4]}%H:%M:%S")

    def short(m: re.Match[str]) -> str:
        try:
            t = dt.datetime(2025, *(int(m[k]) for k in range(1, 6)))
        except ValueError:
            return m.group()
        return (t + dt.timedelta(seconds=seconds)).strftime("%m-%d %H:%M:%S")

    text = _EPOCH.sub(lambda m: str(int(m.group()) + seconds), text)
    return _SHORT.sub(short, _FULL.sub(full, text))


def repeated(fixture: Path, out: Path, size: int) -> int:
    """Write the fixture's launch once and its steady part until `size` bytes; the repeats."""
    lines = fixture.read_text(encoding="utf-8", errors="replace").split("\n")
    lines = lines[:-1]  # the text after the last newline: empty, or a cut line
    start = next((i for i, ln in enumerate(lines) if any(m in ln for m in _MARKS)), 0)
    head = "".join(ln + "\n" for ln in lines[:start])
    steady = "".join(ln + "\n" for ln in lines[start:])
    if not steady:
        return 0
    written, k = len(head), 0
    with out.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write(head)
        while written < size:
            part = _moved(steady, 60 * k)
            fh.write(part)
            written += len(part)
            k += 1
    return k


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="256M", help="about this many bytes a log (64M, 256M)")
    ap.add_argument("--only", default="*", help="fixtures as `folder/name` globs, comma-separated")
    ap.add_argument("--skip", default="", help="fixtures left out, as `--only` globs")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each command (median)")
    ap.add_argument("--against", help="another tree (a git worktree) timed beside this one")
    ap.add_argument("--workdir", default="/tmp/sessionlens-bench", help="for the logs")
    args = ap.parse_args(argv)
    size = gen.parse_size(args.size)
    work = Path(args.workdir) / "fixture-repeats"
    work.mkdir(parents=True, exist_ok=True)
    trees = [("this tree", run.sessionlens_env())]
    if args.against:
        against = Path(args.against).resolve()
        trees.append((against.name, run.sessionlens_env(against)))
    globs = args.only.split(",")
    skips = [g for g in args.skip.split(",") if g]
    fixtures = [
        p
        for folder in FOLDERS
        for p in sorted((FORMATS / folder).iterdir())
        if p.is_file()
        and not p.name.endswith((".expected.csv", ".diag.txt"))
        and any(fnmatch.fnmatch(f"{folder}/{p.name}", g) for g in globs)
        and not any(fnmatch.fnmatch(f"{folder}/{p.name}", g) for g in skips)
    ]
    run.machine()
    print(f"\n### Fixtures repeated to {run.fmt_size(size)} (median of {args.repeat})\n")
    print(
        "| fixture | MB | grep (ms) |"
        + "".join(f" parse {t}: s/GB | × grep | CPU-s | RSS (MB) |" for t, _ in trees)
    )
    print("|---|---:|---:|" + "---:|---:|---:|---:|" * len(trees))
    log = work / "repeated.log"
    parquet = work / "samples.parquet"
    for fixture in fixtures:
        if repeated(fixture, log, size) == 0:
            continue
        run.warm(log)
        grep = run.measure([*run.GREP, str(log)], args.repeat)
        gb = log.stat().st_size / (1 << 30)
        row = f"| {fixture.parent.name}/{fixture.name} | {log.stat().st_size / (1 << 20):.0f} |"
        row += f" {grep.seconds * 1000:.0f} |"
        for _, env in trees:
            cmd = run.sessionlens("parse", str(log), "--format", "parquet", "--out", str(parquet))
            t = run.measure(cmd, args.repeat, env)
            row += (
                f" {t.seconds / gb:.1f} | {t.seconds / grep.seconds:.0f} | {t.cpu:.1f} |"
                f" {t.rss_mb:.0f} |"
            )
        print(row)
        sys.stdout.flush()
    log.unlink(missing_ok=True)
    parquet.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
