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
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from .._lines import Chunk, Line, SourceText
from ..model import Record, Sample, Setting, SummaryItem
from ._fields import epoch_seconds, is_count, read_number, shown, value_problem
from .base import ParseContext, read_lines

format_id = "prometheus"
priority = 20

FAST = True  # tests switch it off to compare with the line-by-line path
FAST_MIN_BYTES = 512 << 10  # smaller chunks are read line by line (polars is not imported)
FAST_CHUNK = 8 << 20

Labels = tuple[tuple[str, str], ...]
Key = tuple[str, Labels]  # a series: metric name and its labels, sorted

_SAMPLE = re.compile(
    r"^(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>(?:[^}\"]|\"(?:[^\"\\]|\\.)*\")*)\})?"
    r"[ \t]+(?P<value>\S+)(?:[ \t]+(?P<ts>\S+))?[ \t]*$"
)
# A series line every reader reads alike, in polars' (Rust) regex syntax: `_SAMPLE`'s name and
# labels, one space, a plain number of ASCII digits (`read_number` reads it as `float` does:
# no special word, no cut, no `\\d` beyond ASCII), no timestamp, nothing around it. Lines of
# it are read in bulk (`_bulk`); any other line goes through `Reader.feed`.
_PLAIN_RX = (
    r'^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{((?:[^}"]|"(?:[^"\\]|\\.)*")*)\})? '
    r"([-+]?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)$"
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
        lowest: dict[Key, int] = {}
        facts = self._facts
        for key in values:
            tp = facts(key).tp_group
            if tp is not None:
                group, rank = tp
                lowest[group] = min(rank, lowest.get(group, rank))
        if not lowest:
            return values
        out: dict[Key, tuple[float, int]] = {}
        for key, v in values.items():
            tp = facts(key).tp_group
            if tp is not None and tp[1] != lowest[tp[0]]:
                self.ctx.count("duplicate-rank")
                continue
            out[key] = v
        return out

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

    Chunks of `FAST_MIN_BYTES` or more are read in bulk (`_bulk`); the rest line by line.
    Both go through one `Reader`: the bulk path only finds the parts of plain series lines
    (and passes over `# HELP` lines) the way `feed` would."""
    reader = Reader(ctx)
    if not FAST:
        yield from read_lines(reader, src)
        return
    for piece in src.chunks(FAST_CHUNK):
        if isinstance(piece, Line):
            yield from reader.feed(piece)
        elif len(piece.data) < FAST_MIN_BYTES:
            for ln in src.chunk_lines(piece):
                yield from reader.feed(ln)
        else:
            yield from _bulk(reader, src, piece)
    yield from reader.finish()


def _bulk(reader: Reader, src: SourceText, chunk: Chunk) -> Iterator[Record]:
    """A chunk's records: its plain series lines (`_PLAIN_RX`) split into name, labels and
    number by one regex pass in polars, `# HELP` lines passed over, every other line fed."""
    import numpy as np
    import polars as pl

    from .._lines import polars_lines

    got = polars_lines(chunk)
    if got is None:  # what polars might not split as `_lines` does: line by line
        for ln in src.chunk_lines(chunk):
            yield from reader.feed(ln)
        return
    t = got[0]
    found = t.to_frame("t").select(
        pl.col("t").str.extract_groups(_PLAIN_RX).struct.unnest(),
        help=pl.col("t").str.starts_with(_HELP),
    )
    names, bodies, numbers = (found[c].to_list() for c in ("1", "2", "3"))
    rest = np.flatnonzero(found["1"].is_null().to_numpy() & ~found["help"].to_numpy())
    texts = dict(zip(rest.tolist(), t.gather(rest).to_list(), strict=True))
    del found, t, got
    first = chunk.first
    count, labels_of, series = reader.ctx.count, reader._labels, reader._series
    for i, name in enumerate(names):
        if name is None:
            text = texts.get(i)
            if text is not None:
                yield from reader.feed(Line(first + i, text))
            continue
        if not name.startswith(_PREFIXES) and name not in _START_TIMES:
            count("other-series")
            continue
        labels = labels_of(bodies[i])
        if labels is None:  # labels `_labels` does not read: `feed` says so
            yield from reader.feed(Line(first + i, _line(name, bodies[i], numbers[i])))
            continue
        done = series(first + i, name, labels, float(numbers[i]), None)
        if done:
            yield from done


def _line(name: str, body: str | None, number: str) -> str:
    """A plain series line from its parts, as it was printed."""
    return f"{name}{{{body}}} {number}" if body is not None else f"{name} {number}"
