"""The inline SVG chart of the HTML page: every run a point, per config, median marked.

Draws from the view's chart series (the headline metric of `Analysis.runs`); outliers are
highlighted, the value axis carries the unit. Returns SVG text only; every label is
XML-escaped, so a config name or path from a log stays text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from ..metrics import format_number, format_percent
from .sweep_view import SweepView
from .view import ChartView, DecisionRow

# Layout in SVG user units; the page scales the whole drawing to its width.
_WIDTH = 720
_ROW = 44
_TOP = 36
_BOTTOM = 48
_RIGHT = 24
_CHAR = 7.2  # average label glyph width at 12px
_MAX_LABEL = 28  # characters shown before a label is shortened (full name in <title>)
_JITTER = (0, -6, 6, -12, 12, -3, 3, -9, 9)  # deterministic vertical spread of points


def _ticks(lo: float, hi: float) -> list[float]:
    """About five round tick values covering [lo, hi]."""
    span = hi - lo if hi > lo else (abs(hi) or 1.0)
    raw = span / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw)
    first = math.floor(lo / step + 1e-9) * step
    digits = max(12, 3 - math.floor(math.log10(step)))  # float noise off, steps kept apart
    out = [round(first, digits)]
    # Until the last tick reaches hi, so every value lies inside the axis.
    while out[-1] < hi - step * 1e-9 or len(out) < 2:
        out.append(round(first + step * len(out), digits))
    return out


def _places(step: float) -> int:
    """Decimals that print every multiple of the tick step as it is (0.25 needs two)."""
    return next((p for p in range(20) if abs(round(step, p) - step) <= step * 1e-9), 20)


def _short(label: str) -> str:
    return label if len(label) <= _MAX_LABEL else label[: _MAX_LABEL - 1] + "…"


def _exponent(lo: float, hi: float) -> int:
    """0, or the power of ten the axis counts in when values are too large or too small
    for round ticks in plain numbers (a log's absurd values: 1e308, 1e-320)."""
    m = max(abs(lo), abs(hi))
    if m == 0:
        return 0
    e = math.floor(math.log10(m))
    return e if e > 15 or e < -6 else 0


def svg(chart: ChartView) -> str:
    """The chart as a standalone `<svg>` element."""
    values = [v for s in chart.series for v in s.values if math.isfinite(v)]
    marks = [v for s in chart.series for v in (s.level, s.ci_low, s.ci_high) if v is not None]
    finite = values + [m for m in marks if math.isfinite(m)]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    exp = _exponent(lo, hi)
    unit = 10.0**exp  # the axis is drawn in values / unit
    lo, hi = lo / unit, hi / unit
    # values that differ only in their last digits are drawn as one (no tick step would
    # tell them apart)
    pad = (hi - lo) * 0.08 if hi - lo > abs(hi) * 1e-9 else abs(hi) * 0.05 or 1.0
    ticks = _ticks(lo - pad, hi + pad)
    x0, x1 = ticks[0], ticks[-1]
    step = ticks[1] - ticks[0]
    places = _places(step)
    scale = f"e{exp}" if exp else ""  # on each tick label

    left = 16 + _CHAR * max([len(_short(s.config)) for s in chart.series] + [4])
    height = _TOP + _ROW * len(chart.series) + _BOTTOM
    plot_w = _WIDTH - left - _RIGHT

    def px(at: float) -> float:  # `at` in axis units (values / unit, as the ticks)
        return left + (at - x0) / (x1 - x0) * plot_w

    axis = chart.metric + (f" ({chart.unit})" if chart.unit else "")
    out: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sessionlens-chart" role="img" '
        f'viewBox="0 0 {_WIDTH} {height}" width="{_WIDTH}" height="{height}">',
        f"<title>{escape(chart.title)}: every run as a point</title>",
    ]
    bottom = _TOP + _ROW * len(chart.series)
    legend_x = _WIDTH - _RIGHT - 250
    out.append(
        f'<g class="legend"><circle class="run" cx="{legend_x}" cy="12" r="4"/>'
        f'<text x="{legend_x + 8}" y="16">run</text>'
        f'<circle class="run outlier" cx="{legend_x + 50}" cy="12" r="5"/>'
        f'<text x="{legend_x + 59}" y="16">outlier</text>'
        f'<line class="median" x1="{legend_x + 120}" y1="4" x2="{legend_x + 120}" y2="20"/>'
        f'<text x="{legend_x + 128}" y="16">level ± interval</text></g>'
    )
    for t in ticks:
        x = px(t)
        out.append(f'<line class="grid" x1="{x:.1f}" y1="{_TOP - 8}" x2="{x:.1f}" y2="{bottom}"/>')
        out.append(
            f'<text class="tick" x="{x:.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{escape(format_number(t, places) + scale)}</text>"
        )
    out.append(
        f'<line class="axis" x1="{left}" y1="{bottom}" x2="{_WIDTH - _RIGHT}" y2="{bottom}"/>'
    )
    out.append(
        f'<text class="axis-label" x="{left + plot_w / 2:.1f}" y="{bottom + 38}" '
        f'text-anchor="middle">{escape(axis)}</text>'
    )
    for row, s in enumerate(chart.series):
        y = _TOP + _ROW * row + _ROW / 2
        out.append(f'<g class="config"><title>{escape(s.config)}</title>')
        out.append(
            f'<text class="label" x="{left - 10:.1f}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(_short(s.config))}</text></g>"
        )
        for i, (v, flagged, where) in enumerate(zip(s.values, s.outliers, s.where, strict=True)):
            if not math.isfinite(v):
                continue
            cls = "run outlier" if flagged else "run"
            tip = f"{s.config}: {format_number(v, chart.places)} {chart.unit}".rstrip()
            tip += f" ({where}){', outlier' if flagged else ''}"
            out.append(
                f'<circle class="{cls}" cx="{px(v / unit):.1f}" '
                f'cy="{y + _JITTER[i % len(_JITTER)]:.1f}" '
                f'r="{5 if flagged else 4}"><title>{escape(tip)}</title></circle>'
            )
        if s.ci_low is not None and s.ci_high is not None and math.isfinite(s.ci_high - s.ci_low):
            a, b = px(s.ci_low / unit), px(s.ci_high / unit)
            span = f"{format_number(s.ci_low, chart.places)} to "
            span += format_number(s.ci_high, chart.places)
            tip = f"{s.config}: level {s.level_text}, interval {span}"
            out.append(
                f'<g class="interval"><title>{escape(tip)}</title>'
                f'<line x1="{a:.1f}" y1="{y + 14:.1f}" x2="{b:.1f}" y2="{y + 14:.1f}"/>'
                f'<line x1="{a:.1f}" y1="{y + 9:.1f}" x2="{a:.1f}" y2="{y + 19:.1f}"/>'
                f'<line x1="{b:.1f}" y1="{y + 9:.1f}" x2="{b:.1f}" y2="{y + 19:.1f}"/></g>'
            )
        if s.level is not None and math.isfinite(s.level):
            xm = px(s.level / unit)
            out.append(
                f'<line class="median level" x1="{xm:.1f}" y1="{y - 16:.1f}" x2="{xm:.1f}" '
                f'y2="{y + 16:.1f}"><title>{escape(f"{s.config}: level {s.level_text}")}'
                "</title></line>"
            )
    out.append("</svg>")
    return "\n".join(out)


_CURVE_H = 380
_CURVE_LEFT = 72
_CURVE_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def curves_svg(sweep: SweepView) -> str:
    """The throughput–latency curves of a sweep: a line per config through its load points,
    the latency bound (where the SLO names the curve's latency) drawn across."""
    pts = [(x, y) for c in sweep.curves for _, x, y in c.points]
    if not pts:
        return ""
    xs, ys = [x for x, _ in pts], [y for _, y in pts]
    if sweep.slo_latency is not None:
        ys.append(sweep.slo_latency)
    x_ticks = _ticks(min(xs), max(xs))
    y_ticks = _ticks(min(ys), max(ys))
    bottom = _CURVE_H - _BOTTOM
    plot_w = _WIDTH - _CURVE_LEFT - _RIGHT - 160  # room for the legend on the right
    plot_h = bottom - _TOP

    def px(x: float) -> float:
        return _CURVE_LEFT + (x - x_ticks[0]) / (x_ticks[-1] - x_ticks[0]) * plot_w

    def py(y: float) -> float:
        return bottom - (y - y_ticks[0]) / (y_ticks[-1] - y_ticks[0]) * plot_h

    x_places = _places(x_ticks[1] - x_ticks[0])
    y_places = _places(y_ticks[1] - y_ticks[0])
    title = f"{sweep.throughput_metric} against {sweep.latency_metric}, per load point"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sessionlens-curves" role="img" '
        f'viewBox="0 0 {_WIDTH} {_CURVE_H}" width="{_WIDTH}" height="{_CURVE_H}">',
        f"<title>{escape(title)}</title>",
    ]
    for t in x_ticks:
        out.append(
            f'<line class="grid" x1="{px(t):.1f}" y1="{_TOP}" x2="{px(t):.1f}" y2="{bottom}"/>'
            f'<text class="tick" x="{px(t):.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{escape(format_number(t, x_places))}</text>"
        )
    for t in y_ticks:
        out.append(
            f'<line class="grid" x1="{_CURVE_LEFT}" y1="{py(t):.1f}" '
            f'x2="{_CURVE_LEFT + plot_w}" y2="{py(t):.1f}"/>'
            f'<text class="tick" x="{_CURVE_LEFT - 6}" y="{py(t) + 4:.1f}" text-anchor="end">'
            f"{escape(format_number(t, y_places))}</text>"
        )
    out.append(
        f'<text class="axis-label" x="{_CURVE_LEFT + plot_w / 2:.1f}" y="{bottom + 38}" '
        f'text-anchor="middle">{escape(sweep.throughput_metric)}</text>'
        f'<text class="axis-label" x="14" y="{_TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_TOP + plot_h / 2:.1f})">'
        f"{escape(sweep.latency_metric)}</text>"
    )
    if sweep.slo_latency is not None:
        y = py(sweep.slo_latency)
        out.append(
            f'<line class="slo" x1="{_CURVE_LEFT}" y1="{y:.1f}" x2="{_CURVE_LEFT + plot_w}" '
            f'y2="{y:.1f}" stroke-dasharray="6 4"><title>SLO: {escape(sweep.latency_metric)} ≤ '
            f"{escape(format_number(sweep.slo_latency, y_places))}</title></line>"
        )
    for i, c in enumerate(sweep.curves):
        colour = _CURVE_COLOURS[i % len(_CURVE_COLOURS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for _, x, y in c.points)
        out.append(f'<g class="curve"><title>{escape(c.config)}</title>')
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        for load, x, y in c.points:
            tip = f"{c.config} at {load}: {format_number(x, x_places)}, {format_number(y, 2)}"
            out.append(
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="{colour}">'
                f"<title>{escape(tip)}</title></circle>"
            )
        ly = _TOP + 18 * i
        lx = _CURVE_LEFT + plot_w + 16
        out.append(
            f'<line x1="{lx}" y1="{ly}" x2="{lx + 18}" y2="{ly}" stroke="{colour}" '
            f'stroke-width="2"/><text x="{lx + 24}" y="{ly + 4}">{escape(_short(c.config))}'
            "</text></g>"
        )
    out.append("</svg>")
    return "\n".join(out)


_DECISION_ROW = 26
_DECISION_WIDTH = 960
_DECISION_LEFT_CHARS = 36
_VERDICT_CLASS = {"supported": "good", "rejected": "bad", "inconclusive": "open"}


def decision_svg(rows: Sequence[DecisionRow], level: str) -> str:
    """The decision chart (DESIGN §7): per claim its change and interval as a bar, against a
    line at no change and a mark at the claimed size; coloured and labelled by verdict."""
    ends = [0.0]
    for r in rows:
        ends += [v for v in (r.change, r.ci_low, r.ci_high, r.threshold) if v is not None]
    ends = [v * 100 for v in ends if math.isfinite(v)]
    ticks = _ticks(min(ends), max(ends))
    left = 16 + _CHAR * min(_DECISION_LEFT_CHARS, max(len(r.label) for r in rows))
    right_text = 16 + _CHAR * max(len(r.text) for r in rows)
    width = _DECISION_WIDTH
    plot_w = width - left - _RIGHT - right_text
    bottom = _TOP + _DECISION_ROW * len(rows)
    height = bottom + _BOTTOM

    def px(pct: float) -> float:
        return left + (pct - ticks[0]) / (ticks[-1] - ticks[0]) * plot_w

    places = _places(ticks[1] - ticks[0])
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sessionlens-decision" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">',
        f"<title>Decision chart: each claim's change with its {escape(level)} interval</title>",
    ]
    for t in ticks:
        out.append(
            f'<line class="grid" x1="{px(t):.1f}" y1="{_TOP - 8}" x2="{px(t):.1f}" '
            f'y2="{bottom}"/><text class="tick" x="{px(t):.1f}" y="{bottom + 16}" '
            f'text-anchor="middle">{escape(format_percent(t / 100, places, signed=True))}</text>'
        )
    out.append(
        f'<line class="zero" x1="{px(0):.1f}" y1="{_TOP - 8}" x2="{px(0):.1f}" y2="{bottom}">'
        "<title>no change</title></line>"
    )
    for i, r in enumerate(rows):
        y = _TOP + _DECISION_ROW * i + _DECISION_ROW / 2
        cls = _VERDICT_CLASS.get(r.verdict, "open")
        label = r.label.strip()
        if len(label) > _DECISION_LEFT_CHARS:
            label = label[: _DECISION_LEFT_CHARS - 1] + "…"
        kind = "claim sub" if r.sub else "claim"
        tip = f"{r.label.strip()}: {r.text}"
        out.append(f'<g class="{kind} {cls}"><title>{escape(tip)}</title>')
        out.append(
            f'<text class="label" x="{left - 10:.1f}" y="{y + 4:.1f}" text-anchor="end">'
            f"{escape(label)}</text>"
        )
        xt = px(r.threshold * 100)
        out.append(
            f'<line class="threshold" x1="{xt:.1f}" y1="{y - 11:.1f}" x2="{xt:.1f}" '
            f'y2="{y + 11:.1f}"><title>the claimed size: '
            f"{escape(format_percent(r.threshold, 1, signed=True))}</title></line>"
        )
        if r.ci_low is not None and r.ci_high is not None:
            a, b = px(r.ci_low * 100), px(r.ci_high * 100)
            out.append(
                f'<line class="interval" x1="{a:.1f}" y1="{y:.1f}" x2="{b:.1f}" y2="{y:.1f}"/>'
                f'<line class="interval" x1="{a:.1f}" y1="{y - 6:.1f}" x2="{a:.1f}" '
                f'y2="{y + 6:.1f}"/><line class="interval" x1="{b:.1f}" y1="{y - 6:.1f}" '
                f'x2="{b:.1f}" y2="{y + 6:.1f}"/>'
            )
        if r.change is not None:
            out.append(f'<circle class="change" cx="{px(r.change * 100):.1f}" cy="{y:.1f}" r="5"/>')
        out.append(
            f'<text class="value" x="{width - _RIGHT - right_text + 8:.1f}" y="{y + 4:.1f}">'
            f"{escape(r.text)}</text></g>"
        )
    out.append(
        f'<text class="axis-label" x="{left + plot_w / 2:.1f}" y="{bottom + 38}" '
        'text-anchor="middle">change, candidate vs baseline (%)</text>'
    )
    out.append("</svg>")
    return "\n".join(out)
