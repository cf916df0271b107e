"""The sweep part of the report view (DESIGN §5, §7): per-point tables, capacities,
dominance and the throughput–latency curves, as display decisions only.

It reads an `Analysis` and picks, orders and words what is there; it must not compute
statistics (the levels, capacities and fronts come from `analysis`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import metrics
from ..analysis import Analysis, MetricSummary
from ..metrics import format_number, format_percent

__all__ = ["CurveView", "SweepTable", "SweepView", "build", "text_plot"]

# The metrics a sweep shows per point, in order, where configs have them at several points.
SHOWN = (
    "output_throughput_tok_s",
    "request_throughput_req_s",
    "ttft_ms_p99",
    "ttft_ms_median",
    "tpot_ms_p99",
    "tpot_ms_median",
    "itl_ms_median",
    "e2e_latency_ms_median",
)


@dataclass(frozen=True, slots=True)
class SweepTable:
    """One metric: a row per config, a cell per load point ("level ± half", or "—")."""

    metric: str
    loads: list[str]
    rows: list[tuple[str, list[str]]]


@dataclass(frozen=True, slots=True)
class CurveView:
    """One config's throughput–latency curve, for the charts."""

    config: str
    marker: str
    points: list[tuple[str, float, float]]  # (load, throughput, latency)
    front: list[str]


@dataclass(frozen=True, slots=True)
class SweepView:
    tables: list[SweepTable]
    capacities: list[tuple[str, str, str]]  # (config, capacity_req_s, capacity_output_tok_s)
    slo: str  # "tpot_ms_p99 ≤ 50 ms"
    dominance: list[str]  # sentences
    unpaired: list[str]  # "flashinfer: max_concurrency=64 (output_throughput_tok_s)"
    curves: list[CurveView]
    throughput_metric: str
    latency_metric: str
    slo_latency: float | None  # the bound on the curve's latency metric, where one is set
    plot: str  # the text plot of the curves


def _cell(metric: str, s: MetricSummary | None) -> str:
    if s is None or s.mean is None:
        return "—"
    unit = metrics.get(metric).unit
    text = metrics.format_value(metric, s.mean, unit=False)
    if s.ci_low is not None and s.ci_high is not None:
        half = (s.ci_high - s.ci_low) / 2
        places = len(text.split(".", 1)[1]) if "." in text else 0
        text = f"{text} ± {format_number(half, places)}"
    return f"{text} {unit}" if unit and unit != "fraction" else text


def _capacity_text(a: Analysis, config: str, metric: str) -> str:
    cap = a.capacity.get(config, {}).get(metric)
    if cap is None:
        return "—"
    if cap.bound == "below":
        return f"below the sweep (the lowest point, {cap.towards}, fails {cap.limit})"
    if cap.bound == "unknown" or cap.mean is None:
        return "unknown (a point lacks a bounded metric)"
    unit = metrics.get(metric).unit
    text = metrics.format_value(metric, cap.mean, unit=False)
    if cap.ci_low is not None and cap.ci_high is not None:
        half = (cap.ci_high - cap.ci_low) / 2
        places = len(text.split(".", 1)[1]) if "." in text else 0
        text += f" ± {format_number(half, places)} {unit}"
    else:
        text += f" {unit} (one launch: no interval)"
    if cap.bound == "beyond":
        return f"{text}, beyond the sweep (no point fails; at least this)"
    return f"{text}, between {cap.at} and {cap.towards} ({cap.limit} reaches its bound)"


def build(a: Analysis) -> SweepView | None:
    """The sweep view, or None where no config was measured at two load points."""
    swept = {c.name for c in a.configs if len(c.points) >= 2}
    if not swept:
        return None
    tables: list[SweepTable] = []
    for metric in SHOWN:
        loads: list[str] = []
        for c in a.configs:
            for load, by in c.points.items():
                if metric in by and load not in loads:
                    loads.append(load)
        if len(loads) < 2:
            continue
        rows = [
            (c.name, [_cell(metric, c.points.get(load, {}).get(metric)) for load in loads])
            for c in a.configs
            if any(metric in by for by in c.points.values())
        ]
        tables.append(SweepTable(metric, loads, rows))
    capacities = [
        (
            c.name,
            _capacity_text(a, c.name, "capacity_req_s"),
            _capacity_text(a, c.name, "capacity_output_tok_s"),
        )
        for c in a.configs
        if c.name in a.capacity
    ]
    slo = ", ".join(
        f"{m} ≤ {metrics.format_value(m, b, unit=False)} {metrics.get(m).unit}".rstrip()
        for m, b in a.slo.items()
    )
    dominance = [
        f"{d.better} dominates {d.worse}: at least its output throughput at no more latency at "
        f"every one of the {len(d.points)} load points both have ({'; '.join(d.points)})"
        for d in a.dominance
    ]
    if not dominance and len(a.pareto) > 1:
        dominance = ["No config dominates another at every load point both have."]
    alone: dict[tuple[str, str], list[str]] = {}
    for u in a.unpaired:
        if u.load:
            alone.setdefault((u.config, u.load), []).append(u.metric)
    unpaired = [f"{c}: {load} ({', '.join(ms)})" for (c, load), ms in alone.items()]
    markers = "ABCDEFGHJKLMNPQRSTUVWXYZ"
    curves = [
        CurveView(
            config=p.config,
            marker=markers[i % len(markers)],
            points=[(q.load, q.throughput, q.latency) for q in p.points],
            front=list(p.front),
        )
        for i, p in enumerate(a.pareto)
    ]
    t_metric = a.pareto[0].throughput_metric if a.pareto else "output_throughput_tok_s"
    l_metric = a.pareto[0].latency_metric if a.pareto else "tpot_ms_median"
    bound = a.slo.get(l_metric)
    return SweepView(
        tables=tables,
        capacities=capacities,
        slo=slo,
        dominance=dominance,
        unpaired=unpaired,
        curves=curves,
        throughput_metric=t_metric,
        latency_metric=l_metric,
        slo_latency=bound,
        plot=text_plot(curves, t_metric, l_metric, bound) if curves else "",
    )


_PLOT_W = 60
_PLOT_H = 14


def text_plot(
    curves: list[CurveView], x_metric: str, y_metric: str, bound: float | None = None
) -> str:
    """A fixed-width scatter of throughput (x) against latency (y), a letter per config, the
    axes spanning the data (not 0 by habit); a latency bound drawn as a row of dots."""
    xs = [x for c in curves for _, x, _ in c.points]
    ys = [y for c in curves for _, _, y in c.points] + ([bound] if bound is not None else [])
    if not xs or not all(math.isfinite(v) for v in xs + ys):
        return ""
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    x1 = x1 if x1 > x0 else x0 + 1
    y1 = y1 if y1 > y0 else y0 + 1
    grid = [[" "] * _PLOT_W for _ in range(_PLOT_H)]

    def col(x: float) -> int:
        return round((x - x0) / (x1 - x0) * (_PLOT_W - 1))

    def row(y: float) -> int:
        return _PLOT_H - 1 - round((y - y0) / (y1 - y0) * (_PLOT_H - 1))

    if bound is not None:
        r = row(bound)
        grid[r] = ["·"] * _PLOT_W
    for c in curves:
        for _, x, y in c.points:
            cell = grid[row(y)][col(x)]
            grid[row(y)][col(x)] = c.marker if cell in (" ", "·", c.marker) else "*"
    y_unit, x_unit = metrics.get(y_metric).unit, metrics.get(x_metric).unit
    top = metrics.format_value(y_metric, y1, unit=False)
    bottom = metrics.format_value(y_metric, y0, unit=False)
    width = max(len(top), len(bottom))
    lines = []
    for i, cells in enumerate(grid):
        label = top if i == 0 else bottom if i == _PLOT_H - 1 else ""
        lines.append(f"{label:>{width}} |{''.join(cells).rstrip()}")
    lines.append(" " * width + " +" + "-" * _PLOT_W)
    left = metrics.format_value(x_metric, x0, unit=False)
    right = metrics.format_value(x_metric, x1, unit=False)
    lines.append(" " * (width + 2) + left + " " * max(1, _PLOT_W - len(left) - len(right)) + right)
    lines.append(f"x: {x_metric} ({x_unit}); y: {y_metric} ({y_unit})")
    legend = "; ".join(f"{c.marker} = {c.config}" for c in curves)
    lines.append(
        legend + ("; * = several; ··· = the SLO bound" if bound is not None else "; * = several")
    )
    return "\n".join(lines)


def change_text(change: float | None) -> str:
    return "—" if change is None else format_percent(change, 1, signed=True)
