"""A generator of results repositories: nightly sessions, each committed with its report.

A night is a session folder `RESULTS/<date>/` with a `sessionlens.toml`, a config sub-folder
per config holding one launch's `bench.log` (the seed's `bench-stdout` client: five runs of
about 2048 tokens, as tests/simulate.py writes it), and the `report.md` that `sessionlens report` makes of it, committed with the
night's date (`GIT_COMMITTER_DATE`), as a nightly job that runs the benchmark, writes the
report and commits both leaves it. Our own numbers: a config's level per night is given, each
night off by `night_noise` (a CV) and each run by `run_noise`.
"""

from __future__ import annotations

import math
import os
import subprocess
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path

import numpy as np

from sessionlens.cli import main
from tests import simulate

MANIFEST = """\
title = "Nightly: EAGLE-3 against the plain model ({night})"

[configs.baseline]
label = "No speculation"

[configs.eagle3]
label = "EAGLE-3, decode attention"

[[hypotheses]]
id = "H1"
claim = "EAGLE-3 beats the plain model by at least 5 %"
metric = "throughput_tok_s"
baseline = "baseline"
candidate = "eagle3"
direction = "increase"
min_effect = 0.05
"""


def bench_log(level: float, rng: np.random.Generator, run_noise: float, runs: int = 5) -> str:
    """A `bench-stdout` client's output: `runs` runs around `level` tok/s (the calibration
    simulator's client, tests/simulate.py, at that level)."""
    ctx = simulate.LaunchContext(
        config="",
        index=1,
        multiplier=1.0,
        scenario=simulate.Scenario(name="nightly", within_cv=run_noise, runs=runs),
        start=datetime(2026, 1, 1),
        bench_level=level,
        server_level=level,
        settings={},
    )
    return simulate.bench_stdout(rng, ctx)


def git(repo: Path, *args: str, when: str | None = None) -> None:
    """Run git in `repo` with a fixed identity (and dates, for a commit)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="nightly",
        GIT_AUTHOR_EMAIL="nightly@example.com",
        GIT_COMMITTER_NAME="nightly",
        GIT_COMMITTER_EMAIL="nightly@example.com",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
    )
    if when is not None:
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def night(
    root: Path,
    day: date,
    levels: Mapping[str, float],
    rng: np.random.Generator,
    night_noise: float = 0.01,
    run_noise: float = 0.01,
    report: bool = True,
) -> Path:
    """One nightly session folder (and its report): each config at its level that night."""
    folder = root / day.isoformat()
    for name, level in levels.items():
        (folder / name).mkdir(parents=True, exist_ok=True)
        tonight = level * math.exp(night_noise * rng.normal())
        (folder / name / "bench.log").write_text(bench_log(tonight, rng, run_noise))
    (folder / "sessionlens.toml").write_text(MANIFEST.format(night=day.isoformat()))
    if report:
        code = main(["report", str(folder), "--out", str(folder / "report.md"), "-q"])
        assert code == 0, f"sessionlens report {folder} exited {code}"
    return folder


def nightly(
    root: Path,
    levels: Mapping[str, Sequence[float]],
    start: date = date(2026, 3, 1),
    seed: int = 1,
    commit: bool = True,
    night_noise: float = 0.01,
    reports: bool = True,
) -> list[Path]:
    """A results repository of nights (one per value of each config's levels), each with
    its report (unless not `reports`) and committed at 02:00 UTC of its day when `commit`
    (`root` becomes a git repository)."""
    root.mkdir(parents=True, exist_ok=True)
    if commit:
        git(root, "init", "-q", "-b", "main")
    rng = np.random.default_rng(seed)
    count = len(next(iter(levels.values())))
    folders = []
    for i in range(count):
        day = start + timedelta(days=i)
        tonight = {k: v[i] for k, v in levels.items()}
        folder = night(root, day, tonight, rng, night_noise, report=reports)
        folders.append(folder)
        if commit:
            git(root, "add", "-A")
            git(root, "commit", "-q", "-m", f"nightly {day}", when=f"{day}T02:00:00+00:00")
    return folders


# The acceptance history: a dozen nights; EAGLE-3 steps up 10 % on the sixth night (a fix
# landed) and drops 10 % on the last one; the plain model stays where it is.
STEP_AT = 5  # 0-based: the sixth night starts the new regime
DOZEN = {
    "baseline": [82.0] * 12,
    "eagle3": [60.0] * STEP_AT + [66.0] * (11 - STEP_AT) + [59.4],
}
