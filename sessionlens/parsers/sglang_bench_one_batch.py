"""`sglang-bench-one-batch`: `sglang.bench_one_batch` and `bench_one_batch_server` output.

Owns one block per benchmarked case (batch size × input len × output len) with its samples
and its settings `batch_size`, `input_len`, `output_len`; warm-up runs are read but never
samples. The SGLang server lines printed to the same terminal (bench_one_batch_server runs
the server in-process) go to sglang-server's reader (`ctx.embed`); it reads none itself.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from .._lines import Line, SourceText
from ..model import BlockStart, Record, Sample, Setting
from . import _blocks
from ._fields import (
    is_count,
    keyed_fields,
    lookup_field,
    read_value,
    strip_head,
    strip_outer,
)
from .base import ParseContext, Prefiltered, read_lines

format_id = "sglang-bench-one-batch"
priority = 20
_SERVER = "sglang-server"  # the format of the in-process server's log lines

# ------------------------------------------------------------------ bench_one_batch lines
# f"Prefill. latency: {l:6.5f} s, throughput: {t:9.2f} token/s" (unchanged 0.3–0.5.23)
_PREFILL = re.compile(r"\bPrefill\.\s+latency\s*:")
# f"Decode {i}. Batch size: {bs}, latency: ..." (0.4.6+) and `Decode.  latency: ...` (≤0.4.5)
_STEP = re.compile(r"\bDecode(?:\s+(?P<i>\d+))?\.\s+(?:Batch size|latency)\s*:")
_MEDIAN = re.compile(r"\bDecode\.\s+median latency\s*:")
_TOTAL = re.compile(r"\bTotal\.\s+latency\s*:")
_WARMUP = re.compile(r"^\s*Warmup\s*\.\.\.\s*$")
_BENCHMARK = re.compile(r"^\s*Benchmark\s*\.\.\.\s*$")
_SKIPPING = re.compile(
    r"\bskipping \((?P<bs>\d{1,18}), (?P<il>\d{1,18}), (?P<ol>\d{1,18})\) due to (?P<why>.*?)\s*$"
)
# bench_one_batch_server 0.5.23: `========Skip benchmark batch_size=64 > ...=48 due to max
# running requests limit.========` (or `... {input_len=} {output_len=}: ... due to kv cache limit.`)
_SKIP_SERVER = re.compile(r"\bSkip benchmark (?P<what>.*?)(?: due to (?P<why>[^=]*?))?\.?=*\s*$")
_MAX_TOKENS = re.compile(r"^\s*max_total_num_tokens\s*=\s*(?P<n>\d{1,18})(?P<end>\s*$|\s*,)")

# Per line kind: label -> (metric, kind, fixed decimals); see _fields.keyed_fields.
_PREFILL_FIELDS = {
    "latency": ("prefill_latency_s", "num", 5),
    "throughput": ("prefill_throughput_tok_s", "num", 2),
}
_MEDIAN_FIELDS = {
    "median latency": ("decode_median_latency_s", "num", 5),
    "median throughput": ("decode_median_throughput_tok_s", "num", 2),
}
_TOTAL_FIELDS = {
    "latency": ("total_latency_s", "num", 3),
    "throughput": ("total_throughput_tok_s", "num", 2),
}
_STEP_FIELDS = {
    "batch size": ("batch_size", "setting", 0),
    "latency": ("", "skip", 5),
    "throughput": ("", "skip", 2),
}

# ------------------------------------------------------------------ bench_one_batch_server
_FRAME = re.compile(r"^\s*=+\s*Warmup\s+(?P<which>Begin|End)\s*=+\s*$")
_CASE_ROW = re.compile(r"^\s*(?:[-*]\s+)?(?P<label>[a-z_(][a-z_ +()-]*?)\s*:(?P<rest>.*)$")
# label -> (metric or setting, kind, fixed decimals)
_CASE_FIELDS: dict[str, tuple[str, str, int]] = {
    "batch size": ("batch_size", "setting", 0),
    "input_len": ("input_len", "setting", 0),
    "output_len": ("output_len", "setting", 0),
    "latency": ("total_latency_s", "num", 2),
    "ttft": ("ttft_s", "num", 2),
    "last_ttft": ("last_ttft_s", "num", 2),
    "last generation throughput": ("last_gen_throughput_tok_s", "num", 2),
    "input throughput": ("input_throughput_tok_s", "num", 2),
    "output throughput": ("output_throughput_tok_s", "num", 2),
    "(input + output) throughput": ("total_throughput_tok_s", "num", 2),
    "acc_length": ("accept_length", "num", 2),
    "cache hit rate": ("prefix_cache_hit_rate", "num", 4),
    "total output tokens": ("total_output_tokens", "num", 0),
    "early-stopped requests": ("early_stopped_requests", "num", 0),
    "steady-state output throughput": ("steady_state_output_throughput_tok_s", "num", 2),
}
# Final markdown table (0.5.x): header cell (lower case) -> (metric or setting, kind).
_TABLE_COLUMNS: dict[str, tuple[str, str]] = {
    "batch size": ("batch_size", "setting"),
    "input len": ("input_len", "setting"),
    "output len": ("output_len", "setting"),
    "latency (s)": ("total_latency_s", "num"),
    "input throughput (tok/s)": ("input_throughput_tok_s", "num"),
    "output throughput (tok/s)": ("output_throughput_tok_s", "num"),
    "acc length": ("accept_length", "num"),
    "itl (ms)": ("itl_ms", "num"),
    "ttft (s)": ("ttft_s", "num"),
    "last ttft (s)": ("last_ttft_s", "num"),
    "cache hit rate": ("prefix_cache_hit_rate", "rate"),
    "input cost ($/1m)": ("", "skip"),
    "output cost ($/1m)": ("", "skip"),
    # 0.5.22+ with `--disable-ignore-eos`: what the case lines gave, summed up
    "steady output throughput (tok/s)": ("steady_state_output_throughput_tok_s", "num"),
    "steady itl (ms)": ("steady_state_itl_ms", "num"),
    "early stops": ("", "skip"),  # `3/8`: the case lines give early_stopped_requests
}
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_COMMAND = re.compile(r"\bsglang\.bench_one_batch(?P<server>_server)?\b")
_FLAG = re.compile(r"--(?P<name>batch[-_]size|input[-_]len|output[-_]len)(?:=|\s+)")


@dataclass
class _Case:
    """One benchmarked case (a run of bench_one_batch or a case of the server variant)."""

    line: int
    warmup: bool
    block: int | None = None
    server: bool = False
    batch_size: int | None = None
    decided: bool = True  # False while an unframed first case may still be the warm-up
    read: set[str] = field(default_factory=set)  # metrics already taken
    settings: dict[str, int] = field(default_factory=dict)  # settings already given
    planned: set[str] = field(default_factory=set)  # settings taken from the command line
    total: bool = False  # the closing line (Total / latency) was read


class Reader:
    """Line-level state machine: `feed` every line in order, then `finish`.

    `next_block` lets an embedding parser hand out block indices in its own numbering.
    `claimed` says whether the last fed line was a one-batch line.
    """

    def __init__(
        self,
        ctx: ParseContext,
        next_block: Callable[[], int] | None = None,
        embed_server: bool = True,
    ) -> None:
        self.ctx = ctx
        self.claimed = False
        # bench_one_batch_server launches the server in-process: its log shares the terminal
        # one block numbering for the cases and the server log's phase blocks
        self._next_block = next_block or _blocks.counter()
        self._server = ctx.embed(_SERVER, next_block=self._next_block) if embed_server else None
        self._case: _Case | None = None
        self._warmup = False  # between `Warmup ...` and `Benchmark ...` (bench_one_batch)
        self._framed_warmup = False  # between `Warmup Begin` and `Warmup End` (server)
        self._framed = False  # warm-up framing or markers were seen in the file
        self._cases_seen = 0
        self._server_blocks: list[_Case] = []  # real server cases, in order (for the table)
        self._table: list[tuple[str, str]] | None = None
        self._headers: list[str] = []
        self._table_row = 0
        self._table_taken: set[int] = set()  # positions of the cases the table's rows matched
        self._plan: list[dict[str, int]] | None = None  # cases from the command line
        self._plan_at = 0
        self._command_open = False
        self._command: list[str] = []
        self._bonus_said = False
        self._unknown: set[str] = set()

    # ---------------------------------------------------------------- public

    def wants(self, text: str) -> bool:
        """Cheap test: whether `feed` could read anything from this line."""
        return (
            self._command_open
            or self._table is not None
            or "." in text
            or ":" in text
            or "|" in text
            or "Warmup" in text
            or "skipping" in text
        )

    def feed(self, ln: Line) -> Iterator[Record]:
        """Records of one line; a line that is no one-batch line goes to the server reader."""
        bare = strip_outer(ln.text)
        yield from self._feed(ln if bare == ln.text else Line(ln.no, bare, ln.cut))
        if not self.claimed:
            if self._server is None:
                self.ctx.count("ignored")
            else:
                yield from self._embedded(self._server.feed(ln))

    def _embedded(self, records: Iterator[Record]) -> Iterator[Record]:
        for rec in records:
            # the server log's own records carry no block; its phase blocks say their format
            if isinstance(rec, Sample | Setting) and rec.block is None:
                self.ctx.embedded.add(_SERVER)
            yield rec

    def _feed(self, ln: Line) -> Iterator[Record]:
        self.claimed = True
        text = ln.text
        if self._command_open or _COMMAND.search(text):
            self._read_command(text)
            return
        if _PREFILL.search(text):
            yield from self._one_batch(ln, "prefill")
        elif _MEDIAN.search(text):
            yield from self._one_batch(ln, "median")
        elif _TOTAL.search(text):
            yield from self._one_batch(ln, "total")
        elif _STEP.search(text):
            yield from self._one_batch(ln, "step")
        elif _WARMUP.match(text):
            self._close()
            self._warmup = self._framed = True
            self.ctx.count("warmup")
        elif _BENCHMARK.match(text):
            self._close()
            self._warmup = False
            self._framed = True
        elif (m := _FRAME.match(text)) is not None:
            self._close()
            self._framed_warmup = m.group("which") == "Begin"
            self._framed = True
            self.ctx.count("warmup")
        elif (m := _SKIPPING.search(text)) is not None:
            self._skipping(ln, m)
        elif "Skip benchmark" in text and (m := _SKIP_SERVER.search(text)) is not None:
            self._close()
            why = f" ({m.group('why')})" if m.group("why") else ""
            self.ctx.warn(ln.no, "skipped-case", f"the benchmark skipped {m.group('what')}{why}")
        elif (m := _MAX_TOKENS.match(text)) is not None:
            if m.group("end").strip() or not ln.cut:
                yield Setting("max_total_num_tokens", int(m.group("n")), ln.no)
        elif text.lstrip().startswith("|"):
            yield from self._table_line(ln)
        elif (m := _CASE_ROW.match(text)) is not None and m.group("label") in _CASE_FIELDS:
            yield from self._server_row(ln, m.group("label"), m.start("rest"))
        else:
            self._table = None if text.strip() else self._table
            self.claimed = False

    def finish(self) -> Iterator[Record]:
        """Records owed at the end: the open case's completeness, the server reader's."""
        self._close()
        if self._server is not None:
            yield from self._embedded(self._server.finish())

    # ---------------------------------------------------------------- cases and blocks

    def _new_block(self, case: _Case) -> Iterator[Record]:
        index = self._next_block()
        case.block = index
        yield BlockStart(index, case.line, format_id)
        for key, value in self._planned().items():
            case.planned.add(key)
            case.settings[key] = value
            yield Setting(key, value, case.line, index)
        if case.batch_size is not None:
            yield from self._setting(case, "batch_size", case.batch_size, case.line)

    def _planned(self) -> dict[str, int]:
        """The next case of the command line's sweep, if the command was seen."""
        if self._plan is None or self._plan_at >= len(self._plan):
            return {}
        self._plan_at += 1
        return self._plan[self._plan_at - 1]

    def _setting(self, case: _Case, key: str, value: int, line: int) -> Iterator[Record]:
        if case.block is None or case.settings.get(key) == value:
            return
        if key in case.planned and self._plan is not None:
            # the command line's sweep order disagrees with what the case prints
            self.ctx.warn(
                line,
                "inconsistent-value",
                f"{key}={value} is printed, but the command line's sweep gives "
                f"{case.settings[key]} for this case; the printed one is kept and "
                "the command line is no longer used",
            )
            self._plan = None
        case.settings[key] = value
        yield Setting(key, value, line, case.block)

    def _open(self, ln: Line, server: bool, warmup: bool) -> Iterator[Record]:
        self._close()
        case = self._case = _Case(ln.no, warmup, server=server)
        self._cases_seen += 1
        if warmup:
            self.ctx.count("warmup-case")
        elif server and self._cases_seen == 1 and not self._framed:
            case.decided = False  # see `_decide`
        else:
            yield from self._new_block(case)
            if server:
                self._server_blocks.append(case)

    def _close(self) -> None:
        case, self._case = self._case, None
        if case is None or case.warmup or case.block is None:
            return
        if not case.total:
            what = "latency" if case.server else "Total"
            self.ctx.warn(
                case.line,
                "incomplete-case",
                f"case {case.block} (from line {case.line}) has no {what} line; its "
                "summary is missing and was not recomputed",
            )

    def _sample(self, ln: Line, case: _Case, metric: str, value: float) -> Iterator[Record]:
        if case.block is None or case.warmup:
            return
        if _blocks.no_sample(self.ctx, ln.no, f"case {case.block}: {metric}", value):
            return
        if metric in case.read:
            self.ctx.warn(
                ln.no,
                "unparsed-line",
                f"{metric} appears twice in case {case.block}; the first is kept",
            )
            return
        case.read.add(metric)
        yield Sample(metric, value, ln.no, case.block)

    # ---------------------------------------------------------------- bench_one_batch

    def _one_batch(self, ln: Line, kind: str) -> Iterator[Record]:
        self.ctx.count(f"one-batch-{kind}")
        case = self._case
        if kind == "prefill" or case is None or case.server or case.total:
            yield from self._open(ln, server=False, warmup=self._warmup)
            case = self._case
            assert case is not None
        table = {
            "prefill": _PREFILL_FIELDS,
            "median": _MEDIAN_FIELDS,
            "total": _TOTAL_FIELDS,
            "step": _STEP_FIELDS,
        }[kind]
        values: dict[str, float] = {}
        text = ln.text
        for f in keyed_fields(text, 0):
            entry = lookup_field(f.key, table)
            if entry is None:
                continue
            metric, how, decimals = entry
            end = f.start + len(f.value)
            r, stop = read_value(text, f.start, end, ln, decimals)
            if (
                r.value is not None
                and how != "setting"
                and not text[stop:end].strip()[:1].isalpha()
            ):
                # every timing prints its unit (`s`, `token/s`) after it: the line broke before
                # it, or another line was glued on (`154.2` + `2025-07-02T...` of a `cat`)
                r = replace(r, value=None, cut=True)
            if r.value is None:
                if r.cut:
                    self.ctx.warn(
                        ln.no,
                        "truncated-value",
                        f"{kind} line: {f.key.split('. ')[-1]} is cut "
                        f"({f.value.strip()[:30]!r}); no sample taken",
                    )
                continue
            if how == "setting":
                if case.batch_size is None and r.value.is_integer():
                    case.batch_size = int(r.value)
                    yield from self._setting(case, metric, int(r.value), ln.no)
                continue
            if how == "skip":
                continue
            values[metric] = r.value
            yield from self._sample(ln, case, metric, r.value)
        if kind == "total" and values:
            case.total = True
        if kind == "median" and case.batch_size and not case.warmup:
            lat = values.get("decode_median_latency_s")
            thr = values.get("decode_median_throughput_tok_s")
            if lat and thr is not None:
                expected = case.batch_size / lat
                # latency printed to 1e-5 s, throughput to 0.01 token/s
                tolerance = 0.005 + expected * 0.5e-5 / lat + 1e-9
                if abs(expected - thr) > tolerance:
                    self.ctx.warn(
                        ln.no,
                        "inconsistent-value",
                        f"batch size {case.batch_size} / median latency {lat:.5f} s "
                        f"is {expected:.2f} token/s, but {thr:.2f} is printed; the "
                        "printed value is kept",
                    )

    def _skipping(self, ln: Line, m: re.Match[str]) -> None:
        self._close()
        case = (int(m.group("bs")), int(m.group("il")), int(m.group("ol")))
        if self._warmup:
            return
        planned = self._planned()
        if planned and any(
            planned.get(k) not in (None, v)
            for k, v in zip(("batch_size", "input_len", "output_len"), case, strict=True)
        ):
            self._plan = None  # the sweep order does not fit the command line
        self.ctx.warn(
            ln.no,
            "skipped-case",
            f"the benchmark skipped batch size {case[0]}, input len {case[1]}, "
            f"output len {case[2]} ({m.group('why')})",
        )

    # ---------------------------------------------------------------- bench_one_batch_server

    def _server_row(self, ln: Line, label: str, at: int) -> Iterator[Record]:
        metric, kind, decimals = _CASE_FIELDS[label]
        text = ln.text
        r, _ = read_value(text, at, len(text), ln, decimals)
        if label == "batch size":
            self.ctx.count("server-case")
            warm = self._framed_warmup
            yield from self._open(ln, server=True, warmup=warm)
            case = self._case
            assert case is not None
            if r.value is None or not r.value.is_integer():
                if r.cut:
                    self.ctx.warn(
                        ln.no, "truncated-value", f"batch size is cut ({text[at:].strip()!r})"
                    )
                return
            case.batch_size = int(r.value)
            if not case.decided and case.batch_size != 16:
                yield from self._decide(ln, case, warmup=False)
            elif case.block is not None:
                yield from self._setting(case, "batch_size", case.batch_size, ln.no)
            return
        case = self._case
        if case is None:
            # a row outside any case (a pasted fragment): keep it in a case of its own
            yield from self._open(ln, server=True, warmup=self._framed_warmup)
            case = self._case
            assert case is not None
            if not case.decided:
                yield from self._decide(ln, case, warmup=False)
        elif not case.decided:
            # 0.4.x (≤0.4.6) runs an unframed warm-up case with batch size 16 first and
            # prints `latency:` right after `batch size:`; later versions print input_len.
            yield from self._decide(ln, case, warmup=label == "latency")
        if r.value is None:
            if r.cut:
                self.ctx.warn(
                    ln.no,
                    "truncated-value",
                    f"{label} is cut ({text[at:].strip()!r}); no sample taken",
                )
            elif text[at:].strip():
                self.ctx.warn(
                    ln.no,
                    "unparsed-line",
                    f"{label}: value {text[at:].strip()[:30]!r} cannot be read",
                )
            return
        if kind == "setting":
            if r.value.is_integer():
                yield from self._setting(case, metric, int(r.value), ln.no)
            return
        if metric == "accept_length":
            yield from self._bonus(ln)
        if metric == "total_latency_s":
            case.total = True
        yield from self._sample(ln, case, metric, r.value)

    def _decide(self, ln: Line, case: _Case, warmup: bool) -> Iterator[Record]:
        case.decided = True
        case.warmup = warmup
        if warmup:
            self.ctx.warn(
                case.line,
                "warmup-excluded",
                "the first case (batch size 16) has no warm-up framing and the "
                "sglang ≤0.4.6 layout, whose script always runs such a warm-up case "
                "first: it is taken as the warm-up and gives no sample",
            )
            self.ctx.count("warmup-case")
            return
        yield from self._new_block(case)
        self._server_blocks.append(case)

    def _bonus(self, ln: Line) -> Iterator[Record]:
        # SGLang's acc_length is the server's avg_spec_accept_length: bonus token counted.
        if not self._bonus_said:
            self._bonus_said = True
            yield Setting("accept_len_counts_bonus", True, ln.no)

    # ---------------------------------------------------------------- markdown table

    def _table_line(self, ln: Line) -> Iterator[Record]:
        text = ln.text.strip()
        if _TABLE_SEP.match(text):
            return
        cells = text.strip("|").split("|") if text.endswith("|") else text[1:].split("|")
        cells = [c.strip() for c in cells]
        low = [c.lower() for c in cells]
        if "batch size" in low and any("latency" in c or "throughput" in c for c in low):
            self._close()
            self._table = []
            self._headers = cells
            for c in low:
                entry = _TABLE_COLUMNS.get(c)
                if entry is None:
                    self._unknown_column(ln, c)
                    entry = ("", "skip")
                self._table.append(entry)
            self._table_row = 0
            self._table_taken = set()
            self.ctx.count("table-header")
            return
        if self._table is None:
            self.claimed = False
            return
        # the last cell is complete when a `|` or the space before it follows the value
        closed = text.endswith("|") or ln.text.rstrip("\n") != ln.text.rstrip()
        yield from self._table_row_line(ln, cells, closed=closed)

    def _unknown_column(self, ln: Line, name: str) -> None:
        if name and name not in self._unknown:
            self._unknown.add(name)
            self.ctx.warn(ln.no, "unknown-field", f"table column {name!r} is not known; skipped")

    def _table_row_line(self, ln: Line, cells: list[str], closed: bool) -> Iterator[Record]:
        assert self._table is not None
        self.ctx.count("table-row")
        settings: dict[str, int] = {}
        values: list[tuple[str, float]] = []
        last = len(cells) - 1
        if ln.cut and not ln.text.rstrip().endswith("|") and len(cells) < len(self._table):
            self.ctx.warn(
                ln.no,
                "truncated-output",
                f"the table row is cut after {len(cells)} of {len(self._table)} columns; "
                "the columns after the cut are not read",
            )
        for i, (cell, (name, kind)) in enumerate(zip(cells, self._table, strict=False)):
            if kind == "skip" or cell.lower() in ("n/a", "na", "-", ""):
                continue
            at_end = i == last and not closed
            tail = cell.rstrip("%").strip()
            r, after = read_value(tail, 0, len(tail), Line(ln.no, tail, ln.cut and at_end), None)
            if r.value is None or after < len(tail):
                header = self._headers[i] if i < len(self._headers) else str(i)
                if r.cut:
                    self.ctx.warn(
                        ln.no,
                        "truncated-value",
                        f"table column {header!r}: {cell!r} is cut; no sample taken",
                    )
                elif cell:
                    self.ctx.warn(
                        ln.no, "unparsed-line", f"table column {header!r}: {cell!r} cannot be read"
                    )
                continue
            value = r.value / 100 if kind == "rate" and cell.endswith("%") else r.value
            if not math.isfinite(value):
                self.ctx.warn(ln.no, "non-finite-value", f"table cell {cell!r}; no sample taken")
                continue
            if kind == "setting":
                if value.is_integer():
                    settings[name] = int(value)
                continue
            values.append((name, value))
        case = self._table_case(settings)
        if case is None:
            # the table alone (pasted), or rows beyond the printed cases: a case of its own
            case = _Case(ln.no, warmup=False, server=True, total=True)
            yield from self._new_block(case)
            for key, value in settings.items():
                yield from self._setting(case, key, value, ln.no)
        else:
            for key, value in settings.items():
                if key not in case.settings:
                    yield from self._setting(case, key, value, ln.no)
        for metric, value in values:
            if metric == "accept_length":
                yield from self._bonus(ln)
            if metric not in case.read:  # the case lines already gave it
                case.read.add(metric)
                assert case.block is not None
                yield Sample(metric, value, ln.no, case.block)

    def _table_case(self, settings: dict[str, int]) -> _Case | None:
        """The printed case a table row sums up: the first one not yet matched whose
        settings agree with the row's (0.5.23 sorts the table by input length, so rows are
        not the cases in printed order), else the case at the row's position."""
        row = self._table_row
        self._table_row += 1
        cases = self._server_blocks
        free = [i for i in range(len(cases)) if i not in self._table_taken]
        shared = [i for i in free if any(k in cases[i].settings for k in settings)]
        for i in shared:
            if all(cases[i].settings.get(k, v) == v for k, v in settings.items()):
                self._table_taken.add(i)
                return cases[i]
        if shared:
            return None  # rows that no printed case agrees with: cases of their own
        if row < len(cases) and row not in self._table_taken:
            self._table_taken.add(row)
            return cases[row]
        return None

    # ---------------------------------------------------------------- command line

    def _read_command(self, text: str) -> None:
        """`python -m sglang.bench_one_batch --batch-size 1 8 --input-len 1024 ...`."""
        self.ctx.count("command")
        self._command.append(text.rstrip().rstrip("\\"))
        self._command_open = text.rstrip().endswith("\\")
        if self._command_open:
            return
        joined = " ".join(self._command)
        self._command = []
        lists: dict[str, list[int]] = {}
        for m in _FLAG.finditer(joined):
            key = m.group("name").replace("-", "_")
            values = []
            for tok in joined[m.end() :].split():
                if not is_count(tok):  # not `¹`
                    break
                values.append(int(tok))
            if values:
                lists[key] = values
        if not lists:
            return
        keys = [k for k in ("batch_size", "input_len", "output_len") if k in lists]
        # bench_one_batch(_server) sweeps itertools.product(batch_size, input_len, output_len)
        self._plan = [
            dict(zip(keys, combo, strict=True))
            for combo in itertools.product(*(lists[k] for k in keys))
        ]
        self._plan_at = 0


# ------------------------------------------------------------------ module protocol

_SNIFF_ONE = Prefiltered(
    re.compile(
        r"\b(?:Prefill|Total)\.\s+latency:\s*[\d.]+\s*s\b|\bDecode\.\s+median latency:"
        r"|\bDecode\s+\d+\.\s+Batch size:"
    ),
    "latency:",
    "Batch size:",
)
_SNIFF_CASE = re.compile(
    r"^\s*batch size:\s*\d+\s*\n(?:\s*\w+_len:\s*\d+\s*\n)*"
    r"\s*latency:\s*[\d.]+\s*s\s*$",
    re.MULTILINE,
)
_SNIFF_TABLE = re.compile(r"^\s*\|\s*batch size\s*\|\s*input len\s*\|\s*latency \(s\)", re.M)


# `result.jsonl` of both scripts (log-formats §5.2, §5.4): one record per case.
_JSON_HEAD = re.compile(
    r'^[ \t]*\{[^\n]*"(?:median_decode_latency|prefill_latency|last_ttft|acc_length)"', re.M
)
_JSON_METRICS = {
    "prefill_latency": "prefill_latency_s",
    "prefill_throughput": "prefill_throughput_tok_s",
    "median_decode_latency": "decode_median_latency_s",
    "median_decode_throughput": "decode_median_throughput_tok_s",
    "total_latency": "total_latency_s",
    "latency": "total_latency_s",
    "overall_throughput": "total_throughput_tok_s",
    "input_throughput": "input_throughput_tok_s",
    "output_throughput": "output_throughput_tok_s",
    "last_ttft": "last_ttft_s",
    "last_gen_throughput": "last_gen_throughput_tok_s",
    "acc_length": "accept_length",
    "cache_hit_rate": "prefix_cache_hit_rate",
}


def sniff(head: str, name: str) -> float:
    """Score: the fixed result lines of both scripts, or the server variant's table."""
    if _SNIFF_ONE.search(head):
        return 1.0
    if _JSON_HEAD.search(head):
        return 1.0
    head = strip_head(head)
    if _SNIFF_CASE.search(head):
        return 1.0
    if _SNIFF_TABLE.search(head):
        return 0.9
    if "Warmup Begin ========" in head and "batch size:" in head:
        return 0.8
    return 0.0


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of a bench_one_batch or bench_one_batch_server output (or their
    `result.jsonl`), in line order."""
    if _JSON_HEAD.search(src.head):  # a record on a line of its own, maybe after noise
        return _records(src, ctx)
    reader = Reader(ctx)
    return read_lines(reader, src)


def _records(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """The cases of a `result.jsonl`: a block per record, sizes and run name as settings."""
    block = 0
    bonus_said = False
    for ln in src.lines():
        text = ln.text.strip()
        if not text:
            continue
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            obj = None
        if not isinstance(obj, dict):
            if ln.cut:
                ctx.warn(ln.no, "truncated-output", "the last record is cut; no sample taken")
            else:
                ctx.warn(ln.no, "bad-record", "this line is not one JSON record; skipped")
            continue
        ctx.count("record")
        yield BlockStart(block, ln.no, format_id)
        for key, value in obj.items():
            metric = _JSON_METRICS.get(key)
            if metric is None:
                if value is not None and not isinstance(value, dict | list):
                    yield Setting(key, value, ln.no, block)
                continue
            if value is None:
                continue
            number = _blocks.json_number(ctx, ln.no, f"record {block}: {key}", value)
            if number is None:
                continue
            if metric == "accept_length" and not bonus_said:
                bonus_said = True  # the server's avg_spec_accept_length: bonus counted
                yield Setting("accept_len_counts_bonus", True, ln.no)
            yield Sample(metric, number, ln.no, block)
        block += 1
