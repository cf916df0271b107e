"""Time `sessionlens history` over generated results folders of 10, 100 and 1,000 sessions.

    python3 benchmarks/history.py                       # 10, 100 and 1,000 sessions
    python3 benchmarks/history.py --sessions 10 100     # fewer
    python3 benchmarks/history.py --repeat 5

Each session is a night: a `sessionlens.toml` with two configs, each a folder holding a
`bench-stdout` client's output (5 runs) and a short SGLang server log (its server args and 60
Decode intervals stamped with that night's time, so the history dates the session by its
logs), and a `report.md` holding the header line `sessionlens report` writes (history reads
only a report's header). EAGLE-3 steps up half-way and drops on the last night; the plain
model stays flat. Results folders are cached in --workdir (default /tmp/sessionlens-bench),
never in the repo. sessionlens runs as `python -m sessionlens` from this working tree.

Timed, median of --repeat runs: a cold run (`.sessionlens-cache/` deleted first: every
session parsed and analysed), a warm run (every session's facts read from the cache: the
inputs hashed, nothing parsed), and the Parquet dataset written from a warm cache.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from datetime import date, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from tests.history_gen import MANIFEST, bench_log  # noqa: E402

GENERATOR_VERSION = 2  # bump when the generated sessions change (cached folders are keyed on it)

SERVER_ARGS = (
    "server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', tp_size=1, "
    "port=30000, random_seed=1, speculative_algorithm={algo}, speculative_num_steps={steps})"
)


def server_log(start: datetime, gen: float, rng: np.random.Generator) -> str:
    """A short SGLang server log: its args, then 60 Decode intervals of 10 s."""
    algo, steps = ("'EAGLE3'", 2) if gen < 70 else ("None", "None")
    lines = [f"[{start:%Y-%m-%d %H:%M:%S}] " + SERVER_ARGS.format(algo=algo, steps=steps)]
    for i in range(60):
        t = start + timedelta(seconds=30 + 10 * i)
        rate = gen * (1 + 0.02 * rng.normal())
        lines.append(
            f"[{t:%Y-%m-%d %H:%M:%S} TP0] Decode batch, #running-req: 1, #token: {70 + i}, "
            f"token usage: 0.00, gen throughput (token/s): {rate:.2f}, #queue-req: 0, "
        )
    return "\n".join(lines) + "\n"


def header(folder: Path) -> str:
    from sessionlens.session import inputs_digest

    facts = {
        "sessionlens_version": "0.1.0",
        "session": ".",
        "args": {"baseline": None, "hypotheses": []},
        "inputs_digest": inputs_digest(folder),
        "verdicts": {},
    }
    return f"<!-- sessionlens: {json.dumps(facts, separators=(',', ':'))} -->\n"


def results(n: int, workdir: Path) -> Path:
    """A results folder of n nightly sessions, generated once per n."""
    root = workdir / f"history-{n}-v{GENERATOR_VERSION}"
    if root.is_dir():
        return root
    tmp = root.with_suffix(".part")
    shutil.rmtree(tmp, ignore_errors=True)
    rng = np.random.default_rng(n)
    start = date(2024, 1, 1)
    for i in range(n):
        day = start + timedelta(days=i)
        folder = tmp / day.isoformat()
        step = 1.10 if i >= n // 2 else 1.0
        drop = 0.9 if i == n - 1 else 1.0
        levels = {"baseline": 82.0, "eagle3": 60.0 * step * drop}
        for name, level in levels.items():
            (folder / name).mkdir(parents=True)
            tonight = level * math.exp(0.01 * rng.normal())
            (folder / name / "bench.log").write_text(bench_log(tonight, rng, 0.01))
            when = datetime(day.year, day.month, day.day, 2, 0, 0)
            (folder / name / "server.log").write_text(server_log(when, tonight * 4, rng))
        (folder / "sessionlens.toml").write_text(MANIFEST.format(night=day.isoformat()))
        (folder / "report.md").write_text(header(folder))
    tmp.rename(root)
    return root


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system) of a child run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, check=False)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.stderr.write(done.stderr.decode(errors="replace"))
        raise SystemExit(f"{' '.join(args)} exited {done.returncode}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return took, cpu


def _median(runs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/sessionlens-bench"))
    ns = ap.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "sessionlens", "history"]
    out = ns.workdir / "history-out"
    rows = []
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for n in ns.sessions:
        folder = results(n, ns.workdir)
        json_out = ["--format", "json", "--out", str(out.with_suffix(".json")), "-q"]
        cold, warm, dataset = [], [], []
        for _ in range(ns.repeat):
            shutil.rmtree(folder / ".sessionlens-cache", ignore_errors=True)
            cold.append(timed([*cmd, str(folder), *json_out], env))
            warm.append(timed([*cmd, str(folder), *json_out], env))
            dataset.append(
                timed([*cmd, str(folder), "--format", "parquet", "--out", str(out), "-q"], env)
            )
        doc = json.loads(out.with_suffix(".json").read_text())
        cps = sum(len(s["change_points"]) for s in doc["series"])
        rows.append((n, _median(cold), _median(warm), _median(dataset), len(doc["series"]), cps))
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print()
    print(
        "| sessions | cold: wall (CPU) | cold per session | warm: wall (CPU) | "
        "warm, Parquet dataset: wall (CPU) | series | change points |"
    )
    print("|--:|--:|--:|--:|--:|--:|--:|")
    for n, c, w, d, s, cps in rows:
        print(
            f"| {n} | {c[0]:.2f} s ({c[1]:.2f} s) | {c[0] / n * 1000:.0f} ms | "
            f"{w[0]:.2f} s ({w[1]:.2f} s) | {d[0]:.2f} s ({d[1]:.2f} s) | {s} | {cps} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
