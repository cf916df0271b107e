"""Grouping: config × metric value lists, DP-group combination, settings diff, confounds.

Owns the grouping keys (config, metric; DP groups combined per timestamp with each metric's
`sum`/`mean` rule, DESIGN §3) and the values as columns (`PointList`), the settings that
differ between configs, and the confound rule of DESIGN §4 (with the launch-noise constant).
It must not run statistical tests.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from . import _load, _memory, metrics, stats
from ._codes import present_codes
from ._settings import norm_value as _norm
from ._settings import same_value

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import polars as pl

    from .model import SampleColumns
    from .session import Session

# Settings that change with every launch and never explain a difference (DESIGN §4).
LAUNCH_NOISE: frozenset[str] = frozenset(
    {
        "random_seed",
        "seed",
        "port",
        "host",
        "url",
        "dist_init_addr",
        "nccl_port",
        "metrics_port",
        "api_key",
        "timestamp",
        "date",
        "start_time",
        "tag",
        "run_name",
        "log_dir",
        "log_file",
        "crash_dump_folder",
        "dump_dir",
        "download_dir",
        "file_storage_path",
        "cache_dir",
        "output_file",
        "result_filename",
        "label",
        "vllm_version",
        "sglang_version",
    }
)
_NOISE_PATTERN = re.compile(
    r"(^|[._])(log|logs|dump|dumps|cache_dir|tmp_dir|profile_dir|trace_dir|output_dir)"
    r"(_dir|_path|_file|_folder)?$|(_port|_host|_url|_addr|_timestamp|_time|_date)$|"
    r"(^|[._])(log|dump|trace)_[a-z_]*(path|dir|file|folder)$"
)

# How many times a benchmark ran changes the sample size, not the thing measured (DESIGN §4).
# Facts about how a log counts (not how the server ran) never explain a difference either.
NOT_CONFOUNDS: frozenset[str] = frozenset(
    {
        "num_runs",
        "accept_len_counts_bonus",
        "accept_length_scope",
        "accept_len_derived",
    }
)
# What a run measured that logs print beside its settings (token totals, cache hits, the KV
# pool it got): outcomes, never settings, so never confounds nor settings that differ.
MEASURED: frozenset[str] = frozenset(
    {
        "total_input_tokens",
        "total_input_text_tokens",
        "total_input_vision_tokens",
        "total_output_tokens",
        "total_output_tokens_retokenized",
        "kv_cache_tokens",
        "kv_cache_gb",
        "max_total_num_tokens",
        "cache_total_prompt_tokens",
        "cache_total_cached_tokens",
        "cache_device",
        "cache_host",
    }
)
_MEASURED_ROOTS = ("server_info.", "steady_", "cache_storage_")
_MEASURED_SUFFIX = ("_share",)


def is_measured(key: str) -> bool:
    """Whether a "setting" is in fact something the run measured (see MEASURED)."""
    leaf = key.rsplit(".", 1)[-1]
    return (
        key in MEASURED
        or leaf in MEASURED
        or key.startswith(_MEASURED_ROOTS)
        or (key.startswith("cache_") and key.endswith(_MEASURED_SUFFIX))
    )


# Benchmark parameters: a difference is a confound unless the hypothesis names it (not num_runs).
BENCH_PARAMS: frozenset[str] = frozenset(
    {
        "max_tokens",
        "warmup",
        "request_rate",
        "max_concurrency",
        "dataset_name",
        "dataset",
        "input_len",
        "output_len",
        "random_input_len",
        "random_output_len",
        "random_range_ratio",
        "sharegpt_output_len",
        "num_prompts",
        "batch_size",
        "burstiness",
    }
)


def is_noise(key: str) -> bool:
    """Whether a setting is launch noise (ports, hosts, seeds, log/dump/cache paths, times)."""
    leaf = key.rsplit(".", 1)[-1]
    return key in LAUNCH_NOISE or leaf in LAUNCH_NOISE or bool(_NOISE_PATTERN.search(key))


class Point(NamedTuple):
    """One value of a config's metric, with where it was read."""

    value: float
    source: str
    line: int
    run: int | None
    block: int | None


class Ints:
    """A column of ints or None (the runs or blocks of points), as a numpy array and a mask
    of the None: 5 bytes a point, where a list holds an object (~36 bytes)."""

    __slots__ = ("_none", "_values")

    def __init__(self, values: npt.NDArray[np.int32], none: npt.NDArray[np.bool_]) -> None:
        self._values = values
        self._none = none

    def __len__(self) -> int:
        return len(self._values)

    @overload
    def __getitem__(self, i: int) -> int | None: ...

    @overload
    def __getitem__(self, i: slice) -> Ints: ...

    def __getitem__(self, i: int | slice) -> int | Ints | None:
        if isinstance(i, slice):
            return Ints(self._values[i], self._none[i])
        return None if self._none[i] else int(self._values[i])

    def take(self, positions: npt.NDArray[np.int64]) -> Ints:
        return Ints(self._values[positions], self._none[positions])

    def tolist(self) -> list[int | None]:
        return [
            None if n else v
            for v, n in zip(self._values.tolist(), self._none.tolist(), strict=True)
        ]


class PointList(Sequence[Point]):
    """The values of one config's metric, in file order, held as columns.

    A day-long server log gives millions of values: as `Point` objects they would take
    ~100 bytes each, as columns they take ~20. `Point`s are made on demand; `values`,
    `sources` and `lines` give whole columns at once.

    With a `scale` k, `values` are 32-bit integers m, each value m / 10**k bit for bit (as
    the sample table holds them, `model.unscaled`): half the bytes while every key's values
    are held, the doubles made (numpy divides, correctly rounded) when a key is read.
    """

    __slots__ = ("_blocks", "_lines", "_names", "_runs", "_scale", "_sources", "_store")

    def __init__(
        self,
        values: npt.NDArray[np.float64] | npt.NDArray[np.int32],
        sources: npt.NDArray[np.integer[Any]],
        names: list[str],
        lines: npt.NDArray[np.integer[Any]],
        runs: Ints | None,
        blocks: Ints | None,
        scale: int | None = None,
    ) -> None:
        self._store = values
        self._scale = scale
        self._sources = sources  # index into names
        self._names = names
        self._lines = lines
        self._runs = runs  # None: all None
        self._blocks = blocks

    @classmethod
    def empty(cls) -> PointList:
        """A list without points."""
        import numpy as np

        none = np.zeros(0, np.int64)
        return cls(np.zeros(0, np.float64), none, [], none, None, None)

    @property
    def _values(self) -> npt.NDArray[np.float64]:
        """Every value, as doubles (made from the scaled integers, where held so)."""
        values: npt.NDArray[np.float64] = _doubles(self._store, self._scale)
        return values

    def __len__(self) -> int:
        return len(self._store)

    @overload
    def __getitem__(self, i: int) -> Point: ...

    @overload
    def __getitem__(self, i: slice) -> PointList: ...

    def __getitem__(self, i: int | slice) -> Point | PointList:
        if isinstance(i, slice):
            return PointList(
                self._store[i],
                self._sources[i],
                self._names,
                self._lines[i],
                None if self._runs is None else self._runs[i],
                None if self._blocks is None else self._blocks[i],
                self._scale,
            )
        held = self._store[i]
        return Point(
            float(_doubles(held, self._scale)),
            self._names[int(self._sources[i])],
            int(self._lines[i]),
            None if self._runs is None else self._runs[i],
            None if self._blocks is None else self._blocks[i],
        )

    def take(self, positions: npt.NDArray[np.int64]) -> PointList:
        """The points at these positions, in that order."""
        return PointList(
            self._store[positions],
            self._sources[positions],
            self._names,
            self._lines[positions],
            None if self._runs is None else self._runs.take(positions),
            None if self._blocks is None else self._blocks.take(positions),
            self._scale,
        )

    def __iter__(self) -> Iterator[Point]:
        names = self._names
        n = len(self._store)
        runs = self._runs.tolist() if self._runs is not None else [None] * n
        blocks = self._blocks.tolist() if self._blocks is not None else [None] * n
        sources = [names[c] for c in self._sources.tolist()]
        return map(Point, self._values.tolist(), sources, self._lines.tolist(), runs, blocks)

    def __repr__(self) -> str:
        return f"PointList({len(self)} points)"

    @property
    def values(self) -> list[float]:
        """Every value, in order."""
        return self._values.tolist()  # type: ignore[no-any-return]

    @property
    def sources(self) -> list[str]:
        """Every value's source, in order."""
        return [self._names[c] for c in self._sources.tolist()]

    @property
    def lines(self) -> list[int]:
        """Every value's line, in order."""
        return self._lines.tolist()  # type: ignore[no-any-return]


Values = Mapping[tuple[str, str], PointList]


def values_of(points: Sequence[Point]) -> list[float]:
    """The values of points, in order (a `PointList` gives its column: no `Point`s made)."""
    if isinstance(points, PointList):
        return points.values
    return [p.value for p in points]


def column_of(points: Sequence[Point]) -> stats.Values:
    """The values of points as one column: a `PointList`'s float64 array (no copy), else a
    list. For `stats`, which computes large inputs on arrays."""
    if isinstance(points, PointList):
        return points._values
    return [p.value for p in points]


def columns_of(
    points: Sequence[Point], codes: dict[str, int]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Source codes, lines and values of points as numpy columns (no `Point`s made of a
    `PointList`). Sources are numbered in `codes`, which is extended with new names, so
    that columns of several lists share one numbering."""
    import numpy as np

    if isinstance(points, PointList):
        local = np.array([codes.setdefault(n, len(codes)) for n in points._names], np.int64)
        src = local[points._sources] if len(local) else np.zeros(0, np.int64)
        return src, points._lines.astype(np.int64), points._values
    src = np.array([codes.setdefault(p.source, len(codes)) for p in points], np.int64)
    lines = np.array([p.line for p in points], np.int64)
    return src, lines, np.array([p.value for p in points], np.float64)


def sources_of(points: Sequence[Point]) -> set[str]:
    """The sources the points were read from."""
    if isinstance(points, PointList):
        return set(points.sources)
    return {p.source for p in points}


# Up to this many samples, every key's values are held at once (~24 bytes a sample). Above
# it, keys are read when asked, two at a time (`analysis._summaries`): at 4.4 million
# samples the report then peaks at 410 MB instead of 600 MB, for 1% more time.
HOLD_ALL_ROWS = 1 << 20


def values_by_config(
    session: Session,
    keep: Collection[str] = (),
    consume: bool = False,
    made: Callable[[tuple[str, str], PointList], None] | None = None,
) -> Values:
    """Values per (config, metric) in file order, DP groups combined per timestamp.

    Works on the packed sample table (strings as categoricals, never as string columns),
    and skips the combination where it cannot change anything: when every source has at
    most one rank (the TP-rank rule already kept one line per batch), each timestamp's
    group is a single row, whose sum or mean is itself. Then, beyond `HOLD_ALL_ROWS` samples,
    a key's values are read from the table when asked (`_ByKey`): the millions of values of
    a day-long log are not held a second time next to the table; those of the metrics in
    `keep` are kept once read (the caller asks for them again), the others read again if
    asked again. Below it every key's values are read in one pass (faster).

    With `consume`, a big table is drained instead (`SampleColumns.drain`): one pass puts
    each part's rows under their key and lets the part go, then each key's values are
    made (DP groups combined) and its rows let go. Every key's values are then held, and
    the table is empty: for a caller done with the session's samples. `made` is then told
    of each key's values as soon as they are made (while the next keys are made), in the
    order of the mapping returned.
    """
    import polars as pl

    columns = session.columns
    if len(columns) == 0:
        return {}
    keyed_rows = pl.col("ts").is_not_null() & pl.col("rank").is_not_null()
    frames: Iterable[pl.DataFrame]
    multi = any(len(ranks) > 1 for ranks in columns.keyed_ranks().values())
    # rows of ranks combined as read (`_rankfold`): the rows left were of a table that had
    # ranks to combine, and are combined as they would have been
    multi = multi or columns.folded
    if len(columns) > HOLD_ALL_ROWS:
        if consume:
            return _drained(columns, multi, made)
        return _ByKey(columns, frozenset(keep), combine=multi)
    if not multi:
        frames = columns.frames(categorical=True)  # part by part: memory stays small
    else:
        df = columns.lazy(categorical=True).with_row_index("_order").collect()
        frames = [_combine(df, keyed_rows)]
    found: dict[tuple[str, str], _Gathered] = {}
    for frame in _batched(frames):
        for part in frame.partition_by(["config", "metric"], maintain_order=True):
            key = (str(part["config"][0]), str(part["metric"][0]))
            found.setdefault(key, _Gathered()).add(part)
    # each key's parts are let go once joined: the parts and the joined columns of every
    # key are never held at once
    return {key: found.pop(key).points() for key in list(found)}


# the columns `_Gathered.add` reads
_POINT = ("source", "value", "line", "run", "block")


class _ByKey(Mapping[tuple[str, str], PointList]):
    """The values of each (config, metric) of a packed table, read from it when asked (one
    polars filter per part, run at once), DP groups combined (`combine`: a key's rows at
    once, as `_combine` combines the whole table). The values of metrics in `keep` are kept
    once read; of the others, the last key asked for (asked twice in a row, it is read once).
    Two threads may ask (`analysis._summaries`), but one key is read at a time: a read
    uses every polars thread already, and two at once held twice its buffers (+128 MB at
    the 15 million samples of a 1 GB TP1 log with 8 polars threads, +50 MB with 2)."""

    def __init__(self, columns: SampleColumns, keep: frozenset[str], combine: bool = False) -> None:
        import polars as pl

        self._keep = keep
        self._combine = combine
        self._parts = columns.lazy_parts(categorical=True)
        keys: dict[tuple[str, str], None] = {}
        found = pl.collect_all(
            [lf.select("config", "metric").unique(maintain_order=True) for lf in self._parts]
        )
        for frame in found:
            for c, m in frame.iter_rows():
                keys[(str(c), str(m))] = None
        self._keys = keys
        self._kept: dict[tuple[str, str], PointList] = {}
        self._lock = threading.Lock()  # guards `_kept`
        self._reading = threading.Lock()  # one key read at a time

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __getitem__(self, key: tuple[str, str]) -> PointList:
        import polars as pl

        with self._lock:
            got = self._kept.get(key)
        if got is None:
            if key not in self._keys:
                raise KeyError(key)
            config, metric = key
            rows = (pl.col("config") == config) & (pl.col("metric") == metric)
            wanted = [*_POINT, "config", "metric", "ts", "rank"] if self._combine else _POINT
            with self._reading:
                parts = pl.collect_all([lf.filter(rows).select(wanted) for lf in self._parts])
                got = _key_points(parts, key, self._combine)
        with self._lock:  # keys may be asked for from two threads (`analysis._summaries`)
            for k in [k for k in self._kept if k != key and k[1] not in self._keep]:
                del self._kept[k]
            self._kept[key] = got
        return got


def _key_points(
    parts: list[pl.DataFrame],
    key: tuple[str, str],
    combine: bool,
    cache: _GroupCache | None = None,
    scales: list[int | None] | None = None,
) -> PointList:
    """One key's values from its rows in parts (in order; the columns of `_POINT`, and with
    `combine` also `ts` and `rank`), DP groups combined when asked. With `combine` the
    list is emptied once its parts are joined: the caller's parts are not held beside
    the joined rows while the groups are formed. `scales`: each part's values are scaled
    integers of that scale (`model.unscaled`), or doubles (None)."""
    import polars as pl

    if scales is None:
        scales = [None] * len(parts)
    if combine:
        from .model import unscaled

        parts[:] = [
            p if k is None else p.with_columns(unscaled(p["value"], k))
            for p, k in zip(parts, scales, strict=True)
        ]
        scales = [None]
        config, metric = key
        frame = pl.concat([p for p in parts if p.height] or parts[:1], how="vertical_relaxed")
        parts.clear()
        got_key = _combine_key(frame, metric, cache)
        if got_key is None:  # values `_combine_key` does not sum as polars does
            keyed = pl.col("ts").is_not_null() & pl.col("rank").is_not_null()
            cat = pl.Categorical
            frame = frame.with_columns(
                pl.lit(v, pl.String).cast(cat).alias(c)
                for c, v in (("config", config), ("metric", metric))
                if c not in frame.columns
            )
            got_key = _combine(frame.with_row_index("_order"), keyed)
        del frame
        parts = [got_key]
    gathered = _Gathered()  # part by part: the key's rows are not copied into one frame
    for part, scale in zip(parts, scales, strict=True):
        if part.height:
            gathered.add(part, scale)
    return gathered.points()


def _at_scale(held: Any, k: int, top: int) -> Any:
    """Values held at scale `k` (`model.scale_of`) held at the larger scale `top`: each m
    times 10**(top - k), the same number, read back as the same double (IEEE division of
    exact doubles is correctly rounded); None when one would not fit in 32 bits."""
    import numpy as np

    if k == top:
        return held
    wide = held.astype(np.int64) * 10 ** (top - k)
    if len(wide) and not int(np.abs(wide).max()) < 1 << 31:
        return None
    return wide.astype(np.int32)


def _joined_values(values: list[Any], scales: list[int | None]) -> tuple[Any, int | None]:
    """Parts' values as held (each at its scale, None: doubles) as one array and its
    scale: as they are where they share one, at the largest scale where each fits there
    in 32 bits (`_at_scale`), else made doubles (numpy divides: correctly rounded)."""
    import numpy as np

    def joined(arrays: list[Any]) -> Any:
        return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)

    kinds = set(scales)
    if len(kinds) == 1:  # every part's values of one scale (or all doubles)
        return joined(values), scales[0]
    if kinds and None not in kinds:
        top = max(k for k in scales if k is not None)
        held = [_at_scale(v, k, top) for v, k in zip(values, scales, strict=True) if k is not None]
        if all(h is not None for h in held):
            return joined(held), top
    return joined([_doubles(v, k) for v, k in zip(values, scales, strict=True)]), None


def _doubles(held: Any, scale: int | None) -> Any:
    """Values as held (`PointList`) as doubles: scaled integers divided by 10**scale (numpy
    divides, correctly rounded, as `model.unscaled` does), doubles as they are."""
    return held if scale is None else held / 10.0**scale


def _drained(
    columns: SampleColumns,
    combine: bool,
    made: Callable[[tuple[str, str], PointList], None] | None = None,
) -> dict[tuple[str, str], PointList]:
    """Every key's values of a table drained part by part (`values_by_config`'s
    `consume`). A part's rows are split by key with only their own columns, their strings
    as the part's codes (what all rows share is added when the key is read, one key at a
    time), so the rows held between the drain and the keys' values hold no more bytes a
    row than the table did. The fast paths' parts and the pieces live in the C heap
    (`_by_key`), whose free pages are handed back once the table is split and once every
    key is made (`_memory.trim`)."""
    own = ["value", "line", "run", "block", *(("ts", "rank") if combine else ())]
    held: dict[tuple[str, str], list[_Held]] = {}
    words: list[dict[str, pl.Series]] = []  # each drained part's strings, by code
    for config, source, rank, part, coded in columns.drain():
        cols = [c for c in own if c in part.columns]
        by = ["metric"] if config is not None else ["config", "metric"]
        if source is None:
            cols.append("source")
        if config is None:
            cols.append("config")
        for config_code, metric_code, sub in _by_key(part.select([*cols, "metric"]), by):
            # the key by its codes (a part's list of strings holds each string once)
            name = config
            if name is None:  # the part holds its rows' configs (and split by them)
                assert config_code is not None
                name = coded["config"][config_code]
            key = (name, coded["metric"][metric_code])
            held.setdefault(key, []).append(_Held(source, rank, sub, len(words)))
        words.append(coded)
        del part
    _memory.trim()  # the drained parts' pages
    ids = _Ids(words, [h.rank for hs in held.values() for h in hs]) if combine else None
    from .model import scale_of

    out: dict[tuple[str, str], PointList] = {}
    cache = _GroupCache()
    lines = _Recent()
    # the keys' working arrays, freed, not kept beside the next's (once they add up)
    trimmer = _memory.Trimmer()
    for key in list(held):
        pieces = held.pop(key)
        got = None
        if ids is not None:
            got = _combined_pieces(pieces, words, ids, key[1], cache)
            trimmer.step()
        if got is None:
            parts = [_widened(p, words[p.part], ids) for p in pieces]
            scales = [scale_of(words[p.part]) for p in pieces]
            del pieces
            got = _key_points(parts, key, combine, cache, scales)
            del parts
            trimmer.step()
        # keys read from the same lines hold one array of line numbers
        got._lines = lines.held(got._lines)
        out[key] = got
        if made is not None:
            made(key, got)
    _memory.trim()  # the last keys' pieces and working arrays
    return out


def _by_key(frame: pl.DataFrame, by: list[str]) -> list[tuple[int | None, int, pl.DataFrame]]:
    """A drained part's rows split by key: each key's config code (None where `by` is the
    metric alone) and metric code, and its rows in order without the `by` columns, the
    keys in the order their first rows come (`partition_by(by, maintain_order=True)`).

    A part of numbers without nulls split by its metric codes (what the fast paths' parts
    are) is split by numpy: the pieces live in the C heap, where the drained table lived,
    and `_memory.trim` hands the pages of both back at once. Pieces in polars' buffers
    stayed in its allocator once freed, which hands pages back half a second and more
    later: a 1 GB SWA log's report held its table and its pieces again that way (800 MB)
    while its keys were summarised."""
    import numpy as np
    import polars as pl

    plain = by == ["metric"] and all(
        frame[c].dtype.is_integer() or frame[c].dtype == pl.Float64 for c in frame.columns
    )
    if not plain or any(frame[c].null_count() for c in frame.columns):
        out = []
        for sub in frame.partition_by(by, maintain_order=True):
            config = int(sub["config"][0]) if "config" in by else None
            out.append((config, int(sub["metric"][0]), sub.drop(by)))
        return out
    codes = frame["metric"].to_numpy()
    if not len(codes):
        return []
    order = np.argsort(codes, kind="stable")  # (a radix sort of one or two bytes)
    counts = np.bincount(codes)
    present = np.flatnonzero(counts)
    ends = np.cumsum(counts)[present]
    starts = ends - counts[present]
    arrays = {c: frame[c].to_numpy() for c in frame.columns if c not in by}
    # the keys of one line (a Decode batch line's nine metrics) have the same lines,
    # timestamps and ranks: held once, as the last keys' arrays (about 7 of a DP log's 11
    # bytes a row, which the pieces of every key hold from the drain to the key's turn)
    recent = {c: _Recent() for c in arrays if c != "value"}
    out = []
    # a key's first row is the first of its run in the stable order
    for k in np.argsort(order[starts], kind="stable").tolist():
        rows = order[starts[k] : ends[k]]
        cols = {c: recent[c].held(a[rows]) if c in recent else a[rows] for c, a in arrays.items()}
        out.append((None, int(present[k]), pl.DataFrame(cols)))
    return out


class _Recent:
    """Arrays held once where keys read from the same lines would hold equal ones: a Decode
    batch line's nine metrics, a vLLM engine line's six have the same line numbers (a 1 GB
    SWA log's report: 41 million points, 160 MB of line numbers, 40 MB once shared), and
    in a drained part the same timestamps and ranks. An array equal to one of the last
    `RECENT` kept (keys come in the order first met: a line's metrics one after another)
    is given as that one. Kept arrays are made read-only (nothing writes them)."""

    RECENT = 4

    def __init__(self) -> None:
        self.kept: list[npt.NDArray[Any]] = []

    def held(self, mine: npt.NDArray[Any]) -> npt.NDArray[Any]:
        import numpy as np

        for held in self.kept:
            if held.dtype == mine.dtype and held.shape == mine.shape and np.array_equal(held, mine):
                return held
        mine.flags.writeable = False
        self.kept = [mine, *self.kept[: self.RECENT - 1]]
        return mine


class _Held(NamedTuple):
    """A drained part's rows of one key, and what `_widened` makes them of."""

    source: str | None  # every row's (None: the rows hold it)
    rank: tuple[str | None] | None  # every row's (None: the rows hold it)
    rows: pl.DataFrame  # strings as codes (`model.Drained`)
    part: int  # which drained part (its strings, by code)


class _Ids:
    """Numbers for the timestamps and ranks of a drained table, equal where the strings
    are equal: each part's codes into its own strings made numbers of the whole table
    (and a rank that all of a part's rows share, by its string). `_combine_key` groups
    by them; every part's strings are ranked at once (one sort), and no categorical is
    made of them, which would cost about 100 bytes a distinct timestamp."""

    def __init__(
        self, words: list[dict[str, pl.Series]], shared: list[tuple[str | None] | None]
    ) -> None:
        import polars as pl

        self.by_part: list[dict[str, pl.Series]] = [{} for _ in words]
        self.shared: dict[str, int] = {}
        ranks = sorted({r[0] for r in shared if r is not None and r[0] is not None})
        for name, extra in (("ts", []), ("rank", ranks)):
            mine = [(i, w[name]) for i, w in enumerate(words) if name in w]
            every = pl.concat([*(w for _, w in mine), pl.Series(extra, dtype=pl.String)])
            numbers = every.rank("dense").cast(pl.UInt32)
            at = 0
            for i, w in mine:
                self.by_part[i][name] = numbers[at : at + len(w)]
                at += len(w)
            self.shared.update(zip(extra, numbers[at:].to_list(), strict=True))


def _combined_pieces(
    pieces: list[_Held],
    words: list[dict[str, pl.Series]],
    ids: _Ids,
    metric: str,
    cache: _GroupCache,
) -> PointList | None:
    """A drained key's values with its DP groups combined (`_combine_key`), read from its
    pieces into numpy columns (no frame of the key's rows is made and joined: a DP key's
    rows held about 60 bytes a row in polars' memory, which stayed resident after the key);
    None where `_combine_key` would not combine them (the caller then goes the frames'
    way, which combines them with polars). Bit for bit what `_key_points` gives."""
    import numpy as np
    import polars as pl

    from .model import scale_of

    total = sum(p.rows.height for p in pieces)
    value = np.empty(total, np.float64)
    # each piece's values as held: kept so where no group has two rows (`_joined_values`)
    helds: list[Any] = []
    held_scales: list[int | None] = []
    # the lines as the table holds them (32 bits while they fit)
    wide = any(p.rows["line"].dtype != pl.UInt32 for p in pieces)
    line: npt.NDArray[np.integer[Any]] = np.empty(total, np.int64 if wide else np.uint32)
    ts = np.zeros(total, np.uint32)
    rank = np.zeros(total, np.uint32)
    keyed = np.ones(total, np.bool_)
    src = np.empty(total, np.int32)
    names: dict[str, int] = {}
    extra: dict[str, list[tuple[int, pl.Series]]] = {"run": [], "block": []}
    at = 0
    for p in pieces:
        rows, n = p.rows, p.rows.height
        here = slice(at, at + n)
        if "ts" not in rows.columns or rows["value"].null_count():
            return None
        held = rows["value"].to_numpy()
        scale = scale_of(words[p.part])
        value[here] = _doubles(held, scale)
        helds.append(held)
        held_scales.append(scale)
        line[here] = rows["line"].to_numpy()
        mine = ids.by_part[p.part]
        for name, out in (("ts", ts), ("rank", rank)):
            if name in rows.columns:
                codes = rows[name]
                if name not in mine:  # a part's codes with no strings: not this way
                    return None
                numbers = mine[name].to_numpy()
                if codes.null_count():
                    keyed[here] &= codes.is_not_null().to_numpy()
                    codes = codes.fill_null(0)
                if len(numbers):
                    out[here] = numbers[codes.to_numpy()]
            else:  # the rank every row of the part shares (a part holds its `ts`)
                if p.rank is None:
                    return None
                shared = p.rank[0]
                if shared is None:
                    keyed[here] = False
                else:
                    out[here] = ids.shared[shared]
        if p.source is not None:
            src[here] = names.setdefault(p.source, len(names))
        else:
            codes = rows["source"]
            if codes.null_count():
                return None
            strings = words[p.part]["source"].to_list()
            lut = np.array([names.setdefault(w, len(names)) for w in strings], np.int32)
            src[here] = lut[codes.to_numpy()]
        for name in extra:
            if name in rows.columns and rows[name].null_count() < n:
                extra[name].append((at, rows[name]))
        at += n
    got = _combine_arrays(value, line, keyed, src, ts, rank, metric, cache)
    if got is None:
        return None
    value, line, pick = got
    # the sources in the order first met among the rows given, as `_Gathered.add` has them
    every = list(names)
    picked = src[pick]
    if len(every) == 1:  # one source (most keys): no sort of the key's rows
        by_first = np.zeros(1 if len(picked) else 0, np.int32)
    else:
        seen, at_first = np.unique(picked, return_index=True)
        by_first = seen[np.argsort(at_first)]
    gathered = _Gathered()
    gathered.names = [every[k] for k in by_first.tolist()]
    gathered.index = {name: k for k, name in enumerate(gathered.names)}
    if len(by_first) == 1:  # one source (most keys): no index array of the key's length
        gathered.sources.append(0)
    else:
        lut = np.empty(len(every), np.int32)
        lut[by_first] = np.arange(len(by_first), dtype=np.int32)
        gathered.sources.append(lut[picked])
    if len(pick) == total:  # no row combined with another: the values as held
        joined, scale = _joined_values(helds, held_scales)
        gathered.values.append(joined[pick])
        gathered.scales.append(scale)
    else:
        gathered.values.append(value)
        gathered.scales.append(None)
    gathered.lines.append(line)
    for name, attr, flag in (("run", "runs", "any_run"), ("block", "blocks", "any_block")):
        if not extra[name]:
            getattr(gathered, attr).append(len(pick))
            continue
        numbers = np.zeros(total, np.int32)
        none = np.ones(total, np.bool_)
        for start, column in extra[name]:
            numbers[start : start + column.len()] = column.fill_null(0).cast(pl.Int32).to_numpy()
            none[start : start + column.len()] = column.is_null().to_numpy()
        numbers, none = numbers[pick], none[pick]
        if none.all():
            getattr(gathered, attr).append(len(pick))
        else:
            setattr(gathered, flag, True)
            getattr(gathered, attr).append((numbers, none))
    gathered.n = len(pick)
    return gathered.points()


def _widened(held: _Held, words: dict[str, pl.Series], ids: _Ids | None) -> pl.DataFrame:
    """A drained key's rows with the columns `_key_points` reads (with `ids`, to combine:
    also `ts` and `rank`, as the table's numbers): the other strings as categoricals (the
    shared ones added), `block` and `run` as nulls where the part held none. Made column
    by column (no query a piece: a day-long log's keys have thousands of pieces)."""
    import polars as pl

    rows, n = held.rows, held.rows.height
    mine = ids.by_part[held.part] if ids is not None else {}
    cols = []
    for name in [*_POINT, *(("ts", "rank") if ids is not None else ())]:
        if name in rows.columns:
            col = rows[name]
            if name in mine:  # a null code stays null
                col = mine[name].gather(col)
            elif name == "value":  # as held: scaled integers (`model.scale_of`), or doubles
                pass
            elif name in words:
                col = words[name].cast(pl.Categorical).gather(col)
        elif name in ("run", "block"):  # a null repeated (`pl.repeat` runs a query: 30x)
            col = pl.Series([None], dtype=pl.Int32).new_from_index(0, n)
        elif name == "source":
            one = pl.Series([held.source], dtype=pl.String).cast(pl.Categorical)
            col = one.new_from_index(0, n)
        else:  # the rank all the part's rows share, as the table's number
            assert ids is not None
            assert held.rank is not None
            rank = held.rank[0]
            one = pl.Series([None if rank is None else ids.shared[rank]], dtype=pl.UInt32)
            col = one.new_from_index(0, n)
        cols.append(col.alias(name))
    return pl.DataFrame(cols)  # one column order: the parts are joined


def _batched(frames: Iterable[pl.DataFrame], rows: int = 1 << 20) -> Iterator[pl.DataFrame]:
    """Parts joined up to about `rows` rows: few enough polars calls, little memory."""
    import polars as pl

    held: list[pl.DataFrame] = []
    n = 0
    for frame in frames:
        held.append(frame)
        n += frame.height
        if n >= rows:
            yield pl.concat(held)
            held, n = [], 0
    if held:
        yield pl.concat(held)


class _Gathered:
    """One (config, metric)'s values from part after part, as numpy columns."""

    def __init__(self) -> None:
        self.values: list[npt.NDArray[np.float64] | npt.NDArray[np.int32]] = []
        self.scales: list[int | None] = []  # per part: its values' scale (None: doubles)
        self.lines: list[npt.NDArray[np.integer[Any]]] = []
        # per part: its rows' source numbers, or one number where every row has it
        self.sources: list[npt.NDArray[np.int32] | int] = []
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        # per part: the runs and blocks (numpy, with a mask of the None), or None: all None
        self.runs: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.bool_]] | int] = []
        self.blocks: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.bool_]] | int] = []
        self.any_run = self.any_block = False
        self.n = 0

    def add(self, part: pl.DataFrame, scale: int | None = None) -> None:
        import numpy as np
        import polars as pl

        # source codes from the categorical's own codes: no string per row
        src = part["source"]
        if src.dtype != pl.Categorical:
            src = src.cast(pl.Categorical)
        uniq = src.unique(maintain_order=True)
        phys = uniq.to_physical().to_numpy().astype(np.int64)
        mine = np.empty(len(phys), np.int32)
        for k, name in enumerate(uniq.cast(pl.String).to_list()):
            self.index.setdefault(name, len(self.names))
            if len(self.names) < len(self.index):
                self.names.append(name)
            mine[k] = self.index[name]
        if len(phys) == 1:  # one source (most parts): no index array of the part's length
            self.sources.append(int(mine[0]))
        else:
            codes = src.to_physical().to_numpy()
            order = np.argsort(phys)
            self.sources.append(mine[order][np.searchsorted(phys[order], codes)])
        if scale is None:
            self.values.append(part["value"].to_numpy().astype(np.float64, copy=False))
        else:  # scaled integers, as the table held them
            self.values.append(part["value"].to_numpy().astype(np.int32, copy=False))
        self.scales.append(scale)
        # as the table holds them (32 bits, most tables): no copy made wider per part
        self.lines.append(part["line"].to_numpy())
        for attr, flag, col in (("runs", "any_run", "run"), ("blocks", "any_block", "block")):
            column = part[col]
            if column.null_count() < len(column):
                setattr(self, flag, True)
                ints = column.fill_null(0).cast(pl.Int32).to_numpy()
                getattr(self, attr).append((ints, column.is_null().to_numpy()))
            else:  # all None: only the count
                getattr(self, attr).append(len(column))
        self.n += part.height

    def points(self) -> PointList:
        import numpy as np

        def joined(arrays: list[Any]) -> Any:
            return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)

        def ints(parts: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.bool_]] | int]) -> Ints:
            values = [p[0] if isinstance(p, tuple) else np.zeros(p, np.int32) for p in parts]
            none = [p[1] if isinstance(p, tuple) else np.ones(p, np.bool_) for p in parts]
            return Ints(joined(values), joined(none))

        def sources() -> npt.NDArray[np.int32]:
            """One source for every point (a config's one log, most keys): one number seen
            as a column of them, no byte a point (a read-only view: nothing writes it)."""
            lengths = [len(v) for v in self.values]
            shared = [s for s in self.sources if isinstance(s, int)]
            if len(shared) == len(self.sources) and len(set(shared)) == 1:
                one: npt.NDArray[np.int32] = np.broadcast_to(np.int32(shared[0]), (sum(lengths),))
                return one
            many: npt.NDArray[np.int32] = joined(
                [
                    np.full(k, s, np.int32) if isinstance(s, int) else s
                    for s, k in zip(self.sources, lengths, strict=True)
                ]
            )
            return many

        if all(a.dtype == np.uint32 for a in self.lines):  # joined as they are
            lines = joined(self.lines)
        else:
            lines = joined([a.astype(np.int64, copy=False) for a in self.lines])
            if len(lines) and lines.min() >= 0 and lines.max() < 1 << 32:
                lines = lines.astype(np.uint32)  # held in half the bytes (they stay ints)
        values, scale = _joined_values(self.values, self.scales)
        return PointList(
            values,
            sources(),
            self.names,
            lines,
            ints(self.runs) if self.any_run else None,
            ints(self.blocks) if self.any_block else None,
            scale,
        )


def _combine(df: pl.DataFrame, keyed_rows: pl.Expr) -> pl.DataFrame:
    """DP groups combined per timestamp with each metric's `sum`/`mean` rule (DESIGN §3)."""
    import polars as pl

    names = df["metric"].cast(pl.String).unique().to_list()
    summed = [m for m in names if metrics.get(m).combine == "sum"]
    keyed = df.filter(keyed_rows)
    plain = df.filter(~keyed_rows)
    # The k-th line of each rank at a timestamp pairs with the k-th line of the others:
    # two intervals of one rank within the same printed second are never summed.
    keyed = keyed.with_columns(
        pl.int_range(pl.len()).over(["config", "source", "metric", "ts", "rank"]).alias("_k"),
        pl.col("metric").cast(pl.String).is_in(summed).alias("_sum"),
    )
    keys = ["config", "source", "metric", "ts", "_k"]
    combined = keyed.group_by(keys, maintain_order=True).agg(
        pl.col("_order").min(),
        pl.col("line").min(),
        pl.col("block").first(),
        pl.col("run").first(),
        pl.when(pl.col("_sum").first())
        .then(pl.col("value").sum())
        .otherwise(pl.col("value").mean())
        .alias("value"),
    )
    cols = ["_order", "config", "source", "metric", "line", "block", "run", "value"]
    return pl.concat([plain.select(cols), combined.select(cols)]).sort("_order")


_KAHAN_MAX = 64  # polars sums a group of up to this many values by Kahan's rule, in order


class _Groups(NamedTuple):
    """The DP groups of a key's rows (`_combine_key`), a function of the rows' source,
    timestamp and rank codes alone: keys read from the same lines (an engine line's six
    metrics) share them, and `_GroupCache` makes them once."""

    members: npt.NDArray[np.int64]  # the keyed rows, group by group, each in line order
    first: npt.NDArray[np.int64]  # each group's first place in `members`
    size: npt.NDArray[np.int64]
    plain: npt.NDArray[np.int64]  # the rows not keyed
    order: npt.NDArray[np.int64]  # plain rows then groups, into line order
    pick: npt.NDArray[np.int64]  # the row each output row takes source, run and block of


class _GroupCache:
    """The last key's DP groups, and the codes they were made from (dropped when a key's
    codes differ)."""

    def __init__(self) -> None:
        self.codes: tuple[npt.NDArray[Any], ...] | None = None
        self.groups: _Groups | None = None

    def get(self, codes: tuple[npt.NDArray[Any], ...]) -> _Groups | None:
        import numpy as np

        held = self.codes
        if held is None:
            return None
        if all(np.array_equal(a, b) for a, b in zip(held, codes, strict=True)):
            return self.groups
        # other codes: the key's own groups are made next, and these are not held beside
        # them (a DP key's groups and codes: about 40 bytes a row)
        self.codes = self.groups = None
        return None

    def put(self, codes: tuple[npt.NDArray[Any], ...], groups: _Groups) -> None:
        self.codes, self.groups = codes, groups


def _dp_groups(
    keyed: npt.NDArray[np.bool_],
    src: npt.NDArray[Any],
    ts: npt.NDArray[Any],
    rank: npt.NDArray[Any],
) -> _Groups:
    """The groups `_combine` forms of a key's keyed rows (codes of the keyed rows): the
    k-th line of each rank at a timestamp of a source."""
    import numpy as np

    rows = np.flatnonzero(keyed)
    m = len(rows)
    found = None
    if m:
        big_t = int(ts.max()) + 1
        if (int(src.max()) + 1) * big_t < 1 << 62:  # a (source, timestamp) as one number
            cell = src.astype(np.int64)  # in place: one array as long as the rows at a time
            cell *= big_t
            cell += ts
            found = rank_groups(cell, rank)
    if found is None:  # codes too big for one number a row
        found = _lexsorted_groups(rows, src, ts, rank)
    o, first = found
    return _grouped(keyed, rows, o, first)


def _lexsorted_groups(
    rows: npt.NDArray[np.int64],
    src: npt.NDArray[Any],
    ts: npt.NDArray[Any],
    rank: npt.NDArray[Any],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """`rank_groups` of the keyed `rows` (their source, timestamp and rank codes) by two
    lexsorts of four keys, the row last: for codes too big for one number a row."""
    import numpy as np

    m = len(rows)
    # k: each row's place among the rows of its (source, timestamp, rank), in line order
    o = np.lexsort((rows, rank, ts, src))
    new = np.ones(m, np.bool_)
    new[1:] = (
        (src[o][1:] != src[o][:-1]) | (ts[o][1:] != ts[o][:-1]) | (rank[o][1:] != rank[o][:-1])
    )
    starts = np.flatnonzero(new)
    k = np.empty(m, np.int64)
    k[o] = np.arange(m) - starts[np.cumsum(new) - 1]
    # groups: (source, timestamp, k), their rows in line order
    o = np.lexsort((rows, k, ts, src))
    new[:] = True
    new[1:] = (src[o][1:] != src[o][:-1]) | (ts[o][1:] != ts[o][:-1]) | (k[o][1:] != k[o][:-1])
    return o, np.flatnonzero(new)


def _grouped(
    keyed: npt.NDArray[np.bool_],
    rows: npt.NDArray[np.int64],
    o: npt.NDArray[np.int64],
    first: npt.NDArray[np.int64],
) -> _Groups:
    """`_Groups` of the keyed `rows` in group order `o`, each group starting at `first`."""
    import numpy as np

    size = np.diff(np.append(first, len(rows)))
    members = rows[o]
    lead = members[first]  # each group's first row: its place, source, block and run
    plain = np.flatnonzero(~keyed)
    at = np.concatenate([plain, lead])
    order = np.argsort(at, kind="stable")
    return _Groups(members, first, size, plain, order, at[order])


def rank_groups(
    cell: npt.NDArray[np.int64], rank: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """Rows grouped by (cell, k), k each row's place among its rank's rows of its cell, in
    row order (the DP groups of `_combine`: the k-th line of each rank at a timestamp),
    by two stable sorts of one number a row: the rows' order in groups and each group's
    first place in it. The rows come nearly sorted (timestamps advance), which a stable
    sort is quick on, and equals are kept in row order, as two lexsorts with the row last
    keep them. None where the numbers would not fit in 62 bits (non-negative cells and
    ranks)."""
    import numpy as np

    big_c, big_r = int(cell.max()) + 1, int(rank.max()) + 1
    if big_c * big_r >= 1 << 62:
        return None

    def runs(key: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """The key's stable order, and where a new value starts in it (the key is used
        up: sorted in place, no copy of it made)."""
        o = np.argsort(key, kind="stable")
        np.take(key, o, out=key)
        new = np.empty(len(o), np.bool_)
        new[:1] = True
        np.not_equal(key[1:], key[:-1], out=new[1:])
        return o, new

    # (temporaries made in place: a few arrays as long as the rows, not a dozen)
    key = cell * big_r
    key += rank
    o, new = runs(key)
    del key
    # k: each row's place among its (cell, rank)'s rows
    k = np.cumsum(new, dtype=np.int64)
    k -= 1
    np.take(np.flatnonzero(new), k, out=k)
    np.subtract(np.arange(len(o)), k, out=k)
    place = np.empty(len(o), np.int64)
    place[o] = k
    del o, new, k
    top = int(place.max())
    if top and big_c * (top + 1) >= 1 << 62:
        return None
    if top:
        place += cell * (top + 1)
    else:
        place[:] = cell
    o, new = runs(place)
    return o, np.flatnonzero(new)


def _exact_integers(
    value: npt.NDArray[np.float64],
    members: npt.NDArray[np.int64],
    first: npt.NDArray[np.int64],
    size: npt.NDArray[np.int64],
) -> bool:
    """Whether the groups tile `members` (each starts where the one before ends) and every
    value is an integer so small that a group's sums are all exact (a count, a flag)."""
    import numpy as np

    if not len(first) or int(first[0]) != 0 or int(first[-1] + size[-1]) != len(members):
        return False
    if not np.array_equal(first[1:], first[:-1] + size[:-1]):
        return False
    if not len(value):
        return False
    top = float(max(value.max(), -value.min()))  # (no array of |value|)
    if not top * float(size.max()) < 2.0**53:  # (NaN: not exact)
        return False
    # a block at a time (no array as long as the values), the first a small one: decimals
    # (most metrics, and every slice of a fold of them) are told at once
    bounds = [0, *range(min(len(value), 1 << 12), len(value), 1 << 20), len(value)]
    return all(
        np.array_equal(block, np.trunc(block))
        for block in (value[a:b] for a, b in itertools.pairwise(bounds))
    )


def kahan_sums(
    value: npt.NDArray[np.float64],
    members: npt.NDArray[np.int64],
    first: npt.NDArray[np.int64],
    size: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]:
    """Each group's sum of `value[members[first[g] : first[g] + size[g]]]` by Kahan's
    compensated summation in that order, from 0.0: polars' `sum` of a group of up to
    `_KAHAN_MAX` finite values (`_combine_key`; `_rankfold` makes the same groups' sums as
    a source is read)."""
    import numpy as np

    if _exact_integers(value, members, first, size):
        # every partial sum is an integer below 2**53: exact in any order, so Kahan's
        # compensation stays 0 and its sum is the plain one (from 0.0: a -0.0 made 0.0)
        total = np.add.reduceat(value[members], first)
        total += 0.0
        return total
    if not len(first):
        return np.zeros(0, np.float64)
    # Kahan's first step is 0.0 + y (exact, no compensation) and its second a plain sum, so
    # the loop starts at the third value, and groups of one or two values (vLLM's two
    # engines, DP ranks in pairs) take no loop at all
    total = value[members[first]] + 0.0
    top, every = int(size.max()), int(size.min())  # every: places every group has
    if top < 2:
        return total
    two: slice | npt.NDArray[np.intp] = slice(None) if every >= 2 else np.flatnonzero(size >= 2)
    y = value[members[first[two] + 1]]
    t = total[two] + y
    if top == 2:
        total[two] = t
        return total
    comp = np.zeros(len(first), np.float64)
    comp[two] = (t - total[two]) - y
    total[two] = t
    for j in range(2, top):
        if j < every:  # the same operations on every group, in place
            y = value[members[first + j]]
            y -= comp
            t = total + y
            np.subtract(t, total, out=comp)
            comp -= y
            total = t
            continue
        at = np.flatnonzero(size > j)
        y = value[members[first[at] + j]] - comp[at]
        t = total[at] + y
        comp[at] = (t - total[at]) - y
        total[at] = t
    return total


def _combine_key(
    frame: pl.DataFrame, metric: str, cache: _GroupCache | None = None
) -> pl.DataFrame | None:
    """`_combine` of one (config, metric)'s rows, with numpy: the same groups (the k-th line
    of each rank at a timestamp of a source), the same first line, block and run, and each
    group's sum (or mean: the sum / n) by Kahan's compensated summation in line order,
    which is polars' `sum` of a group (checked bit for bit by a test against `_combine`).
    None when that is not certain: a value not finite or near the float limit, or a group of
    more than `_KAHAN_MAX` values (then `_combine` combines the key). The groups are taken
    from `cache` when the rows' codes are those it holds."""
    import polars as pl

    value = frame["value"].to_numpy()
    keyed = (frame["ts"].is_not_null() & frame["rank"].is_not_null()).to_numpy()
    phys = frame.select(pl.col("source", "ts", "rank").to_physical().fill_null(0))
    src, ts, rank = (phys[c].to_numpy() for c in ("source", "ts", "rank"))  # u32 codes
    del phys
    got = _combine_arrays(value, frame["line"].to_numpy(), keyed, src, ts, rank, metric, cache)
    if got is None:
        return None
    if not keyed.any():  # the rows as they are
        return frame
    value, line, pick = got
    return frame.select("source", "run", "block")[pick].with_columns(
        value=pl.Series(value, dtype=pl.Float64), line=pl.Series(line)
    )


def _combine_arrays(
    value: npt.NDArray[np.float64],
    line: npt.NDArray[np.integer[Any]],
    keyed: npt.NDArray[np.bool_],
    src: npt.NDArray[np.integer[Any]],
    ts: npt.NDArray[np.integer[Any]],
    rank: npt.NDArray[np.integer[Any]],
    metric: str,
    cache: _GroupCache | None = None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[Any], npt.NDArray[np.int64]] | None:
    """`_combine_key` of a key's rows as numpy columns (`src`, `ts`, `rank`: numbers, equal
    where the strings are; read where `keyed`): the values and lines of the rows it gives,
    in line order, and the row each takes its source, run and block from; None where it
    does not combine them."""
    import numpy as np

    if not bool(np.isfinite(value).all()):
        return None
    if len(value) and float(max(value.max(), -value.min())) > 1e300:  # no array of |value|
        return None
    if not keyed.any():
        return value, line, np.arange(len(value), dtype=np.int64)
    if not keyed.all():  # (every row keyed, most keys: no copies)
        src, ts, rank = src[keyed], ts[keyed], rank[keyed]
    codes = (keyed, src, ts, rank)
    g = cache.get(codes) if cache is not None else None
    if g is None:
        g = _dp_groups(keyed, src, ts, rank)
        if cache is not None:
            cache.put(codes, g)
    del codes, src, ts, rank
    first, size, members = g.first, g.size, g.members
    if int(size.max()) > _KAHAN_MAX:
        return None
    total = kahan_sums(value, members, first, size)
    if metrics.get(metric).combine != "sum":
        total = total / size
    lines = np.minimum.reduceat(line[members], first)
    return (
        np.concatenate([value[g.plain], total])[g.order],
        np.concatenate([line[g.plain], lines])[g.order],
        g.pick,
    )


# A load point's keys (DESIGN §5), and the counts and seeds of a benchmark run: never a
# setting that makes launches of one config differ.
LOAD_KEYS: frozenset[str] = frozenset(
    {
        "request_rate",
        "max_concurrency",
        "dataset_name",
        "input_len",
        "output_len",
        "random_input_len",
        "random_output_len",
        "batch_size",
    }
)
_NOT_LAUNCH_SETTINGS = frozenset({"num_prompts", "seed", "random_seed"})


def launch_varies(key: str) -> bool:
    """Whether a differing value of this setting between launches of one config mixes
    different experiments (server args and benchmark parameters; not launch noise, measured
    outcomes, facts about how a log counts, load keys, prompt counts or seeds)."""
    leaf = key.rsplit(".", 1)[-1]
    return not (
        is_noise(key)
        or is_measured(key)
        or leaf in NOT_CONFOUNDS
        or leaf in LOAD_KEYS
        or leaf in _NOT_LAUNCH_SETTINGS
    )


def settings_diff(
    settings: dict[str, dict[str, Any]],
    mixed: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Settings whose values differ between configs (launch noise and measured outcomes
    left out), in key order; and those whose values differ between a config's own launches
    (`mixed`: config → keys), which the settings table shows with every value."""
    names = list(settings)
    mixed_keys = {k for found in (mixed or {}).values() for k in found}
    if len(names) < 2:
        return (
            {
                k: {n: settings[n].get(k) for n in names}
                for k in settings.get(names[0], {})
                if k in mixed_keys
            }
            if names
            else {}
        )
    keys: list[str] = []
    for name in names:
        for key in settings[name]:
            if key not in keys:
                keys.append(key)
    diff: dict[str, dict[str, Any]] = {}
    for key in keys:
        if is_noise(key) or is_measured(key):
            continue
        vals = {name: settings[name].get(key) for name in names}
        present = [v for n, v in vals.items() if key in settings[n]]
        differs = any(_norm(v) != _norm(present[0]) for v in present)
        if len(present) < len(names) or differs or key in mixed_keys:
            diff[key] = vals
    return diff


def confounds(
    baseline: dict[str, Any],
    candidate: dict[str, Any],
    varies: list[str] | None,
    ignore: Collection[str] = (),
) -> list[tuple[str, Any, Any]]:
    """Settings (present on both sides) that differ beyond what the hypothesis varies.

    With `varies`, every differing setting not named is a confound; without it, differing
    settings are confounds only when more than one differs. A differing benchmark parameter
    is a confound unless `varies` names it. Launch noise never counts.
    """
    named = set(varies or [])
    differing = [
        k
        for k in baseline
        if k in candidate
        and k.rsplit(".", 1)[-1] not in ignore
        and not is_noise(k)
        and not is_measured(k)
        and k.rsplit(".", 1)[-1] not in NOT_CONFOUNDS
        and _norm(baseline[k]) != _norm(candidate[k])
    ]
    found: list[str] = []
    for key in differing:
        leaf = key.rsplit(".", 1)[-1]
        if key in named or leaf in named:
            continue
        if key in BENCH_PARAMS or leaf in BENCH_PARAMS or varies is not None:
            found.append(key)
    if varies is None:
        others = [
            k
            for k in differing
            if k not in BENCH_PARAMS and k.rsplit(".", 1)[-1] not in BENCH_PARAMS
        ]
        if len(others) > 1:
            found.extend(others)
    ordered = [k for k in differing if k in found]
    return [(k, baseline[k], candidate[k]) for k in ordered]


class LaunchValues(NamedTuple):
    """One launch's values of a config's metric, in file order."""

    name: str
    values: npt.NDArray[np.float64]
    # in the config's point list: a `range` where they are a run of it (no 8 bytes a value)
    positions: npt.NDArray[np.int64] | range
    series: bool  # a server's interval series (autocorrelated), else repeated client runs

    def at(self, places: Sequence[int]) -> list[int]:
        """The positions in the config's point list of the launch's values at `places`."""
        if isinstance(self.positions, range):
            return [self.positions[i] for i in places]
        return self.positions[list(places)].tolist()  # type: ignore[no-any-return]

    def taken(self, mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        """A mask over the config's point list, read at the launch's positions."""
        if isinstance(self.positions, range):
            return mask[self.positions.start : self.positions.stop]
        return mask[self.positions]


def by_launch(
    points: Sequence[Point],
    launches: Mapping[str, Sequence[tuple[int, str]]],
    series_sources: Collection[str],
    column: stats.Values | None = None,
) -> list[LaunchValues]:
    """A config's values split by launch (DESIGN §5): the unit of replication is decided
    here, once; everything above receives values already shaped by launch. Launches come in
    the order of their first value; a source without launches is a launch of its own.
    `column`: the points' values as `column_of` gave them (not made again)."""
    import numpy as np

    if isinstance(points, PointList):
        # `column_of` gives a point list's values as an array (no copy made here)
        values = points._values if column is None else np.asarray(column, dtype=np.float64)
        contiguous = _launch_slices(points, values, launches, series_sources)
        if contiguous is not None:
            return contiguous
        codes_src = np.asarray(points._sources)
        names = points._names
        lines = np.asarray(points._lines, dtype=np.int64)
    else:
        names = sorted({p.source for p in points})
        at = {n: i for i, n in enumerate(names)}
        values = np.array([p.value for p in points], dtype=np.float64)
        codes_src = np.array([at[p.source] for p in points], dtype=np.int64)
        lines = np.array([p.line for p in points], dtype=np.int64)
    n = len(values)
    if n == 0:
        return []
    launch_ids: dict[str, int] = {}
    code = np.empty(n, dtype=np.int64)
    series_of: dict[int, bool] = {}
    for k, src in enumerate(names):
        mask = codes_src == k
        if not mask.any():
            continue
        spans = launches.get(src) or [(0, src)]
        ids = np.array([launch_ids.setdefault(name, len(launch_ids)) for _, name in spans])
        if len(spans) == 1:
            code[mask] = ids[0]
        else:
            starts = np.array([line for line, _ in spans], dtype=np.int64)
            pos = np.searchsorted(starts, lines[mask], side="right") - 1
            code[mask] = ids[np.clip(pos, 0, len(spans) - 1)]
        is_series = src in series_sources
        for i in [int(ids[0])] if len(spans) == 1 else present_codes(code[mask]):
            series_of[i] = series_of.get(i, True) and is_series
    if len(launch_ids) == 1:  # one launch (most configs): no sort, no copy
        (name,) = launch_ids
        return [LaunchValues(name, values, range(n), series_of[0])]
    order = np.argsort(code, kind="stable")
    sorted_codes = code[order]
    cuts = np.flatnonzero(np.diff(sorted_codes)) + 1
    groups = np.split(order, cuts)
    by_name = {i: name for name, i in launch_ids.items()}
    out = [
        LaunchValues(by_name[int(code[g[0]])], values[g], g, series_of[int(code[g[0]])])
        for g in groups
    ]
    out.sort(key=lambda lv: int(lv.positions[0]))
    return out


def _launch_slices(
    points: PointList,
    values: npt.NDArray[np.float64],
    launches: Mapping[str, Sequence[tuple[int, str]]],
    series_sources: Collection[str],
) -> list[LaunchValues] | None:
    """`by_launch` of the points of one source in line order (a config's one server log,
    the common case of a day-long log): each launch's points are a run of the list, found
    by a binary search of its first line, and its values are a view of the list's (no
    sort, no copy: a 1 GB log's key of 3.75 million values and two launches took 175 MB
    and 85 ms the general way). None where this does not apply: several sources, lines
    or spans out of order, or a launch name that two spans share."""
    import numpy as np

    n = len(points)
    if n == 0 or len(points._names) != 1:
        return None
    src = points._names[0]  # every point's: a source number indexes the names
    lines = points._lines
    if not bool((lines[1:] >= lines[:-1]).all()):
        return None
    spans = launches.get(src) or [(0, src)]
    if len({name for _, name in spans}) != len(spans):
        return None
    starts = [line for line, _ in spans[1:]]
    if starts and not 0 <= min(starts) <= max(starts) <= np.iinfo(lines.dtype).max:
        return None
    if starts != sorted(starts) or (starts and starts[0] < spans[0][0]):
        return None  # spans out of line order: the general rule says what that means
    # the first point of each later span: the first at or after its start line (a point
    # before the first span's start belongs to the first span, as `by_launch` clips it);
    # the starts in the lines' own type, so that they are not copied to compare
    found = np.searchsorted(lines, np.array(starts, dtype=lines.dtype), side="left")
    cuts = [0, *found.tolist(), n]
    series = src in series_sources
    return [
        LaunchValues(name, values[a:b], range(a, b), series)
        for (_, name), a, b in zip(spans, cuts[:-1], cuts[1:], strict=True)
        if b > a
    ]


def launch_settings(session: Session, name: str) -> dict[str, list[tuple[Any, list[str]]]]:
    """Server settings that differ between a config's launches (DESIGN §5): for each, every
    value with the launches that logged it. Launch noise, measured outcomes, load keys,
    `num_prompts` and seeds never count."""
    from ._launch import SERVER_FORMATS

    seen: dict[str, list[tuple[Any, list[str]]]] = {}
    for src in session.sources:
        if session.source_config.get(src.path) != name or src.format not in SERVER_FORMATS:
            continue
        spans = session.launches.get(src.path) or [(0, src.path)]
        launch = spans[-1][1]  # a log's settings keep their last start's values
        for key, value in src.settings.items():
            if not launch_varies(key):
                continue
            entries = seen.setdefault(key, [])
            for v, launches in entries:
                if same_value(v, value):
                    if launch not in launches:
                        launches.append(launch)
                    break
            else:
                entries.append((value, [launch]))
    return {
        k: sorted(v, key=lambda entry: min(_launch_order(n) for n in entry[1]))
        for k, v in seen.items()
        if len(v) > 1
    }


def _launch_order(name: str) -> tuple[str, int]:
    """`folder#k` in start order (`#10` after `#9`)."""
    folder, _, k = name.rpartition("#")
    return (folder, int(k)) if folder and k.isascii() and k.isdigit() else (name, 0)


def by_load(
    points: Sequence[Point], loads: Mapping[tuple[str, int], str]
) -> list[tuple[str | None, npt.NDArray[np.int64] | None]]:
    """A config's values split by load point (DESIGN §5: never pooled across points): each
    load (None outside serving blocks) with the positions of its values, in sweep order;
    None for the positions of a load that holds every value (most keys: no array as long
    as the values, 8 bytes a value, held for each key through the analysis)."""
    import numpy as np

    n = len(points)
    if not loads or n == 0:
        return [(None, None)]
    served = {src for src, _ in loads}
    if isinstance(points, PointList):
        names, codes, blocks = points._names, points._sources, points._blocks
        if blocks is None or not served & set(names):
            return [(None, None)]
        wanted = {k for k, name in enumerate(names) if name in served}
        mask = np.isin(codes, list(wanted))
        found: list[str | None] = [None] * n
        for i in np.flatnonzero(mask).tolist():
            block = blocks[i]
            if block is not None:
                found[i] = loads.get((names[int(codes[i])], block))
    else:
        found = [loads.get((p.source, p.block)) if p.block is not None else None for p in points]
    groups: dict[str | None, list[int]] = {}
    for i, load in enumerate(found):
        groups.setdefault(load, []).append(i)
    ordered = sorted(groups, key=lambda k: (k is not None, _load.order_key(k), k or ""))
    if len(ordered) == 1:
        return [(ordered[0], None)]
    return [(k, np.asarray(groups[k], dtype=np.int64)) for k in ordered]
