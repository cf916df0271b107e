"""Records that flow from the parsers to the analysis, and the parse result.

Owns the record types a parser yields (`Sample`, `Setting`, `BlockStart`, `SummaryItem`),
the pydantic metadata of a source (`SourceInfo`, `BlockInfo`) and `ParseResult`. It must not
parse, compute or format. `Sample` is a slotted dataclass rather than a pydantic model: a
day-long server log yields millions of them, and validation would cost more than parsing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from .diagnostics import Diagnostic

if TYPE_CHECKING:
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
class SummaryItem:
    """One entry of the source's summary (the overall figures printed or recomputed)."""

    key: str
    value: JSONValue


Record = Sample | Setting | BlockStart | SummaryItem | Diagnostic


class BlockInfo(BaseModel):
    """A block of a source: where it starts, its format, its own settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    block: int
    line: int
    format: str
    settings: dict[str, JSONValue] = Field(default_factory=dict)


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
    blocks: list[BlockInfo] = Field(default_factory=list)
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


class SampleColumns:
    """Tidy rows gathered column by column; turned into a polars frame only when asked."""

    __slots__ = ("block", "config", "line", "metric", "rank", "run", "source", "ts", "value")

    def __init__(self) -> None:
        self.config: list[str] = []
        self.source: list[str] = []
        self.line: list[int] = []
        self.block: list[int | None] = []
        self.run: list[int | None] = []
        self.rank: list[str | None] = []
        self.ts: list[str | None] = []
        self.metric: list[str] = []
        self.value: list[float] = []

    def __len__(self) -> int:
        return len(self.value)

    def add(self, config: str, source: str, s: Sample) -> None:
        """Append one sample of a source."""
        self.config.append(config)
        self.source.append(source)
        self.line.append(s.line)
        self.block.append(s.block)
        self.run.append(s.run)
        self.rank.append(s.rank)
        self.ts.append(s.ts)
        self.metric.append(s.metric)
        self.value.append(float(s.value))

    def extend(self, other: SampleColumns) -> None:
        """Append every row of another table."""
        for name in SAMPLE_COLUMNS:
            getattr(self, name).extend(getattr(other, name))

    def rows(self) -> list[dict[str, Any]]:
        """The rows as dicts in column order (for JSON)."""
        cols = [getattr(self, name) for name in SAMPLE_COLUMNS]
        return [dict(zip(SAMPLE_COLUMNS, row, strict=True)) for row in zip(*cols, strict=True)]

    def frame(self) -> pl.DataFrame:
        """The tidy table of DESIGN §3 as a polars DataFrame."""
        import polars as pl

        return pl.DataFrame(
            {name: getattr(self, name) for name in SAMPLE_COLUMNS},
            schema={
                "config": pl.String,
                "source": pl.String,
                "line": pl.Int64,
                "block": pl.Int64,
                "run": pl.Int64,
                "rank": pl.String,
                "ts": pl.String,
                "metric": pl.String,
                "value": pl.Float64,
            },
        )


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
