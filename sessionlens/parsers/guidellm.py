"""`guidellm`: guidellm `benchmarks.json` / `.yaml` / `.csv` and its console tables.

Owns guidellm's metric names (`requests_per_second`, `time_to_first_token_ms`, ...), the
strategy of each benchmark (`synchronous`, `concurrent@16`, `constant@5.00`: its load point,
DESIGN §5) and the console's `|`-bordered tables with three header rows and merged cells,
also when a terminal wrapped their lines at 80 columns. One benchmark is one block and gives
one sample per statistic (of its successful requests). JSON is read by `_fields.JsonLines`,
YAML by `_fields.YamlLines`; nothing from a file is evaluated.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator

from .._lines import Line, SourceText
from ..model import BlockStart, Record, Sample, Setting
from . import _fields
from ._fields import JsonEvent, JsonLines, YamlLines, box_row, is_box_rule
from .base import ParseContext, read_lines

format_id = "guidellm"
priority = 12

# Distribution -> (metric or family, unit of its values, one value only (the mean)).
DISTRIBUTIONS: dict[str, tuple[str, str, bool]] = {
    "requests_per_second": ("request_throughput_req_s", "", True),
    "request_concurrency": ("concurrency", "", True),
    "output_tokens_per_second": ("output_throughput_tok_s", "", True),
    "prompt_tokens_per_second": ("input_throughput_tok_s", "", True),
    "tokens_per_second": ("total_throughput_tok_s", "", True),
    "request_latency": ("e2e_latency_ms", "s", False),
    "time_to_first_token_ms": ("ttft_ms", "ms", False),
    "inter_token_latency_ms": ("itl_ms", "ms", False),
    "time_per_output_token_ms": ("tpot_ms", "ms", False),
}
STATS = {"mean": "mean", "median": "median", "std_dev": "std", "min": "min", "max": "max"}
PERCENTILES = {
    "p01": "p1",
    "p05": "p5",
    "p10": "p10",
    "p25": "p25",
    "p50": "p50",
    "p75": "p75",
    "p90": "p90",
    "p95": "p95",
    "p99": "p99",
    "p999": "p999",
}
# Console and CSV column groups -> distribution.
GROUPS = {
    "request latency": "request_latency",
    "ttft": "time_to_first_token_ms",
    "time to first token": "time_to_first_token_ms",
    "itl": "inter_token_latency_ms",
    "inter token latency": "inter_token_latency_ms",
    "tpot": "time_per_output_token_ms",
    "time per output token": "time_per_output_token_ms",
}
THROUGHPUT = {
    ("requests", "per sec"): "requests_per_second",
    ("server throughput", "requests/sec"): "requests_per_second",
    ("requests", "concurrency"): "request_concurrency",
    ("server throughput", "concurrency"): "request_concurrency",
    ("output tokens", "per sec"): "output_tokens_per_second",
    ("token throughput", "output tokens/sec"): "output_tokens_per_second",
    ("input tokens", "per sec"): "prompt_tokens_per_second",
    ("token throughput", "input tokens/sec"): "prompt_tokens_per_second",
    ("total tokens", "per sec"): "tokens_per_second",
    ("token throughput", "total tokens/sec"): "tokens_per_second",
}
COLUMN_STATS = {"mean": "mean", "mdn": "median", "median": "median", "p95": "p95", "std dev": "std"}
_STRATEGY = re.compile(
    r"^(?P<t>synchronous|throughput|concurrent|constant|poisson|sweep)(?:@(?P<v>[\w.]+))?$"
)
# A report's strategy object (`config.strategy` in 0.8, `args.strategy` in 0.3) -> settings.
_STRATEGY_KEYS = {
    "type_": "strategy",
    "rate": "request_rate",
    "streams": "max_concurrency",
    "max_concurrency": "max_concurrency",
}
_SNIFF_JSON = re.compile(r'"(?:benchmarks)"\s*:\s*\[|"type_"\s*:\s*"generative_benchmark"')
_SNIFF_TEXT = re.compile(
    r"generative_benchmark|guidellm|Request Latency Statistics|Server Throughput Statistics"
    r"|Benchmarks Stats:?|\bBenchmark\s*\|\s*Request Latency"
)


def sniff(head: str, name: str) -> float:
    """Score: guidellm's report keys, YAML keys or console titles are decisive."""
    if "generative_benchmark" in head or (_SNIFF_JSON.search(head) and "strategy" in head):
        return 1.0
    if re.search(r"^benchmarks:\s*$", head, re.M) and "requests_per_second" in head:
        return 1.0
    if re.search(r"^(?:Benchmark|Run Info),", head, re.M) and "Strategy" in head:
        return 1.0
    if _SNIFF_TEXT.search(head) and re.search(r"^\s*\|[=-]{3,}", head, re.M):
        return 1.0
    return 0.0


# What a strategy implies beyond the number it prints, as `vllm bench serve` would say it
# (so one load point reads the same from either client): synchronous is one request at a time
# sent as soon as the last one ends, concurrent@N keeps N in flight, throughput sends them
# all at once; each of them issues requests without a rate limit (`request_rate=inf`).
# Throughput's concurrency is unlimited unless capped (`throughput@64`): it is stated, since
# a load key a block leaves out reads as "not printed", and a sweep's synchronous and
# throughput benchmarks would then be one load point.
_IMPLIED: dict[str, list[tuple[str, object]]] = {
    "synchronous": [("max_concurrency", 1), ("request_rate", "inf")],
    "concurrent": [("request_rate", "inf")],
    "throughput": [("request_rate", "inf"), ("max_concurrency", "inf")],
}


def _strategy_settings(text: str) -> list[tuple[str, object]]:
    """`concurrent@16` -> strategy and max_concurrency; `constant@5.00` -> request_rate; the
    load each implies (`_IMPLIED`); `throughput@64` caps concurrency, `@unlimited` does not."""
    m = _STRATEGY.match(text.strip())
    if m is None:
        return [("strategy", text.strip())]
    # at most 18 digits: `concurrent@` and 5000 digits is infinity as a float, no `int`
    number = m["v"] if m["v"] and re.fullmatch(r"\d{1,18}(?:\.\d*)?", m["v"]) else None
    implied = _IMPLIED.get(m["t"], [])
    if number is not None:  # the printed cap replaces an implied one
        implied = [(k, v) for k, v in implied if k != "max_concurrency" or m["t"] == "synchronous"]
    out: list[tuple[str, object]] = [("strategy", m["t"]), *implied]
    if m["t"] in ("concurrent", "throughput") and number is not None:
        out.append(("max_concurrency", int(float(number))))
    elif m["t"] in ("constant", "poisson") and number is not None:
        out.append(("request_rate", float(number)))
    return out


class Reader:
    """Line reader of one guidellm report (JSON, YAML, CSV) or console output."""

    def __init__(self, ctx: ParseContext, mode: str) -> None:
        self.ctx = ctx
        self.mode = mode
        self._doc: JsonLines | YamlLines = YamlLines() if mode == "yaml" else JsonLines()
        self._blocks: dict[int, int] = {}  # benchmark index -> block
        self._capped: set[int] = set()  # blocks whose strategy printed its concurrency
        self._last: Line | None = None
        # CSV / console tables
        self._header: list[list[str]] = []
        self._columns: list[tuple[str, str, str]] = []
        self._table_rows = 0
        self._wrapped: tuple[Line, str, int] | None = None  # line, text, width
        self._rule_seen = 0

    def feed(self, ln: Line) -> Iterator[Record]:
        self._last = ln
        if self.mode in ("json", "yaml"):
            for ev in self._doc.feed(ln.text, ln.no, ln.cut):
                yield from self._event(ev)
        elif self.mode == "csv":
            yield from self._csv_line(ln)
        else:
            yield from self._console_line(ln)

    def finish(self) -> Iterator[Record]:
        if isinstance(self._doc, YamlLines):
            for ev in self._doc.finish():
                yield from self._event(ev)
        if self._wrapped is not None:
            ln, text, _ = self._wrapped
            self._wrapped = None
            yield from self._console_text(ln, text, cut=True)
        if self.mode == "json" and isinstance(self._doc, JsonLines) and self._doc.open:
            assert self._last is not None
            self.ctx.warn(
                self._last.no,
                "truncated-output",
                "the report is cut here; the benchmarks' values before the cut are kept",
            )

    def _block(self, index: int, line: int) -> Iterator[Record]:
        if index not in self._blocks:
            self._blocks[index] = len(self._blocks)
            yield BlockStart(self._blocks[index], line, format_id)

    def _sample(
        self, block: int, metric: str, unit: str, value: float, line: int, what: str, raw: str
    ) -> Iterator[Record]:
        problem = _fields.value_problem(value)
        if problem is not None:
            self.ctx.warn(
                line,
                problem,
                f"block {block}: {what} is {_fields.shown(repr(value))}; no sample taken",
            )
            return
        if unit == "s" and "_ms_" in metric and re.fullmatch(r"\d+(?:\.\d+)?", raw):
            value = float(raw + "e3")  # `1.7444` s is 1744.4 ms (not 1744.3999999999999)
        elif unit and "_ms_" in metric:
            value = _fields.convert_time(value, unit, "ms")
        yield Sample(metric, value, line, block)

    # ---------------------------------------------------------------- JSON and YAML

    def _event(self, ev: JsonEvent) -> Iterator[Record]:
        path = ev.path
        if len(path) < 2 or path[0] != "benchmarks" or not isinstance(path[1], int):
            return
        index = path[1]
        if len(path) == 2:
            if ev.kind == "open":
                yield from self._block(index, ev.line)
            return  # a scalar where a benchmark stands is none (a `- text` line in YAML)
        yield from self._block(index, ev.line)
        block = self._blocks[index]
        if ev.kind == "cut":
            rest = tuple(str(p) for p in path[2:])
            if rest[:1] == ("metrics",) and rest[2:3] == ("successful",):
                self.ctx.warn(
                    ev.line,
                    "truncated-value",
                    f"block {block}: the value of {'.'.join(rest)} is cut "
                    f"({ev.raw or 'nothing'}); no sample taken",
                )
            return
        if ev.kind != "value":
            return
        # (the keys before the path's text is made: a benchmark's requests are most of the
        # file's values, none of them read; an index is never one of these keys)
        last, before = path[-1], path[-2]
        if before == "strategy" and last in _STRATEGY_KEYS:
            key = _STRATEGY_KEYS[str(last)]
            if ev.value is not None:  # `max_concurrency: null`: throughput without a cap
                yield Setting(key, ev.value, ev.line, block)
                if key == "max_concurrency":
                    self._capped.add(block)
            if last == "type_" and isinstance(ev.value, str):
                for key, value in _IMPLIED.get(ev.value, []):
                    if key != "max_concurrency" or block not in self._capped:
                        yield Setting(key, value, ev.line, block)
            return
        if before == "request_totals" and _fields.is_number(ev.value):
            name = {"successful": "successful_requests", "errored": "failed_requests"}.get(
                str(last)
            )
            if name is not None:
                yield Sample(name, float(ev.value), ev.line, block)
            return
        if len(path) < 6 or path[2] != "metrics" or path[4] != "successful":
            return  # other statuses (incomplete, errored, total) are not the run's figures
        rest = tuple(str(p) for p in path[2:])
        found = DISTRIBUTIONS.get(rest[1])
        if found is None or not _fields.is_number(ev.value):
            return
        stat = (
            STATS.get(rest[3])
            if len(rest) == 4
            else PERCENTILES.get(rest[4])
            if rest[3] == "percentiles" and len(rest) == 5
            else None
        )
        name, unit, mean_only = found
        if stat is None or (mean_only and stat != "mean"):
            return
        metric = name if mean_only else f"{name}_{stat}"
        yield from self._sample(
            block, metric, unit, float(ev.value), ev.line, ".".join(rest), ev.raw
        )

    # ---------------------------------------------------------------- CSV

    def _csv_line(self, ln: Line) -> Iterator[Record]:
        try:
            cells = next(csv.reader([ln.text]))
        except (csv.Error, StopIteration):
            return
        if not cells or not any(c.strip() for c in cells):
            return
        if self._header and len(cells) != len(self._header[0]) and not ln.cut:
            return  # no row of the table (a line a log or a paste put between its rows)
        if len(self._header) < 3 and (self._header or cells[0] in ("Run Info", "Benchmark")):
            self._header.append(cells)
            if len(self._header) == 3:
                self._columns = _columns(self._header)
            return
        if not self._columns:
            return
        index = self._table_rows
        self._table_rows += 1
        yield from self._values(ln, index, cells, ln.cut)

    def _values(self, ln: Line, index: int, cells: list[str], cut: bool) -> Iterator[Record]:
        """One benchmark's row: its strategy and the cells the columns name."""
        yield from self._block(index, ln.no)
        block = self._blocks[index]
        last = len(cells) - 1
        for i, (col, cell) in enumerate(zip(self._columns, cells, strict=False)):
            group, name, stat = col
            raw = cell.strip()
            if (group, name) in (("benchmark", "strategy"),):
                for key, value in _strategy_settings(raw):
                    yield Setting(key, value, ln.no, block)
                continue
            found = _column_metric(group, name, stat)
            if found is None:
                continue
            metric, unit = found
            number = raw.split("\u00b1", 1)[0].strip().rstrip("*\u2020")
            got = _fields.read_number(
                number, at_end=cut and i == last, line_cut=cut and i == last, grouped=True
            )
            if got.cut or (cut and i == last and not number):
                self.ctx.warn(
                    ln.no,
                    "truncated-value",
                    f"block {block}: the value of {' '.join((group, name, stat)).strip()!r} is "
                    f"cut ({raw!r}); no sample taken",
                )
                continue
            if got.value is None:
                continue
            yield from self._sample(block, metric, unit, got.value, ln.no, raw, number)

    # ---------------------------------------------------------------- console

    def _console_line(self, ln: Line) -> Iterator[Record]:
        outer = _fields.strip_outer(ln.text)
        text = outer.rstrip()
        if self._wrapped is not None:  # a terminal wrapped the line before at its width
            first, head, width = self._wrapped
            # Every piece of a wrapped line but the last fills the terminal's width, and the
            # last ends at the table's right border (or the file ends in it): any other line
            # between the pieces (a progress bar, a log line) is no part of the table.
            if not text.endswith("|") and len(outer) != width and not ln.cut:
                return
            self._wrapped = None
            text = head + text
            ln = Line(first.no, text, ln.cut)
        if text.lstrip().startswith("|") and not text.endswith("|") and not ln.cut:
            self._wrapped = (ln, text, len(outer))
            return
        yield from self._console_text(ln, text, cut=ln.cut)

    def _console_text(self, ln: Line, text: str, cut: bool) -> Iterator[Record]:
        stripped = text.strip()
        if is_box_rule(stripped):
            self._rule_seen += 1
            if "=" in stripped and self._columns and self._rule_seen > 2:
                self._header, self._columns, self._table_rows = [], [], 0
            if "-" in stripped and len(self._header) >= 2:
                self._columns = _columns(self._header)
            if "=" in stripped and not self._columns:
                self._header, self._rule_seen = [], 1
            return
        row = box_row(stripped)
        if row is None:
            return
        if not self._columns:
            self._header.append(_merged(row.cells))
            return
        cells = row.cells
        index = self._table_rows
        self._table_rows += 1
        if row.closed and len(cells) != len(self._columns):
            # A whole row with more or fewer cells than the header has columns cannot say
            # which value is whose (a wrapped line pasted without a piece, or with a foreign
            # line glued in): it is read for nothing rather than shifted.
            self.ctx.warn(
                ln.no,
                "unparsed-line",
                f"a table row of {len(cells)} cells under a header of {len(self._columns)} "
                "columns; not read",
            )
            return
        yield from self._values(ln, index, cells, cut or not row.closed)


def _merged(cells: list[str]) -> list[str]:
    """A header row's cells; an empty cell after a merged one (`|||`) repeats its text."""
    out: list[str] = []
    for cell in cells:
        out.append(out[-1] if cell == "" and out else cell.strip())
    return out


def _columns(header: list[list[str]]) -> list[tuple[str, str, str]]:
    """(group, name, statistic) of each column, lower case, from the three header rows."""
    width = max(len(r) for r in header)
    rows = [r + [""] * (width - len(r)) for r in header[:3]]
    while len(rows) < 3:
        rows.append([""] * width)
    cols: list[tuple[str, str, str]] = []
    group = ""
    for i in range(width):
        group = rows[0][i].strip().lower() or group
        cols.append((group, rows[1][i].strip().lower(), rows[2][i].strip().lower()))
    return cols


def _column_metric(group: str, name: str, stat: str) -> tuple[str, str] | None:
    """The metric of a console or CSV column, and the unit its values are in."""
    name = name.removeprefix("successful ").strip()
    dist = GROUPS.get(group)
    if dist is None:
        dist = THROUGHPUT.get((group, name))
        if dist is None or COLUMN_STATS.get(stat) != "mean":
            return None
        return DISTRIBUTIONS[dist][0], ""
    key = COLUMN_STATS.get(stat)
    if key is None:
        return None
    family, unit, _ = DISTRIBUTIONS[dist]
    unit = "s" if name in ("sec", "s") else "ms" if name == "ms" else unit
    return f"{family}_{key}", unit


def _mode(src: SourceText) -> str:
    head = _fields.strip_head(src.head)
    if re.search(r"^benchmarks:\s*$", head, re.M):
        return "yaml"
    if re.search(r"^(?:Benchmark|Run Info),", head, re.M):
        return "csv"
    if re.search(r"^\s*[{\[]", head, re.M) and '"benchmarks"' in head:
        return "json"
    return "console"


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one guidellm report or console paste, in line order."""
    reader = Reader(ctx, _mode(src))
    return read_lines(reader, src)
