"""The report view: every display decision of the Markdown and HTML reports, in one place.

Owns rounding (never more digits than the data carry), units, row order, the wording of
caveats, the numbers of the data-quality notes that tables point to, the header facts, and
`md`, the Markdown escape for text from logs. It must not compute statistics: it reads an
`Analysis` and only picks, orders and words what is there.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import analysis as _analysis
from .. import diagnostics as dg
from .. import metrics
from ..analysis import HEADLINE, Analysis, EconomicsResult, HypothesisResult
from ..metrics import format_number, format_percent
from . import sweep_view

# ---------------------------------------------------------------- escaping

# Characters with a meaning in (GitHub-flavoured) Markdown inline text or table rows. A
# backslash escape works for every ASCII punctuation character (CommonMark §2.4), so one rule
# covers them all; `$` is GitHub's math delimiter and `~` its strikethrough.
_MD_SPECIAL = frozenset("\\`*[]<>|&~$")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def md(value: object) -> str:
    """Text from a log made inert in a Markdown line or table cell.

    Newlines and other control characters become spaces (a table row is one line); Markdown
    punctuation is backslash-escaped. `_` is left alone between two letters or digits, where
    CommonMark never reads it as emphasis, so `speculative_num_steps` stays readable.
    """
    text = _CONTROL.sub(" ", str(value))
    out: list[str] = []
    for i, ch in enumerate(text):
        if ch in _MD_SPECIAL:
            out.append("\\" + ch)
        elif ch == "_":
            before = text[i - 1] if i > 0 else ""
            after = text[i + 1] if i + 1 < len(text) else ""
            out.append("_" if before.isalnum() and after.isalnum() else "\\_")
        else:
            out.append(ch)
    return "".join(out)


def mermaid_text(value: object) -> str:
    """A label for a quoted Mermaid string: no quotes, markup, entities or line breaks."""
    text = _CONTROL.sub(" ", str(value))
    # Mermaid reads `#…;` as an entity, backticks as Markdown strings and `<…>` as HTML.
    for bad, good in (('"', "'"), ("`", "'"), ("<", "‹"), (">", "›"), ("#", "＃"), (";", ",")):
        text = text.replace(bad, good)
    return text


def header_json(facts: dict[str, Any]) -> str:
    """Compact JSON for the `<!-- sessionlens: … -->` line that cannot close the comment.

    `<`, `>` and `&` only occur inside JSON strings, where `\\u003c` … parse back to the same
    text, so a `-->` in a hypothesis or path cannot end the comment early.
    """
    text = json.dumps(facts, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# ---------------------------------------------------------------- numbers

_COUNT_UNITS = frozenset({"tokens", "req"})


def _places(text: str) -> int:
    return len(text.split(".", 1)[1]) if "." in text else 0


def data_places(values: Iterable[float | None]) -> int | None:
    """Decimals the values carry as printed (shortest repr), or None without a finite value."""
    found: int | None = None
    for v in values:
        if v is None or not math.isfinite(v):
            continue
        text = repr(float(v))
        if "e" in text:
            places = 6  # tiny or huge: trust the unit's own rounding
        else:
            places = _places(text)
            if text.endswith(".0"):
                places = 0
        found = places if found is None else max(found, places)
    return found


def fmt(metric: str, value: float | None, carry: int | None = None, unit: bool = True) -> str:
    """A metric value rounded for reading, with its unit.

    The unit's usual rounding (`metrics.format_value`), but never more decimals than the data
    carry (`carry`): a mean of whole token counts is shown whole. Whole-looking values of a
    continuous unit (82.0 tok/s read back from `82.0`) do not cap, since a float cannot tell
    `82.0` from `82`.
    """
    if value is None:
        return "—"
    m = metrics.get(metric)
    if m.unit == "fraction":
        return format_percent(value)
    text = metrics.format_value(metric, value, unit=False)
    if carry is not None and math.isfinite(value):
        capped = carry if carry > 0 or m.unit in _COUNT_UNITS else None
        if capped is not None and capped < _places(text):
            text = format_number(value, capped)
    if unit and m.unit and math.isfinite(value):
        return f"{text} {m.unit}"
    return text


def pct_places(*values: float | None) -> int:
    """1 decimal for percentages, 2 when every value is below 1 % (so they do not read 0.0)."""
    finite = [abs(v) for v in values if v is not None and math.isfinite(v)]
    return 2 if finite and max(finite) < 0.01 and any(finite) else 1


def fmt_p(p: float | None) -> str:
    """A p-value: two decimals, two significant digits below 0.01, `<0.001` below that."""
    if p is None:
        return "—"
    if not math.isfinite(p):
        return format_number(p, 0)
    if p < 0.001:
        return "<0.001"
    return f"{p:.2f}" if p >= 0.01 else f"{p:.2g}"


def fmt_setting(value: Any) -> str:
    """A setting value as text: strings as they are, everything else as JSON."""
    if value is None:
        return "unset"
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def level_text(alpha: float) -> str:
    """The confidence level of intervals at `alpha`: `95 %`."""
    return f"{round((1 - alpha) * 100, 2):g} %"


def refs_text(numbers: Iterable[int]) -> str:
    """Pointers to notes: `[2] [4]`, runs of three or more as `[5]–[9]`."""
    nums = sorted(set(numbers))
    parts: list[str] = []
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"[{nums[i]}]–[{nums[j]}]")
        else:
            parts.extend(f"[{n}]" for n in nums[i : j + 1])
        i = j + 1
    return " ".join(parts)


# ---------------------------------------------------------------- view records


@dataclass(frozen=True, slots=True)
class Note:
    """One numbered data-quality note; `where`, `text` may hold log text (escape them)."""

    number: int
    where: str
    level: str
    code: str
    text: str


@dataclass(frozen=True, slots=True)
class ConfoundView:
    setting: str
    baseline: str
    candidate: str


@dataclass(frozen=True, slots=True)
class HypothesisView:
    id: str
    verdict: str
    claim: str
    baseline: str
    candidate: str
    metric: str
    claimed: str  # "increase ≥ 35.0 %"
    mean_baseline: str
    mean_candidate: str
    change: str
    ci: str  # "-12.0 % to +10.0 %", or "—"
    p_welch: str
    p_mannwhitney: str
    p_holm: str
    hedges_g: str
    n_baseline: int
    n_candidate: int
    without_outliers: str | None  # None: nothing flagged
    runs_needed: str | None  # None: not inconclusive
    confounds: list[ConfoundView]
    reason: str
    refs: str
    sides: str  # "eagle3-decode (5 values, 1 launch) against eagle3-prefill (5 values, 1 launch)"
    tests_on: str  # "samples" or "launch means"
    decided: str  # "at the 98.3 % level (Holm's step-down over 3 claims)"
    noise: str  # "2.0 % (assumed: no config was launched twice)"
    points: list[tuple[str, str, str, str]]  # per load point: load, verdict, change, CI


@dataclass(frozen=True, slots=True)
class ConfigRow:
    name: str
    label: str
    sources: str
    n: int
    launches: int
    mean_ci: str
    median: str
    cv: str
    refs: str


@dataclass(frozen=True, slots=True)
class SettingRow:
    key: str
    values: list[str]  # one per config, in `ReportView.config_names` order


@dataclass(frozen=True, slots=True)
class ComparisonRow:
    metric: str
    load: str  # the load point compared ("" outside sweeps)
    candidate: str
    n: str
    mean_baseline: str
    mean_candidate: str
    change: str
    ci: str
    p_welch: str
    p_mannwhitney: str
    p_holm: str
    hedges_g: str
    refs: str


@dataclass(frozen=True, slots=True)
class NoiseView:
    """One metric's launch noise (DESIGN §5 "What the report says about noise")."""

    metric: str
    launch_cv: str
    source: str  # where it comes from, in words
    within_cv: str
    smallest: str  # the smallest effect the session could resolve (80 % power)
    assumed: bool


@dataclass(frozen=True, slots=True)
class EconomicsView:
    config: str
    estimate: bool
    cycle: str | None
    cycle_source: str
    accept_len: str | None
    steps: int | None
    max_len: str | None  # k + 1
    measured: str | None
    ceiling: str | None
    efficiency: str | None
    baseline_config: str | None
    baseline_tok_s: str | None
    break_even: str | None
    pays: str | None
    target_tok_s: str | None
    target_accept_len: str | None
    reachable: bool | None
    p_needed_chain: str | None
    p_needed_unbounded: str | None
    p_current_chain: str | None
    p_current_unbounded: str | None
    refs: str


@dataclass(frozen=True, slots=True)
class Series:
    """One config's values of the headline metric, for the charts."""

    config: str
    values: list[float]
    outliers: list[bool]
    where: list[str]  # "source:line", per value
    median: float | None
    median_text: str
    level: float | None = None  # the config's level (mean of launch means) and its interval
    ci_low: float | None = None
    ci_high: float | None = None
    level_text: str = "—"


@dataclass(frozen=True, slots=True)
class DecisionRow:
    """One claim (or one load point of it) in the decision chart: r and its interval as
    measured, and the claim's threshold on the same axis (+δ for an increase, −δ for a
    decrease)."""

    label: str
    verdict: str
    change: float | None
    ci_low: float | None
    ci_high: float | None
    threshold: float
    text: str  # "-1.2 % (-12.1 % to +10.0 %)"
    sub: bool = False  # one load point of the claim above


@dataclass(frozen=True, slots=True)
class ChartView:
    metric: str
    unit: str
    title: str
    series: list[Series]
    y_min: str  # Mermaid axis range, plain numbers
    y_max: str
    places: int


@dataclass(frozen=True, slots=True)
class RunView:
    load: str
    config: str
    source: str
    line: int
    run: str
    value: str
    outlier: bool
    refs: str


@dataclass(frozen=True, slots=True)
class OmittedRunsView:
    """A config whose values are too many to list one per row."""

    config: str
    count: str  # its number of values, formatted


@dataclass(frozen=True, slots=True)
class SourceView:
    path: str
    config: str
    format: str
    lines: int
    samples: int
    sha256: str
    refs: str


@dataclass(frozen=True, slots=True)
class ReportView:
    """Everything a renderer lays out; text fields from logs still need `md` (or HTML escape)."""

    title: str
    header: dict[str, Any]
    header_json: str
    level: str
    baseline: str | None
    headline: str | None
    headline_unit: str
    config_names: list[str]
    hypotheses: list[HypothesisView]
    decision: list[DecisionRow]
    decision_text: str  # the decision chart in fixed width (Markdown)
    opening: list[str]  # without claims: the largest comparisons, as the first lines
    configs: list[ConfigRow]
    settings: list[SettingRow]  # recorded by every config
    settings_partial: list[SettingRow]  # recorded by some configs only ("—" elsewhere)
    comparisons: list[ComparisonRow]
    has_holm: bool
    has_loads: bool  # comparisons or runs at load points: a Load column
    sweep: sweep_view.SweepView | None
    noise: list[NoiseView]
    economics: list[EconomicsView]
    chart: ChartView | None
    runs: list[RunView]
    runs_omitted: list[OmittedRunsView]
    runs_listed: str  # the most values a config may have to be listed, formatted
    notes: list[Note]
    sources: list[SourceView]
    analysis: Analysis = field(repr=False)


# ---------------------------------------------------------------- notes


_MAX_PLACES = 5  # places named in a grouped info note before "and N more"
_TRUNCATION = ("truncated-output", "truncated-value", "truncated-settings")


class _Notes:
    """Numbered notes in the order they are added; the same key always gets the same number."""

    def __init__(self) -> None:
        self.items: list[Note] = []
        self._by_key: dict[tuple[Any, ...], int] = {}
        self.by_file: dict[str, list[int]] = {}

    def add(self, key: tuple[Any, ...], where: str, level: str, code: str, text: str) -> int:
        found = self._by_key.get(key)
        if found is not None:
            return found
        number = len(self.items) + 1
        self.items.append(Note(number, where, level, code, text))
        self._by_key[key] = number
        return number

    def alias(self, key: tuple[Any, ...], number: int) -> None:
        self._by_key[key] = number

    def ref(self, *keys: tuple[Any, ...]) -> list[int]:
        return [self._by_key[k] for k in keys if k in self._by_key]

    def file(self, *names: str) -> list[int]:
        return [n for name in names for n in self.by_file.get(name, [])]


def _where(d: dg.Diagnostic) -> str:
    return d.file if d.line is None else f"{d.file}:{d.line}"


def _note_places(members: list[tuple[int, dg.Diagnostic]]) -> str:
    """Where the diagnostics of a grouped note are: the first few, and how many more."""
    shown_at = [_where(d) for _, d in members[:_MAX_PLACES]]
    more = len(members) - len(shown_at)
    return ", ".join(shown_at) + (f" and {more} more" if more else "")


def _meaning(code: str) -> str:
    return dg.CODES[code][1] if code in dg.CODES else code.replace("-", " ")


def _build_notes(a: Analysis, shown: list[str], carry: dict[str, int | None]) -> _Notes:
    """The data-quality notes, in DESIGN §7's order of concern."""
    notes = _Notes()
    diags = list(enumerate(a.diagnostics))

    def add_diag(i: int, d: dg.Diagnostic, prefix: str = "") -> None:
        n = notes.add(("diag", i), _where(d), d.level, d.code, prefix + d.message)
        notes.by_file.setdefault(d.file, []).append(n)

    # 1. truncation: a recomputed summary is recovered; a cut value is lost (no sample)
    for i, d in diags:
        if d.code in _TRUNCATION:
            add_diag(i, d, "truncation recovered: " if d.code == "truncated-output" else "")
            if d.code == "truncated-output":
                _which_figure(notes, i, d, a, shown, carry)
    # 2. outliers, per config and shown metric
    for c in a.configs:
        for m in shown:
            s = c.metrics.get(m)
            if s is None or not s.outliers:
                continue
            what = "; ".join(
                f"{fmt(m, o.value, carry.get(m))} ({o.source}:{o.line})" for o in s.outliers
            )
            many = len(s.outliers) > 1
            notes.add(
                ("outlier", c.name, m),
                f"{c.name}, {m}",
                "info",
                "outlier",
                f"{what} {'are' if many else 'is'} flagged as "
                f"{'outliers' if many else 'an outlier'} (|0.6745·(x − median)/MAD| > 3.5); "
                f"{'they stay' if many else 'it stays'} in every statistic",
            )
    # 3. confounds; 4. few samples; 5. assumed launch noise
    for i, d in diags:
        if d.code == "confound":
            add_diag(i, d)
    for i, d in diags:
        if d.code == "few-samples":
            add_diag(i, d)
    _stat_notes(notes, a, shown, only="few-samples")
    for i, d in diags:
        if d.code == "assumed-launch-noise":
            add_diag(i, d)
    # 6. other statistical caveats (data, not diagnostics)
    _stat_notes(notes, a, shown, only=None)
    # 7. every other warning and error; 8. info diagnostics grouped by code
    handled = {*_TRUNCATION, "confound", "few-samples", "assumed-launch-noise"}
    # the same warning or error of one file again and again (an error storm: a NaN check
    # or a watchdog every batch) is one note that counts them, at its first place
    repeats: dict[tuple[str, str, str, str], list[tuple[int, dg.Diagnostic]]] = {}
    for i, d in diags:
        if d.level != "info" and d.code not in handled:
            repeats.setdefault((d.file, d.level, d.code, d.message), []).append((i, d))
    for i, d in diags:
        if d.level == "info" or d.code in handled:
            continue
        members = repeats[(d.file, d.level, d.code, d.message)]
        if len(members) == 1:
            add_diag(i, d)
        elif members[0][0] == i:
            text = f"{len(members)} times: {d.message}"
            n = notes.add(("repeat", i), _note_places(members), d.level, d.code, text)
            for j, _ in members:
                notes.alias(("diag", j), n)
            notes.by_file.setdefault(d.file, []).append(n)
    groups: dict[str, list[tuple[int, dg.Diagnostic]]] = {}
    for i, d in diags:
        if d.level == "info" and d.code not in handled:
            groups.setdefault(d.code, []).append((i, d))
    for code, members in groups.items():
        if len(members) == 1:
            add_diag(*members[0])
            continue
        # One note per code: where (the first few places), how often, and the message.
        places = _note_places(members)
        messages = {d.message for _, d in members}
        first = members[0][1].message
        text = (
            f"{len(members)} times: {first}"
            if len(messages) == 1
            else (f"{len(members)} times, e.g. {first}")
        )
        n = notes.add(("info", code), places, "info", code, text)
        for i, d in members:
            notes.alias(("diag", i), n)
            if n not in notes.by_file.get(d.file, []):
                notes.by_file.setdefault(d.file, []).append(n)
    return notes


def _which_figure(
    notes: _Notes,
    i: int,
    d: dg.Diagnostic,
    a: Analysis,
    shown: list[str],
    carry: dict[str, int | None],
) -> None:
    """A recomputed overall figure is not the statistics' one: say which the report uses
    (one figure per config), where the config's headline level is known."""
    config = next((s.config for s in a.sources if s.path == d.file), None)
    c = next((c for c in a.configs if c.name == config), None)
    metric = shown[0] if shown else None
    s = c.metrics.get(metric) if c is not None and metric is not None else None
    if s is None or s.mean is None or metric is None:
        return
    n = notes.ref(("diag", i))[0]
    note = notes.items[n - 1]
    text = (
        f"{note.text}; it is not the figure the report uses: the statistics take the runs "
        f"themselves, whose level is {fmt(metric, s.mean, carry.get(metric))}"
    )
    notes.items[n - 1] = Note(note.number, note.where, note.level, note.code, text)


def _stat_notes(notes: _Notes, a: Analysis, shown: list[str], only: str | None) -> None:
    """Warnings that stats/verdict/specmath attach to results (codes, worded here)."""
    # outliers have their own notes with the values, assumed noise its diagnostic's note
    skip = {"outlier", "assumed-launch-noise"}

    def wanted(code: str) -> bool:
        return code not in skip and (code == only if only is not None else code != "few-samples")

    for c in a.configs:
        for m in shown:
            s = c.metrics.get(m)
            for code in s.warnings if s is not None else []:
                if wanted(code):
                    notes.add(
                        ("summary", c.name, m, code),
                        f"{c.name}, {m}",
                        "warning",
                        code,
                        f"{_meaning(code)} ({s.n} values)" if s is not None else _meaning(code),
                    )
    for cmp in a.comparisons:
        for code in cmp.warnings:
            if wanted(code):
                notes.add(
                    ("cmp", cmp.baseline, cmp.candidate, cmp.metric, code),
                    f"{cmp.candidate} vs {cmp.baseline}, {cmp.metric}",
                    "warning",
                    code,
                    f"{_meaning(code)} ({cmp.n_candidate} vs {cmp.n_baseline} values)",
                )
    for h in a.hypotheses:
        for code in h.warnings:
            # few-samples of a hypothesis is already a diagnostic of the analysis
            if wanted(code) and code != "few-samples":
                notes.add(("hyp", h.id, code), h.id, "warning", code, _meaning(code))
    for e in a.economics:
        for code in e.warnings:
            if wanted(code):
                notes.add(("econ", e.config, code), e.config, "warning", code, _meaning(code))


# ---------------------------------------------------------------- build


def _headline(a: Analysis) -> str | None:
    if a.runs:
        return a.runs[0].metric
    for m in HEADLINE:
        if any(m in c.metrics for c in a.configs):
            return m
    return a.hypotheses[0].metric if a.hypotheses else None


def _carry(a: Analysis) -> dict[str, int | None]:
    """Decimals each metric's data carry: its runs, minima and maxima as read."""
    seen: dict[str, list[float | None]] = {}
    for c in a.configs:
        for m, s in c.metrics.items():
            seen.setdefault(m, []).extend([s.min, s.max])
    for r in a.runs:
        seen.setdefault(r.metric, []).append(r.value)
    return {m: data_places(vals) for m, vals in seen.items()}


def _interval(lo: float | None, hi: float | None, places: int) -> str:
    if lo is None or hi is None:
        return "—"
    return f"{format_percent(lo, places, signed=True)} to {format_percent(hi, places, signed=True)}"


def _holm_for(a: Analysis, metric: str, x: str, y: str) -> HypothesisResult | None:
    # Welch's two-sided p does not depend on which side is the baseline.
    for h in a.hypotheses:
        if h.metric == metric and {h.baseline, h.candidate} == {x, y}:
            return h
    return None


def _hypothesis(
    h: HypothesisResult, a: Analysis, notes: _Notes, carry: dict[str, int | None]
) -> HypothesisView:
    places = max(pct_places(h.change, h.ci_low, h.ci_high), pct_places(h.min_effect))
    if h.verdict_without_outliers is None:
        without = None
    elif h.verdict_without_outliers == h.verdict:
        without = f"{h.verdict_without_outliers} (unchanged)"
    else:
        without = f"{h.verdict_without_outliers} (the verdict changes)"
    refs = notes.ref(
        ("outlier", h.baseline, h.metric),
        ("outlier", h.candidate, h.metric),
        *[("hyp", h.id, code) for code in h.warnings],
    )
    refs += notes.file(h.id)
    return HypothesisView(
        id=h.id,
        verdict=h.verdict,
        claim=h.claim,
        baseline=h.baseline,
        candidate=h.candidate,
        metric=h.metric,
        claimed=f"{h.direction} ≥ {format_percent(h.min_effect, places)}",
        mean_baseline=fmt(h.metric, h.mean_baseline, carry.get(h.metric)),
        mean_candidate=fmt(h.metric, h.mean_candidate, carry.get(h.metric)),
        change=format_percent(h.change, max(places, pct_places(h.change)), signed=True),
        ci=_interval(h.ci_low, h.ci_high, places),
        p_welch=fmt_p(h.p_welch),
        p_mannwhitney=fmt_p(h.p_mannwhitney),
        p_holm=fmt_p(h.p_holm),
        hedges_g=format_number(h.hedges_g, 2),
        n_baseline=h.n_baseline,
        n_candidate=h.n_candidate,
        without_outliers=without,
        runs_needed=None if h.verdict != "inconclusive" else _runs_needed_text(h, places),
        confounds=[
            ConfoundView(c.setting, fmt_setting(c.baseline), fmt_setting(c.candidate))
            for c in h.confounds
        ],
        reason=h.reason,
        refs=refs_text(refs),
        sides=(
            f"{md(h.candidate)} ({_side(h.samples_candidate, a, h.candidate, h.metric)}) "
            f"against {md(h.baseline)} ({_side(h.samples_baseline, a, h.baseline, h.metric)})"
        ),
        tests_on="launch means" if h.unit == "launch" else "samples",
        decided=_decided(h, a.family or len(a.hypotheses), a.alpha, a.family > len(a.hypotheses)),
        noise=_noise_words(h.launch_noise, h.launch_noise_source),
        points=[
            (
                p.load,
                p.verdict,
                format_percent(p.change, places, signed=True),
                _interval(p.ci_low, p.ci_high, places),
            )
            for p in h.points
        ],
    )


def _runs_needed_text(h: HypothesisResult, places: int) -> str:
    """What `runs_needed` powers for, in words (DESIGN §5)."""
    if h.runs_needed is None:
        return h.runs_needed_note or "—"
    change = h.change if h.direction == "increase" else (-h.change if h.change else None)
    side = "at least" if change is not None and change >= h.min_effect else "below"
    return (
        f"{h.runs_needed} a side, for the expected interval to lie wholly {side} the claimed "
        f"{format_percent(h.min_effect, places)} {h.direction} at the current estimates of "
        "the launch noise and of each launch's own error (client runs within one launch "
        "cannot get below the launch noise)"
    )


def analysis_swept(s: _analysis.MetricSummary) -> bool:
    """Whether a config's metric was measured at several load points (no single level)."""
    return _analysis.W_SWEPT in s.warnings


def _side(samples: int, a: Analysis, config: str, metric: str) -> str:
    c = next((c for c in a.configs if c.name == config), None)
    m = c.metrics.get(metric) if c is not None else None
    launches = m.launches if m is not None else 0
    values = "1 value" if samples == 1 else f"{format_number(samples, 0)} values"
    return f"{values}, {launches} launch" + ("" if launches == 1 else "es")


def _decided(h: HypothesisResult, size: int, alpha: float, points: bool = False) -> str:
    what = f"{size} claims × load points" if points else f"{size} claims"
    if h.holm_level is None:
        if h.verdict_raw is not None and h.verdict_raw != h.verdict:
            return (
                f"not decided: {h.verdict_raw} at the raw {level_text(alpha)} level, but not at "
                f"the level Holm's step-down over {what} asks"
            )
        return "not decided"
    if size == 1:
        return f"at the {level_text(h.holm_level)} level"
    return f"at the {level_text(h.holm_level)} level (Holm's step-down over {what})"


def _noise_words(cv: float | None, source: str | None) -> str:
    if cv is None or source is None:
        return "—"
    words = {
        "measured": "measured from the configs launched more than once",
        "given": "given in sessionlens.toml",
        "assumed": "assumed: no config was launched twice",
    }
    return f"{format_percent(cv)} ({words.get(source, source)})"


def _economics(e: EconomicsResult, a: Analysis, notes: _Notes) -> EconomicsView:
    cfg = next((c for c in a.configs if c.name == e.config), None)
    shares = [
        s.mean
        for m, s in (cfg.metrics.items() if cfg is not None else [])
        if m.startswith("phase_") and m.endswith("_share") and s.mean is not None
    ]
    verify = cfg.metrics.get("verify_ms_per_cycle") if cfg is not None else None
    if e.cycle_is_estimate:
        source = "estimated from the Decode lines (1000 · L · running requests / gen throughput)"
        if e.measured_tok_s is not None and e.efficiency is None:
            source += "; no efficiency: the measured rate comes from the same lines"
    elif e.cycle_share is not None and not (shares and abs(math.fsum(shares) - 1) <= 0.01):
        share = format_percent(e.cycle_share)
        detail = (
            f"{fmt('verify_ms_per_cycle', verify.mean)} at {share} of the cycle"
            if verify is not None and verify.mean is not None
            else f"verify share {share}"
        )
        source = f"taken from verify time / verify share ({detail})"
    elif e.cycle_ms is not None:
        source = "the sum of the timed phases per cycle"
    else:
        source = "not available (no phase timings or Decode lines to estimate it from)"
    pays = None
    if e.break_even_accept_len is not None and e.accept_len is not None:
        pays = (
            "above it: speculation pays"
            if e.accept_len > e.break_even_accept_len
            else "below it: speculation does not pay"
        )
    refs = notes.ref(*[("econ", e.config, code) for code in e.warnings])
    return EconomicsView(
        config=e.config,
        estimate=e.cycle_is_estimate,
        cycle=None if e.cycle_ms is None else fmt("cycle_ms", e.cycle_ms),
        cycle_source=source,
        accept_len=None if e.accept_len is None else format_number(e.accept_len, 2),
        steps=e.steps,
        max_len=None if e.steps is None else str(e.steps + 1),
        measured=None if e.measured_tok_s is None else fmt("throughput_tok_s", e.measured_tok_s),
        ceiling=None if e.ceiling_tok_s is None else fmt("throughput_tok_s", e.ceiling_tok_s),
        efficiency=None if e.efficiency is None else format_percent(e.efficiency),
        baseline_config=e.baseline_config,
        baseline_tok_s=(
            None if e.baseline_tok_s is None else fmt("throughput_tok_s", e.baseline_tok_s)
        ),
        break_even=(
            None if e.break_even_accept_len is None else format_number(e.break_even_accept_len, 2)
        ),
        pays=pays,
        # a goal the user wrote, not a measurement: shown as written (150, not 150.0)
        target_tok_s=None if e.target_tok_s is None else f"{e.target_tok_s:g} tok/s",
        target_accept_len=(
            None if e.target_accept_len is None else format_number(e.target_accept_len, 2)
        ),
        reachable=e.reachable,
        p_needed_chain=None if e.p_needed_chain is None else format_percent(e.p_needed_chain),
        p_needed_unbounded=(
            None if e.p_needed_unbounded is None else format_percent(e.p_needed_unbounded)
        ),
        p_current_chain=None if e.p_current_chain is None else format_percent(e.p_current_chain),
        p_current_unbounded=(
            None if e.p_current_unbounded is None else format_percent(e.p_current_unbounded)
        ),
        refs=refs_text(refs),
    )


def _setting_cell(a: Analysis, config: str, key: str, value: Any) -> str:
    """A config's value of a setting; every value where its launches differ in it."""
    mixed = a.mixed_settings.get(config, {}).get(key)
    if not mixed:
        return fmt_setting(value)
    return ", ".join(fmt_setting(v) for v in mixed) + " (launches differ)"


def _noise_source(n: _analysis.NoiseResult) -> str:
    if n.source == "measured":
        df = "" if n.df is None else f", {format_number(n.df, 0)} df"
        return f"measured from {n.launches} launches of {n.configs} configs{df}"
    if n.source == "given":
        return "given in sessionlens.toml"
    return "assumed (no config was launched twice)"


def _nice(x: float, up: bool) -> float:
    """A round axis bound at or beyond x (1, 2, 2.5, 5 × 10^k)."""
    if x == 0 or not math.isfinite(x):
        return 0.0
    mag = 10 ** math.floor(math.log10(abs(x)))
    steps = (1.0, 2.0, 2.5, 5.0, 10.0)
    if (x > 0) == up:
        step = next(s for s in steps if s * mag >= abs(x) - 1e-12)
    else:
        step = next(s for s in reversed(steps) if s * mag <= abs(x) + 1e-12)
    bound = math.copysign(step * mag, x)
    return bound if math.isfinite(bound) else x  # no round bound below the float limit


def _plain(x: float, places: int) -> str:
    return format_number(x, places).replace(" ", "")


def _chart(a: Analysis, metric: str, carry: int | None) -> ChartView | None:
    series: list[Series] = []
    for c in a.configs:
        rows = [r for r in a.runs if r.config == c.name and r.metric == metric]
        if not rows:
            continue
        s = c.metrics.get(metric)
        median = s.median if s is not None else None
        level = s.mean if s is not None and s.mean is not None else median
        series.append(
            Series(
                config=c.name,
                values=[r.value for r in rows],
                outliers=[r.outlier for r in rows],
                where=[f"{r.source}:{r.line}" for r in rows],
                median=median,
                median_text=(
                    "—"
                    if median is None
                    else _plain(median, _places(fmt(metric, median, carry, unit=False)))
                ),
                level=level,
                ci_low=s.ci_low if s is not None else None,
                ci_high=s.ci_high if s is not None else None,
                level_text=(
                    "—"
                    if level is None
                    else _plain(level, _places(fmt(metric, level, carry, unit=False)))
                ),
            )
        )
    series = [s for s in series if s.level is not None and math.isfinite(s.level)]
    if not series:
        return None
    unit = metrics.get(metric).unit
    places = max(_places(s.level_text) for s in series)
    # the axis spans the levels and their intervals (never 0 by habit: a +5.8 % must show)
    ends = [v for s in series for v in (s.level, s.ci_low, s.ci_high) if v is not None]
    ends = [v for v in ends if math.isfinite(v)]
    lo, hi = min(ends), max(ends)
    pad = (hi - lo) * 0.15 or abs(hi) * 0.05 or 1.0
    big = sys.float_info.max  # a bound beyond a value near the float limit is the limit
    y_min = _nice(max(lo - pad, -big), up=False)
    y_max = _nice(min(hi + pad, big), up=True)
    if lo >= 0 > y_min:
        y_min = 0.0
    if y_max == y_min:
        y_max = y_min + 1
    return ChartView(
        metric=metric,
        unit=unit,
        title=f"{metric} per config: level (mean of launch means)" + (f", {unit}" if unit else ""),
        series=series,
        y_min=_plain(y_min, 0 if y_min.is_integer() else 2),
        y_max=_plain(y_max, 0 if y_max.is_integer() else 2),
        places=places,
    )


_OPENING = 5  # comparisons a session without claims opens with


def _opening(a: Analysis) -> list[str]:
    """A session without claims opens with its largest comparisons against the baseline."""
    if a.hypotheses:
        return []
    ranked = sorted(
        (c for c in a.comparisons if c.change is not None),
        key=lambda c: -abs(c.change or 0.0),
    )[:_OPENING]
    out = []
    for c in ranked:
        places = pct_places(c.change, c.ci_low, c.ci_high)
        ci = _interval(c.ci_low, c.ci_high, places)
        at = f" at {c.load}" if c.load else ""
        out.append(
            f"{c.candidate} vs {c.baseline}{at}: {c.metric} "
            f"{format_percent(c.change, places, signed=True)}"
            + (f" ({level_text(a.alpha)} CI {ci})" if ci != "—" else "")
            + f", {fmt(c.metric, c.mean_baseline)} → {fmt(c.metric, c.mean_candidate)}"
        )
    return out


def _decision(a: Analysis) -> list[DecisionRow]:
    """The decision chart's rows: each claim's r and interval (per load point in sweeps)."""
    rows: list[DecisionRow] = []
    for h in a.hypotheses:
        sign = 1.0 if h.direction == "increase" else -1.0
        places = max(pct_places(h.change, h.ci_low, h.ci_high), pct_places(h.min_effect))
        found = h.points if len(h.points) > 1 else []
        items = [(f"{h.id} {h.verdict}", h.verdict, h.change, h.ci_low, h.ci_high, False)]
        items += [
            (f"  at {p.load}: {p.verdict}", p.verdict, p.change, p.ci_low, p.ci_high, True)
            for p in found
        ]
        for label, verdict_, change, lo, hi, sub in items:
            own = max(places, pct_places(change))
            text = "—" if change is None else format_percent(change, own, signed=True)
            if lo is not None and hi is not None:
                text += f" ({_interval(lo, hi, places)})"
            rows.append(
                DecisionRow(label, verdict_, change, lo, hi, sign * h.min_effect, text, sub)
            )
    return rows


_DECISION_W = 56


def decision_text(rows: list[DecisionRow], level: str) -> str:
    """The decision chart in fixed width: per claim, its interval `[---o---]` on an axis
    spanning the data, 0 and the claimed δ (`|` no change, `:` the claim's threshold)."""
    ends = [0.0]
    for r in rows:
        ends += [v for v in (r.change, r.ci_low, r.ci_high, r.threshold) if v is not None]
    ends = [v for v in ends if math.isfinite(v)]
    lo, hi = min(ends), max(ends)
    span = hi - lo or 0.01
    lo, hi = lo - span * 0.05, hi + span * 0.05

    def col(x: float) -> int:
        return max(0, min(_DECISION_W - 1, round((x - lo) / (hi - lo) * (_DECISION_W - 1))))

    width = max(len(r.label) for r in rows)
    lines = []
    for r in rows:
        cells = [" "] * _DECISION_W
        if r.ci_low is not None and r.ci_high is not None:
            a, b = col(r.ci_low), col(r.ci_high)
            for i in range(a, b + 1):
                cells[i] = "-"
            cells[a], cells[b] = "[", "]"
        if r.change is not None:
            cells[col(r.change)] = "o"
        for x, mark in ((0.0, "|"), (r.threshold, ":")):
            i = col(x)
            cells[i] = mark if cells[i] in " -" else cells[i]
        lines.append(f"{r.label:<{width}}  {''.join(cells)}  {r.text}")
    left = format_percent(lo, 0, signed=True)
    right = format_percent(hi, 0, signed=True)
    axis = left + " " * max(1, _DECISION_W - len(left) - len(right)) + right
    lines.append(" " * (width + 2) + axis)
    lines.append(
        f"o the change (candidate vs baseline) and its {level} interval; "
        "| no change; : the claimed size"
    )
    return "\n".join(lines)


def build(analysis: Analysis, session_ref: str) -> ReportView:
    """The view of an analysis; `session_ref` is the session folder as the header names it."""
    a = analysis
    headline = _headline(a)
    carry = _carry(a)
    shown: list[str] = []
    for m in [headline, *(h.metric for h in a.hypotheses), *(c.metric for c in a.comparisons)]:
        if m is not None and m not in shown:
            shown.append(m)
    notes = _build_notes(a, shown, carry)

    header = {
        "sessionlens_version": a.sessionlens_version,
        "session": session_ref,
        "args": {"baseline": a.args.baseline, "hypotheses": list(a.args.hypotheses)},
        "inputs_digest": a.inputs_digest,
        "verdicts": {h.id: h.verdict for h in a.hypotheses},
    }

    hyps = [_hypothesis(h, a, notes, carry) for h in a.hypotheses]
    decision = _decision(a)

    configs: list[ConfigRow] = []
    for c in a.configs:
        s = c.metrics.get(headline) if headline is not None else None
        hc = carry.get(headline) if headline is not None else None
        mean_ci = "—"
        if s is not None and analysis_swept(s):
            mean_ci = f"swept: {len(c.points)} load points"
        elif s is not None and headline is not None and s.mean is not None:
            mean_ci = fmt(headline, s.mean, hc)
            if s.ci_low is not None and s.ci_high is not None and s.n >= 2:
                half = (s.ci_high - s.ci_low) / 2
                mean_text = fmt(headline, s.mean, hc, unit=False)
                half_text = format_number(half, _places(mean_text))
                unit = metrics.get(headline).unit
                if unit == "fraction":
                    mean_ci = f"{format_percent(s.mean)} ± {format_percent(half)}"
                else:
                    mean_ci = f"{mean_text} ± {half_text}" + (f" {unit}" if unit else "")
        refs = notes.ref(
            *[("outlier", c.name, m) for m in shown],
            *[
                ("summary", c.name, m, code)
                for m in shown
                for code in (c.metrics[m].warnings if m in c.metrics else [])
            ],
        )
        refs += [
            n
            for src in c.sources
            for n in notes.file(src)
            if notes.items[n - 1].code in _TRUNCATION
        ]
        refs += notes.file(c.name)
        configs.append(
            ConfigRow(
                name=c.name,
                label=c.label,
                sources=", ".join(c.sources) if c.sources else "—",
                n=s.n if s is not None else 0,
                launches=s.launches if s is not None else c.launches,
                mean_ci=mean_ci,
                median=fmt(headline, s.median, hc) if s is not None and headline else "—",
                cv=format_percent(s.cv) if s is not None and s.cv is not None else "—",
                refs=refs_text(refs),
            )
        )

    names = [c.name for c in a.configs]
    settings_by = {c.name: c.settings for c in a.configs}
    # Settings every config records come first: a config without a server log would
    # otherwise bury the few real differences under every server arg of the others.
    settings: list[SettingRow] = []
    partial: list[SettingRow] = []
    for key in a.settings_diff:
        has = [key in settings_by.get(n, {}) for n in names]
        row = SettingRow(
            key=key,
            values=[
                _setting_cell(a, n, key, settings_by[n][key]) if present else "—"
                for n, present in zip(names, has, strict=True)
            ],
        )
        (settings if all(has) else partial).append(row)

    comparisons: list[ComparisonRow] = []
    for cmp in a.comparisons:
        places = pct_places(cmp.change, cmp.ci_low, cmp.ci_high)
        h = _holm_for(a, cmp.metric, cmp.baseline, cmp.candidate)
        refs = notes.ref(
            *[("cmp", cmp.baseline, cmp.candidate, cmp.metric, code) for code in cmp.warnings],
            ("outlier", cmp.baseline, cmp.metric),
            ("outlier", cmp.candidate, cmp.metric),
        )
        mc = carry.get(cmp.metric)
        comparisons.append(
            ComparisonRow(
                metric=cmp.metric,
                load=cmp.load or "",
                candidate=cmp.candidate,
                n=f"{cmp.n_candidate} vs {cmp.n_baseline}"
                + (" launches" if cmp.unit == "launch" else ""),
                mean_baseline=fmt(cmp.metric, cmp.mean_baseline, mc),
                mean_candidate=fmt(cmp.metric, cmp.mean_candidate, mc),
                change=format_percent(cmp.change, places, signed=True),
                ci=_interval(cmp.ci_low, cmp.ci_high, places),
                p_welch=fmt_p(cmp.p_welch),
                p_mannwhitney=fmt_p(cmp.p_mannwhitney),
                p_holm=fmt_p(h.p_holm) if h is not None else "—",
                hedges_g=format_number(cmp.hedges_g, 2),
                refs=refs_text(refs),
            )
        )

    econ = [_economics(e, a, notes) for e in a.economics]

    noise = [
        NoiseView(
            metric=m,
            launch_cv=format_percent(n.launch_cv),
            source=_noise_source(n),
            within_cv="—" if n.within_cv is None else format_percent(n.within_cv),
            smallest=(
                "—" if n.min_detectable_effect is None else format_percent(n.min_detectable_effect)
            ),
            assumed=n.source == "assumed",
        )
        for m, n in a.noise.items()
    ]

    runs: list[RunView] = []
    for r in a.runs:
        mc = carry.get(r.metric)
        runs.append(
            RunView(
                load=r.load or "",
                config=r.config,
                source=r.source,
                line=r.line,
                run="—" if r.run is None else str(r.run),
                value=fmt(r.metric, r.value, mc),
                outlier=r.outlier,
                refs=refs_text(notes.ref(("outlier", r.config, r.metric)) if r.outlier else []),
            )
        )

    sources = [
        SourceView(
            path=s.path,
            config=s.config if s.config is not None else "unassigned",
            format=s.format if s.format is not None else "not recognised",
            lines=s.lines,
            samples=s.samples,
            sha256=s.sha256,
            refs=refs_text(notes.file(s.path)),
        )
        for s in a.sources
    ]

    return ReportView(
        title=a.title,
        header=header,
        header_json=header_json(header),
        level=level_text(a.alpha),
        baseline=a.baseline,
        headline=headline,
        headline_unit=metrics.get(headline).unit if headline is not None else "",
        config_names=names,
        hypotheses=hyps,
        decision=decision,
        decision_text=decision_text(decision, level_text(a.alpha)) if decision else "",
        opening=_opening(a),
        configs=configs,
        settings=settings,
        settings_partial=partial,
        comparisons=comparisons,
        has_holm=bool(a.hypotheses),
        has_loads=any(c.load for c in a.comparisons) or any(r.load for r in a.runs),
        sweep=sweep_view.build(a),
        noise=noise,
        economics=econ,
        chart=_chart(a, headline, carry.get(headline)) if headline is not None else None,
        runs=runs,
        runs_omitted=[
            OmittedRunsView(config=c, count=format_number(n, 0)) for c, n in a.runs_omitted.items()
        ],
        runs_listed=format_number(_analysis.RUNS_LISTED, 0),
        notes=notes.items,
        sources=sources,
        analysis=a,
    )
