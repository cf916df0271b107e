"""The reference reader of SGLang server logs: the line state machine (`Reader`).

Owns Decode/Prefill D1–D10 and P1–P11 read by key, `server_args=` settings (via `_literal`,
never eval), start-up and error events, and the hand-off of phase lines (phase-timing) and of
a benchmark run printed into the log (sglang-bench-serving), both asked for by id. The rank
rule is `ranks`'; the chunk path (`fast`) must give exactly what this reader gives.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..._lines import Line
from ..._literal import parse_server_args
from ...model import BlockStart, Record, Sample, Setting, SummaryItem
from .._fields import (
    is_expression,
    last_timestamp,
    percent,
    rank_of,
    read_number,
    value_problem,
)
from .._fields import shown as fields_shown
from ..base import InlineReader, LineReader, ParseContext
from .ranks import DUP, Ranks

FORMAT_ID = "sglang-server"
_PHASES = "phase-timing"  # the format of profiler phase lines inside the log
# A bench_serving run printed into the log (its argument dump or result title): detection
# sees only the head, so a long server log may hold one further on.
_BENCH_WORD = "enchmark"
_BENCH_START = re.compile(r"=\s*Serving Benchmark Result\s*=|benchmark_args=Namespace\(")
_BENCH_FORMAT = "sglang-bench-serving"

# What follows `Decode batch` / `Prefill batch`: `. ` (≤0.5.3), ` [N], ` (0.5.4, or with
# SGLANG_LOG_FORWARD_ITERS), `, ` (0.5.5+), or P1's `(mixed #running-req: N). `.
_TAIL = re.compile(r" batch(?:\.|,| ?\[\d+\],?|\(mixed #running-req: (?P<mixed>\d+)\)\.)[ ]?")
# Items glued by a space instead of ", " (PD prefill 0.4.6–0.4.8: `#transferring-req: N time: X `).
_GLUED = re.compile(r"(?P<k>[^:]+?): (?P<v>\S+)\s*")
_CAPACITY = re.compile(r"\b([a-z_]+)=([^,\s]*)(,)?")
_KV_ALLOC = re.compile(
    r"KV Cache is allocated\.(?: \w+: [^,#]*,)* #tokens: (?P<n>\d{1,18}), "
    r"(?:K size: (?P<k>[\d.]+) GB, V size: (?P<v>[\d.]+) GB|KV size: (?P<kv>[\d.]+) GB)"
)
_CAPTURE_END = re.compile(
    r"Capture (?P<what>[\w \-()]*?)(?:graph|CUDA graph) end\. "
    r"(?:\w+=(?:\[[^\]]*\]|[^,\s]*), )*"  # 0.5.23 prints `bs=[1, 2, ...], ` first
    r"(?:Time elapsed: |elapsed=)(?P<t>[\d.]+) s(?P<rest>.*)"
)
_NOT_TARGET_CAPTURE = ("draft", "piecewise", "prefill")
_MEM_USAGE = re.compile(r"mem usage=(?P<m>[\d.]+) GB")
_TIMEOUT = re.compile(r"time(?:d)? ?out", re.IGNORECASE)
_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(?::(?:\s|$)|$)")
# SGLang's line prefix (`[2025-11-14 09:12:44 TP0] `, `[10:02:11] `), at a line's start
# after any outer prefix, or glued into another line by a `cat` of a cut log.
PREFIX_BRACKET = (
    r"\[(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?:\.\d{3})?"
    r"(?: (?:ATTN_CP|MOE_DP|DP|PP|TP|EP)\d{1,9})*\] "
)
_LINE_PREFIX = re.compile(r"(?:^[^\[]{0,80})?" + PREFIX_BRACKET)
# A line holding a second prefix after its first `] ` (in the syntax polars' regex reads
# too): what `_glued_at` may split, for a vectorised reader to leave to `feed`.
GLUED_RX = r"\] .*" + PREFIX_BRACKET
_BRACKET_PREFIX = re.compile(r"^.*?\[[^\]]*\d{2}:\d{2}:\d{2}[^\]]*\]\s?")

# One search tells whether a line that is neither a batch line nor an access line is an
# event worth a second look; most lines of a busy log never get past it.
_EVENT = re.compile(
    r"Traceback \(most recent call last\)|hit an exception|out of memory|OutOfMemoryError"
    r"|Not enough memory|NCCL (?:error|WARN|communicator was aborted|timeout)|nccl\w*Error"
    r"|atchdog|NaN in the logits|Retract requests|#retracted_reqs|graph end\.|graph failed"
    r"|KV Cache is allocated|max_total_num_tokens=|fired up and ready|sigquit|terminated with"
)

# Every line `Reader.feed` acts on, other than batch and access lines, holds one of these
# words (a superset of `_EVENT`, server args, the phase reader's `words` and a benchmark run's
# start; checked by a test): the chunk path (`fast`) hands such lines to `feed`.
FEED_WORDS = (
    "Traceback",
    "hit an exception",
    "out of memory",
    "OutOfMemoryError",
    "Not enough memory",
    "NCCL",
    "nccl",
    "atchdog",
    "NaN in the logits",
    "Retract requests",
    "#retracted_reqs",
    "graph end.",
    "graph failed",
    "KV Cache is allocated",
    "max_total_num_tokens=",
    "fired up and ready",
    "sigquit",
    "terminated with",
    "server_args=",
    "ms/cyc",
    "SpecDecodeWorker stage times",
    _BENCH_WORD,
)

# Decode/Prefill field keys -> (decode metric, prefill metric, fixed decimals, kind).
# kind: "n" number, "pct" percent (stored as a fraction), "bool" True/False, "usage" a
# KV-pool usage that also feeds token_usage's max, "pool" another field of the pool group,
# "skip" a value that is not read at all. Metric None: known but not kept.
_F = tuple[str | None, str | None, int | None, str]
_FIELDS: dict[str, _F] = {
    "#running-req": ("running_req", "prefill_running_req", None, "n"),
    "#queue-req": ("queue_req", "prefill_queue_req", None, "n"),
    "#token": ("num_token", "prefill_num_token", None, "n"),
    "#full token": ("num_token", "prefill_num_token", None, "pool"),
    "#gpu token": ("num_token", "prefill_num_token", None, "pool"),
    "#swa token": ("num_swa_token", None, None, "pool"),
    "mamba num": ("mamba_num", None, None, "pool"),
    "#cpu token": (None, None, None, "pool"),
    "token usage": ("token_usage", "prefill_token_usage", 2, "n"),
    "full token usage": ("full_token_usage", None, 2, "usage"),
    "swa token usage": ("swa_token_usage", None, 2, "usage"),
    "mamba usage": ("mamba_usage", None, 2, "usage"),
    "gpu token usage": (None, None, 2, "usage"),
    "cpu token usage": (None, None, 2, "pool"),  # host tier of HiSparse, not the GPU pool
    "accept len": ("accept_len", None, 2, "n"),
    "accept rate": ("accept_rate", None, 2, "n"),
    "cap len": ("spec_cap_len", None, 2, "n"),
    "block accept len": ("block_accept_len", None, 2, "n"),
    # DSpark's estimate with its range (0.5.16+, `5.35 [5.10, 5.60]`): not a measured length
    "est uncap acc len": (None, None, None, "skip"),
    "gen throughput (token/s)": ("gen_throughput_tok_s", None, 2, "n"),
    "largest-len": ("largest_len", None, None, "n"),
    "cuda graph": ("cuda_graph", "prefill_cuda_graph", None, "bool"),
    "cpu graph": ("cuda_graph", "prefill_cuda_graph", None, "bool"),
    "npu graph": ("cuda_graph", "prefill_cuda_graph", None, "bool"),
    "musa graph": ("cuda_graph", "prefill_cuda_graph", None, "bool"),
    "#new-seq": (None, "prefill_new_seq", None, "n"),
    "#new-token": (None, "prefill_new_tokens", None, "n"),
    "#cached-token": (None, "prefill_cached_tokens", None, "n"),
    "cache hit rate": (None, "prefill_cache_hit_rate", 2, "pct"),
    "input throughput (token/s)": (None, "prefill_input_throughput_tok_s", 2, "n"),
    "#pending-token": (None, "prefill_pending_tokens", None, "n"),
    "#replay-token": (None, None, None, "n"),
    "pre-allocated usage": ("prealloc_usage", None, 2, "n"),
    "#prealloc-req": ("prealloc_req", "prefill_prealloc_req", None, "n"),
    "#transfer-req": ("transfer_req", None, None, "n"),
    "#retracted-req": ("retracted_req", None, None, "n"),
    "#host-receive-req": (None, None, None, "n"),
    "waiting-image-req": (None, None, None, "n"),
    "#inflight-req": (None, "prefill_inflight_req", None, "n"),
    "#bootstrap-req": (None, "prefill_bootstrap_req", None, "n"),
    "#unbootstrapped-req": (None, "prefill_bootstrap_req", None, "n"),
    "#transferring-req": (None, "prefill_transfer_req", None, "n"),
    "#optimistic-req": (None, None, None, "n"),
    "time": (None, None, 2, "n"),
    "est. decode tflops/s (per gpu)": ("decode_tflops_per_gpu", None, 2, "n"),
    "est. prefill tflops/s (per gpu)": (None, "prefill_tflops_per_gpu", 2, "n"),
    "est. read bw (gb/s per gpu)": ("read_bw_gb_s", None, 2, "n"),
    "est. write bw (gb/s per gpu)": ("write_bw_gb_s", None, 2, "n"),
    "fwd occupancy": ("fwd_occupancy", "prefill_fwd_occupancy", 2, "pct"),
    "fwd+idle occupancy": ("fwd_idle_occupancy", None, 2, "pct"),
}
# The same keys as printed, for the fast path's exact lookup.
_FIELDS_PRINTED: dict[str, _F] = {
    **_FIELDS,
    "est. decode TFLOPS/s (per GPU)": _FIELDS["est. decode tflops/s (per gpu)"],
    "est. prefill TFLOPS/s (per GPU)": _FIELDS["est. prefill tflops/s (per gpu)"],
    "est. read BW (GB/s per GPU)": _FIELDS["est. read bw (gb/s per gpu)"],
    "est. write BW (GB/s per GPU)": _FIELDS["est. write bw (gb/s per gpu)"],
}
_MAX_UNKNOWN_NOTES = 20
_MAX_BAD_NOTES = 20  # diagnostics per field and code for values that can be no sample
# Records that only a launched server gives: a dump of the same settings after none of
# them is the same launch's, not a new one.
_LAUNCH_DOINGS = (
    "decode",
    "prefill",
    "capacity",
    "kv-cache",
    "cuda-graph-capture",
    "fired-up",
    "traceback",
    "server-error",
)
_INF = float("inf")
_BOOLS = {"True": 1.0, "False": 0.0}
# Capacity-line values that change from launch to launch: never settings (DESIGN §4).
_CAPACITY_NOISE = ("available_gpu_mem", "available_cpu_mem")


@dataclass(slots=True)
class _Traceback:
    line: int
    headline: str
    frames: int = 0
    exc: str | None = None
    after_exc: bool = False
    indent: str = ""  # the blanks its first line starts with (a paste indented as a whole)


def _message(text: str) -> str:
    """A line without its SGLang bracket prefix, shortened for a diagnostic."""
    body = _BRACKET_PREFIX.sub("", text[:1000], count=1).strip()
    return body if len(body) <= 200 else body[:197] + "..."


def _unindented(text: str, indent: str) -> str:
    """A traceback's line without the blanks its whole paste is indented by."""
    return text[len(indent) :] if indent and text.startswith(indent) else text


def _batch_at(text: str) -> tuple[int, re.Match[str], str] | None:
    """Where a batch line's marker stands, its tail's match and its kind (`decode`,
    `prefill`); None for a line that is no batch line."""
    if "batch" not in text:
        return None
    at = text.find("Decode batch")
    kind = "decode"
    if at < 0:
        at = text.find("Prefill batch")
        kind = "prefill"
    if at < 0:
        return None
    m = _TAIL.match(text, at + 6 if kind == "decode" else at + 7)
    return None if m is None else (at, m, kind)


def glued_at(text: str) -> int | None:
    """Where the second line starts in a line that holds two, glued by a `cat` of a log cut
    mid-line (the second's prefix after the first's); None for any other line."""
    at = text.find("] ")
    if at <= 0 or text.find("] ", at + 2) < 0:
        return None
    glued = _LINE_PREFIX.search(text, at + 2)
    if glued is None or _LINE_PREFIX.match(text) is None:
        return None
    return glued.start()


def _chain_header(text: str) -> bool:
    """A traceback line that opens the next exception of a chain (or another traceback)."""
    return (
        "During handling of the above exception" in text
        or "The above exception was the direct cause" in text
        or text.startswith("Traceback (most recent call last)")
    )


class Reader:
    """Line-level state machine for SGLang server logs: `feed` each line, then `finish`."""

    def __init__(self, ctx: ParseContext, next_block: Callable[[], int] | None = None) -> None:
        """`next_block`: the embedder's block numbering, for the log's phase blocks."""
        self.ctx = ctx
        self.phase: InlineReader = ctx.embed_inline(_PHASES, next_block=next_block)
        self.ranks = Ranks(ctx)
        self._launch: tuple[int, dict[str, object]] | None = None  # first server_args dump
        self._starts: list[int] = []  # the line of every server start (DESIGN §5 launches)
        # the last dump's settings, and the count of a server's doings when it came
        self._last_args: tuple[dict[str, object], int] | None = None
        self._tb: _Traceback | None = None
        self._bonus_set = False
        self._unknown: set[str] = set()
        self._bad: dict[tuple[str, str, str], tuple[int, int]] = {}  # -> (count, first line)
        self._kv_seen = False
        self._capacity_seen = False
        self._capture_seen = False
        self._retract_first: int | None = None
        self._retracts = 0
        # From a bench_serving run printed into the log on, every line goes through its
        # block reader, which hands the lines that are not its own back (`_Own`).
        self.bench: LineReader | None = None
        self._embedded_before = False  # whether this format was marked embedded before it

    # ------------------------------------------------------------------ entry points

    def feed(self, ln: Line) -> Iterator[Record]:
        """Records of one line (some may be held back until the batch's timestamp moves on)."""
        if self.bench is None and _BENCH_WORD in ln.text and _BENCH_START.search(ln.text):
            self._start_bench()
        if self.bench is not None:
            for rec in self.bench.feed(ln):
                if isinstance(rec, BlockStart):
                    self.ctx.embedded.add(_BENCH_FORMAT)
                yield rec
            return
        yield from self._feed_own(ln)

    def finish(self) -> Iterator[Record]:
        """Records still owed at the end: held-back batches, an open traceback, totals."""
        if self.bench is not None:
            yield from self.bench.finish()  # finishes this reader too, through `_Own`
            if not self._embedded_before:
                self.ctx.embedded.discard(FORMAT_ID)  # the block reader marks its embedded one
            return
        yield from self._finish_own()

    def _start_bench(self) -> None:
        # one block numbering for the benchmark's blocks and the phase blocks still to come
        self._embedded_before = FORMAT_ID in self.ctx.embedded
        numbers = itertools.count(self.phase.blocks)

        def next_block() -> int:
            return next(numbers)

        self.phase.number_with(next_block)
        self.bench = self.ctx.embed(_BENCH_FORMAT, next_block=next_block, server=_Own(self))

    def _feed_own(self, ln: Line) -> Iterator[Record]:
        text = ln.text
        glued = glued_at(text)
        if glued is not None:
            # `cat` of a log cut mid-line and the next one: the second line's prefix stands
            # inside this one. The text before it is a cut line; the rest a line of its own.
            yield from self._feed_own(Line(ln.no, text[:glued], True))
            yield from self._feed_own(Line(ln.no, text[glued:], ln.cut))
            return
        if self._tb is not None and self._traceback_line(ln):
            return
        if ln.cut or self.phase.wants(text):
            for rec in self.phase.feed(ln, self._phase_rank(text)):
                self.ctx.embedded.add(_PHASES)
                yield rec
            if self.phase.took_last:
                return
        batch = _batch_at(text)
        if batch is not None:
            yield from self._batch(ln, text, *batch)
            return
        if "HTTP/" in text:
            self.ctx.count("http-access")
            return
        if "server_args=" in text:
            yield from self._server_args(ln, text)
            return
        ev = _EVENT.search(text)
        if ev is not None:
            yield from self._event(ln, text, ev.group())

    def _finish_own(self) -> Iterator[Record]:
        yield from self.ranks.flush()
        if self._tb is not None:
            self._close_traceback()
        yield from self.phase.finish()
        if self._starts:
            yield SummaryItem("launch_lines", list(self._starts))
        for (kind, key, code), (n, first) in self._bad.items():
            if n > _MAX_BAD_NOTES:
                self.ctx.warn(
                    first,
                    code,
                    f"{kind} field {key!r}: {n - _MAX_BAD_NOTES} more such values "
                    f"(after the {_MAX_BAD_NOTES} shown from here on) gave no sample",
                )
        if self._retracts and self._retract_first is not None:
            times = "once" if self._retracts == 1 else f"{self._retracts} times"
            self.ctx.warn(
                self._retract_first,
                "server-warning",
                f"the KV cache pool was full and requests were retracted {times} "
                "(first here); throughput in those intervals is lowered",
            )

    # ------------------------------------------------------------------ batch lines

    def _batch(self, ln: Line, text: str, at: int, m: re.Match[str], kind: str) -> list[Record]:
        """Records of one Decode/Prefill line (lists, not generators: this is the hot path)."""
        prefix = text[:at]
        ts = last_timestamp(prefix)
        rank, nums = rank_of(prefix)
        if "DP" in nums:
            self.ranks.dp_attention = True
        self.ctx.count(kind)
        values = self._fields(ln, text[m.end() :], kind)
        mixed = m.group("mixed")
        if mixed is not None:
            values.insert(0, ("prefill_running_req", float(mixed)))
        records: list[Record] = []
        if kind == "decode" and any(k == "running_req" and v == 0 for k, v in values):
            self.ctx.count("decode-idle")  # DESIGN §3: an idle interval is no sample
        elif self.ranks.classify(rank, nums, ts) != DUP:  # a duplicate's samples are dropped
            records = [Sample(k, v, ln.no, None, None, rank, ts) for k, v in values]
        kept = self.ranks.dedup(kind, rank, nums, ts, records)
        if not self._bonus_set and any(k == "accept_len" for k, _ in values):
            self._bonus_set = True
            kept.insert(0, Setting("accept_len_counts_bonus", True, ln.no))
        return kept

    def _fields(self, ln: Line, body: str, kind: str) -> list[tuple[str, float]]:
        """(metric, value) of every complete, known field of a batch line's body."""
        out: list[tuple[str, float]] = []
        usages: list[float] = []
        usage_last = False  # the last complete field was a pool usage (more may follow)
        col = 1 if kind == "prefill" else 0
        items = body.split(", ")
        if "[" in body:
            items = _bracketed(items)  # `est uncap acc len: 3.25 [3.00, 3.50]` is one field
        last = len(items) - 1
        prev_key = ""
        risky = last if ln.cut else -1  # the item a cut may have shortened
        for i, item in enumerate(items):
            sep = item.rfind(": ")
            if sep > 0 and i != risky:
                # Fast path (nearly every field of a busy log): a known key as printed and
                # a plain number with its full decimals.
                spec = _FIELDS_PRINTED.get(item[:sep])
                if spec is not None and spec[3] != "pct":  # a percent's `%` is checked below
                    raw = item[sep + 2 :]
                    v = _BOOLS.get(raw) if spec[3] == "bool" else _quick(raw, spec[2])
                    if v is not None:
                        metric = spec[1] if col else spec[0]
                        if spec[3] == "usage":
                            usages.append(v)
                        if metric is not None:
                            out.append((metric, v))
                        usage_last = spec[3] in ("usage", "pool")
                        prev_key = ""
                        continue
            fields: list[tuple[str, str, bool]] = []  # (key as printed, raw value, at end)
            if sep < 0:
                if "=" in item and prev_key:
                    # 0.4.9 SWA form: `#token: full=N, swa=M, token usage: full=X, swa=Y`
                    sub, _, raw = item.partition("=")
                    fields.append((_sub_key(prev_key, sub.strip()), raw, i == last))
                elif i == last and ln.cut and item.strip():
                    self.ctx.warn(
                        ln.no,
                        "truncated-value",
                        f"{kind} field {item.strip()!r} is cut; no sample taken",
                    )
                elif item.strip():
                    self._unknown_field(ln, item.strip(), kind)
            elif ": " in item[:sep] and len(item) < 400:
                # fields glued by a space (PD prefill 0.4.6–0.4.8); the length bound keeps
                # the lazy regex linear on junk
                glued = list(_GLUED.finditer(item))
                for j, g in enumerate(glued):
                    fields.append(
                        (
                            g.group("k").strip(),
                            item[g.start("v") : g.end()],
                            i == last and j == len(glued) - 1,
                        )
                    )
            else:
                key, raw = item[:sep].strip(), item[sep + 2 :]
                if "=" in raw and raw[:1].isalpha():  # `#token: full=N` (0.4.9 SWA)
                    sub, _, raw = raw.partition("=")
                    prev_key, key = key, _sub_key(key, sub.strip())
                else:
                    prev_key = ""
                fields.append((key, raw, i == last))
            for key, raw, at_end in fields:
                got = self._field(ln, key, raw, at_end, kind, col, out, usages)
                if got is not None:
                    usage_last = got == "usage"
        # token_usage of a hybrid pool is the fullest pool; on a cut line that ends among
        # the pools, a fuller one may have been cut off, so the max would be a guess.
        has_usage = any(k in ("token_usage", "prefill_token_usage") for k, _ in out)
        if usages and not has_usage and not (ln.cut and usage_last):
            out.append(("prefill_token_usage" if col else "token_usage", max(usages)))
        if len({k for k, _ in out}) < len(out):
            out = _first_of_each(out)
        return out

    def _field(
        self,
        ln: Line,
        shown: str,
        raw: str,
        is_last: bool,
        kind: str,
        col: int,
        out: list[tuple[str, float]],
        usages: list[float],
    ) -> str | None:
        """Read one field into `out` (pool usages also into `usages`); "usage" or "ok" when
        the field was complete and known, None otherwise."""
        key = shown.lower()
        spec = _FIELDS.get(key)
        if spec is None:
            if ln.cut and is_last:
                self.ctx.warn(
                    ln.no, "truncated-value", f"{kind} field {shown!r} is cut; no sample taken"
                )
            else:
                self._unknown_field(ln, shown, kind)
            return None
        metric = spec[1] if col else spec[0]
        decimals, how = spec[2], spec[3]
        if how == "skip":
            return "ok"
        value = raw.rstrip()
        delimited = len(value) < len(raw)  # a space after the value ends it
        if value.endswith(","):
            value, delimited = value[:-1], True
        at_end = is_last and not delimited
        if how == "bool":
            if value in ("True", "False"):
                if metric is not None:
                    out.append((metric, 1.0 if value == "True" else 0.0))
                return "ok"
            if at_end and ln.cut:
                self.ctx.warn(
                    ln.no,
                    "truncated-value",
                    f"{kind} field {shown!r} is cut ({value!r}); no sample taken",
                )
            return None
        is_pct = value.endswith("%")
        if how == "pct" and not is_pct:
            # printed with a `%` after it: without one, the line broke inside the field (a
            # wrapped or cut copy), or the value is not this field's
            self._unread(ln, kind, shown, at_end, f"has no `%` ({raw.strip()!r})")
            return None
        if is_pct:
            value = value[:-1]
            at_end = False
        num = read_number(value, at_end=at_end, line_cut=ln.cut, decimals=decimals)
        if num.value is None:
            self._unread(ln, kind, shown, num.cut, f"is cut ({raw.strip()!r})")
            return None
        v = num.value
        problem = value_problem(v)
        if problem is not None:  # nan, inf, 500 digits, a negative count: no sample
            self._bad_value(ln, kind, shown, raw, problem)
            return "ok"
        if is_pct or how == "pct":
            v = percent(value, v)  # percentages are stored as fractions
        if how == "usage":
            usages.append(v)
        if metric is not None:
            out.append((metric, v))
        return "usage" if how in ("usage", "pool") else "ok"

    def _unread(self, ln: Line, kind: str, shown: str, cut: bool, why: str) -> None:
        """A field that gives no sample: cut (a `truncated-value` saying `why`) or not
        readable (counted)."""
        if cut:
            message = f"{kind} field {shown!r} {why}; no sample taken"
            self.ctx.warn(ln.no, "truncated-value", message)
        else:
            self.ctx.count("unreadable-field")

    def _bad_value(self, ln: Line, kind: str, key: str, raw: str, code: str) -> None:
        """A complete field whose value can be no sample: a diagnostic for each (the first
        `_MAX_BAD_NOTES` of a field and code; the rest are tallied at the end)."""
        self.ctx.count(code)
        seen = self._bad.get((kind, key, code), (0, ln.no))
        self._bad[(kind, key, code)] = (seen[0] + 1, seen[1])
        if seen[0] >= _MAX_BAD_NOTES:
            return
        why = "not a finite number" if code == "non-finite-value" else "below zero"
        self.ctx.warn(
            ln.no, code, f"{kind} field {key!r} is {fields_shown(raw)} ({why}); no sample taken"
        )

    def bad_tallied(self, key: tuple[str, str, str]) -> bool:
        """Whether a value of this (kind, field, code) that can be no sample is only tallied
        now, its diagnostics all given (what `_bad_value` does with it then, in bulk:
        `tally_bad`)."""
        return self._bad.get(key, (0, 0))[0] >= _MAX_BAD_NOTES

    def tally_bad(self, key: tuple[str, str, str], n: int) -> None:
        """`_bad_value` for `n` such values, once `bad_tallied` says so."""
        self.ctx.count(key[2], n)
        seen, first = self._bad[key]
        self._bad[key] = (seen + n, first)

    def notes_unknown(self, keys: tuple[str, ...]) -> bool:
        """Whether a line holding fields not known by these keys would have one noted
        (`_unknown_field`), not only counted."""
        return len(self._unknown) < _MAX_UNKNOWN_NOTES and not self._unknown.issuperset(keys)

    def _unknown_field(self, ln: Line, key: str, kind: str) -> None:
        self.ctx.count("unknown-field")
        if key not in self._unknown and len(self._unknown) < _MAX_UNKNOWN_NOTES:
            self._unknown.add(key)
            self.ctx.warn(
                ln.no,
                "unknown-field",
                f"{kind} field {key[:60]!r} is not known; ignored "
                "(later occurrences are only counted)",
            )

    # ------------------------------------------------------------------ settings

    def _server_args(self, ln: Line, text: str) -> Iterator[Record]:
        self.ctx.count("server-args")
        at = text.find("server_args=")
        settings, cut = parse_server_args(text[at + len("server_args=") :])
        done = sum(self.ctx.counts[k] for k in _LAUNCH_DOINGS)
        last, self._last_args = self._last_args, (settings, done)
        if last is not None and last == (settings, done):
            # The same dump again before the server did anything: one launch (SGLang 0.5's
            # in-process Engine logs it in `__init__` and again as it starts its processes).
            self.ctx.count("server-args-repeat")
            return
        self._starts.append(ln.no)
        if self._launch is None:
            self._launch = (ln.no, settings)
        else:
            yield from self._restart(ln, settings)
        for key, value in settings.items():
            if is_expression(value):
                self.ctx.warn(
                    ln.no,
                    "unreadable-setting",
                    f"server_args: {key} is {fields_shown(str(value))!r}, an expression, not "
                    "a value; kept as its text",
                )
            yield Setting(key, value, ln.no)
        if settings.get("enable_dp_attention") is True:
            self.ranks.dp_attention = True
        if cut:
            self.ctx.warn(
                ln.no,
                "truncated-settings",
                f"the server_args dump is cut; {len(settings)} settings before the cut are kept",
            )

    def _restart(self, ln: Line, settings: dict[str, object]) -> Iterator[Record]:
        """A second launch in one log: rank and start-up state start over, and a warning
        says which settings changed (samples of both launches share the source)."""
        assert self._launch is not None
        first_line, first = self._launch
        yield from self.ranks.restart()
        self._kv_seen = self._capacity_seen = self._capture_seen = False
        changed = [k for k in settings if k in first and first[k] != settings[k]]
        shown = ", ".join(f"{k}: {first[k]!r} -> {settings[k]!r}" for k in changed[:5])
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        what = f"changed settings: {shown}{more}" if changed else "no logged setting changed"
        self.ctx.warn(
            ln.no,
            "server-restart",
            f"a second server launch (the first is at line {first_line}); its samples "
            f"are a launch of their own and settings keep their last value; {what}",
        )

    def _capacity(self, ln: Line, text: str) -> Iterator[Record]:
        """`max_total_num_tokens=N, chunked_prefill_size=N, ...` (resolved by the scheduler)."""
        self.ctx.count("capacity")
        if self._capacity_seen:
            return  # every TP rank prints it; the first is enough
        self._capacity_seen = True
        at = text.find("max_total_num_tokens=")
        items = list(_CAPACITY.finditer(text, at))
        for j, kv in enumerate(items):
            key, raw = kv.group(1), kv.group(2)
            if key in _CAPACITY_NOISE:
                continue
            at_end = j == len(items) - 1 and kv.group(3) is None and kv.end() >= len(text.rstrip())
            if raw in ("None", "True", "False"):
                yield Setting(key, None if raw == "None" else raw == "True", ln.no)
                continue
            num = read_number(raw, at_end=at_end, line_cut=ln.cut)
            if num.value is None:
                if num.cut:
                    self.ctx.warn(
                        ln.no, "truncated-value", f"setting {key} is cut ({raw!r}); not kept"
                    )
                continue
            v = num.value
            yield Setting(key, int(v) if v.is_integer() and "." not in raw else v, ln.no)

    # ------------------------------------------------------------------ events

    def _event(self, ln: Line, text: str, hit: str) -> Iterator[Record]:
        if "Traceback (most recent call last)" in text:
            head = text[: text.find("Traceback")]
            indent = text[: len(text) - len(text.lstrip(" \t"))]  # a paste's, if any
            head = head.rstrip(" :")
            self._tb = _Traceback(ln.no, _message(head) if head.strip() else "", indent=indent)
            self.ctx.count("traceback")
            return
        if hit == "graph end.":
            yield from self._capture(ln, text)
            return
        if hit == "KV Cache is allocated":
            yield from self._kv_cache(ln, text)
            return
        if hit == "max_total_num_tokens=":
            yield from self._capacity(ln, text)
            return
        if hit == "fired up and ready":
            self.ctx.count("fired-up")
            return
        if "Testing retraction" in text:  # a deliberate retraction test, not a full pool
            self.ctx.count("retract-test")
            return
        if "Retract requests" in text or "#retracted_reqs" in text:
            self.ctx.count("retract")
            self._retracts += 1
            if self._retract_first is None:
                self._retract_first = ln.no
            return
        if hit == "atchdog" and _TIMEOUT.search(text) is None:
            return  # a watchdog that did not fire
        if hit.startswith("NCCL WARN"):
            self.ctx.count("server-warning")
            self.ctx.warn(ln.no, "server-warning", f"NCCL warning: {_message(text)}")
            return
        self.ctx.count("server-error")
        self.ctx.warn(ln.no, "server-error", _message(text))

    def _capture(self, ln: Line, text: str) -> Iterator[Record]:
        """The target model's CUDA-graph capture: time and memory, once per launch.

        The target captures first; the draft's captures come after it and up to 0.4.3 are
        worded the same, and every TP rank times the same capture.
        """
        self.ctx.count("cuda-graph-capture")
        m = _CAPTURE_END.search(text)
        if m is None or any(w in m.group("what").lower() for w in _NOT_TARGET_CAPTURE):
            return
        prefix = text[: m.start()]
        rank, nums = rank_of(prefix)
        if self._capture_seen or any(nums.values()):
            return
        self._capture_seen = True
        ts = last_timestamp(prefix)
        num = read_number(m.group("t"), at_end=False, line_cut=ln.cut, decimals=2)
        if num.value is not None:
            yield Sample("cuda_graph_capture_s", num.value, ln.no, None, None, rank, ts)
        mem = _MEM_USAGE.search(m.group("rest"))
        if mem is not None:
            num = read_number(mem.group("m"), at_end=False, line_cut=ln.cut, decimals=2)
            if num.value is not None:
                yield Sample("cuda_graph_capture_mem_gb", num.value, ln.no, None, None, rank, ts)

    def _kv_cache(self, ln: Line, text: str) -> Iterator[Record]:
        """The target's KV-cache size (the first such line; the draft's comes second)."""
        self.ctx.count("kv-cache")
        m = _KV_ALLOC.search(text)
        if m is None or self._kv_seen:
            return
        self._kv_seen = True
        yield Setting("kv_cache_tokens", int(m.group("n")), ln.no)
        # `[\d.]+` also takes `27.78.`: each size is read as a number, or not at all
        parts = [m.group("kv")] if m.group("kv") is not None else [m.group("k"), m.group("v")]
        sizes = [read_number(p, at_end=False, line_cut=ln.cut).value for p in parts]
        if any(v is None for v in sizes):
            self.ctx.warn(ln.no, "unparsed-line", "a KV-cache size is not a number; no size taken")
            return
        yield Setting("kv_cache_gb", round(sum(v for v in sizes if v is not None), 4), ln.no)

    def traceback_takes(self, text: str) -> bool:
        """Whether the open traceback takes a line of this text (a multi-line traceback is
        ONE diagnostic); a line it does not take closes it and is read normally. Changes
        nothing: `feed` does what it says (the chunk path asks first, `fast.ChunkRun.run`)."""
        return self._traceback_part(text) is not None

    def _traceback_part(self, text: str) -> str | None:
        """What the open traceback takes a line as: `blank`, `frame` (a frame or its code),
        `chain` (the next exception's header) or `exception` (its exception line); None for
        a line that closes it."""
        tb = self._tb
        assert tb is not None
        if not text.strip():
            return "blank"
        body = _unindented(text, tb.indent)
        if body[:1] in (" ", "\t"):
            # not a log line indented as a whole (a paste), which a traceback in such a
            # paste would otherwise take to the end of the file
            framed = _LINE_PREFIX.match(text) is None and _batch_at(text) is None
            return "frame" if framed and not tb.after_exc else None
        if _chain_header(body):
            return "chain"
        # not a batch line behind an outer prefix (`server: [...`) either
        if not tb.after_exc and _EXC_LINE.match(body) is not None and _batch_at(text) is None:
            return "exception"
        return None

    def _traceback_line(self, ln: Line) -> bool:
        """Whether the open traceback takes the line (`traceback_takes`): then taken; else
        the traceback is closed (its diagnostic given) and the line is read normally."""
        tb = self._tb
        assert tb is not None
        part = self._traceback_part(ln.text)
        if part is None:
            self._close_traceback()
            return False
        if part == "frame":
            tb.frames += 1
        elif part == "chain":
            tb.after_exc = False  # a chained exception follows
        elif part == "exception":
            tb.exc = _unindented(ln.text, tb.indent).strip()
            tb.after_exc = True
        return True

    def close_traceback(self) -> None:
        """Close the open traceback as a line it does not take would (`traceback_takes`):
        its diagnostic is given."""
        self._close_traceback()

    def _close_traceback(self) -> None:
        tb, self._tb = self._tb, None
        if tb is None:
            return
        exc = tb.exc or "the traceback is cut before its exception line"
        head = f"{tb.headline}: " if tb.headline else "traceback: "
        text = _message(head + exc)
        if exc.startswith(("KeyboardInterrupt", "SystemExit")):
            self.ctx.warn(tb.line, "server-warning", f"the server was stopped ({text})")
        else:
            self.ctx.warn(tb.line, "server-error", text)

    @staticmethod
    def _phase_rank(text: str) -> str | None:
        at = text.find("]")
        return rank_of(text[:at])[0] if at > 0 else None


class _Own:
    """A server reader as the line reader a benchmark block reader embeds: the lines that
    are not the block's come back to the server reader's own handling."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader

    def feed(self, ln: Line) -> Iterator[Record]:
        return self.reader._feed_own(ln)

    def finish(self) -> Iterator[Record]:
        return self.reader._finish_own()


def _bracketed(items: list[str]) -> list[str]:
    """Items of a `, `-split line with a `[lo, hi]` range joined back into its field."""
    out: list[str] = []
    for item in items:
        if out and out[-1].count("[") > out[-1].count("]"):
            out[-1] += ", " + item
        else:
            out.append(item)
    return out


def _first_of_each(values: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """One value per metric, the first printed: with SWA or mamba and HiSparse together
    (0.5.23) both `#full token` and `#gpu token` are the line's `num_token`."""
    seen: set[str] = set()
    out = []
    for k, v in values:
        if k not in seen:
            seen.add(k)
            out.append((k, v))
    return out


def _quick(raw: str, decimals: int | None) -> float | None:
    """A plain, finite, non-negative number with at least its format's decimals, else None
    (the slow path then reads it, or says why not)."""
    try:
        v = float(raw)
    except ValueError:
        return None
    if not 0 <= v < _INF or "_" in raw:  # nan, infinities, negatives: `_field` says why
        return None
    if decimals:
        dot = raw.find(".")
        if dot < 0 or len(raw.rstrip()) - dot - 1 < decimals:
            return None
    return v


def _sub_key(key: str, sub: str) -> str:
    """`#token` + `full` -> `#full token`; `token usage` + `swa` -> `swa token usage`."""
    if key.startswith("#"):
        return f"#{sub} {key[1:]}"
    return f"{sub} {key}"
