"""The parser plug-in point: the `Parser` and line-reader protocols, and `ParseContext`.

A parser is a module with `format_id`, `priority`, `sniff(head, name) -> float` and
`parse(src, ctx) -> Iterator[Record]`. It never raises on content: problems become
diagnostics through `ctx.warn`. It never opens files and never groups across sources. A
format that embeds another (a server log printed into a benchmark's output) asks for its
reader by id, `ctx.embed(format_id)`, and never imports its module (STYLE "Parser floors").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from .. import diagnostics as dg
from .._lines import Line, SourceText
from ..model import BlockStarts, Record, SampleBatch

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import polars as pl


class Parser(Protocol):
    """What every format module provides (a module satisfies it structurally)."""

    format_id: str
    priority: int

    def sniff(self, head: str, name: str) -> float:
        """How sure the parser is (0–1) that a source with this head is its format."""
        ...

    def parse(self, src: SourceText, ctx: ParseContext) -> Iterator[Record]:
        """Records of the source, in line order."""
        ...


class LineReader(Protocol):
    """A line-level state machine: `feed` each line in order, then `finish`."""

    def feed(self, ln: Line) -> Iterator[Record]: ...

    def finish(self) -> Iterator[Record]: ...


class InlineReader(LineReader, Protocol):
    """A reader of records that stand among another format's lines (profiler phase lines
    in a server log): the outer reader asks it which lines it wants and whether it took
    the last one, and may hand it a rank and its block numbering."""

    @property
    def words(self) -> tuple[str, ...]:
        """Every line `starts` a record at holds one of these (for readers that pick lines)."""
        ...

    @property
    def idle(self) -> bool:
        """Nothing is open: a line `starts` nothing at changes nothing."""
        ...

    @property
    def blocks(self) -> int:
        """Blocks numbered so far."""
        ...

    @property
    def took_last(self) -> bool:
        """Whether the last line fed was one of its records."""
        ...

    def wants(self, text: str) -> bool: ...

    def feed(self, ln: Line, rank: str | None = None) -> Iterator[Record]: ...

    def number_with(self, next_block: Callable[[], int]) -> None: ...

    # A chunk path reads the records of many lines at once: `plan` on a worker thread,
    # then `take` on the reading thread, in line order, for the runs it reaches.

    def plan(
        self,
        t: pl.Series,
        rows: npt.NDArray[np.int64],
        rank_spans: RankSpans,
        split: str | None = None,
    ) -> PhasePlan: ...

    def take(self, plan: PhasePlan, lo: int, hi: int, first: int) -> BlockStarts | None: ...


# Where the rank an embedder hands with a line stands in it: (tag, start and width of its
# number) per rank tag, the same for every line that differs from it only in digits (in runs
# of the same width); the rank is the tags with their numbers, joined by spaces.
RankSpans = Callable[[str], tuple[tuple[str, int, int], ...]]


class PhasePlan(Protocol):
    """An inline reader's records of a chunk's lines read in bulk, in runs of consecutive
    lines (each run is read as feeding its lines and the line after it would read them)."""

    @property
    def planned(self) -> npt.NDArray[np.int64]:
        """The chunk rows read in bulk, ascending (those of the runs)."""
        ...

    @property
    def run_first(self) -> npt.NDArray[np.int64]:
        """The first chunk row of each run, ascending."""
        ...

    def samples(self) -> pl.DataFrame | None:
        """The samples of the runs taken, in order: an `emit` column (the chunk row that
        yields each; a sample comes before the other samples that row yields), `line` (the
        chunk row it was read from) and the other columns of a `SampleBatch`."""
        ...


class Embeddable(Protocol):
    """A format module whose reader other formats embed: `line_reader(ctx, **options)` gives a
    `LineReader` (or an `InlineReader`) of its lines."""

    format_id: str

    def line_reader(self, ctx: ParseContext, **options: Any) -> LineReader: ...


class Prefiltered:
    """A sniff regex searched only when the text holds one of `literals`, substrings every
    match contains (`in` on a 64 KB head takes microseconds; an alternation of many
    branches, milliseconds). Tested to agree with the bare regex on every fixture."""

    def __init__(self, pattern: re.Pattern[str], *literals: str) -> None:
        self.pattern = pattern
        self.literals = literals

    def search(self, text: str) -> re.Match[str] | None:
        if not any(lit in text for lit in self.literals):
            return None
        return self.pattern.search(text)


def read_lines(reader: LineReader, src: SourceText) -> Iterator[Record]:
    """Every line of the source through the reader, then what it still owes."""
    for ln in src.lines():
        yield from reader.feed(ln)
    yield from reader.finish()


@dataclass
class ParseContext:
    """Per-source state a parser reports into: diagnostics, record counts, embedded formats."""

    file: str
    diagnostics: list[dg.Diagnostic] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    embedded: set[str] = field(default_factory=set)
    # Where a parser may hand whole batches of samples (a fast path); None: it yields
    # `Sample`s one by one.
    sink: Callable[[SampleBatch], None] | None = None

    def warn(
        self, line: int | None, code: str, message: str, level: dg.Level | None = None
    ) -> None:
        """Record a problem at a line (the catalog gives the level unless one is passed)."""
        self.diagnostics.append(dg.make(code, self.file, line, message, level))

    def count(self, kind: str, n: int = 1) -> None:
        """Count one record of a kind (`decode`, `run`, `http-access`, …) for provenance."""
        self.counts[kind] += n

    def embed(self, format_id: str, **options: Any) -> LineReader:
        """The line reader of another format, found by id in the registry (`PARSERS`), for
        lines of that format inside this source; `options` go to its `line_reader`."""
        return cast(LineReader, self._embedded_reader(format_id, options))

    def embed_inline(self, format_id: str, **options: Any) -> InlineReader:
        """As `embed`, for a format whose records stand among the embedder's lines."""
        return cast(InlineReader, self._embedded_reader(format_id, options))

    def _embedded_reader(self, format_id: str, options: dict[str, Any]) -> object:
        # The registry lives in the package above (it imports every format); it is loaded
        # by the time a parser runs, so this import never imports a format module here.
        from . import embedded_reader

        return embedded_reader(format_id, self, options)
