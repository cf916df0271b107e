"""`sglang-server`: SGLang server logs — Decode/Prefill D1–D10 and P1–P11 read by key, the TP-rank
duplicate rule, `server_args=` settings (via `_literal`, never eval), start-up and error events;
phase lines go to `phase_timing.Reader`. `Reader` is the line state machine; `parse` drives it, big
files a chunk at a time where that gives exactly its records. It never groups sources, opens files.
"""

from __future__ import annotations

import itertools
import re
import threading
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._lines import Chunk, Line, SourceText, clean
from .._literal import parse_server_args
from ..model import (
    BATCH_COLUMNS,
    BlockStart,
    Record,
    Sample,
    SampleBatch,
    Setting,
    SummaryItem,
    batch_columns,
    batch_schema,
)
from . import phase_timing
from .base import ParseContext, read_lines, read_number

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import polars as pl

    from . import sglang_bench_serving

format_id = "sglang-server"
# A bench_serving run printed into the log (its argument dump or result title): detection
# sees only the head, so a long server log may hold one further on.
_BENCH_WORD = "enchmark"
_BENCH_START = re.compile(r"=\s*Serving Benchmark Result\s*=|benchmark_args=Namespace\(")
_BENCH_FORMAT = "sglang-bench-serving"
priority = 20

_SNIFF_BATCH = re.compile(r"(?:Decode|Prefill) batch(?:[.,]| ?\[\d+\]|\(mixed)")
_SNIFF_ARGS = re.compile(r"server_args=(?:ServerArgs\(|\{)")

# What follows `Decode batch` / `Prefill batch`: `. ` (≤0.5.3), ` [N], ` (0.5.4, or with
# SGLANG_LOG_FORWARD_ITERS), `, ` (0.5.5+), or P1's `(mixed #running-req: N). `.
_TAIL = re.compile(r" batch(?:\.|,| ?\[\d+\],?|\(mixed #running-req: (?P<mixed>\d+)\)\.)[ ]?")
_RANK = re.compile(r"(?<![A-Za-z0-9_])(ATTN_CP|MOE_DP|DP|PP|TP|EP)(\d+)(?![A-Za-z0-9_])")
# Items glued by a space instead of ", " (PD prefill 0.4.6–0.4.8: `#transferring-req: N time: X `).
_GLUED = re.compile(r"(?P<k>[^:]+?): (?P<v>\S+)\s*")
_CAPACITY = re.compile(r"\b([a-z_]+)=([^,\s]*)(,)?")
_KV_ALLOC = re.compile(
    r"KV Cache is allocated\.(?: \w+: [^,#]*,)* #tokens: (?P<n>\d+), (?:K size: (?P<k>[\d.]+) GB, "
    r"V size: (?P<v>[\d.]+) GB|KV size: (?P<kv>[\d.]+) GB)"
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
_LINE_PREFIX = re.compile(
    r"(?:^[^\[]{0,80})?\[(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?:\.\d{3})?"
    r"(?: (?:ATTN_CP|MOE_DP|DP|PP|TP|EP)\d{1,9})*\] "
)
_BRACKET_PREFIX = re.compile(r"^.*?\[[^\]]*\d{2}:\d{2}:\d{2}[^\]]*\]\s?")

# One search tells whether a line that is neither a batch line nor an access line is an
# event worth a second look; most lines of a busy log never get past it.
_EVENT = re.compile(
    r"Traceback \(most recent call last\)|hit an exception|out of memory|OutOfMemoryError"
    r"|Not enough memory|NCCL (?:error|WARN|communicator was aborted|timeout)|nccl\w*Error"
    r"|atchdog|NaN in the logits|Retract requests|#retracted_reqs|graph end\.|graph failed"
    r"|KV Cache is allocated|max_total_num_tokens=|fired up and ready|sigquit|terminated with"
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


def sniff(head: str, name: str) -> float:
    """Score: batch lines or a server-args dump are decisive; start-up lines are hints.

    Never 1.0: a terminal that mixes a server log with a benchmark block belongs to the
    benchmark parser, which embeds this one.
    """
    if _SNIFF_BATCH.search(head) or _SNIFF_ARGS.search(head):
        return 0.95
    if "The server is fired up and ready to roll" in head:
        return 0.9
    if "KV Cache is allocated" in head or "Capture cuda graph" in head:
        return 0.6
    return 0.0


@dataclass(slots=True)
class _Batch:
    """The lines of one (kind, DP group) seen at one timestamp: one batch (DESIGN §3)."""

    ts: str
    seen: set[str] = field(default_factory=set)
    best_key: tuple[int, ...] | None = None
    best: list[Record] = field(default_factory=list)


@dataclass(slots=True)
class _Traceback:
    line: int
    headline: str
    frames: int = 0
    exc: str | None = None
    after_exc: bool = False


def _rank_of(prefix: str) -> tuple[str | None, dict[str, int]]:
    """Rank tags as printed (`DP3 TP3`) and their numbers, from a line prefix."""
    if "P" not in prefix:  # every tag holds a P (DP, PP, TP, EP, ATTN_CP, MOE_DP)
        return None, {}
    tags = _RANK.findall(prefix)
    if not tags:
        return None, {}
    return " ".join(t + n for t, n in tags), {t: int(n) for t, n in tags}


def _ranked(nums: dict[str, int]) -> bool:
    """Whether a line carries a rank tag that duplicates are told by: TP, or PP (printed
    alone at tp=1, where every pipeline stage reports the same batch), CP, MoE-DP, EP."""
    return any(t in nums for t in _TAGS_KEY)


def _message(text: str) -> str:
    """A line without its SGLang bracket prefix, shortened for a diagnostic."""
    body = _BRACKET_PREFIX.sub("", text[:1000], count=1).strip()
    return body if len(body) <= 200 else body[:197] + "..."


class Reader:
    """Line-level state machine for SGLang server logs: `feed` each line, then `finish`."""

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.phase = phase_timing.Reader(ctx)
        self.dp_attention = False
        self._pending: dict[tuple[str, str], _Batch] = {}
        self._lowest: dict[str, tuple[int, ...]] = {}  # lowest rank key seen per DP group
        self._settled: set[str] = set()  # groups whose lowest rank is known from a past batch
        self._launch: tuple[int, dict[str, object]] | None = None  # first server_args dump
        self._starts: list[int] = []  # the line of every server start (DESIGN §5 launches)
        # the last dump's settings, and the count of a server's doings when it came
        self._last_args: tuple[dict[str, object], int] | None = None
        self._tb: _Traceback | None = None
        self._bonus_set = False
        self._unknown: set[str] = set()
        self._kv_seen = False
        self._capacity_seen = False
        self._capture_seen = False
        self._retract_first: int | None = None
        self._retracts = 0
        # From a bench_serving run printed into the log on, every line goes through its
        # block reader, which hands the lines that are not its own back (`_Own`).
        self.bench: sglang_bench_serving.Reader | None = None
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
                self.ctx.embedded.discard(format_id)  # the block reader marks its embedded one
            return
        yield from self._finish_own()

    def _start_bench(self) -> None:
        from . import sglang_bench_serving  # it imports this module: only when needed

        # one block numbering for the benchmark's blocks and the phase blocks still to come
        self._embedded_before = format_id in self.ctx.embedded
        numbers = itertools.count(self.phase.blocks)

        def next_block() -> int:
            return next(numbers)

        self.phase.number_with(next_block)
        self.bench = sglang_bench_serving.Reader(self.ctx, next_block=next_block, server=_Own(self))

    def _feed_own(self, ln: Line) -> Iterator[Record]:
        text = ln.text
        at = text.find("] ")
        if at > 0 and text.find("] ", at + 2) > 0:
            # `cat` of a log cut mid-line and the next one: the second line's prefix stands
            # inside this one. The text before it is a cut line; the rest a line of its own.
            glued = _LINE_PREFIX.search(text, at + 2)
            if glued is not None and _LINE_PREFIX.match(text) is not None:
                yield from self._feed_own(Line(ln.no, text[: glued.start()], True))
                yield from self._feed_own(Line(ln.no, text[glued.start() :], ln.cut))
                return
        if self._tb is not None and self._traceback_line(ln):
            return
        if ln.cut or self.phase.wants(text):
            for rec in self.phase.feed(ln, self._phase_rank(text)):
                self.ctx.embedded.add(phase_timing.format_id)
                yield rec
            if self.phase.last_was_phase:
                return
        if "batch" in text:
            at = text.find("Decode batch")
            kind = "decode"
            if at < 0:
                at = text.find("Prefill batch")
                kind = "prefill"
            if at >= 0:
                m = _TAIL.match(text, at + 6 if kind == "decode" else at + 7)
                if m is not None:
                    yield from self._batch(ln, text, at, m, kind)
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
        for key in list(self._pending):
            yield from self._pending.pop(key).best
        if self._tb is not None:
            self._close_traceback()
        yield from self.phase.finish()
        if self._starts:
            yield SummaryItem("launch_lines", list(self._starts))
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
        ts = phase_timing.last_timestamp(prefix)
        rank, nums = _rank_of(prefix)
        if "DP" in nums:
            self.dp_attention = True
        self.ctx.count(kind)
        values = self._fields(ln, text[m.end() :], kind)
        mixed = m.group("mixed")
        if mixed is not None:
            values.insert(0, ("prefill_running_req", float(mixed)))
        records: list[Record] = []
        if kind == "decode" and any(k == "running_req" and v == 0 for k, v in values):
            self.ctx.count("decode-idle")  # DESIGN §3: an idle interval is no sample
        elif not self._is_dup(rank, nums, ts):  # a duplicate's samples would be dropped
            records = [Sample(k, v, ln.no, None, None, rank, ts) for k, v in values]
        kept = self._dedup(kind, rank, nums, ts, records)
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
        if v != v:  # nan: no sample, but counted
            self.ctx.count("nan-field")
            return "ok"
        if is_pct or how == "pct":
            v = phase_timing.percent(value, v)  # percentages are stored as fractions
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

    def _dedup(
        self,
        kind: str,
        rank: str | None,
        nums: dict[str, int],
        ts: str | None,
        records: list[Record],
    ) -> list[Record]:
        """Keep the lowest TP rank's line of each batch of a DP group (DESIGN §3).

        Two rules, both streaming with O(groups) memory: lines of one (kind, group) with
        the same timestamp wait until the timestamp moves on (or a rank repeats), and the
        lowest; and a line from a rank above the lowest rank seen so far in its group is a
        duplicate even at another timestamp — a higher rank prints the same batch a moment
        later, sometimes in the next second, and grep over several nodes' logs puts whole
        files one after the other.
        """
        if rank is None or ts is None or not _ranked(nums):
            return records  # no rank tag or no time: nothing to tell duplicates by
        if self._is_dup(rank, nums, ts):
            self.ctx.count("duplicate-rank")
            return []
        group = self._group(nums)
        key = _key_of(nums)
        lowest = self._lowest.get(group)
        self._lowest[group] = key
        slot = (kind, group)
        batch = self._pending.get(slot)
        out: list[Record] = []
        if batch is not None and (batch.ts != ts or rank in batch.seen):
            # the timestamp moved on, or this rank already spoke: a new batch
            out = batch.best
            batch = None
            self._settled.add(group)
        if batch is None:
            batch = self._pending[slot] = _Batch(ts)
        batch.seen.add(rank)
        if batch.best_key is not None:
            self.ctx.count("duplicate-rank")  # a lower rank replaces the held line
        batch.best_key = key
        if not any(key) or (key == lowest and group in self._settled):
            # Nothing can replace it (rank 0, or the group's known lowest rank after its
            # first batch), so it need not wait: samples stay in line order.
            batch.best = []
            return out + records if out else records
        batch.best = records
        return out

    def _is_dup(self, rank: str | None, nums: dict[str, int], ts: str | None) -> bool:
        """A line from a rank above the lowest one seen in its DP group: a duplicate."""
        if rank is None or ts is None or not _ranked(nums):
            return False
        lowest = self._lowest.get(self._group(nums))
        return lowest is not None and _key_of(nums) > lowest

    def _group(self, nums: dict[str, int]) -> str:
        """The DP group a ranked line belongs to (DESIGN §3)."""
        if "DP" in nums:
            return f"DP{nums['DP']}"
        if self.dp_attention and "TP" in nums:
            return f"TP{nums['TP']}"  # DP attention without DPn tags: each TP is a group
        return ""

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
            yield Setting(key, value, ln.no)
        if settings.get("enable_dp_attention") is True:
            self.dp_attention = True
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
        for key in list(self._pending):
            yield from self._pending.pop(key).best
        self._lowest.clear()
        self._settled.clear()
        self.dp_attention = False
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
            head = text[: text.find("Traceback")].rstrip(" :")
            self._tb = _Traceback(ln.no, _message(head) if head.strip() else "")
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
        rank, nums = _rank_of(prefix)
        if self._capture_seen or any(nums.values()):
            return
        self._capture_seen = True
        ts = phase_timing.last_timestamp(prefix)
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
        if m.group("kv") is not None:
            size = float(m.group("kv"))
        else:
            size = round(float(m.group("k")) + float(m.group("v")), 4)
        yield Setting("kv_cache_gb", size, ln.no)

    def _traceback_line(self, ln: Line) -> bool:
        """Whether the line belongs to the open traceback (a multi-line traceback is ONE
        diagnostic); a line that does not closes it and is read normally."""
        tb = self._tb
        assert tb is not None
        text = ln.text
        if not text.strip():
            return True
        if text[:1] in (" ", "\t"):
            if tb.after_exc:
                self._close_traceback()
                return False
            tb.frames += 1
            return True
        if (
            "During handling of the above exception" in text
            or "The above exception was the direct cause" in text
            or text.startswith("Traceback (most recent call last)")
        ):
            tb.after_exc = False
            return True
        if not tb.after_exc and _EXC_LINE.match(text):
            tb.exc = text.strip()
            tb.after_exc = True
            return True
        self._close_traceback()
        return False

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
        return _rank_of(text[:at])[0] if at > 0 else None


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
    """A plain, finite number with at least its format's decimals, else None (the slow
    path then reads it, or says why not)."""
    try:
        v = float(raw)
    except ValueError:
        return None
    if v != v or v in (_INF, -_INF) or "_" in raw:
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


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one SGLang server log."""
    reader = Reader(ctx)
    if not FAST:
        yield from read_lines(reader, src)
        return
    fast: _Fast | None = None
    ahead: deque[tuple[Chunk, Future[_ChunkRun | None]]] = deque()
    try:
        for piece in src.chunks(FAST_CHUNK):
            # once a file is big enough for the fast path, all its chunks take it
            if isinstance(piece, Chunk) and (fast is not None or len(piece.data) >= FAST_MIN_BYTES):
                if fast is None:
                    fast = _Fast(reader, src, getattr(ctx, "sink", None))
                # prepare chunks ahead while the oldest one is walked
                ahead.append((piece, fast.prepare(piece)))
                if len(ahead) > _AHEAD:
                    yield from fast.walk(*ahead.popleft())
                continue
            while ahead and fast is not None:
                yield from fast.walk(*ahead.popleft())
            if isinstance(piece, Line):
                yield from reader.feed(piece)
            else:
                for ln in src.chunk_lines(piece):
                    yield from reader.feed(ln)
        while ahead and fast is not None:
            yield from fast.walk(*ahead.popleft())
    finally:
        if fast is not None:
            fast.close()
    yield from reader.finish()


# ---------------------------------------------------------------------- fast path
#
# Read line by line, a day-long log (1 GB, 6.8 million lines) costs minutes of Python. The
# fast path reads a whole chunk with polars and leaves to `Reader.feed` only the lines it
# cannot prove it reads exactly the same way. Its rules, each keeping the result identical:
# - polars splits a chunk into lines only where that split is `_lines`' split (no `\x1f`,
#   NUL or BOM, valid UTF-8, `\r` parked; every byte accounted for, no line with a `\n`);
# - lines with terminal noise are cleaned by `_lines.clean` itself, or, when the noise is
#   only ANSI codes and `**`, by the same substitutions done in polars;
# - a line that holds none of the words `feed` acts on is skipped; an access line is counted;
#   a line with a rare word (events, server args, phase lines) goes to `feed`;
# - a batch line is read by a layout: a regex learned from a batch line's text that pins its
#   prefix shape, field keys and value shapes, so that a line matching it yields what `feed`
#   would yield; a line no layout reads goes to `feed` (and may teach a new layout: a
#   mid-file restart with another version's layout costs a few lines);
# - the TP-rank rule is applied in bulk only in its steady state (the emitting rank of a
#   group known and nothing held back); any other batch line goes to `feed`;
# - a chunk's samples are handed over at its end in the order `feed` would have yielded them.
# Chunks are split, classified and matched on worker threads; the main thread walks them in
# order. `tests/parsers/test_sglang_server_fast.py` compares both paths on every fixture.

FAST = True  # tests switch it off to compare with the line-by-line path
FAST_MIN_BYTES = 512 << 10  # smaller files are read line by line (polars is not imported)
FAST_CHUNK = 12 << 20
_MAX_LAYOUTS = 32
_MAX_FEEDS = 256  # batch lines `feed` takes in a chunk before the rest of it goes there too
_AHEAD = 2  # chunks prepared at once on worker threads while the main thread walks one
_LEARN_PER_CHUNK = 8  # unread batch lines a chunk's preparation tries to learn from
_CODE_TABLE = 1 << 16  # codes spanning up to this many values are numbered by a lookup table
_WINDOW = 8192  # batch rows decided at once at first; the window grows while all goes well

# Every line `Reader.feed` acts on, other than batch and access lines, holds one of these
# words (a superset of `_EVENT`, server args and phase lines; checked by a test).
_RARE = (
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
    phase_timing.STAGE_SNIFF,
    _BENCH_WORD,
)
_DECODE, _PREFILL, _HTTP = "Decode batch", "Prefill batch", "HTTP/"

# `_lines.clean` acts on a line only if it holds one of these (polars regex syntax); a `\n`
# (a line polars did not split), a NUL or a `\x1f` (which make the chunk go line by line) are
# looked for in the same pass, which costs nothing more.
_NOISE_RX = r"[\x1b\x1e`~>\n\x00\x1f]|\*\*|\[[0-9;]{0,12}m"
# ... and a JSON log envelope (`clean` unwraps it): looked for only in chunks holding a `{`
# (an anchored alternative in `_NOISE_RX` would make that regex several times slower; and
# `b'{"' in data` costs more than the regex: Python's two-byte search is not vectorised).
_ENVELOPE_RX = r'^[ \t]*\{"'

# Without `, ~, > and \r (parked as \x1e), `clean` is these substitutions in order.
_ANSI_ESC_RX = r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>]"
_ANSI_BARE_RX = r"\[[0-9;]{0,12}m"

# Line prefixes a layout may pin: a literal lead (docker `svc-1  | `, no brackets), then
# `[date time(.ms) TAGS] `. Other prefixes are read line by line.
_FAST_PREFIX = re.compile(
    r"(?P<lead>[ -Z\\^-~]{0,80})\[(?P<ts>[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}"
    r"(?:\.[0-9]{3})?|[0-9]{2}:[0-9]{2}:[0-9]{2})"
    r"(?P<tags>(?: (?:ATTN_CP|MOE_DP|DP|PP|TP|EP)[0-9]{1,9})*)\] "
)
_TS_SHAPES = {
    19: r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}",
    23: r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}",
    8: r"[0-9]{2}:[0-9]{2}:[0-9]{2}",
}
_INT_SHAPE = re.compile(r"[0-9]{1,15}")
_DEC_SHAPE = re.compile(r"[0-9]{1,15}\.(?P<d>[0-9]{1,15})")
_RX_META = frozenset("\\.+*?()|[]{}^$#&-~")
_ZERO = r"0{1,15}(?:\.0{1,15})?"
_TAGS_KEY = ("TP", "PP", "ATTN_CP", "MOE_DP", "EP")
# A slot's facts for an emitting rank: ((kind, group), rank, key, group, a batch was held).
_Slot = tuple[tuple[str, str], str, tuple[int, ...], str, bool]
# What the bulk TP-rank rule decides for a (kind, rank) of a run.
_DUP, _EMIT, _PLAIN, _FEED = 0, 1, 2, 3


def _rx(text: str) -> str:
    """`text` as a literal in both Python's and polars' (Rust) regex syntax."""
    return "".join("\\" + c if c in _RX_META else c for c in text)


# one regex for the rare words (polars runs it faster than a multi-word search)
_RARE_RX = "|".join(_rx(w) for w in _RARE)


@dataclass(frozen=True, slots=True)
class _Layout:
    """One learned shape of a batch line: the regex and what each line of it yields."""

    kind: str  # "decode" or "prefill"
    pattern: str  # the whole line, each value a capture group
    ts_at: int
    ts_len: int
    tags_at: int
    tags_len: int  # the rank tags' width is pinned (each number's digit count), so is this
    # (metric, capture groups, how): how is "num", "pct" (printed with %), "bool", or
    # "max" (the fullest of several pool usages, each group then given in `usage_how`)
    outputs: tuple[tuple[str, tuple[int, ...], str], ...]
    usage_how: tuple[str, ...]
    idle_patterns: tuple[str, ...]  # the line with running_req == 0 (a decode-idle line)
    accept: bool  # yields accept_len (whose first line sets a Setting)
    # per capture group: (item, offset, is a percent) of its text in the line split at
    # ", " (cheaper to read than the capture groups), or None (see `_items`)
    items: tuple[tuple[int, int, bool], ...] | None


def _learn(text: str) -> _Layout | None:
    """The layout of a batch line, when `Reader._batch` reads every line of that shape
    the same way: known keys as printed, plain values with their full decimals."""
    at = text.find(_DECODE)
    kind, marker = "decode", _DECODE
    if at < 0:
        at = text.find(_PREFILL)
        kind, marker = "prefill", _PREFILL
        if at < 0:
            return None
    m = _TAIL.match(text, at + len(marker) - 6)
    if m is None or m.group("mixed") is not None:
        return None
    if any(w in text for w in _RARE):
        return None  # lines a layout reads are known to hold no rare word
    p = _FAST_PREFIX.fullmatch(text, 0, at)
    if p is None or _RANK.search(p.group("lead")) is not None:
        return None
    found = _RANK.findall(p.group("tags"))
    names = [t for t, _ in found]
    if len(set(names)) != len(names):
        return None
    col = 1 if kind == "prefill" else 0
    pieces: list[str] = []
    groups: list[tuple[str | None, str, bool]] = []  # (metric, how, is pool usage)
    items = text[m.end() :].split(", ")
    for i, item in enumerate(items):
        if not item:
            if i == len(items) - 1 and i > 0:
                pieces.append("")  # the trailing ", " of some versions
                continue
            return None
        sep = item.rfind(": ")
        spec = _FIELDS_PRINTED.get(item[:sep]) if sep > 0 else None
        if spec is None:
            return None
        raw = item[sep + 2 :]
        decimals, how = spec[2], spec[3]
        if how == "bool":
            if raw not in _BOOLS:
                return None
            shape, value_how = "(True|False)", "bool"
        else:
            pct = raw.endswith("%")
            if how == "pct" and not pct:
                return None  # `feed` says what is wrong with it
            num = raw[:-1] if pct else raw
            d = _DEC_SHAPE.fullmatch(num)
            if decimals:
                # fewer decimals than printed would be a cut value: leave it to `feed`
                if d is None or len(d.group("d")) < decimals:
                    return None
                shape = rf"([0-9]{{1,15}}\.[0-9]{{{decimals},15}})"
            else:
                if d is None and _INT_SHAPE.fullmatch(num) is None:
                    return None
                shape = r"([0-9]{1,15}(?:\.[0-9]{1,15})?)"
            value_how = "pct" if pct else "num"
            if pct:
                shape += "%"
        pieces.append(f"{_rx(item[: sep + 2])}{shape}")
        groups.append((spec[1] if col else spec[0], value_how, how == "usage"))
    # each rank number with its digit count: the tags are then sliced at a fixed width (TP9
    # and TP10 lines have a layout each)
    tags = "".join(f" {t}[0-9]{{{len(n)}}}" for t, n in found)
    head = f"^{_rx(p.group('lead'))}\\[{_TS_SHAPES[len(p.group('ts'))]}{tags}\\] "
    tail_text = text[at + len(marker) : m.end()]
    tail = re.sub(r"[0-9]+", "[0-9]+", _rx(tail_text))
    pattern = head + _rx(marker) + tail + ", ".join(pieces) + "$"
    whole = re.fullmatch(pattern, text)
    if whole is None:  # a layout that does not read its own line
        return None
    outputs: list[tuple[str, tuple[int, ...], str]] = []
    for g, (metric, h, _) in enumerate(groups):
        if metric and all(o[0] != metric for o in outputs):  # the first of each, as `_fields`
            outputs.append((metric, (g + 1,), h))
    usage = [(g + 1, h) for g, (_, h, is_usage) in enumerate(groups) if is_usage]
    total = "prefill_token_usage" if col else "token_usage"
    if usage and not any(o[0] in ("token_usage", "prefill_token_usage") for o in outputs):
        outputs.append((total, tuple(g for g, _ in usage), "max"))
    idle: list[str] = []
    if kind == "decode":
        # the line with a zero in one running_req value: `_batch` then keeps no sample
        number = r"([0-9]{1,15}(?:\.[0-9]{1,15})?)"
        for g, (metric, _, _) in enumerate(groups):
            if metric == "running_req":
                parts = list(pieces)
                parts[g] = parts[g].replace(number, f"({_ZERO})")
                idle.append(head + _rx(marker) + tail + ", ".join(parts) + "$")
    return _Layout(
        kind=kind,
        pattern=pattern,
        ts_at=p.start("ts"),
        ts_len=len(p.group("ts")),
        tags_at=p.end("ts"),
        tags_len=len(p.group("tags")),
        outputs=tuple(outputs),
        usage_how=tuple(h for _, h in usage),
        idle_patterns=tuple(idle),
        accept=any(o[0] == "accept_len" for o in outputs),
        # the tail's numbers (` batch [12]`) are of any width: no value's offset may count them
        items=_items(
            whole,
            [h for _, h, _ in groups],
            m.end() if any(c.isdigit() for c in tail_text) else 0,
        ),
    )


def _items(
    whole: re.Match[str], hows: list[str], varying_until: int
) -> tuple[tuple[int, int, bool], ...] | None:
    """Where each capture group's text stands in `text.split(", ")` of a line the layout
    reads: (item, offset in it, is a percent), the same for every such line (no `, ` in a
    value, and what precedes a value in its item is literal text or of a pinned width);
    None when a group is not its item's tail, or its item starts before `varying_until`
    (text of varying width before it), and the values are then read with the capture
    groups."""
    text = whole.string
    bounds: list[tuple[int, int]] = []
    at = 0
    for item in text.split(", "):
        bounds.append((at, at + len(item)))
        at += len(item) + 2
    found: list[tuple[int, int, bool]] = []
    for g, how in enumerate(hows, start=1):
        start, end = whole.span(g)
        k = next(i for i, (a, b) in enumerate(bounds) if a <= start <= b)
        a, b = bounds[k]
        if end + (how == "pct") != b or a < varying_until:
            return None
        found.append((k, start - a, how == "pct"))
    return tuple(found)


class _Fast:
    """Chunk-at-a-time reading of what `Reader.feed` would read the same way.

    Chunks are prepared (split, classified, matched to the layouts known so far: no reader
    state is touched) on worker threads, `_AHEAD` chunks ahead, while this thread walks the
    oldest one; polars and numpy let go of the GIL, so every core works.
    """

    def __init__(
        self, reader: Reader, src: SourceText, sink: Callable[[SampleBatch], None] | None
    ) -> None:
        self.r = reader
        self.src = src
        self.sink = sink
        self.layouts: list[_Layout] = []
        self.index: dict[str, int] = {}  # layout pattern -> its place in `layouts`
        self.metrics: list[str] = []  # metric names of the layouts' outputs
        self.metric_ids: list[tuple[int, ...]] = []  # per layout: its outputs' metric ids
        self.hits: list[int] = []  # per layout: rows it read so far (the order tried in)
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def prepare(self, chunk: Chunk) -> Future[_ChunkRun | None]:
        """Start preparing a chunk on the worker thread."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(_AHEAD, thread_name_prefix="sessionlens-sglang")
        layouts = list(self.layouts)
        return self._pool.submit(self._prepare, chunk, layouts)

    def _prepare(self, chunk: Chunk, layouts: list[_Layout]) -> _ChunkRun | None:
        lines = self._lines(chunk)
        if lines is None:
            return None
        t, parked = lines
        try:
            run = _ChunkRun(self, chunk, t, parked, layouts)
        except _NotExact:
            return None
        chunk.known_lines(t.len())  # the split is exact: no count needed
        return run

    def walk(self, chunk: Chunk, prepared: Future[_ChunkRun | None]) -> Iterator[Record]:
        """Records of a prepared chunk's lines, in line order (samples go to the sink)."""
        run = prepared.result()
        if run is None or self.r.bench is not None:
            for ln in self.src.chunk_lines(chunk):
                yield from self.r.feed(ln)
            return
        yield from run.run()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def _lines(self, chunk: Chunk) -> tuple[pl.Series, bool] | None:
        """The chunk's lines as polars splits them, and whether `\r`s were parked as `\x1e`;
        None when that split might not be `_lines`' split (then the chunk is read line by
        line)."""
        import polars as pl

        data = chunk.data
        if data.startswith(b"\xef\xbb\xbf"):
            return None  # a BOM polars strips
        # A `\x1f` (the separator: polars raises), a NUL (`_lines` cuts the line there) or a
        # `\n` in a line is found by `_ChunkRun`'s first regex, and bytes that are not UTF-8
        # make polars raise: no pass of their own over the bytes.
        parked = b"\r" in data
        if parked:
            # polars would end lines at a `\r`: park each as `\x1e` (`_ChunkRun` gives those
            # lines back to `clean` with their `\r`s)
            if b"\x1e" in data:
                return None
            data = data.replace(b"\r", b"\x1e")
        try:
            frame = pl.read_csv(
                data,
                has_header=False,
                separator="\x1f",
                quote_char=None,
                schema={"t": pl.String},
                raise_if_empty=False,
                infer_schema=False,
            )
        except Exception:  # polars' own errors: the line-by-line path reads anything
            return None
        if frame.width != 1:
            return None
        t = frame.to_series().fill_null("")
        # every byte accounted for (and no line holding a newline: `_ChunkRun` checks)
        if int(t.str.len_bytes().sum()) + t.len() != len(data):
            return None
        return t, parked

    def learn(self, text: str) -> _Layout | None:
        """The layout of a batch line (a new one is kept), if it has one."""
        layout = _learn(text)
        if layout is None:
            return None
        with self._lock:  # the preparing thread learns too
            return self._keep(layout)

    def _keep(self, layout: _Layout) -> _Layout | None:
        at = self.index.get(layout.pattern)
        if at is not None:
            return self.layouts[at]
        if len(self.layouts) >= _MAX_LAYOUTS:
            return None
        ids = []
        for metric, _, _ in layout.outputs:
            if metric not in self.metrics:
                self.metrics.append(metric)
            ids.append(self.metrics.index(metric))
        self.metric_ids.append(tuple(ids))
        self.hits.append(0)
        self.layouts.append(layout)
        self.index[layout.pattern] = len(self.layouts) - 1  # published last
        return layout


class _NotExact(Exception):
    """polars' split of a chunk is not `_lines`' split: read it line by line."""


@dataclass
class _Segment:
    """Matched batch rows [a, c) (positions in `_ChunkRun.m_row`) decided in bulk from one
    snapshot of the TP-rank state; `stop` is the row where the segment ends."""

    a: int
    c: int
    stop: int
    feed_at: int | None  # the row whose TP-rank step only `feed` can take (it is `stop`)
    status: npt.NDArray[np.int8]  # per position in [a, c)
    # per slot: (its facts, the rows of its emitting lines, in order)
    emitting: dict[tuple[str, str], tuple[_Slot, npt.NDArray[np.int64]]]
    keep: npt.NDArray[np.int64]  # positions (in the batch arrays) of lines giving samples


class _ChunkRun:
    """The lines of one chunk: which go to `feed`, which are read in bulk, in line order.

    Samples are gathered for the whole chunk and handed over at its end, ordered as `feed`
    would have yielded them (by the row that yielded each, then its place in that row's
    output); other records are yielded as they come (no consumer orders them with samples).
    """

    def __init__(
        self, fast: _Fast, chunk: Chunk, t: pl.Series, parked: bool, layouts: list[_Layout]
    ) -> None:
        import numpy as np
        import polars as pl

        self.f = fast
        self.r = fast.r
        self.chunk = chunk
        self.n = t.len()
        self.stateful_feeds = 0
        self.window = _WINDOW
        self.keep: list[npt.NDArray[np.int64]] = []  # batch positions whose samples to read
        self.fed: list[tuple[int, Sample]] = []
        noisy = pl.col("t").str.contains(_NOISE_RX)
        if b"{" in chunk.data:
            noisy = noisy | pl.col("t").str.contains(_ENVELOPE_RX)
        flags = t.to_frame("t").select(  # the expressions of one select run in parallel
            noise=noisy,
            dec=pl.col("t").str.contains(_DECODE, literal=True),
            pre=pl.col("t").str.contains(_PREFILL, literal=True),
        )
        noise = flags["noise"].to_numpy()
        # polars splits no line at anything but `\n`, and no line holds a NUL or `\x1f`
        # (checked, not assumed: `_NOISE_RX` flags such a line)
        if noise.any() and t.filter(flags["noise"]).str.contains(r"[\n\x00\x1f]").any():
            raise _NotExact
        dec = flags["dec"].to_numpy().copy()
        pre = flags["pre"].to_numpy().copy()
        if noise.any():
            # clean those lines as `_lines.clean` does, then look at them again
            rows = np.flatnonzero(noise)
            fixed = _clean_noisy(t.gather(rows), parked)
            t = t.scatter(rows, fixed)
            dec[rows] = fixed.str.contains(_DECODE, literal=True).to_numpy()
            pre[rows] = fixed.str.contains(_PREFILL, literal=True).to_numpy()
        self.t = t
        batch = dec | pre
        # a batch line is read by a layout (whose text holds no rare word) or fed; any
        # other line is fed when it holds a rare word
        other = np.flatnonzero(~batch)
        found = (
            t.filter(pl.Series(~batch))
            .to_frame("t")
            .select(
                rare=pl.col("t").str.contains(_RARE_RX),
                http=pl.col("t").str.contains(_HTTP, literal=True),
            )
        )
        rare = found["rare"].to_numpy()
        # lists, looked up with `bisect` on the walk: numpy's searchsorted lets go of the
        # GIL, and taking it back while the preparing threads hold it costs ~20 µs a call
        self.http_rows = other[~rare & found["http"].to_numpy()].tolist()
        self.rare_rows = other[rare]
        self.b_row = np.flatnonzero(batch)
        self.b_dec = dec[self.b_row]
        self.b_t = t.filter(pl.Series(batch))
        nb = len(self.b_row)
        self.b_layout = np.full(nb, -1, np.int32)
        self.b_tags = np.zeros(nb, np.int32)  # index into self.tags
        self.b_idle = np.zeros(nb, np.bool_)
        self.tags: list[str] = []
        self._tag_index: dict[str, int] = {}
        self.tried: set[int] = set()
        self._match(np.ones(nb, np.bool_), layouts)
        # A layout is a function of a line's text alone: learn from lines no known layout
        # reads (a first chunk, a restart with a newer version) here, not line by line.
        for _ in range(_LEARN_PER_CHUNK):
            unread = np.flatnonzero(self.b_layout < 0)
            if len(unread) == 0:
                break
            for k in unread[:_LEARN_PER_CHUNK].tolist():
                layout = fast.learn(self.b_t[k])
                if layout is not None and fast.index[layout.pattern] not in self.tried:
                    self._match(np.arange(nb) > k - 1, [layout])
                    break
            else:
                break
        self._set_feeds()
        self._read_ahead()

    @property
    def first(self) -> int:
        return self.chunk.first

    # ------------------------------------------------------------------ matching

    def _match(self, cand: npt.NDArray[np.bool_], layouts: list[_Layout]) -> None:
        """Give the batch rows in `cand` (a mask) not read yet the layout of `layouts` that
        reads them (no two layouts read one line: a line's text fixes its layout's pattern).
        In rounds: each kind's layout that read the most rows so far runs on that kind's
        open rows, the next one on the rows left, and so on (the kinds' queries run at once,
        in parallel); the rank tags and idle marks are taken of the rows a layout reads."""
        import numpy as np
        import polars as pl

        f = self.f
        open_ = cand & (self.b_layout < 0)
        for lay in layouts:
            self.tried.add(f.index[lay.pattern])
        queues = {
            kind: sorted(
                (lay for lay in layouts if lay.kind == kind),
                key=lambda lay: -f.hits[f.index[lay.pattern]],
            )
            for kind in ("decode", "prefill")
        }
        while True:
            jobs: list[tuple[_Layout, npt.NDArray[np.bool_]]] = []
            for kind, queue in queues.items():
                if queue:
                    mask = open_ & (self.b_dec == (kind == "decode"))
                    if mask.any():
                        jobs.append((queue.pop(0), mask))
                    else:
                        queue.clear()
            if not jobs:
                return
            found = pl.collect_all(
                [
                    self.b_t.filter(pl.Series(mask))
                    .to_frame("t")
                    .lazy()
                    .with_row_index("i")
                    .filter(pl.col("t").str.contains(lay.pattern))
                    .select(
                        "i",
                        # rank tags as categorical codes (a hash, not a string, per row);
                        # none to read when the layout has no tags
                        tags=pl.col("t")
                        .str.slice(lay.tags_at, lay.tags_len)
                        .cast(pl.Categorical)
                        .to_physical()
                        if lay.tags_len
                        else pl.lit(0, pl.UInt32),
                        maybe_idle=pl.col("t").str.contains("#running-req: 0", literal=True)
                        if lay.idle_patterns
                        else pl.lit(False),
                        t="t",
                    )
                    for lay, mask in jobs
                ]
            )
            for (lay, mask), got in zip(jobs, found, strict=True):
                if got.height == 0:
                    continue
                li = f.index[lay.pattern]
                f.hits[li] += got.height
                pos = np.flatnonzero(mask)[got["i"].to_numpy()]
                open_[pos] = False
                self.b_layout[pos] = li
                text = got["t"]
                codes = got["tags"].to_numpy()
                self.b_tags[pos] = self._tag_ids(codes, text, lay)
                maybe = np.flatnonzero(got["maybe_idle"].to_numpy())
                if len(maybe):
                    some = text.gather(maybe)
                    idle = np.zeros(len(maybe), np.bool_)
                    for pattern in lay.idle_patterns:
                        idle |= some.str.contains(pattern).to_numpy()
                    self.b_idle[pos[maybe[idle]]] = True

    def _tag_ids(
        self, codes: npt.NDArray[np.uint32], text: pl.Series, lay: _Layout
    ) -> npt.NDArray[np.int32]:
        """Indices into `self.tags` of rows (at least one) whose rank tags have categorical
        codes `codes` (`text` their lines): one line of each code is sliced."""
        import numpy as np

        uniq, inverse = _numbered(codes)
        first = np.empty(len(uniq), np.int64)
        first[inverse] = np.arange(len(inverse))  # a row of each code (which one does not matter)
        local = np.empty(len(uniq), np.int32)
        for k, line in enumerate(text.gather(first).to_list()):
            tag = line[lay.tags_at : lay.tags_at + lay.tags_len]
            if tag not in self._tag_index:
                self._tag_index[tag] = len(self.tags)
                self.tags.append(tag)
            local[k] = self._tag_index[tag]
        return local[inverse]

    def _set_feeds(self) -> None:
        """Rows for `feed` (rare lines, batch lines no layout reads) and matched rows."""
        import numpy as np

        read = self.b_layout >= 0
        self.unread = set(self.b_row[~read].tolist())
        self.feed_rows = np.union1d(self.rare_rows, self.b_row[~read]).tolist()
        self.m_pos = np.flatnonzero(read)  # positions in the batch arrays
        self.m_row = self.b_row[self.m_pos]

    # ------------------------------------------------------------------ the walk

    def run(self) -> Iterator[Record]:
        """Records of the chunk's lines; its samples go to the sink at the end."""
        n = self.n
        i = 0
        seg: _Segment | None = None
        while i < n:
            if self.stateful_feeds > _MAX_FEEDS:  # too irregular for bulk: the rest by line
                self._settle(seg, i)
                seg = None
                for row in range(i, n):
                    yield from self._feed(row)
                break
            if not self._idle():  # an open traceback or phase block takes the line
                if self.r._tb is None and not self._fed_row(i):
                    # all `feed` would do with it beyond the bulk path's reading is close
                    # the phase block: close it here, then read the line in bulk
                    yield from self._close_phase(i)
                    continue
                if self._stateful(i):
                    self._settle(seg, i)
                    seg = None
                yield from self._feed(i)
                i += 1
                continue
            k = bisect_left(self.feed_rows, i)
            j = self.feed_rows[k] if k < len(self.feed_rows) else n
            if seg is None:
                seg = self._segment(i)
            end = min(j, seg.stop)
            self._count_http(i, end)
            if end == seg.stop:
                feed_at = seg.feed_at
                self._settle(seg, end)
                seg = None
                if feed_at is not None:
                    yield from self._feed(feed_at)
                    i = feed_at + 1
                else:
                    self.window *= 4
                    i = end
                continue
            if j < n:
                if self._stateful(j):
                    self._settle(seg, j)
                    seg = None
                yield from self._feed(j)
            i = j + 1
        self._settle(seg, n)
        yield from self._hand_over()

    def _idle(self) -> bool:
        return self.r._tb is None and self.r.phase.idle

    def _fed_row(self, row: int) -> bool:
        k = bisect_left(self.feed_rows, row)
        return k < len(self.feed_rows) and self.feed_rows[k] == row

    def _close_phase(self, row: int) -> Iterator[Record]:
        """What `Reader._feed_own` does first with a line that is not a phase line (none of
        the rare words) while a phase block is open: the phase reader closes the block."""
        records = list(self.r.phase.feed(Line(self.first + row, self.t[row])))
        if records:
            self.r.ctx.embedded.add(phase_timing.format_id)
        yield from self._take(row, records)
        assert self.r.phase.idle  # any line without `ms/cyc` or stage times closes a block

    def _take(self, row: int, records: Iterable[Record]) -> Iterator[Record]:
        """Records `feed` gave for a row: its samples kept for the hand-over (with the row
        that gave them), the others yielded."""
        for rec in records:
            if isinstance(rec, Sample):
                self.fed.append((row, rec))
            else:
                yield rec

    def _stateful(self, row: int) -> bool:
        """Whether `feed` may read or change the TP-rank state at this line (batch lines
        and server args do; events, phase and access lines do not)."""
        text = self.t[row]
        return "batch" in text or "server_args=" in text

    def _count_http(self, i: int, end: int) -> None:
        n = bisect_left(self.http_rows, end) - bisect_left(self.http_rows, i)
        if n:
            self.r.ctx.count("http-access", n)

    def _feed(self, row: int) -> Iterator[Record]:
        """One line through `Reader.feed`; a batch line no layout read may teach one."""

        text = self.t[row]
        if "batch" in text or "server_args=" in text:
            self.stateful_feeds += 1
            self.window = _WINDOW
        yield from self._take(row, self.r.feed(Line(self.first + row, text)))
        if self.r.bench is not None:  # a benchmark run from here on: the rest line by line
            self.stateful_feeds = _MAX_FEEDS + 1
            return
        if row in self.unread:
            layout = self.f.learn(text)
            if layout is not None and self.f.index[layout.pattern] not in self.tried:
                later = self.b_row > row
                if later.any():
                    self._match(later, [layout])
                    self._set_feeds()

    # ------------------------------------------------------------------ bulk

    def _segment(self, i: int) -> _Segment:
        """Decide the matched batch rows from row i on, a window's worth, in bulk."""
        import numpy as np

        a = int(np.searchsorted(self.m_row, i))
        c = min(a + self.window, len(self.m_row))
        stop = int(self.m_row[c]) if c < len(self.m_row) else self.n
        pos = self.m_pos[a:c]
        layouts = self.f.layouts
        # counted once: a preparing thread may learn a layout meanwhile (codes made with one
        # count and read back with another would name the wrong layout)
        n_layouts = len(layouts)
        n_tags = max(len(self.tags), 1)
        # one code per (kind, layout, rank tags): the TP-rank rule decides per code
        code = (self.b_dec[pos].astype(np.int64) * n_layouts + self.b_layout[pos]) * n_tags
        code += self.b_tags[pos]
        combos, inverse = _numbered(code)
        decided = np.empty(len(combos), np.int8)
        slots: dict[int, _Slot] = {}
        taken: dict[tuple[str, str], str] = {}  # slot -> the rank emitting in this window
        first_at = np.full(len(combos), len(pos), np.int64)
        np.minimum.at(first_at, inverse, np.arange(len(pos)))
        for ci in np.argsort(first_at).tolist():
            rest, tag = divmod(int(combos[ci]), n_tags)
            is_dec, li = divmod(rest, n_layouts)
            decided[ci], slot = self._decide(bool(is_dec), layouts[li], self.tags[tag], taken)
            if slot is not None:
                slots[ci] = slot
        status = decided[inverse]
        feed_at = None
        fed = np.flatnonzero(status == _FEED)
        if len(fed):
            c = a + int(fed[0])
            feed_at = stop = int(self.m_row[c])
            status, inverse, pos = status[: c - a], inverse[: c - a], pos[: c - a]
        emitting: dict[tuple[str, str], tuple[_Slot, npt.NDArray[np.int64]]] = {}
        rows = self.m_row[a:c]
        for ci, facts in slots.items():
            mine = rows[inverse == ci]
            if len(mine) == 0:
                continue
            prev = emitting.get(facts[0])
            if prev is not None:
                mine = np.union1d(prev[1], mine)
            emitting[facts[0]] = (facts, mine)
        keep = ((status == _EMIT) | (status == _PLAIN)) & ~self.b_idle[pos]
        return _Segment(
            a=a,
            c=c,
            stop=stop,
            feed_at=feed_at,
            status=status,
            emitting=emitting,
            keep=pos[keep],
        )

    def _decide(
        self, is_dec: bool, layout: _Layout, tags: str, taken: dict[tuple[str, str], str]
    ) -> tuple[int, _Slot | None]:
        """What `_dedup` does with lines of this kind, layout and rank tags, as long as only
        lines decided in bulk come between: the reader's state then stays as it is."""
        r = self.r
        rank, nums = _rank_of(tags)
        if layout.accept and not r._bonus_set:
            return _FEED, None
        if "DP" in nums and not r.dp_attention:
            return _FEED, None
        if rank is None or not _ranked(nums):
            return _PLAIN, None
        group = r._group(nums)
        k = _key_of(nums)
        lowest = r._lowest.get(group)
        if lowest is None or k < lowest:
            return _FEED, None
        if k > lowest:
            return _DUP, None
        if any(k) and group not in r._settled:
            return _FEED, None
        slot = ("decode" if is_dec else "prefill", group)
        held = r._pending.get(slot)
        if held is not None and (held.best or held.seen != {rank}):
            return _FEED, None
        if taken.setdefault(slot, rank) != rank:
            return _FEED, None  # two ranks of one slot: their order decides
        return _EMIT, (slot, rank, k, group, held is not None)

    def _settle(self, seg: _Segment | None, upto: int) -> None:
        """Count, keep the samples of and apply the TP-rank state of a segment's rows
        before `upto` (a row `feed` takes next, or the segment's end)."""
        import numpy as np

        if seg is None:
            return
        ctx = self.r.ctx
        m = int(np.searchsorted(self.m_row[seg.a : seg.c], upto))
        pos = self.m_pos[seg.a : seg.a + m]
        is_dec = self.b_dec[pos]
        n_dec = int(is_dec.sum())
        for kind, n in (
            ("decode", n_dec),
            ("prefill", len(pos) - n_dec),
            ("decode-idle", int(self.b_idle[pos].sum())),
            ("duplicate-rank", int((seg.status[:m] == _DUP).sum())),
        ):
            if n:
                ctx.count(kind, n)
        r = self.r
        for slot, (facts, rows) in seg.emitting.items():
            n = int(np.searchsorted(rows, upto))
            if not n:
                continue
            _, rank, k, group, had = facts
            row = int(rows[n - 1])
            lay = self.f.layouts[int(self.b_layout[np.searchsorted(self.b_row, row)])]
            held = _Batch(self.t[row][lay.ts_at : lay.ts_at + lay.ts_len])
            held.seen.add(rank)
            held.best_key = k
            r._pending[slot] = held
            if had or n >= 2:
                r._settled.add(group)
        # samples are read once per chunk, at its end (one polars query, not one per segment)
        keep = seg.keep
        if upto < seg.stop:
            keep = keep[self.b_row[keep] < upto]
        if len(keep):
            self.keep.append(keep)

    def _read_ahead(self) -> None:
        """Read, while the chunk is prepared, the values of the rows likely to give samples:
        those of each group's lowest rank tags in the chunk (the walk decides which rows
        do, and reads any other then). At TP8 that is one line in eight, and moves that
        reading off the walking thread."""
        import numpy as np

        likely = np.zeros(max(len(self.tags), 1), np.bool_)
        lowest: dict[str, tuple[tuple[int, ...], list[int]]] = {}
        for k, tag in enumerate(self.tags):
            rank, nums = _rank_of(tag)
            if rank is None or not _ranked(nums):
                likely[k] = True
                continue
            group = self.r._group(nums)  # a guess (the walk may see DP attention change)
            key = _key_of(nums)
            best = lowest.get(group)
            if best is None or key < best[0]:
                lowest[group] = (key, [k])
            elif key == best[0]:
                best[1].append(k)
        for _, ks in lowest.values():
            likely[ks] = True
        read = self.b_layout >= 0
        pos = np.flatnonzero(read & ~self.b_idle & likely[np.where(read, self.b_tags, 0)])
        self.ahead_at = np.full(len(self.b_layout), -1, np.int64)
        self.ahead = self._extract(pos)
        for at, _ in self.ahead.values():
            self.ahead_at[at] = np.arange(len(at))
        # ... and their samples as the walk hands them over when it keeps exactly these
        # rows (the steady state of a log)
        self.ahead_pos = pos
        self.ahead_samples = self._samples(pos)

    def _extract(
        self, pos: npt.NDArray[np.int64]
    ) -> dict[int, tuple[npt.NDArray[np.int64], pl.DataFrame]]:
        """Per layout, its rows among batch positions `pos` and their timestamps and
        values (one polars query per layout, run at once)."""
        import numpy as np
        import polars as pl

        f = self.f
        lay_of = self.b_layout[pos]
        layouts = np.unique(lay_of).tolist()
        parts = [pos[lay_of == li] for li in layouts]
        found = pl.collect_all(
            [
                self.b_t.gather(at)
                .to_frame("t")
                .lazy()
                .select(
                    pl.col("t")
                    .str.slice(f.layouts[li].ts_at, f.layouts[li].ts_len)
                    .cast(pl.Categorical)
                    .alias("ts"),
                    *_groups(f.layouts[li]),
                )
                .select(
                    "ts",
                    *(
                        _value(g, how, f.layouts[li].usage_how).alias(f"v{j}")
                        for j, (_, g, how) in enumerate(f.layouts[li].outputs)
                    ),
                )
                for li, at in zip(layouts, parts, strict=True)
            ]
        )
        return {li: (at, got) for li, at, got in zip(layouts, parts, found, strict=True)}

    def _values(self, li: int, pos: npt.NDArray[np.int64]) -> pl.DataFrame:
        """Timestamps and values of batch positions `pos` of layout `li`, in that order:
        read ahead, or read now."""
        import numpy as np
        import polars as pl

        at = self.ahead_at[pos]
        have = at >= 0
        if have.all():
            ahead = self.ahead[li][1]
            if len(at) == ahead.height and (at == np.arange(len(at))).all():
                return ahead  # all the rows read ahead, in order (the read-ahead's samples)
            return ahead[at]
        fresh = self._extract(pos[~have])[li][1]
        if not have.any():
            return fresh
        n_have = int(have.sum())
        order = np.empty(len(pos), np.int64)
        order[have] = np.arange(n_have)
        order[~have] = n_have + np.arange(len(pos) - n_have)
        return pl.concat([self.ahead[li][1][at[have]], fresh])[order]

    def _samples(self, pos: npt.NDArray[np.int64]) -> pl.DataFrame | None:
        """The samples of emitting batch rows (positions `pos`, in line order), each row's
        in its layout's order: one numpy interleave, no sort. Strings are categoricals
        made per line and spread to its samples as codes. Rows as `emit` (line numbers
        are added at the hand-over)."""
        import numpy as np
        import polars as pl

        f = self.f
        lay_of = self.b_layout[pos]
        k_of = np.array([len(lay.outputs) for lay in f.layouts], np.int64)[lay_of]
        start = np.cumsum(k_of) - k_of
        total = int(k_of.sum())
        if total == 0:
            return None
        value = np.empty(total, np.float64)
        metric = np.empty(total, np.int64)
        owner = np.empty(total, np.int64)
        layouts = np.unique(lay_of).tolist()
        found = [self._values(li, pos[lay_of == li]) for li in layouts]
        ts_parts: list[pl.Series] = []
        ts_rows: list[npt.NDArray[np.int64]] = []
        for li, got in zip(layouts, found, strict=True):
            idx = np.flatnonzero(lay_of == li)
            k = len(f.layouts[li].outputs)
            out = (start[idx][:, None] + np.arange(k)).ravel()
            value[out] = got.drop("ts").to_numpy().ravel()
            metric[out] = np.tile(np.array(f.metric_ids[li], np.int64), len(idx))
            owner[out] = np.repeat(idx, k)
            ts_parts.append(got["ts"])
            ts_rows.append(idx)
        if len(ts_parts) == 1:
            line_ts = ts_parts[0]
        else:  # back in line order
            order = np.argsort(np.concatenate(ts_rows), kind="stable")
            line_ts = pl.concat(ts_parts).gather(order)
        ranks = pl.Series([tag[1:] or None for tag in self.tags], dtype=pl.String)
        rows = self.b_row[pos][owner]
        cat = pl.Categorical
        return pl.DataFrame(
            {
                "emit": rows,
                "rank": ranks.cast(cat).gather(self.b_tags[pos][owner]),
                "ts": line_ts.cast(cat).gather(owner),
                "metric": pl.Series(f.metrics, dtype=pl.String).cast(cat).gather(metric),
                "value": value,
            }
        )

    def _hand_over(self) -> Iterator[Record]:
        """The chunk's samples, in the order `feed` would have yielded them: the fed
        lines' samples merged in by the row that yielded them, before the bulk samples of
        that row (a phase block's totals come before the samples of the line closing it)."""
        import numpy as np
        import polars as pl

        bulk = None
        if self.keep:
            keep = np.concatenate(self.keep)
            if np.array_equal(keep, self.ahead_pos):
                bulk = self.ahead_samples  # read while the chunk was prepared
            else:
                bulk = self._samples(keep)
        self.ahead_samples = None
        if bulk is not None:
            # line numbers here, on the walking thread: a chunk's first line number is known
            # once the chunks before it are counted (`Chunk.first` is not for worker threads)
            bulk = bulk.with_columns(line=pl.col("emit") + self.first)
        fed = self.fed
        self.keep, self.fed = [], []
        frame: pl.DataFrame | None = bulk
        schema = {"emit": pl.Int64, **batch_schema()}
        if fed:
            extra = pl.DataFrame(
                {"emit": [row for row, _ in fed], **batch_columns([s for _, s in fed])},
                schema=schema,
            ).with_columns(pl.col("rank", "ts", "metric").cast(pl.Categorical))
            if bulk is None:
                frame = extra
            else:
                nb, nf = bulk.height, extra.height
                at = np.searchsorted(bulk["emit"].to_numpy(), extra["emit"].to_numpy())
                at += np.arange(nf)
                order = np.empty(nb + nf, np.int64)
                is_fed = np.zeros(nb + nf, np.bool_)
                is_fed[at] = True
                order[at] = nb + np.arange(nf)
                order[~is_fed] = np.arange(nb)
                frame = pl.concat([bulk, extra], how="diagonal")[order]
        if frame is None or frame.height == 0:
            return
        frame = frame.select(
            pl.col(c) if c in frame.columns else pl.lit(None, schema[c]).alias(c)
            for c in BATCH_COLUMNS
        )
        batch = SampleBatch(frame)
        if self.f.sink is not None:
            self.f.sink(batch)
        else:
            yield from batch.samples()


def _clean_noisy(sub: pl.Series, parked: bool) -> pl.Series:
    """`_lines.clean` of lines with terminal noise: in polars when the noise is only ANSI
    codes and `**` (the same substitutions, in the same order), else by `clean` itself
    (given back their `\r`s when those were `parked` as `\x1e`)."""
    fixed = (
        sub.str.replace_all(_ANSI_ESC_RX, "")
        .str.replace_all("\x1b", "", literal=True)
        .str.replace_all(_ANSI_BARE_RX, "")
        .str.replace_all("**", "", literal=True)
    )
    hard = sub.str.contains(r"[`~>\x1e]") | sub.str.contains(_ENVELOPE_RX)  # `clean` itself
    if hard.any():
        at = hard.arg_true()
        raw = sub.gather(at).to_list()
        if parked:
            raw = [x.replace("\x1e", "\r") for x in raw]
        fixed = fixed.scatter(at, [clean(x) for x in raw])
    return fixed


def _groups(layout: _Layout) -> list[pl.Expr]:
    """The texts of the layout's capture groups its outputs read, as columns `1`, `2`, ...
    of a line `t` it reads (a percent without its `%`)."""
    import polars as pl

    if layout.items is None:
        return [pl.col("t").str.extract_groups(layout.pattern).struct.unnest()]
    parts = pl.col("t").str.split(", ")
    out = []
    for g in sorted({g for _, gs, _ in layout.outputs for g in gs}):
        item, offset, pct = layout.items[g - 1]
        col = parts.list.get(item).str.slice(offset)
        out.append((col.str.strip_suffix("%") if pct else col).alias(str(g)))
    return out


def _value(groups: tuple[int, ...], how: str, usage_how: tuple[str, ...]) -> pl.Expr:
    """A sample's value from the layout's capture groups, as `_fields` computes it."""
    import polars as pl

    def one(group: int, h: str) -> pl.Expr:
        raw = pl.col(str(group))
        if h == "bool":
            return (raw == "True").cast(pl.Float64)
        if h == "pct":  # as `phase_timing.percent`: the printed digits times 1e-2
            return pl.concat_str([raw, pl.lit("e-2")]).cast(pl.Float64)
        return raw.cast(pl.Float64)

    if how == "max":
        return pl.max_horizontal([one(gr, h) for gr, h in zip(groups, usage_how, strict=True)])
    return one(groups[0], how)


def _numbered(
    codes: npt.NDArray[np.integer[Any]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The distinct values of integer codes, ascending, and each code's place among them
    (what `np.unique(codes, return_inverse=True)` gives): by a lookup table when they span
    at most `_CODE_TABLE` values (a log's few rank tags lie close together, a window holds
    few kinds, layouts and tags), by a sort otherwise (categorical codes are global to the
    process and may lie far apart)."""
    import numpy as np

    if len(codes) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    low = int(codes.min())
    rel = codes.astype(np.int64) - low
    span = int(rel.max()) + 1
    if span > _CODE_TABLE:
        uniq, inverse = np.unique(rel, return_inverse=True)
    else:
        present = np.zeros(span, np.bool_)
        present[rel] = True
        uniq = np.flatnonzero(present)
        lut = np.empty(span, np.int64)
        lut[uniq] = np.arange(len(uniq))
        inverse = lut[rel]
    return uniq + low, inverse


def _key_of(nums: dict[str, int]) -> tuple[int, ...]:
    return tuple(nums.get(t, 0) for t in _TAGS_KEY)
