"""`prometheus`: text-exposition snapshots of vLLM's and SGLang's `/metrics`, scrape by scrape.

Owns the exposition grammar (`name{labels} value [timestamp]`, `# TYPE`), scrape boundaries
(`# scrape <timestamp>` lines, else the first series that repeats: scrapes appended one after
another), and the per-interval samples of one source: gauges as read, counters differenced
between consecutive scrapes (a rate only where both scrapes carry a time), the spec-decoding
counters' acceptance, histogram means. It never reads a counter as a rate, never groups
across sources (one scrape per file gives gauges, and its counters only a baseline).
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from .._lines import Chunk, Line, SourceText
from ..model import (
    Record,
    Sample,
    SampleBatch,
    Setting,
    SummaryItem,
    batch_frame,
    batch_schema,
)
from ._fields import epoch_seconds, is_count, read_number, shown, value_problem
from .base import ParseContext, read_lines

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import polars as pl

format_id = "prometheus"
priority = 20

FAST = True  # tests switch it off to compare with the line-by-line path
FAST_MIN_BYTES = 512 << 10  # smaller chunks are read line by line (polars is not imported)
FAST_CHUNK = 8 << 20
AHEAD = 2  # chunks split on a worker thread while one is read (as the server logs')

Labels = tuple[tuple[str, str], ...]
Key = tuple[str, Labels]  # a series: metric name and its labels, sorted

# A series line: name, labels, value, a timestamp, and an OpenMetrics exemplar after ` # `
# (`# {trace_id="…"} 0.05 1772442000.1`, passed over)
_SAMPLE = re.compile(
    r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>(?:[^}\"]|\"(?:[^\"\\]|\\.)*\")*)\})?"
    r"[ \t]+(?P<value>[^\s#]\S*)(?:[ \t]+(?P<ts>[^\s#]\S*))?(?:[ \t]+#[ \t]*\{.*)?[ \t]*$"
)
# A series line every reader reads alike, in polars' (Rust) regex syntax: `_SAMPLE`'s name and
# labels, one space, a plain number of ASCII digits (`read_number` reads it as `float` does:
# no special word, no cut, no `\\d` beyond ASCII), then maybe one space and a timestamp of the
# same kind (`/federate`'s milliseconds) and an OpenMetrics exemplar after ` # {` (passed
# over), nothing else around it. The bulk path splits such lines in polars (`_Lines.split`);
# any other line goes through `feed`.
_NUMBER_RX = r"[-+]?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"  # a plain number
_EXEMPLAR = " # {"  # where an OpenMetrics exemplar starts (`_SAMPLE`'s, as one space writes it)
_PLAIN_RX = (
    r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{((?:[^}"]|"(?:[^"\\]|\\.)*")*)\})? '
    rf"({_NUMBER_RX})(?: ({_NUMBER_RX}))?(?: #[ \t]*\{{.*)?$"
)
_HELP = "# HELP "  # a comment line `feed` reads nothing from (no scrape, TYPE or EOF)
_CACHED = 1 << 16  # label texts, keys and names remembered per reader, at most
_LABEL = re.compile(r'\s*(?P<k>[A-Za-z_]\w*)\s*=\s*"(?P<v>(?:[^"\\]|\\.)*)"\s*,?')
_SCRAPE = re.compile(r"^#+[ \t]*scrape\b[ \t]*[:=@]?[ \t]*(?P<ts>\S.*?)?[ \t]*$", re.I)
_TYPE = re.compile(r"^#[ \t]*TYPE[ \t]+(?P<name>\S+)[ \t]+(?P<type>\w+)")
_ESCAPES = {"n": "\n", "\\": "\\", '"': '"'}
_PREFIXES = ("vllm:", "sglang:")
_RANK_LABELS = ("engine", "dp_rank", "pp_rank", "tp_rank")

# Gauges as read (name after the prefix -> metric). `*_perc` are fractions ("1 means 100
# percent usage"), as DESIGN §3 stores every share.
_GAUGES: dict[str, str] = {
    "vllm:num_requests_running": "running_req",
    "vllm:num_requests_waiting": "waiting_req",
    "vllm:num_requests_swapped": "swapped_req",
    "vllm:gpu_cache_usage_perc": "kv_cache_usage",  # renamed kv_cache_usage_perc in 0.9.2
    "vllm:kv_cache_usage_perc": "kv_cache_usage",
    "vllm:cpu_cache_usage_perc": "cpu_kv_cache_usage",
    "vllm:gpu_prefix_cache_hit_rate": "prefix_cache_hit_rate",  # V0
    "vllm:avg_prompt_throughput_toks_per_s": "prompt_throughput_tok_s",  # V0
    "vllm:avg_generation_throughput_toks_per_s": "gen_throughput_tok_s",  # V0
    "vllm:cpu_prefix_cache_hit_rate": "cpu_prefix_cache_hit_rate",  # V0
    # not V0's `spec_decode_draft_acceptance_rate` / `_efficiency`: totals since the start,
    # where its counters give each interval's own rate
    "sglang:num_running_reqs": "running_req",
    "sglang:num_queue_reqs": "queue_req",
    "sglang:num_used_tokens": "num_token",
    "sglang:token_usage": "token_usage",
    "sglang:swa_token_usage": "swa_token_usage",
    "sglang:gen_throughput": "gen_throughput_tok_s",
    "sglang:cache_hit_rate": "prefill_cache_hit_rate",
    "sglang:num_retracted_reqs": "retracted_req",
    "sglang:spec_accept_length": "accept_len",  # 0.0 when not speculating: no sample
}
# Counters (exposition names) -> (delta metric, rate metric over the scrapes' times).
_COUNTERS: dict[str, tuple[str, str | None]] = {
    "vllm:prompt_tokens_total": ("interval_prompt_tokens", "prompt_throughput_tok_s"),
    "vllm:generation_tokens_total": ("interval_generation_tokens", "gen_throughput_tok_s"),
    "vllm:num_preemptions_total": ("preemptions", None),
    "vllm:request_success_total": ("finished_requests", "request_throughput_req_s"),
    "vllm:spec_decode_num_drafts_total": ("num_drafts", None),
    "vllm:spec_decode_num_draft_tokens_total": ("drafted_tokens", "drafted_throughput_tok_s"),
    "vllm:spec_decode_num_accepted_tokens_total": ("accepted_tokens", "accepted_throughput_tok_s"),
    "vllm:spec_decode_num_emitted_tokens_total": ("emitted_tokens", None),  # V0
    "sglang:prompt_tokens_total": ("interval_prompt_tokens", "prompt_throughput_tok_s"),
    "sglang:generation_tokens_total": ("interval_generation_tokens", "gen_throughput_tok_s"),
    "sglang:num_requests_total": ("finished_requests", "request_throughput_req_s"),
}
# Counters read only into ratios: per-position accepted tokens, prefix-cache queries / hits.
_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
_HITS = ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")
_QUERIES = ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total")
_RATIO_COUNTERS = frozenset({_PER_POS, *_HITS, *_QUERIES})
# Histograms (base name) -> the metric of the interval's mean, Δsum / Δcount, in ms.
_HISTOGRAMS: dict[str, str] = {
    "vllm:time_to_first_token_seconds": "ttft_ms_mean",
    "vllm:inter_token_latency_seconds": "itl_ms_mean",
    "vllm:time_per_output_token_seconds": "itl_ms_mean",  # per token: ITL (0.11 alias)
    "vllm:request_time_per_output_token_seconds": "tpot_ms_mean",
    "vllm:e2e_request_latency_seconds": "e2e_latency_ms_mean",
    "sglang:time_to_first_token_seconds": "ttft_ms_mean",
    "sglang:inter_token_latency_seconds": "itl_ms_mean",
    "sglang:e2e_request_latency_seconds": "e2e_latency_ms_mean",
}
# A restart shows in these even when no counter has gone down yet.
_START_TIMES = ("process_start_time_seconds",)


@functools.lru_cache(maxsize=4096)
def _family(name: str) -> str:
    """A series' family: its name without a counter's or histogram's own suffix."""
    return re.sub(r"_(?:total|created|bucket|sum|count)$", "", name)


@functools.lru_cache(maxsize=4096)
def _read(name: str) -> bool:
    """Whether a series feeds a metric (or a restart check) here."""
    if name in _GAUGES or name in _COUNTERS or name in _RATIO_COUNTERS or name in _START_TIMES:
        return True
    fam = _family(name)
    return fam in _HISTOGRAMS or fam + "_total" in _COUNTERS or fam + "_total" in _RATIO_COUNTERS


_SNIFF_TYPE = re.compile(r"^#[ \t]*(?:TYPE|HELP)[ \t]+(?:vllm|sglang):\w+", re.M)
_SNIFF_SAMPLE = re.compile(r"^(?:vllm|sglang):\w+(?:\{[^}\n]*\})?[ \t]+[-+\dNI.]", re.M)


def sniff(head: str, name: str) -> float:
    """Score: `# TYPE vllm:…` / `sglang:…` lines are decisive, bare series a strong hint."""
    if _SNIFF_TYPE.search(head):
        return 1.0
    return 0.9 if len(_SNIFF_SAMPLE.findall(head)) >= 2 else 0.0


@dataclass(slots=True)
class _Scrape:
    line: int
    ts: str | None = None
    seconds: float | None = None
    values: dict[Key, tuple[float, int]] = field(default_factory=dict)


def _labels(body: str | None) -> Labels | None:
    """The label pairs of `{...}`, sorted; None when they do not parse (a cut line)."""
    if not body:
        return ()
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(body):
        m = _LABEL.match(body, pos)
        if m is None:
            return None if body[pos:].strip(" ,") else tuple(sorted(out))
        value = re.sub(r"\\(.)", lambda e: _ESCAPES.get(e.group(1), e.group(0)), m["v"])
        out.append((m["k"], value))
        pos = m.end()
    return tuple(sorted(out))


def _rank(labels: Labels) -> str | None:
    """The rank column: `Engine 0` for a vLLM engine, SGLang's `DP1` / `PP1` tags."""
    d = dict(labels)
    if "engine" in d:
        return f"Engine {d['engine']}"
    parts = [f"DP{d['dp_rank']}"] if "dp_rank" in d else []
    if d.get("pp_rank", "0") != "0":
        parts.append(f"PP{d['pp_rank']}")
    return " ".join(parts) or None


class _KeyFacts(NamedTuple):
    """Of one series: its TP group and rank (`_one_per_group`; None without a `tp_rank`),
    the sum it joins between scrapes (`_intervals`: name, rank column, extra label),
    whether it is differenced there (a counter or histogram series), and how `_reset`
    reads a change of it: "down" (a counter), "changed" (a `_created` time, the process
    start time) or "" (neither)."""

    tp_group: tuple[Key, int] | None
    delta_key: tuple[str, str | None, str | None]
    moves: bool
    restart: str


_UNSEEN = object()


class Reader:
    """Line-level reader of one source's scrapes; a scrape is read once the next begins."""

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self._scrape: _Scrape | None = None
        self._prev: _Scrape | None = None
        self._starts: list[int] = []
        self._baseline_noted = False
        self._model: tuple[str, int] | None = None
        self._types: dict[str, str] = {}
        self._bonus_said = False
        self._unread: dict[str, int] = {}  # a family no metric reads -> its first line
        # What the reader works out of a series' text again and again, kept (pure functions
        # of their keys; `_kinds` is dropped whenever a `# TYPE` line changes `_types`)
        self._label_texts: dict[str | None, Labels | None] = {}
        self._kinds: dict[str, str] = {}
        self._keys: dict[Key, _KeyFacts] = {}

    def feed(self, ln: Line) -> Iterator[Record]:
        text = ln.text.strip()
        if not text:
            return
        if text.startswith("#"):
            m = _SCRAPE.match(text)
            if m is not None:
                yield from self._close()
                ts = m["ts"] if m["ts"] and not ln.cut else None
                self._scrape = _Scrape(ln.no, ts, epoch_seconds(ts) if ts else None)
            elif text.upper().startswith("# EOF"):
                yield from self._close()
            else:
                t = _TYPE.match(text)
                if t is not None:
                    kind = t["type"].lower()
                    if self._types.get(t["name"]) != kind:
                        self._types[t["name"]] = kind
                        self._kinds.clear()  # and what was worked out from them
                        self._keys.clear()
            return
        m = _SAMPLE.match(text)
        if m is None:
            if text.startswith(_PREFIXES):  # a series of ours without its number
                if ln.cut:
                    self._cut(ln, text)
                else:
                    self.ctx.warn(
                        ln.no,
                        "unparsed-line",
                        f"a series line that cannot be read: {shown(text, 60)}",
                    )
            return
        name = m["name"]
        if not name.startswith(_PREFIXES) and name not in _START_TIMES:
            self.ctx.count("other-series")
            return
        labels = self._labels(m["labels"])
        at_end = m["ts"] is None
        got = read_number(m["value"], at_end=at_end, line_cut=ln.cut)
        if labels is None or got.value is None:
            if ln.cut or got.cut:
                self._cut(ln, text)
            else:
                self.ctx.warn(
                    ln.no, "unparsed-line", f"a series line that cannot be read: {shown(text, 60)}"
                )
            return
        yield from self._series(ln.no, name, labels, got.value, m["ts"])

    def _series(
        self, line: int, name: str, labels: Labels, value: float, ts: str | None
    ) -> list[Record]:
        """A series line read: its value goes to the scrape; the records of the scrape it
        ends, if any (a series seen again in a scrape starts the next one)."""
        key = (name, labels)
        scrape = self._scrape
        done: list[Record] = []
        if scrape is None or key in scrape.values:
            # scrapes appended one after another: a series seen again starts the next one
            done = list(self._close())
            scrape = self._scrape = _Scrape(line)
        if scrape.seconds is None and ts is not None:  # (a timestamp is never a cut line's end)
            scrape.ts, scrape.seconds = ts, epoch_seconds(ts)
        scrape.values[key] = (value, line)
        self.ctx.count("series")
        if self._model is None:
            model = dict(labels).get("model_name")
            if model:
                self._model = (model, line)
        return done

    def _labels(self, body: str | None) -> Labels | None:
        """`_labels`, each label text worked out once."""
        cache = self._label_texts
        got = cache.get(body, _UNSEEN)
        if got is _UNSEEN:
            if len(cache) >= _CACHED:
                cache.clear()
            got = cache[body] = _labels(body)
        return got  # type: ignore[return-value]

    def _facts(self, key: Key) -> _KeyFacts:
        """What the scrape logic needs of a series, worked out once."""
        facts = self._keys.get(key)
        if facts is None:
            if len(self._keys) >= _CACHED:
                self._keys.clear()
            name, labels = key
            d = dict(labels)
            tp = d.get("tp_rank")
            group = None
            if tp is not None and is_count(tp):
                group = ((name, tuple(kv for kv in labels if kv[0] != "tp_rank")), int(tp))
            extra = d.get("position") if name == _PER_POS else d.get("le")
            kind = self._kind(name)
            restart = "down" if kind == "counter" else ""
            if kind == "created" or name in _START_TIMES:
                restart = "changed"
            facts = self._keys[key] = _KeyFacts(
                group, (name, _rank(labels), extra), kind in ("counter", "histogram"), restart
            )
        return facts

    def finish(self) -> Iterator[Record]:
        yield from self._close()
        if self._unread:
            names = sorted(self._unread, key=self._unread.__getitem__)
            more = f" and {len(names) - 5} more" if len(names) > 5 else ""
            self.ctx.warn(
                min(self._unread.values()),
                "unknown-field",
                f"{len(names)} metric famil{'ies are' if len(names) > 1 else 'y is'} not "
                f"read: {', '.join(names[:5])}{more}",
            )
        if self._model is not None:
            yield Setting("model_name", self._model[0], self._model[1])
        if len(self._starts) > 1:
            # each counter reset is a server start; the first scrape's launch began before it
            yield SummaryItem("launch_lines", list(self._starts))

    def _cut(self, ln: Line, text: str) -> None:
        self.ctx.warn(
            ln.no, "truncated-value", f"the series line is cut ({shown(text, 60)}); no sample taken"
        )

    # ------------------------------------------------------------------ one scrape

    def _close(self) -> Iterator[Record]:
        scrape, self._scrape = self._scrape, None
        if scrape is None or not scrape.values:
            return
        self.ctx.count("scrape")
        values = self._one_per_group(scrape.values)
        prev = self._prev
        yield from self._gauges(scrape, values)
        self._prev = scrape
        scrape.values = values
        if prev is None:
            self._starts.append(scrape.line)
            if any(self._kind(n) == "counter" for n, _ in values) and not self._baseline_noted:
                self._baseline_noted = True
                self.ctx.warn(
                    scrape.line,
                    "cumulative-baseline",
                    "the first scrape's counters are totals since the server started: they "
                    "only set the baseline for the next scrape's per-interval deltas",
                )
            return
        went_down = self._reset(prev, scrape)
        if went_down:
            self._starts.append(scrape.line)
            self.ctx.warn(
                scrape.line,
                "counter-reset",
                f"counters went down ({went_down}): the server restarted; this scrape starts "
                "a new launch and its counters set the new baseline",
            )
            return
        yield from self._intervals(prev, scrape)

    def _one_per_group(self, values: dict[Key, tuple[float, int]]) -> dict[Key, tuple[float, int]]:
        """SGLang TP ranks of one group report the same batch: the lowest rank's series."""
        dropped = self._duplicates(values)
        if not dropped:
            return values
        self.ctx.count("duplicate-rank", len(dropped))
        return {key: v for key, v in values.items() if key not in dropped}

    def _duplicates(self, keys: Iterable[Key]) -> set[Key]:
        """The series of a TP group other than its lowest rank's."""
        lowest: dict[Key, int] = {}
        ranked: list[tuple[Key, Key, int]] = []
        facts = self._facts
        for key in keys:
            tp = facts(key).tp_group
            if tp is not None:
                group, rank = tp
                lowest[group] = min(rank, lowest.get(group, rank))
                ranked.append((key, group, rank))
        return {key for key, group, rank in ranked if rank != lowest[group]}

    def _kind(self, name: str) -> str:
        kind = self._kinds.get(name)
        if kind is None:
            if len(self._kinds) >= _CACHED:
                self._kinds.clear()
            kind = self._kinds[name] = self._kind_of(name)
        return kind

    def _kind_of(self, name: str) -> str:
        declared = self._types.get(name) or self._types.get(name.removesuffix("_total"))
        if name in _COUNTERS or name in _RATIO_COUNTERS or declared == "counter":
            return "counter"
        if name.endswith(("_bucket", "_sum", "_count")):
            return "histogram"
        if name.endswith("_created"):
            return "created"
        return declared or "gauge"

    def _gauges(self, scrape: _Scrape, values: dict[Key, tuple[float, int]]) -> Iterator[Record]:
        for key, (value, line) in values.items():
            name = key[0]
            metric = _GAUGES.get(name)
            if metric is None:
                if not _read(name) and name.startswith(_PREFIXES):
                    self._unread.setdefault(_family(name), line)
                continue
            if metric == "accept_len" and value == 0:
                continue  # SGLang's gauge is 0.0 unless speculative decoding runs
            if value_problem(value) is not None:
                self.ctx.warn(
                    line, value_problem(value) or "", f"{name} is {value!r}; no sample taken"
                )
                continue
            if metric == "accept_len" and not self._bonus_said:
                self._bonus_said = True
                yield Setting("accept_len_counts_bonus", True, line)  # SGLang counts it
            yield Sample(metric, value, line, None, None, self._facts(key).delta_key[1], scrape.ts)

    def _reset(self, prev: _Scrape, cur: _Scrape) -> str:
        """What went down between two scrapes ('' when nothing did): a counter, or a
        counter's `_created` time or the process start time that changed (a restart)."""
        facts, before = self._facts, prev.values
        for key, (value, _) in cur.values.items():
            restart = facts(key).restart
            if not restart:
                continue
            old = before.get(key)
            if old is None:
                continue
            if value < old[0] if restart == "down" else value != old[0]:
                return f"{key[0]} {old[0]:g} -> {value:g}"
        return ""

    def _intervals(self, prev: _Scrape, cur: _Scrape) -> Iterator[Record]:
        """Per-interval samples: counter deltas (and rates), spec acceptance, histogram means."""
        dt = None
        if prev.seconds is not None and cur.seconds is not None and cur.seconds > prev.seconds:
            dt = cur.seconds - prev.seconds
        # sums per (name, rank, extra label), over the labels no metric keeps apart
        delta: dict[tuple[str, str | None, str | None], tuple[float, int]] = {}
        parts: dict[tuple[str, str | None, str | None], int] = {}

        facts, before = self._facts, prev.values
        for key in before:
            f = facts(key)
            if f.moves:
                k = f.delta_key
                parts[k] = parts.get(k, 0) + 1
        for key, (value, line) in cur.values.items():
            f = facts(key)
            if not f.moves:
                continue
            old = before.get(key)
            if old is None:
                continue
            k = f.delta_key
            total, at = delta.get(k, (0.0, line))
            delta[k] = (total + value - old[0], min(at, line))
            parts[k] -= 1
        # a sum is whole only with every series the scrape before held (a cut scrape ends
        # inside `request_success_total`'s finished reasons: no partial sum)
        delta = {k: v for k, v in delta.items() if parts[k] == 0}
        ranks = sorted({r for _, r, _ in delta}, key=lambda r: (r is not None, r or ""))
        gauge_metrics = {_GAUGES[n] for n, _ in cur.values if n in _GAUGES}
        for rank in ranks:
            yield from self._rank_intervals(cur, rank, delta, dt, gauge_metrics)

    def _rank_intervals(
        self,
        cur: _Scrape,
        rank: str | None,
        delta: dict[tuple[str, str | None, str | None], tuple[float, int]],
        dt: float | None,
        gauge_metrics: set[str],
    ) -> Iterator[Record]:
        def get(name: str, extra: str | None = None) -> tuple[float, int] | None:
            return delta.get((name, rank, extra))

        def sample(metric: str, value: float, line: int) -> Sample:
            return Sample(metric, value, line, None, None, rank, cur.ts)

        for name, (metric, rate) in _COUNTERS.items():
            got = get(name)
            if got is None:
                continue
            yield sample(metric, got[0], got[1])
            if rate is not None and dt is not None and rate not in gauge_metrics:
                yield sample(rate, got[0] / dt, got[1])
        acc = get("vllm:spec_decode_num_accepted_tokens_total")
        drafts = get("vllm:spec_decode_num_drafts_total")
        tokens = get("vllm:spec_decode_num_draft_tokens_total")
        if acc is not None and drafts is not None and drafts[0] > 0:
            # vLLM's own definition (spec_decode/metrics.py): 1 + accepted / drafts, the
            # bonus token counted
            if not self._bonus_said:
                self._bonus_said = True
                yield Setting("accept_len_counts_bonus", True, acc[1])
            yield sample("accept_len", 1 + acc[0] / drafts[0], acc[1])
            positions = sorted(
                (int(e), v)
                for (n, r, e), v in delta.items()
                if n == _PER_POS and r == rank and e is not None and is_count(e)
            )
            for i, (accepted, line) in positions:
                yield sample(f"position_acceptance_rate_{i}", accepted / drafts[0], line)
        if acc is not None and tokens is not None and tokens[0] > 0:
            yield sample("draft_acceptance_rate", acc[0] / tokens[0], acc[1])
        for hits_name, queries_name in zip(_HITS, _QUERIES, strict=True):
            hits, queries = get(hits_name), get(queries_name)
            if hits is not None and queries is not None and queries[0] > 0:
                yield sample("prefix_cache_hit_rate", hits[0] / queries[0], hits[1])
        seen: set[str] = set()
        for base, metric in _HISTOGRAMS.items():
            total, count = get(base + "_sum"), get(base + "_count")
            if total is None or count is None or count[0] <= 0 or metric in seen:
                continue
            seen.add(metric)  # 0.11 exports ITL twice (the old name kept): once
            yield sample(metric, total[0] / count[0] * 1000, total[1])


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one file of `/metrics` scrapes, in line order (a scrape when it ends).

    Chunks of `FAST_MIN_BYTES` or more are read in bulk (`_Bulk`); the rest line by line.
    Both go through one `Reader`: the bulk path reads runs of scrapes laid out as one the
    reader has read (`_Template`) with numpy, and feeds every other line."""
    reader = Reader(ctx)
    if not FAST:
        yield from read_lines(reader, src)
        return
    bulk = _Bulk(reader)
    # chunks split on a worker thread, `AHEAD` ahead, while this one reads the oldest
    ahead: deque[tuple[Chunk, Future[_Split | None]]] = deque()
    try:
        for piece in src.chunks(FAST_CHUNK):
            if isinstance(piece, Chunk) and len(piece.data) >= FAST_MIN_BYTES:
                ahead.append((piece, bulk.prepare(piece)))
                if len(ahead) > AHEAD:
                    yield from bulk.chunk(src, *ahead.popleft())
                continue
            while ahead:  # (in line order)
                yield from bulk.chunk(src, *ahead.popleft())
            if isinstance(piece, Line):
                yield from reader.feed(piece)
            else:
                for ln in src.chunk_lines(piece):
                    yield from reader.feed(ln)
        while ahead:
            yield from bulk.chunk(src, *ahead.popleft())
    finally:
        bulk.close()
    yield from reader.finish()


# ---------------------------------------------------------------------- the bulk path
#
# A server's scrapes are laid out alike, scrape after scrape: the same series in the same
# order under the same `# HELP` and `# TYPE` lines; only the numbers (values, timestamps,
# exemplars, a `# scrape` line's time) change. The bulk path learns that layout from two
# scrape starts the reader found (`_Template`: the lines from one start to the next), then
# compares the lines that follow with it, block by block, in polars (each line's shape: its
# text up to a last number, a series line's up to its value; whether a number ends it, and
# a timestamp follows the value).
# A run of blocks laid out alike is one scrape each: their numbers are read in one cast, and
# what `Reader._close` would give for each is worked out with numpy over all of them
# (`_Run`). A scrape that warns, restarts or says something once (the first acceptance
# length) is closed by `Reader._close` itself. Any other line is fed.

_WINDOW = 64  # lines of a chunk split and fetched as Python lists at a time, while fed
_RUN_LINES = 1024  # lines a run of scrapes holds at least, to be read in bulk
# A line's last word when it is a plain number (`_PLAIN_RX`'s), with the space before it
_LAST_NUMBER_RX = rf"( {_NUMBER_RX})$"


@dataclass(slots=True)
class _Template:
    """The lines of one scrape as the reader read them, from its start to the next's.

    Per line: the text, its shape (`_split`: the text without a last number, a series
    line's without its value, timestamp and exemplar), whether it is a plain series line
    (`_PLAIN_RX`), whether it ends in a number and whether a timestamp follows its value.
    A line of a block is laid out as the template's when it is a plain series line of the
    same series (the same shape, a number, a timestamp where the template's has one), or
    else the same text; the first, a `# scrape` line, with any time. What such a block
    holds: its series lines' offsets and keys, its lines of other exporters' series, the
    `# TYPE` lines (each must agree with what the reader holds: then reading them again
    changes nothing), whether a `# EOF` ends it."""

    texts: pl.Series
    shapes: pl.Series
    plain: npt.NDArray[np.bool_]
    numbered: npt.NDArray[np.bool_]
    stamped: npt.NDArray[np.bool_]
    marker: bool
    eof: bool
    offsets: npt.NDArray[np.int64]
    keys: list[Key]
    other: int
    types: list[tuple[str, str]]

    @property
    def n(self) -> int:
        return len(self.plain)


class _Bulk:
    """The bulk path over one file's chunks: the template learned so far, the scrape the
    reader holds open (so that a scrape start is seen as a line is fed), and how many
    scrape starts to pass by before the next look for a run (a look that finds none, or
    one too short to be worth its cost, doubles it)."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.template: _Template | None = None
        self.open: _Scrape | None = None
        self.wait = 0
        self.backoff = 1
        self._pool: ThreadPoolExecutor | None = None

    def prepare(self, chunk: Chunk) -> Future[_Split | None]:
        """Start splitting a chunk on the worker thread (`_split`)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="sessionlens-prometheus")
        return self._pool.submit(_split, chunk)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def chunk(
        self, src: SourceText, chunk: Chunk, prepared: Future[_Split | None]
    ) -> Iterator[Record]:
        """A chunk's records: runs of scrapes laid out as the template read in bulk, every
        other line fed (`# HELP` lines passed over, plain series lines split by polars);
        the chunk's samples as one batch, at its end, after its other records."""
        import polars as pl

        reader = self.reader
        split = prepared.result()
        if split is None:  # what polars might not split as `_lines` does: line by line
            for ln in src.chunk_lines(chunk):
                yield from reader.feed(ln)
            self.open = reader._scrape
            return
        lines, t = _Lines(split, chunk.first), split.texts
        del split
        n, first = len(t), chunk.first
        count, labels_of, series = reader.ctx.count, reader._labels, reader._series
        pieces: list[pl.DataFrame] = []  # the chunk's samples so far, in order
        fed: list[Sample] = []  # and those fed since the last piece
        i, lo, hi, last_start = 0, 0, 0, None
        open_ = self.open
        width = _WINDOW
        names: list[str | None] = []
        bodies: list[str | None] = []
        numbers: list[str | None] = []
        stamps: list[str | None] = []
        texts: list[str] = []
        while i < n:
            if i >= hi:  # the next lines, split, as Python lists
                lo, hi = i, min(n, i + width)
                names, bodies, numbers, stamps, texts = lines.split(lo, hi)
                width = min(width * 2, 1 << 13)
            k = i - lo
            name = names[k]
            got: Iterable[Record] = ()
            if name is None:
                if not texts[k].startswith(_HELP):
                    got = reader.feed(Line(first + i, texts[k]))
            elif not name.startswith(_PREFIXES) and name not in _START_TIMES:
                count("other-series")
            else:
                labels = labels_of(bodies[k])
                if labels is None:  # labels `_labels` does not read: `feed` says so
                    got = reader.feed(Line(first + i, texts[k]))
                else:
                    got = series(first + i, name, labels, float(numbers[k] or ""), stamps[k])
            if got:  # (an empty list, mostly)
                for rec in got:
                    if isinstance(rec, Sample):
                        fed.append(rec)
                    else:
                        yield rec
            opened = reader._scrape
            if opened is open_:
                i += 1
                continue
            open_ = opened
            if opened is None or opened.line != first + i:
                i += 1
                continue
            # a scrape starts at this line: the blocks from here laid out as the template?
            look = self._look(lines, i, last_start)
            last_start = i
            if look is None:
                i += 1
                continue
            m, stamps = look
            template = self.template
            assert template is not None
            if fed:
                pieces.append(batch_frame(fed))
                fed = []
            yield from _Run(reader, template, lines, i, m, stamps).records(pieces)
            open_ = reader._scrape
            last_start = i + (m - 1) * template.n
            i += m * template.n
            hi = i  # split the lines again from here
            width = _WINDOW
        self.open = open_
        if fed:
            pieces.append(batch_frame(fed))
        pieces = [f for f in pieces if f.height]
        if pieces:
            batch = SampleBatch(pl.concat(pieces) if len(pieces) > 1 else pieces[0])
            yield from batch.hand_over(reader.ctx.sink)

    def _look(
        self, lines: _Lines, start: int, last_start: int | None
    ) -> tuple[int, list[str | None]] | None:
        """At a scrape start: the run of blocks laid out as the template from here (learned
        from the last scrape when the one held does not fit), if it is worth reading in
        bulk (`_RUN_LINES` lines or more); None while waiting, or when there is none."""
        if self.wait:
            self.wait -= 1
            return None
        reader = self.reader
        m, stamps = (0, []) if self.template is None else lines.match(reader, self.template, start)
        if m == 0 and last_start is not None:
            learned = lines.learn(reader, last_start, start)
            if learned is not None:
                self.template = learned
                m, stamps = lines.match(reader, learned, start)
        size = 0 if self.template is None else self.template.n
        if size and m * size >= _RUN_LINES:
            self.backoff = 1
            return m, stamps
        if (size and m < (len(lines.numbered) - start) // size) or (
            not size and last_start is not None
        ):
            # a block laid out otherwise (not the chunk's end), or no layout to learn:
            # wait longer each time
            self.wait = self.backoff
            self.backoff = min(2 * self.backoff, 256)
        return None


class _Split(NamedTuple):
    """A chunk's lines split by polars (`_lines.polars_lines`): each line's shape (its text
    without a last number; a series line's without its value, timestamp and exemplar, as
    `_split` finds them), that number or value (with the space before it; null when the
    line ends in none), and a series line's timestamp (null when it has none)."""

    texts: pl.Series
    shapes: pl.Series
    numbers: pl.Series
    stamps: pl.Series
    values: npt.NDArray[np.float64]  # the numbers read (NaN where none, or not read)
    unread: npt.NDArray[np.bool_]  # a number polars does not read as a float
    stamped: npt.NDArray[np.bool_]  # a timestamp after the value


def _split(chunk: Chunk) -> _Split | None:
    """`_Split` of a chunk (a worker thread: it touches no state but the chunk's line
    count); None when polars might not split it as `_lines` does.

    From the end of each line, with literal splits and end-anchored extracts only (a regex
    over whole lines costs ten times more): a line not of `#` loses an exemplar (from the
    first ` # {`, where a number ends the text before it); its last number is taken, and
    where the text before that ends in a number too, the two are its value and timestamp.
    What this finds is checked against `_PLAIN_RX` wherever it is relied on
    (`_Lines.learn`)."""
    import polars as pl

    from .._lines import polars_lines

    split = polars_lines(chunk)
    if split is None:
        return None
    t = split[0]
    frame = t.to_frame("t")
    series = ~pl.col("t").str.starts_with("#")
    cut = pl.col("t").str.contains(_EXEMPLAR, literal=True)
    if frame.select(cut.any()).item():  # (each step only where some line needs it)
        cut = series & cut
        e = pl.col("t").str.split_exact(_EXEMPLAR, 1).struct.field("field_0")
        frame = frame.with_columns(e=pl.when(cut).then(e)).with_columns(
            b=pl.when(pl.col("e").str.contains(_LAST_NUMBER_RX))
            .then(pl.col("e"))
            .otherwise(pl.col("t"))
        )
    else:
        frame = frame.with_columns(b=pl.col("t"))
    frame = frame.with_columns(n=pl.col("b").str.extract(_LAST_NUMBER_RX)).with_columns(
        b=pl.col("b").str.strip_suffix(pl.col("n").fill_null(""))
    )
    # a timestamp last: the text before it ends in a number too (its last character a digit)
    maybe = pl.col("n").is_not_null() & pl.col("b").str.contains("[0-9]$")
    if frame.select(maybe.any()).item():
        maybe = series & maybe
        frame = frame.with_columns(
            v=pl.when(maybe).then(pl.col("b").str.extract(_LAST_NUMBER_RX))
        ).with_columns(
            stamped=pl.col("v").is_not_null(),
            s=pl.col("b").str.strip_suffix(pl.col("v").fill_null("")),
            n=pl.coalesce("v", "n"),
            ts=pl.when(pl.col("v").is_not_null()).then(pl.col("n").str.slice(1)),
        )
    else:
        frame = frame.rename({"b": "s"}).with_columns(
            stamped=pl.lit(False), ts=pl.lit(None, pl.String)
        )
    found = frame.with_columns(
        f=pl.col("n").str.slice(1).cast(pl.Float64, strict=False)
    ).with_columns(unread=pl.col("f").is_null() & pl.col("n").is_not_null())
    return _Split(
        t,
        found["s"],
        found["n"],
        found["ts"],
        found["f"].to_numpy(),
        found["unread"].to_numpy(),
        found["stamped"].to_numpy(),
    )


class _Lines:
    """A chunk's lines as polars columns: the text, the text without a last number, the
    number (with the space before it; null when the line ends in none), and the numbers
    read (`_Split`)."""

    def __init__(self, split: _Split, first: int):
        self.texts, self.shapes, self.numbers = split.texts, split.shapes, split.numbers
        self.stamps, self.stamped = split.stamps, split.stamped
        self.values, self.unread = split.values, split.unread
        self.numbered = split.numbers.is_not_null().to_numpy()
        self.first = first

    def split(
        self, lo: int, hi: int
    ) -> tuple[list[str | None], list[str | None], list[str | None], list[str | None], list[str]]:
        """Lines `lo` to `hi` (not included): a plain series line's name, labels, number
        and timestamp (`_PLAIN_RX`; None for any other line), and the text."""
        import polars as pl

        texts = self.texts.slice(lo, hi - lo)
        parts = texts.to_frame("t").select(
            pl.col("t").str.extract_groups(_PLAIN_RX).struct.unnest()
        )
        return (
            parts["1"].to_list(),
            parts["2"].to_list(),
            parts["3"].to_list(),
            parts["4"].to_list(),
            texts.to_list(),
        )

    def learn(self, reader: Reader, start: int, end: int) -> _Template | None:
        """The template of the lines from one scrape start to the next, the reader having
        read them; None when a block laid out so could not be read in bulk (a line that
        warns, a series line with a special number, a `# scrape` line or a series line after
        `# EOF`, a series twice, a series line whose value or timestamp `_split` did not find
        as `_PLAIN_RX` reads them)."""
        import numpy as np
        import polars as pl

        names, bodies, numbers, stamps, texts = self.split(start, end)
        found = self.numbers.slice(start, end - start).to_list()
        found_stamps = self.stamps.slice(start, end - start).to_list()
        shapes = self.shapes.slice(start, end - start).to_list()
        marker = eof = False
        offsets: list[int] = []
        keys: list[Key] = []
        types: list[tuple[str, str]] = []
        other = 0
        for k, (name, body, text) in enumerate(zip(names, bodies, texts, strict=True)):
            if name is None:
                s = text.strip()
                if not s:
                    continue
                if s.startswith("#"):
                    if _SCRAPE.match(s):
                        if k > 0:
                            return None
                        marker = True
                    elif s.upper().startswith("# EOF"):
                        eof = True
                    elif (typed := _TYPE.match(s)) is not None:
                        types.append((typed["name"], typed["type"].lower()))
                    continue
                m = _SAMPLE.match(s)
                if m is None:
                    if s.startswith(_PREFIXES):
                        return None  # a series of ours without its number: warned
                    continue
                if m["name"].startswith(_PREFIXES) or m["name"] in _START_TIMES:
                    return None  # read by `feed` alone: NaN, labels cut, tabs ...
                other += 1
                continue
            if not name.startswith(_PREFIXES) and name not in _START_TIMES:
                other += 1
                continue
            labels = reader._labels(body)
            if labels is None:  # (a series after `# EOF` would have started a scrape)
                return None
            key = name if body is None else f"{name}{{{body}}}"
            if found[k] != f" {numbers[k]}" or found_stamps[k] != stamps[k] or shapes[k] != key:
                return None  # (a label's text that looks like an exemplar's start)
            offsets.append(k)
            keys.append((name, labels))
        if not keys or len(set(keys)) < len(keys) or not (marker or offsets[0] == 0):
            return None
        return _Template(  # columns of their own: the chunk's buffers are not kept
            pl.Series(texts, dtype=pl.String),
            pl.Series(self.shapes.slice(start, end - start).to_list(), dtype=pl.String),
            np.array([name is not None for name in names], dtype=bool),
            self.numbered[start:end].copy(),
            self.stamped[start:end].copy(),
            marker,
            eof,
            np.array(offsets, dtype=np.int64),
            keys,
            other,
            types,
        )

    def match(
        self, reader: Reader, template: _Template, start: int
    ) -> tuple[int, list[str | None]]:
        """How many blocks from `start` on are laid out as the template (0 when a `# TYPE`
        line of it no longer agrees with the reader), and their `# scrape` times. Compared
        in windows of 1, 2, 4 … blocks, so that the work is of the blocks that match."""
        import numpy as np

        if any(reader._types.get(name) != kind for name, kind in template.types):
            return 0, []
        size = template.n
        most = (len(self.numbered) - start) // size
        done, width = 0, 1
        while done < most:
            w = min(width, most - done)
            at, rows = start + done * size, w * size
            ok = self._alike(template, at, rows)
            if template.marker:
                ok[::size] = True  # checked below, with the time
            bad = np.flatnonzero(~ok)
            if bad.size:
                done += int(bad[0]) // size
                break
            done += w
            width *= 2
        stamps: list[str | None] = []
        if template.marker and done:
            heads = self.texts.gather(start + size * np.arange(done)).to_list()
            for j, head in enumerate(heads):
                s = head.strip()
                m = _SCRAPE.match(s) if s.startswith("#") else None
                if m is None:
                    done = j
                    break
                stamps.append(m["ts"] or None)
        return done, stamps

    def _alike(self, template: _Template, at: int, rows: int) -> npt.NDArray[np.bool_]:
        """Of lines `at` to `at + rows`, which are laid out as the template's lines: the
        same text up to a last number, a last number where the template's line has one,
        and the same whole text where that line is no plain series line but ends in a
        number (a line that ends in none is its text up to a last number)."""
        import numpy as np

        size = template.n
        idx = np.tile(np.arange(size), rows // size)
        same = self.shapes.slice(at, rows).eq_missing(template.shapes.gather(idx)).to_numpy()
        alike: npt.NDArray[np.bool_] = (
            same
            & (self.numbered[at : at + rows] == template.numbered[idx])
            & (self.stamped[at : at + rows] == template.stamped[idx])
        )
        whole = np.flatnonzero(template.numbered & ~template.plain)
        if whole.size:
            pos = (np.arange(0, rows, size)[:, None] + whole[None, :]).ravel()
            texts = self.texts.gather(at + pos)
            alike[pos] &= texts.eq_missing(
                template.texts.gather(np.tile(whole, rows // size))
            ).to_numpy()
        return alike


class _Unlike(Exception):
    """Blocks whose samples the bulk path cannot order as the reader does."""


class _Item(NamedTuple):
    """A sample a closed scrape may give, in the order `Reader._close` gives them: its
    metric, rank, line (offset in the block), value and whether it is given, per block."""

    metric: str
    rank: str | None
    offset: int
    values: npt.NDArray[np.float64]
    given: npt.NDArray[np.bool_] | None


def _times(
    template: _Template, lines: _Lines, starts: npt.NDArray[np.int64], marked: list[str | None]
) -> tuple[list[str | None], list[float | None]]:
    """Each block's scrape time as the reader holds it once the block is read: the
    `# scrape` line's, while it reads as a time; else the timestamp of the first series
    line whose timestamp reads as one (`Reader._series`: a timestamp that does not read is
    held until the next series line's replaces it)."""
    seconds = [epoch_seconds(s) if s else None for s in marked]
    which = template.offsets[template.stamped[template.offsets]]  # series lines with one
    if not len(which) or all(s is not None for s in seconds):
        return marked, seconds
    stamps = list(marked)
    firsts = lines.stamps.gather(starts + which[0]).to_list()
    for j, first in enumerate(firsts):
        if seconds[j] is not None:
            continue
        stamps[j], seconds[j] = first, epoch_seconds(first or "")
        if seconds[j] is None:  # (rare: the block's other timestamps, one by one)
            for ts in lines.stamps.gather(starts[j] + which[1:]).to_list():
                stamps[j], seconds[j] = ts, epoch_seconds(ts or "")
                if seconds[j] is not None:
                    break
    return stamps, seconds


class _Run:
    """`m` blocks from chunk line `start` on, laid out as the template (the reader has read
    the first line: the first block's scrape has started). Each block is one scrape; those
    the next block's start (or a `# EOF`) closes are closed here: what `Reader._close`
    gives for them worked out with numpy, or by `Reader._close` for a scrape that warns,
    restarts or sets something, or whose scrape before is not laid out as it is."""

    def __init__(
        self,
        reader: Reader,
        template: _Template,
        lines: _Lines,
        start: int,
        m: int,
        stamps: list[str | None],
    ) -> None:
        import numpy as np
        import polars as pl

        self.reader, self.t, self.m = reader, template, m
        starts = start + template.n * np.arange(m, dtype=np.int64)
        rows = (starts[:, None] + template.offsets[None, :]).ravel()
        if lines.unread[rows].any():  # (as the reader would have: polars raises)
            values = lines.numbers.gather(rows).str.slice(1).cast(pl.Float64).to_numpy()
        else:  # read as the chunk was split
            values = lines.values[rows]
        self.values = values.reshape(m, len(template.keys))
        self.heads = starts + lines.first  # each block's first line number
        self.stamps, self.seconds = _times(
            template, lines, starts, stamps if template.marker else [None] * m
        )
        dropped = reader._duplicates(template.keys)
        self.kept = [k for k, key in enumerate(template.keys) if key not in dropped]
        self.dropped = len(template.keys) - len(self.kept)

    def scrape(self, j: int, *, kept: bool) -> _Scrape:
        """Block `j`'s scrape as the reader holds it: every series, or the kept ones."""
        head, values = int(self.heads[j]), self.values[j]
        keys, offsets = self.t.keys, self.t.offsets
        which = self.kept if kept else range(len(keys))
        return _Scrape(
            head,
            self.stamps[j],
            self.seconds[j],
            {keys[k]: (float(values[k]), head + int(offsets[k])) for k in which},
        )

    def records(self, pieces: list[pl.DataFrame]) -> Iterator[Record]:
        """Closes the scrapes the run closes; their samples go to `pieces` as one frame
        (those of the scrapes the reader closes among them in their places), any other
        record is given."""
        import numpy as np
        import polars as pl

        reader, t, m = self.reader, self.t, self.m
        ctx = reader.ctx
        # the series lines, less the first block's first (read by the reader already)
        n_series = len(t.keys) * m - (0 if t.marker else 1)
        if n_series:
            ctx.count("series", n_series)
        if t.other:
            ctx.count("other-series", t.other * m)
        closed = m if t.eof else m - 1
        if closed:
            try:
                items, slow, bonus = self._items(closed)
            except _Unlike:
                items, slow, bonus = [], np.ones(closed, dtype=bool), np.zeros(closed, dtype=bool)
            bulk = np.zeros(closed, dtype=bool)
            closed_here: list[tuple[int, list[Sample]]] = []  # by the reader: block, samples
            slow_at = np.flatnonzero(slow)  # (walked once: no rescan a slow block)
            pos = 0
            while pos < closed:
                k = int(np.searchsorted(slow_at, pos))
                end = int(slow_at[k]) if k < len(slow_at) else closed
                if not reader._bonus_said:
                    ahead = np.flatnonzero(bonus[pos:end])
                    if ahead.size:
                        end = pos + int(ahead[0])
                bulk[pos:end] = True
                if end < closed:  # the reader closes this one itself
                    if end > pos:
                        reader._prev = self.scrape(end - 1, kept=True)
                    reader._scrape = self.scrape(end, kept=False)
                    samples = []
                    for rec in reader._close():
                        if isinstance(rec, Sample):
                            samples.append(rec)
                        else:
                            yield rec
                    closed_here.append((end, samples))
                    end += 1
                pos = end
            if bulk[-1]:
                reader._prev = self.scrape(closed - 1, kept=True)
            n_bulk = int(bulk.sum())
            ctx.count("scrape", n_bulk)
            if self.dropped and n_bulk:
                ctx.count("duplicate-rank", self.dropped * n_bulk)
            frame = self._frame(items, bulk)
            if closed_here:
                rows = [s for _, samples in closed_here for s in samples]
                blocks = [j for j, samples in closed_here for _ in samples]
                if rows:
                    # in block order: one stable sort of the two (each in order already)
                    both = pl.concat(
                        [
                            frame,
                            batch_frame(rows).with_columns(
                                block_=pl.Series(blocks, dtype=pl.Int64)
                            ),
                        ]
                    )
                    frame = both.sort("block_", maintain_order=True)
            pieces.append(frame.drop("block_"))
        reader._scrape = None if t.eof else self.scrape(m - 1, kept=False)

    def _items(
        self, closed: int
    ) -> tuple[list[_Item], npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """What the closed blocks give (`_Item`s, as `_gauges` and `_intervals` give them),
        which of them the reader must close itself (a gauge that warns, a restart, the
        first block when the scrape before it holds other series) and which would say
        that the acceptance length counts the bonus token."""
        import numpy as np

        reader, t = self.reader, self.t
        keys = [t.keys[k] for k in self.kept]
        facts = [reader._facts(key) for key in keys]
        offsets = [int(t.offsets[k]) for k in self.kept]
        w = np.empty((closed + 1, len(keys)))
        w[1:] = self.values[:closed, self.kept]
        prev = reader._prev
        slow = np.zeros(closed, dtype=bool)
        if prev is not None and prev.values.keys() == set(keys):
            w[0] = [prev.values[key][0] for key in keys]
        else:
            w[0] = np.nan
            slow[0] = True
        cur, before = w[1:], w[:-1]
        down = [c for c, f in enumerate(facts) if f.restart == "down"]
        changed = [c for c, f in enumerate(facts) if f.restart == "changed"]
        slow |= (cur[:, down] < before[:, down]).any(axis=1)
        slow |= (cur[:, changed] != before[:, changed]).any(axis=1)
        bonus = np.zeros(closed, dtype=bool)
        items: list[_Item] = []
        for c, (key, f) in enumerate(zip(keys, facts, strict=True)):
            metric = _GAUGES.get(key[0])
            if metric is None:
                continue
            v = cur[:, c]
            slow |= ~np.isfinite(v) | (v < 0)  # `value_problem`: warned
            given = None
            if metric == "accept_len":
                given = v != 0
                bonus |= given
            items.append(_Item(metric, f.delta_key[1], offsets[c], v, given))
        # counter and histogram sums per (name, rank, extra label), in the order of `_intervals`
        sums: dict[tuple[str, str | None, str | None], tuple[npt.NDArray[np.float64], int]] = {}
        with np.errstate(all="ignore"):
            for c, f in enumerate(facts):
                if not f.moves:
                    continue
                total, at = sums.get(f.delta_key, (np.zeros(closed), offsets[c]))
                sums[f.delta_key] = ((total + cur[:, c]) - before[:, c], at)
            stamps = [np.nan if prev is None or prev.seconds is None else prev.seconds]
            stamps += [np.nan if s is None else s for s in self.seconds[:closed]]
            secs = np.array(stamps, dtype=np.float64)
            dt = secs[1:] - secs[:-1]
            timed = secs[1:] > secs[:-1]
            gauge_metrics = {_GAUGES[n] for n, _ in keys if n in _GAUGES}
            ranks = sorted({r for _, r, _ in sums}, key=lambda r: (r is not None, r or ""))
            for rank in ranks:
                bonus |= self._rank_items(items, sums, rank, dt, timed, gauge_metrics)
        return items, slow, bonus

    @staticmethod
    def _rank_items(
        items: list[_Item],
        sums: dict[tuple[str, str | None, str | None], tuple[npt.NDArray[np.float64], int]],
        rank: str | None,
        dt: npt.NDArray[np.float64],
        timed: npt.NDArray[np.bool_],
        gauge_metrics: set[str],
    ) -> npt.NDArray[np.bool_]:
        """`Reader._rank_intervals`' samples of one rank as `_Item`s; where it would say
        that the acceptance length counts the bonus token."""
        import numpy as np

        def get(name: str, extra: str | None = None) -> tuple[npt.NDArray[np.float64], int] | None:
            return sums.get((name, rank, extra))

        def add(metric: str, v: npt.NDArray[np.float64], at: int, given: Any = None) -> None:
            items.append(_Item(metric, rank, at, v, given))

        for name, (metric, rate) in _COUNTERS.items():
            got = get(name)
            if got is None:
                continue
            add(metric, got[0], got[1])
            if rate is not None and rate not in gauge_metrics:
                add(rate, got[0] / dt, got[1], timed)
        bonus = np.zeros(len(dt), dtype=bool)
        acc = get("vllm:spec_decode_num_accepted_tokens_total")
        drafts = get("vllm:spec_decode_num_drafts_total")
        tokens = get("vllm:spec_decode_num_draft_tokens_total")
        if acc is not None and drafts is not None:
            bonus = drafts[0] > 0
            add("accept_len", 1 + acc[0] / drafts[0], acc[1], bonus)
            positions = [
                (int(e), v)
                for (n, r, e), v in sums.items()
                if n == _PER_POS and r == rank and e is not None and is_count(e)
            ]
            if len({i for i, _ in positions}) < len(positions):
                # two labels of one position (`1`, `01`): the reader orders them by value
                raise _Unlike
            for i, (accepted, at) in sorted(positions, key=lambda p: p[0]):
                add(f"position_acceptance_rate_{i}", accepted / drafts[0], at, bonus)
        if acc is not None and tokens is not None:
            add("draft_acceptance_rate", acc[0] / tokens[0], acc[1], tokens[0] > 0)
        for hits_name, queries_name in zip(_HITS, _QUERIES, strict=True):
            hits, queries = get(hits_name), get(queries_name)
            if hits is not None and queries is not None:
                add("prefix_cache_hit_rate", hits[0] / queries[0], hits[1], queries[0] > 0)
        seen: dict[str, npt.NDArray[np.bool_]] = {}
        for base, metric in _HISTOGRAMS.items():
            total, count = get(base + "_sum"), get(base + "_count")
            if total is None or count is None:
                continue
            given = ~(count[0] <= 0)  # as the reader's `count <= 0`: a NaN count is given
            if metric in seen:
                given = given & ~seen[metric]
            seen[metric] = seen[metric] | given if metric in seen else given
            add(metric, total[0] / count[0] * 1000, total[1], given)
        return bonus

    def _frame(self, items: list[_Item], bulk: npt.NDArray[np.bool_]) -> pl.DataFrame:
        """The samples of the closed blocks `bulk` marks, as `BATCH_COLUMNS` and `block_`
        (the block's index in the run)."""
        import numpy as np
        import polars as pl

        schema = {**batch_schema(), "block_": pl.Int64}
        which = np.flatnonzero(bulk)
        nb, ni = len(which), len(items)
        if not items or not nb:
            return pl.DataFrame(schema=schema)
        values = np.column_stack([it.values[which] for it in items])
        given = np.ones((nb, ni), dtype=bool)
        for c, it in enumerate(items):
            if it.given is not None:
                given[:, c] = it.given[which]
        keep = given.ravel()
        n = int(keep.sum())
        offsets = np.array([it.offset for it in items], dtype=np.int64)
        metrics = sorted({it.metric for it in items})
        ranks = sorted({it.rank for it in items}, key=lambda r: (r is not None, r or ""))
        metric_codes = np.array([metrics.index(it.metric) for it in items], dtype=np.uint32)
        rank_codes = np.array([ranks.index(it.rank) for it in items], dtype=np.uint32)
        blocks = np.repeat(which, ni)[keep]
        nulls = pl.Series([None], dtype=pl.Int64).new_from_index(0, n)
        return pl.DataFrame(
            {
                "line": (self.heads[which, None] + offsets[None, :]).ravel()[keep],
                "block": nulls,
                "run": nulls,
                "rank": pl.Series(ranks, dtype=pl.String).gather(np.tile(rank_codes, nb)[keep]),
                "ts": pl.Series(self.stamps, dtype=pl.String).gather(blocks),
                "metric": pl.Series(metrics, dtype=pl.String).gather(
                    np.tile(metric_codes, nb)[keep]
                ),
                "value": values.ravel()[keep],
                "block_": blocks,
            },
            schema=schema,
        )
