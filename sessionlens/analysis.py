"""`analyze(session) -> Analysis`: the JSON report of DESIGN §7 as a pydantic model.

Owns the contract model and the orchestration group → stats → verdict → specmath. Fields
beyond DESIGN §7 (`comparisons`, `runs`, `runs_omitted`, `sources`, `alpha`, `baseline`,
per-metric `unit` and `warnings`) extend it. It must not format numbers: floats stay unrounded.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from . import __version__, group, metrics, specmath, stats, verdict
from . import diagnostics as dg
from .manifest import HypothesisSpec
from .session import Session

Verdict = Literal["supported", "rejected", "inconclusive"]

# Headline metrics for the comparisons table, in order of preference.
HEADLINE = (
    "throughput_tok_s",
    "output_throughput_tok_s",
    "gen_throughput_tok_s",
    "total_throughput_tok_s",
    "decode_median_throughput_tok_s",
)
# Read by `_economics` and `_measured` after the summaries, with the headline metrics.
_ASKED_AGAIN = frozenset((*HEADLINE, "accept_len", "running_req", "cycle_ms", "verify_share"))
# Samples from which the summaries are made on two threads (`_summaries`).
_PARALLEL_FROM = 1 << 20


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OutlierRef(_Model):
    source: str
    line: int
    value: float


class MetricSummary(_Model):
    """A config's metric: `mean` is its level (the mean of launch means, DESIGN §5) and
    `ci_low`/`ci_high` the level's interval; `n`, `median`, `stdev`, `cv`, `min`, `max` describe
    every sample read."""

    n: int
    mean: float | None
    median: float | None
    stdev: float | None
    cv: float | None
    ci_low: float | None
    ci_high: float | None
    min: float | None
    max: float | None
    outliers: list[OutlierRef] = Field(default_factory=list)
    unit: str = ""
    warnings: list[str] = Field(default_factory=list)
    launches: int = 0
    n_eff: float | None = None  # independent samples the values are worth (autocorrelation)
    warmup_dropped: int = 0  # interval values dropped at the start of launches (MSER-5)


class ConfigResult(_Model):
    name: str
    label: str
    settings: dict[str, Any] = Field(default_factory=dict)
    sources: list[str] = Field(default_factory=list)
    metrics: dict[str, MetricSummary] = Field(default_factory=dict)
    launches: int = 0


class Confound(_Model):
    setting: str
    baseline: Any
    candidate: Any


class HypothesisResult(_Model):
    id: str
    claim: str
    metric: str
    baseline: str
    candidate: str
    direction: Literal["increase", "decrease"]
    min_effect: float
    verdict: Verdict
    change: float | None
    ci_low: float | None
    ci_high: float | None
    p_welch: float | None
    p_mannwhitney: float | None
    p_holm: float | None
    hedges_g: float | None
    n_baseline: int
    n_candidate: int
    runs_needed: int | None
    verdict_without_outliers: Verdict | None
    confounds: list[Confound] = Field(default_factory=list)
    reason: str
    mean_baseline: float | None = None
    mean_candidate: float | None = None
    warnings: list[str] = Field(default_factory=list)
    # v0.2 (DESIGN §5): the unit `n_baseline`/`n_candidate` count, the launch noise assumed,
    # the raw verdict and the Holm level it was decided at, and why no runs_needed
    unit: Literal["launch", "sample"] = "sample"
    samples_baseline: int = 0
    samples_candidate: int = 0
    launch_noise: float | None = None
    launch_noise_source: Literal["measured", "given", "assumed"] | None = None
    verdict_raw: Verdict | None = None
    holm_level: float | None = None
    p_min_effect: float | None = None
    runs_needed_note: str | None = None
    points: list[dict[str, Any]] = Field(default_factory=list)


class ComparisonResult(_Model):
    metric: str
    baseline: str
    candidate: str
    mean_baseline: float | None
    mean_candidate: float | None
    change: float | None
    ci_low: float | None
    ci_high: float | None
    p_welch: float | None
    p_mannwhitney: float | None
    hedges_g: float | None
    n_baseline: int
    n_candidate: int
    warnings: list[str] = Field(default_factory=list)
    unit: Literal["launch", "sample"] = "sample"


class NoiseResult(_Model):
    """σ_L of a metric (DESIGN §5 "What the report says about noise")."""

    launch_cv: float
    source: Literal["measured", "given", "assumed"]
    df: float | None  # None: known exactly (given or assumed)
    within_cv: float | None
    min_detectable_effect: float | None
    configs: int = 0  # configs it was measured from
    launches: int = 0  # their launches


class EconomicsResult(_Model):
    config: str
    cycle_ms: float | None
    cycle_is_estimate: bool
    accept_len: float | None
    steps: int | None
    measured_tok_s: float | None
    ceiling_tok_s: float | None
    efficiency: float | None
    baseline_config: str | None
    baseline_tok_s: float | None
    break_even_accept_len: float | None
    p_current_chain: float | None
    p_current_unbounded: float | None
    target_tok_s: float | None
    target_accept_len: float | None
    reachable: bool | None
    p_needed_chain: float | None
    p_needed_unbounded: float | None
    cycle_share: float | None = None
    warnings: list[str] = Field(default_factory=list)


class RunRow(_Model):
    config: str
    metric: str
    source: str
    line: int
    run: int | None
    block: int | None
    value: float
    outlier: bool


class SourceRef(_Model):
    path: str
    config: str | None
    format: str | None
    lines: int
    sha256: str
    samples: int


class Args(_Model):
    baseline: str | None = None
    hypotheses: list[str] = Field(default_factory=list)


class Analysis(_Model):
    """The JSON report (DESIGN §7, contract), extended with comparisons, runs and sources."""

    sessionlens_version: str
    title: str
    inputs_digest: str
    configs: list[ConfigResult]
    settings_diff: dict[str, dict[str, Any]]
    hypotheses: list[HypothesisResult]
    economics: list[EconomicsResult]
    args: Args
    diagnostics: list[dg.Diagnostic]
    alpha: float = 0.05
    baseline: str | None = None
    comparisons: list[ComparisonResult] = Field(default_factory=list)
    runs: list[RunRow] = Field(default_factory=list)
    # configs whose headline series is longer than RUNS_LISTED: its number of values (not in
    # `runs`; `sessionlens parse --format parquet` gives every one)
    runs_omitted: dict[str, int] = Field(default_factory=dict)
    sources: list[SourceRef] = Field(default_factory=list)
    noise: dict[str, NoiseResult] = Field(default_factory=dict)
    # settings that differ between a config's launches: {config: {key: [values]}}
    mixed_settings: dict[str, dict[str, list[Any]]] = Field(default_factory=dict)


# A config's headline values are listed one row each (and charted) up to this many: a
# benchmark's runs, not the hundreds of thousands of decode intervals of a day-long server
# log, which no one reads in a table and which would cost more to render than to read.
RUNS_LISTED = 1000


def economics_result(
    e: specmath.Economics,
    *,
    config: str,
    cycle_is_estimate: bool,
    baseline_config: str | None,
    cycle_share: float | None = None,
) -> EconomicsResult:
    """The JSON economics object of a config from the spec-math figures."""
    fields = {k: v for k, v in dataclasses.asdict(e).items() if k != "warnings"}
    return EconomicsResult(
        config=config,
        cycle_is_estimate=cycle_is_estimate,
        baseline_config=baseline_config,
        cycle_share=cycle_share,
        warnings=list(e.warnings),
        **fields,
    )


def comparison_result(
    ev: verdict.Evidence, metric: str, baseline: str, candidate: str
) -> ComparisonResult:
    """One row of the comparisons table: r of the levels with its Fieller interval, and the
    tests on the unit of replication."""
    unit_n = (ev.a.launches, ev.b.launches) if ev.unit == "launch" else (ev.a.n, ev.b.n)
    warnings = list(ev.tests.warnings)
    if ev.raw.change is not None and not ev.raw.bounded:
        warnings.append(stats.W_UNBOUNDED)
    return ComparisonResult(
        metric=metric,
        baseline=baseline,
        candidate=candidate,
        mean_baseline=ev.a.mean,
        mean_candidate=ev.b.mean,
        change=ev.raw.change,
        ci_low=ev.raw.ci_low,
        ci_high=ev.raw.ci_high,
        p_welch=ev.tests.p_welch,
        p_mannwhitney=ev.tests.p_mannwhitney,
        hedges_g=ev.tests.hedges_g,
        n_baseline=unit_n[0],
        n_candidate=unit_n[1],
        warnings=warnings,
        unit=ev.unit,
    )


_SPEC_FIELDS = {"id", "claim", "metric", "baseline", "candidate", "direction", "min_effect"}


def hypothesis_result(
    j: verdict.Judgement,
    spec: HypothesisSpec,
    confounds: Sequence[tuple[str, Any, Any]] = (),
) -> HypothesisResult:
    """The JSON hypothesis object: the claim as specified, its judgement, its confounds
    (setting, baseline value, candidate value); `p_holm` is set across hypotheses later."""
    judged = {
        k: v
        for k, v in dataclasses.asdict(j).items()
        if k in HypothesisResult.model_fields and k not in _SPEC_FIELDS
    }
    judged["warnings"] = list(j.warnings)
    return HypothesisResult(
        **spec.model_dump(include=_SPEC_FIELDS),
        **judged,
        p_holm=None,
        confounds=[Confound(setting=k, baseline=va, candidate=vb) for k, va, vb in confounds],
    )


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


@dataclasses.dataclass(frozen=True, slots=True)
class _Cell:
    """One (config, metric) as read: the samples described, and its launches' statistics
    (before the metric's print resolution is known)."""

    summary: stats.Summary
    launches: tuple[str, ...]
    stats: tuple[stats.LaunchStat, ...]
    outliers: tuple[int, ...]  # positions in the config's points, flagged within launches
    step: float | None


def _cell(points: Sequence[group.Point], alpha: float, session: Session) -> _Cell:
    column = group.column_of(points)
    s = stats.summarize(column, alpha, flag=False)
    names: list[str] = []
    out: list[stats.LaunchStat] = []
    flagged: list[int] = []
    for lv in group.by_launch(points, session.launches, session.series_sources):
        if not bool(_np().isfinite(lv.values).any()):
            continue
        st = stats.launch_stat(lv.values, lv.series)
        names.append(lv.name)
        out.append(st)
        flagged.extend(int(lv.positions[i]) for i in st.outliers)
    return _Cell(s, tuple(names), tuple(out), tuple(sorted(flagged)), stats.print_step(column))


def _np() -> Any:
    import numpy as np

    return np


def _cells(values: group.Values, alpha: float, big: bool, session: Session) -> dict[Key, _Cell]:
    """The cell of every (config, metric). A big session's are made two at a time: while one
    is summed (Python, holding the GIL), the next one's values are read (polars, one key at
    a time: `group._ByKey`) and ordered (numpy), which let go of it. The values of two keys
    at most are in flight."""
    keys = list(values)
    if not big:
        return {key: _cell(values[key], alpha, session) for key in keys}
    pool = ThreadPoolExecutor(2, thread_name_prefix="sessionlens-summary")
    try:
        done = list(pool.map(lambda key: _cell(values[key], alpha, session), keys))
    except BaseException:  # an interrupt (or an error): the summaries not started are not
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return dict(zip(keys, done, strict=True))


Key = tuple[str, str]


class _Levels:
    """Per metric: its print resolution, its launch noise, and every config's level."""

    def __init__(self, cells: dict[Key, _Cell], session: Session) -> None:
        self.cells = cells
        self.session = session
        self.alpha = session.alpha
        by_metric: dict[str, list[Key]] = {}
        for key in cells:
            by_metric.setdefault(key[1], []).append(key)
        self.steps: dict[str, float | None] = {}
        self.floored: dict[Key, tuple[stats.LaunchStat, ...]] = {}
        self.noise: dict[str, stats.Noise] = {}
        self.levels: dict[Key, stats.Level] = {}
        for metric, keys in by_metric.items():
            found = [st for k in keys if (st := cells[k].step) is not None]
            # a metric's values are printed alike: the finest step any config shows (none
            # where a config's values carry more decimals than a step can tell)
            step = min(found) if len(found) == len(keys) else None
            self.steps[metric] = step
            for k in keys:
                self.floored[k] = tuple(stats.floored(st, step) for st in cells[k].stats)
            given = session.launch_noise
            if isinstance(given, dict):
                given = given.get(metric)
            self.noise[metric] = stats.launch_noise([self.floored[k] for k in keys], given)
            for k in keys:
                self.levels[k] = stats.level(self.floored[k], self.noise[metric], k[0])

    def side(self, key: Key, points: Sequence[group.Point]) -> verdict.Side:
        """A hypothesis' side: its launches, its samples, and both without its outliers."""
        cell = self.cells[key]
        launches = self.floored[key]
        column = group.column_of(points)
        if not cell.outliers:
            return verdict.Side(launches, column)
        np = _np()
        keep = np.ones(len(points), dtype=bool)
        keep[list(cell.outliers)] = False
        step = self.steps[key[1]]
        clean = []
        for lv in group.by_launch(points, self.session.launches, self.session.series_sources):
            rest = lv.values[keep[lv.positions]]
            if len(rest) and bool(np.isfinite(rest).any()):
                clean.append(stats.floored(stats.launch_stat(rest, lv.series), step))
        samples = np.asarray(column, dtype=np.float64)[keep]
        return verdict.Side(launches, column, tuple(clean), samples)

    def level_summary(self, key: Key, points: Sequence[group.Point]) -> MetricSummary:
        cell, lv = self.cells[key], self.levels[key]
        s = cell.summary
        lo = hi = None
        if lv.mean is not None and lv.var is not None:
            t = stats.t_quantile(1 - self.alpha / 2, lv.df if lv.df is not None else math.inf)
            half = t * math.sqrt(lv.var)
            lo, hi = lv.mean - half, lv.mean + half
        warnings = list(s.warnings)
        if cell.outliers:
            warnings.append(stats.W_OUTLIER)
        return MetricSummary(
            n=s.n,
            mean=lv.mean if lv.mean is not None else s.mean,
            median=s.median,
            stdev=s.stdev,
            cv=s.cv,
            ci_low=lo,
            ci_high=hi,
            min=s.min,
            max=s.max,
            outliers=[
                OutlierRef(source=points[i].source, line=points[i].line, value=points[i].value)
                for i in cell.outliers
            ],
            unit=metrics.get(key[1]).unit,
            warnings=list(dict.fromkeys(warnings)),
            launches=lv.launches,
            n_eff=lv.n_eff if lv.launches else None,
            warmup_dropped=lv.warmup,
        )


def analyze(session: Session) -> Analysis:
    """Statistics, verdicts and economics of a loaded session."""
    # the metrics asked for again after their summaries (comparisons, economics, claims)
    keep = _ASKED_AGAIN | {h.metric for h in session.hypotheses}
    values = group.values_by_config(session, keep=keep)
    names = [c.name for c in session.configs]
    settings = {c.name: session.config_settings(c.name) for c in session.configs}
    diags: list[dg.Diagnostic] = list(session.diagnostics)
    alpha = session.alpha

    cells = _cells(values, alpha, len(session.columns) > _PARALLEL_FROM, session)
    lv = _Levels(cells, session)
    configs: list[ConfigResult] = []
    for spec in session.configs:
        metric_names = [m for (c, m) in values if c == spec.name]
        own = [s.path for s in session.sources if session.source_config.get(s.path) == spec.name]
        configs.append(
            ConfigResult(
                name=spec.name,
                label=spec.label,
                settings=settings[spec.name],
                sources=own,
                metrics={
                    m: lv.level_summary((spec.name, m), values[(spec.name, m)])
                    for m in metric_names
                },
                launches=len({n for p in own for _, n in session.launches.get(p, [])}),
            )
        )
    by_name = {c.name: c for c in configs}

    baseline = session.baseline or (names[0] if names else None)
    members = [_weigh(h, values, lv, alpha) for h in session.hypotheses]
    judged = verdict.family([m for m in members if m is not None], alpha)
    it = iter(judged)
    hyps = [
        _hypothesis(h, next(it) if m is not None else None, session, settings, diags)
        for h, m in zip(session.hypotheses, members, strict=True)
    ]
    holm = stats.holm([h.p_welch for h in hyps])
    hyps = [h.model_copy(update={"p_holm": p}) for h, p in zip(hyps, holm, strict=True)]

    comparisons: list[ComparisonResult] = []
    if baseline is not None:
        wanted = [m for m in HEADLINE if (baseline, m) in values][:1]
        for h in session.hypotheses:  # one row per metric, however many claims name it
            if h.metric not in wanted:
                wanted.append(h.metric)
        for name in names:
            if name == baseline:
                continue
            for m in wanted:
                a, b = values.get((baseline, m)), values.get((name, m))
                if not a or not b:
                    continue
                ev = verdict.weigh(
                    lv.side((baseline, m), a),
                    lv.side((name, m), b),
                    lv.noise[m],
                    "increase",
                    0.0,
                    alpha,
                    m,
                )
                comparisons.append(comparison_result(ev, m, baseline, name))

    run_metrics = [m for m in HEADLINE if any((n, m) in values for n in names)][:1]
    runs: list[RunRow] = []
    runs_omitted: dict[str, int] = {}
    for name in names:
        for m in run_metrics:
            pts: Sequence[group.Point] = values.get((name, m), [])
            if len(pts) > RUNS_LISTED:
                runs_omitted[name] = len(pts)
                continue
            flagged = (
                {(o.source, o.line) for o in by_name[name].metrics[m].outliers} if pts else set()
            )
            runs.extend(
                RunRow(
                    config=name,
                    metric=m,
                    source=p.source,
                    line=p.line,
                    run=p.run,
                    block=p.block,
                    value=p.value,
                    outlier=(p.source, p.line) in flagged,
                )
                for p in pts
            )

    shown = [*run_metrics, *(h.metric for h in session.hypotheses)]
    shown = [*dict.fromkeys(m for m in [*shown, *(c.metric for c in comparisons)])]
    noise = {m: _noise_result(lv, m) for m in shown if m in lv.noise}
    for m, n in noise.items():
        if n.source == "assumed":
            diags.append(
                dg.make(
                    "assumed-launch-noise",
                    m,
                    None,
                    f"{m}: no config was launched twice, so the launch-to-launch noise is "
                    f"assumed to be {metrics.format_percent(n.launch_cv, 0)} (CV); relaunch each "
                    "config at "
                    "least twice (a sub-folder per launch) to measure it, or give launch_noise "
                    "in sessionlens.toml",
                )
            )

    for name in names:
        for key, set_to, logged in session.overridden(name):
            diags.append(
                dg.make(
                    "settings-override",
                    name,
                    None,
                    f"config {name}: sessionlens.toml sets {key} = {_show(set_to)}, the logs "
                    f"say {_show(logged)}; the manifest's value is used",
                )
            )
    mixed = {name: session.mixed_settings(name) for name in names}
    for name, found in mixed.items():
        if not found:
            continue
        shown_mixed = "; ".join(
            f"{k}: {', '.join(_show(v) for v in vals[:6])}{' …' if len(vals) > 6 else ''}"
            for k, vals in found.items()
        )
        diags.append(
            dg.make(
                "mixed-settings",
                name,
                None,
                f"config {name} pools runs made with different settings ({shown_mixed}); its "
                "statistics mix them: give each its own config (a sub-folder, or [configs] "
                "in sessionlens.toml)",
            )
        )
    across = {name: group.launch_settings(session, name) for name in names}
    for name, found in across.items():
        for key, by_launch in found.items():
            parts = ", ".join(f"{_show(v)} in {', '.join(ls)}" for v, ls in by_launch)
            diags.append(
                dg.make(
                    "mixed-settings",
                    name,
                    None,
                    f"config {name}: its launches differ in {key} ({parts}); its statistics "
                    "pool them: give each setting its own config",
                )
            )
    hyps = [
        h.model_copy(update={"warnings": [*h.warnings, "mixed-settings"]})
        if mixed.get(h.baseline)
        or mixed.get(h.candidate)
        or across.get(h.baseline)
        or across.get(h.candidate)
        else h
        for h in hyps
    ]

    econ = _economics(session, values, settings, by_name, baseline, diags)
    return Analysis(
        sessionlens_version=__version__,
        title=session.title,
        inputs_digest=session.inputs_digest,
        configs=configs,
        settings_diff=group.settings_diff(settings, across),
        hypotheses=hyps,
        economics=econ,
        args=Args(baseline=session.baseline, hypotheses=list(session.cli_hypotheses)),
        diagnostics=diags,
        alpha=alpha,
        baseline=baseline,
        comparisons=comparisons,
        runs=runs,
        runs_omitted=runs_omitted,
        sources=[
            SourceRef(
                path=s.path,
                config=session.source_config.get(s.path),
                format=s.format,
                lines=s.lines,
                sha256=s.sha256,
                samples=s.samples,
            )
            for s in session.sources
        ],
        noise=noise,
        mixed_settings={
            name: {k: [v for v, _ in by] for k, by in found.items()}
            for name, found in across.items()
            if found
        },
    )


def _noise_result(lv: _Levels, metric: str) -> NoiseResult:
    n = lv.noise[metric]
    levels = [level for key, level in lv.levels.items() if key[1] == metric]
    return NoiseResult(
        launch_cv=n.cv,
        source=n.source,
        df=n.df if math.isfinite(n.df) else None,
        within_cv=n.within_cv,
        min_detectable_effect=stats.min_detectable_effect(levels, lv.alpha),
        configs=n.cells,
        launches=n.launches,
    )


def _weigh(
    h: HypothesisSpec, values: group.Values, lv: _Levels, alpha: float
) -> verdict.Evidence | None:
    """A claim's evidence, or None where a side has no value at all."""
    ka, kb = (h.baseline, h.metric), (h.candidate, h.metric)
    if ka not in lv.cells or kb not in lv.cells:
        return None
    return verdict.weigh(
        lv.side(ka, values[ka]),
        lv.side(kb, values[kb]),
        lv.noise[h.metric],
        h.direction,
        h.min_effect,
        alpha,
        h.metric,
    )


def _hypothesis(
    h: HypothesisSpec,
    j: verdict.Judgement | None,
    session: Session,
    settings: dict[str, dict[str, Any]],
    diags: list[dg.Diagnostic],
) -> HypothesisResult:
    if j is None:
        j = verdict.empty(h.metric, h.direction, h.min_effect, session.alpha)
    found = group.confounds(settings[h.baseline], settings[h.candidate], h.varies)
    for key, va, vb in found:
        diags.append(
            dg.make(
                "confound",
                h.id,
                None,
                f"{h.id}: {h.baseline} and {h.candidate} also differ in {key} "
                f"({_show(va)} vs {_show(vb)}), which the hypothesis does not vary",
            )
        )
    if stats.W_FEW in j.warnings:
        need = stats.min_samples(session.alpha)
        what = "launches" if j.unit == "launch" else "samples"
        diags.append(
            dg.make(
                "few-samples",
                h.id,
                None,
                f"{h.id}: {j.n_baseline} vs {j.n_candidate} {what}; need >= {need} on each side "
                f"for a Mann–Whitney test to detect a difference at alpha level "
                f"{session.alpha:g}",
            )
        )
    return hypothesis_result(j, h, found)


def _show(value: Any) -> str:
    return "unset" if value is None else str(value)


def _mean(points: Sequence[group.Point] | None) -> float | None:
    s = stats.summarize(group.column_of(points or []))
    return s.mean


def _is_speculative(
    name: str, settings: dict[str, Any], values: Mapping[tuple[str, str], Sequence[group.Point]]
) -> bool:
    algo = settings.get("speculative_algorithm")
    has_algo = algo not in (None, "", "None", "none", "NONE")
    return (
        has_algo
        or bool(values.get((name, "accept_len")))
        or bool(settings.get("speculative_config.method") or settings.get("num_spec_tokens"))
    )


def _measured(name: str, values: Mapping[tuple[str, str], Sequence[group.Point]]) -> float | None:
    direct = _mean(values.get((name, "throughput_tok_s")))
    if direct is not None:
        return direct
    gen, running = (
        _mean(values.get((name, "gen_throughput_tok_s"))),
        _mean(values.get((name, "running_req"))),
    )
    if gen is not None and running:
        return gen / running
    return None


def _steps(settings: dict[str, Any]) -> int | None:
    for key in (
        "speculative_num_steps",
        "num_spec_tokens",
        "speculative_config.num_spec_tokens",
        "num_speculative_tokens",
        "speculative_config.num_speculative_tokens",
    ):
        v = settings.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 1:
            return v
    return None


def _economics(
    session: Session,
    values: Mapping[tuple[str, str], Sequence[group.Point]],
    settings: dict[str, dict[str, Any]],
    by_name: dict[str, ConfigResult],
    baseline: str | None,
    diags: list[dg.Diagnostic],
) -> list[EconomicsResult]:
    names = [c.name for c in session.configs]
    plain = [n for n in names if not _is_speculative(n, settings[n], values)]
    base = baseline if baseline in plain else (plain[0] if plain else None)
    base_tok = _measured(base, values) if base is not None else None
    out: list[EconomicsResult] = []
    counts: set[Any] = set()
    for name in names:
        accept = values.get((name, "accept_len"))
        if not accept:
            continue
        counts_bonus = settings[name].get("accept_len_counts_bonus")
        counts.add(counts_bonus)
        length = _mean(accept)
        if length is not None and counts_bonus is False:
            length += 1.0  # DESIGN §6: L counts the bonus token
        cycle = _mean(values.get((name, "cycle_ms")))
        share = _mean(values.get((name, "verify_share")))
        estimate = False
        if cycle is None:
            cycle = _estimate_cycle(name, values, 1.0 if counts_bonus is False else 0.0)
            estimate = cycle is not None
        e = specmath.economics(
            cycle,
            length,
            _steps(settings[name]),
            _measured(name, values),
            base_tok,
            session.target_tok_s,
        )
        if estimate and _mean(values.get((name, "throughput_tok_s"))) is None:
            # the cycle was estimated from the very Decode lines that give the measured
            # rate: their ratio is ~100 % by construction, not an efficiency
            e = dataclasses.replace(e, efficiency=None)
        out.append(
            economics_result(
                e,
                config=name,
                cycle_is_estimate=estimate,
                baseline_config=base if base_tok is not None else None,
                cycle_share=share,
            )
        )
    if len(counts) > 1:
        diags.append(
            dg.make(
                "mixed-accept-len",
                session.root.name or "session",
                None,
                "acceptance lengths of these configs count the bonus token differently: "
                "the economics add 1 where it is not counted, but tables, comparisons and "
                "hypotheses on accept_len show the values as logged (not like for like)",
            )
        )
    return out


# An acceptance line is paired with the interval line at or just before it: SGLang prints
# all three fields on one Decode line, vLLM prints its SpecDecoding line right after the
# engine line of the same interval.
_PAIR_WINDOW = 3


def _estimate_cycle(
    name: str, values: Mapping[tuple[str, str], Sequence[group.Point]], bonus_offset: float
) -> float | None:
    """c ≈ 1000·L·R/G per interval (DESIGN §6), L counting the bonus token."""
    by_source: dict[str, list[tuple[int, int, str, float]]] = {}
    order = {"running_req": 0, "gen_throughput_tok_s": 0, "accept_len": 1}
    for metric, rank in order.items():
        for p in values.get((name, metric), []):
            by_source.setdefault(p.source, []).append((p.line, rank, metric, p.value))
    triples: list[tuple[float, float, float]] = []
    for rows in by_source.values():
        rows.sort()
        last: dict[str, tuple[int, float]] = {}
        for line, _, metric, value in rows:
            if metric != "accept_len":
                last[metric] = (line, value)
                continue
            run, gen = last.get("running_req"), last.get("gen_throughput_tok_s")
            if run and gen and line - run[0] <= _PAIR_WINDOW and line - gen[0] <= _PAIR_WINDOW:
                triples.append((value + bonus_offset, run[1], gen[1]))
    return specmath.estimate_cycle_ms_mean(triples)
