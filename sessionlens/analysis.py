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

# Formats whose samples are interval averages within one server launch (DESIGN §5).
SERVER_FORMATS = frozenset({"sglang-server", "vllm-server", "phase-timing"})
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
    cmp: stats.Comparison, metric: str, baseline: str, candidate: str
) -> ComparisonResult:
    """One row of the comparisons table from a statistical comparison."""
    return ComparisonResult(
        metric=metric,
        baseline=baseline,
        candidate=candidate,
        mean_baseline=cmp.mean_a,
        mean_candidate=cmp.mean_b,
        change=cmp.change,
        ci_low=cmp.ci_low,
        ci_high=cmp.ci_high,
        p_welch=cmp.p_welch,
        p_mannwhitney=cmp.p_mannwhitney,
        hedges_g=cmp.hedges_g,
        n_baseline=cmp.n_a,
        n_candidate=cmp.n_b,
        warnings=list(cmp.warnings),
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


def _summary(points: Sequence[group.Point], metric: str, alpha: float) -> MetricSummary:
    s = stats.summarize(group.column_of(points), alpha)
    return MetricSummary(
        n=s.n,
        mean=s.mean,
        median=s.median,
        stdev=s.stdev,
        cv=s.cv,
        ci_low=s.ci_low,
        ci_high=s.ci_high,
        min=s.min,
        max=s.max,
        outliers=[
            OutlierRef(source=points[i].source, line=points[i].line, value=points[i].value)
            for i in s.outliers
        ],
        unit=metrics.get(metric).unit,
        warnings=list(s.warnings),
    )


def _summaries(
    values: group.Values, alpha: float, big: bool
) -> dict[tuple[str, str], MetricSummary]:
    """The summary of every (config, metric). A big session's are made two at a time:
    while one is summed (Python, holding the GIL), the next one's values are read (polars,
    one key at a time: `group._ByKey`) and ordered (numpy), which let go of it. The values
    of two keys at most are in flight."""
    keys = list(values)
    if not big:
        return {key: _summary(values[key], key[1], alpha) for key in keys}
    pool = ThreadPoolExecutor(2, thread_name_prefix="sessionlens-summary")
    try:
        done = list(pool.map(lambda key: _summary(values[key], key[1], alpha), keys))
    except BaseException:  # an interrupt (or an error): the summaries not started are not
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return dict(zip(keys, done, strict=True))


def analyze(session: Session) -> Analysis:
    """Statistics, verdicts and economics of a loaded session."""
    # the metrics asked for again after their summaries (comparisons, economics) are kept
    values = group.values_by_config(session, keep=_ASKED_AGAIN)
    names = [c.name for c in session.configs]
    settings = {c.name: session.config_settings(c.name) for c in session.configs}
    diags: list[dg.Diagnostic] = list(session.diagnostics)

    launches = {
        name: sum(
            1
            for s in session.sources
            if session.source_config.get(s.path) == name and s.format in SERVER_FORMATS
        )
        for name in names
    }
    summaries = _summaries(values, session.alpha, big=len(session.columns) > _PARALLEL_FROM)
    configs: list[ConfigResult] = []
    for spec in session.configs:
        metric_names = [m for (c, m) in values if c == spec.name]
        configs.append(
            ConfigResult(
                name=spec.name,
                label=spec.label,
                settings=settings[spec.name],
                sources=[
                    s.path
                    for s in session.sources
                    if session.source_config.get(s.path) == spec.name
                ],
                metrics={m: summaries[(spec.name, m)] for m in metric_names},
                launches=launches[spec.name],
            )
        )
    by_name = {c.name: c for c in configs}

    baseline = session.baseline or (names[0] if names else None)
    hyps = [_judge(h, session, values, settings, diags) for h in session.hypotheses]
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
                cmp = stats.compare(group.column_of(a), group.column_of(b), session.alpha)
                comparisons.append(comparison_result(cmp, m, baseline, name))

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

    for name in names:
        used = any(h.baseline == name or h.candidate == name for h in session.hypotheses)
        server_metric = any(
            (name, h.metric) in values and _from_server(session, name, h.metric, values)
            for h in session.hypotheses
            if name in (h.baseline, h.candidate)
        )
        if used and server_metric and launches[name] == 1:
            diags.append(
                dg.make(
                    "single-launch",
                    name,
                    None,
                    f"config {name}: its server-log samples are interval averages within one "
                    "launch; between-launch noise is not captured",
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
        shown = "; ".join(
            f"{k}: {', '.join(_show(v) for v in vals[:6])}{' …' if len(vals) > 6 else ''}"
            for k, vals in found.items()
        )
        diags.append(
            dg.make(
                "mixed-settings",
                name,
                None,
                f"config {name} pools runs made with different settings ({shown}); its "
                "statistics mix them: give each its own config (a sub-folder, or [configs] "
                "in sessionlens.toml)",
            )
        )
    hyps = [
        h.model_copy(update={"warnings": [*h.warnings, "mixed-settings"]})
        if mixed.get(h.baseline) or mixed.get(h.candidate)
        else h
        for h in hyps
    ]

    econ = _economics(session, values, settings, by_name, baseline, diags)
    return Analysis(
        sessionlens_version=__version__,
        title=session.title,
        inputs_digest=session.inputs_digest,
        configs=configs,
        settings_diff=group.settings_diff(settings),
        hypotheses=hyps,
        economics=econ,
        args=Args(baseline=session.baseline, hypotheses=list(session.cli_hypotheses)),
        diagnostics=diags,
        alpha=session.alpha,
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
    )


def _from_server(
    session: Session,
    config: str,
    metric: str,
    values: Mapping[tuple[str, str], Sequence[group.Point]],
) -> bool:
    formats = {s.path: s.format for s in session.sources}
    return any(formats.get(s) in SERVER_FORMATS for s in group.sources_of(values[(config, metric)]))


def _judge(
    h: HypothesisSpec,
    session: Session,
    values: Mapping[tuple[str, str], Sequence[group.Point]],
    settings: dict[str, dict[str, Any]],
    diags: list[dg.Diagnostic],
) -> HypothesisResult:
    a = group.column_of(values.get((h.baseline, h.metric), []))
    b = group.column_of(values.get((h.candidate, h.metric), []))
    j = verdict.judge(a, b, h.direction, h.min_effect, session.alpha, h.metric)
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
        diags.append(
            dg.make(
                "few-samples",
                h.id,
                None,
                f"{h.id}: {len(a)} vs {len(b)} samples; need >= {need} samples on each side to "
                f"detect a difference at alpha level {session.alpha:g}",
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
