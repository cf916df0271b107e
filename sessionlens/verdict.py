"""The verdict rule of DESIGN §5 (v0.2): supported, rejected or inconclusive, and why.

Owns `decide` (the symmetric minimum-effect rule on an interval of e), `weigh` (one
hypothesis' evidence: the levels of both sides, the Fieller interval of r, the one-sided
minimum-effect p-values Holm orders, the tests on the unit of replication), `family` (Holm's
step-down over the family of claims, deciding each), `runs_needed` and the `reason`, worded
with `metrics.format_value` / `format_percent` so it agrees with the report. It must not call
scipy (numbers come from `stats`) or render anything beyond that sentence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from . import stats
from .metrics import format_number, format_percent, format_value

__all__ = [
    "Basis",
    "Direction",
    "Evidence",
    "Judgement",
    "Side",
    "Verdict",
    "decide",
    "empty",
    "family",
    "judge",
    "side",
    "weigh",
]

Direction = Literal["increase", "decrease"]
Verdict = Literal["supported", "rejected", "inconclusive"]
# Why the rule gave its verdict: machine-readable twin of the reason sentence.
Basis = Literal[
    "supported",  # the whole interval of e is at least δ
    "smaller-than-claimed",  # rejected: even the interval's far end is below δ
    "opposite",  # rejected: the whole interval lies on the other side of no change
    "straddles",  # inconclusive: no change shown either way (the interval holds 0 and δ)
    "below-claim",  # inconclusive: a real change, but a size ≥ δ is not shown
    "no-change",  # inconclusive: every value equal, no change, δ = 0
    "few-samples",  # inconclusive: fewer than 2 samples on a side
    "undefined-baseline",  # inconclusive: the baseline level ≤ 0, no relative change
    "unbounded",  # inconclusive: the baseline level is not clearly above 0 (Fieller)
    "holm",  # inconclusive: decided at the raw level, not at the family's (Holm)
]

W_OUTLIER_SENSITIVE = "outlier-sensitive"  # the verdict changes without the flagged outliers
W_HOLM = "holm-changed"  # Holm's step-down turned the raw verdict inconclusive

_MIN_N = 2  # DESIGN §5: fewer than 2 samples on a side is always inconclusive
_MOST_LAUNCHES = 100  # runs_needed beyond this is null, with a note


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a comparison: its launches' statistics and every sample (for the tests
    on samples), and the same without its flagged outliers (None when nothing is flagged)."""

    launches: tuple[stats.LaunchStat, ...]
    samples: stats.Values
    clean: tuple[stats.LaunchStat, ...] | None = None
    clean_samples: stats.Values | None = None


@dataclass(frozen=True, slots=True)
class Evidence:
    """What one hypothesis rests on, before the family is decided."""

    a: stats.Level
    b: stats.Level
    noise: stats.Noise
    raw: stats.Ratio
    tests: stats.Comparison  # Welch, Mann–Whitney, Hedges' g on the unit of replication
    unit: stats.LaunchUnit
    p_support: float | None  # one-sided p of H0: e ≤ δ (small: supported)
    p_reject: float | None  # one-sided p of H0: e ≥ δ (small: rejected)
    direction: Direction
    min_effect: float
    alpha: float
    metric: str
    side_a: Side
    side_b: Side
    clean: tuple[stats.Level, stats.Level] | None  # the levels without flagged outliers
    load: str | None = None  # the load point judged at (sweeps), None outside them

    @property
    def p(self) -> float | None:
        """The member's p for Holm: the smaller of its two one-sided p-values."""
        if self.p_support is None or self.p_reject is None:
            return None
        return min(self.p_support, self.p_reject)

    @property
    def counts(self) -> tuple[int, int]:
        """Baseline and candidate counted in the unit of replication (launches or samples)."""
        return (self.a.launches, self.b.launches) if self.unit == "launch" else (self.a.n, self.b.n)


@dataclass(frozen=True, slots=True)
class Judgement:
    """One hypothesis judged: the JSON hypothesis fields that do not come from the manifest.

    `change`, `ci_low`, `ci_high` are r and its raw 1 − alpha interval (candidate vs
    baseline, not turned by direction). `verdict` is decided at `holm_level` within the
    family; `verdict_raw` at the raw alpha. `basis` says which branch of the rule decided.
    """

    verdict: Verdict
    verdict_raw: Verdict
    basis: Basis
    change: float | None
    ci_low: float | None
    ci_high: float | None
    p_welch: float | None
    p_mannwhitney: float | None
    hedges_g: float | None
    unit: stats.LaunchUnit
    n_baseline: int
    n_candidate: int
    samples_baseline: int
    samples_candidate: int
    mean_baseline: float | None
    mean_candidate: float | None
    pooled_sd: float | None
    holm_level: float | None
    p_min_effect: float | None
    launch_noise: float
    launch_noise_source: stats.NoiseSource
    runs_needed: int | None
    runs_needed_note: str | None
    verdict_without_outliers: Verdict | None
    reason: str
    warnings: tuple[str, ...]


def decide(
    change: float,
    ci_low: float,
    ci_high: float,
    direction: Direction,
    min_effect: float,
) -> tuple[Verdict, Basis]:
    """The symmetric rule on r and its interval: e = ±r, [lo, hi] turned the same way.

    supported: lo ≥ δ; rejected: hi < δ; inconclusive otherwise — the same confidence both
    ways (a minimum-effect test).
    """
    _e, lo, hi = _turned(change, ci_low, ci_high, direction)
    if lo >= min_effect:
        return "supported", "supported"
    if hi < min_effect:
        return "rejected", ("opposite" if hi < 0 else "smaller-than-claimed")
    if lo == hi:
        return "inconclusive", "no-change"
    if lo > 0:
        return "inconclusive", "below-claim"
    return "inconclusive", "straddles"


def _turned(
    change: float, lo: float, hi: float, direction: Direction
) -> tuple[float, float, float]:
    if direction == "increase":
        return change, lo, hi
    return -change, -hi, -lo


def _rule(a: stats.Level, b: stats.Level, r: stats.Ratio, ev: Evidence) -> tuple[Verdict, Basis]:
    if a.n < _MIN_N or b.n < _MIN_N:
        return "inconclusive", "few-samples"
    if r.change is None or a.mean is None or not a.mean > 0:
        return "inconclusive", "undefined-baseline"
    if r.ci_low is None or r.ci_high is None:
        return "inconclusive", "unbounded"
    return decide(r.change, r.ci_low, r.ci_high, ev.direction, ev.min_effect)


def _levels(side: tuple[stats.LaunchStat, ...], noise: stats.Noise, key: str) -> stats.Level:
    return stats.level(side, noise, key)


def weigh(
    a: Side,
    b: Side,
    noise: stats.Noise,
    direction: Direction,
    min_effect: float,
    alpha: float = 0.05,
    metric: str = "value",
    load: str | None = None,
) -> Evidence:
    """The evidence for "B changes `metric` in `direction` by at least `min_effect`" against
    baseline A, at the session's launch noise: both levels, the Fieller interval of r at
    1 − alpha, the two one-sided minimum-effect p-values, and Welch / Mann–Whitney / Hedges'
    g on launch means where both sides have two launches or more, else on the samples."""
    if direction not in ("increase", "decrease"):
        raise ValueError(f"direction must be 'increase' or 'decrease', not {direction!r}")
    if not math.isfinite(min_effect) or min_effect < 0:
        raise ValueError(f"min_effect must be a finite fraction >= 0, not {min_effect!r}")
    la, lb = _levels(a.launches, noise, "baseline"), _levels(b.launches, noise, "candidate")
    raw = stats.ratio(la, lb, alpha)
    unit: stats.LaunchUnit = "launch" if la.launches >= 2 and lb.launches >= 2 else "sample"
    if unit == "launch":
        tests = stats.compare(list(la.means), list(lb.means), alpha)
    else:
        tests = stats.compare(a.samples, b.samples, alpha)
    rho0 = 1 + min_effect if direction == "increase" else 1 - min_effect
    ps = stats.min_effect_p(la, lb, rho0) if raw.bounded else None
    p_support = p_reject = None
    if ps is not None:
        greater, less = ps
        p_support, p_reject = (greater, less) if direction == "increase" else (less, greater)
    clean = None
    if a.clean is not None or b.clean is not None:
        clean = (
            _levels(a.clean if a.clean is not None else a.launches, noise, "baseline"),
            _levels(b.clean if b.clean is not None else b.launches, noise, "candidate"),
        )
    return Evidence(
        la,
        lb,
        noise,
        raw,
        tests,
        unit,
        p_support,
        p_reject,
        direction,
        min_effect,
        alpha,
        metric,
        a,
        b,
        clean,
        load,
    )


def side(
    launches: Sequence[stats.Values] | stats.Values, series: bool = False, step: float | None = None
) -> Side:
    """A side from its values: a sequence of launches (each a sequence of values), or one
    flat sequence of values (one launch); `series` for a server's interval series; `step` the
    print resolution. Outliers are flagged within each launch."""
    import numpy as np

    groups = _launch_lists(launches)
    stats_ = tuple(stats.launch_stat(g, series, step) for g in groups if len(g))
    samples = np.concatenate([np.asarray(g, dtype=np.float64) for g in groups])
    if not any(s.outliers for s in stats_):
        return Side(stats_, samples)
    clean = []
    kept = []
    for g, st in zip(groups, stats_, strict=True):
        rest = np.delete(np.asarray(g, dtype=np.float64), list(st.outliers))
        kept.append(rest)
        if len(rest):
            clean.append(stats.launch_stat(rest, series, step))
    return Side(stats_, samples, tuple(clean), np.concatenate(kept))


def _launch_lists(launches: Sequence[stats.Values] | stats.Values) -> list[stats.Values]:
    items = list(launches)
    if items and all(isinstance(x, (int, float)) for x in items):
        return [items]
    return [x for x in items]


def judge(
    a: Sequence[stats.Values] | stats.Values,
    b: Sequence[stats.Values] | stats.Values,
    direction: Direction,
    min_effect: float,
    alpha: float = 0.05,
    metric: str = "value",
    *,
    launch_noise: float | None = None,
    series: bool = False,
) -> Judgement:
    """One claim alone (a family of one: exactly the interval rule): "B changes `metric` in
    `direction` by at least `min_effect`" against baseline A, each given as its launches'
    values (or one flat list: one launch). The launch noise is measured where a side has two
    launches, else `launch_noise` (given), else assumed."""
    sa, sb = side(a, series), side(b, series)
    noise = stats.launch_noise([sa.launches, sb.launches], launch_noise)
    return family([weigh(sa, sb, noise, direction, min_effect, alpha, metric)], alpha)[0]


def family(members: Sequence[Evidence], alpha: float = 0.05) -> list[Judgement]:
    """Every member of a family of claims decided by Holm's step-down (DESIGN §5) on its
    one-sided minimum-effect p at level alpha/2; one member alone is the interval rule."""
    ps = [ev.p for ev in members]
    decided = stats.holm_levels(ps, alpha)
    tested = stats.test_levels(ps, alpha)
    return [_judge(ev, decided[i], tested[i], len(members)) for i, ev in enumerate(members)]


def _judge(ev: Evidence, decided: float | None, tested: float, size: int) -> Judgement:
    raw_verdict, raw_basis = _rule(ev.a, ev.b, ev.raw, ev)
    if decided is not None:
        at = stats.ratio(ev.a, ev.b, decided) if decided != ev.alpha else ev.raw
        verdict, basis = _rule(ev.a, ev.b, at, ev)
    elif raw_verdict != "inconclusive":
        verdict, basis = "inconclusive", "holm"
    else:
        verdict, basis = raw_verdict, raw_basis
    warnings = list(ev.tests.warnings)
    if basis == "holm":
        warnings.append(W_HOLM)
    without: Verdict | None = None
    if ev.clean is not None:
        ca, cb = ev.clean
        level_wo = decided if decided is not None else tested
        without = _rule(ca, cb, stats.ratio(ca, cb, level_wo), ev)[0]
        if without == "inconclusive" and decided is None and raw_verdict != "inconclusive":
            without = verdict  # the family's step-down decides it as it decides the member
        warnings.append(stats.W_OUTLIER)
        if without != verdict:
            warnings.append(W_OUTLIER_SENSITIVE)
    if ev.noise.source == "assumed":
        warnings.append(stats.W_ASSUMED_NOISE)
    if basis == "unbounded":
        warnings.append(stats.W_UNBOUNDED)

    runs = note = None
    if verdict == "inconclusive" and basis not in ("few-samples", "undefined-baseline"):
        runs, note = _runs_needed(ev)
    unit_n = ev.counts
    return Judgement(
        verdict=verdict,
        verdict_raw=raw_verdict,
        basis=basis,
        change=ev.raw.change,
        ci_low=ev.raw.ci_low,
        ci_high=ev.raw.ci_high,
        p_welch=ev.tests.p_welch,
        p_mannwhitney=ev.tests.p_mannwhitney,
        hedges_g=ev.tests.hedges_g,
        unit=ev.unit,
        n_baseline=unit_n[0],
        n_candidate=unit_n[1],
        samples_baseline=ev.a.n,
        samples_candidate=ev.b.n,
        mean_baseline=ev.a.mean,
        mean_candidate=ev.b.mean,
        pooled_sd=ev.tests.pooled_sd,
        holm_level=decided,
        p_min_effect=ev.p,
        launch_noise=ev.noise.cv,
        launch_noise_source=ev.noise.source,
        runs_needed=runs,
        runs_needed_note=note,
        verdict_without_outliers=without,
        reason=_reason(ev, basis, raw_verdict, tested, size, runs),
        warnings=tuple(dict.fromkeys(warnings)),
    )


def empty(metric: str, direction: Direction, min_effect: float, alpha: float) -> Judgement:
    """The judgement of a claim one of whose configs has no value of the metric at all."""
    del direction, min_effect  # the claim itself does not change what is missing
    return Judgement(
        verdict="inconclusive",
        verdict_raw="inconclusive",
        basis="few-samples",
        change=None,
        ci_low=None,
        ci_high=None,
        p_welch=None,
        p_mannwhitney=None,
        hedges_g=None,
        unit="sample",
        n_baseline=0,
        n_candidate=0,
        samples_baseline=0,
        samples_candidate=0,
        mean_baseline=None,
        mean_candidate=None,
        pooled_sd=None,
        holm_level=None,
        p_min_effect=None,
        launch_noise=stats.ASSUMED_LAUNCH_CV,
        launch_noise_source="assumed",
        runs_needed=None,
        runs_needed_note=None,
        verdict_without_outliers=None,
        reason=(
            f"{metric} has no value in one of the two configs: a verdict needs at least "
            f"{_MIN_N} samples on each side ({_level(alpha)} level)."
        ),
        warnings=(stats.W_FEW,),
    )


def _runs_needed(ev: Evidence) -> tuple[int | None, str | None]:
    """Launches per side that would decide, or None with why (DESIGN §5 `runs_needed`)."""
    if ev.raw.change is None:
        return None, None
    e = ev.raw.change if ev.direction == "increase" else -ev.raw.change
    if e == ev.min_effect:
        return None, "the effect sits at the claim's threshold: no number of launches decides it"
    n = stats.launches_needed(
        ev.side_a.launches,
        ev.side_b.launches,
        ev.noise,
        e,
        ev.min_effect,
        ev.alpha,
        _MOST_LAUNCHES,
    )
    if n is None:
        return None, (
            f"more than {_MOST_LAUNCHES} launches a side would be needed: the estimate "
            f"({format_percent(e, 1, signed=True)}) is close to the claim's threshold "
            f"({format_percent(ev.min_effect, 1)})"
        )
    return n, None


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


def _plural(n: int | float, word: str) -> str:
    return f"{format_number(n, 0)} {word}" if n == 1 else f"{format_number(n, 0)} {word}s"


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 0.0001 else "<0.0001"


def _reason(
    ev: Evidence,
    basis: Basis,
    raw_verdict: Verdict,
    tested: float,
    size: int,
    runs: int | None,
) -> str:
    return f"{_finding(ev, basis, raw_verdict, tested, size)} {_assumed(ev, runs)}"


def _finding(ev: Evidence, basis: Basis, raw_verdict: Verdict, tested: float, size: int) -> str:
    metric, direction, delta = ev.metric, ev.direction, ev.min_effect
    if basis == "few-samples":
        return (
            f"{metric} has {_plural(ev.a.n, 'baseline sample')} and "
            f"{_plural(ev.b.n, 'candidate sample')}: a verdict needs at least {_MIN_N} "
            "on each side."
        )
    r, ci_lo, ci_hi = ev.raw.change, ev.raw.ci_low, ev.raw.ci_high
    means = f"{format_value(metric, ev.a.mean)} → {format_value(metric, ev.b.mean)}"
    if basis == "undefined-baseline" or r is None:
        return (
            f"{metric} has a baseline level of {format_value(metric, ev.a.mean)}, "
            "so a relative change is undefined."
        )
    if basis == "unbounded" or ci_lo is None or ci_hi is None:
        return (
            f"{metric} changed by {format_percent(r, 1, signed=True)} ({means}), but the "
            f"baseline level is not clearly above zero at {_level(ev.alpha)} confidence, so "
            "the interval of the ratio is unbounded (Fieller) and nothing is shown."
        )
    e, lo, hi = _turned(r, ci_lo, ci_hi, direction)
    d = _decimals([(e, delta), (hi, delta), (lo, delta), (lo, 0.0), (e, 0.0)])
    if ci_lo == ci_hi:
        spread = "every value equal within each config"
    else:
        spread = (
            f"{_level(ev.alpha)} CI {format_percent(ci_lo, d, signed=True)} to "
            f"{format_percent(ci_hi, d, signed=True)}"
        )
    head = f"{metric} changed by {format_percent(r, d, signed=True)} ({means}, {spread})"
    claim = f"the {format_percent(delta, d)} {direction} the claim needs"
    opposite = "a decrease" if direction == "increase" else "an increase"
    # δ = 0 ("B > A" with no size): any change in the direction is the claim
    any_size = delta == 0
    if basis == "supported":
        if any_size:
            return f"{head}: the interval excludes no change, as the claimed {direction} needs."
        return f"{head}: the whole interval is at least {claim}."
    if basis == "smaller-than-claimed":
        if ci_lo == ci_hi:
            return f"{head}: below {claim}."
        return f"{head}: even the largest {direction} in the interval is below {claim}."
    if basis == "opposite":
        if ci_lo == ci_hi:
            return f"{head}: {opposite}, the opposite of the claimed {direction}."
        return f"{head}: the whole interval is {opposite}, the opposite of the claimed {direction}."
    if basis == "below-claim":
        return (
            f"{head}: a real {direction}, {format_percent(lo, d, signed=True)} to "
            f"{format_percent(hi, d, signed=True)}, but ≥ {format_percent(delta, d)} is not shown."
        )
    if basis == "no-change":
        return (
            f"{head}: with no change at all, neither the {direction} nor its absence can be shown."
        )
    if basis == "holm":
        p = ev.p
        got = f"one-sided p {_p(p)}" if p is not None else "no p"
        return (
            f"{head}: {raw_verdict} at the raw {_level(ev.alpha)} level, but with "
            f"{size} {'claims' if ev.load is None else 'claims × load points'} Holm's "
            f"step-down needs one-sided p ≤ {_p(tested / 2)} here "
            f"({got}), so it is not shown with the family's confidence."
        )
    if any_size:
        return f"{head}: the interval includes no change, so the claimed {direction} is not shown."
    return f"{head}: no change is shown either way (the interval holds both no change and {claim})."


def _assumed(ev: Evidence, runs: int | None) -> str:
    """What the verdict assumed: its unit of replication and its launch noise."""
    a, b, noise = ev.a, ev.b, ev.noise
    cv = format_percent(noise.cv, 1)
    if noise.source == "measured":
        where = (
            (
                f"launch noise {cv}, measured from {_plural(noise.launches, 'launch')} of "
                f"{_plural(noise.cells, 'config' if ev.load is None else 'config and load point')}"
            )
            .replace("launchs", "launches")
            .replace("config and load points", "configs × load points")
        )
    elif noise.source == "given":
        where = f"launch noise {cv}, as given in sessionlens.toml"
    else:
        where = f"launch noise assumed {cv} (no config was launched twice)"
    if ev.unit == "launch":
        basis = f"Judged on {a.launches} vs {b.launches} launch means"
        text = f"{basis}, with {where}."
    else:
        counts = _counts(a, b)
        if a.launches == 1 and b.launches == 1:
            text = f"Judged on one launch a side ({counts}) plus {where}."
        else:
            text = (
                f"Judged on {a.launches} vs {b.launches} launches ({counts}), a single "
                f"launch's samples plus {where}."
            )
    if noise.source == "assumed" and runs is None and ev.raw.change is not None:
        text += " Relaunch each config at least twice to measure it."
    return text


def _counts(a: stats.Level, b: stats.Level) -> str:
    """Both sides' samples, and what they are worth where autocorrelated."""
    text = f"{a.n} vs {b.n} values"
    if a.n_eff < a.n - 0.5 or b.n_eff < b.n - 0.5:
        worth = f"{format_number(a.n_eff, 0)} vs {format_number(b.n_eff, 0)}"
        text += f", worth about {worth} independent ones"
    return text
