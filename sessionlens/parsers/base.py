"""The parser plug-in point: the `Parser` protocol, `ParseContext`, and number helpers.

A parser is a module with `format_id`, `priority`, `sniff(head, name) -> float` and
`parse(src, ctx) -> Iterator[Record]`. It never raises on content: problems become
diagnostics through `ctx.warn`. It never opens files and never groups across sources.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from .. import diagnostics as dg
from .._lines import Line, SourceText
from ..model import Record, SampleBatch


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


# ------------------------------------------------------------------ numbers

NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_SPECIAL = {
    "nan": float("nan"),
    "inf": float("inf"),
    "-inf": float("-inf"),
    "infinity": float("inf"),
    "-infinity": float("-inf"),
}


def decimals_of(text: str) -> int:
    """Digits after the decimal point in a printed number."""
    body = text.split("e")[0].split("E")[0]
    return len(body.split(".", 1)[1]) if "." in body else 0


@dataclass(frozen=True, slots=True)
class Num:
    """A number read from a field, or why none could be read."""

    value: float | None
    cut: bool = False  # the field was cut mid-value: no sample, a `truncated-value`


def read_number(
    text: str,
    *,
    at_end: bool,
    line_cut: bool,
    decimals: int | None = None,
) -> Num:
    """Read a field's number by the rule of DESIGN §2.

    `text` is the field value with its terminator removed; `at_end` says that nothing (no
    delimiter, no unit) followed it on the line; `line_cut` that the line is a last line
    without `\\n`; `decimals` the fixed decimals of the format, if it has them. A value at
    the end of a cut line is complete only when its fixed decimals are all there; a value
    with fewer decimals than its format prints is cut wherever it stands.
    """
    t = text.strip()
    low = t.lower().rstrip("%")
    if low in _SPECIAL:
        return Num(_SPECIAL[low])
    m = NUMBER.fullmatch(t)
    if m is None:
        if at_end and line_cut and (t == "" or (NUMBER.match(t) is None and t in "-+.")):
            return Num(None, cut=True)
        return Num(None)
    if decimals is not None and decimals > 0 and decimals_of(t) < decimals:
        return Num(None, cut=True)
    if at_end and line_cut and not (decimals is not None and decimals > 0):
        return Num(None, cut=True)
    if t.endswith(".") or t.endswith("e") or t.endswith("E"):
        return Num(None, cut=True)
    return Num(float(t))
