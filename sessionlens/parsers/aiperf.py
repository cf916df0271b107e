"""`aiperf`: NVIDIA AIPerf and GenAI-Perf exports and the console tables users paste.

Owns the metric tags of both clients (`time_to_first_token`, `spec_decode_*`, ...), their
`profile_export_aiperf.json` / `profile_export_genai_perf.json` (0.1's `records` object too),
the two-section `.csv` files, AIPerf's sweep aggregates (`profile_export_aiperf_sweep.json` /
`.csv`: one block per parameter combination) and rich's box tables as printed at any width
(cells wrapped over lines, labels and values cut with `…`). JSON is read by `_fields.JsonLines`
and table lines by `_fields.box_row`; nothing from a file is evaluated.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from .._lines import Line, SourceText
from ..model import BlockStart, Record, Sample, Setting
from . import _fields
from ._blocks import Unread, json_setting, no_sample, setting_value
from ._fields import JsonEvent, JsonLines, box_row, is_box_rule
from .base import ParseContext, read_lines

format_id = "aiperf"
priority = 14


@dataclass(frozen=True, slots=True)
class _Tag:
    """What a client's metric tag becomes: one metric (its `avg`), or one per statistic."""

    name: str  # the metric, or the family prefix of a distribution (`ttft_ms`)
    unit: str  # the unit the client prints it in (for cut labels and unit-less files)
    dist: bool = False  # every statistic is a sample: `{name}_{stat}`
    percent: bool = False


TAGS: dict[str, _Tag] = {
    "time_to_first_token": _Tag("ttft_ms", "ms", dist=True),
    "inter_token_latency": _Tag("itl_ms", "ms", dist=True),
    "request_latency": _Tag("e2e_latency_ms", "ms", dist=True),
    "request_throughput": _Tag("request_throughput_req_s", "requests/sec"),
    "output_token_throughput": _Tag("output_throughput_tok_s", "tokens/sec"),
    "input_token_throughput": _Tag("input_throughput_tok_s", "tokens/sec"),
    "total_token_throughput": _Tag("total_throughput_tok_s", "tokens/sec"),
    "output_token_throughput_per_user": _Tag("output_throughput_per_user_tok_s", "tokens/sec/user"),
    "output_token_throughput_per_request": _Tag("output_throughput_per_user_tok_s", "tokens/sec"),
    "request_count": _Tag("successful_requests", "requests"),
    "error_request_count": _Tag("failed_requests", "requests"),
    "benchmark_duration": _Tag("benchmark_duration_s", "sec"),
    "goodput": _Tag("goodput_req_s", "requests/sec"),
    "request_goodput": _Tag("goodput_req_s", "requests/sec"),
    # AIPerf's spec-decode group: the run's pooled values, then per-request distributions
    "spec_decode_token_weighted_acceptance_length": _Tag("accept_length", "ratio"),
    "spec_decode_overall_draft_acceptance_rate": _Tag("draft_acceptance_rate", "%", percent=True),
    "total_accepted_draft_tokens": _Tag("accepted_tokens", "tokens"),
    "total_draft_tokens": _Tag("drafted_tokens", "tokens"),
    "total_spec_decode_steps": _Tag("num_drafts", "count"),
    "spec_decode_acceptance_length": _Tag("request_accept_length", "ratio", dist=True),
    "spec_decode_draft_acceptance_rate": _Tag(
        "request_draft_acceptance_rate", "%", dist=True, percent=True
    ),
}
# Console and CSV labels (the metric's header, lower case) -> tag. GenAI-Perf titles its tag
# (`Time To First Token`), 0.0.8 capitalises it (`Time to first token`): same keys.
HEADERS: dict[str, str] = {
    **{tag.replace("_", " "): tag for tag in TAGS},
    "token-weighted acceptance length": "spec_decode_token_weighted_acceptance_length",
    "overall draft acceptance rate": "spec_decode_overall_draft_acceptance_rate",
    "acceptance length": "spec_decode_acceptance_length",
    "draft acceptance rate": "spec_decode_draft_acceptance_rate",
    "total accepted draft tokens": "total_accepted_draft_tokens",
    "total draft tokens": "total_draft_tokens",
    "total spec decode steps": "total_spec_decode_steps",
}
# A client's statistic key -> the registry's (DESIGN §3: a printed p50 is `_p50`).
STATS: dict[str, str] = {
    "avg": "mean",
    "mean": "mean",
    "min": "min",
    "max": "max",
    "std": "std",
    **{f"p{p}": f"p{p}" for p in (1, 5, 10, 25, 50, 75, 90, 95, 99)},
}
_IGNORED_STATS = frozenset({"sum", "count", "unit", "header", "tag"})
# Units as printed -> the unit family they measure; a metric is read only in its own family.
_UNITS: dict[str, str] = {
    "ms": "time",
    "sec": "time",
    "s": "time",
    "us": "time",
    "ns": "time",
    "requests/sec": "req/s",
    "per sec": "per-s",
    "tokens/sec": "tok/s",
    "tokens/sec/user": "tok/s/user",
    "%": "%",
    "ratio": "ratio",
    "requests": "count",
    "count": "count",
    "tokens": "count",
    "": "count",
}
# Sweep parameters -> DESIGN §4's load-point names.
LOAD_NAMES = {"concurrency": "max_concurrency", "request_rate": "request_rate"}
# Input-config leaves (AIPerf's `loadgen`/`prompt`, GenAI-Perf's args) -> load-point names.
_CONFIG_LOAD: dict[tuple[str, ...], str] = {
    ("loadgen", "concurrency"): "max_concurrency",
    ("loadgen", "request_rate"): "request_rate",
    ("input_tokens", "mean"): "input_len",
    ("output_tokens", "mean"): "output_len",
    ("synthetic_tokens", "mean"): "input_len",
    ("stimulus", "concurrency"): "max_concurrency",
    ("stimulus", "request_rate"): "request_rate",
    ("concurrency",): "max_concurrency",
    ("request_rate",): "request_rate",
    ("synthetic_input_tokens_mean",): "input_len",
    ("output_tokens_mean",): "output_len",
}
_SWEEP_SECTIONS = frozenset({"Best Configurations", "Pareto Optimal Points", "Metadata"})

# ------------------------------------------------------------------ sniff

_TITLE = re.compile(r"NVIDIA (?:AIPerf|GenAI-Perf) \|")
_CONSOLE_HEAD = re.compile(
    r"^[ \t]*[\u2503\u2502|][ \t]*(?:Metric|Statistic)[ \t]*[\u2503\u2502|]"
    r"[ \t]*avg[ \t]*[\u2503\u2502|]",
    re.M,
)
_CSV_HEAD = re.compile(r"^(?:Metric,avg,min,max,|Metric,Value\s*$)", re.M)
_SWEEP_CSV = re.compile(r"^[a-z_]+,(?:[a-z_,]+,)?\w+_avg_mean,|,request_throughput_avg_mean,", re.M)
_JSON_KEYS = re.compile(
    r'"(?:aiperf_version|time_to_first_token|request_throughput'
    r'|inter_token_latency|output_token_throughput|spec_decode_[a-z_]+)"\s*:\s*\{'
)
_SWEEP_JSON = re.compile(r'"per_combination_metrics"\s*:\s*\[')
# The run's duration, printed after the tables (`{header}: {avg:.2f} {unit}`).
_DURATION = re.compile(
    r"^Benchmark Duration:[ \t]*(?P<v>[\d,]+(?:\.\d*)?)(?:[ \t]+(?P<u>sec|ms|s)\b.*)?$"
)
_JSON_UNIT = re.compile(r'"unit"\s*:\s*"(?:ms|requests/sec|tokens/sec|sec|per sec|ratio|%)"')


def sniff(head: str, name: str) -> float:
    """Score: the console title, the CSV header and the JSON metric objects are decisive."""
    if _TITLE.search(head) or _CONSOLE_HEAD.search(head):
        return 1.0
    if _CSV_HEAD.search(head) and (
        "profile_export" in name or re.search(r"\((?:ms|tokens/sec)\),", head)
    ):
        return 1.0
    if _SWEEP_CSV.search(head):
        return 1.0
    if _SWEEP_JSON.search(head) or (_JSON_KEYS.search(head) and _JSON_UNIT.search(head)):
        return 1.0
    return 0.0


# ------------------------------------------------------------------ values


def _stat_name(tag: _Tag, stat: str) -> str | None:
    """The metric a tag's statistic is, or None (not a sample of this tag)."""
    key = STATS.get(stat)
    if key is None:
        return None
    if tag.dist:
        return f"{tag.name}_{key}"
    return tag.name if key == "mean" else None


def _convert(tag: _Tag, unit: str, value: float, raw: str) -> float | None:
    """A value in the printed unit as the metric's unit, or None when the unit does not fit."""
    unit = unit.strip()
    family = _UNITS.get(unit.lower())
    own = _UNITS.get(tag.unit.lower())
    if family == "per-s" and own in ("req/s", "tok/s"):  # GenAI-Perf's `(per sec)`
        family = own
    if family is None or family != own:
        return None
    if family == "time":
        to = "ms" if tag.name.endswith("_ms") else "s"
        return _fields.convert_time(value, "s" if unit.lower() == "sec" else unit, to)
    if tag.percent:
        return _fields.percent(raw, value) if raw else value / 100
    return value


def _label(text: str) -> tuple[str, str | None]:
    """A console or CSV label split into its header and its unit (`Time to First Token
    (ms)` -> (`time to first token`, `ms`)), both as printed, lower case, spaces single."""
    text = " ".join(text.split())
    m = re.fullmatch(r"(?P<h>.*?)\s*\((?P<u>[^()]*)\)?", text)
    if m is not None and "(" in text:
        return m["h"].lower(), m["u"]
    return text.lower(), None


def _tag_of(header: str) -> str | None:
    """The tag a header names; a header cut with `…` names the one tag it can be."""
    found = HEADERS.get(header)
    if found is not None or "\u2026" not in header:
        return found
    parts = [re.escape(p) for p in header.split("\u2026")]
    pattern = re.compile(r"\S*".join(parts) + r"\S*")
    fits = {tag for h, tag in HEADERS.items() if pattern.fullmatch(h)}
    return fits.pop() if len(fits) == 1 else None


# ------------------------------------------------------------------ the reader


@dataclass(slots=True)
class _Metric:
    """A JSON metric object being read: its values wait for its unit."""

    key: str
    tag: _Tag | None
    entry: int | None  # the sweep entry it stands in (None: the document)
    block: int | None  # its samples' block, once known
    unit: str | None = None
    stat: str | None = None  # a sweep entry: the statistic its `mean` is
    waiting: list[tuple[str, float, str, int]] = field(default_factory=list)


class Reader:
    """Line reader of one AIPerf / GenAI-Perf source: JSON, CSV or console tables."""

    def __init__(self, ctx: ParseContext, mode: str) -> None:
        self.ctx = ctx
        self.mode = mode
        self._json = JsonLines()
        self.per_request = False  # AIPerf's per-request records (`profile_export.jsonl`)
        self._first_doc = True  # the first JSON document is yet to be seen
        self._blocks = 0
        self._block: int | None = None
        self._unknown = Unread()
        self._metric: _Metric | None = None
        self._skipped = 0
        self._doc_line = 1
        self._last: Line | None = None
        # console and CSV tables
        self._columns: list[str] = []
        self._in_header = False
        self._row: tuple[Line, list[str], list[str], bool] | None = None
        self._titled = False
        self._csv_kind: str | None = None  # "stats", "value", "sweep"

    # ---------------------------------------------------------------- entry points

    def feed(self, ln: Line) -> Iterator[Record]:
        self._last = ln
        if self.mode == "json":
            yield from self._json_line(ln)
        elif self.mode == "csv":
            yield from self._csv_line(ln)
        else:
            yield from self._console_line(ln)

    def finish(self) -> Iterator[Record]:
        yield from self._flush_row()
        if self.mode == "json" and self._json.open and self._last is not None:
            self.ctx.warn(
                self._last.no,
                "truncated-output",
                "the JSON document is cut here; the values before the cut are kept",
            )
        if self._skipped:
            self.ctx.warn(
                None,
                "unparsed-line",
                f"{self._skipped} line{'s' if self._skipped > 1 else ''} inside the JSON "
                "document are not JSON; skipped",
            )
        if self.mode == "json":
            self._unknown.warn(self.ctx, "metric", "unknown-field")
        else:
            self._unknown.warn(self.ctx, "row", "unknown-row")

    def _new_block(self, line: int) -> Iterator[Record]:
        self._block = self._blocks
        self._blocks += 1
        yield BlockStart(self._block, line, format_id)

    def _note_unknown(self, name: str) -> None:
        assert self._block is not None
        self._unknown.note(self._block, name)

    def _sample(
        self, tag: _Tag, stat: str, unit: str, value: float, raw: str, line: int, what: str
    ) -> Iterator[Record]:
        assert self._block is not None
        name = _stat_name(tag, stat)
        if name is None:
            return
        got = _convert(tag, unit, value, raw)
        if got is None:
            self._note_unknown(f"{what} in {unit!r}")
            return
        if no_sample(self.ctx, line, f"block {self._block}: {what}", got, raw or repr(value)):
            return
        if name == "accept_length":
            yield Setting("accept_length_scope", "benchmark", line, self._block)
            yield Setting("accept_len_counts_bonus", True, line, self._block)
        yield Sample(name, got, line, self._block)

    # ---------------------------------------------------------------- JSON

    def _json_line(self, ln: Line) -> Iterator[Record]:
        if self._first_doc and not self._json.open and ln.text.lstrip().startswith("{"):
            self._first_doc = False
            if _per_request(ln.text):
                self.per_request = True
                self.ctx.warn(
                    ln.no,
                    "no-samples",
                    "AIPerf's per-request records (a JSON object a request, as "
                    "`profile_export.jsonl` holds them): not read; a run's statistics are read "
                    "from its `profile_export_aiperf.json`",
                    "info",
                )
                return
        for ev in self._json.feed(ln.text, ln.no, ln.cut):
            yield from self._json_event(ev)

    def _json_event(self, ev: JsonEvent) -> Iterator[Record]:
        if ev.kind == "skip":
            self._skipped += 1
            return
        path = ev.path
        if ev.kind == "open" and path == ():
            self._doc_line, self._block = ev.line, None
            return
        if path[:1] == ("per_combination_metrics",):
            yield from self._sweep_event(ev, path[1:])
            return
        if path[:1] == ("records",):  # AIPerf 0.1: the metrics inside `records`
            path = path[1:]
        if not path:
            return
        key = path[0]
        if key == "input_config":
            yield from self._config_event(ev, path[1:])
            return
        if len(path) == 1:
            if ev.kind == "value" and isinstance(key, str):
                yield Setting(key, json_setting(ev.value), ev.line, None)
            elif ev.kind == "close":
                yield from self._end_metric()
            return
        if len(path) != 2 or not isinstance(key, str) or not isinstance(path[1], str):
            return
        yield from self._metric_event(ev, key, path[1], None, None)

    def _doc_block(self) -> Iterator[Record]:
        """The document as the run's block, from its first metric or load setting on (a
        sweep's blocks are its entries)."""
        if self._block is None:
            yield from self._new_block(self._doc_line)

    def _metric_event(
        self, ev: JsonEvent, key: str, member: str, block: int | None, stat: str | None
    ) -> Iterator[Record]:
        """`block`: the sweep entry's, or None for the document's (made at its first sample)."""
        """A member of a metric object (`{"unit": "ms", "avg": 18.2, ...}`)."""
        m = self._metric
        if m is None or m.key != key or m.entry != block:
            yield from self._end_metric()
            m = self._metric = _Metric(key, TAGS.get(key), block, block, stat=stat)
        if ev.kind == "cut":
            if member in STATS and m.tag is not None:
                yield from self._doc_block()
                self.ctx.warn(
                    ev.line,
                    "truncated-value",
                    f"block {self._block if block is None else block}: the value of "
                    f"{key}.{member} is cut "
                    f"({ev.raw or 'nothing'}); no sample taken",
                )
            return
        if ev.kind != "value":
            return
        if member == "unit" and isinstance(ev.value, str):
            m.unit = ev.value
            waiting, m.waiting = m.waiting, []
            for stat_, value, raw, line in waiting:
                yield from self._metric_value(m, stat_, value, raw, line)
            return
        if member in _IGNORED_STATS or (stat is not None and member != "mean"):
            return
        if not _fields.is_number(ev.value):
            return
        the_stat = stat if stat is not None else member
        if m.unit is None:
            m.waiting.append((the_stat, float(ev.value), ev.raw, ev.line))
        else:
            yield from self._metric_value(m, the_stat, float(ev.value), ev.raw, ev.line)

    def _metric_value(
        self, m: _Metric, stat: str, value: float, raw: str, line: int
    ) -> Iterator[Record]:
        if m.block is None:
            yield from self._doc_block()
            m.block = self._block
        if m.tag is None:  # an object with a unit is a metric, one no tag maps
            saved, self._block = self._block, m.block
            self._note_unknown(m.key)
            self._block = saved
            return
        assert m.unit is not None
        saved, self._block = self._block, m.block
        yield from self._sample(m.tag, stat, m.unit, value, raw, line, f"{m.key} {stat}")
        self._block = saved

    def _end_metric(self) -> Iterator[Record]:
        """A metric object closed: values that waited for a unit take the client's own."""
        m, self._metric = self._metric, None
        if m is None or not m.waiting or m.tag is None:
            return  # an object without a unit and no tag is no metric (run info, a histogram)
        m.unit = m.tag.unit  # the sweep CSV and entries without `unit`: the display unit
        for stat, value, raw, line in m.waiting:
            yield from self._metric_value(m, stat, value, raw, line)

    def _config_event(self, ev: JsonEvent, path: tuple[str | int, ...]) -> Iterator[Record]:
        if ev.kind != "value" or not path or not all(isinstance(p, str) for p in path):
            return
        keys = tuple(str(p) for p in path)
        value = json_setting(ev.value)
        for n in (2, 1):
            load = _CONFIG_LOAD.get(keys[-n:]) if len(keys) >= n else None
            if load is not None and value is not None:
                yield from self._doc_block()
                yield Setting(load, value, ev.line, self._block)
                return
        yield Setting(".".join(keys), value, ev.line, None)

    def _sweep_event(self, ev: JsonEvent, path: tuple[str | int, ...]) -> Iterator[Record]:
        """`per_combination_metrics[i]`: `parameters` (the load point), `metrics`."""
        if len(path) == 1 and ev.kind == "open":
            yield from self._end_metric()
            yield from self._new_block(ev.line)
            return
        if len(path) < 3 or self._block is None:
            return
        part = path[1]
        if part == "parameters" and len(path) == 3 and ev.kind == "value":
            name = str(path[2])
            yield Setting(LOAD_NAMES.get(name, name), json_setting(ev.value), ev.line, self._block)
        elif part == "metrics" and len(path) == 4 and isinstance(path[2], str):
            key, stat = _split_stat(path[2])
            yield from self._metric_event(ev, key, str(path[3]), self._block, stat)
        elif part == "metrics" and len(path) == 3 and ev.kind == "close":
            yield from self._end_metric()

    # ---------------------------------------------------------------- CSV

    def _csv_line(self, ln: Line) -> Iterator[Record]:
        text = ln.text.strip()
        if not text:  # sections are separated by blank lines; each opens with its header
            return
        try:
            cells = next(csv.reader([text]))
        except (csv.Error, StopIteration):
            return
        head = cells[0].strip()
        if head == "Metric" and len(cells) > 1:
            if self._block is None:
                yield from self._new_block(ln.no)
            self._csv_kind = "value" if cells[1:2] == ["Value"] else "stats"
            self._columns = [c.strip() for c in cells[1:]]
            return
        if any(c.endswith("_avg_mean") or c.endswith("_p99_mean") for c in cells):
            self._csv_kind = "sweep"
            self._columns = [c.strip() for c in cells]
            return
        if self._csv_kind == "sweep":
            yield from self._sweep_row(ln, cells)
            return
        if self._csv_kind is None or self._block is None:
            return
        header, unit = _label(head)
        yield from self._table_row(ln, header, unit, cells[1:], ln.cut, head)

    def _sweep_row(self, ln: Line, cells: list[str]) -> Iterator[Record]:
        if cells[0].strip() in _SWEEP_SECTIONS:
            self._csv_kind = None  # the sections after the table repeat its points
            return
        if len(cells) != len(self._columns) and not (ln.cut and len(cells) < len(self._columns)):
            return  # no row of the table (a line a log or a paste put there)
        yield from self._new_block(ln.no)
        assert self._block is not None
        for i, (col, cell) in enumerate(zip(self._columns, cells, strict=False)):
            last = i == len(cells) - 1
            if not col.endswith("_mean"):
                if not any(col.endswith(s) for s in ("_std", "_min", "_max", "_cv")):
                    yield Setting(LOAD_NAMES.get(col, col), setting_value(cell), ln.no, self._block)
                continue
            key, stat = _split_stat(col[: -len("_mean")])
            tag = TAGS.get(key)
            if tag is None or stat is None:
                self._note_unknown(key)
                continue
            num = self._number(ln, cell, cut=last and ln.cut, what=col)
            if num is not None:
                yield from self._sample(tag, stat, tag.unit, num[0], num[1], ln.no, col)

    def _number(self, ln: Line, cell: str, *, cut: bool, what: str) -> tuple[float, str] | None:
        """A cell's number, or None: empty, `N/A`, or cut (with its diagnostic)."""
        raw = cell.strip()
        if raw in ("", "N/A", "--") and not cut:
            return None
        if "\u2026" in raw or (cut and raw in ("", "N/A"[: len(raw)])):
            self.ctx.warn(
                ln.no,
                "truncated-value",
                f"block {self._block}: the value of {what!r} is cut ({raw!r}); no sample taken",
            )
            return None
        got = _fields.read_number(
            raw, at_end=cut, line_cut=cut, decimals=2 if "." in raw else None, grouped=True
        )
        if got.cut:
            self.ctx.warn(
                ln.no,
                "truncated-value",
                f"block {self._block}: the value of {what!r} is cut ({raw!r}); no sample taken",
            )
            return None
        if got.value is None:
            self.ctx.warn(
                ln.no, "unparsed-line", f"block {self._block}: {what!r} has no number ({raw!r})"
            )
            return None
        return got.value, _fields.ungroup(raw)

    def _table_row(
        self, ln: Line, header: str, unit: str | None, values: list[str], cut: bool, label: str
    ) -> Iterator[Record]:
        """One metric row of a CSV section or a console table: a value per stat column."""
        key = _tag_of(header)
        tag = TAGS.get(key) if key is not None else None
        if tag is None:
            self._note_unknown(label)
            return
        if unit is None:
            unit = tag.unit if _UNITS.get(tag.unit) == "count" else ""
        elif "\u2026" in unit:
            unit = tag.unit if tag.unit.startswith(unit.rstrip("\u2026")) else unit
        for i, (col, cell) in enumerate(zip(self._columns, values, strict=False)):
            stat = "avg" if col == "Value" else col
            if _stat_name(tag, stat) is None:
                continue
            num = self._number(ln, cell, cut=cut and i == len(values) - 1, what=f"{label} {col}")
            if num is not None:
                yield from self._sample(tag, stat, unit, num[0], num[1], ln.no, f"{label} {col}")

    # ---------------------------------------------------------------- console tables

    def _console_line(self, ln: Line) -> Iterator[Record]:
        text = _fields.strip_outer(ln.text)
        stripped = text.strip()
        if _TITLE.search(stripped):
            yield from self._flush_row()
            main = ":" not in stripped.split("|", 1)[1]
            if main or self._block is None:
                yield from self._new_block(ln.no)
            self._titled = True
            self._columns, self._in_header = [], False
            return
        if is_box_rule(stripped):
            yield from self._flush_row()
            if stripped[:1] in "\u250f\u250c\u256d+" and not self._columns:
                self._in_header = True
            elif self._in_header and self._columns:
                self._in_header = False
            elif stripped[:1] in "\u2514\u2517\u2570":
                self._columns = []
            return
        m = _DURATION.match(stripped)
        if m is not None and self._block is not None:
            yield from self._flush_row()
            yield from self._duration(ln, m)
            return
        row = box_row(stripped)
        if row is None:
            # A line that is no part of the table (a log line another thread printed, a blank
            # line a paste added) is passed over: the table goes on until its bottom rule.
            return
        cells = [c.strip() for c in row.cells]
        if not self._columns or self._in_header:
            if not self._columns and cells[0] in ("Metric", "Statistic"):
                if self._block is None:
                    yield from self._new_block(ln.no)
                self._in_header = True
                self._columns = cells[1:]
            elif self._in_header and self._columns:  # a header wrapped over lines
                self._columns = [f"{a}{b}" for a, b in zip(self._columns, cells[1:], strict=False)]
            return
        values = cells[1:]
        if any(values):
            yield from self._flush_row()
            self._row = (ln, [cells[0]], values, ln.cut or not row.closed)
        elif self._row is not None:
            self._row[1].append(cells[0])

    def _duration(self, ln: Line, m: re.Match[str]) -> Iterator[Record]:
        """`Benchmark Duration: 8.32 sec`, printed under the tables: its unit ends the value."""
        tag = TAGS["benchmark_duration"]
        what = "Benchmark Duration"
        if m["u"] is None:  # no unit after the number: the line was cut in or after it
            if ln.cut:
                self.ctx.warn(
                    ln.no,
                    "truncated-value",
                    f"block {self._block}: the value of {what!r} is cut ({m['v']!r}); "
                    "no sample taken",
                )
            return
        num = self._number(ln, m["v"], cut=False, what=what)
        if num is not None:
            yield from self._sample(tag, "avg", m["u"], num[0], num[1], ln.no, what)

    def _flush_row(self) -> Iterator[Record]:
        if self._row is None or self._block is None:
            self._row = None
            return
        ln, label_parts, values, cut = self._row
        self._row = None
        label = " ".join(p for p in label_parts if p)
        header, unit = _label(label)
        yield from self._table_row(ln, header, unit, values, cut, label)


def _split_stat(key: str) -> tuple[str, str | None]:
    """`time_to_first_token_p99` -> (`time_to_first_token`, `p99`)."""
    head, _, stat = key.rpartition("_")
    if head and stat in STATS:
        return head, stat
    return key, None


def _mode(src: SourceText) -> str:
    head = _fields.strip_head(src.head)
    if _TITLE.search(head) or _CONSOLE_HEAD.search(head):
        return "console"
    if _CSV_HEAD.search(head) or _SWEEP_CSV.search(head):
        return "csv"
    return "json"


_RECORD_BYTES = 1 << 22  # a per-request record's line at most (its ICLs: thousands of numbers)


def _per_request(text: str) -> bool:
    """Whether a line is one of AIPerf's per-request records: a whole JSON object with its
    `metadata` and its `metrics`, each metric a `{"value": …, "unit": …}` of that request."""
    if len(text) > _RECORD_BYTES or '"metadata"' not in text or '"metrics"' not in text:
        return False
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):  # (nested past the parser's depth)
        return False
    metrics = doc.get("metrics") if isinstance(doc, dict) else None
    return (
        isinstance(doc.get("metadata"), dict)
        and isinstance(metrics, dict)
        and bool(metrics)
        and all(isinstance(m, dict) and "value" in m and "unit" in m for m in metrics.values())
    )


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one AIPerf / GenAI-Perf export or console paste, in line order. A file of
    per-request records is said once and not read further (its bytes are still hashed and
    its lines counted, in bulk: such a file holds a record for every request of a run)."""
    reader = Reader(ctx, _mode(src))
    if reader.mode != "json":
        return read_lines(reader, src)
    return _json_parse(reader, src)


def _json_parse(reader: Reader, src: SourceText) -> Iterator[Record]:
    pieces = src.chunks()
    for piece in pieces:
        for ln in [piece] if isinstance(piece, Line) else src.chunk_lines(piece):
            yield from reader.feed(ln)
            if reader.per_request:
                for _ in pieces:  # the rest read as bytes only (hashed, its lines counted)
                    pass
                return
    yield from reader.finish()
