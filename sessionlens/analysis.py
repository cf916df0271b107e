"""`analyze(session) -> Analysis`: the JSON report of DESIGN §7 as a pydantic model.

Owns the contract model and the orchestration group → stats → verdict → specmath. Fields
beyond DESIGN §7 (`comparisons`, `runs`, `runs_omitted`, `sources`, `alpha`, `baseline`,
per-metric `unit` and `warnings`) extend it. It must not format numbers: floats stay unrounded.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from . import __version__, _load, group, metrics, specmath, stats, sweep, verdict
from . import diagnostics as dg
from ._made import MadeWhenRead
from .errors import ManifestError, UsageError
from .manifest import HypothesisSpec
from .session import Session

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

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
W_SWEPT = "swept"  # a config's metric at several load points: its level is per point
# Samples from which the summaries are made on two threads (`_summaries`).
_PARALLEL_FROM = 1 << 20


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OutlierRef(_Model):
    source: str
    line: int
    value: float


class Outliers(MadeWhenRead[OutlierRef]):
    """A metric's outliers (`MetricSummary.outliers`), in the order flagged: `OutlierRef`s,
    held as columns until read.

    A day-long log flags hundreds of thousands of values (690,019 in a 1 GB SGLang 0.4.0
    log). As models they take about 400 bytes each, with their (source, line, value) triple;
    here they take 24: the names of their sources once, and per outlier the number of its
    source, its line and its value. The models are made when the sequence is read (indexed,
    iterated, compared); dumping it (`model_dump`, the JSON report) gives a dict each, as
    `list[OutlierRef]` dumps, and makes no model. A field of this type validates a list of
    `OutlierRef`s (or of their dicts) as well, and equals the list of the same refs.
    """

    __slots__ = ("_lines", "_made", "_names", "_sources", "_values")
    _item = OutlierRef

    def __init__(self, refs: Iterable[OutlierRef] = ()) -> None:
        self._made: list[OutlierRef] | None = list(refs)
        self._names: list[str] = []
        self._sources: npt.NDArray[np.int64] | None = None
        self._lines: npt.NDArray[np.int64] | None = None
        self._values: npt.NDArray[np.float64] | None = None

    @classmethod
    def of_columns(
        cls,
        names: list[str],
        sources: npt.NDArray[np.int64],
        lines: npt.NDArray[np.int64],
        values: npt.NDArray[np.float64],
    ) -> Outliers:
        """Outliers from columns of equal length: each one's source (an index into `names`),
        line and value."""
        if not len(sources) == len(lines) == len(values):
            raise ValueError("the columns of outliers differ in length")
        out = cls()
        out._made = None
        out._names = names
        out._sources, out._lines, out._values = sources, lines, values
        return out

    def _triples(self) -> tuple[list[str], list[int], list[float]]:
        """Every outlier's source, line and value from the columns, as Python objects (no
        model made)."""
        assert self._sources is not None
        assert self._lines is not None
        assert self._values is not None
        names = self._names
        return (
            [names[i] for i in self._sources.tolist()],
            self._lines.tolist(),
            self._values.tolist(),
        )

    def _dumped(self) -> list[dict[str, Any]]:
        """As `list[OutlierRef]` dumps (a dict each, in the fields' order), making no model."""
        if self._made is not None:
            return [o.model_dump() for o in self._made]
        return [
            {"source": s, "line": n, "value": v} for s, n, v in zip(*self._triples(), strict=True)
        ]

    def _all(self) -> list[OutlierRef]:
        if self._made is None:
            self._made = _outlier_refs(zip(*self._triples(), strict=True))
            self._sources = self._lines = self._values = None
            self._names = []
        return self._made

    def __len__(self) -> int:
        if self._made is not None:
            return len(self._made)
        assert self._values is not None
        return len(self._values)


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
    outliers: Outliers = Field(default_factory=Outliers)
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
    # v0.2: per load point of a sweep, {load: {metric: summary}} (DESIGN §5)
    points: dict[str, dict[str, MetricSummary]] = Field(default_factory=dict)


class PointResult(_Model):
    """A hypothesis judged at one load point."""

    load: str
    verdict: Literal["supported", "rejected", "inconclusive"]
    change: float | None
    ci_low: float | None
    ci_high: float | None
    verdict_raw: Literal["supported", "rejected", "inconclusive"] | None = None
    holm_level: float | None = None
    reason: str = ""


class UnpairedPoint(_Model):
    """A load point only one of two compared configs has (listed, not compared)."""

    metric: str
    config: str
    load: str | None


class CapacityResult(_Model):
    """SLO capacity of a swept config (DESIGN §5): `bound` says how it was found."""

    mean: float | None
    bound: Literal["interpolated", "beyond", "below", "unknown"]
    at: str | None = None
    towards: str | None = None
    limit: str | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    launches: int = 0


class CurvePoint(_Model):
    load: str
    throughput: float
    latency: float


class ParetoResult(_Model):
    """A swept config's throughput–latency curve and the load points on its front."""

    config: str
    throughput_metric: str
    latency_metric: str
    points: list[CurvePoint]
    front: list[str]


class DominanceResult(_Model):
    """`better` has at least the throughput at no more latency at every common point."""

    better: str
    worse: str
    points: list[str]


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
    points: list[PointResult] = Field(default_factory=list)


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
    load: str | None = None  # the load point compared (v0.2 sweeps)


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
    load: str | None = None


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
    # sweeps (DESIGN §5): points compared by only one side, SLO capacity, curves, dominance
    unpaired: list[UnpairedPoint] = Field(default_factory=list)
    slo: dict[str, float] = Field(default_factory=dict)
    capacity: dict[str, dict[str, CapacityResult]] = Field(default_factory=dict)
    pareto: list[ParetoResult] = Field(default_factory=list)
    dominance: list[DominanceResult] = Field(default_factory=list)
    family: int = 0  # the claims × load points Holm's step-down decided together


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
    unit_n = ev.counts
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
    # the outliers' sources, lines and values, taken while the points are held: a summary
    # then reads no key's values a second time
    outlier_refs: Outliers = dataclasses.field(default_factory=Outliers)


def _cell(points: Sequence[group.Point], alpha: float, session: Session) -> _Cell:
    column = group.column_of(points)
    s = stats.summarize(column, alpha, flag=False)
    names: list[str] = []
    out: list[stats.LaunchStat] = []
    flagged: list[int] = []
    for lv in group.by_launch(points, session.launches, session.series_sources, column):
        if not bool(_np().isfinite(lv.values).any()):
            continue
        st = stats.launch_stat(lv.values, lv.series)
        names.append(lv.name)
        out.append(st)
        if st.outliers:  # the launch's positions made the config's, in one gather
            flagged.extend(lv.at(st.outliers))
    outliers = tuple(sorted(flagged))
    return _Cell(
        s,
        tuple(names),
        tuple(out),
        outliers,
        stats.print_step(column),
        _outliers_of(points, outliers),
    )


def _outliers_of(points: Sequence[group.Point], positions: Sequence[int]) -> Outliers:
    """The points at these positions as `Outliers` (columns: no `Point` made of a
    `PointList`)."""
    if not positions:
        return Outliers()
    codes: dict[str, int] = {}
    at = _take(points, _np().array(positions, _np().int64))
    sources, lines, values = group.columns_of(at, codes)
    return Outliers.of_columns(list(codes), sources, lines, values)


def _np() -> Any:
    import numpy as np

    return np


Key = tuple[str, str, str | None]  # (config, metric, load point)
# load points and their positions (None: a load that holds every value, `group.by_load`)
Parts = dict[tuple[str, str], list[tuple[str | None, Any]]]


def _cell_group(
    points: Sequence[group.Point], alpha: float, session: Session
) -> list[tuple[str | None, Any, _Cell]]:
    """A config's metric split by load point (never pooled across points), a cell each."""
    parts = group.by_load(points, session.loads)
    if len(parts) == 1:
        load, pos = parts[0]
        return [(load, pos, _cell(points, alpha, session))]
    return [(load, pos, _cell(_take(points, pos), alpha, session)) for load, pos in parts]


def _take(points: Sequence[group.Point], positions: Any) -> Sequence[group.Point]:
    if isinstance(points, group.PointList):
        return points.take(positions)
    return [points[i] for i in positions.tolist()]


class _Stopped(Exception):
    """A summary not begun: another one raised first."""


class _Summaries:
    """The cells of keys summarised on two threads (a big session's), each begun as soon as
    its values can be had: as a drained table's keys are made (`made`, while the main thread
    makes the next keys' with numpy, which lets go of the GIL), or read key by key in the
    worker (`group._ByKey`: polars, which lets go of it too). Once a summary has raised, the
    others begin none. A context: on leaving, the cells not begun are cancelled and the
    threads let go of."""

    def __init__(self, alpha: float, session: Session, enabled: bool = True) -> None:
        self.alpha = alpha
        self.session = session
        self.pool = (
            ThreadPoolExecutor(2, thread_name_prefix="sessionlens-summary") if enabled else None
        )
        self.begun: dict[tuple[str, str], Future[list[tuple[str | None, Any, _Cell]]]] = {}
        self.stop = threading.Event()

    def start(self, key: tuple[str, str], get: Callable[[], Sequence[group.Point]]) -> None:
        """Summarise the values `get` gives, on a worker."""
        if self.pool is not None:
            self.begun[key] = self.pool.submit(self._one, get)

    def made(self, key: tuple[str, str], points: group.PointList) -> None:
        """A key's values, made (`group.values_by_config`'s `made`)."""
        self.start(key, lambda: points)

    def _one(self, get: Callable[[], Sequence[group.Point]]) -> list[tuple[str | None, Any, _Cell]]:
        if self.stop.is_set():  # another summary raised: a worker begins no other
            raise _Stopped
        try:
            return _cell_group(get(), self.alpha, self.session)
        except BaseException:
            self.stop.set()
            raise

    def results(self, keys: list[tuple[str, str]]) -> list[list[tuple[str | None, Any, _Cell]]]:
        """The keys' cells in order; the first exception in key order raised (the workers
        take the keys in order, so those stopped come after it)."""
        for key in keys:
            if (e := self.begun[key].exception()) is not None and not isinstance(e, _Stopped):
                raise e
        return [self.begun[key].result() for key in keys]

    def __enter__(self) -> _Summaries:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=exc[0] is None, cancel_futures=True)


def _cells(
    values: group.Values,
    alpha: float,
    big: bool,
    session: Session,
    early: _Summaries | None = None,
) -> tuple[dict[Key, _Cell], Parts]:
    """The cell of every (config, metric, load point). A big session's are made two keys at
    a time: while one is summed (Python, holding the GIL), the next one's values are read
    (polars, one key at a time: `group._ByKey`) and ordered (numpy), which let go of it. The
    values of two keys at most are in flight. The cells `early` began as the values were
    made are taken from it."""
    keys = list(values)
    if early is not None and early.begun and all(key in early.begun for key in keys):
        done = early.results(keys)
    elif not big:
        done = [_cell_group(values[key], alpha, session) for key in keys]
    else:
        with _Summaries(alpha, session) as summaries:
            for key in keys:
                summaries.start(key, lambda key=key: values[key])  # type: ignore[misc]
            done = summaries.results(keys)
    cells: dict[Key, _Cell] = {}
    parts: Parts = {}
    for key, found in zip(keys, done, strict=True):
        parts[key] = [(load, pos) for load, pos, _ in found]
        for load, _, cell in found:
            cells[(key[0], key[1], load)] = cell
    return cells, parts


class _Levels:
    """Per metric: its print resolution, its launch noise, and every config's level."""

    def __init__(
        self, cells: dict[Key, _Cell], parts: Parts, values: group.Values, session: Session
    ) -> None:
        self.cells = cells
        self.parts = parts
        self.values = values
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

    def add_derived(
        self,
        metric: str,
        by_config: Mapping[str, tuple[tuple[stats.LaunchStat, ...], float | None]],
    ) -> None:
        """A metric derived per launch (SLO capacity): its cells, noise and levels; a
        config's level takes the given estimate where one is given."""
        np = _np()
        for config, (found, _) in by_config.items():
            values = np.asarray([s.mean for s in found], dtype=np.float64)
            summary = stats.summarize(values, self.alpha, flag=False)
            names = tuple(f"{config}#{i + 1}" for i in range(len(found)))
            self.cells[(config, metric, None)] = _Cell(summary, names, found, (), None)
            self.floored[(config, metric, None)] = found
            self.parts[(config, metric)] = [(None, None)]
        self.steps[metric] = None
        noise = stats.launch_noise([found for found, _ in by_config.values()], None)
        self.noise[metric] = noise
        for config, (found, estimate) in by_config.items():
            level = stats.level(found, noise, config)
            if estimate is not None and level.mean is not None:
                level = dataclasses.replace(level, mean=estimate)
            self.levels[(config, metric, None)] = level

    def points(self, key: Key) -> Sequence[group.Point]:
        """The values of one (config, metric, load point)."""
        found = self.parts[(key[0], key[1])]
        pts = self.values[(key[0], key[1])]
        if len(found) == 1:
            return pts
        pos = next(p for load, p in found if load == key[2])
        return _take(pts, pos)

    def loads(self, config: str, metric: str) -> list[str | None]:
        """The load points of a config's metric, in sweep order."""
        return [load for load, _ in self.parts.get((config, metric), [])]

    def side(self, key: Key) -> verdict.Side:
        """A hypothesis' side: its launches, its samples, and both without its outliers."""
        cell = self.cells[key]
        launches = self.floored[key]
        if (key[0], key[1]) not in self.values:  # a derived metric: a value per launch
            return verdict.Side(launches, [s.mean for s in launches])
        points = self.points(key)
        column = group.column_of(points)
        if not cell.outliers:
            return verdict.Side(launches, column)
        np = _np()
        keep = np.ones(len(points), dtype=bool)
        keep[list(cell.outliers)] = False
        step = self.steps[key[1]]
        clean = []
        for lv in group.by_launch(
            points, self.session.launches, self.session.series_sources, column
        ):
            rest = lv.values[lv.taken(keep)]
            if len(rest) and bool(np.isfinite(rest).any()):
                clean.append(stats.floored(stats.launch_stat(rest, lv.series), step))
        samples = np.asarray(column, dtype=np.float64)[keep]
        return verdict.Side(launches, column, tuple(clean), samples)

    def summary(self, config: str, metric: str) -> MetricSummary:
        """A config's metric: its one load point's level, or a swept metric described."""
        loads = self.loads(config, metric)
        if len(loads) == 1:
            return self.level_summary((config, metric, loads[0]))
        pts = self.values[(config, metric)]
        s = stats.summarize(group.column_of(pts), self.alpha, flag=False)
        cells = [self.cells[(config, metric, load)] for load in loads]
        return MetricSummary(
            n=s.n,
            mean=None,  # no level across load points: see the config's `points`
            median=s.median,
            stdev=s.stdev,
            cv=s.cv,
            ci_low=None,
            ci_high=None,
            min=s.min,
            max=s.max,
            unit=metrics.get(metric).unit,
            warnings=list(dict.fromkeys([*s.warnings, W_SWEPT])),
            launches=max(len(c.stats) for c in cells),
            n_eff=None,
            warmup_dropped=sum(st.warmup for c in cells for st in c.stats),
        )

    def level_summary(self, key: Key) -> MetricSummary:
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
            outliers=cell.outlier_refs,
            unit=metrics.get(key[1]).unit,
            warnings=list(dict.fromkeys(warnings)),
            launches=lv.launches,
            n_eff=lv.n_eff if lv.launches else None,
            warmup_dropped=lv.warmup,
        )


def _outlier_refs(refs: Iterable[tuple[str, int, float]]) -> list[OutlierRef]:
    """The models of (source, line, value) triples, made with Python's cyclic collector
    paused: a day-long log flags a hundred thousand values, a collection while they are made
    walks the whole heap (it doubled the time), and none of them is part of a cycle."""
    import gc

    paused = gc.isenabled()
    gc.disable()
    # The triples are typed already (str, int, float: `Outliers`): constructed, not
    # validated, with one set of fields set shared by all (pydantic's `model_copy` copies it
    # before it changes it), 270 bytes a model instead of 490
    every = set(OutlierRef.model_fields)
    make = OutlierRef.model_construct
    try:
        return [make(every, source=src, line=line, value=value) for src, line, value in refs]
    finally:
        if paused:
            gc.enable()


def analyze(session: Session, *, consume: bool = False) -> Analysis:
    """Statistics, verdicts and economics of a loaded session (`load_session`), as the
    `Analysis` pydantic model, which is the JSON report's contract (DESIGN §7): per-config
    and per-load-point statistics on launches, comparisons with the baseline, a verdict per
    hypothesis with its reason and assumptions (DESIGN §5), sweeps, and the
    speculative-decoding economics. Fields that cannot be computed are None, with the reason
    in the report's notes or diagnostics. Pure: nothing is read or written.

    With `consume`, a big session's sample table is let go of as its values are read
    (`SampleColumns.drain`), so that a day-long log's samples are not held twice: the
    session's `samples` are then empty. For a caller done with them (`sessionlens report`).

    Raises `ManifestError` when a hypothesis' `at` names no single load point, and
    `UsageError` for a command-line hypothesis that cannot be judged as written.
    """
    # the metrics asked for again after their summaries (comparisons, economics, claims)
    keep = _ASKED_AGAIN | {h.metric for h in session.hypotheses}
    big = len(session.columns) > _PARALLEL_FROM  # counted before `consume` drains it
    alpha = session.alpha
    with _Summaries(alpha, session, big and consume) as early:
        values = group.values_by_config(session, keep=keep, consume=consume, made=early.made)
        cells, parts = _cells(values, alpha, big, session, early)
    names = [c.name for c in session.configs]
    settings = {c.name: session.config_settings(c.name) for c in session.configs}
    diags: list[dg.Diagnostic] = list(session.diagnostics)
    lv = _Levels(cells, parts, values, session)
    capacities = _capacities(lv, session)
    configs: list[ConfigResult] = []
    for spec in session.configs:
        metric_names = [m for (c, m) in values if c == spec.name]
        own = [s.path for s in session.sources if session.source_config.get(s.path) == spec.name]
        summaries = {m: lv.summary(spec.name, m) for m in metric_names}
        for m, cap in capacities.get(spec.name, {}).items():
            if cap.summary is not None:
                summaries[m] = cap.summary
        points: dict[str, dict[str, MetricSummary]] = {}
        for m in metric_names:
            for load in lv.loads(spec.name, m):
                if load is not None:
                    points.setdefault(load, {})[m] = lv.level_summary((spec.name, m, load))
        configs.append(
            ConfigResult(
                name=spec.name,
                label=spec.label,
                settings=settings[spec.name],
                sources=own,
                metrics=summaries,
                launches=len({n for p in own for _, n in session.launches.get(p, [])}),
                points=dict(sorted(points.items(), key=lambda kv: _load.order_key(kv[0]))),
            )
        )
    by_name = {c.name: c for c in configs}

    baseline = session.baseline or (names[0] if names else None)
    claims = [_claim(h, lv, alpha) for h in session.hypotheses]
    flat = [ev for c in claims for _, ev in c.members]
    judged = iter(verdict.family(flat, alpha))
    hyps = [
        _hypothesis(h, c, [next(judged) for _ in c.members], session, settings, diags)
        for h, c in zip(session.hypotheses, claims, strict=True)
    ]
    holm = stats.holm([h.p_welch for h in hyps])
    hyps = [h.model_copy(update={"p_holm": p}) for h, p in zip(hyps, holm, strict=True)]

    comparisons: list[ComparisonResult] = []
    unpaired: list[UnpairedPoint] = []
    if baseline is not None:
        wanted = [m for m in HEADLINE if (baseline, m) in values][:1]
        for h in session.hypotheses:  # one row per metric, however many claims name it
            if h.metric not in wanted and (baseline, h.metric) in values:
                wanted.append(h.metric)
        for name in names:
            if name == baseline:
                continue
            for m in wanted:
                if (baseline, m) not in values or (name, m) not in values:
                    continue
                pairs, alone = _paired(lv, baseline, name, m)
                unpaired.extend(UnpairedPoint(metric=m, config=c, load=load) for c, load in alone)
                for la, lb in pairs:
                    ev = verdict.weigh(
                        lv.side((baseline, m, la)),
                        lv.side((name, m, lb)),
                        lv.noise[m],
                        "increase",
                        0.0,
                        alpha,
                        m,
                    )
                    row = comparison_result(ev, m, baseline, name)
                    comparisons.append(row.model_copy(update={"load": _pair_name(la, lb)}))

    run_metrics = [m for m in HEADLINE if any((n, m) in values for n in names)][:1]
    runs: list[RunRow] = []
    runs_omitted: dict[str, int] = {}
    for name in names:
        for m in run_metrics:
            pts: Sequence[group.Point] = values.get((name, m), [])
            if len(pts) > RUNS_LISTED:
                runs_omitted[name] = len(pts)
                continue
            summary = by_name[name].metrics.get(m)
            held = [
                *([summary] if summary is not None else []),
                *(by[m] for by in by_name[name].points.values() if m in by),
            ]
            flagged = {(o.source, o.line) for s in held for o in s.outliers} if pts else set()
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
                    load=session.loads.get((p.source, p.block)) if p.block is not None else None,
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
            values_at = ", ".join(f"{_show(v)} in {', '.join(ls)}" for v, ls in by_launch)
            diags.append(
                dg.make(
                    "mixed-settings",
                    name,
                    None,
                    f"config {name}: its launches differ in {key} ({values_at}); its statistics "
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

    curves, dominance = _pareto(lv, names)
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
        unpaired=list(dict.fromkeys(unpaired)),
        slo=dict(session.slo),
        capacity={c: {m: cap.result for m, cap in by.items()} for c, by in capacities.items()},
        pareto=curves,
        dominance=dominance,
        family=len(flat),
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


def _hypothesis(
    h: HypothesisSpec,
    claim: _Claim,
    judged: list[verdict.Judgement],
    session: Session,
    settings: dict[str, dict[str, Any]],
    diags: list[dg.Diagnostic],
) -> HypothesisResult:
    points: list[PointResult] = []
    if not judged:
        j = verdict.empty(h.metric, h.direction, h.min_effect, session.alpha)
    else:
        j, points = _overall(h, claim, judged)
    on_points = any(load is not None for load, _ in claim.members)
    ignore = _load.LOAD_KEYS if on_points else ()
    found = group.confounds(settings[h.baseline], settings[h.candidate], h.varies, ignore)
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
    if stats.W_FEW in j.warnings and j.unit == "sample":
        need = stats.min_samples(session.alpha)
        diags.append(
            dg.make(
                "few-samples",
                h.id,
                None,
                f"{h.id}: {j.n_baseline} vs {j.n_candidate} samples; need >= {need} on each side "
                f"for a Mann–Whitney test to detect a difference at alpha level "
                f"{session.alpha:g}",
            )
        )
    return hypothesis_result(j, h, found).model_copy(update={"points": points})


# ---------------------------------------------------------------- sweeps (DESIGN §5)


def _matches(load: str, at: Mapping[str, str]) -> bool:
    pairs = _load.parse_load(load)
    return all(pairs.get(k) == v for k, v in at.items())


def _paired(
    lv: _Levels, a: str, b: str, metric: str
) -> tuple[list[tuple[str | None, str | None]], list[tuple[str, str | None]]]:
    """The load points two configs are compared at (those both have), and the points only
    one side has (listed, not compared). Two configs measured at one point each are compared
    at those, whichever they are (the confound check says if they differ)."""
    la, lb = lv.loads(a, metric), lv.loads(b, metric)
    common = [load for load in la if load in lb]
    if common:
        alone = [(a, load) for load in la if load not in lb]
        alone += [(b, load) for load in lb if load not in la]
        return [(load, load) for load in common], alone
    if len(la) == 1 and len(lb) == 1:
        return [(la[0], lb[0])], []
    return [], [(a, load) for load in la] + [(b, load) for load in lb]


def _pair_name(la: str | None, lb: str | None) -> str | None:
    if la == lb:
        return la
    return f"{la or '—'} vs {lb or '—'}"


@dataclasses.dataclass(frozen=True, slots=True)
class _Claim:
    """A hypothesis' members (one per load point it is judged at) and the points only one
    side has."""

    members: list[tuple[str | None, verdict.Evidence]]
    alone: list[tuple[str, str | None]]


def _claim(h: HypothesisSpec, lv: _Levels, alpha: float) -> _Claim:
    m = h.metric
    la, lb = lv.loads(h.baseline, m), lv.loads(h.candidate, m)
    if not la or not lb:
        return _Claim([], [])
    pairs: list[tuple[str | None, str | None]]
    alone: list[tuple[str, str | None]]
    if h.at is not None:
        picked: list[str] = []
        for config, loads in ((h.baseline, la), (h.candidate, lb)):
            hits = [load for load in loads if load is not None and _matches(load, h.at)]
            if len(hits) != 1:
                at = ", ".join(f"{k}={v}" for k, v in h.at.items())
                shown = "; ".join(load or "(none)" for load in loads)
                msg = (
                    f"hypothesis {h.id}: `at {at}` must name exactly one load point of "
                    f"{config} on {m}, but matches {len(hits)} (its points: {shown})"
                )
                if h.origin == "cli":
                    raise UsageError(msg)
                raise ManifestError(msg, path="sessionlens.toml", line=h.line)
            picked.append(hits[0])
        pairs, alone = [(picked[0], picked[1])], []
    else:
        pairs, alone = _paired(lv, h.baseline, h.candidate, m)
    members = [
        (
            _pair_name(pa, pb),
            verdict.weigh(
                lv.side((h.baseline, m, pa)),
                lv.side((h.candidate, m, pb)),
                lv.noise[m],
                h.direction,
                h.min_effect,
                alpha,
                m,
                _pair_name(pa, pb),
            ),
        )
        for pa, pb in pairs
    ]
    return _Claim(members, alone)


def _turned_change(j: verdict.Judgement, direction: str) -> float:
    if j.change is None:
        return -math.inf
    return j.change if direction == "increase" else -j.change


def _overall(
    h: HypothesisSpec, claim: _Claim, judged: list[verdict.Judgement]
) -> tuple[verdict.Judgement, list[PointResult]]:
    """A claim judged at several load points: supported where supported at every point,
    rejected where rejected at every point, else inconclusive; its numbers are its least
    favourable point's (DESIGN §5)."""
    loads = [load for load, _ in claim.members]
    points = [
        PointResult(
            load=load or "",
            verdict=j.verdict,
            verdict_raw=j.verdict_raw,
            change=j.change,
            ci_low=j.ci_low,
            ci_high=j.ci_high,
            holm_level=j.holm_level,
            reason=j.reason,
        )
        for load, j in zip(loads, judged, strict=True)
    ]
    if len(judged) == 1 and not claim.alone:
        return judged[0], points if loads[0] is not None else []
    worst = min(range(len(judged)), key=lambda i: _turned_change(judged[i], h.direction))
    verdicts = [j.verdict for j in judged]
    raws = [j.verdict_raw for j in judged]

    def agree(vs: list[verdict.Verdict]) -> verdict.Verdict:
        return vs[0] if len(set(vs)) == 1 and vs[0] != "inconclusive" else "inconclusive"

    overall, overall_raw = agree(verdicts), agree(raws)
    n = len(judged)
    if overall != "inconclusive":
        head = f"{overall.capitalize()} at all {n} load points both configs share"
    else:
        counts = []
        for v in ("supported", "rejected", "inconclusive"):
            at = [loads[i] or "" for i in range(n) if verdicts[i] == v]
            if at:
                counts.append(f"{v} at {len(at)} ({'; '.join(at)})")
        head = f"Of the {n} load points both configs share: " + ", ".join(counts)
    if claim.alone:
        only = "; ".join(f"{load} only in {config}" for config, load in claim.alone if load)
        if only:
            head += f" ({only}: not compared)"
    reason = f"{head}. The least favourable, {loads[worst]}: {judged[worst].reason}"
    main = dataclasses.replace(
        judged[worst], verdict=overall, verdict_raw=overall_raw, reason=reason
    )
    return main, points


@dataclasses.dataclass(frozen=True, slots=True)
class _Capacity:
    result: CapacityResult
    summary: MetricSummary | None


_CAPACITY_OF = {
    "capacity_req_s": "request_throughput_req_s",
    "capacity_output_tok_s": "output_throughput_tok_s",
}


def _capacities(lv: _Levels, session: Session) -> dict[str, dict[str, _Capacity]]:
    """SLO capacity of every swept config (DESIGN §5): from the point levels (the estimate)
    and from each launch's own curve (the spread, where a config has two launches or more);
    the capacity metrics become cells claims can name."""
    slo = session.slo
    if not slo:
        return {}
    out: dict[str, dict[str, _Capacity]] = {}
    derived: dict[str, dict[str, tuple[tuple[stats.LaunchStat, ...], float | None]]] = {}
    for spec in session.configs:
        c = spec.name
        for cap, tput in _CAPACITY_OF.items():
            loads = [load for load in lv.loads(c, tput) if load is not None]
            if len(loads) < 2:
                continue
            level = {load: lv.levels[(c, tput, load)].mean for load in loads}
            lat = {
                m: {load: lv.levels[(c, m, load)].mean for load in lv.loads(c, m) if load}
                for m in slo
            }
            est = sweep.capacity(
                loads,
                {k: v for k, v in level.items() if v is not None},
                {m: {k: v for k, v in by.items() if v is not None} for m, by in lat.items()},
                slo,
            )
            per_launch = _launch_capacities(lv, c, tput, loads, slo)
            found = [stats.launch_stat([v], series=False) for v in per_launch]
            derived.setdefault(cap, {})[c] = (tuple(found), est.value)
            out.setdefault(c, {})[cap] = _Capacity(
                CapacityResult(
                    mean=est.value,
                    bound=est.bound,
                    at=est.at,
                    towards=est.towards,
                    limit=est.limit,
                    launches=len(per_launch),
                ),
                None,
            )
    for cap, by_config in derived.items():
        lv.add_derived(cap, by_config)
        for c in by_config:
            result = out[c][cap].result
            summary = lv.level_summary((c, cap, None)) if (c, cap, None) in lv.levels else None
            if summary is not None:
                summary = summary.model_copy(update={"mean": result.mean})
                if result.mean is None:
                    summary = summary.model_copy(update={"ci_low": None, "ci_high": None})
                result = result.model_copy(
                    update={"ci_low": summary.ci_low, "ci_high": summary.ci_high}
                )
            out[c][cap] = _Capacity(result, summary)
    return out


def _launch_capacities(
    lv: _Levels, config: str, tput: str, loads: list[str], slo: Mapping[str, float]
) -> list[float]:
    """The capacity each launch's own curve gives (launches measured at every point)."""
    means: dict[str, dict[tuple[str, str], float]] = {}
    for m in (tput, *slo):
        for load in loads:
            key = (config, m, load)
            if key not in lv.cells:
                return []
            for name, st in zip(lv.cells[key].launches, lv.floored[key], strict=True):
                means.setdefault(name, {})[(m, load)] = st.mean
    out = []
    for by in means.values():
        if len(by) != (1 + len(slo)) * len(loads):
            continue  # not measured at every point
        cap = sweep.capacity(
            loads,
            {load: by[(tput, load)] for load in loads},
            {m: {load: by[(m, load)] for load in loads} for m in slo},
            slo,
        )
        if cap.value is not None:
            out.append(cap.value)
    return out


# The latency a throughput–latency curve is drawn against, in order of preference.
_PARETO_LATENCY = ("tpot_ms_median", "tpot_ms_mean", "itl_ms_median", "itl_ms_mean")
_PARETO_THROUGHPUT = "output_throughput_tok_s"


def _pareto(lv: _Levels, names: list[str]) -> tuple[list[ParetoResult], list[DominanceResult]]:
    """Every swept config's throughput–latency curve, its front, and who dominates whom."""
    latency = next(
        (m for m in _PARETO_LATENCY if any(len(lv.loads(n, m)) > 1 for n in names)), None
    )
    if latency is None:
        return [], []
    curves: dict[str, dict[str, tuple[float, float]]] = {}
    for n in names:
        loads = [load for load in lv.loads(n, _PARETO_THROUGHPUT) if load is not None]
        if len(loads) < 2:
            continue
        curve: dict[str, tuple[float, float]] = {}
        for load in loads:
            t, lat = lv.levels[(n, _PARETO_THROUGHPUT, load)].mean, None
            if (n, latency, load) in lv.levels:
                lat = lv.levels[(n, latency, load)].mean
            if t is not None and lat is not None:
                curve[load] = (t, lat)
        if curve:
            curves[n] = curve
    results = [
        ParetoResult(
            config=n,
            throughput_metric=_PARETO_THROUGHPUT,
            latency_metric=latency,
            points=[CurvePoint(load=k, throughput=t, latency=lat) for k, (t, lat) in c.items()],
            front=sweep.pareto_front(c),
        )
        for n, c in curves.items()
    ]
    dominance = []
    for a in curves:
        for b in curves:
            if a != b and (at := sweep.dominates(curves[a], curves[b])) is not None:
                dominance.append(DominanceResult(better=a, worse=b, points=list(at)))
    return results, dominance


def _show(value: Any) -> str:
    return "unset" if value is None else str(value)


def _mean(points: Sequence[group.Point] | None) -> float | None:
    # the mean alone (summarize's): no median, variance or outliers, whose copies of a
    # day-long log's values were the report's peak of memory
    return stats.finite_mean(group.column_of(points or []))


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


def _last_wins(
    key: npt.NDArray[np.int64], line: npt.NDArray[Any], vals: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any], npt.NDArray[np.float64]]:
    """A metric's (source, line) keys, lines and values in key order, as a binary search
    for the last key at or before another reads them: of a run of equal keys (several
    values on one line) only the last is ever found, and it holds the run's largest value
    (what sorting by value within the key would put last; NaN the largest, as numpy sorts).
    One stable sort, and none when the keys are in order already with ties."""
    import numpy as np

    if not len(key):
        return key, line, vals
    if not bool((key[1:] >= key[:-1]).all()):
        order = np.argsort(key, kind="stable")
        key, line, vals = key[order], line[order], vals[order]
    else:
        vals = vals.copy()
    ends = np.flatnonzero(np.append(key[1:] != key[:-1], True))
    starts = np.append(0, ends[:-1] + 1)
    vals[ends] = np.maximum.reduceat(vals, starts)
    return key, line, vals


def _estimate_cycle(
    name: str, values: Mapping[tuple[str, str], Sequence[group.Point]], bonus_offset: float
) -> float | None:
    """c ≈ 1000·L·R/G per interval (DESIGN §6), L counting the bonus token.

    An `accept_len` value is paired with the last `running_req` and the last
    `gen_throughput_tok_s` value of its source at or before its line (of several on one
    line, the largest: the order of (line, value)), when both lie within `_PAIR_WINDOW`
    lines. In columns, by binary search: a day-long log holds millions of intervals."""
    import numpy as np

    codes: dict[str, int] = {}
    found = []
    for metric in ("accept_len", "running_req", "gen_throughput_tok_s"):
        points = values.get((name, metric))
        if not points:
            return None
        src, lines, vals = group.columns_of(points, codes)
        found.append((src << 32 | lines, lines, vals))  # lines are below 2**32
    (key, line, accept), *others = found
    ok = np.ones(len(key), np.bool_)
    paired = []
    for o_key, o_line, o_vals in others:
        if not bool((o_key[1:] > o_key[:-1]).all()):  # (in order without ties: as they are)
            o_key, o_line, o_vals = _last_wins(o_key, o_line, o_vals)
        at = np.searchsorted(o_key, key, side="right") - 1
        seen = at >= 0
        at = np.maximum(at, 0)
        ok &= seen & (o_key[at] >> 32 == key >> 32) & (line - o_line[at] <= _PAIR_WINDOW)
        paired.append((o_vals, at))
    (run, run_at), (gen, gen_at) = paired
    return specmath.estimate_cycle_ms_mean_columns(
        accept[ok] + bonus_offset, run[run_at[ok]], gen[gen_at[ok]]
    )
