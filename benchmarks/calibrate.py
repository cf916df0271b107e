"""Calibration of the verdicts: simulated sessions whose truth is known, run through the real
`sessionlens report --format json`, and how often the verdict is wrong (issue 18, DESIGN §5).

    python3 benchmarks/calibrate.py                      # every scenario, 200 sessions each
    python3 benchmarks/calibrate.py --sessions 400 --jobs 2 --only 'bench-inc-d5-*'

Prints a Markdown table per family of scenarios: the shares of supported / rejected /
inconclusive (and errors: a report that exited non-zero), the false-verdict rates with a 95 %
Clopper–Pearson interval, and what a correct implementation of DESIGN §5's rule gives on
normal data (`ideal`, from `tests/simulate.py:ideal_rates`). False supported = "supported"
while e_true < δ (at e_true = δ, the boundary, its limit); false rejected = "rejected" while
e_true ≥ δ; nominal for each is α/2 = 2.5 % at the boundary.

The sessions come from `tests/simulate.py` (the generator the unit test uses), one folder
at a time under `--workdir`, each removed once judged. Session i of a scenario is the same
for a given `--seed` whatever `--sessions`, `--only` or `--jobs` say.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# one small session at a time: polars' threads only add overhead, and --jobs uses the cores
os.environ.setdefault("POLARS_MAX_THREADS", "1")

from tests.simulate import Scenario, grid, ideal_rates, run_scenario  # noqa: E402

VERDICTS = ("supported", "rejected", "inconclusive")
CHUNK = 25  # sessions per task handed to a worker


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial interval for k of n."""
    from scipy.stats import beta

    a = (1 - level) / 2
    lo = 0.0 if k == 0 else float(beta.ppf(a, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - a, k + 1, n - k))
    return lo, hi


def _task(args: tuple[Scenario, int, int, int, str]) -> tuple[str, dict[str, int], float]:
    sc, start, count, seed, workdir = args
    t = time.perf_counter()
    counts = run_scenario(Path(workdir), sc, count, seed, start=start)
    return sc.name, counts, time.perf_counter() - t


def run(
    scenarios: list[Scenario], sessions: int, seed: int, jobs: int, workdir: Path
) -> tuple[dict[str, dict[str, int]], dict[str, float]]:
    tasks = [
        (sc, start, min(CHUNK, sessions - start), seed, str(workdir))
        for sc in scenarios
        for start in range(0, sessions, CHUNK)
    ]
    counts: dict[str, dict[str, int]] = {sc.name: {} for sc in scenarios}
    seconds: dict[str, float] = dict.fromkeys(counts, 0.0)
    done = 0

    def take(results: Iterable[tuple[str, dict[str, int], float]]) -> None:
        nonlocal done
        for name, c, s in results:
            for k, v in c.items():
                counts[name][k] = counts[name].get(k, 0) + v
            seconds[name] += s
            done += 1
            if done % 20 == 0 or done == len(tasks):
                print(f"  {done}/{len(tasks)} tasks", file=sys.stderr, flush=True)

    if jobs <= 1:
        take(map(_task, tasks))
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            take(pool.map(_task, tasks))
    return counts, seconds


def _share(k: int, n: int) -> str:
    return f"{100 * k / n:.1f} %" if n else "—"


def _rate(k: int, n: int) -> str:
    lo, hi = clopper_pearson(k, n)
    return f"{100 * k / n:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]"


def _used(sc: Scenario) -> str:
    if sc.launches >= 2:
        return "measured"
    if sc.launch_noise is not None:
        return f"given {100 * sc.launch_noise:g} %"
    return "assumed 2 %"


def _effect(sc: Scenario) -> str:
    m = sc.effect / sc.min_effect
    if sc.name.startswith("seed"):
        return f"{100 * sc.effect:+g} %"
    return f"{m:g}δ = {100 * sc.effect:g} %"


FAMILIES = (
    ("bench-inc-", "Client runs (`bench-stdout`, 5 runs a launch, σ_W 2 %), increase claims"),
    ("bench-dec-", "Client runs, decrease claims"),
    (
        "server-inc-",
        "Server Decode intervals (`sglang-server`, AR(1) φ 0.9, σ_W 3 %, 100–300 intervals "
        "a launch, warm-up transient), increase claims",
    ),
    ("server-dec-", "Server Decode intervals, decrease claims"),
    ("seed-", "The seed's case: a true −27 % judged against a claimed ≥ +2 % increase"),
)


def table(scenarios: list[Scenario], counts: dict[str, dict[str, int]]) -> tuple[str, list[str]]:
    """The Markdown tables, and the calibrated null / near-null rows over 5 %."""
    over: list[str] = []
    out: list[str] = []
    for prefix, title in FAMILIES:
        rows = [sc for sc in scenarios if sc.name.startswith(prefix)]
        if not rows:
            continue
        out += [
            f"#### {title}",
            "",
            "| scenario | δ | launches | σ_L true | σ_L used | e_true | n | supported | rejected "
            "| inconclusive | error | false supported [95 % CI] | false rejected [95 % CI] "
            "| ideal sup / rej | |",
            "|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---|---|---|---|",
        ]
        for sc in rows:
            c = counts[sc.name]
            n = sum(c.values())
            errors = sum(v for k, v in c.items() if k not in VERDICTS)
            sup, rej = c.get("supported", 0), c.get("rejected", 0)
            at_or_below = sc.effect <= sc.min_effect + 1e-12  # false supported is defined
            at_or_above = sc.effect >= sc.min_effect - 1e-12  # false rejected is defined
            fs = _rate(sup, n) if at_or_below and n else "—"
            fr = _rate(rej, n) if at_or_above and n else "—"
            i_sup, i_rej = ideal_rates(sc)
            near_null = sc.effect <= sc.min_effect + 1e-12
            note = ""
            if not sc.calibrated:
                note = "info: σ_L above the assumed"
            elif near_null and n and (sup > 0.05 * n or (at_or_above and rej > 0.05 * n) or errors):
                note = "**over 5 %**" if not errors else "**errors**"
                over.append(sc.name)
            out.append(
                f"| {sc.name} | {100 * sc.min_effect:g} % | {sc.launches} "
                f"| {100 * sc.launch_cv:g} % | {_used(sc)} | {_effect(sc)} | {n} "
                f"| {_share(sup, n)} | {_share(rej, n)} | {_share(c.get('inconclusive', 0), n)} "
                f"| {_share(errors, n)} | {fs} | {fr} "
                f"| {100 * i_sup:.1f} % / {100 * i_rej:.1f} % | {note} |"
            )
        out.append("")
    return "\n".join(out), over


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=200, help="sessions per scenario (200)")
    ap.add_argument("--seed", type=int, default=2026, help="master seed (2026)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (1)")
    ap.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="GLOB",
        help="run the scenarios whose name matches GLOB (repeatable), e.g. 'server-*-L1-*'",
    )
    ap.add_argument("--list", action="store_true", help="list the scenario names and exit")
    ap.add_argument("--workdir", type=Path, default=None, help="where sessions are written")
    ap.add_argument("--out", type=Path, default=None, help="also write the Markdown here")
    args = ap.parse_args(argv)

    scenarios = [
        sc
        for sc in grid()
        if not args.only or any(fnmatch.fnmatchcase(sc.name, g) for g in args.only)
    ]
    if args.list:
        print("\n".join(sc.name for sc in scenarios))
        return 0
    if not scenarios:
        print("no scenario matches --only", file=sys.stderr)
        return 2
    load_before = os.getloadavg()
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    if args.workdir is not None:  # a folder named that does not exist yet is made
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sessionlens-calib-", dir=args.workdir) as tmp:
        counts, seconds = run(scenarios, args.sessions, args.seed, args.jobs, Path(tmp))
    wall = time.perf_counter() - t0
    body, over = table(scenarios, counts)
    total = len(scenarios) * args.sessions
    busy = sum(seconds.values())
    per: dict[str, str] = {}
    for kind in ("bench", "server"):
        mine = [s.name for s in scenarios if s.name.removeprefix("seed-").startswith(kind)]
        per[kind] = (
            f"{1000 * sum(seconds[m] for m in mine) / (len(mine) * args.sessions):.0f} ms"
            if mine
            else "—"
        )
    cmd = shlex.join(
        ["python3", "benchmarks/calibrate.py", *(sys.argv[1:] if argv is None else argv)]
    )
    head = [
        f"- date: {started:%Y-%m-%d %H:%M} UTC; commit {_commit()}",
        f"- command: `{cmd}`",
        f"- machine: {_machine()}; load average before "
        + ", ".join(f"{x:.2f}" for x in load_before),
        f"- {len(scenarios)} scenarios × {args.sessions} sessions = {total} sessions in "
        f"{wall:.0f} s wall ({busy:.0f} s of work; per session, write + report + read: "
        f"bench {per['bench']}, server {per['server']}, over every launch count)",
        f"- calibrated null / near-null scenarios (e_true ≤ δ) with a false rate over 5 % "
        f"(or errors): {len(over)}"
        + (f" — {', '.join(over[:12])}{' …' if len(over) > 12 else ''}" if over else ""),
        "",
    ]
    text = "\n".join(head) + "\n" + body
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
