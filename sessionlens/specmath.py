"""Speculative-decoding economics of DESIGN §6 as pure functions of plain numbers.

Owns the ceiling, efficiency, break-even and target acceptance lengths, the per-token
acceptance p (chain of k steps and unbounded), the cycle-time estimate from Decode intervals,
and `economics()`, which fills every figure of the JSON economics object it can. It must not
read sessions, choose configs or format numbers; caveats are machine codes in `warnings`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import stats

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Economics",
    "accept_len_for",
    "break_even_accept_len",
    "ceiling_tok_s",
    "chain_length",
    "economics",
    "efficiency",
    "estimate_cycle_ms",
    "estimate_cycle_ms_mean",
    "estimate_cycle_ms_mean_columns",
    "p_chain",
    "p_unbounded",
    "reachable",
]

# Warning codes (catalogued in diagnostics.CODES, "statistics codes" section).
W_ACCEPT_BELOW_ONE = "accept-len-below-one"  # L < 1: the source likely omits the bonus token
W_ACCEPT_ABOVE_STEPS = "accept-len-above-steps"  # L > k + 1: impossible with k draft steps
W_ABOVE_CEILING = "above-ceiling"  # measured > ceiling: c, L or the throughput kind is off

_BISECT_ITERATIONS = 200  # halves [0, 1] far below double precision; exits early at a fixed point


def _positive(x: float | None) -> bool:
    return x is not None and math.isfinite(x) and x > 0


def ceiling_tok_s(cycle_ms: float, accept_len: float) -> float | None:
    """Throughput ceiling of one stream: 1000·L/c tok/s (None unless c > 0)."""
    if not _positive(cycle_ms) or not math.isfinite(accept_len):
        return None
    return 1000.0 * accept_len / cycle_ms


def efficiency(measured_tok_s: float, ceiling: float) -> float | None:
    """measured / ceiling (None unless the ceiling is positive)."""
    if not _positive(ceiling) or not math.isfinite(measured_tok_s):
        return None
    return measured_tok_s / ceiling


def accept_len_for(tok_s: float, cycle_ms: float) -> float | None:
    """Acceptance length needed for `tok_s` at cycle time c: T·c/1000."""
    if not _positive(cycle_ms) or not math.isfinite(tok_s):
        return None
    return tok_s * cycle_ms / 1000.0


def break_even_accept_len(baseline_tok_s: float, cycle_ms: float) -> float | None:
    """Acceptance length at which speculation matches a non-speculative T₀: T₀·c/1000."""
    return accept_len_for(baseline_tok_s, cycle_ms)


def reachable(accept_len: float, steps: int) -> bool:
    """Whether k draft steps can yield this acceptance length: L ≤ k + 1."""
    return accept_len <= steps + 1


def chain_length(p: float, steps: int) -> float:
    """Expected tokens per cycle when each of k chained drafts is accepted with p.

    1 + p + … + p^k = (1 − p^(k+1))/(1 − p), summed directly so p = 1 needs no limit;
    beyond `_SUMMED_STEPS` steps (a log's absurd `speculative_num_steps`) by the closed
    form, as 1 − p^(k+1) = −expm1((k+1)·log1p(p − 1)), exact enough near p = 1.
    """
    if steps <= _SUMMED_STEPS:
        return math.fsum(p**i for i in range(steps + 1))
    if p >= 1.0:
        return float(steps + 1)
    if p <= 0.0:
        return 1.0
    return -math.expm1((steps + 1) * math.log1p(p - 1.0)) / (1.0 - p)


_SUMMED_STEPS = 1024


def p_chain(accept_len: float, steps: int) -> float | None:
    """Per-token acceptance p for a chain of k steps giving L: (1 − p^(k+1))/(1 − p) = L.

    None when L < 1 or L > k + 1 (no p in [0, 1] does it) or k < 1. The left side rises
    strictly with p on [0, 1], so bisection converges to the one root.
    """
    if steps < 1 or not math.isfinite(accept_len):
        return None
    if accept_len < 1 or accept_len > steps + 1:
        return None
    if accept_len == 1:
        return 0.0
    if accept_len == steps + 1:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(_BISECT_ITERATIONS):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if chain_length(mid, steps) < accept_len:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def p_unbounded(accept_len: float) -> float | None:
    """Per-token acceptance p at unbounded depth giving L: 1/(1 − p) = L, so p = 1 − 1/L.

    None when L < 1 (a length below one token per cycle has no such p).
    """
    if not math.isfinite(accept_len) or accept_len < 1:
        return None
    return 1.0 - 1.0 / accept_len


def estimate_cycle_ms(accept_len: float, running_req: float, gen_tok_s: float) -> float | None:
    """Cycle time of one Decode interval when no phase timings exist: 1000·L·R/G ms.

    Each of R running requests gains L tokens per cycle, so G = 1000·L·R/c. None unless
    L, R and G are positive.
    """
    if not (_positive(accept_len) and _positive(running_req) and _positive(gen_tok_s)):
        return None
    return 1000.0 * accept_len * running_req / gen_tok_s


def estimate_cycle_ms_mean(intervals: Iterable[tuple[float, float, float]]) -> float | None:
    """Mean of `estimate_cycle_ms` over (L, R, G) intervals, skipping those it cannot use.

    The mean of per-interval estimates rather than a ratio of means, as DESIGN §6 says
    "per interval": idle intervals (R = 0) then weigh nothing instead of biasing the ratio.
    """
    found = [c for c in (estimate_cycle_ms(*row) for row in intervals) if c is not None]
    return stats.fmean(found) if found else None


def estimate_cycle_ms_mean_columns(
    accept_len: npt.NDArray[np.float64],
    running_req: npt.NDArray[np.float64],
    gen_tok_s: npt.NDArray[np.float64],
) -> float | None:
    """`estimate_cycle_ms_mean` of intervals given as three equal-length columns, the same
    value bit for bit: the per-interval estimates in numpy (the same operations in the same
    order), their mean by `stats.fmean` (an exact sum: no order matters)."""
    import numpy as np

    with np.errstate(all="ignore"):
        usable = (
            np.isfinite(accept_len)
            & np.isfinite(running_req)
            & np.isfinite(gen_tok_s)
            & (accept_len > 0)
            & (running_req > 0)
            & (gen_tok_s > 0)
        )
        found = 1000.0 * accept_len[usable] * running_req[usable] / gen_tok_s[usable]
    return stats.fmean(found.astype(np.float64, copy=False)) if len(found) else None


@dataclass(frozen=True, slots=True)
class Economics:
    """The computable fields of the JSON economics object (DESIGN §7).

    `config`, `baseline_config` and `cycle_is_estimate` describe where the inputs came from
    and are the caller's to add.
    """

    cycle_ms: float | None
    accept_len: float | None
    steps: int | None
    measured_tok_s: float | None
    ceiling_tok_s: float | None
    efficiency: float | None
    baseline_tok_s: float | None
    break_even_accept_len: float | None
    p_current_chain: float | None
    p_current_unbounded: float | None
    target_tok_s: float | None
    target_accept_len: float | None
    reachable: bool | None
    p_needed_chain: float | None
    p_needed_unbounded: float | None
    warnings: tuple[str, ...]


def economics(
    cycle_ms: float | None,
    accept_len: float | None,
    steps: int | None,
    measured_tok_s: float | None = None,
    baseline_tok_s: float | None = None,
    target_tok_s: float | None = None,
) -> Economics:
    """Every DESIGN §6 figure the given numbers allow; the rest is None."""
    c = cycle_ms if _positive(cycle_ms) else None
    k = steps if steps is not None and steps >= 1 else None
    length = accept_len if accept_len is not None and math.isfinite(accept_len) else None
    warnings: list[str] = []

    ceiling = ceiling_tok_s(c, length) if c is not None and length is not None else None
    eff = (
        efficiency(measured_tok_s, ceiling)
        if measured_tok_s is not None and ceiling is not None
        else None
    )
    if eff is not None and eff > 1:
        warnings.append(W_ABOVE_CEILING)

    p_cur_chain = p_cur_unb = None
    if length is not None:
        p_cur_unb = p_unbounded(length)
        p_cur_chain = p_chain(length, k) if k is not None else None
        if length < 1:
            warnings.append(W_ACCEPT_BELOW_ONE)
        elif k is not None and length > k + 1:
            warnings.append(W_ACCEPT_ABOVE_STEPS)

    break_even = (
        break_even_accept_len(baseline_tok_s, c)
        if baseline_tok_s is not None and c is not None
        else None
    )

    target_len = (
        accept_len_for(target_tok_s, c) if target_tok_s is not None and c is not None else None
    )
    can_reach = p_need_chain = p_need_unb = None
    if target_len is not None:
        p_need_unb = p_unbounded(target_len)
        if k is not None:
            can_reach = reachable(target_len, k)
            p_need_chain = p_chain(target_len, k)

    return Economics(
        cycle_ms=cycle_ms,
        accept_len=accept_len,
        steps=steps,
        measured_tok_s=measured_tok_s,
        ceiling_tok_s=ceiling,
        efficiency=eff,
        baseline_tok_s=baseline_tok_s,
        break_even_accept_len=break_even,
        p_current_chain=p_cur_chain,
        p_current_unbounded=p_cur_unb,
        target_tok_s=target_tok_s,
        target_accept_len=target_len,
        reachable=can_reach,
        p_needed_chain=p_need_chain,
        p_needed_unbounded=p_need_unb,
        warnings=tuple(warnings),
    )
