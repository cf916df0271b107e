"""The verdict rule of DESIGN §5: supported, rejected or inconclusive, with a one-sentence reason.

Owns `decide` (the rule on r and its interval), `judge` (rule + `runs_needed` +
`verdict_without_outliers`), and the `reason` sentence, worded with `metrics.format_value` /
`format_percent` so it agrees with the report. It must not call scipy (numbers come from
`stats`) or render anything beyond that sentence; Holm across hypotheses is the caller's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from . import stats
from .metrics import format_number, format_percent, format_value

__all__ = ["Basis", "Direction", "Judgement", "Verdict", "decide", "judge"]

Direction = Literal["increase", "decrease"]
Verdict = Literal["supported", "rejected", "inconclusive"]
# Why the rule gave its verdict: machine-readable twin of the reason sentence.
Basis = Literal[
    "supported",
    "smaller-than-claimed",  # rejected: even the interval's far end is below δ
    "opposite",  # rejected: the whole interval lies on the other side of no change
    "straddles",  # inconclusive: the interval holds both no change and δ
    "below-claim",  # inconclusive: a real effect, estimate below δ, interval reaching δ
    "no-change",  # inconclusive: every value equal, no change, δ = 0
    "few-samples",  # inconclusive: fewer than 2 samples on a side
    "undefined-baseline",  # inconclusive: mean_A ≤ 0, no relative change
]

W_OUTLIER_SENSITIVE = "outlier-sensitive"  # the verdict changes without the flagged outliers

_MIN_N = 2  # DESIGN §5: fewer than 2 samples on a side is always inconclusive


@dataclass(frozen=True, slots=True)
class Judgement:
    """One hypothesis judged: the JSON hypothesis fields that do not come from the manifest.

    `change`, `ci_low`, `ci_high` are r and its interval as measured (candidate vs baseline),
    not turned by direction. `basis` says which branch of the rule decided.
    """

    verdict: Verdict
    basis: Basis
    change: float | None
    ci_low: float | None
    ci_high: float | None
    p_welch: float | None
    p_mannwhitney: float | None
    hedges_g: float | None
    n_baseline: int
    n_candidate: int
    mean_baseline: float | None
    mean_candidate: float | None
    pooled_sd: float | None
    runs_needed: int | None
    verdict_without_outliers: Verdict | None
    outliers_baseline: tuple[int, ...]
    outliers_candidate: tuple[int, ...]
    reason: str
    warnings: tuple[str, ...]


def decide(
    change: float,
    ci_low: float,
    ci_high: float,
    direction: Direction,
    min_effect: float,
) -> tuple[Verdict, Basis]:
    """The rule on r and its interval: e = ±r, [lo, hi] turned the same way.

    supported: lo > 0 and e ≥ δ; rejected: hi < δ; inconclusive otherwise.
    """
    if direction == "increase":
        e, lo, hi = change, ci_low, ci_high
    else:
        e, lo, hi = -change, -ci_high, -ci_low
    if lo > 0 and e >= min_effect:
        return "supported", "supported"
    if hi < min_effect:
        return "rejected", ("opposite" if hi < 0 else "smaller-than-claimed")
    if lo == hi:
        return "inconclusive", "no-change"
    if lo > 0:
        return "inconclusive", "below-claim"
    return "inconclusive", "straddles"


def _rule(cmp: stats.Comparison, direction: Direction, min_effect: float) -> tuple[Verdict, Basis]:
    if cmp.n_a < _MIN_N or cmp.n_b < _MIN_N:
        return "inconclusive", "few-samples"
    if cmp.change is None or cmp.ci_low is None or cmp.ci_high is None:
        # With n ≥ 2 on both sides the interval always exists, so only mean_A ≤ 0 lands here.
        return "inconclusive", "undefined-baseline"
    return decide(cmp.change, cmp.ci_low, cmp.ci_high, direction, min_effect)


def _without(values: stats.Values, drop: tuple[int, ...]) -> stats.Values:
    if not isinstance(values, Sequence):  # an array
        import numpy as np

        return np.delete(values, list(drop))
    gone = set(drop)
    return [v for i, v in enumerate(values) if i not in gone]


def judge(
    a: stats.Values,
    b: stats.Values,
    direction: Direction,
    min_effect: float,
    alpha: float = 0.05,
    metric: str = "value",
) -> Judgement:
    """Judge "B changes `metric` in `direction` by at least `min_effect`" against baseline A.

    `min_effect` is δ as a fraction (0.2 for 20 %). Outliers are flagged per side by the
    DESIGN §5 rule and only ever left out for `verdict_without_outliers`.
    """
    if direction not in ("increase", "decrease"):
        raise ValueError(f"direction must be 'increase' or 'decrease', not {direction!r}")
    if not math.isfinite(min_effect) or min_effect < 0:
        raise ValueError(f"min_effect must be a finite fraction >= 0, not {min_effect!r}")
    cmp = stats.compare(a, b, alpha)
    verdict, basis = _rule(cmp, direction, min_effect)

    out_a = stats.outliers(a).indices
    out_b = stats.outliers(b).indices
    warnings = list(cmp.warnings)
    without: Verdict | None = None
    if out_a or out_b:
        warnings.append(stats.W_OUTLIER)
        cmp_wo = stats.compare(_without(a, out_a), _without(b, out_b), alpha)
        without = _rule(cmp_wo, direction, min_effect)[0]
        if without != verdict:
            warnings.append(W_OUTLIER_SENSITIVE)

    runs = None
    if verdict == "inconclusive" and cmp.mean_a is not None and cmp.mean_a > 0:
        runs = stats.runs_needed(cmp.pooled_sd, min_effect * cmp.mean_a, alpha)

    return Judgement(
        verdict=verdict,
        basis=basis,
        change=cmp.change,
        ci_low=cmp.ci_low,
        ci_high=cmp.ci_high,
        p_welch=cmp.p_welch,
        p_mannwhitney=cmp.p_mannwhitney,
        hedges_g=cmp.hedges_g,
        n_baseline=cmp.n_a,
        n_candidate=cmp.n_b,
        mean_baseline=cmp.mean_a,
        mean_candidate=cmp.mean_b,
        pooled_sd=cmp.pooled_sd,
        runs_needed=runs,
        verdict_without_outliers=without,
        outliers_baseline=out_a,
        outliers_candidate=out_b,
        reason=_reason(cmp, basis, direction, min_effect, alpha, metric),
        warnings=tuple(dict.fromkeys(warnings)),
    )


# ---------------------------------------------------------------- the reason sentence


def _level(alpha: float) -> str:
    """1 − alpha as a percentage with no needless decimals: `95 %`, `99.5 %`."""
    pct = (1 - alpha) * 100
    for d in range(4):
        if abs(round(pct, d) - pct) < 1e-9:
            return f"{format_number(pct, d)} %"
    return f"{format_number(pct, 4)} %"


def _decimals(pairs: Sequence[tuple[float, float]]) -> int:
    """Fewest decimals (1–3) at which each pair of different fractions reads differently.

    A change of 19.96 % must not print as the 20.0 % it falls short of.
    """
    for d in (1, 2, 3):
        if all(x == y or round(x * 100, d) != round(y * 100, d) for x, y in pairs):
            return d
    return 3


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _reason(
    cmp: stats.Comparison,
    basis: Basis,
    direction: Direction,
    min_effect: float,
    alpha: float,
    metric: str,
) -> str:
    if basis == "few-samples":
        return (
            f"{metric} has {_plural(cmp.n_a, 'baseline sample')} and "
            f"{_plural(cmp.n_b, 'candidate sample')}: a verdict needs at least {_MIN_N} "
            "on each side."
        )
    r, ci_lo, ci_hi = cmp.change, cmp.ci_low, cmp.ci_high
    if basis == "undefined-baseline" or r is None or ci_lo is None or ci_hi is None:
        return (
            f"{metric} has a baseline mean of {format_value(metric, cmp.mean_a)}, "
            "so a relative change is undefined."
        )
    sign = 1.0 if direction == "increase" else -1.0
    e, lo, hi = sign * r, min(sign * ci_lo, sign * ci_hi), max(sign * ci_lo, sign * ci_hi)
    d = _decimals([(e, min_effect), (hi, min_effect), (lo, 0.0), (e, 0.0)])

    means = f"{format_value(metric, cmp.mean_a)} → {format_value(metric, cmp.mean_b)}"
    point = ci_lo == ci_hi
    if point:
        spread = "every value equal within each config"
    else:
        spread = (
            f"{_level(alpha)} CI {format_percent(ci_lo, d, signed=True)} to "
            f"{format_percent(ci_hi, d, signed=True)}"
        )
    head = f"{metric} changed by {format_percent(r, d, signed=True)} ({means}, {spread})"
    claim = f"the {format_percent(min_effect, d)} {direction} the claim needs"
    opposite = "a decrease" if direction == "increase" else "an increase"

    # δ = 0 ("B > A" with no size): any change in the direction is the claim, so there is
    # no size to reach and "the 0.0 % increase" would read oddly.
    any_size = min_effect == 0
    if basis == "supported":
        if any_size:
            return f"{head}: the interval excludes no change, as the claimed {direction} needs."
        return f"{head}: the interval excludes no change and the estimate reaches {claim}."
    if basis == "smaller-than-claimed":
        if point:
            return f"{head}: below {claim}."
        return f"{head}: even the largest {direction} in the interval is below {claim}."
    if basis == "opposite":
        if point:
            return f"{head}: {opposite}, the opposite of the claimed {direction}."
        return f"{head}: the whole interval is {opposite}, the opposite of the claimed {direction}."
    if basis == "below-claim":
        return (
            f"{head}: a real {direction}, but the estimate is below {claim} "
            "and the interval still reaches it."
        )
    if basis == "no-change":
        return (
            f"{head}: with no change at all, neither the {direction} nor its absence can be shown."
        )
    if any_size:
        return f"{head}: the interval includes no change, so the claimed {direction} is not shown."
    return f"{head}: the interval includes both no change and {claim}."
