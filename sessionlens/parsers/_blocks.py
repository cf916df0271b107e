"""Shared reader of benchmark result blocks: `{:<40} {:<10}` rows under `=`/`-` headers.

Owns rows, aliases (label -> metric/setting), block boundaries (log-formats §9), the
Namespace scanner, bench_serving JSON records and sniff evidence for the three block formats.
Outer prefixes and numbers come from `_fields`; a server log in the same terminal goes to
the line reader it is handed (`embedded`), never to a format module it imports.
It never evals or opens files; settings stay JSON-safe (`inf` is "inf", `not set` is null).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import re
import shlex
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .._lines import Line
from ..metrics import get as metric_info
from ..metrics import is_known, slug
from ..model import BlockStart, Record, Sample, Setting
from . import base
from ._fields import (
    convert_time,
    decimals_of,
    read_number,
    shown,
    strip_head,
    strip_outer,
    time_unit,
    value_problem,
)
from .base import LineReader, ParseContext

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import polars as pl

JSON = Any  # a JSON scalar or list (settings come from logs)

# ------------------------------------------------------------------ line shapes

TITLE = re.compile(r"^\s*={3,}\s*(?P<t>[^=\s](?:[^=]*[^=\s])?)\s*={3,}\s*$")
FOOTER = re.compile(r"^\s*={10,}\s*$")
SECTION = re.compile(r"^\s*-{3,}\s*(?P<t>[^-\s](?:.*?[^-\s])?)\s*-{3,}\s*$")
# `label:` then whitespace then the value (never by column: wide values have no padding).
_ROW = re.compile(
    r"^\s*(?:[-*+]\s+(?=[A-Za-z]))?"
    r"(?P<label>[A-Za-z#][A-Za-z0-9 #()/%<>.+_'&-]{0,79}?)[ \t]*:"
    r"(?P<gap>[ \t]*)(?P<value>\S(?:.*\S)?)?(?P<trail>[ \t]*)$"
)
# Lines of a server log printed to the same terminal: never part of a block, never a label.
_FOREIGN = re.compile(
    r"^\s*(?:\[(?:\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d[^\]]*\]"
    r"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)(?::\s|\s+\d\d-\d\d \d\d:\d\d:\d\d)"
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d+ (?:INFO|WARNING|ERROR|DEBUG))"
    r"|(?:Decode|Prefill) batch[.,\s\[(]"
    r"|:\s*[-+]?\d[\d.]*\s*ms/cyc\b"  # a profiler's phase line (`Target verify: 29.47 ms/cyc`)
)
FOREIGN = _FOREIGN  # for parsers that route a server log's lines to an embedded reader
# Server-log lines `strip_outer` leaves as they are and `_FOREIGN` matches at their start
# (`BlockReader.passing` reads them so in bulk; a line with `%|` may hold a tqdm bar that
# `strip_outer` cuts off, and is checked on its own): SGLang's `[date time TAGS]`, bare or
# behind docker's `-t` time, and uvicorn's `INFO:`; and vLLM's `(APIServer pid=N) INFO
# MM-DD hh:mm:ss` and `(APIServer pid=N) INFO:`, whose process prefix `strip_outer` takes
# off (ASCII classes only: a line this misses is asked on its own).
_PASSING = (
    r"^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?[ \t])?"
    r"\[(?:\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d[^\]]*\]"
    r"|^(?:INFO|WARNING|ERROR|DEBUG|CRITICAL):\s"
    r"|^\((?:[A-Za-z0-9_.\-]+ )?pid=[0-9]+\) (?:INFO|WARNING|ERROR|DEBUG|CRITICAL)"
    r"(?::[ \t]| +[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9])"
)
# What a cut last line holds when the file ends inside a block: the start of a row label
# (`Mean TT`) or of a section header (`-----Time to Fi`); never a shell prompt (`$`, `@`).
_PARTIAL = re.compile(r"^(?:[A-Za-z#][A-Za-z0-9 #()/%<>.+_'&-]*|-{3,}[A-Za-z0-9 ()./-]*)$")
_NS_START = re.compile(r"^\s*(?:\w+\s*=\s*)?Namespace\(")
# SGLang's dataset facts before a block (`#Input tokens: 1024`, `#Images per request: 2
# (fixed)`): neither rows nor a block's label.
_PREAMBLE_COUNT = re.compile(r"^\s*#(?:\s?(?:Input|Output) tokens\s*:|[A-Za-z][A-Za-z ]{0,40}:)")
# Lines that are noise before a block, never its label: tqdm bars, progress messages,
# warnings, the `--plot-throughput` charts, tips.
_NOISE = re.compile(
    r"it/s\]|s/it\]|\d+%\||\.\.\.\s*$|\b\w*(?:Warning|Error)\b:|^\s*Traceback\b|^\s*File \""
    r"|^\s*tip:|^\s*(?:Output tokens|Concurrent requests) per second\s*$"
    r"|[|+]-|-[|+]|^\s*\||Namespace\(|^\s*#\s?(?:Input|Output) tokens\b"
    # clients' status lines (vLLM 0.20+ prints `Initial test run completed.` on its own line)
    r"|^\s*(?:Initial test run|Warmup run|Warmup|Benchmark run|Probe run) completed\b"
)
_WARNING = re.compile(r"\b\w*Warning\b:")
# A pasted shell command running a serving benchmark: its flags are the run's arguments
# when no Namespace dump follows (a Namespace printed after it wins, key by key).
_BENCH_COMMAND = re.compile(
    # at the line's start, or after a shell prompt (`user@gpu:~$ `, `(venv) $ `, `!`), and
    # environment assignments or wrappers (`CUDA_VISIBLE_DEVICES=0 nohup ...`)
    r"^\s*(?:[^$#%>!]{0,80}?[$#%>!]\s*)?(?:(?:\w+=\S*|nohup|time|sudo|srun|uv\s+run)\s+)*"
    r"(?:python[\d.]*\s+(?:-m\s+)?\S*?(?:sglang[./]bench_serving|sglang\.benchmark\.serving"
    r"|benchmark_serving\.py|sglang[./]bench_offline_throughput)|vllm\s+bench\s+serve)"
    r"(?:\.py)?(?=\s|$)(?P<args>.*)$"
)
_SHELL_STOP = frozenset({"|", "||", "&&", ";", "&", ">", ">>", "2>&1", "<"})
_BARE_FLOAT = re.compile(r"[-+]?\d+\.\d*")  # no `%` or unit after it to end it
_TRACEBACK = re.compile(r"\bTraceback \(most recent call last\)")
# A status sentence (`Will increase RPS from 1 to 20 RPS over the duration of the benchmark.`,
# vLLM's `Self timing is set, ...`): never a block's label.
_SENTENCE = re.compile(r"^(?:\S+\s+){2,}.*[.!]$")
_LEAD_NUM = re.compile(
    r"^(?P<num>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf(?:inity)?))"
    r"(?P<rest>.*)$",
    re.IGNORECASE,
)

# ------------------------------------------------------------------ alias tables

Kind = Literal["metric", "setting", "subheader"]
Cast = Literal["auto", "int", "float", "str"]


@dataclass(frozen=True, slots=True)
class RowSpec:
    """What a block row means: a metric or a setting, and how to read its value."""

    name: str
    kind: Kind
    cast: Cast = "auto"
    # An acceptance-length row, and whose accounting it follows (log-formats §5.1, §6.1).
    accept: Literal["sglang", "vllm"] | None = None
    # The unit its value must carry when the label alone names no quantity (`Throughput:`
    # of the 2023 script is requests/s, its latencies seconds); another unit makes it an
    # unknown row, no unit at the end of a cut line a cut value (its scale is unknown).
    unit: str | None = None


def _m(
    name: str, accept: Literal["sglang", "vllm"] | None = None, unit: str | None = None
) -> RowSpec:
    return RowSpec(name, "metric", accept=accept, unit=unit)


def _s(name: str, cast: Cast = "auto") -> RowSpec:
    return RowSpec(name, "setting", cast)


# Normalised label (lower case, single spaces) -> meaning. Percent rows are recognised by
# `(%)` in the label or `%` after the value, and stored as fractions.
ROWS: dict[str, RowSpec] = {
    "successful requests": _m("successful_requests"),
    "failed requests": _m("failed_requests"),
    "benchmark duration (s)": _m("benchmark_duration_s"),
    "request throughput (req/s)": _m("request_throughput_req_s"),
    "input token throughput (tok/s)": _m("input_throughput_tok_s"),
    "output token throughput (tok/s)": _m("output_throughput_tok_s"),
    "peak output token throughput (tok/s)": _m("peak_output_throughput_tok_s"),
    "peak concurrent requests": _m("peak_concurrent_requests"),
    "total token throughput (tok/s)": _m("total_throughput_tok_s"),  # also vLLM's "Total Token"
    "concurrency": _m("concurrency"),
    "accept length": _m("accept_length", accept="sglang"),
    "acceptance length": _m("accept_length", accept="vllm"),
    "acceptance rate (%)": _m("draft_acceptance_rate"),
    "request goodput (req/s)": _m("goodput_req_s"),
    "last generation throughput (tok/s)": _m("last_gen_throughput_tok_s"),
    "drafts": _m("num_drafts"),
    "draft tokens": _m("drafted_tokens"),
    "accepted tokens": _m("accepted_tokens"),
    "slo attainment (%)": _m("slo_attainment"),
    "rtfx (inverse real-time factor)": _m("rtfx"),
    "cache hit rate": _m("cache_hit_rate"),
    # the 2023 benchmark_serving.py: `label: {x:.2f} s` and `Throughput: {x:.2f} requests/s`
    "total time": _m("benchmark_duration_s", unit="s"),
    "throughput": _m("request_throughput_req_s", unit="requests/s"),
    "average latency": _m("e2e_latency_ms_mean", unit="s"),
    "average latency per token": _m("latency_per_token_ms_mean", unit="s"),
    "average latency per output token": _m("latency_per_output_token_ms_mean", unit="s"),
    "backend": _s("backend", "str"),
    "traffic request rate": _s("request_rate", "float"),
    "request rate configured (rps)": _s("request_rate", "float"),
    "max request concurrency": _s("max_concurrency", "int"),
    "max reqeuest concurrency": _s("max_concurrency", "int"),  # SGLang 0.4.0–0.4.6 typo
    "maximum request concurrency": _s("max_concurrency", "int"),
    "burstiness factor": _s("burstiness", "float"),
    "probe request rate": _s("probe_request_rate", "str"),  # vLLM 0.33 `0.5 req/s`
    "total input tokens": _s("total_input_tokens", "int"),
    "total input text tokens": _s("total_input_text_tokens", "int"),
    "total input vision tokens": _s("total_input_vision_tokens", "int"),
    "total generated tokens": _s("total_output_tokens", "int"),
    "total generated tokens (retokenized)": _s("total_output_tokens_retokenized", "int"),
    "slos (ms)": _s("slos_ms", "str"),
    "per-position acceptance (%)": RowSpec("per_position", "subheader"),
    "per-position acceptance": RowSpec("per_position", "subheader"),
}
# Rows whose meaning depends on their section (SGLang 0.5.14+ `--cache-report`).
STEADY = "steady-state result"
SECTION_ROWS: dict[str, dict[str, RowSpec]] = {
    # SGLang 0.5.23 `steady_state_serving` prints this block after the run's own: its rows
    # are the steady window's, never the run's (no row of it falls through to `ROWS`).
    STEADY: {
        "concurrency ratio": _s("steady_concurrency_ratio", "float"),
        "measurement duration (s)": _s("steady_duration_s", "float"),
        "minimum concurrency": _s("steady_min_concurrency", "int"),
        "completed requests": _s("steady_completed_requests", "int"),
        "input tokens": _s("steady_input_tokens", "int"),
        "input token throughput (tok/s)": _m("steady_input_throughput_tok_s"),
        "generated tokens": _s("steady_output_tokens", "float"),
        "output token throughput (tok/s)": _m("steady_output_throughput_tok_s"),
        "output throughput, retokenized (tok/s)": _m("steady_output_throughput_retokenized_tok_s"),
        "average concurrency": _m("steady_concurrency"),
        "peak concurrency": _s("steady_peak_concurrency", "int"),
        "peak output throughput (tok/s)": _m("steady_peak_output_throughput_tok_s"),
    },
    # after `Cache hit rate:` the same tiers again, as shares of the cached tokens (0.5.23)
    "cache hit shares": {
        "device": _s("cache_device_share"),
        "host": _s("cache_host_share"),
    },
    "cache hit details": {
        "total prompt tokens": _s("cache_total_prompt_tokens", "int"),
        "total cached tokens": _s("cache_total_cached_tokens", "int"),
        "device": _s("cache_device"),
        "host": _s("cache_host"),
    },
}
# Section names (lower case, `-` as space) whose rows are understood. Latency rows of any
# other section are skipped: vLLM 0.33's queue-inclusive latencies reuse the same stat
# words, and mapping them onto `e2e_latency_*` would be a silent lie.
KNOWN_SECTIONS = frozenset(
    {
        "end to end latency",
        "time to first token",
        "time per output token (excl. 1st token)",
        "inter token latency",
        "goodput",
        "cache hit details",
        "cache hit shares",
        "speculative decoding",
        STEADY,
    }
)
LATENCY_FAMILIES = {
    "ttft": "ttft",
    "tpot": "tpot",
    "itl": "itl",
    "e2e latency": "e2e_latency",
    "e2el": "e2e_latency",
    "e2e": "e2e_latency",
}
_LATENCY_ROW = re.compile(
    r"^(?P<stat>mean|median|std|min|max|p(?P<p>\d+(?:\.\d+)?))\s+(?P<fam>.+?)\s*\(ms\)$"
)
_POSITION_ROW = re.compile(r"^position (?P<i>\d{1,6})$")
_SLO_ROW = re.compile(r"^(?P<name>.+?) slo attainment \(%\)$")
_STORAGE_ROW = re.compile(r"^storage\b.*$")

# bench_serving `--output-file` keys -> metric (log-formats §5.1).
JSON_METRICS: dict[str, str] = {
    "completed": "successful_requests",
    "successful_requests": "successful_requests",  # bench_offline_throughput's records
    "total_latency": "benchmark_duration_s",  # the same: the whole run's duration
    "failed": "failed_requests",
    "duration": "benchmark_duration_s",
    "request_throughput": "request_throughput_req_s",
    "input_throughput": "input_throughput_tok_s",
    "output_throughput": "output_throughput_tok_s",
    "total_throughput": "total_throughput_tok_s",
    "total_token_throughput": "total_throughput_tok_s",
    "max_output_tokens_per_s": "peak_output_throughput_tok_s",
    "max_concurrent_requests": "peak_concurrent_requests",
    "concurrency": "concurrency",
    "accept_length": "accept_length",
    "request_goodput": "goodput_req_s",
    "last_gen_throughput": "last_gen_throughput_tok_s",
    # `vllm bench serve --save-result` (serve.py: the benchmark's spec-decoding counters)
    "spec_decode_acceptance_length": "accept_length",
    "spec_decode_acceptance_rate": "draft_acceptance_rate",  # printed in percent
    "spec_decode_num_drafts": "num_drafts",
    "spec_decode_draft_tokens": "drafted_tokens",
    "spec_decode_accepted_tokens": "accepted_tokens",
    "slo_attainment": "slo_attainment",  # a fraction (stdout prints it in percent)
    "rtfx": "rtfx",  # vLLM 0.17+, audio runs
}
# Measured results of a record that no metric takes (vLLM: probe requests 0.27+, client-side
# queueing 0.32+, diffusion decoding 0.25+, pooling runs' inputs 0.29+, latencies of other
# families): listed as not read, never settings (they would be confounds).
_JSON_RESULT = re.compile(
    r"^(?:probe|diffusion)_|_throughput$|^total_input_sequences$"
    r"|^(?:mean|median|std|min|max|p\d+(?:\.\d+)?)_\w+_ms$"
)
_JSON_PERCENT = frozenset({"spec_decode_acceptance_rate"})
# SGLang 0.5.23 `steady_state_serving` appends its window's figures to the output file as a
# record of their own (told by `concurrency_ratio` and `window_start`); other keys: settings.
_STEADY_JSON = {
    "input_throughput": "steady_input_throughput_tok_s",
    "output_throughput": "steady_output_throughput_tok_s",
    "output_throughput_retokenized": "steady_output_throughput_retokenized_tok_s",
    "average_concurrency": "steady_concurrency",
    "peak_output_throughput": "steady_peak_output_throughput_tok_s",
}
# A list of fractions, one per draft position (position_acceptance_rate_<i>).
_JSON_POSITIONS = "spec_decode_per_position_acceptance_rates"
_JSON_LATENCY = re.compile(
    r"^(?P<stat>mean|median|std|min|max|p(?P<p>\d+(?:\.\d+)?))_(?P<fam>ttft|tpot|itl|e2e_latency|e2el)_ms$"
)
# Per-request arrays (`--output-details`; always present in 0.4.x): not settings.
_JSON_ARRAYS = frozenset(
    {
        "input_lens",
        "output_lens",
        "ttfts",
        "itls",
        "generated_texts",
        "errors",
        "latencies",
        "start_times",
        "queue_times",
    }
)
_MAX_LIST = 64  # longer lists are per-request data, not settings

ACCEPT_SCOPE: dict[str, tuple[str, bool]] = {
    # SGLang reads /server_info's avg_spec_accept_length: cumulative since server start or
    # the last flush, bonus token included. vLLM diffs its Prometheus counters around the
    # run (benchmark only) and computes 1 + accepted/drafts.
    "sglang": ("server-cumulative", True),
    "vllm": ("benchmark", True),
}


def norm_label(label: str) -> str:
    """A row label for lookup: lower case, single spaces."""
    return re.sub(r"\s+", " ", label.strip()).lower()


def section_key(title: str) -> str:
    """A section title for lookup: `End-to-End Latency` -> `end to end latency`."""
    return re.sub(r"[\s-]+", " ", title.strip()).lower()


def lookup(label: str, section: str | None) -> RowSpec | None:
    """The meaning of a row label in a section (None: before any section), if known."""
    key = norm_label(label)
    if section == STEADY:
        return SECTION_ROWS[STEADY].get(key)
    if section is not None and section in SECTION_ROWS:
        found = SECTION_ROWS[section].get(key)
        if found is not None:
            return found
        if section == "cache hit details" and _STORAGE_ROW.match(key):
            return _s("cache_" + slug(key))
        if section == "cache hit shares" and _STORAGE_ROW.match(key):
            return _s("cache_" + slug(key) + "_share")
    found = ROWS.get(key)
    if found is not None:
        return found
    m = _LATENCY_ROW.match(key)
    if m is not None:
        fam = LATENCY_FAMILIES.get(m["fam"])
        if fam is None or (section is not None and section not in KNOWN_SECTIONS):
            return None
        name = f"{fam}_ms_{_stat(m['stat'], m['p'])}"
        # a percentile the registry lacks (`P42`) is an unknown row, never a new metric name
        return _m(name) if is_known(name) else None
    m = _POSITION_ROW.match(key)
    if m is not None:
        return _m(f"position_acceptance_rate_{int(m['i'])}")
    m = _SLO_ROW.match(key)
    if m is not None and m["name"] in LATENCY_FAMILIES:
        # an SLO on another quantity has no registered metric: an unknown row, not a new name
        return _m(f"{LATENCY_FAMILIES[m['name']]}_slo_attainment")
    return None


def _unit_of(value: str) -> str:
    """The text after a row value's number: `5.99 requests/s` -> `requests/s`."""
    m = _LEAD_NUM.match(value)
    return m["rest"].strip() if m is not None else ""


def _stat(stat: str, p: str | None) -> str:
    # P99.9 -> p999, P99 -> p99: the registry's spelling of percentiles
    return "p" + p.replace(".", "") if p is not None else stat


# ------------------------------------------------------------------ values


def setting_value(raw: str, cast: Cast = "auto") -> JSON:
    """A row's or argument's value as a JSON-safe setting (`inf` kept as the string "inf")."""
    t = raw.strip()
    low = t.lower()
    if low in ("not set", "none", "null", ""):
        return None
    if low in ("inf", "+inf", "infinity", "-inf", "nan"):
        return low.lstrip("+").replace("infinity", "inf")  # JSON has no infinity
    if cast == "str":
        return t
    m = re.fullmatch(r"(?P<n>[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?:\s*\(.*\))?", t)
    if m is not None and (len(m["n"]) > 40 or not math.isfinite(float(m["n"]))):
        return t  # no JSON number: `1e999` would be infinity, 5000 digits too big for int()
    if m is not None:
        n = m["n"]
        if cast == "float":
            return float(n)
        if re.fullmatch(r"[-+]?\d+", n):
            return int(n)
        f = float(n)
        return int(f) if cast == "int" and f.is_integer() else f
    if low in ("true", "false"):
        return low == "true"
    return t


def json_setting(value: Any) -> JSON:
    """A JSON value as a setting: nan and the infinities as text (JSON has none), in lists
    too."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, list):
        return [json_setting(v) for v in value]
    return value


# ------------------------------------------------------------------ Namespace(...) preamble

_NS_SCALAR = re.compile(
    r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
    r"|None|True|False|[-+]?inf|nan"
)
_NS_ITEM = re.compile(r"^\s*(?P<k>[A-Za-z_]\w*)\s*=\s*(?P<v>.*?)\s*$", re.DOTALL)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}


def namespace_items(body: str) -> tuple[list[tuple[str, JSON]], bool]:
    """Scalar `key=value` items of an argparse `Namespace(` body (text after the paren).

    A bracket- and quote-aware split on top-level commas; only plain scalars are kept
    (nested reprs such as `<function ...>` or lists are skipped). Returns the items and
    whether the closing paren was seen; without it the last item may be cut and is dropped.
    """
    raw: list[str] = []
    depth = 0
    quote = ""
    start = 0
    i = 0
    complete = False
    while i < len(body):
        ch = body[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            if depth == 0 and ch == ")":
                raw.append(body[start:i])
                complete = True
                break
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            raw.append(body[start:i])
            start = i + 1
        i += 1
    out: list[tuple[str, JSON]] = []
    for item in raw:
        m = _NS_ITEM.match(item)
        if m is None or _NS_SCALAR.fullmatch(m["v"]) is None:
            continue
        out.append((m["k"], _ns_value(m["v"])))
    return out, complete


def cut_namespace(ctx: ParseContext, line: int, kept: int) -> None:
    """Say that a Namespace dump is cut, and how many arguments before the cut are kept."""
    ctx.warn(
        line,
        "truncated-settings",
        f"the Namespace dump is cut; {kept} argument{'s' if kept != 1 else ''} before the "
        "cut are kept",
    )


def _ns_value(v: str) -> JSON:
    if v[:1] in "'\"":
        return re.sub(r"\\(.)", lambda e: _ESCAPES.get(e.group(1), e.group(0)), v[1:-1])
    return {"None": None, "True": True, "False": False}.get(v, setting_value(v))


# ------------------------------------------------------------------ sniff evidence

SERVER_MARKERS = re.compile(
    r"(?:Decode|Prefill) batch[.,\s\[(]|server_args=|Avg prompt throughput:"
    r"|SpecDecoding metrics:|Speculative metrics:"
)
TITLE_SERVING = re.compile(r"=\s*Serving Benchmark Result\s*=")
TITLE_OFFLINE = re.compile(r"=\s*Offline Throughput Benchmark Result\s*=")
_AFTER_TITLE = r"=\s*Serving Benchmark Result\s*=+[ \t]*\n(?:[ \t]*\n)*[^\n]*?"
# Case matters: SGLang prints `End-to-End`/`Inter-Token` (0.4.4+), vLLM `End-to-end`/`Inter-token`.
SGLANG_MARKS = base.Prefiltered(
    re.compile(
        _AFTER_TITLE + r"Backend:"
        r"|Backend:[ \t]{2,}\S[^\n]*\n[^\n]*Traffic request rate:"
        r"|Max reqeuest concurrency:|\bAccept length:[ \t]+\d|E2E Latency \(ms\):"
        r"|-End-to-End Latency-|-Inter-Token Latency-|-Cache Hit Details-|-Goodput-"
        r"|Total generated tokens \(retokenized\):|benchmark_args=Namespace\("
    ),
    "Serving Benchmark Result",
    "Backend:",
    "Max reqeuest concurrency:",
    "Accept length:",
    "E2E Latency (ms):",
    "-End-to-End Latency-",
    "-Inter-Token Latency-",
    "-Cache Hit Details-",
    "-Goodput-",
    "Total generated tokens (retokenized):",
    "benchmark_args=Namespace(",
)
VLLM_MARKS = base.Prefiltered(
    re.compile(
        _AFTER_TITLE + r"Successful requests:"
        r"|E2EL \(ms\):|-End-to-end Latency-|Total Token throughput|Failed requests:"
        r"|Request rate configured \(RPS\):|-Speculative Decoding-|Acceptance rate \(%\):"
        r"|Per-position acceptance|Maximum request concurrency:[ \t]{2,}|Burstiness factor:"
        r"|dispatch_function=|Acceptance length:"
    ),
    "Serving Benchmark Result",
    "E2EL (ms):",
    "-End-to-end Latency-",
    "Total Token throughput",
    "Failed requests:",
    "Request rate configured (RPS):",
    "-Speculative Decoding-",
    "Acceptance rate (%):",
    "Per-position acceptance",
    "Maximum request concurrency:",
    "Burstiness factor:",
    "dispatch_function=",
    "Acceptance length:",
)
GENERIC_MARKS = base.Prefiltered(
    re.compile(
        r"Serving Benchmark Result"
        r"|(?:(?:Mean|Median|P\d+(?:\.\d+)?) (?:TTFT|TPOT|ITL) \(ms\)|Request throughput \(req/s\))"
        r":[ \t]+(?:[\d.]+|nan|inf)[ \t]*$",
        re.MULTILINE,
    ),
    "Serving Benchmark Result",
    "TTFT (ms)",
    "TPOT (ms)",
    "ITL (ms)",
    "Request throughput (req/s)",
)
OFFLINE_ROW = re.compile(r"Last generation throughput \(tok/s\):")
# A benchmark record on a line of its own, anywhere in the head (noise may come first).
_JSONL_HEAD = re.compile(
    r'^[ \t]*\{[^\n]*"(?:request_throughput|mean_ttft_ms|completed)"', re.MULTILINE
)
_SGLANG_JSON_KEYS = re.compile(
    r'"(?:accept_length|random_range_ratio|sharegpt_output_len|'
    r'total_output_tokens_retokenized|server_info)"\s*:'
)
# Keys only `vllm bench serve --save-result` writes (a `spec_decode_*` one with a value of
# its own: AIPerf's exports hold tags of that name too, each an object of statistics).
_VLLM_JSON_KEYS = re.compile(
    r'"(?:endpoint_type|model_id|tokenizer_id|burstiness|max_concurrent_requests|rtfx)"\s*:'
    r'|"spec_decode_[a-z_]+"\s*:(?!\s*\{)'
)


_JSONL_LOOK = 5  # non-blank lines of the head looked at


def looks_like_jsonl(head: str) -> bool:
    """Whether a source is JSON records (bench_serving's `--output-file`), one per line.

    Told by its first few non-blank lines, not by a first `{`: at least half of them are
    JSON objects (a corrupt first record or a pasted `$ cat out.jsonl` still leaves a JSONL
    file one, a stray `{` above a terminal's text does not make one). A record longer
    than the head, cut by it, counts when nothing else is there to tell.
    """
    lines = strip_head(head).split("\n")
    seen = objects = 0
    parts: list[str] = []  # a record split over lines (the reader joins them the same way)
    for line in lines[:-1]:  # the last piece may be cut by the head's end
        text = line.strip()
        if not text:
            continue
        if parts and not text.startswith("{") and len(parts) < _MAX_SPLIT:
            parts.append(text)
            if isinstance(_joined(parts), dict):
                objects, parts = objects + 1, []
            continue
        parts = []
        seen += 1
        if text.startswith("{"):
            obj = None
            with contextlib.suppress(ValueError, RecursionError):
                obj = json.loads(text)
            objects += isinstance(obj, dict)
            if obj is None and not text.endswith("}"):
                parts = [text]
        if seen == _JSONL_LOOK:
            break
    if seen == 0:
        return lines[-1].lstrip().startswith("{")
    return objects > 0 and 2 * objects >= seen


def vllm_json(head: str) -> bool:
    """Whether the head is `vllm bench serve --save-result` JSON (one record per line)."""
    head = strip_head(head)
    return (
        _JSONL_HEAD.search(head) is not None
        and _VLLM_JSON_KEYS.search(head) is not None
        and _SGLANG_JSON_KEYS.search(head) is None
    )


def sglang_jsonl(head: str) -> bool:
    """Whether the head is bench_serving JSONL, told by its SGLang-only keys."""
    head = strip_head(head)
    return _JSONL_HEAD.search(head) is not None and _SGLANG_JSON_KEYS.search(head) is not None


# ------------------------------------------------------------------ the reader


def counter() -> Callable[[], int]:
    """A block-number source: 0, 1, 2, … on successive calls."""
    numbers = itertools.count()
    return lambda: next(numbers)


@dataclass(slots=True)
class _Row:
    label: str
    value: str
    padded: bool
    at_end: bool  # nothing (not even padding) follows the value


# A label with a comma (`Output throughput, retokenized (tok/s):`, SGLang 0.5.23) is a row
# only when padded and with a value: free text with a comma and a colon is a label line.
_ROW_COMMA = re.compile(
    r"^\s*(?P<label>[A-Za-z#][A-Za-z0-9 #()/%<>.+_'&,-]{0,79}?)[ \t]*:"
    r"(?P<gap>[ \t]{2,})(?P<value>\S(?:.*\S)?)(?P<trail>[ \t]*)$"
)


def parse_row(text: str) -> _Row | None:
    """A `label:` + whitespace + value line (value may be empty), or None."""
    m = _ROW.match(text)
    if m is None and "," in text:
        m = _ROW_COMMA.match(text)
    if m is None:
        return None
    value = m["value"] or ""
    if value and not m["gap"]:
        return None  # `a:b` is no row
    label = m["label"].strip()
    # `{:<40}` pads the label to 40 columns: two or more spaces, or a label that fills them.
    padded = len(m["gap"]) >= 2 or len(label) + 1 >= 39
    return _Row(label, value, padded, m["trail"] == "")


@dataclass(slots=True)
class _Block:
    line: int
    title: str | None = None
    known_title: bool = False
    label: tuple[str, int] | None = None
    index: int | None = None
    section: str | None = None
    section_raw: str | None = None
    names: set[str] = field(default_factory=set)
    unknown: list[tuple[int, str]] = field(default_factory=list)
    percent_positions: bool = True
    accept_done: bool = False
    # An unknown section after the block's first rows is an unknown sub-section (vLLM
    # 0.33's `Probe Requests`, a fork's extras): none of its rows is read, since it may
    # repeat top-level labels. An unknown header that opens a block is only a decoration.
    skip_section: bool = False


@dataclass(slots=True)
class _Namespace:
    line: int
    body: str
    lines: int = 1


_KNOWN_TITLES = ("serving benchmark result", "offline throughput benchmark result")
_MAX_NS_LINES = 80  # a hard-wrapped Namespace of a few KB; more is not a Namespace
_MAX_UNKNOWN_SHOWN = 5


class BlockReader:
    """Line-level state machine for result blocks: `feed` each line, then `finish`.

    A block starts at a title, or at the first padded row, known row or section header
    after other text, and ends at its footer, the next title, a row that repeats one of
    its metrics or settings (title-less blocks pasted one after another), or a line that
    is neither a row, a header nor blank. Blocks are materialised lazily, at their first
    known row, so decorative headers never become empty blocks. Run parameters seen
    before a block (Namespace dump, vLLM's preamble lines, a label line) become its
    settings. Lines of a server log printed to the same terminal go to `embedded`.
    """

    def __init__(
        self,
        format_id: str,
        ctx: ParseContext,
        *,
        next_block: Callable[[], int] | None = None,
        json_records: bool = False,
        jsonl: bool = False,
        embedded: tuple[str, LineReader] | None = None,
    ) -> None:
        self.format_id = format_id
        self.ctx = ctx
        counter = itertools.count()
        self._next_block = next_block or (lambda: next(counter))
        self._json_records = json_records or jsonl
        self._jsonl = jsonl
        self._embedded = embedded
        self._block: _Block | None = None
        self._pending: dict[str, tuple[JSON, int]] = {}
        self._label: tuple[str, int] | None = None
        self._ns: _Namespace | None = None
        self._last_cut = False
        self._after_warning = False  # Python echoes a warning's source line after it
        self._in_traceback = False  # a client's traceback: its indented lines label nothing
        self._command: str | None = None  # a benchmark command continued by a `\\`
        # A row's sample whose fewer decimals may be a cut: yielded if its block goes on.
        self._held: tuple[Sample, str, str] | None = None
        # The lines of a JSON record that a paste split (a `{` line that does not close)
        self._split: list[tuple[Line, str]] = []
        # Inside a list under a bare `Heading:` outside a block (SGLang's `Generated shared
        # prefix dataset statistics:`), up to a blank line: facts, not a block's rows.
        self._in_list = False

    # ------------------------------------------------------------------ entry points

    def feed(self, ln: Line) -> Iterator[Record]:
        """Records of one line, in line order."""
        text = strip_outer(ln.text)
        stripped = text.strip()
        if self._split:
            parts, self._split = self._split, []
            if stripped and stripped[:1] != "{" and self._json_records:
                parts.append((ln, stripped))
                obj = _joined([t for _, t in parts])
                if isinstance(obj, dict) and is_bench_record(obj):
                    self._end_block()
                    yield from self.read_record(parts[0][0].no, obj, _key_lines(parts, obj))
                    return
                if obj is None and len(parts) < _MAX_SPLIT and not stripped.endswith("}"):
                    self._split = parts  # the record goes on over one more line
                    return
                parts.pop()
            # not a record's continuation: the lines held are read as they are
            for held, _ in parts:
                yield from self._feed(held, hold=False)
        yield from self._feed(ln, hold=True)

    def _feed(self, ln: Line, hold: bool) -> Iterator[Record]:
        self._last_cut = ln.cut
        text = strip_outer(ln.text)
        stripped = text.strip()
        if self._held is not None:
            goes_on = bool(FOOTER.match(text) or SECTION.match(text) or parse_row(text))
            yield from self._release(goes_on)
        if self._ns is not None:
            if self._ns_continues(text, stripped):
                self._ns.body += stripped
                self._ns.lines += 1
                self._scan_ns(final=False)
                return
            self._scan_ns(final=True)
        if self._json_records and stripped.startswith("{"):
            if hold and not ln.cut and not stripped.endswith("}") and _json_fails(stripped):
                # a record wrapped by a paste or a terminal: the rest is on the next line
                self._split = [(ln, stripped)]
                return
            handled = yield from self._json_line(ln, stripped)
            if handled:
                return
        elif self._jsonl and stripped:
            yield from self._json_line(ln, stripped)
            return
        if not stripped:
            self._in_list = False
            return
        if FOOTER.match(text):
            self._end_block()
            self._label = None
            return
        m = TITLE.match(text)
        if m is not None:
            self._end_block()
            self._open(ln.no, title=m["t"])
            return
        m = SECTION.match(text)
        if m is not None:
            b = self._block
            if b is None:
                b = self._open(ln.no)
                if section_key(m["t"]) not in KNOWN_SECTIONS:
                    # `--- concurrency 8 ---` opening rows is a label, not a section
                    b.label = (m["t"], ln.no)
                    return
            b.section = section_key(m["t"])
            b.section_raw = m["t"]
            b.skip_section = b.index is not None and b.section not in KNOWN_SECTIONS
            return
        if _FOREIGN.search(text):
            yield from self._foreign(ln)
            return
        c = _BENCH_COMMAND.search(text) if self._block is None else None
        if c is not None or self._command is not None:
            self._read_command(c["args"] if c is not None else text, ln.no)
            return
        if _NS_START.match(text):
            self._end_block()
            self._ns = _Namespace(ln.no, text[text.index("Namespace(") + len("Namespace(") :])
            self.ctx.count("namespace")
            self._scan_ns(final=False)
            return
        b = self._block
        warning = _WARNING.search(stripped) is not None
        if (
            b is not None
            and b.index is not None
            and (warning or (self._after_warning and text[:1].isspace() and ":" not in stripped))
        ):
            # A warning another thread printed between the rows (`x.py:712: UserWarning: …`,
            # never a row), or the source line Python echoes after it: not the block's end.
            self._after_warning = warning
            yield from self._foreign(ln)
            return
        row = None if warning else parse_row(text)
        if self._in_list and b is None:
            if row is None or not row.padded or lookup(row.label, None) is None:
                self._label = None  # the heading heads a list, not a block
                self.ctx.count("list-line")
                return
            self._in_list = False  # a block's padded row: the list has ended
        if row is not None and not _PREAMBLE_COUNT.match(text):
            yield from self._row(ln, row, stripped)
            return
        if ln.cut and b is not None and b.index is not None and _PARTIAL.match(stripped):
            return  # the file ends in the start of one more row or section: `finish` says so
        self._end_block()
        yield from self._other(ln, stripped)

    def finish(self) -> Iterator[Record]:
        """Records still owed at the end of the source."""
        parts, self._split = self._split, []
        for i, (held, _) in enumerate(parts):  # the file ends inside a record: it is cut
            yield from self._feed(Line(held.no, held.text, i == len(parts) - 1), hold=False)
        yield from self._release(False)
        if self._ns is not None:
            self._scan_ns(final=True)
        b = self._block
        if b is not None and b.index is not None and self._last_cut:
            self.ctx.warn(
                b.line,
                "truncated-output",
                f"block {b.index} is cut: the file ends inside it; the rows "
                "before the cut are kept",
            )
        elif b is not None and b.index is None and b.known_title:
            self.ctx.warn(
                b.line,
                "truncated-output",
                f"the block titled {b.title!r} has no rows: the file ends after it",
            )
        self._end_block()
        if self._embedded is not None:
            yield from self._embedded_records(self._embedded[1].finish())

    # ------------------------------------------------------------------ server lines in bulk

    @property
    def embedded(self) -> LineReader | None:
        """The line reader this one hands a server log's lines to."""
        return self._embedded[1] if self._embedded is not None else None

    @property
    def passes_through(self) -> bool:
        """Nothing held (a row's sample, a Namespace dump, a split JSON record): a line that
        `passes` goes to the embedded reader as it is, and changes nothing here but counts."""
        return self._held is None and self._ns is None and not self._split

    def passes(self, text: str) -> bool:
        """Whether `feed` hands this line to the embedded reader as it is (`_foreign`) when
        `passes_through`, whatever block is open: a server log's line."""
        if self._jsonl or self._embedded is None:
            return False
        text = strip_outer(text)
        stripped = text.strip()
        if not stripped or (self._json_records and stripped.startswith("{")):
            return False
        if FOOTER.match(text) or TITLE.match(text) or SECTION.match(text):
            return False
        return _FOREIGN.search(text) is not None

    def passing(self, t: pl.Series) -> npt.NDArray[np.bool_]:
        """`passes` of every line of `t`: the usual server-log prefixes by one polars pass,
        any other line on its own."""
        import numpy as np
        import polars as pl

        if self._jsonl or self._embedded is None:
            return np.zeros(t.len(), np.bool_)
        quick = (
            t.to_frame("t")
            .select(
                pl.col("t").str.contains(_PASSING) & ~pl.col("t").str.contains("%|", literal=True)
            )
            .to_series()
            .to_numpy()
            .copy()
        )
        rest = np.flatnonzero(~quick)
        for k, text in zip(rest.tolist(), t.gather(rest).to_list(), strict=True):
            quick[k] = self.passes(text)
        return quick

    def passed(self, n: int) -> None:
        """`n` lines that `passes` (none cut) the embedder handed its reader itself, with
        nothing held here: what `feed` would have done with them besides."""
        if n:
            self.ctx.count("foreign-line", n)
            self._last_cut = False

    # ------------------------------------------------------------------ blocks

    def _open(self, line: int, title: str | None = None) -> _Block:
        self._in_list = False
        known = title is not None and norm_label(title) in _KNOWN_TITLES
        self._block = _Block(line, title=title, known_title=known, label=self._label)
        if title is not None and norm_label(title) == STEADY:
            self._block.section = STEADY  # its rows are read by their own table
        return self._block

    def _materialize(self, b: _Block) -> Iterator[Record]:
        if b.index is not None:
            return
        b.index = self._next_block()
        self.ctx.count("block")
        yield BlockStart(b.index, b.line, self.format_id)
        for key, (value, line) in self._pending.items():
            yield Setting(key, value, line, b.index)
        self._pending.clear()
        if b.title is not None and not b.known_title:
            yield Setting("label", b.title, b.line, b.index)
        elif b.label is not None:
            yield Setting("label", b.label[0], b.label[1], b.index)
        self._label = None

    def _end_block(self) -> None:
        b, self._block = self._block, None
        if b is None:
            return
        if b.index is None:
            # Never materialised: a decorative header or an unknown title is a label line.
            if b.title is not None and not b.known_title:
                self._label = (b.title, b.line)
            elif b.title is None and b.label is not None and b.label[1] == b.line:
                self._label = b.label
            return
        if b.unknown:
            shown = not_read([label for _, label in b.unknown], "row")
            self.ctx.warn(b.unknown[0][0], "unknown-row", f"block {b.index}: {shown}")

    def _row(self, ln: Line, row: _Row, stripped: str) -> Iterator[Record]:
        b = self._block
        if row.label[:1].islower():
            # Every producer capitalises its labels: ` output token throughput (tok/s):` is
            # the tail of a longer one (`Peak` cut off by a paste, or split by a warning
            # written into the line), never that row.
            if b is None or b.index is None:
                yield from self._other(ln, stripped)
            else:
                b.unknown.append((ln.no, row.label))
                self.ctx.count("unknown-row")
            return
        spec = lookup(row.label, b.section if b is not None else None)
        if b is None:
            if spec is None and not row.value and not (row.at_end and ln.cut):
                # a bare `Heading:`: the label of a block right below it, or the head of a
                # list of facts (not rows) that ends at a blank line
                self._in_list = True
                yield from self._other(ln, stripped)
                return
            if spec is None and not row.padded:
                yield from self._other(ln, stripped)
                return
            if spec is not None and spec.kind == "setting" and not row.padded:
                # vLLM's preamble (`Traffic request rate: inf`) or a whitespace-collapsed
                # paste: a run parameter for the next block, not a block row.
                if not (row.at_end and ln.cut):
                    self._pending[spec.name] = (setting_value(row.value, spec.cast), ln.no)
                self.ctx.count("preamble")
                return
            b = self._open(ln.no)
        if b.skip_section:
            spec = None
        elif spec is not None and spec.kind != "subheader" and spec.name in b.names:
            self._end_block()
            b = self._open(ln.no)
            spec = lookup(row.label, None)
        if spec is None:
            unknown_section = b.section_raw and b.section not in KNOWN_SECTIONS
            where = f"{b.section_raw}: " if unknown_section else ""
            b.unknown.append((ln.no, where + row.label))
            self.ctx.count("unknown-row")
            return
        if spec.kind == "subheader":
            b.percent_positions = "%" in row.label
            return
        b.names.add(spec.name)
        if spec.name == "cache_hit_rate" and b.section == "cache hit details":
            b.section = "cache hit shares"  # the tiers that follow are shares, not counts
        yield from self._materialize(b)
        assert b.index is not None
        self.ctx.count("row")
        if spec.kind == "setting":
            if row.at_end and ln.cut:
                self.ctx.warn(
                    ln.no,
                    "truncated-value",
                    f"block {b.index}: the value of {row.label!r} is cut ({row.value!r}); not kept",
                )
                return
            yield Setting(spec.name, setting_value(row.value, spec.cast), ln.no, b.index)
            return
        if spec.accept is not None and not b.accept_done:
            b.accept_done = True
            scope, bonus = ACCEPT_SCOPE[spec.accept]
            yield Setting("accept_length_scope", scope, ln.no, b.index)
            yield Setting("accept_len_counts_bonus", bonus, ln.no, b.index)
        if spec.unit is not None and _unit_of(row.value) != spec.unit:
            if ln.cut and row.at_end and spec.unit.startswith(_unit_of(row.value)):
                # `Average latency: 24.31` where the line was cut: seconds or ms, never a guess
                self.ctx.warn(
                    ln.no,
                    "truncated-value",
                    f"block {b.index}: the value of {row.label!r} is cut before its unit "
                    f"({row.value!r}); no sample taken",
                )
                return
            b.unknown.append((ln.no, row.label))  # `Throughput: 12 tokens/s`: not this row
            self.ctx.count("unknown-row")
            return
        percent = "(%)" in row.label or (
            spec.name.startswith("position_acceptance_rate_") and b.percent_positions
        )
        value = self._metric_value(ln, row, b.index, percent, spec.name)
        if value is None:
            return
        sample = Sample(spec.name, value, ln.no, b.index)
        if row.at_end and _BARE_FLOAT.fullmatch(row.value) and decimals_of(row.value) < 2:
            # Fewer decimals than `.2f` where the line ends: whole if the block goes on, else
            # the copy was cut or wrapped there (a newline added after the cut).
            self._held = (sample, row.label, row.value)
            return
        yield sample

    def _metric_value(
        self, ln: Line, row: _Row, block: int, percent: bool, name: str = ""
    ) -> float | None:
        """The row's number by DESIGN §2, or None with a diagnostic saying why."""
        m = _LEAD_NUM.match(row.value)
        rest = m["rest"] if m is not None else ""
        if m is None or (rest and rest[0] not in "% \t("):
            if ln.cut and row.at_end:
                self.ctx.warn(
                    ln.no,
                    "truncated-value",
                    f"block {block}: the value of {row.label!r} is cut "
                    f"({row.value!r}); no sample taken",
                )
            else:
                self.ctx.warn(
                    ln.no,
                    "unparsed-line",
                    f"block {block}: {row.label!r} has no number ({row.value!r})",
                )
            return None
        num = m["num"]
        at_end = rest == "" and row.at_end
        # Floats print `.2f` in every producer: on a cut last line, fewer decimals are a cut.
        decimals = 2 if (ln.cut and at_end and "." in num) else None
        got = read_number(num, at_end=at_end, line_cut=ln.cut, decimals=decimals)
        if got.cut or got.value is None:
            self.ctx.warn(
                ln.no,
                "truncated-value",
                f"block {block}: the value of {row.label!r} is cut ({num!r}); no sample taken",
            )
            return None
        if no_sample(self.ctx, ln.no, f"block {block}: {row.label!r}", got.value, num):
            return None
        if percent or rest.startswith("%"):
            return round(got.value / 100, decimals_of(num) + 2)
        unit, want = rest.strip(), metric_info(name).unit if name else ""
        if unit and want in ("ms", "s") and time_unit(unit):
            # a time printed with its unit after it, in the unit its metric is kept in
            return convert_time(got.value, unit, want)
        return got.value

    def _release(self, goes_on: bool) -> Iterator[Sample]:
        """The held row's sample when its block goes on after it; else it was cut."""
        if self._held is None:
            return
        (sample, label, raw), self._held = self._held, None
        if goes_on:
            yield sample
            return
        self.ctx.warn(
            sample.line,
            "truncated-value",
            f"block {sample.block}: the value of {label!r} ({raw!r}) has fewer decimals than "
            "its format prints and the block ends there: cut; no sample taken",
        )

    # ------------------------------------------------------------------ other lines

    def _other(self, ln: Line, stripped: str) -> Iterator[Record]:
        """Free text outside a block: maybe the label of the next block."""
        indented = strip_outer(ln.text)[:1].isspace()
        started = _TRACEBACK.search(stripped) is not None
        self._in_traceback = started or (self._in_traceback and indented)
        quiet = self._after_warning or self._in_traceback
        label = None if quiet else _label_of(stripped)
        self._after_warning = _WARNING.search(stripped) is not None
        if label is not None:
            self._label = (label, ln.no)
        if self._embedded is not None:
            yield from self._embedded_records(self._embedded[1].feed(ln))

    def _foreign(self, ln: Line) -> Iterator[Record]:
        self.ctx.count("foreign-line")
        if self._embedded is not None:
            yield from self._embedded_records(self._embedded[1].feed(ln))

    def _embedded_records(self, records: Iterator[Record]) -> Iterator[Record]:
        assert self._embedded is not None
        for rec in records:
            # a server log's own records carry no block; its phase blocks say their format
            if isinstance(rec, Sample | Setting) and rec.block is None:
                self.ctx.embedded.add(self._embedded[0])
            yield rec

    # ------------------------------------------------------------------ Namespace dump

    def _ns_continues(self, text: str, stripped: str) -> bool:
        """Whether a line continues a hard-wrapped Namespace dump."""
        assert self._ns is not None
        if not stripped or self._ns.lines >= _MAX_NS_LINES:
            return False
        if FOOTER.match(text) or TITLE.match(text) or SECTION.match(text):
            return False
        if _PREAMBLE_COUNT.match(text) or _FOREIGN.search(text) or _NS_START.match(text):
            return False
        row = parse_row(text)
        return row is None or not row.padded

    def _read_command(self, text: str, line: int) -> None:
        """A benchmark command's `--flag value` pairs (a `\\` at the end continues it on
        the next line), as settings of the next block."""
        body = text.rstrip()
        self._command = (self._command or "") + " " + body.rstrip("\\")
        if body.endswith("\\"):
            return
        joined, self._command = self._command, None
        self.ctx.count("command")
        try:
            tokens = shlex.split(joined, comments=True)
        except ValueError:  # an unclosed quote (a cut paste)
            tokens = joined.split()
        key: str | None = None
        values: list[str] = []

        def flush() -> None:
            if not key:
                return
            value: JSON = True  # a switch (`--disable-tqdm`)
            if len(values) == 1:
                value = setting_value(values[0])
            elif values:
                value = " ".join(values)
            self._pending[key] = (value, line)

        for tok in tokens:
            if tok in _SHELL_STOP or tok.startswith((">", "2>", "1>")):
                break
            if tok.startswith("--") and len(tok) > 2:
                flush()
                name, eq, value = tok[2:].partition("=")
                key, values = name.replace("-", "_"), [value] if eq else []
            elif key is not None:
                values.append(tok)
        flush()

    def _scan_ns(self, final: bool) -> None:
        ns = self._ns
        assert ns is not None
        items, complete = namespace_items(ns.body)
        if not complete and not final:
            return
        self._ns = None
        for key, value in items:
            self._pending[key] = (value, ns.line)
        if not complete:
            cut_namespace(self.ctx, ns.line, len(items))

    # ------------------------------------------------------------------ JSON records

    def _json_line(self, ln: Line, stripped: str) -> Generator[Record, None, bool]:
        """A bench_serving `--output-file` record; returns whether the line was taken."""
        try:
            obj = json.loads(stripped)
        except (ValueError, RecursionError) as exc:
            if not self._jsonl:
                return False
            if ln.cut:
                self.ctx.warn(
                    ln.no, "truncated-output", "the last record is cut; no sample was taken from it"
                )
            else:
                why = exc.msg if isinstance(exc, json.JSONDecodeError) else "too deeply nested"
                where = f" at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
                self.ctx.warn(
                    ln.no,
                    "bad-record",
                    f"this line is not one JSON record ({why.lower()}{where}); skipped",
                )
            return True
        if not isinstance(obj, dict) or not is_bench_record(obj):
            if self._jsonl:
                self.ctx.warn(
                    ln.no, "bad-record", "this JSON line is not a benchmark record; skipped"
                )
            return self._jsonl
        self._end_block()
        yield from self.read_record(ln.no, obj)
        return True

    def read_record(
        self, line: int, obj: dict[str, Any], where: dict[str, int] | None = None
    ) -> Iterator[Record]:
        """The records of one benchmark record (a block of its own); `where` gives the line
        of each key when the record spans several lines (a pretty-printed document)."""
        block = self._next_block()
        self.ctx.count("record")
        yield BlockStart(block, line, self.format_id)
        for key, (value, at) in self._pending.items():
            yield Setting(key, value, at, block)
        self._pending.clear()
        steady = "concurrency_ratio" in obj and "window_start" in obj
        if steady:
            yield Setting("label", "Steady-State Result", line, block)
        unread: list[str] = []
        where = where or {}
        for key, value in obj.items():
            at = where.get(key, line)
            metric = _STEADY_JSON.get(key) if steady else _json_metric(key)
            if steady and metric is None:
                yield from (Setting(f"steady_{k}", v, at, block) for k, v in flatten(key, value))
            elif key == _JSON_POSITIONS and isinstance(value, list):
                yield from self._positions(at, block, key, value, where)
            elif metric is not None:
                if value is None or (key == "rtfx" and value == 0):
                    continue  # vLLM writes `"rtfx": 0.0` for a run that is not audio
                number = json_number(self.ctx, at, f"record {block}: {key}", value)
                if number is None:
                    continue
                if metric == "accept_length" and number < 1:
                    # both count the bonus token, so a length is at least 1; vLLM writes
                    # `0.0` when the run made no drafts (serve.py: `... if delta_drafts > 0
                    # else 0.0`): no speculation measured, never an acceptance length
                    self.ctx.warn(
                        at,
                        "impossible-value",
                        f"record {block}: {key} is {number:g}, below 1 (no drafts were "
                        "made); no sample taken",
                    )
                    continue
                if metric == "accept_length":
                    producer = "vllm" if key.startswith("spec_decode_") else "sglang"
                    scope, bonus = ACCEPT_SCOPE[producer]
                    yield Setting("accept_length_scope", scope, at, block)
                    yield Setting("accept_len_counts_bonus", bonus, at, block)
                if key in _JSON_PERCENT:  # as a `(%)` row: the printed digits, two places on
                    number = _fraction(number)
                yield Sample(metric, number, at, block)
            elif key in _JSON_ARRAYS:
                self.ctx.count("per-request-array")
            elif not steady and _JSON_RESULT.search(key):
                unread.append(key)
            elif key == "cache_report" and isinstance(value, dict):
                # `--cache-report`: the hit rate is the stdout block's `Cache hit rate:` row
                rate = value.get("cache_hit_rate_pct")
                if isinstance(rate, int | float) and not isinstance(rate, bool):
                    pct = float(rate)
                    if math.isfinite(pct):
                        yield Sample("cache_hit_rate", _fraction(pct), at, block)
                rest = {k: v for k, v in value.items() if k != "cache_hit_rate_pct"}
                for k, v in flatten(key, rest):
                    yield Setting(k, v, at, block)
            else:
                for k, v in flatten(key, value):
                    yield Setting(k, v, at, block)
        if unread:
            self.ctx.count("unknown-field", len(unread))
            self.ctx.warn(line, "unknown-field", f"record {block}: {not_read(unread, 'result')}")

    def _positions(
        self, at: int, block: int, key: str, value: list[Any], where: dict[str, int]
    ) -> Iterator[Record]:
        """Per-position acceptance fractions of a record, one sample per position (each on
        its own line when the record is printed over several: `where` has `key[i]`)."""
        for i, rate in enumerate(value):
            line = where.get(f"{key}[{i}]", at)
            number = json_number(self.ctx, line, f"record {block}: {key}[{i}]", rate)
            if number is not None:
                yield Sample(f"position_acceptance_rate_{i}", number, line, block)


def _fraction(percent: float) -> float:
    """A JSON percent as a fraction, as a `(%)` row reads it: to the printed digits, two
    places on (`12.5` -> 0.125, not 0.12500000000000003)."""
    return round(percent / 100, decimals_of(repr(percent)) + 2)


_MAX_SPLIT = 8  # lines one record may be split over (a wrapped paste); more is no record


def _json_fails(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return True
    return False


def _joined(parts: list[str]) -> Any:
    """The JSON value of a record's pieces: glued as they are (a wrap inside a token), else
    with a space (a wrap at one); None when neither parses."""
    for glue in ("", " "):
        with contextlib.suppress(ValueError, RecursionError):
            return json.loads(glue.join(parts))
    return None


def _key_lines(parts: list[tuple[Line, str]], obj: dict[str, Any]) -> dict[str, int]:
    """The line each key of a split record is printed on (where its `"key":` starts)."""
    out: dict[str, int] = {}
    for key in obj:
        mark = json.dumps(key) + ":"
        out[key] = next((ln.no for ln, text in parts if mark in text), parts[-1][0].no)
    return out


def json_number(ctx: ParseContext, line: int, what: str, value: Any) -> float | None:
    """A JSON record's value as a sample's number, or None with the diagnostic that says
    why (not a number: `unparsed-line`; nan or infinite: `non-finite-value`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        ctx.warn(line, "unparsed-line", f"{what} is not a number ({value!r})")
        return None
    if no_sample(ctx, line, what, value):
        return None
    return float(value)


def no_sample(ctx: ParseContext, line: int, what: str, value: float, printed: str = "") -> bool:
    """Whether a read number can be no sample (`value_problem`: nan, infinite, below zero);
    if so, the diagnostic that says so: `{what} is {printed} (below zero); no sample taken`.
    `printed` is the value as the source prints it (its repr when not given)."""
    problem = value_problem(value)
    if problem is None:
        return False
    why = "" if problem == "non-finite-value" else " (below zero)"
    ctx.warn(line, problem, f"{what} is {shown(printed or repr(value))}{why}; no sample taken")
    return True


def _json_metric(key: str) -> str | None:
    found = JSON_METRICS.get(key)
    if found is not None:
        return found
    m = _JSON_LATENCY.match(key)
    if m is None:
        return None
    fam = "e2e_latency" if m["fam"] == "e2el" else m["fam"]
    name = f"{fam}_ms_{_stat(m['stat'], m['p'])}"
    return name if is_known(name) else None


def is_bench_record(obj: dict[str, Any]) -> bool:
    return sum(1 for k in obj if _json_metric(k) is not None) >= 2


def flatten(key: str, value: Any) -> Iterator[tuple[str, JSON]]:
    """Settings of a JSON value: dicts by dotted keys, lists of scalars kept when short."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from flatten(f"{key}.{k}", v)
    elif isinstance(value, list):
        if all(isinstance(v, dict) for v in value) and value:
            for i, v in enumerate(value):
                yield from flatten(f"{key}.{i}", v)
        elif len(value) <= _MAX_LIST and all(
            v is None or isinstance(v, str | int | float | bool) for v in value
        ):
            yield key, json_setting(value)
    else:
        yield key, json_setting(value)


def not_read(names: list[str], what: str) -> str:
    """`3 rows not read: 'a', 'b', 'c'` (the first few named)."""
    n = len(names)
    shown = ", ".join(repr(name) for name in names[:_MAX_UNKNOWN_SHOWN])
    more = f" and {n - _MAX_UNKNOWN_SHOWN} more" if n > _MAX_UNKNOWN_SHOWN else ""
    return f"{n} {what}{'s' if n > 1 else ''} not read: {shown}{more}"


class Unread:
    """The rows or fields of each block that no alias maps, each named once, in the order
    met; said once per block when the source ends (`warn`), not once per line."""

    def __init__(self) -> None:
        self._names: dict[int, list[str]] = {}

    def note(self, block: int, name: str) -> None:
        found = self._names.setdefault(block, [])
        if name not in found:
            found.append(name)

    def warn(self, ctx: ParseContext, what: str, code: str) -> None:
        """One `code` diagnostic per block: `block 0: 3 rows not read: ...`."""
        for block, names in sorted(self._names.items()):
            ctx.warn(None, code, f"block {block}: {not_read(names, what)}")


def _label_of(text: str) -> str | None:
    """The label a free-text line gives the next block, or None for noise."""
    if len(text) > 200 or not re.search(r"[A-Za-z]", text) or _NOISE.search(text):
        return None
    if _FOREIGN.search(text) or _PREAMBLE_COUNT.match(text) or _SENTENCE.match(text):
        return None
    label = re.sub(r"^#{1,6}\s+", "", text).strip(" =-*#:>")
    return label or None
