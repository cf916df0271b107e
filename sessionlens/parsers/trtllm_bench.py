"""`trtllm-bench`: TensorRT-LLM `trtllm-bench throughput` / `latency` reports and `--report_json`.

Owns the report's sections (`= ENGINE DETAILS`, `= WORLD + RUNTIME INFORMATION`, `= REQUEST
DETAILS`, `= PERFORMANCE OVERVIEW`, 0.12's `= STATISTICS`), its `label: value` rows (tabs in
0.12, padding later), the `[Latency] P50    : x` breakdowns (`[TTFT]`, `[TPOT]`, `[AR]`/`[AL]`
for speculative decoding) and the JSON report's keys. One report is one block; its engine
and runtime rows are the block's settings, the dataset's average lengths its load point.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .._lines import Line, SourceText
from ..metrics import slug
from ..model import BlockStart, Record, Sample, Setting
from . import _fields
from ._blocks import Unread, json_setting, no_sample, setting_value
from ._fields import JsonEvent, JsonLines
from .base import ParseContext, read_lines

format_id = "trtllm-bench"
priority = 13

# Rows (label lower case, spaces single) -> (metric, unit the value is printed in).
ROWS: dict[str, tuple[str, str]] = {
    "request throughput (req/sec)": ("request_throughput_req_s", ""),
    "total output throughput (tokens/sec)": ("output_throughput_tok_s", ""),
    "token throughput (tokens/sec)": ("output_throughput_tok_s", ""),  # up to 0.17: output tokens
    "total token throughput (tokens/sec)": ("total_throughput_tok_s", ""),
    "total latency (ms)": ("benchmark_duration_s", "ms"),
    "total latency (seconds)": ("benchmark_duration_s", "s"),
    "average request latency (ms)": ("e2e_latency_ms_mean", "ms"),
    # A request's output tokens over its generation time (1/TPOT), averaged over requests:
    # AIPerf's `output_token_throughput_per_user` (1/ITL). `Per User Output Throughput
    # [w/ ctx]` divides by the whole request latency, prefill included: another quantity.
    "per user output speed (tps/user)": ("output_throughput_per_user_tok_s", ""),
    "per gpu output throughput (tps/gpu)": ("output_throughput_per_gpu_tok_s", ""),
    "average time-to-first-token [ttft] (ms)": ("ttft_ms_mean", "ms"),
    "average time-per-output-token [tpot] (ms)": ("tpot_ms_mean", "ms"),
    "number of requests": ("successful_requests", ""),
    "number of concurrent requests": ("concurrency", ""),
}
# Rows that are the run's load point (DESIGN §5): the dataset's average lengths.
LOAD_ROWS = {
    "average input length (tokens)": "input_len",
    "average output length (tokens)": "output_len",
}
# `[NAME] STAT: value` breakdowns -> metric family.
FAMILIES = {
    "latency": "e2e_latency_ms",
    "ttft": "ttft_ms",
    "tpot": "tpot_ms",
    "itl": "itl_ms",
    "ar": "request_accept_length",  # "acceptance rate": tokens per iteration, bonus counted
    "al": "request_accept_length",
}
BREAKDOWN_STATS = {
    "minimum": "min",
    "maximum": "max",
    "average": "mean",
    "p50": "p50",
    "p90": "p90",
    "p95": "p95",
    "p99": "p99",
}
# `--report_json` keys -> metric (unit in the key's name).
JSON_METRICS: dict[tuple[str, str], str] = {
    ("request_info", "num_requests"): "successful_requests",
    ("request_info", "avg_num_concurrent_requests"): "concurrency",
    ("performance", "total_latency_ms"): "benchmark_duration_s",
    ("performance", "avg_request_latency_ms"): "e2e_latency_ms_mean",
    ("performance", "request_throughput_req_s"): "request_throughput_req_s",
    ("performance", "system_output_throughput_tok_s"): "output_throughput_tok_s",
    ("performance", "system_total_throughput_tok_s"): "total_throughput_tok_s",
    ("streaming_metrics", "token_output_speed_tok_s"): "output_throughput_per_user_tok_s",
    ("performance", "output_throughput_per_gpu_tok_s"): "output_throughput_per_gpu_tok_s",
    ("streaming_metrics", "avg_ttft_ms"): "ttft_ms_mean",
    ("streaming_metrics", "avg_tpot_ms"): "tpot_ms_mean",
}
JSON_FAMILIES: dict[tuple[str, str], str] = {
    ("performance", "request_latency_percentiles_ms"): "e2e_latency_ms",
    ("streaming_metrics", "ttft_percentiles"): "ttft_ms",
    ("streaming_metrics", "tpot_percentiles"): "tpot_ms",
    ("decoding_stats", "acceptance_length_percentiles"): "request_accept_length",
    ("decoding_stats", "acceptance_rate_percentiles"): "request_accept_length",
}
JSON_LOAD = {
    ("request_info", "avg_input_length"): "input_len",
    ("request_info", "avg_output_length"): "output_len",
}
_SETTING_SECTIONS = frozenset(
    {"engine details", "pytorch backend", "world + runtime information", "machine details"}
)
_REPORT_STARTS = frozenset({"engine details", "pytorch backend", "tensorrt backend"})
_HEADER = re.compile(r"^\s*=\s+(?P<t>[A-Z][A-Z0-9 +/&()-]*?)\s*$")
_RULE = re.compile(r"^\s*={20,}\s*$")
_SUB = re.compile(r"^\s*--\s+(?P<t>[^-].*?)\s*-*\s*$")
_ROW = re.compile(
    r"^\s*(?P<label>[A-Za-z][^:\t]*?(?:\[[^\]]*\][^:\t]*?)*)\s*:[ \t]+(?P<value>\S.*?)\s*$"
)
_BREAKDOWN = re.compile(
    r"^\s*\[(?P<fam>[A-Za-z]+)\]\s+(?P<stat>MINIMUM|MAXIMUM|AVERAGE|P\d+)\s*:\s*(?P<value>\S*)\s*$"
)
_SNIFF = re.compile(
    r"^=\s(?:PERFORMANCE OVERVIEW|ENGINE DETAILS|PYTORCH BACKEND|WORLD \+ RUNTIME INFORMATION"
    r"|REQUEST DETAILS)\s*$|^\[Latency\] P50\s*:",
    re.M,
)
_SNIFF_JSON = re.compile(r'"(?:world_info|request_info)"\s*:\s*\{')


def sniff(head: str, name: str) -> float:
    """Score: the report's `= SECTION` headers or the JSON report's objects are decisive."""
    head = _fields.strip_head(head)
    if _SNIFF.search(head):
        return 1.0
    if _SNIFF_JSON.search(head) and '"performance"' in head:
        return 1.0
    return 0.0


class Reader:
    """Line reader of one trtllm-bench report (text) or `--report_json` file."""

    def __init__(self, ctx: ParseContext, json_mode: bool) -> None:
        self.ctx = ctx
        self.json_mode = json_mode
        self._json = JsonLines()
        self._blocks = 0
        self._block: int | None = None
        self._section: str | None = None
        self._sub_unit = "ms"
        self._seen: set[str] = set()
        self._perf_seen = False
        self._unknown = Unread()
        self._pending_header: int | None = None
        self._last: Line | None = None

    def feed(self, ln: Line) -> Iterator[Record]:
        self._last = ln
        if self.json_mode:
            for ev in self._json.feed(ln.text, ln.no, ln.cut):
                yield from self._json_event(ev)
            return
        text = _fields.strip_outer(ln.text)
        if _RULE.match(text):
            return
        m = _HEADER.match(text)
        if m is not None:
            yield from self._section_start(m["t"].lower(), ln.no)
            return
        m = _SUB.match(text)
        if m is not None and self._block is not None:
            unit = re.search(r"\((ms|s|sec|seconds)\)", m["t"])
            # (`seconds` spelled out: a unit `_fields.convert_time` knows as `s`)
            self._sub_unit = (
                ("s" if unit.group(1) == "seconds" else unit.group(1)) if unit else "ms"
            )
            return
        m = _BREAKDOWN.match(text)
        if m is not None and self._block is not None:
            yield from self._breakdown(ln, m["fam"], m["stat"], m["value"])
            return
        m = _ROW.match(text)
        if m is not None and self._section is not None and self._block is not None:
            yield from self._row(ln, " ".join(m["label"].lower().split()), m["label"], m["value"])

    def finish(self) -> Iterator[Record]:
        if self.json_mode and self._json.open and self._last is not None:
            self.ctx.warn(
                self._last.no,
                "truncated-output",
                "the JSON report is cut here; the values before the cut are kept",
            )
        if self.json_mode:
            self._unknown.warn(self.ctx, "field", "unknown-field")
        else:
            self._unknown.warn(self.ctx, "row", "unknown-row")
        yield from ()

    # ---------------------------------------------------------------- text report

    def _new_block(self, line: int) -> Iterator[Record]:
        self._block = self._blocks
        self._blocks += 1
        self._seen = set()
        self._perf_seen = False
        yield BlockStart(self._block, line, format_id)

    def _section_start(self, title: str, line: int) -> Iterator[Record]:
        starts = title in _REPORT_STARTS or self._block is None
        if (
            self._block is not None
            and self._perf_seen
            and (title in _REPORT_STARTS or title in ("performance overview", "statistics"))
        ):
            starts = True  # the next report in the same terminal
        if starts:
            yield from self._new_block(line)
        self._section = title
        if title in ("performance overview", "statistics"):
            self._perf_seen = True
        self._sub_unit = "ms"

    def _row(self, ln: Line, key: str, label: str, raw: str) -> Iterator[Record]:
        assert self._block is not None
        found = ROWS.get(key)
        if found is not None:
            yield from self._value(ln, found[0], found[1], raw, label)
            return
        load = LOAD_ROWS.get(key)
        if load is not None:
            num = self._number(ln, raw, label)
            if num is not None:
                yield Setting(load, num, ln.no, self._block)
            return
        if self._section == "dataset details":
            if not label.isupper():  # `MIN:` ... rows of the dataset's length table: not settings
                yield Setting(f"dataset_{slug(label)}", setting_value(raw), ln.no, self._block)
            return
        if self._section in _SETTING_SECTIONS or key == "issue rate (req/sec)":
            yield Setting(slug(label), setting_value(raw), ln.no, self._block)
            return
        self._note_unknown(label)

    def _breakdown(self, ln: Line, fam: str, stat: str, raw: str) -> Iterator[Record]:
        family = FAMILIES.get(fam.lower())
        name = BREAKDOWN_STATS.get(stat.lower())
        label = f"[{fam}] {stat}"  # as printed, for messages
        if family is None or name is None:
            self._note_unknown(label)
            return
        unit = "" if family == "request_accept_length" else self._sub_unit
        yield from self._value(ln, f"{family}_{name}", unit, raw, label)

    def _number(self, ln: Line, raw: str, label: str) -> float | None:
        text = raw.strip().rstrip("%")
        got = _fields.read_number(
            text,
            at_end=not raw.strip().endswith("%"),
            line_cut=ln.cut,
            # `.4f` from 0.13 on; 0.12's STATISTICS prints whole floats (repr): no fixed count
            decimals=4 if ln.cut and "." in text and self._section != "statistics" else None,
            grouped=True,
        )
        if got.cut or (ln.cut and not text):
            self.ctx.warn(
                ln.no,
                "truncated-value",
                f"block {self._block}: the value of {label!r} is cut ({raw.strip()!r}); "
                "no sample taken",
            )
            return None
        if got.value is None:
            self.ctx.warn(
                ln.no, "unparsed-line", f"block {self._block}: {label!r} has no number ({raw!r})"
            )
            return None
        return got.value

    def _value(self, ln: Line, metric: str, unit: str, raw: str, label: str) -> Iterator[Record]:
        value = self._number(ln, raw, label)
        if value is None:
            return
        yield from self._sample(ln.no, metric, unit, value, label)

    def _sample(
        self, line: int, metric: str, unit: str, value: float, label: str
    ) -> Iterator[Record]:
        assert self._block is not None
        if no_sample(self.ctx, line, f"block {self._block}: {label!r}", value):
            return
        if unit:
            value = _fields.convert_time(value, unit, "s" if metric.endswith("_s") else "ms")
        if metric in self._seen:
            return  # the report prints the mean latency twice (a row and `[Latency] AVERAGE`)
        self._seen.add(metric)
        if (
            metric.startswith("request_accept_length")
            and "accept_len_counts_bonus" not in self._seen
        ):
            self._seen.add("accept_len_counts_bonus")
            yield Setting("accept_len_counts_bonus", True, line, self._block)
        yield Sample(metric, value, line, self._block)

    def _note_unknown(self, name: str) -> None:
        if self._block is not None:
            self._unknown.note(self._block, name)

    # ---------------------------------------------------------------- --report_json

    def _json_event(self, ev: JsonEvent) -> Iterator[Record]:
        path = ev.path
        if ev.kind == "open" and path == ():
            yield from self._new_block(ev.line)
            return
        if self._block is None or len(path) < 2:
            return
        top, key = str(path[0]), str(path[1])
        if ev.kind == "cut":
            self.ctx.warn(
                ev.line,
                "truncated-value",
                f"block {self._block}: the value of {'.'.join(map(str, path))} is cut "
                f"({ev.raw or 'nothing'}); no sample taken",
            )
            return
        if ev.kind != "value":
            return
        dotted = ".".join(map(str, path))
        if len(path) == 2:
            metric = JSON_METRICS.get((top, key))
            load = JSON_LOAD.get((top, key))
            if metric is not None:
                yield from self._json_number(ev, metric, dotted)
            elif load is not None and _fields.is_number(ev.value):
                yield Setting(load, ev.value, ev.line, self._block)
            elif top in ("engine", "world_info", "decoding_stats"):
                yield Setting(f"{top}.{key}", json_setting(ev.value), ev.line, self._block)
            elif top in ("performance", "streaming_metrics", "request_info") and _fields.is_number(
                ev.value
            ):
                self._note_unknown(dotted)
            return
        family = JSON_FAMILIES.get((top, key))
        if family is not None and len(path) == 3:
            stat = BREAKDOWN_STATS.get(str(path[2]))
            if stat is not None:
                yield from self._json_number(ev, f"{family}_{stat}", dotted)

    def _json_number(self, ev: JsonEvent, metric: str, what: str) -> Iterator[Record]:
        if not _fields.is_number(ev.value):
            return
        unit = "ms" if metric == "benchmark_duration_s" else ""
        yield from self._sample(ev.line, metric, unit, float(ev.value), what)


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one trtllm-bench report or `--report_json` file, in line order."""
    head = _fields.strip_head(src.head)
    reader = Reader(
        ctx, json_mode=_SNIFF.search(head) is None and _SNIFF_JSON.search(head) is not None
    )
    return read_lines(reader, src)
