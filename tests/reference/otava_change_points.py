"""Reference change points from Apache Otava (PyPI `apache-otava` 0.8.0) for test_stats_changepoint.

Otava pins numpy 2.2 and scipy < 1.17, so it is not a test dependency of sessionlens: run this
in a virtual environment of its own and commit the JSON it prints.

    python3 -m venv /tmp/venv-otava && /tmp/venv-otava/bin/pip install apache-otava==0.8.0
    /tmp/venv-otava/bin/python tests/reference/otava_change_points.py \
        > tests/reference/otava_change_points.json

Each case is a series (our own numbers, fixed seeds) with the change points of Otava's
`compute_change_points_orig` (Matteson & James's e-divisive with a permutation test, as in
the paper) at max_pvalue 0.05, and of `compute_change_points` (Hunter: windows and t-tests).
"""

from __future__ import annotations

import json
import sys

import numpy as np
from otava.analysis import compute_change_points, compute_change_points_orig


def cases() -> dict[str, list[float]]:
    rng = np.random.default_rng(7)

    def regimes(*parts: tuple[int, float, float]) -> list[float]:
        return [round(float(v), 3) for n, mu, sd in parts for v in rng.normal(mu, sd, n)]

    return {
        "step": regimes((20, 100, 1), (20, 110, 1)),
        "two-steps": regimes((15, 100, 1), (15, 105, 1), (15, 98, 1)),
        "bump": regimes((20, 0, 1), (10, 4, 1), (20, 0, 1)),
        "nightly": regimes((5, 60, 0.4), (7, 66, 0.4)),
        "small-step": regimes((25, 100, 1), (25, 101.5, 1)),
        "flat": regimes((30, 50, 1)),
        "long": regimes((60, 100, 1), (80, 104, 1), (60, 99, 1)),
    }


def main() -> None:
    out = {}
    for name, series in cases().items():
        orig, _ = compute_change_points_orig(series, max_pvalue=0.05, seed=1)
        hunter, _ = compute_change_points(series, window_len=50, max_pvalue=0.001)
        out[name] = {
            "series": series,
            "e_divisive": sorted(int(c.index) for c in orig),
            "hunter": sorted(int(c.index) for c in hunter),
        }
    json.dump({"otava": "0.8.0", "cases": out}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
