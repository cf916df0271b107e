"""`vllm-server`: vLLM's periodic engine lines and speculative-decoding metric lines.

Owns the interval series of a vLLM server log (every generation from 0.4 to 0.33, behind any
prefix), its settings (version, engine config, `non-default args`) and the per-source fact
`accept_len_counts_bonus`; a `vllm bench serve` run printed into the log is handed to that
parser's reader and SpecDecodeWorker stage times to phase-timing's, both by id (`ctx.embed`).
It never evaluates a logged repr (`_literal` reads them).
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ... import _literal
from ..._lines import Chunk, Line, SourceText
from ...model import BlockStart, Record, Sample, Setting, SummaryItem
from .._fields import Field, Read, keyed_fields, lookup_field, read_value, value_problem
from ..base import InlineReader, ParseContext

if TYPE_CHECKING:
    import polars as pl

    from .._blocks import BlockReader
    from .fast import ChunkRun, Fast

format_id = "vllm-server"
priority = 20

FAST = True  # tests switch it off to compare with the line-by-line path
FAST_MIN_BYTES = 512 << 10  # smaller files are read line by line (polars is not imported)
FAST_CHUNK = 12 << 20

# ------------------------------------------------------------------ line markers

_ENGINE_MARK = re.compile(r"Avg (?:prompt|generation) throughput\s*:")
_ENGINE_TAG = re.compile(r"\b(?P<tag>Engine\s+\d+)\s*:\s*")
_AGGREGATED = re.compile(r"\b(?P<n>\d{1,9})\s+Engines\s+Aggregated\s*:\s*")
_SPEC_MARK = re.compile(r"\b(?P<kind>SpecDecoding|Speculative) metrics\s*:\s*")
# `--enable-mfu-metrics` (v1/metrics/perf.py): `Engine 000: MFU: 123.4 TF/s/GPU 1456.7 GB/s/GPU`
# (`/device` from 0.33). A value counts only with its unit after it: a cut one has none.
_MFU_MARK = re.compile(r"\bMFU\s*:\s*")
_MFU_VALUE = re.compile(r"(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>TF|GB)/s/(?:GPU|device)\b")
_MFU_METRIC = {"TF": "decode_tflops_per_gpu", "GB": "read_bw_gb_s"}
# Metric lines of other features that are not read: said once per file, with their count.
_UNREAD = re.compile(r"\b(?P<what>DiffusionDecoding metrics|Iteration\(\d+\))\s*:")
_PREFIX_V0 = re.compile(r"Prefix cache hit rate\s*:\s*(?=GPU\s*:)")
_STAGE_TIMES = "SpecDecodeWorker stage times"
_PHASES = "phase-timing"  # the format that reads the stage-times line
_BENCH = "vllm-bench-serve"  # the format of a benchmark run printed into the log
_VERSION = re.compile(
    r"\bvLLM (?:API )?server version:?\s+v?(?P<ver>\d[\w.+-]*)"
    # 0.20+ start-up logo (the default): `... █▀▄▀█  version 0.33.0`
    r"|█\s+version\s+v?(?P<logo>\d[\w.+-]*)\s*$"
)
_ENGINE_INIT = re.compile(
    r"(?P<what>Initializing an?|Dumping input data for) (?P<v1>V1 )?LLM engine\s*"
    r"\(v(?P<ver>[^)\s]*)\) with config:\s*(?P<cfg>.*)$"
)
_NON_DEFAULT = re.compile(r"\bnon-default args:\s*(?P<d>\{.*)$")
_HTTP_ACCESS = re.compile(r"\bINFO:\s+\S+ - \"[A-Z]+ ")
# `LEVEL MM-DD HH:MM:SS` (every generation: datefmt "%m-%d %H:%M:%S", so no year).
_LEVEL_TS = re.compile(
    r"\b(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+"
    r"(?P<ts>\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)(?=\s|$)"
)
# The same, from a JSON formatter's line (0.32+ `--logging-config.formatter json`), as
# `_lines.clean` unwraps it: `[2026-10-12 08:21:05.417] ERROR message`.
_TS_LEVEL = re.compile(
    r"^\[(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?)\] "
    r"(?P<level>WARNING|ERROR|CRITICAL) "
)
# A literal every match of each regex holds: `feed` searches a line with the regex only
# where the line holds it (a long line fed, an error's, is not searched ten times over).
_LITERAL: dict[re.Pattern[str], str] = {
    _ENGINE_MARK: "throughput",
    _SPEC_MARK: " metrics",
    _PREFIX_V0: "Prefix cache hit rate",
    _ENGINE_INIT: "LLM engine",
    _NON_DEFAULT: "non-default args:",
    _VERSION: "version",
    _HTTP_ACCESS: "INFO:",
}


def _found(rx: re.Pattern[str], text: str) -> re.Match[str] | None:
    """`rx.search(text)`, searched only where the line holds the regex's `_LITERAL`."""
    return rx.search(text) if _LITERAL[rx] in text else None


# Fallback for custom logging configs: any dated or time-of-day stamp (docker `-t` too).
_ANY_TS = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2}\b)?"
)
_FILE_LINE = re.compile(r"\[?[\w./-]+\.py:\d+\]\s*")

# ------------------------------------------------------------------ field catalogs

# Engine-line label (lower case) -> (metric, kind, fixed decimals). Kinds: "num" as printed,
# "pct" a percentage stored as a fraction. Unknown labels are reported once and skipped.
_ENGINE_FIELDS: dict[str, tuple[str, str, int]] = {
    "avg prompt throughput": ("prompt_throughput_tok_s", "num", 1),
    "avg generation throughput": ("gen_throughput_tok_s", "num", 1),
    "running": ("running_req", "num", 0),
    "waiting": ("waiting_req", "num", 0),
    "pending": ("waiting_req", "num", 0),  # V0 calls the waiting queue "Pending"
    "swapped": ("swapped_req", "num", 0),
    "deferred": ("deferred_req", "num", 0),
    "corrupted": ("corrupted_req", "num", 0),
    "preemptions": ("preemptions", "num", 0),
    "prefix cache hit rate": ("prefix_cache_hit_rate", "pct", 1),
    "external prefix cache hit rate": ("external_prefix_cache_hit_rate", "pct", 1),
    "mm cache hit rate": ("mm_cache_hit_rate", "pct", 1),
}
# Engine fields every version prints a unit after (`tokens/s`, `reqs`; a percentage its
# `%`): a line that ends where the unit should stand broke inside the field (a wrapped or
# cut copy).
_WITH_UNIT = frozenset(
    {
        "prompt_throughput_tok_s",
        "gen_throughput_tok_s",
        "running_req",
        "waiting_req",
        "swapped_req",
        "deferred_req",
        "corrupted_req",
    }
)
_KV_USAGE = re.compile(r"(?:^|\W)(?P<dev>[A-Za-z0-9_]+) KV cache usage$", re.I)
_KV_FETCH = ("kv_fetch_waiting_req", "kv_fetch_in_progress_req", "kv_fetch_completed_waiting_req")
# The fields that say whether anything happened in the interval (see `_idle`).
_ACTIVITY = ("prompt_throughput_tok_s", "gen_throughput_tok_s", "running_req", "waiting_req")

# Spec-line label -> (metric, kind, fixed decimals). "rate" is a percentage when a `%`
# follows (V1 `SpecDecoding`), else a fraction (V0 and early V1 `Speculative metrics`).
_SPEC_FIELDS: dict[str, tuple[str, str, int]] = {
    "draft acceptance rate": ("draft_acceptance_rate", "rate", 1),
    "avg draft acceptance rate": ("draft_acceptance_rate", "rate", 1),
    "mean acceptance length": ("accept_len", "num", 2),
    "accepted throughput": ("accepted_throughput_tok_s", "num", 2),
    "drafted throughput": ("drafted_throughput_tok_s", "num", 2),
    "accepted": ("accepted_tokens", "num", 0),
    "drafted": ("drafted_tokens", "num", 0),
    "number of accepted tokens": ("accepted_tokens", "num", 0),
    "number of draft tokens": ("drafted_tokens", "num", 0),
    "number of emitted tokens": ("emitted_tokens", "num", 0),
    "number of speculative tokens": ("num_speculative_tokens", "num", 0),
    "system efficiency": ("system_efficiency", "num", 3),
    "per-position acceptance rate": ("position_acceptance_rate", "list", 3),
}
# Fields only V0's cumulative line prints (early V1 reused its "Speculative metrics:" title).
_V0_ONLY = {"system_efficiency", "emitted_tokens", "num_speculative_tokens"}
_COUNTERS = ("accepted_tokens", "drafted_tokens", "emitted_tokens")
# Fields of the 0.10.2+ line (vLLM PR #24127, 2025-09), long after the bonus token was
# added to the mean acceptance length (PR #17908, 2025-05, first released in 0.9.0).
_BONUS_ERA = {"accepted_throughput_tok_s", "drafted_throughput_tok_s", "avg draft acceptance rate"}


# ------------------------------------------------------------------ keyed fields


def _short(label: str) -> str:
    """A label without the line prefix a first field may carry (`INFO ... ] Running`)."""
    for sep in ("] ", ": "):
        at = label.rfind(sep)
        if at >= 0:
            label = label[at + len(sep) :]
    return label


def bonus_from_version(ver: str) -> bool | None:
    """Whether `Mean acceptance length` counts the bonus token, by release (None: unknown).

    0.8.5 printed accepted/drafts; vLLM PR #17908 (2025-05-09) made it 1 + accepted/drafts
    from 0.9.0 on. Dev builds made after 0.8.5 and before 0.9.0 (`0.8.6.devN`) may be
    either. A local tag (`0.8.5+cu118`) is a release build.
    """
    m = re.match(r"v?(\d{1,9})\.(\d{1,9})(?:\.(\d{1,9}))?", ver)
    if m is None:
        return None
    base = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
    if base >= (0, 9, 0):
        return True
    after_085 = base > (0, 8, 5) or (base == (0, 8, 5) and "post" in ver)
    if "dev" in ver and after_085:
        return None
    return False


# ------------------------------------------------------------------ the reader


@dataclass
class _Bonus:
    value: bool
    line: int
    why: str


class Reader:
    """Line-level state machine for a vLLM server log: `feed` each line, then `finish`.

    Embeddable: another parser may feed it the lines it recognises (`wants`); `claimed`
    says whether the last fed line was a vLLM record.
    """

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.claimed = False
        self._rank: str | None = None  # tag of the last engine line (a spec line takes it)
        self._idle = False  # whether the last engine line was an idle interval
        self._engine_started = False  # a V0 engine start was seen: counters start at zero
        self._engine_v0: bool | None = None  # from the engine init line
        self._k: int | None = None  # number of speculative tokens, from the config
        self._cumulative: dict[tuple[str | None, str], float] = {}
        self._version: str | None = None
        self._starts: list[int] = []  # the line of every server start
        self._start_done = 0  # engine and spec lines counted at the last start
        self._config_seen = False
        self._settings_done: set[str] = set()
        self._unknown: set[str] = set()
        self._unread_kinds: set[str] = set()  # metric lines of features not read, said once
        self._bonus: _Bonus | None = None
        self._bonus_clash = False
        self._accept_line: int | None = None  # first line with a mean acceptance length
        self._derived_line: int | None = None  # first V0 accept_len derived from counters
        self._idle_count = 0
        self._idle_first: int | None = None
        self._baseline_noted = False
        self._error_run = False
        self._stages: InlineReader | None = None  # phase-timing's reader, at a stage line

    # ---------------------------------------------------------------- public

    def wants(self, text: str) -> bool:
        """Cheap test: whether `feed` could read anything from this line."""
        return (
            "throughput" in text
            or "metrics" in text
            or "Prefix cache hit rate" in text
            or "LLM engine" in text
            or "vLLM" in text
            or "non-default args" in text
            or "ERROR" in text
            or "CRITICAL" in text
        )

    def feed(self, ln: Line) -> Iterator[Record]:
        """Records of one line."""
        text = ln.text
        self.claimed = True
        # (each regex only where the line holds its `_LITERAL`)
        level = _LEVEL_TS.search(text) or (_TS_LEVEL.match(text) if text[:1] == "[" else None)
        is_error = level is not None and level.group("level") in ("ERROR", "CRITICAL")
        if level is not None and is_error and not self._error_run:
            self._server_error(ln, text, level)
        self._error_run = is_error
        m = _found(_ENGINE_MARK, text)
        if m is not None:
            yield from self._engine(ln, m.start())
            return
        s = _found(_SPEC_MARK, text)
        if s is not None:
            yield from self._spec(ln, s)
            return
        if "MFU" in text:
            f = _MFU_MARK.search(text)
            if f is not None:
                yield from self._mfu(ln, f)
                return
        u = _UNREAD.search(text) if "Iteration(" in text or "DiffusionDecoding" in text else None
        if u is not None:
            self._unread_line(ln, u.group("what"))
            return
        p = _found(_PREFIX_V0, text)
        if p is not None:
            yield from self._prefix_v0(ln, p.end())
            return
        if _STAGE_TIMES in text:
            # phase-timing owns the stage-times line; its reader reads it, so that a V0
            # server log keeps draft/scoring/verification times
            if self._stages is None:
                self._stages = self.ctx.embed_inline(_PHASES)
            self.ctx.embedded.add(_PHASES)
            yield from self._stages.feed(ln)
            return
        i = _found(_ENGINE_INIT, text)
        if i is not None:
            yield from self._engine_init(ln, i)
            return
        d = _found(_NON_DEFAULT, text)
        if d is not None:
            yield from self._settings_text(ln, d.group("d"), "non-default args", dict_repr=True)
            return
        v = _found(_VERSION, text)
        if v is not None:
            yield from self._set_version(ln, v.group("ver") or v.group("logo"))
            return
        if _found(_HTTP_ACCESS, text):
            self.ctx.count("http-access")
        else:
            self.ctx.count("ignored")
        self.claimed = False

    def _mfu(self, ln: Line, mark: re.Match[str]) -> Iterator[Record]:
        """An MFU line: estimated TFLOP/s and memory bandwidth per device."""
        text = ln.text
        self.ctx.count("mfu")
        tags = list(_ENGINE_TAG.finditer(text, 0, mark.start() + 1))
        rank = " ".join(tags[-1].group("tag").split()) if tags else None
        ts = self._ts(text, mark.start())
        seen = 0
        for v in _MFU_VALUE.finditer(text, mark.end()):
            seen += 1
            yield Sample(
                _MFU_METRIC[v.group("unit")], float(v.group("num")), ln.no, rank=rank, ts=ts
            )
        if seen < 2 and ln.cut:
            self._cut(ln, "MFU line", "the last value", text[mark.end() :][-20:])
        elif seen == 0:
            self.ctx.warn(ln.no, "unparsed-line", "MFU line: no value with its unit could be read")

    def _unread_line(self, ln: Line, what: str) -> None:
        kind = "iteration details" if what.startswith("Iteration") else what
        self.ctx.count(f"unread:{kind}")
        if kind in self._unread_kinds:
            return
        self._unread_kinds.add(kind)
        self.ctx.warn(
            ln.no,
            "unparsed-line",
            f"vLLM {kind} lines are not read (first here; the record counts say how many)",
        )

    def finish(self) -> Iterator[Record]:
        """Records owed at the end: the bonus-token fact, idle and baseline notes."""
        if self._starts:
            yield SummaryItem("launch_lines", list(self._starts))
        if self._idle_count:
            self.ctx.warn(
                self._idle_first,
                "idle-interval",
                f"{self._idle_count} idle engine interval(s) (no request running or "
                "waiting, 0 tokens/s) were not taken as samples",
            )
        if self._accept_line is None and self._derived_line is None:
            return
        if self._bonus is not None:
            yield Setting("accept_len_counts_bonus", self._bonus.value, self._bonus.line)
            if self._derived_line is not None:
                yield Setting("accept_len_derived", True, self._derived_line)
        elif self._accept_line is not None:
            why = (
                f"vLLM {self._version} is a build that may count it either way"
                if self._version
                else "no vLLM version line"
            )
            self.ctx.warn(
                self._accept_line,
                "accept-len-bonus-unknown",
                "whether this log's mean acceptance length counts the bonus token "
                f"cannot be told ({why}, and no complete per-position rates to check "
                "it against); accept_len is kept as printed, compare it with care",
            )

    # ---------------------------------------------------------------- helpers

    def _ts(self, text: str, end: int) -> str | None:
        m = _LEVEL_TS.search(text, 0, end)
        if m is not None:
            return " ".join(m.group("ts").split())
        t = _ANY_TS.search(text, 0, end)
        return t.group() if t is not None else None

    def _finite(self, value: float, line: int, what: str) -> bool:
        """Whether a value can be a sample; `nan%` (no drafts in the interval) is counted,
        an infinite or negative one is a diagnostic (`_fields.value_problem`)."""
        problem = value_problem(value)
        if problem is None:
            return True
        if math.isnan(value):
            self.ctx.count("nan-value")
            return False
        self.ctx.count(problem)
        why = "not a finite number" if problem == "non-finite-value" else "below zero"
        self.ctx.warn(line, problem, f"{what} is {value} ({why}); no sample taken")
        return False

    def _unknown_field(self, ln: Line, what: str, key: str) -> None:
        tag = f"{what}:{key}"
        if tag in self._unknown or not key:
            return
        self._unknown.add(tag)
        self.ctx.warn(ln.no, "unknown-field", f"{what} field {key!r} is not known; skipped")

    def _cut(self, ln: Line, what: str, key: str, raw: str) -> None:
        self.ctx.warn(
            ln.no, "truncated-value", f"{what}: {key} is cut ({raw.strip()!r}); no sample taken"
        )

    def _server_error(self, ln: Line, text: str, level: re.Match[str]) -> None:
        rest = text[level.end() :]
        fl = _FILE_LINE.match(rest.lstrip())
        msg = rest.lstrip()[fl.end() :] if fl else rest.strip()
        # a JSON formatter's record holds the traceback too, on the same line
        msg = msg.split(" Traceback (most recent call last):", 1)[0]
        self.ctx.warn(ln.no, "server-error", f"the server logged an error: {msg.strip()[:160]!r}")

    def _note_bonus(self, value: bool, line: int, why: str) -> None:
        if self._bonus is None:
            self._bonus = _Bonus(value, line, why)
        elif self._bonus.value != value and not self._bonus_clash:
            self._bonus_clash = True
            self.ctx.warn(
                line,
                "mixed-accept-len",
                f"this line's mean acceptance length {'counts' if value else 'omits'}"
                f" the bonus token ({why}), unlike line {self._bonus.line} "
                f"({self._bonus.why}); the setting keeps the first",
            )

    # ---------------------------------------------------------------- engine lines

    def _engine(self, ln: Line, marker: int) -> Iterator[Record]:
        text = ln.text
        self.ctx.count("engine")
        start = 0
        rank: str | None = None
        tags = list(_ENGINE_TAG.finditer(text, 0, marker + 1))
        tag = tags[-1] if tags else None
        if tag is not None:
            rank = " ".join(tag.group("tag").split())
            start = tag.end()
        agg = _AGGREGATED.search(text, 0, marker + 1)
        if agg is not None:
            start = max(start, agg.end())
            if "aggregated_engines" not in self._settings_done:
                self._settings_done.add("aggregated_engines")
                yield Setting("aggregated_engines", int(agg.group("n")), ln.no)
        ts = self._ts(text, marker)
        samples: list[Sample] = []
        values: dict[str, float] = {}
        kv: list[tuple[str, float]] = []
        kv_at: list[int] = []
        for f in keyed_fields(text, start):
            end = f.start + len(f.value)
            if f.key.endswith("kv fetch"):
                samples.extend(self._kv_fetch(ln, f, rank, ts))
                continue
            dev = _KV_USAGE.search(" ".join(f.label.split()))
            entry = ("kv_cache_usage", "pct", 1) if dev else lookup_field(f.key, _ENGINE_FIELDS)
            if entry is None:
                self._unknown_field(ln, "engine line", _short(f.label))
                continue
            metric, kind, decimals = entry
            r, stop = read_value(text, f.start, end, ln, decimals)
            unit = kind == "pct" or metric in _WITH_UNIT
            if r.value is not None and unit and text[stop:end].strip() in ("", "."):
                r = Read(None, True, False)  # the line ends where the unit should be
            if r.value is None:
                if r.cut:
                    self._cut(ln, "engine line", _short(f.label), f.value)
                else:
                    self.ctx.warn(
                        ln.no,
                        "unparsed-line",
                        f"engine line: {_short(f.label)} value "
                        f"{f.value.strip()[:30]!r} "
                        "cannot be read",
                    )
                continue
            value = r.fraction if kind == "pct" else r.value
            assert value is not None
            if dev is not None:
                # named once every device on the line is known; kept in printed order
                kv.append((dev.group("dev"), value))
                kv_at.append(len(samples))
                metric = ""
            else:
                values[metric] = value
            samples.append(Sample(metric, value, ln.no, None, None, rank, ts))
        for at, (name, _), (metric, value) in zip(kv_at, kv, self._kv_metrics(kv), strict=True):
            if not metric:
                self._unknown_field(ln, "engine line", f"{name} KV cache usage")
                continue
            values[metric] = value
            samples[at] = Sample(metric, value, ln.no, None, None, rank, ts)
        if kv and "kv_cache_device" not in self._settings_done:
            self._settings_done.add("kv_cache_device")
            yield Setting("kv_cache_device", kv[0][0], ln.no)
        self._rank = rank
        idle = _idle(values)
        if idle is None and ln.cut:
            self._idle = True
            self.ctx.warn(
                ln.no,
                "truncated-value",
                "engine line is cut before it shows whether the interval was idle; no sample taken",
            )
            return
        self._idle = bool(idle)
        if self._idle:
            self._idle_count += 1
            self._idle_first = self._idle_first or ln.no
            self.ctx.count("idle")
            return
        yield from (
            s
            for s in samples
            if s.metric and self._finite(s.value, ln.no, f"engine line: {s.metric}")
        )

    @staticmethod
    def _kv_metrics(kv: list[tuple[str, float]]) -> Iterator[tuple[str, float]]:
        # One device: it is the KV cache (0.33 names it). V0 prints GPU and CPU: the CPU one
        # is swap space, kept apart.
        if len(kv) == 1:
            yield "kv_cache_usage", kv[0][1]
            return
        main = next((i for i, (d, _) in enumerate(kv) if d.upper() != "CPU"), 0)
        for i, (dev, value) in enumerate(kv):
            if i == main:
                yield "kv_cache_usage", value
            else:  # a third device has no metric name: "" makes it an unknown field
                yield ("cpu_kv_cache_usage" if dev.upper() == "CPU" else ""), value

    def _kv_fetch(self, ln: Line, f: Field, rank: str | None, ts: str | None) -> list[Sample]:
        # `KV fetch: %d waiting to start, %d in progress, %d completed waiting` (0.33)
        text, out = ln.text, []
        labels = ("waiting to start", "in progress", "completed waiting")
        pos, end = f.start, f.start + len(f.value)
        for metric, label in zip(_KV_FETCH, labels, strict=True):
            r, after = read_value(text, pos, end, ln, 0)
            if r.value is None:
                if r.cut:
                    self._cut(ln, "engine line", f"KV fetch {label}", text[pos:end])
                break
            nxt = text.find(", ", after, end)
            said = text[after : end if nxt < 0 else nxt]
            # the number's own label must follow (a cut line may hold only its start)
            if not (said == " " + label or (ln.cut and nxt < 0 and (" " + label).startswith(said))):
                break
            out.append(Sample(metric, r.value, ln.no, None, None, rank, ts))
            if nxt < 0:
                break
            pos = nxt + 2
        return out

    def _prefix_v0(self, ln: Line, start: int) -> Iterator[Record]:
        # V0: `Prefix cache hit rate: GPU: %.2f%%, CPU: %.2f%%`, logged after its engine line.
        self.ctx.count("prefix-cache")
        if self._idle:
            return
        ts = self._ts(ln.text, start)
        names = {"gpu": "prefix_cache_hit_rate", "cpu": "cpu_prefix_cache_hit_rate"}
        for f in keyed_fields(ln.text, start):
            metric = names.get(f.key)
            if metric is None:
                self._unknown_field(ln, "prefix cache line", f.label)
                continue
            r, _ = read_value(ln.text, f.start, f.start + len(f.value), ln, 2)
            if r.value is None:
                if r.cut:
                    self._cut(ln, "prefix cache line", f.label, f.value)
                continue
            value = r.fraction
            if value is not None and self._finite(value, ln.no, f"prefix cache line: {metric}"):
                yield Sample(metric, value, ln.no, None, None, self._rank, ts)

    # ---------------------------------------------------------------- spec lines

    def _spec(self, ln: Line, m: re.Match[str]) -> Iterator[Record]:
        text = ln.text
        self.ctx.count("spec")
        titled_v1 = m.group("kind") == "SpecDecoding"
        ts = self._ts(text, m.start())
        rank = self._rank
        read: dict[str, float] = {}
        positions: list[float] = []
        positions_whole = False
        keys: set[str] = set()
        for f in keyed_fields(text, m.end()):
            entry = lookup_field(f.key, _SPEC_FIELDS)
            if entry is None:
                self._unknown_field(ln, "spec line", f.label)
                continue
            metric, kind, decimals = entry
            keys.add(metric)
            keys.add(f.key)
            end = f.start + len(f.value)
            if kind == "list":
                positions, positions_whole = self._positions(ln, f, end)
                continue
            if kind == "rate" and not titled_v1:
                decimals = 3  # "Speculative metrics:" prints its rates `{:.3f}`
            r, _ = read_value(text, f.start, end, ln, decimals)
            if r.value is None:
                if r.cut:
                    self._cut(ln, "spec line", f.label, f.value)
                continue
            # `SpecDecoding` prints its rate `%.1f%%`; a cut line may have lost the `%` only.
            value = r.fraction if kind == "rate" and (r.pct or titled_v1) else r.value
            assert value is not None
            read[metric] = value
        cumulative = not titled_v1 and (bool(keys & _V0_ONLY) or (self._engine_v0 is True))
        k = read.pop("num_speculative_tokens", None)
        if k is not None and k > 0 and k.is_integer():
            self._k = int(k)
            if "speculative_num_steps" not in self._settings_done:
                self._settings_done.add("speculative_num_steps")
                yield Setting("speculative_num_steps", int(k), ln.no)
        elif k is not None:  # inf, nan, 0, -2, 2.5: no count of draft tokens
            code = "impossible-value" if math.isfinite(k) else "non-finite-value"
            self.ctx.warn(
                ln.no, code, f"spec line: num_speculative_tokens is {k:g}, not a count; not read"
            )
            k = None
        if cumulative:
            yield from self._spec_v0(ln, read, rank, ts)
            return
        if "accept_len" in read:
            self._accept_line = self._accept_line or ln.no
            self._infer_bonus(ln, read, keys, positions if positions_whole else None)
        if self._idle:
            return
        for metric, value in read.items():
            if self._finite(value, ln.no, f"spec line: {metric}"):
                yield Sample(metric, value, ln.no, None, None, rank, ts)
        for i, value in enumerate(positions):
            if self._finite(value, ln.no, f"spec line: position {i}"):
                yield Sample(f"position_acceptance_rate_{i}", value, ln.no, None, None, rank, ts)

    def _positions(self, ln: Line, f: Field, end: int) -> tuple[list[float], bool]:
        """Per-position rates: `0.983, 0.949, 0.915` (no keys); whether the list is whole."""
        out: list[float] = []
        pos = f.start
        text = ln.text
        while pos < end:
            r, after = read_value(text, pos, end, ln, 3)
            if r.value is None:
                if r.cut:
                    self._cut(ln, "spec line", f"per-position rate {len(out)}", text[pos:end])
                return out, False
            out.append(r.value)
            nxt = text.find(", ", after, end)
            if nxt < 0:
                # whole when the line goes on after the list or is a complete line
                return out, not (ln.cut and end >= len(text))
            pos = nxt + 2
        return out, False

    def _spec_v0(
        self,
        ln: Line,
        read: dict[str, float],
        rank: str | None,
        ts: str | None,
    ) -> Iterator[Record]:
        """V0: counters are cumulative since engine start -> per-interval deltas."""
        deltas: dict[str, float] = {}
        resets: list[str] = []
        for name in _COUNTERS:
            value = read.pop(name, None)
            if value is None or not math.isfinite(value):
                continue
            key = (rank, name)
            prev = self._cumulative.get(key)
            self._cumulative[key] = value
            if prev is None:
                if not self._engine_started:
                    if not self._baseline_noted:
                        self._baseline_noted = True
                        self.ctx.warn(
                            ln.no,
                            "cumulative-baseline",
                            "the first V0 speculative metrics line has no engine start "
                            "before it: its cumulative counters only set the baseline "
                            "for the per-interval deltas",
                        )
                    continue
                prev = 0.0
            elif value < prev:
                resets.append(f"{name} {prev:g} -> {value:g}")
                prev = 0.0
            deltas[name] = value - prev
        if resets:
            self.ctx.warn(
                ln.no,
                "counter-reset",
                f"cumulative counters went down ({', '.join(resets)}): the engine "
                "restarted; deltas restart from zero",
            )
        if self._idle:
            return
        for metric, value in read.items():  # the rates, as printed
            if self._finite(value, ln.no, f"spec line: {metric}"):
                yield Sample(metric, value, ln.no, None, None, rank, ts)
        for name, delta in deltas.items():
            yield Sample(name, delta, ln.no, None, None, rank, ts)
        steps = self._k  # the line's own count, when it printed a sound one
        emitted, drafted = deltas.get("emitted_tokens"), deltas.get("drafted_tokens")
        if steps and emitted is not None and drafted:
            # Emitted tokens count accepted + bonus tokens; drafted = k per verify cycle, so
            # Δemitted / (Δdrafted / k) is the interval's mean tokens per cycle, bonus included.
            self._derived_line = self._derived_line or ln.no
            self._note_bonus(True, ln.no, "V0: derived as emitted tokens per cycle")
            yield Sample("accept_len", emitted / (drafted / steps), ln.no, None, None, rank, ts)

    def _infer_bonus(
        self, ln: Line, read: dict[str, float], keys: set[str], positions: list[float] | None
    ) -> None:
        al = read["accept_len"]
        if math.isnan(al):
            return
        # accepted/drafts is the sum of the per-position rates (each is accepted at i /
        # drafts), so the printed length tells its own definition, whatever the version.
        if positions:
            expected = sum(positions)
            tol = 0.0051 + 0.0005 * len(positions)
            if abs(al - expected) <= tol:
                self._note_bonus(False, ln.no, "it equals the sum of the per-position rates")
                return
            if abs(al - 1 - expected) <= tol:
                self._note_bonus(True, ln.no, "it is 1 + the sum of the per-position rates")
                return
        acc, drafted = read.get("accepted_tokens"), read.get("drafted_tokens")
        if self._k and acc is not None and drafted:
            expected = acc / (drafted / self._k)
            if abs(al - expected) <= 0.0051:
                self._note_bonus(False, ln.no, "it equals accepted / (drafted / k)")
                return
            if abs(al - 1 - expected) <= 0.0051:
                self._note_bonus(True, ln.no, "it is 1 + accepted / (drafted / k)")
                return
        if keys & _BONUS_ERA:
            self._note_bonus(True, ln.no, "the 0.10.2+ field set")
            return
        if self._version is not None:
            by_version = bonus_from_version(self._version)
            if by_version is not None:
                self._note_bonus(by_version, ln.no, f"vLLM {self._version}")
                return
        if al < 1 - 0.0051:
            self._note_bonus(False, ln.no, "it is below 1")

    # ---------------------------------------------------------------- settings

    def _set_version(self, ln: Line, ver: str) -> Iterator[Record]:
        ver = ver.rstrip(".,;")
        self.ctx.count("version")
        # A version line after engine intervals is a new server start (DESIGN §5 launches);
        # the API server's and the engine's version lines of one start are one.
        done = self.ctx.counts["engine"] + self.ctx.counts["spec"]
        if not self._starts or done > self._start_done:
            self._starts.append(ln.no)
            self._start_done = done
        if self._version is None and ver:
            self._version = ver
            yield Setting("vllm_version", ver, ln.no)

    def _engine_init(self, ln: Line, m: re.Match[str]) -> Iterator[Record]:
        dump = m.group("what").startswith("Dumping")
        yield from self._set_version(ln, m.group("ver"))
        if not dump:
            v0 = m.group("v1") is None
            self._engine_v0 = v0
            yield Setting("vllm_engine", "V0" if v0 else "V1", ln.no)
            # A new engine: V0 counters start again from zero.
            self._engine_started = True
            self._cumulative.clear()
        elif self._config_seen:
            self.ctx.count("crash-dump")
            return  # a crash dump repeats the config already read
        self._config_seen = True
        yield from self._settings_text(ln, m.group("cfg"), "engine config", dict_repr=False)

    def _settings_text(self, ln: Line, text: str, what: str, dict_repr: bool) -> Iterator[Record]:
        self.ctx.count("settings")
        if dict_repr:
            found, cut = _literal.parse_call_or_dict(text)
        else:
            body = text.rstrip().rstrip(",")
            if body.endswith(")") and body.count("(") < body.count(")"):
                body = body[:-1]  # 0.4–0.6 close the config text with a stray `)`
            found, cut = _literal.parse_keyword_text(body, ln.cut)
        if cut:
            self.ctx.warn(
                ln.no,
                "truncated-settings",
                f"the {what} is cut; {len(found)} setting(s) before the cut are kept",
            )
        for key, value in found.items():
            yield Setting(key, value, ln.no)
        yield from self._aliases(ln, found)

    def _aliases(self, ln: Line, found: dict[str, object]) -> Iterator[Record]:
        """The engine-neutral spec settings the economics section reads (DESIGN §6)."""
        if "speculative_config" in found and found["speculative_config"] in (None, "None"):
            yield Setting("speculative_algorithm", None, ln.no)
            return
        method = found.get("speculative_config.method")
        draft = found.get("speculative_config.draft_model")
        if isinstance(method, str):
            yield Setting("speculative_algorithm", method, ln.no)
        elif isinstance(draft, str):  # V0: SpeculativeConfig(draft_model=..., num_spec_tokens=k)
            yield Setting(
                "speculative_algorithm", "ngram" if draft == "[ngram]" else "draft_model", ln.no
            )
        for key in (
            "speculative_config.num_spec_tokens",
            "speculative_config.num_speculative_tokens",
        ):
            k = found.get(key)
            if isinstance(k, int) and not isinstance(k, bool):
                self._k = k
                self._settings_done.add("speculative_num_steps")
                yield Setting("speculative_num_steps", k, ln.no)
                break


def _idle(values: dict[str, float]) -> bool | None:
    """Idle: nothing running, waiting or swapped and 0 tokens/s; None: cannot tell (cut).

    V0 logs such an interval every 5 s while the server waits, and V1 logs it at DEBUG;
    averaging them would measure the idle time, not the engine. An interval with requests
    finishing (0 running but tokens/s > 0) is real and kept.
    """
    if any(v != 0 for m, v in values.items() if m in _ACTIVITY or m == "swapped_req"):
        return False
    if all(m in values for m in _ACTIVITY):
        return True
    return None


# ------------------------------------------------------------------ module protocol

_STRONG = re.compile(
    r"Avg (?:prompt|generation) throughput: [\d.]+ tokens/s"
    r"|SpecDecoding metrics:|Speculative metrics: Draft acceptance rate"
)
_WEAK = re.compile(
    r"vLLM (?:API )?server version|Initializing an? (?:V1 )?LLM engine \(v"
    r"|non-default args: \{|\((?:APIServer|EngineCore(?:_DP\d+)?) pid=\d+\)"
)
# Other formats' decisive markers: a file holding them belongs to their parser.
_OTHERS = re.compile(
    r"Serving Benchmark Result|Decode batch|Prefill batch|Run\s+\d+\s*/\s*\d+\s*:"
    r"|Offline Throughput Benchmark Result"
)


def sniff(head: str, name: str) -> float:
    """Score: engine or spec metric lines are decisive; startup lines a strong hint."""
    strong = _STRONG.search(head) is not None
    if not strong and _WEAK.search(head) is None:
        return 0.0
    if _OTHERS.search(head):
        return 0.5
    return 1.0 if strong else 0.8


# The start of `vllm bench serve` output printed into the same log: its Namespace dump,
# preamble or block title. Detection only sees the head, so a long server log may hold one.
# `vllm serve` logs its own args as a Namespace with a `dispatch_function` too (0.8.5's
# `args: Namespace(subparser='serve', ...)`): not a benchmark run.
_BENCH_START = re.compile(
    r"=\s*Serving Benchmark Result\s*=|Namespace\((?!.*\bsubparser='serve').*\bdispatch_function="
    r"|^\s*Starting initial single prompt test run"
)


def line_reader(ctx: ParseContext) -> Reader:
    """A reader for vLLM server lines inside another format's source (`ctx.embed`)."""
    return Reader(ctx)


# Every line `Reader.feed` acts on, other than access lines, holds one of these words (its
# markers' and the level check's, a benchmark run's start; checked by a test): the chunk path
# (`fast`) reads the other lines in bulk.
BENCH_WORDS = ("Serving Benchmark", "Namespace(", "Starting initial")
FEED_WORDS = (
    "ERROR",
    "CRITICAL",
    "throughput",
    "metrics",
    "MFU",
    "Iteration(",
    "Prefix cache hit rate",
    _STAGE_TIMES,
    "LLM engine",
    "non-default args",
    "vLLM",
    "version",
    *BENCH_WORDS,
)


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of a vLLM server log, in line order.

    From the first line of a benchmark run printed into the log on, lines go through the
    vllm-bench-serve reader, which reads the block and hands every other line back to this
    log's reader: the block's samples are kept, not dropped for being past the head. A big
    log is read a chunk at a time (`fast`), exactly as line by line; below a benchmark run's
    reader too, a chunk whose every line it would hand back as it is (`_Bench.bulk`).
    """
    reader = Reader(ctx)
    bench = _Bench(ctx, reader)
    for item in _read(src, ctx, reader, bench):
        if not isinstance(item, Line):
            yield item
            continue
        if bench.reader is None:
            text = item.text
            if not (any(w in text for w in BENCH_WORDS) and _BENCH_START.search(text)):
                yield from reader.feed(item)
                continue
            bench.start()
        yield from bench.feed(item)
    if bench.reader is None:
        yield from reader.finish()
    else:
        yield from bench.finish()


class _Bench:
    """A benchmark run printed into the log: from its first line on, its block reader takes
    every line and hands the server's back to this log's reader (`server`)."""

    def __init__(self, ctx: ParseContext, server: Reader) -> None:
        self.ctx = ctx
        self.server = server
        self.reader: BlockReader | None = None
        self._mine = False  # this log's format marked embedded before the run started

    def start(self) -> None:
        from .._blocks import BlockReader

        reader = self.ctx.embed(_BENCH, server=self.server)
        assert isinstance(reader, BlockReader)
        self.reader = reader
        self._mine = format_id in self.ctx.embedded

    def feed(self, ln: Line) -> Iterator[Record]:
        assert self.reader is not None
        for rec in self.reader.feed(ln):
            if isinstance(rec, BlockStart):
                self.ctx.embedded.add(_BENCH)
            yield rec

    def finish(self) -> Iterator[Record]:
        assert self.reader is not None
        for rec in self.reader.finish():
            if isinstance(rec, BlockStart):
                self.ctx.embedded.add(_BENCH)
            yield rec
        if not self._mine:
            self.ctx.embedded.discard(format_id)  # the block reader marks its embedded one so

    def bulk(self, t: pl.Series) -> bool:
        """Whether a chunk's lines (`t`) can be read in bulk by this log's reader below the
        run's: the run's reader holds nothing and would hand every one back as it is."""
        reader = self.reader
        return (
            reader is not None
            and reader.embedded is self.server
            and reader.passes_through
            and bool(reader.passing(t).all())
        )


def _read(
    src: SourceText, ctx: ParseContext, reader: Reader, bench: _Bench
) -> Iterator[Record | Line]:
    """The records of the chunks read in bulk, and the lines to read one by one (those of
    small files, of a chunk polars cannot split exactly, the cut last line, and from a
    benchmark run's start on those of every chunk its reader would not hand back whole)."""
    if not FAST:
        yield from src.lines()
        return
    fast: Fast | None = None
    ahead: deque[tuple[Chunk, Future[ChunkRun | None]]] = deque()
    try:
        for piece in src.chunks(FAST_CHUNK):
            big = isinstance(piece, Chunk) and (
                fast is not None or len(piece.data) >= FAST_MIN_BYTES
            )
            if big:
                assert isinstance(piece, Chunk)
                if fast is None:
                    from .fast import Fast

                    fast = Fast(reader, ctx)
                ahead.append((piece, fast.prepare(piece)))
                if len(ahead) > AHEAD:
                    yield from _walk(src, reader, bench, *ahead.popleft())
                continue
            while ahead:
                yield from _walk(src, reader, bench, *ahead.popleft())
            if isinstance(piece, Line):
                yield piece
            else:
                yield from src.chunk_lines(piece)
        while ahead:
            yield from _walk(src, reader, bench, *ahead.popleft())
    finally:
        if fast is not None:
            fast.close()


AHEAD = 2  # chunks prepared on worker threads while one is walked


def _walk(
    src: SourceText,
    reader: Reader,
    bench: _Bench,
    chunk: Chunk,
    prepared: Future[ChunkRun | None],
) -> Iterator[Record | Line]:
    """A prepared chunk's records; its lines, when it could not be prepared or a benchmark
    run's reader takes them (`_Bench.bulk`), and from the line a benchmark run starts at on.
    Below a run's reader, the lines read in bulk are counted as it counts the lines it hands
    back (`BlockReader.passed`)."""
    from .fast import Bench

    run = prepared.result()
    if run is None or (bench.reader is not None and not bench.bulk(run.t)):
        yield from src.chunk_lines(chunk)
        return
    for item in run.run(reader):
        if isinstance(item, Bench):
            if bench.reader is not None:
                bench.reader.passed(item.row)
            yield from src.chunk_lines(chunk)[item.row :]
            return
        yield item
    if bench.reader is not None:
        bench.reader.passed(run.n)
