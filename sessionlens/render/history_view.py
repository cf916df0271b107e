"""The history view: every display decision of the Markdown and HTML history (DESIGN §10).

Owns rounding, wording, row order, which rows of a long series a table shows, the fixed-width
trend plot, and the numbered notes. It must not compute statistics: it reads a `History` and
picks, orders and words what is there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import metrics
from ..history import History, HistoryChangePoint, HistorySeries
from ..metrics import format_percent
from .view import fmt, level_text

# A series' table shows every session up to this many; beyond, its first session, its change
# points and the last TAIL sessions (the JSON keeps every one).
ROWS_ALL = 60
TAIL = 30
# The text plot: rows of the level axis, and at most this many columns of sessions.
PLOT_ROWS = 8
PLOT_COLUMNS = 96

VERDICT_WORDS = {
    "regression": "regression",
    "improvement": "improvement",
    "no-change": "no change shown",
}
DATE_FROM = {"logs": "its logs", "commit": "its report's commit", "folder": "none (folder name)"}


@dataclass(frozen=True, slots=True)
class PointRow:
    number: int  # 1-based position in the series
    session: str
    date: str
    level: str
    interval: str
    launches: int
    regime: str  # what starts or is judged here ("" elsewhere)
    gap: bool = False  # an ellipsis row: `session` says how many are not shown


@dataclass(frozen=True, slots=True)
class ChangePointRow:
    session: str
    date: str
    before: str
    after: str
    change: str
    interval: str
    above_noise: str
    p_value: str
    sessions: str


@dataclass(frozen=True, slots=True)
class LatestRow:
    series: str
    anchor: str
    session: str
    verdict: str  # the verdict id (a CSS class too)
    words: str
    change: str
    interval: str
    against: str
    sentence: str


@dataclass(frozen=True, slots=True)
class SeriesView:
    title: str
    anchor: str
    config: str
    metric: str
    load: str | None
    unit: str
    direction: str
    rows: list[PointRow]
    change_points: list[ChangePointRow]
    latest: LatestRow | None
    noise: str
    plot: str
    # for the SVG chart
    levels: list[float]
    lows: list[float | None]
    highs: list[float | None]
    sessions: list[str]
    dates: list[str]
    cuts: list[int]
    newest_verdict: str | None
    regimes: list[tuple[int, int, float]]  # (first, end, mean) of each regime before the newest


@dataclass(frozen=True, slots=True)
class SessionRow:
    session: str
    date: str
    date_from: str
    report: str
    notes: str


@dataclass(frozen=True, slots=True)
class NoteView:
    number: int
    where: str
    level: str
    code: str
    text: str


@dataclass
class HistoryView:
    title: str
    summary: str
    method: str
    rule: str
    level: str
    latest: list[LatestRow]
    series: list[SeriesView]
    sessions: list[SessionRow]
    notes: list[NoteView] = field(default_factory=list)


def _date(text: str | None) -> str:
    """A date as the tables show it: `2026-03-10 02:00` (no seconds), `—` without one."""
    if not text:
        return "—"
    return text.replace("T", " ")[:16]


def _pct(x: float | None) -> str:
    return format_percent(x, 1, signed=True) if x is not None else "—"


def _interval(lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None:
        return "—"
    return f"{_pct(lo)} to {_pct(hi)}"


def _level_interval(metric: str, lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None:
        return "—"
    return f"{fmt(metric, lo, unit=False)} to {fmt(metric, hi)}"


def _anchor(s: HistorySeries) -> str:
    text = f"{s.config}-{s.metric}" + (f"-{s.load}" if s.load else "")
    out = "".join(c if c.isalnum() else "-" for c in text.lower())
    return "-".join(p for p in out.split("-") if p)


def series_title(s: HistorySeries) -> str:
    """`eagle3 · throughput_tok_s` (`… at max_concurrency=16` for a load point)."""
    return f"{s.config} · {s.metric}" + (f" at {s.load}" if s.load else "")


def _direction(s: HistorySeries) -> str:
    unit = f"{s.unit}, " if s.unit and s.unit != "fraction" else ""
    if s.better == "higher":
        return f"{unit}higher is better"
    if s.better == "lower":
        return f"{unit}lower is better"
    return f"{unit}direction unknown: judged as higher is better"


def _shift_words(cp: HistoryChangePoint) -> str:
    if cp.change is None:
        return "a new regime starts"
    text = f"a new regime starts: {_pct(cp.change)}"
    if cp.ci_low is not None and cp.ci_high is not None:
        text += f" ({_interval(cp.ci_low, cp.ci_high)})"
    return text


def _latest(s: HistorySeries, level: str) -> LatestRow | None:
    lt = s.latest
    if lt is None:
        return None
    newest = s.points[-1]
    k = lt.sessions
    against = f"{k} session{'s' if k != 1 else ''} since {lt.since}"
    words = VERDICT_WORDS[lt.verdict]
    delta = format_percent(lt.min_effect, 1)
    level_of = fmt(s.metric, newest.level)
    if lt.change is None:
        how = "its change cannot be told"
    else:
        size = format_percent(abs(lt.change), 1)
        side = "above" if lt.change >= 0 else "below"
        how = f"{size} {side} the mean of the {against}"
    if lt.ci_low is None or lt.ci_high is None:
        why = "too few sessions in its regimes to measure the session-to-session noise"
    elif lt.verdict == "regression":
        why = f"the whole interval is worse by more than δ = {delta}"
    elif lt.verdict == "improvement":
        why = f"the whole interval is better by more than δ = {delta}"
    else:
        why = f"the interval reaches within δ = {delta} of no change"
    sentence = (
        f"{level_of} on {lt.session}, {how} ({level} prediction interval "
        f"{_interval(lt.ci_low, lt.ci_high)}): {why}"
    )
    return LatestRow(
        series=series_title(s),
        anchor=_anchor(s),
        session=lt.session,
        verdict=lt.verdict,
        words=words,
        change=_pct(lt.change),
        interval=_interval(lt.ci_low, lt.ci_high),
        against=against,
        sentence=sentence,
    )


def _rows(s: HistorySeries) -> list[PointRow]:
    starts = {cp.index: cp for cp in s.change_points}
    n = len(s.points)
    shown = set(range(n))
    if n > ROWS_ALL:
        shown = {0, *starts, *range(n - TAIL, n)}
    rows: list[PointRow] = []
    last = -1
    for i, p in enumerate(s.points):
        if i not in shown:
            continue
        if i > last + 1:
            hidden = i - last - 1
            rows.append(
                PointRow(
                    0,
                    f"… {hidden} session{'s' if hidden != 1 else ''}",
                    "",
                    "",
                    "",
                    0,
                    "",
                    gap=True,
                )
            )
        regime = ""
        if i in starts:
            regime = _shift_words(starts[i])
        if i == n - 1 and s.latest is not None:
            regime = (
                regime + "; " if regime else ""
            ) + f"newest: {VERDICT_WORDS[s.latest.verdict]}"
        rows.append(
            PointRow(
                number=i + 1,
                session=p.session,
                date=_date(p.date),
                level=fmt(s.metric, p.level),
                interval=_level_interval(s.metric, p.ci_low, p.ci_high),
                launches=p.launches,
                regime=regime,
            )
        )
        last = i
    return rows


def _noise(s: HistorySeries) -> str:
    n = s.noise
    if n is None:
        return ""
    if n.source == "measured":
        k = n.sessions
        how = f"measured, pooled over {k} session{'s' if k != 1 else ''}' reports"
    elif n.source == "given":
        how = "given in the sessions' manifests"
    else:
        how = "assumed: no session's report measured it"
    text = f"Launch noise {format_percent(n.launch_cv, 1)} ({how}): the floor a shift must clear"
    if n.session_cv is not None:
        text += (
            f"; session-to-session noise within regimes {format_percent(n.session_cv, 1)} "
            f"({n.session_df} degrees of freedom), which the intervals use"
        )
    return text + "."


def trend_text(s: HistorySeries) -> str:
    """The series as a fixed-width plot: a column per session (several per column beyond
    PLOT_COLUMNS), `┆` where a change point starts a regime, the newest point `▼` for a
    regression, `▲` for an improvement, else `●`."""
    values = [p.level for p in s.points]
    n = len(values)
    per = max(1, math.ceil(n / PLOT_COLUMNS))
    cols = math.ceil(n / per)
    width = 3 if cols <= 32 else 1
    lo, hi = min(values), max(values)
    span = hi - lo or abs(hi) * 0.01 or 1.0
    lo, hi = lo - span * 0.08, hi + span * 0.08
    grid = [[" "] * (cols * width) for _ in range(PLOT_ROWS)]

    def row(v: float) -> int:
        at = round((hi - v) / (hi - lo) * (PLOT_ROWS - 1))
        return max(0, min(PLOT_ROWS - 1, at))

    def col(i: int) -> int:
        return (i // per) * width + (width // 2)

    for cp in s.change_points:
        c = (cp.index // per) * width
        for r in range(PLOT_ROWS):
            grid[r][c] = "┆"
    newest = {"regression": "▼", "improvement": "▲"}.get(s.latest.verdict if s.latest else "", "●")
    for i, v in enumerate(values):
        grid[row(v)][col(i)] = newest if i == n - 1 else "●"
    labels = {0: fmt(s.metric, hi, unit=False), PLOT_ROWS - 1: fmt(s.metric, lo, unit=False)}
    labels[PLOT_ROWS // 2] = fmt(s.metric, (hi + lo) / 2, unit=False)
    pad = max(len(t) for t in labels.values())
    lines = [
        f"{labels.get(r, ''):>{pad}} {'┤' if r in labels else '│'}{''.join(grid[r]).rstrip()}"
        for r in range(PLOT_ROWS)
    ]
    axis = "".join("┬" if i % width == width // 2 else "─" for i in range(cols * width))
    lines.append(" " * pad + " └" + axis)
    first, last = s.points[0], s.points[-1]
    left = _date(first.date)[:10] if first.date else "1"
    right = _date(last.date)[:10] if last.date else str(n)
    room = max(1, cols * width - len(left) - len(right))
    lines.append(" " * (pad + 2) + left + " " * room + right)
    unit = f" ({s.unit})" if s.unit and s.unit != "fraction" else ""
    each = "a session" if per == 1 else f"{per} sessions a column"
    lines.append(
        f"● level of {s.metric}{unit}, {each}, by date; ┆ a change point (a new regime starts); "
        "▼/▲ the newest session, a regression/an improvement"
    )
    return "\n".join(lines)


def _series(s: HistorySeries, level: str) -> SeriesView:
    return SeriesView(
        title=series_title(s),
        anchor=_anchor(s),
        config=s.config,
        metric=s.metric,
        load=s.load,
        unit=s.unit,
        direction=_direction(s),
        rows=_rows(s),
        change_points=[
            ChangePointRow(
                session=cp.session,
                date=_date(cp.date),
                before=fmt(s.metric, cp.before),
                after=fmt(s.metric, cp.after),
                change=_pct(cp.change),
                interval=_interval(cp.ci_low, cp.ci_high),
                above_noise={True: "yes", False: "no", None: "—"}[cp.above_noise],
                p_value=f"{cp.p_value:.3f}" if cp.p_value is not None else "—",
                sessions=f"{cp.sessions_before} → {cp.sessions_after}",
            )
            for cp in s.change_points
        ],
        latest=_latest(s, level),
        noise=_noise(s),
        plot=trend_text(s),
        levels=[p.level for p in s.points],
        lows=[p.ci_low for p in s.points],
        highs=[p.ci_high for p in s.points],
        sessions=[p.session for p in s.points],
        dates=[_date(p.date) for p in s.points],
        cuts=[cp.index for cp in s.change_points],
        newest_verdict=s.latest.verdict if s.latest else None,
        regimes=_regimes(s),
    )


def _regimes(s: HistorySeries) -> list[tuple[int, int, float]]:
    """The regimes the change points bound, with the means they report (the newest session
    is judged against the last one, so it ends before it)."""
    out: list[tuple[int, int, float]] = []
    start = 0
    for cp in s.change_points:
        if cp.before is not None:
            out.append((start, cp.index, cp.before))
        start = cp.index
    last = s.change_points[-1] if s.change_points else None
    if last is not None and last.after is not None:
        out.append((start, len(s.points) - 1, last.after))
    return out


_ORDER = {"regression": 0, "improvement": 1, "no-change": 2}


def build(h: History) -> HistoryView:
    """The view of a history."""
    level = level_text(h.alpha)
    series = [_series(s, level) for s in h.series]
    latest = sorted(
        (v.latest for v in series if v.latest is not None), key=lambda r: _ORDER[r.verdict]
    )
    notes = [
        NoteView(i, d.file, d.level, d.code, d.message) for i, d in enumerate(h.diagnostics, 1)
    ]

    def refs(session: str) -> str:
        found = [n.number for n in notes if n.where == session or n.where.startswith(session + "/")]
        return " ".join(f"[{k}]" for k in found)

    dated = [s.date for s in h.sessions if s.date]
    n = len(h.sessions)
    span = f", {_date(min(dated))[:10]} to {_date(max(dated))[:10]}" if dated else ""
    counts = {k: sum(1 for r in latest if r.verdict == k) for k in _ORDER}
    said = [
        f"{counts[k]} {VERDICT_WORDS[k]}{'s' if counts[k] != 1 and k != 'no-change' else ''}"
        for k in _ORDER
        if counts[k]
    ]
    summary = (
        f"{n} session{'s' if n != 1 else ''}{span}; {len(series)} "
        f"series{' (' + ', '.join(said) + ' in the newest session)' if said else ''}."
    )
    m = h.method
    method = (
        f"Change points: e-divisive means (Matteson & James 2014, α = 1), each split kept when "
        f"its permutation test ({m.permutations} permutations, seeded) gives p ≤ {m.alpha:g}; "
        f"a regime is at least {m.min_size} sessions; series longer than {m.window} sessions "
        "are read in overlapping windows (as Hunter/Otava read long histories). A shift's "
        "interval is Fieller's on the two regimes' means, with the session-to-session noise "
        "pooled within regimes."
    )
    delta = format_percent(h.min_effect, 1)
    rule = (
        "The newest session of each series is judged against the sessions since the last "
        f"change point before it, with the {level} prediction interval of its change (one "
        "session carries the session-to-session noise), signed so that better is positive: "
        f"**regression** when the whole interval is below −{delta}, **improvement** when it is "
        f"above +{delta}, else **no change shown** (δ = {delta}, from sessionlens-history.toml "
        "or the default)."
    )
    sessions = [
        SessionRow(
            session=s.session,
            date=_date(s.date),
            date_from=DATE_FROM[s.date_from] if s.analysed else "not analysed",
            report=s.report or "none",
            notes=refs(s.session),
        )
        for s in h.sessions
    ]
    return HistoryView(
        title=f"History: {h.results}",
        summary=summary,
        method=method,
        rule=rule,
        level=level,
        latest=latest,
        series=series,
        sessions=sessions,
        notes=notes,
    )


def unit_of(metric: str) -> str:
    """The unit a metric's levels are in (for chart axes)."""
    return metrics.get(metric).unit
