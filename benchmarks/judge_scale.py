"""How long the verdict engine takes on big sides (issue 18: "judge 3 million samples a side
in seconds"): `verdict.judge` on N values a side, as one launch or as L launches, flat client
values or server interval series (MSER warm-up, effective sample size), wall and CPU time.

    python3 benchmarks/judge_scale.py                 # 3M a side: 1 and 3 launches, both kinds
    python3 benchmarks/judge_scale.py --n 1000000 --launches 1,2,4

Prints a Markdown table for benchmarks/RESULTS.md. Values are AR(1) series around 100 with
a 2 % effect on the candidate, seeded (the same numbers every run).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sessionlens.verdict import judge  # noqa: E402


def _series(rng: np.random.Generator, n: int, level: float, phi: float = 0.8) -> list[float]:
    noise = rng.normal(0.0, 2.0, n)
    out = np.empty(n)
    x = 0.0
    for i in range(0, n, 1 << 16):  # AR(1) in blocks: lfilter-free and quick enough
        block = noise[i : i + (1 << 16)]
        ys = np.empty(len(block))
        for j, e in enumerate(block):
            x = phi * x + e
            ys[j] = x
        out[i : i + len(block)] = ys
    return [float(v) for v in np.round(level + out, 2)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=3_000_000, help="values a side")
    ap.add_argument("--launches", default="1,3", help="launches a side, comma-separated")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    base = _series(rng, args.n, 100.0)
    cand = _series(rng, args.n, 102.0)
    print(f"N = {args.n:,} values a side; machine: {os.cpu_count()} cores\n")
    print("| launches a side | kind | wall (s) | CPU (s) | verdict | change | interval |")
    print("|---:|---|---:|---:|---|---:|---|")
    for launches in (int(x) for x in args.launches.split(",")):
        size = args.n // launches
        a = [base[i * size : (i + 1) * size] for i in range(launches)]
        b = [cand[i * size : (i + 1) * size] for i in range(launches)]
        for series in (False, True):
            t0, c0 = time.perf_counter(), time.process_time()
            j = judge(a, b, "increase", 0.01, metric="gen_throughput_tok_s", series=series)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            kind = "interval series" if series else "client values"
            print(
                f"| {launches} | {kind} | {wall:.2f} | {cpu:.2f} | {j.verdict} | "
                f"{(j.change or 0) * 100:+.2f} % | {(j.ci_low or 0) * 100:+.2f} % to "
                f"{(j.ci_high or 0) * 100:+.2f} % |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
