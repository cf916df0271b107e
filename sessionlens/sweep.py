"""Sweeps (DESIGN §5 "Load points and sweeps"): SLO capacity, Pareto fronts, dominance.

Pure functions on a config's load points in sweep order, each point's levels given as
numbers: numbers in, frozen dataclasses out. It must not read sessions or word anything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Capacity", "Dominance", "capacity", "dominates", "pareto_front"]

Bound = Literal["interpolated", "beyond", "below", "unknown"]


@dataclass(frozen=True, slots=True)
class Capacity:
    """The highest throughput a sweep serves within every bound.

    `bound`: "interpolated" between the last point that meets every bound (`at`) and the
    first that fails one (`towards`, on `limit`: the bound that fails first); "beyond" the
    sweep when no point fails (`value` is the highest throughput measured, a lower bound);
    "below" the sweep when the lowest point fails already (`value` None, `limit` the bound it
    fails); "unknown" where a point lacks a bounded metric or the throughput.
    """

    value: float | None
    bound: Bound
    at: str | None = None
    towards: str | None = None
    limit: str | None = None


def capacity(
    loads: Sequence[str],
    throughput: Mapping[str, float],
    latency: Mapping[str, Mapping[str, float]],
    slo: Mapping[str, float],
) -> Capacity:
    """SLO capacity of one config (DESIGN §5): among its load points (in sweep order), the
    highest throughput that meets every bound, linearly interpolated towards the first point
    after it that fails one (the interpolation is on the failing latency, between the two
    points; the capacity is never below the last point that meets every bound).

    `throughput[load]` is the point's level; `latency[metric][load]` each bounded metric's.
    """
    if not loads or not slo:
        return Capacity(None, "unknown")
    meets: list[bool] = []
    for load in loads:
        if load not in throughput or any(load not in latency.get(m, {}) for m in slo):
            return Capacity(None, "unknown", at=load)
        meets.append(all(latency[m][load] <= bound for m, bound in slo.items()))
    if not meets[0]:
        first = loads[0]
        failing = next(m for m, bound in slo.items() if latency[m][first] > bound)
        return Capacity(None, "below", towards=first, limit=failing)
    if all(meets):
        best = max(loads, key=lambda load: throughput[load])
        return Capacity(throughput[best], "beyond", at=best)
    j = meets.index(False)
    i = j - 1
    lo, hi = loads[i], loads[j]
    fraction = 1.0
    limit: str | None = None
    for m, bound in slo.items():
        a, b = latency[m][lo], latency[m][hi]
        if b > bound:
            f = (bound - a) / (b - a) if b != a else 0.0
            if f < fraction or limit is None:
                fraction, limit = max(0.0, min(1.0, f)), m
    value = throughput[lo] + fraction * (throughput[hi] - throughput[lo])
    passing = [throughput[load] for load, ok in zip(loads[:j], meets[:j], strict=True) if ok]
    return Capacity(max(value, max(passing)), "interpolated", at=lo, towards=hi, limit=limit)


def pareto_front(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """The load points on a config's throughput–latency front: no other point has at least
    its throughput at no more latency (and one of them strictly). `points[load]` is
    (throughput, latency); the front is in order of throughput."""
    out = []
    for load, (t, lat) in points.items():
        beaten = any(
            (t2 >= t and l2 <= lat) and (t2 > t or l2 < lat)
            for other, (t2, l2) in points.items()
            if other != load
        )
        if not beaten and math.isfinite(t) and math.isfinite(lat):
            out.append(load)
    return sorted(out, key=lambda load: points[load][0])


@dataclass(frozen=True, slots=True)
class Dominance:
    """Config `better` dominates `worse` at every one of `points` (the load points both
    have): at least the throughput at no more latency, and better on one of them."""

    better: str
    worse: str
    points: tuple[str, ...]


def dominates(
    a: Mapping[str, tuple[float, float]], b: Mapping[str, tuple[float, float]]
) -> tuple[str, ...] | None:
    """The common load points where A dominates B at every one, or None where it does not
    (or where they share no point). Values are (throughput, latency) levels."""
    common = [load for load in a if load in b]
    if not common:
        return None
    strictly = False
    for load in common:
        (ta, la), (tb, lb) = a[load], b[load]
        if ta < tb or la > lb:
            return None
        strictly = strictly or ta > tb or la < lb
    return tuple(common) if strictly else None
