"""The inline SVG trend chart of the history page: a series' level per session with its
interval, its regimes' means, its change points and its newest session's verdict.

Returns SVG text only; every label is XML-escaped (folder and config names stay text), and
each point carries its numbers in a `<title>` tooltip so the page needs no script.
"""

from __future__ import annotations

import math
from html import escape

from ..metrics import format_number
from .chart import _places, _ticks
from .history_view import VERDICT_WORDS, SeriesView

_WIDTH = 720
_HEIGHT = 300
_LEFT = 72
_RIGHT = 24
_TOP = 28
_BOTTOM = 52


def svg(s: SeriesView) -> str:
    """The trend of one series as a standalone `<svg>` element."""
    finite = [v for v in (*s.levels, *s.lows, *s.highs) if v is not None and math.isfinite(v)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    pad = (hi - lo) * 0.06 if hi > lo else abs(hi) * 0.02 or 1.0
    ticks = _ticks(lo - pad, hi + pad)
    y0, y1 = ticks[0], ticks[-1]
    places = _places(ticks[1] - ticks[0])
    n = len(s.levels)
    bottom = _HEIGHT - _BOTTOM
    plot_w = _WIDTH - _LEFT - _RIGHT

    def px(i: float) -> float:
        return _LEFT + (i + 0.5) / max(n, 1) * plot_w

    def py(v: float) -> float:
        return bottom - (v - y0) / (y1 - y0) * (bottom - _TOP)

    unit = f" ({s.unit})" if s.unit and s.unit != "fraction" else ""
    title = f"{s.title}: level per session{unit}"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sessionlens-trend" role="img" '
        f'viewBox="0 0 {_WIDTH} {_HEIGHT}" width="{_WIDTH}" height="{_HEIGHT}">',
        f"<title>{escape(title)}</title>",
    ]
    for t in ticks:
        y = py(t)
        out.append(
            f'<line class="grid" x1="{_LEFT}" y1="{y:.1f}" x2="{_WIDTH - _RIGHT}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(format_number(t, places))}</text>"
        )
    out.append(
        f'<line class="axis" x1="{_LEFT}" y1="{bottom}" x2="{_WIDTH - _RIGHT}" y2="{bottom}"/>'
    )
    step = max(1, math.ceil(n / 12))
    for i in range(0, n, step):
        out.append(
            f'<text class="tick" x="{px(i):.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{i + 1}</text>"
        )
    first, last = s.dates[0] if s.dates else "", s.dates[-1] if s.dates else ""
    out.append(
        f'<text class="axis-label" x="{_LEFT + plot_w / 2:.1f}" y="{bottom + 36}" '
        f'text-anchor="middle">{escape(f"session, by date ({first} to {last})")}</text>'
    )
    for a, b, mean in s.regimes:
        tip = f"regime of sessions {a + 1} to {b}: mean {format_number(mean, places + 1)}"
        out.append(
            f'<line class="regime" x1="{px(a - 0.4):.1f}" y1="{py(mean):.1f}" '
            f'x2="{px(b - 0.6):.1f}" y2="{py(mean):.1f}"><title>{escape(tip)}</title></line>'
        )
    for c in s.cuts:
        x = px(c - 0.5)
        tip = f"change point: a new regime starts at {s.sessions[c]}"
        out.append(
            f'<line class="change-point" x1="{x:.1f}" y1="{_TOP - 6}" x2="{x:.1f}" '
            f'y2="{bottom}"><title>{escape(tip)}</title></line>'
            f'<text class="cp-label" x="{x + 3:.1f}" y="{_TOP - 10}">'
            f"{escape(s.sessions[c])}</text>"
        )
    for i, v in enumerate(s.levels):
        x, y = px(i), py(v)
        low, high = s.lows[i], s.highs[i]
        span = ""
        if low is not None and high is not None and math.isfinite(high - low):
            span = (
                f", interval {format_number(low, places + 1)} to {format_number(high, places + 1)}"
            )
            out.append(
                f'<line class="interval" x1="{x:.1f}" y1="{py(low):.1f}" x2="{x:.1f}" '
                f'y2="{py(high):.1f}"/>'
            )
        cls = "level"
        if i == n - 1 and s.newest_verdict is not None:
            cls += f" newest {s.newest_verdict}"
        tip = f"{i + 1}. {s.sessions[i]} ({s.dates[i]}): {format_number(v, places + 1)}{span}"
        if i == n - 1 and s.newest_verdict is not None:
            tip += f"; newest: {VERDICT_WORDS[s.newest_verdict]}"
        out.append(
            f'<circle class="{cls}" cx="{x:.1f}" cy="{y:.1f}" r="{5 if i == n - 1 else 4}">'
            f"<title>{escape(tip)}</title></circle>"
        )
    out.append("</svg>")
    return "\n".join(out)
