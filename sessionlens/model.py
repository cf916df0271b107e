"""Records that flow from the parsers to the analysis, and the parse result.

Owns the record types a parser yields (`Sample`, `Setting`, `BlockStart`, `SummaryItem`,
and `SampleBatch` for a fast path), the packed sample table (`SampleColumns`), the pydantic
metadata of a source (`SourceInfo`, `BlockInfo`) and `ParseResult`. It must not parse, compute
or format. A day-long server log yields millions of samples: no pydantic per sample.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from ._made import MadeWhenRead
from .diagnostics import Diagnostic

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import polars as pl

JSONValue = Any  # a JSON scalar or list; kept loose because settings come from logs


@dataclass(frozen=True, slots=True)
class Sample:
    """One value read from a log: a row of the tidy table without config and source."""

    metric: str
    value: float
    line: int
    block: int | None = None
    run: int | None = None
    rank: str | None = None
    ts: str | None = None


@dataclass(frozen=True, slots=True)
class Setting:
    """A setting of the source (block None) or of one block."""

    key: str
    value: JSONValue
    line: int | None = None
    block: int | None = None


@dataclass(frozen=True, slots=True)
class BlockStart:
    """The start of a block (serving result, phase block, benchmark invocation)."""

    block: int
    line: int
    format: str


@dataclass(frozen=True, slots=True)
class BlockStarts:
    """The starts of many blocks at once (a fast path's phase blocks): what a `BlockStart`
    each would say, as arrays (block indices and their lines, in the same order)."""

    blocks: npt.NDArray[np.int64]
    lines: npt.NDArray[np.int64]
    format: str


@dataclass(frozen=True, slots=True)
class SummaryItem:
    """One entry of the source's summary (the overall figures printed or recomputed)."""

    key: str
    value: JSONValue


Record = Sample | Setting | BlockStart | BlockStarts | SummaryItem | Diagnostic


class BlockInfo(BaseModel):
    """A block of a source: where it starts, its format, its own settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    block: int
    line: int
    format: str
    settings: dict[str, JSONValue] = Field(default_factory=dict)


class Blocks(MadeWhenRead[BlockInfo]):
    """A source's blocks in the order of their index: `BlockInfo`s, and plain ones (no
    settings: a server log's phase blocks, millions in a day-long log) held as arrays of
    block index and line until read (a `BlockInfo` each would hold ~600 bytes)."""

    __slots__ = ("_given", "_made", "_plain")
    _item = BlockInfo

    def __init__(
        self,
        given: Iterable[BlockInfo] = (),
        plain: Sequence[BlockStarts] = (),
    ) -> None:
        self._given = list(given)  # in the order of their index when `plain` is given
        self._plain = list(plain)
        self._made: list[BlockInfo] | None = None if self._plain else self._given

    def _dumped(self) -> list[dict[str, Any]]:
        """As `list[BlockInfo]` dumps (the plain blocks without making their objects)."""
        if not self._plain:
            return [b.model_dump() for b in self._given]
        return [
            b.model_dump() if isinstance(b, BlockInfo) else b
            for b in self._merged(
                lambda i, line, fmt: {"block": i, "line": line, "format": fmt, "settings": {}}
            )
        ]

    def _merged(self, make: Any) -> list[Any]:
        import numpy as np

        index = np.concatenate([p.blocks for p in self._plain])
        lines = np.concatenate([p.lines for p in self._plain])
        formats = [p.format for p in self._plain for _ in range(len(p.blocks))]
        order = np.argsort(index, kind="stable")
        plain = [
            make(i, line, formats[k])
            for i, line, k in zip(
                index[order].tolist(), lines[order].tolist(), order.tolist(), strict=True
            )
        ]
        if not self._given:
            return plain
        keys = [b.block for b in self._given]
        at = np.searchsorted(index[order], keys, side="left").tolist()
        out: list[Any] = []
        prev = 0
        for b, k in zip(self._given, at, strict=True):
            out += plain[prev:k]
            out.append(b)
            prev = k
        return out + plain[prev:]

    def _all(self) -> list[BlockInfo]:
        if self._made is None:
            self._made = self._merged(
                lambda i, line, fmt: BlockInfo(block=i, line=line, format=fmt)
            )
        return self._made

    def with_settings(self) -> Iterator[BlockInfo]:
        """The blocks that have settings, in order (no plain block has any): for readers of
        block settings, without making an object of each of millions of phase blocks."""
        return (b for b in self._given if b.settings)

    def __len__(self) -> int:
        return len(self._given) + sum(len(p.blocks) for p in self._plain)


class SourceInfo(BaseModel):
    """Provenance and metadata of one input file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    format: str | None
    embedded_formats: list[str] = Field(default_factory=list)
    lines: int = 0
    bytes: int = 0
    sha256: str = ""
    settings: dict[str, JSONValue] = Field(default_factory=dict)
    summary: dict[str, JSONValue] = Field(default_factory=dict)
    blocks: Blocks = Field(default_factory=Blocks)
    record_counts: dict[str, int] = Field(default_factory=dict)
    samples: int = 0


SAMPLE_COLUMNS: tuple[str, ...] = (
    "config",
    "source",
    "line",
    "block",
    "run",
    "rank",
    "ts",
    "metric",
    "value",
)


# The columns of a `SampleBatch`: a source's samples, before config and source are known.
BATCH_COLUMNS: tuple[str, ...] = SAMPLE_COLUMNS[2:]

# The tidy table of DESIGN §3 as given out: the stored columns, and the launch and load point
# of each row (derived from its source and line, and its source and block, when the table is
# read: the parsers do not know them, the session decides them from every file of a folder).
TIDY_COLUMNS: tuple[str, ...] = (*SAMPLE_COLUMNS[:7], "launch", "load", *SAMPLE_COLUMNS[7:])

# A source's launches: (first line, launch name) in line order; the first starts at line 0.
LaunchSpans = list[tuple[int, str]]


def batch_schema() -> dict[str, Any]:
    """The polars types of `BATCH_COLUMNS`."""
    schema = _schema()
    return {c: schema[c] for c in BATCH_COLUMNS}


def batch_columns(samples: Sequence[Sample]) -> dict[str, list[Any]]:
    """`Sample`s as the lists of `BATCH_COLUMNS` (values as floats)."""
    return {
        "line": [s.line for s in samples],
        "block": [s.block for s in samples],
        "run": [s.run for s in samples],
        "rank": [s.rank for s in samples],
        "ts": [s.ts for s in samples],
        "metric": [s.metric for s in samples],
        "value": [float(s.value) for s in samples],
    }


def batch_frame(samples: Sequence[Sample]) -> pl.DataFrame:
    """`Sample`s as a frame of `BATCH_COLUMNS` (a `SampleBatch`'s)."""
    import polars as pl

    return pl.DataFrame(batch_columns(samples), schema=batch_schema())


class SampleBatch:
    """Samples of many lines at once (a parser's fast path), as a polars frame with the
    columns `line`, `block`, `run`, `rank`, `ts`, `metric` and `value` (the strings as
    String or Categorical)."""

    __slots__ = ("frame",)

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __len__(self) -> int:
        return self.frame.height

    def samples(self) -> Iterator[Sample]:
        """The rows as `Sample`s, in order (for a consumer that takes no batches)."""
        cols = self.frame.select(BATCH_COLUMNS)
        for line, block, run, rank, ts, metric, value in cols.iter_rows():
            yield Sample(metric, value, line, block, run, rank, ts)

    def hand_over(self, sink: Callable[[SampleBatch], None] | None) -> Iterator[Sample]:
        """The batch to a fast path's `sink`; where there is none, its rows as `Sample`s."""
        if sink is not None:
            sink(self)
        else:
            yield from self.samples()


# Rows added one by one are kept as Python lists up to this many, then packed into a
# columnar part: a Python row costs ~140 bytes, a packed one ~40.
_PACK_ROWS = 1 << 16
_JOIN_ROWS = 1 << 18  # rows of one source's consecutive parts joined into one (`_append`); more
# would cost memory where the parts are read as strings (a Parquet file: +60 MB at 1M rows)
_STRING_COLUMNS = ("config", "source", "rank", "ts", "metric")


class SampleColumns:
    """Tidy rows gathered column by column; turned into a polars frame only when asked.

    Rows come one at a time (`add`) or as whole batches (`add_batch`). Big tables are held
    as packed polars parts: a batch's config and source once for the part, block and run
    numbers in 32 bits, and each string column as codes into the part's own list of its
    distinct strings (`_encoded`: one byte a row for a metric or a rank, two for the
    timestamps of a few thousand lines). A vLLM engine line's six samples take 16 bytes
    each. A small table stays plain Python lists and never imports polars.
    """

    __slots__ = (
        "_block",
        "_config",
        "_folded",
        "_launches",
        "_line",
        "_loads",
        "_metric",
        "_part_keys",
        "_parts",
        "_rank",
        "_run",
        "_run_from",
        "_run_rows",
        "_source",
        "_ts",
        "_value",
        "_words",
    )

    def __init__(self) -> None:
        self._parts: list[pl.DataFrame] = []
        # per part: what all its rows share (config, source and, when one, rank), or None
        # when the part holds those columns
        self._part_keys: list[_PartKey | None] = []
        # per part: the strings its coded columns' codes stand for (`_encoded`)
        self._words: list[dict[str, pl.Series]] = []
        self._run_from = 0  # the first part of the run of parts that may still be joined
        self._run_rows = 0  # the rows of that run
        self._config: list[str] = []
        self._source: list[str] = []
        self._line: list[int] = []
        self._block: list[int | None] = []
        self._run: list[int | None] = []
        self._rank: list[str | None] = []
        self._ts: list[str | None] = []
        self._metric: list[str] = []
        self._value: list[float] = []
        # per source, its launches (`set_launches`), and the load point of its blocks
        self._launches: dict[str, LaunchSpans] = {}
        self._loads: dict[tuple[str, int], str] = {}
        # whether a source's ranks' rows were combined as it was read (`_rankfold`)
        self._folded = False

    def set_launches(self, launches: dict[str, LaunchSpans]) -> None:
        """The launches of each source (DESIGN §5): the `launch` column. A source not named
        has no launch (null)."""
        self._launches = dict(launches)

    def set_loads(self, loads: dict[tuple[str, int], str]) -> None:
        """The load point of (source, block) pairs (DESIGN §5): the `load` column."""
        self._loads = dict(loads)

    @property
    def launches(self) -> dict[str, LaunchSpans]:
        """Each source's launches, as set."""
        return self._launches

    @property
    def loads(self) -> dict[tuple[str, int], str]:
        """The load point of (source, block) pairs, as set."""
        return self._loads

    def __len__(self) -> int:
        return len(self._value) + sum(p.height for p in self._parts)

    @property
    def folded(self) -> bool:
        """Whether rows of a source's ranks were combined as it was read (`_rankfold`, for
        `report`): the table then holds a group's row where it held the group's rows, and
        the analysis combines the rows left (each alone in its group) as it would have."""
        return self._folded

    def mark_folded(self) -> None:
        """Say that rows of ranks were combined as they were read (`folded`)."""
        self._folded = True

    def add(self, config: str, source: str, s: Sample) -> None:
        """Append one sample of a source."""
        self._config.append(config)
        self._source.append(source)
        self._line.append(s.line)
        self._block.append(s.block)
        self._run.append(s.run)
        self._rank.append(s.rank)
        self._ts.append(s.ts)
        self._metric.append(s.metric)
        self._value.append(float(s.value))
        if len(self._value) >= _PACK_ROWS:
            self._pack()

    def add_batch(self, config: str, source: str, batch: SampleBatch) -> None:
        """Append a batch of samples of a source (after the rows added so far)."""
        import polars as pl

        self._pack()
        f = batch.frame
        if f.height == 0:
            return
        # Held in fewer bytes than read back (`lazy_parts` casts to the schema): line
        # numbers in 32 bits while they fit, block and run numbers (the parsers' own
        # counters) in 32 bits, a rank that all rows share once for the part, and the
        # strings as codes (`_encoded`).
        cols = [_held_lines(f["line"])]
        for name in ("block", "run"):  # all None (most batches): left out, filled when read
            if name in f.columns and f[name].null_count() < f.height:
                cols.append(f[name].cast(pl.Int32))
        rank = _only(f["rank"])
        coded = ["ts", "metric"] if rank is not None else ["rank", "ts", "metric"]
        words = {}
        for name in coded:
            codes, words[name] = _encoded(f[name])
            cols.append(codes)
        cols.append(_held_values(f["value"].cast(pl.Float64), words))
        self._append(pl.DataFrame(cols), _PartKey(config, source, rank), words)

    def _append(
        self, part: pl.DataFrame, key: _PartKey | None, words: dict[str, pl.Series]
    ) -> None:
        """Add a packed part. Consecutive parts of one source (the same key and columns)
        are joined into one once they hold `_JOIN_ROWS` rows, or when another source's
        part comes: a day-long log's hundreds of chunk parts become a few, and what reads
        the table part by part (a query each) runs a few times instead of hundreds."""
        parts, keys = self._parts, self._part_keys
        start = self._run_from
        if start < len(parts) and (
            keys[start] != key or _layout(parts[start], self._words[start]) != _layout(part, words)
        ):
            self._join(start)
            start = self._run_from = len(parts)
            self._run_rows = 0
        parts.append(part)
        keys.append(key)
        self._words.append(words)
        self._run_rows += part.height
        if self._run_rows >= _JOIN_ROWS:
            self._join(start)
            self._run_from, self._run_rows = len(parts), 0

    def _join(self, start: int) -> None:
        """Join parts[start:] (of one key and columns) into one part, the codes of each
        coded column made codes into the joined list of its strings."""
        import polars as pl

        if len(self._parts) - start < 2:
            return
        parts, words = self._parts[start:], self._words[start:]
        cols: list[pl.Series] = []
        joined: dict[str, pl.Series] = {}
        for name in parts[0].columns:
            if name == "value" and name in words[0]:  # values as scaled integers
                scales = [int(w[name][0]) for w in words]  # every part's: one layout
                if len(set(scales)) == 1:  # of one scale
                    cols.append(pl.concat([p[name] for p in parts], rechunk=True))
                    joined[name] = words[0][name]
                    continue
                values = pl.concat(
                    [unscaled(p[name], k) for p, k in zip(parts, scales, strict=True)]
                )
                cols.append(_held_values(values, joined))
            elif name in words[0]:
                codes, joined[name] = _recoded([p[name] for p in parts], [w[name] for w in words])
                cols.append(codes)
            else:
                cols.append(pl.concat([p[name] for p in parts], rechunk=True))
        del self._parts[start + 1 :], self._part_keys[start + 1 :], self._words[start + 1 :]
        self._parts[start] = pl.DataFrame(cols)
        self._words[start] = joined

    def extend(self, other: SampleColumns) -> None:
        """Append every row of another table."""
        if other._parts:
            self._pack()
            self._parts.extend(other._parts)
            self._part_keys.extend(other._part_keys)
            self._words.extend(other._words)
            # the other table's parts are not joined
            self._run_from, self._run_rows = len(self._parts), 0
        for name in SAMPLE_COLUMNS:
            getattr(self, "_" + name).extend(getattr(other, "_" + name))
        self._folded = self._folded or other._folded

    def _pack(self) -> None:
        """Move the rows held as Python lists into a packed part."""
        if not self._value:
            return
        import polars as pl

        part = pl.DataFrame(
            {name: getattr(self, "_" + name) for name in SAMPLE_COLUMNS}, schema=_schema()
        )
        words = {}
        for name in _STRING_COLUMNS:
            codes, words[name] = _encoded(part[name])
            part = part.with_columns(codes)
        part = part.with_columns(_held_values(part["value"], words))
        self._append(part, None, words)
        for name in SAMPLE_COLUMNS:
            getattr(self, "_" + name).clear()

    # ------------------------------------------------------------------ reading

    def _column(self, name: str) -> list[Any]:
        held: list[Any] = getattr(self, "_" + name)
        if not self._parts:
            return held
        return self.frame()[name].to_list()

    @property
    def config(self) -> list[str]:
        return self._column("config")

    @property
    def source(self) -> list[str]:
        return self._column("source")

    @property
    def line(self) -> list[int]:
        return self._column("line")

    @property
    def block(self) -> list[int | None]:
        return self._column("block")

    @property
    def run(self) -> list[int | None]:
        return self._column("run")

    @property
    def rank(self) -> list[str | None]:
        return self._column("rank")

    @property
    def ts(self) -> list[str | None]:
        return self._column("ts")

    @property
    def metric(self) -> list[str]:
        return self._column("metric")

    @property
    def value(self) -> list[float]:
        return self._column("value")

    def metric_names(self) -> set[str]:
        """The metrics present (without building the table)."""
        names = set(self._metric)
        for words in self._words:  # each string of a part's list is some row's
            names.update(words["metric"].to_list())
        return names

    def keyed_ranks(self) -> dict[str, set[str]]:
        """Per source, the ranks of its rows that have both a rank and a timestamp (the
        rows of which DP groups are formed), read from each part's codes: no timestamp or
        rank string is made a row (on a 1 GB DP-attention log, 0.6 s as a decoded query)."""
        import polars as pl

        out: dict[str, set[str]] = {}
        keyed = pl.col("ts").is_not_null() & pl.col("rank").is_not_null()
        for part, key, words in zip(self._parts, self._part_keys, self._words, strict=True):
            if key is not None and key.rank is not None:  # one rank for every row
                if key.rank[0] is not None and part["ts"].null_count() < part.height:
                    out.setdefault(key.source, set()).add(key.rank[0])
                continue
            cols = ["rank"] if key is not None else ["source", "rank"]
            pairs = part.lazy().filter(keyed).select(cols).unique().collect()
            ranks = words["rank"].gather(pairs["rank"]).to_list()
            if key is not None:
                out.setdefault(key.source, set()).update(ranks)
            else:
                for src, rank in zip(words["source"].gather(pairs["source"]), ranks, strict=True):
                    out.setdefault(src, set()).add(rank)
        for src, rank, ts in zip(self._source, self._rank, self._ts, strict=True):
            if rank is not None and ts is not None:  # the rows not packed yet
                out.setdefault(src, set()).add(rank)
        return out

    def first_ts(self, sources: Iterable[str]) -> dict[str, str]:
        """The first timestamp (in line order) each of these sources prints, where it has one."""
        import polars as pl

        wanted = list(sources)
        if not wanted or len(self) == 0:
            return {}
        found = (
            self.lazy(categorical=True)
            .with_columns(pl.col("source", "ts").cast(pl.String))
            .filter(pl.col("source").is_in(wanted) & pl.col("ts").is_not_null())
            .group_by("source")
            .agg(pl.col("ts").sort_by("line").first())
            .collect()
        )
        return dict(zip(found["source"].to_list(), found["ts"].to_list(), strict=True))

    def rows(self) -> list[dict[str, Any]]:
        """The rows as dicts in the tidy table's column order (for JSON)."""
        if not self._parts and not self._launches and not self._loads:
            held = [self._column(name) for name in SAMPLE_COLUMNS]
            cols = [*held[:7], [None] * len(self._value), [None] * len(self._value), *held[7:]]
        else:
            frame = self.frame()
            cols = [frame[name].to_list() for name in TIDY_COLUMNS]
        return [dict(zip(TIDY_COLUMNS, row, strict=True)) for row in zip(*cols, strict=True)]

    def lazy(self, *, categorical: bool = False) -> pl.LazyFrame:
        """The tidy table as a lazy frame (strings as categoricals if asked): for streaming
        it to a file, or for grouping without building string columns."""
        import polars as pl

        parts = self.lazy_parts(categorical=categorical)
        return parts[0] if len(parts) == 1 else pl.concat(parts, how="vertical")

    def frames(self, *, categorical: bool = False) -> Iterator[pl.DataFrame]:
        """The tidy table part by part, in order (never the whole table in one frame)."""
        for lf in self.lazy_parts(categorical=categorical):
            yield lf.collect()

    def lazy_parts(self, *, categorical: bool = False) -> list[pl.LazyFrame]:
        """The tidy table as lazy frames, part by part, in order (for reading a few rows of
        every part without building the whole table). It joins the last run of parts (the
        same rows, fewer parts): like adding rows, not for two threads at once.

        With `categorical` (the analysis' own reads) the strings stay categoricals and the
        stored columns are all there is; without it (the table as given out) each row's
        `launch` and `load` are added."""
        return self._lazy_parts(categorical=categorical, tidy=not categorical)

    def _lazy_parts(self, *, categorical: bool, tidy: bool) -> list[pl.LazyFrame]:
        """`lazy_parts`, the strings as categoricals or not, with `launch` and `load`
        (`tidy`) or not."""
        import polars as pl

        self._join(self._run_from)
        self._run_from, self._run_rows = len(self._parts), 0
        text = pl.Categorical if categorical else pl.String
        parts = [
            p.lazy().with_columns(
                [_decoded(name, w, text) for name, w in words.items()]
                + ([] if key is None else key.columns())
            )
            for p, key, words in zip(self._parts, self._part_keys, self._words, strict=True)
        ]
        if self._value or not parts:
            held = pl.DataFrame(
                {name: getattr(self, "_" + name) for name in SAMPLE_COLUMNS}, schema=_schema()
            )
            parts.append(held.lazy())
        schema = _schema()
        out = []
        keys = [*self._part_keys, *([None] if len(parts) > len(self._part_keys) else [])]
        for lf, key in zip(parts, keys, strict=True):
            have = lf.collect_schema().names()
            cols = [
                (pl.col(name).cast(text if name in _STRING_COLUMNS else schema[name]))
                if name in have
                else pl.lit(None, schema[name]).alias(name)
                for name in SAMPLE_COLUMNS
            ]
            if tidy:
                source = None if key is None else key.source
                cols[7:7] = [
                    _launch_expr(self._launches, source).cast(text).alias("launch"),
                    _load_expr(self._loads, source).cast(text).alias("load"),
                ]
            out.append(lf.select(cols))
        return out

    def drain(self) -> Iterator[Drained]:
        """Every row once, part by part in order, each part let go of as it is handed out:
        the table is empty afterwards (its launches and loads stay). For a reader that
        needs the rows once and keeps what it makes of them (`analyze(..., consume=True)`),
        so that a day-long log's table is not held beside it. A part comes with its
        columns as stored (narrow integers, strings as categoricals, `block` and `run`
        only where some row has one, strings as codes with the strings they stand for)
        and what all its rows share, held once."""
        self._pack()
        self._join(self._run_from)
        parts, keys, words = self._parts, self._part_keys, self._words
        self._parts, self._part_keys, self._words = [], [], []
        self._run_from = self._run_rows = 0
        parts.reverse()
        keys.reverse()
        words.reverse()
        while parts:
            part, key, coded = parts.pop(), keys.pop(), words.pop()
            if key is None:
                yield Drained(None, None, None, part, coded)
            else:
                yield Drained(key.config, key.source, key.rank, part, coded)
            del part

    def frame(self) -> pl.DataFrame:
        """The tidy table of DESIGN §3 as a polars DataFrame."""
        return self.lazy().collect()

    def write_parquet(self, target: str | Path | BinaryIO) -> None:
        """Write the tidy table as Parquet to a path or a binary file, streamed part by part
        (the string columns are never built for the whole table at once).

        The strings are written from their categoricals, as dictionary pages (no string is
        made and hashed again per row), and the file's Arrow schema, which would have
        readers give them back as categoricals, is then left out: every reader reads the
        Parquet types, strings (`_parquet.without_arrow_schema`)."""
        import io
        import os

        import polars as pl

        parts = self._lazy_parts(categorical=True, tidy=True)
        lf = parts[0] if len(parts) == 1 else pl.concat(parts, how="vertical")
        if isinstance(target, (str, Path)):
            if "://" in str(target):  # a URL polars writes to: strings, as strings
                self.lazy().sink_parquet(target)
                return
            path = Path(os.path.expanduser(target))
            lf.sink_parquet(path)
            with open(path, "r+b") as fh:  # mended where it lies: only the footer is read
                mended = _mend(fh)
            if not mended:  # a footer this reader does not know: written as strings
                self.lazy().sink_parquet(path)
            return
        buf = io.BytesIO()
        lf.sink_parquet(buf)
        if not _mend(buf):  # a footer this reader does not know: written as strings
            buf = io.BytesIO()
            self.lazy().sink_parquet(buf)
        with buf.getbuffer() as view:
            done = 0
            while done < len(view):  # a raw file may take a few bytes at a time
                n = target.write(view[done:])
                done = len(view) if n is None else done + n


def _mend(fh: BinaryIO) -> bool:
    """Leave the Arrow schema out of the footer of the Parquet file open in `fh` (read and
    written, at any position), reading only the footer; False, the file left as it is,
    when this reader does not know the footer (`_parquet.footer_without_arrow_schema`)."""
    import struct

    from . import _parquet

    size = fh.seek(0, 2)
    if size < 12:
        return False
    fh.seek(size - 8)
    (length,) = struct.unpack("<i", fh.read(4))
    if not 0 < length <= size - 12:
        return False
    at = size - 8 - length  # where the footer starts
    fh.seek(at)
    try:  # the footer read as a file of its own
        start, tail = _parquet.footer_without_arrow_schema(b"PAR1" + fh.read())
    except ValueError:
        return False
    fh.seek(at + start - 4)
    fh.truncate()
    fh.write(tail)
    return True


class Drained(NamedTuple):
    """A part of a drained table (`SampleColumns.drain`): its rows, the config, source
    and rank all of them share where the part holds no such column (None: it holds it;
    `rank` is a 1-tuple of the shared rank), and the strings of each coded column of the
    frame, by code (`words[name][code]`). Where `words` has a `value`, the frame's values
    are scaled integers: `unscaled(frame["value"], scale_of(words))` are the values."""

    config: str | None
    source: str | None
    rank: tuple[str | None] | None
    frame: pl.DataFrame
    words: dict[str, pl.Series]


def _code_type(n: int) -> Any:
    """The narrowest unsigned type of codes into n strings."""
    import polars as pl

    return pl.UInt8 if n <= 1 << 8 else pl.UInt16 if n <= 1 << 16 else pl.UInt32


def _encoded(column: pl.Series) -> tuple[pl.Series, pl.Series]:
    """A column of strings as codes into the list of its distinct strings (in the order
    first seen; a null is a null code), the codes in the narrowest unsigned type.

    A categorical column (what the fast paths hand over) is coded from its categories'
    numbers, no string made a row. Of other columns, only the first row of each run of
    equal rows is looked up: the samples of one line share its timestamp, and a line's
    rank and metrics repeat, so their strings are hashed about once a line."""
    import numpy as np
    import polars as pl

    if not isinstance(column.dtype, pl.Categorical):
        strings = column.cast(pl.String)
        new = strings.ne_missing(strings.shift(1)).to_numpy()
        if len(new):
            new[0] = True
        starts = np.flatnonzero(new)
        heads = strings.gather(starts)
        words = _copied(heads.drop_nulls().unique(maintain_order=True))
        codes = heads.cast(pl.Enum(words)).to_physical().cast(_code_type(len(words)))
        if len(starts) < column.len():
            codes = codes.gather(np.cumsum(new) - 1)
    else:  # coded from the categories' numbers: no string made a row
        keys = column.to_physical()
        coded = _encoded_numbers(column, keys)
        if coded is not None:
            return coded
        first = keys.arg_unique()  # in the order first seen
        seen = keys.gather(first)
        first = first.filter(seen.is_not_null())
        seen = seen.drop_nulls()
        # strings of the categories, which outlive the column anyway: no chunk text held
        words = column.gather(first).cast(pl.String)
        kind = _code_type(len(words))
        top, low = seen.max(), seen.min()
        local = np.arange(len(seen))
        if not isinstance(top, int) or not isinstance(low, int):  # no string: all null
            codes = keys.cast(kind)
        elif top - low > 16 * len(keys) + (1 << 16):  # sparse numbers
            codes = keys.replace_strict(seen, pl.Series(local), return_dtype=kind).cast(kind)
        else:
            # a table of the numbers from the least (a batch's timestamps are recent ones:
            # a narrow range high among the process' numbers, which grow with the log)
            lut = np.zeros(top - low + 1, np.int64)
            lut[seen.to_numpy() - low] = local
            at = keys - low if low else keys  # a null number stays null
            codes = pl.Series(lut).cast(kind).gather(at)
    return codes.alias(column.name), words


def _held_lines(line: pl.Series) -> pl.Series:
    """A batch's line numbers in 32 bits where they fit, else in 64 (with numpy on the
    calling thread where none is null: `_encoded_numbers`)."""
    import numpy as np
    import polars as pl

    if line.null_count() or not line.dtype.is_integer():
        top = line.max()
        narrow = isinstance(top, int) and 0 <= top < 1 << 32 and line.min() >= 0  # type: ignore[operator]
        return line.cast(pl.UInt32 if narrow else pl.Int64)
    v = line.to_numpy()  # (a view: no nulls)
    if int(v.min()) >= 0 and int(v.max()) < 1 << 32:
        return pl.Series(line.name, v.astype(np.uint32))
    return line.cast(pl.Int64)


def _only(column: pl.Series) -> tuple[str | None] | None:
    """The one string (or null) every row of a string column holds, None when they differ;
    by the categories' numbers of a categorical (one for one string), not by hashing."""
    import polars as pl

    nulls = column.null_count()
    if nulls == column.len():
        return (None,)
    if nulls:
        return None
    keys = column.to_physical() if isinstance(column.dtype, pl.Categorical) else column
    return (column[0],) if keys.min() == keys.max() else None


def _encoded_numbers(column: pl.Series, keys: pl.Series) -> tuple[pl.Series, pl.Series] | None:
    """`_encoded` of a categorical column with no null and close numbers (`keys`, its
    categories' numbers), with numpy on the calling thread: polars would hash the numbers
    and gather the codes on its thread pool, which the chunk-reading threads keep busy
    while the walking thread hands their batches over (a 1 GB DP report: 1.8 s of the walk
    in `_encoded`, a fifth of that with the pool idle). None when there is a null or the
    numbers are far apart (the caller's polars path)."""
    import numpy as np
    import polars as pl

    n = keys.len()
    if n == 0 or keys.null_count():
        return None
    k = keys.to_numpy()
    low, top = int(k.min()), int(k.max())
    span = top - low + 1
    if span > 16 * n + (1 << 16):
        return None
    at = k.astype(np.intp)  # each row's number from the least, as numpy indexes with
    if low:
        at -= low
    first = _first_rows(at, span)
    present = np.flatnonzero(first < n)
    seen = present[np.argsort(first[present], kind="stable")]  # in the order first seen
    m = len(seen)
    lut = np.zeros(span, np.uint8 if m <= 1 << 8 else np.uint16 if m <= 1 << 16 else np.uint32)
    lut[seen] = np.arange(m)
    words = column.gather(first[seen]).cast(pl.String)
    return pl.Series(column.name, lut[at]), words


def _first_rows(at: npt.NDArray[np.intp], span: int) -> npt.NDArray[np.intp]:
    """Each number in range(span)'s first row in `at` (len(at) where it is absent). Of a
    column in runs (a batch's timestamps, its ranks) only each run's first row is looked
    at; of one without (its metrics, a line's fields in turn), rows from the top, in
    growing prefixes, until every number present is found (a few distinct numbers are
    all met early)."""
    import numpy as np

    n = len(at)
    first = np.full(span, n, np.intp)
    change = np.empty(n, np.bool_)
    change[0] = True
    np.not_equal(at[1:], at[:-1], out=change[1:])
    if np.count_nonzero(change) <= n // 4:
        heads = np.flatnonzero(change)
        np.minimum.at(first, at[heads], heads)
        return first
    present = np.count_nonzero(np.bincount(at, minlength=span))
    done, size = 0, _FIRST_PREFIX
    while done < n:
        size = min(size, n)
        np.minimum.at(first, at[done:size], np.arange(done, size, dtype=np.intp))
        done, size = size, size * 16
        if np.count_nonzero(first < n) == present:
            break
    return first


_FIRST_PREFIX = 4096  # rows looked at first for the numbers of a column without runs


def _copied(strings: pl.Series) -> pl.Series:
    """Strings of their own. A polars column of strings taken from others (a gather, a
    slice, `unique`) points into the buffers of those (a chunk's whole text, where a
    parser sliced its timestamps from the lines), and would keep them alive with the
    part; `shrink_to_fit` does not always copy them out."""
    import polars as pl

    return pl.Series(strings.name, strings.to_list(), pl.String)


def _recoded(codes: list[pl.Series], words: list[pl.Series]) -> tuple[pl.Series, pl.Series]:
    """Columns of codes, each into its own list of strings, as one column of codes into
    the joined list (each string once)."""
    import polars as pl

    joined = _copied(pl.concat(words).unique(maintain_order=True))
    kind = _code_type(len(joined))
    moved = [
        w.cast(pl.Enum(joined)).to_physical().cast(kind).gather(c)  # a null code stays null
        for c, w in zip(codes, words, strict=True)
    ]
    return pl.concat(moved, rechunk=True).alias(codes[0].name), joined


def _decoded(name: str, words: pl.Series, kind: Any) -> pl.Expr:
    """A coded column as its strings (of type `kind`: String or Categorical); the values
    held as scaled integers as the values."""
    import polars as pl

    if name == "value":  # divided by a column: by a number, polars is not exact
        scale = int(words[0])

        def divided(held: pl.Series) -> pl.Series:
            return unscaled(held, scale)

        return (
            pl.col(name)
            .map_batches(divided, return_dtype=pl.Float64, is_elementwise=True)
            .alias(name)
        )
    return pl.lit(words.cast(kind)).gather(pl.col(name)).alias(name)


# Values are held as integers m with value = m / 10**k (`_held_values`) for k up to this:
# 10**k is exact in a double, and a value of k decimals and 32 bits of digits is m / 10**k.
_MAX_SCALE = 9
_HEAD = 4096  # values a scale is guessed from before every value is checked at it


def _held_values(values: pl.Series, words: dict[str, pl.Series]) -> pl.Series:
    """A part's values as held: in four bytes where they can be, as 32-bit integers m with
    each value m / 10**k bit for bit (the scale k then said in `words["value"]`), else as
    doubles. A value printed with k decimals is the double nearest that decimal, and so is
    m / 10**k (IEEE division is correctly rounded, and both numbers are exact doubles): a
    log's values are held in half the bytes, and read back as the same doubles. Checked bit
    for bit on every value: a value not finite, a negative zero, or one of more digits (a
    sum the parser computed) keeps the part's values doubles."""
    import polars as pl

    v = values.to_numpy()
    if len(v) == 0 or values.null_count():
        return values.alias("value")
    # the least scale of the first values, then that and a few more decimals for them all
    guess = next((k for k in range(_MAX_SCALE + 1) if _held_at(v[:_HEAD], k) is not None), None)
    if guess is None:
        return values.alias("value")
    for k in range(guess, min(guess + _MORE_DIGITS, _MAX_SCALE) + 1):
        held = _held_at(v, k)
        if held is not None:
            words["value"] = pl.Series("value", [k], pl.Int8)
            return pl.Series("value", held)
    return values.alias("value")


_MORE_DIGITS = 2  # decimals beyond the first values' that the rest may need


def _held_at(v: npt.NDArray[np.float64], k: int) -> npt.NDArray[np.int32] | None:
    """The values as 32-bit integers m with each value m / 10**k bit for bit, or None when
    one is not (too big for 32 bits, not finite, a negative zero, more decimals)."""
    import numpy as np

    scale = 10.0**k
    with np.errstate(invalid="ignore", over="ignore"):
        m = v * scale  # one working array, reused (fresh ones cost more than the arithmetic)
        np.rint(m, out=m)
        if not (m.min() > -(1 << 31) and m.max() < 1 << 31):  # too big, or not finite (nan)
            return None
    held = m.astype(np.int32)
    np.divide(held, scale, out=m)  # back, as the values are read (`unscaled`)
    if not np.array_equal(m.view(np.int64), v.view(np.int64)):
        return None
    return held


def scale_of(words: dict[str, pl.Series]) -> int | None:
    """The scale k of a part's values held as integers (`_held_values`: each value is
    `unscaled(m, k)`), None when they are doubles."""
    scale = words.get("value")
    return None if scale is None else int(scale[0])


def unscaled(held: pl.Series, k: int) -> pl.Series:
    """Values held as scaled integers (`_held_values`) as the doubles they stand for, each
    divided by 10**k, correctly rounded: by a column of 10**k (polars' division by one
    number multiplies by its inverse, which is not correctly rounded: 3 / 10 would be
    0.30000000000000004)."""
    import polars as pl

    by = pl.Series([10.0**k], dtype=pl.Float64).new_from_index(0, len(held))
    return (held.cast(pl.Float64) / by).alias(held.name)


def _layout(part: pl.DataFrame, words: dict[str, pl.Series]) -> list[tuple[str, Any]]:
    """A part's columns and their types, a coded column's whatever the width of its codes:
    parts of one layout can be joined (`SampleColumns._join`)."""
    return [(n, None if n in words else t) for n, t in part.schema.items()]


class _PartKey(NamedTuple):
    """What every row of a packed part shares, held once for the part."""

    config: str
    source: str
    rank: tuple[str | None] | None  # the rank of every row (None: the part has the column)

    def columns(self) -> list[pl.Expr]:
        import polars as pl

        cols = [
            pl.lit(self.config, pl.String).alias("config"),
            pl.lit(self.source, pl.String).alias("source"),
        ]
        if self.rank is not None:
            cols.append(pl.lit(self.rank[0], pl.String).alias("rank"))
        return cols


_CHAINED = 16  # launches of a source found by a condition each; more, by a binary search


def _spans_expr(spans: LaunchSpans) -> pl.Expr:
    """The launch of a row of one source, by its line: the last launch that starts at or
    before it (the first one before any). Beyond `_CHAINED` launches, found by a binary
    search of the starts, not a condition a launch: a file of thousands of restarts (a
    crash loop, scrapes of two servers in one file) would make as many passes over its
    rows."""
    import polars as pl

    starts = [line for line, _ in spans[1:]]
    if len(starts) <= _CHAINED or any(b < a for a, b in itertools.pairwise(starts)):
        # a few launches (or not in line order): a condition each, which the Parquet sink
        # streams (the binary search makes it hold the column: 110 MB more on a 256 MB log)
        expr = pl.lit(spans[0][1], pl.String)
        for line, name in spans[1:]:
            expr = pl.when(pl.col("line") >= line).then(pl.lit(name, pl.String)).otherwise(expr)
        return expr
    if not starts:
        return pl.lit(spans[0][1], pl.String)
    at = pl.lit(pl.Series(starts, dtype=pl.Int64)).search_sorted(
        pl.col("line").cast(pl.Int64), side="right"
    )
    names = pl.Series([name for _, name in spans], dtype=pl.String)
    return pl.lit(names).gather(at.fill_null(0))


def _launch_expr(launches: dict[str, LaunchSpans], source: str | None) -> pl.Expr:
    """The `launch` column: of one known source (a packed part's), or by each row's source."""
    import polars as pl

    if source is not None:
        spans = launches.get(source)
        return _spans_expr(spans) if spans else pl.lit(None, pl.String)
    one = {s: v[0][1] for s, v in launches.items() if len(v) == 1}
    expr = (
        pl.col("source").cast(pl.String).replace_strict(one, default=None, return_dtype=pl.String)
    )
    for s, spans in launches.items():
        if len(spans) > 1:
            expr = (
                pl.when(pl.col("source").cast(pl.String) == s)
                .then(_spans_expr(spans))
                .otherwise(expr)
            )
    return expr


def _load_expr(loads: dict[tuple[str, int], str], source: str | None) -> pl.Expr:
    """The `load` column: the load point of each row's (source, block)."""
    import polars as pl

    if source is not None:
        mine = {block: load for (s, block), load in loads.items() if s == source}
        if not mine:
            return pl.lit(None, pl.String)
        return pl.col("block").replace_strict(mine, default=None, return_dtype=pl.String)
    if not loads:
        return pl.lit(None, pl.String)
    keyed = {f"{s}\x00{block}": load for (s, block), load in loads.items()}
    key = pl.concat_str(
        pl.col("source").cast(pl.String), pl.lit("\x00"), pl.col("block").cast(pl.String)
    )
    return key.replace_strict(keyed, default=None, return_dtype=pl.String)


def _schema() -> dict[str, Any]:
    import polars as pl

    return {
        "config": pl.String,
        "source": pl.String,
        "line": pl.Int64,
        "block": pl.Int64,
        "run": pl.Int64,
        "rank": pl.String,
        "ts": pl.String,
        "metric": pl.String,
        "value": pl.Float64,
    }


class ParseResult:
    """What parsing one or more files gives: sources, diagnostics and the tidy samples."""

    def __init__(
        self,
        sources: list[SourceInfo],
        diagnostics: list[Diagnostic],
        columns: SampleColumns,
    ) -> None:
        self.sources = sources
        self.diagnostics = diagnostics
        self.columns = columns

    @property
    def samples(self) -> pl.DataFrame:
        """The tidy sample table (DESIGN §3) as a polars DataFrame."""
        return self.columns.frame()

    def __repr__(self) -> str:
        return (
            f"ParseResult(sources={len(self.sources)}, samples={len(self.columns)}, "
            f"diagnostics={len(self.diagnostics)})"
        )
