"""The chunk path of `vllm-server`: a big log read a chunk at a time with polars, exactly as
`Reader.feed` reads it line by line (held equal to it by a test on every fixture and shape).

Owns the layouts of engine, SpecDecoding and MFU lines (a line's shape learned as a regex and
checked by reading that line, and a copy with other values, with `Reader`), the chunk walk and
the bulk hand-over of samples. It restates no rule of the reader: the lines the reader acts
on are its `FEED_WORDS`, each sample is matched to the number it is by reading with `Reader`,
and the reader's state (the engine a spec line belongs to, idle intervals, the bonus-token
inference, the settings and notes said once) stays the reader's: a line that would change it
beyond counts goes to `feed`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from ... import _learning, _lines
from ..._lines import Chunk, Line
from ...model import BATCH_COLUMNS, Record, Sample, SampleBatch, batch_columns
from .._fields import VALUE_NUMBER, keyed_fields, lookup_field
from .._fields import regex_literal as _rx
from ..base import ParseContext
from . import (
    _ACTIVITY,
    _AGGREGATED,
    _ANY_TS,
    _BENCH_START,
    _BONUS_ERA,
    _COUNTERS,
    _ENGINE_MARK,
    _ENGINE_TAG,
    _HTTP_ACCESS,
    _LEVEL_TS,
    _MFU_MARK,
    _MFU_VALUE,
    _PHASES,
    _PREFIX_V0,
    _SPEC_FIELDS,
    _SPEC_MARK,
    _STAGE_TIMES,
    _V0_ONLY,
    BENCH_WORDS,
    FEED_WORDS,
    Reader,
    _Bonus,
    _found,
    bonus_from_version,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import polars as pl

# Read line by line, a day-long vLLM log costs minutes of Python (~0.3 s per MB). The chunk
# path reads a whole chunk with polars and leaves to `Reader.feed` only the lines it cannot
# prove it reads the same way:
# - a chunk's lines are `_lines.polars_lines`; a line holding a character beyond ASCII other
#   than a plain symbol or punctuation mark (`_ODD_CHAR_RX`) goes to `feed` (no regex here
#   then meets a character Python and polars class differently);
# - a line holding none of `FEED_WORDS` is an access line (counted) or an ignored one (one
#   beyond plain, a request log's prompt in any script, told by the reader's own regex);
# - an engine, SpecDecoding or MFU line, and V0's prefix-cache and stage-times lines, are
#   read by a layout: a regex learned from such a line that pins its text, each number that
#   is no value a run of digits of its width, each value a number with the decimals
#   printed; the learned line and a copy with other values read by `Reader` give what the
#   layout gives, so every line the layout matches does;
# - an iteration-details or diffusion line of a kind already said is counted;
# - any other line holding one of the words goes to `feed`, and so does a line that would
#   change the reader's state beyond counts: a setting said once (the aggregated engines, the
#   KV cache device), a kind of line first said, a field the reader does not know first
#   met (its note: a layout may hold such fields), a spec line whose mean acceptance length
#   first tells (or first contradicts) whether it counts the bonus token;
# - a spec or V0 prefix-cache line's engine and idle state are those of the engine line
#   before it, read in bulk or fed; a spec line whose values print `nan` (an idle
#   interval's) is read only while the reader is idle (it gives nothing then), and fed else;
# - a `Speculative metrics` line holds V0's cumulative counters, which the reader differences
#   line by line, when its fields are V0's (a layout of its own: each counter's difference
#   is taken in bulk from the rank's line before, while none goes down and the reader's state
#   gives no note or setting; `ChunkRun._v0_rows`) or an engine line said V0 (fed then);
# - a benchmark run printed into the log ends the chunk's walk: its reader takes the lines
#   from its start on, and a later chunk is walked below it only when it would hand every
#   line of it back to this log's reader as it is (`vllm_server._Bench.bulk`).
# Chunks are split, classified and matched on worker threads; the main thread walks them in
# order, feeding what must be fed, and hands each chunk's samples over in line order.

AHEAD = 2  # chunks prepared at once on worker threads while the main thread walks one
_NUM = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # every number a layout's line holds, in order
# A layout's numbers read with its match (`_Layout.capture`) up to this many; beyond, the
# regex engine leaves its one-pass automaton and capturing costs more than matching and
# then finding the numbers (100,000 spec lines, `POLARS_MAX_THREADS=1`: 16 groups 254 ms
# against 312; 17 groups 432 against 338)
_CAPTURE_MAX = 16
# a `key=value` of the stage-times line (which values phase-timing reads, its reader says)
_STAGE_VALUE = re.compile(r"[A-Za-z_]+=(?P<v>[0-9]+(?:\.[0-9]+)?)(?![^\s])")
_ENGINE, _SPEC, _MFU, _PREFIX, _STAGES = 0, 1, 2, 3, 4
_KINDS = ("engine", "spec", "mfu", "prefix-cache", "stage-times")
# kinds whose lines take the engine and idle state of the engine line before them: a spec
# line, and V0's `Prefix cache hit rate: GPU: 12.50%, CPU: 0.00%`, which follows its engine
# line
_AFTER_ENGINE = (_SPEC, _PREFIX)
# `_HTTP_ACCESS` and `_UNREAD` for plain lines (ASCII, and symbols or punctuation beyond it:
# `_ODD_CHAR_RX`): Python's `\s` is polars' and U+001C-U+001F
_HTTP_RX = r'\bINFO:[\s\x1c-\x1f]+[^\s\x1c-\x1f]+ - "[A-Z]+ '
_UNREAD_RX = r"\b(DiffusionDecoding metrics|Iteration\([0-9]+\))[\s\x1c-\x1f]*:"
_UNREAD_KINDS = ("iteration details", "DiffusionDecoding metrics")  # as `_unread_line` says
# the engine, spec and MFU marks (which `feed` acts on before an unread line's kind)
_MARKS = (
    "throughput|SpecDecoding metrics|Speculative metrics|MFU|Prefix cache hit rate|" + _STAGE_TIMES
)


_FEED_RX = "|".join(_rx(w) for w in FEED_WORDS)
# A character beyond ASCII that Python's `re` and polars' may class differently (`\w`, `\s`,
# `\d`, hence `\b`): any but a symbol or punctuation that is neither a connector (`_`-like)
# nor alphabetic. A line holding one goes to `feed`; a line whose other characters are ASCII
# (a paste's `│ ` or `→ ` before each line, a `✓` in a message) is read like an ASCII one.
_ODD_CHAR_RX = r"[[^\x00-\x7F]--[[\p{S}\p{P}]--\p{Pc}--\p{Alphabetic}]]"


def _plain(text: str) -> bool:
    """Whether a line holds no character `_ODD_CHAR_RX` finds (its test in Python, as strict:
    a symbol that is alphabetic in polars' tables is a letter to neither)."""
    import unicodedata

    def odd(c: str) -> bool:
        kind = unicodedata.category(c)
        return kind[0] not in "SP" or kind == "Pc" or c.isalnum() or c.isspace()

    return text.isascii() or not any(not c.isascii() and odd(c) for c in text)


class _Out(NamedTuple):
    """A sample a layout's line gives: its metric, and which number of the line it is."""

    metric: str
    num: int
    pct: bool  # printed with `%`: the sample is the number / 100, as `Read.fraction` reads it
    dec: int  # the number's decimals as printed


@dataclass(frozen=True, slots=True)
class _Layout:
    """One learned shape of an engine, spec or MFU line."""

    kind: int
    pattern: str
    nums: int  # the numbers `_NUM` finds in a line of it
    outputs: tuple[_Out, ...]  # in the order the reader yields them
    ts: tuple[int, int] | None  # where the timestamp stands (all before it has a pinned width)
    rank: tuple[int, int] | None  # where an engine or MFU line's own engine tag stands
    idle: tuple[int, ...] | None  # engine: the numbers that are all 0 on an idle interval
    aggregated: bool  # engine: `N Engines Aggregated` (a setting, said the first time)
    kv: bool  # engine: names a KV cache device (a setting, said the first time)
    # spec: the numbers of the mean acceptance length, the accepted and drafted counts and
    # the per-position rates, and whether its field set is of the bonus-counting era
    accept: int = -1
    accepted: int = -1
    drafted: int = -1
    positions: tuple[int, ...] = ()
    era: bool = False
    # spec: titled `Speculative metrics` (V0's title, early V1's too), which the reader
    # reads as cumulative counters once an engine line said V0 (fed then)
    v0_title: bool = False
    # where the first value stands (all before it has a pinned width), and the numbers
    # before it: they are not read (none is a value, a rank or an idle mark)
    lead: int = 0
    skip: int = 0
    # `pattern` with a group around each number from the `skip`-th on: the line matched and
    # its numbers read in one pass (`ChunkRun._try`); "" beyond `_CAPTURE_MAX` groups
    capture: str = ""
    # spec: values printed `nan` (an idle interval's line: no sample, read only while the
    # reader is idle; fed else), and whether it names a mean acceptance length
    nan_idle: bool = False
    says_accept: bool = False
    # spec, V0's cumulative counters (`Reader._spec_v0`): each counter's metric and number,
    # in `_COUNTERS` order, and the number of `Number of speculative tokens`; the line's
    # samples are then its rates as printed (`outputs`), each counter's difference from the
    # rank's value before it, and the mean acceptance length that gives (`_cumulative`)
    counters: tuple[tuple[str, int], ...] = ()
    k_num: int = -1
    # the reader's tags of the fields it does not know (`Reader._unknown_field`: noted once
    # a file, each): a line of the layout that would note one first is fed
    unknown: frozenset[str] = frozenset()
    # the literal text every line of the layout starts with (the pattern's, up to its first
    # number): candidates that do not are passed over before the regex (`ChunkRun._try`)
    head: str = ""


# ---------------------------------------------------------------------- learning


def _steady(ctx: ParseContext) -> Reader:
    """A reader in the state the chunk path reads lines in: the settings said, the bonus-token
    fact known and contradicted, an engine line (of rank `R`) read before."""
    r = Reader(ctx)
    r._settings_done |= {"aggregated_engines", "kv_cache_device", "speculative_num_steps"}
    r._bonus = _Bonus(True, 1, "")
    r._bonus_clash = True
    r._accept_line = 1
    r._rank = "R"
    return r


def _read_one(text: str, idle: bool) -> tuple[list[Record], ParseContext, Reader]:
    """What the steady reader (`idle`: after an idle interval) yields from one line, with
    its context (notes, counts) and the reader."""
    ctx = ParseContext(file="")
    reader = _steady(ctx)
    reader._idle = idle
    return list(reader.feed(Line(1, text))), ctx, reader


def _read_alone(text: str, idle: bool = False) -> tuple[list[Record], dict[str, int]]:
    """What the steady reader yields from one line (its notes too), and its counts."""
    records, ctx, _ = _read_one(text, idle)
    return records + list(ctx.diagnostics), dict(ctx.counts)


def _read_noting(
    text: str, idle: bool = False
) -> tuple[list[Record], dict[str, int], frozenset[str]]:
    """`_read_alone`, with the unknown fields' notes left out and their tags given apart
    (those notes come once a file: the walk feeds the line that would give one first)."""
    records, ctx, reader = _read_one(text, idle)
    notes = [d for d in ctx.diagnostics if d.code != "unknown-field"]
    tags = frozenset(reader._unknown) if len(notes) < len(ctx.diagnostics) else frozenset()
    return records + notes, dict(ctx.counts), tags


def _nan_idle(
    text: str,
    kind: int,
    marker: int,
    body: int,
    holes: list[tuple[int, int]],
    v0_title: bool,
    nums: list[re.Match[str]],
    index: dict[tuple[int, int], int],
) -> _Layout | None:
    """The layout of a spec line whose values are printed `nan` but its counts (0.8.5's
    idle interval: `Draft acceptance rate: nan%, Mean acceptance length: nan, Accepted: 0
    tokens, ...`), when the reader after an idle interval reads it, and copies with other
    counts, as a spec line and nothing more: no sample, no note. (`nums`: the line's
    numbers, `_NUM`'s; `index`: each one's number by its span.)"""
    nan = [h for h in holes if text[h[0] : h[1]] == "nan"]
    if kind != _SPEC or not nan or not nums or any(h not in index for h in holes if h not in nan):
        return None
    value_nums = {index[h] for h in holes if h not in nan}
    pattern = _pattern(text, nums, value_nums)
    if re.fullmatch(pattern, text) is None:
        return None
    for copy in [text] + [_renumbered(text, nums, value_nums, seed) for seed in range(2)]:
        if _read_alone(copy, idle=True) != ([], {"spec": 1}):
            return None
    ts = _ts_span(text, marker)
    if ts == (-1, -1):
        return None
    skip = len(nums) - 1  # no number is read: the last one only, to match and slice once
    capture = _pattern(text, nums, value_nums, skip)
    if re.fullmatch(capture, text) is None:
        return None
    return _Layout(
        kind=_SPEC,
        pattern=pattern,
        nums=len(nums),
        outputs=(),
        ts=ts,
        rank=None,
        idle=None,
        aggregated=False,
        kv=False,
        lead=nums[skip].start(),
        skip=skip,
        capture=capture,
        v0_title=v0_title,
        nan_idle=True,
        says_accept="accept_len" in _keys(text, body),
    )


def _learn(text: str) -> _Layout | None:
    """The layout of an engine, spec or MFU line, when `Reader.feed` reads every line of that
    shape alike in the steady state (the walk feeds the lines that leave it)."""
    if not _plain(text) or any(w in text for w in ("ERROR", "CRITICAL", *BENCH_WORDS)):
        return None
    v0_title = False
    m = _ENGINE_MARK.search(text)
    if m is not None:
        kind, marker = _ENGINE, m.start()
        body = max(
            [t.end() for t in _ENGINE_TAG.finditer(text, 0, marker + 1)][-1:]
            + [a.end() for a in _AGGREGATED.finditer(text, 0, marker + 1)][:1]
            + [0]
        )
        holes = _values(text, body)
    elif (s := _SPEC_MARK.search(text)) is not None:
        kind, marker, body = _SPEC, s.start(), s.end()
        v0_title = s.group("kind") != "SpecDecoding"
        if v0_title and _keys(text, body) & _V0_ONLY:
            return _cumulative(text, s.start(), body)  # V0's cumulative counters
        holes = _values(text, body)
    elif "MFU" in text and (f := _MFU_MARK.search(text)) is not None:
        kind, marker, body = _MFU, f.start(), f.end()
        holes = [v.span("num") for v in _MFU_VALUE.finditer(text, body)]
    elif (p := _PREFIX_V0.search(text)) is not None:
        kind, marker, body = _PREFIX, p.start(), p.end()
        holes = _values(text, body)
    elif (marker := text.find(_STAGE_TIMES)) >= 0:
        # V0's `SpecDecodeWorker stage times: k=v k=v k=v`, which phase-timing's reader reads
        kind, body = _STAGES, marker + len(_STAGE_TIMES)
        holes = [kv.span("v") for kv in _STAGE_VALUE.finditer(text, body)]
    else:
        return None
    nums = list(_NUM.finditer(text))
    index = {n.span(): k for k, n in enumerate(nums)}
    if holes and any(text[h[0] : h[1]] == "nan" for h in holes):
        return _nan_idle(text, kind, marker, body, holes, v0_title, nums, index)
    if holes is None or not holes or any(h not in index for h in holes):
        return None
    value_nums = {index[h] for h in holes}
    pattern = _pattern(text, nums, value_nums)
    if re.fullmatch(pattern, text) is None:
        return None
    ts = _ts_span(text, marker)
    if ts == (-1, -1):
        return None
    rank = None
    if kind not in _AFTER_ENGINE:
        tags = list(_ENGINE_TAG.finditer(text, 0, marker + 1))
        if tags:
            if " ".join(tags[-1].group("tag").split()) != tags[-1].group("tag"):
                return None
            rank = tags[-1].span("tag")
    # which number each sample is: read copies whose values all differ (none 0)
    unknown = _read_noting(text)[2]
    for seed in range(3):
        copy = _renumbered(text, nums, value_nums, seed)
        records, counts, noted = _read_noting(copy)
        if counts != {_KINDS[kind]: 1} or not all(isinstance(r, Sample) for r in records):
            return None
        if noted != unknown:
            return None
        outputs = _outputs(records, copy, nums)
        if outputs is not None:
            break
    else:
        return None
    for r in records:
        assert isinstance(r, Sample)
        own = _at(copy, rank) if kind not in _AFTER_ENGINE else "R"
        if r.ts != _at(copy, ts) or r.rank != own:
            return None
        if r.line != 1 or r.block is not None or r.run is not None:
            return None
    metrics = [o.metric for o in outputs]
    if len(set(metrics)) < len(metrics):
        return None  # the reader keeps one value of a metric read twice: fed
    layout = _Layout(
        kind=kind,
        pattern=pattern,
        nums=len(nums),
        outputs=tuple(outputs),
        ts=ts,
        rank=rank,
        idle=None,
        aggregated=kind == _ENGINE and any(_AGGREGATED.finditer(text, 0, marker + 1)),
        kv=kind == _ENGINE and "kv_cache_usage" in metrics,
        unknown=unknown,
    )
    if kind == _ENGINE:
        idle = _idle_numbers(text, nums, outputs)
        if idle is None:
            return None
        layout = replace(layout, idle=idle or None)
    if kind == _SPEC:
        at = {o.metric: o.num for o in outputs}
        layout = replace(
            layout,
            accept=at.get("accept_len", -1),
            accepted=at.get("accepted_tokens", -1),
            drafted=at.get("drafted_tokens", -1),
            positions=tuple(
                o.num for o in outputs if o.metric.startswith("position_acceptance_rate_")
            ),
            era=_era(text, body),
            v0_title=v0_title,
        )
    # the numbers before the first one read need not be read
    skip = min(value_nums | {o.num for o in outputs} | set(layout.idle or ()))
    captured = _with_capture(layout, text, nums, value_nums, skip)
    if captured is None:
        return None
    layout = captured
    # ... and the learned line itself reads as the layout reads it
    records, _ = _read_alone(text)
    values = [float(n.group()) for n in nums]
    if [r.value for r in records if isinstance(r, Sample)] != [
        _sample_value(values[o.num], o) for o in outputs
    ] and not (kind == _ENGINE and layout.idle is not None and records == []):
        return None
    return layout


def _cumulative(text: str, marker: int, body: int) -> _Layout | None:
    """The layout of V0's `Speculative metrics` line of cumulative counters, when the reader
    reads it, and copies with other values, as the layout does in its steady state: a
    rank's counters known from the line before (none went down), the line's own count of
    speculative tokens set once (`speculative_num_steps`), the mean acceptance length
    derived before (`_derived_line`), and the bonus token's note given. The walk feeds a
    line read in any other state (`ChunkRun._v0_rows`)."""
    nums = list(_NUM.finditer(text))
    # (the last value with the period that ends V0's line: `Number of emitted tokens: 3860.`)
    index = {
        (n.start(), n.end() + (text[n.end() : n.end() + 1] == ".")): k for k, n in enumerate(nums)
    }
    index |= {n.span(): k for k, n in enumerate(nums)}
    holes = _values(text, body)
    if not holes or any(h not in index for h in holes):
        return None
    value_nums = {index[h] for h in holes}
    pattern = _pattern(text, nums, value_nums)
    ts = _ts_span(text, marker)
    if re.fullmatch(pattern, text) is None or ts == (-1, -1):
        return None
    k_num = -1
    for f in keyed_fields(text, body):
        entry = lookup_field(f.key, _SPEC_FIELDS)
        if entry is not None and entry[0] == "num_speculative_tokens":
            k_num = next((k for k, n in enumerate(nums) if n.start() == f.start), -1)
    if k_num < 0 or "." in nums[k_num].group():
        return None
    layout: _Layout | None = None
    for copy in [text] + [_renumbered(text, nums, value_nums, seed) for seed in range(3)]:
        # with each counter's value before at 0, its difference is its number
        ctx = ParseContext(file="")
        reader = _steady(ctx)
        reader._cumulative = {("R", c): 0.0 for c in _COUNTERS}
        reader._engine_started = True
        reader._derived_line = 1
        records = list(reader.feed(Line(1, copy)))
        if ctx.diagnostics or dict(ctx.counts) != {"spec": 1}:
            return None
        samples = [r for r in records if isinstance(r, Sample)]
        if len(samples) != len(records) or not samples or samples[-1].metric != "accept_len":
            return None
        outputs = _outputs(records[:-1], copy, nums)
        if outputs is None:
            return None
        rates = tuple(o for o in outputs if o.metric not in _COUNTERS)
        counters = tuple((o.metric, o.num) for o in outputs if o.metric in _COUNTERS)
        if layout is None:
            layout = _Layout(
                kind=_SPEC,
                pattern=pattern,
                nums=len(nums),
                outputs=rates,
                ts=ts,
                rank=None,
                idle=None,
                aggregated=False,
                kv=False,
                counters=counters,
                k_num=k_num,
            )
        if (layout.outputs, layout.counters) != (rates, counters):
            return None
        values = [float(n.group()) for n in _NUM.finditer(copy)]
        want = [(o.metric, _sample_value(values[o.num], o)) for o in rates]
        want += [(c, values[num]) for c, num in counters]
        at = dict(counters)
        if "emitted_tokens" not in at or "drafted_tokens" not in at:
            return None
        want.append(
            (
                "accept_len",
                values[at["emitted_tokens"]] / (values[at["drafted_tokens"]] / values[k_num]),
            )
        )
        if [(r.metric, r.value) for r in samples] != want or any(
            (r.line, r.block, r.run, r.rank, r.ts) != (1, None, None, "R", _at(copy, ts))
            for r in samples
        ):
            return None
    assert layout is not None
    return _with_capture(layout, text, nums, value_nums, min(value_nums))


def _with_capture(
    layout: _Layout, text: str, nums: list[re.Match[str]], values: set[int], skip: int
) -> _Layout | None:
    """The layout of `text` read from its `skip`-th number on, with its capture pattern
    (`_Layout.capture`; "" beyond `_CAPTURE_MAX` groups); None when that pattern does not
    read the line's numbers as `_NUM` finds them."""
    capture = ""
    if len(nums) - skip <= _CAPTURE_MAX:
        capture = _pattern(text, nums, values, skip)
        whole = re.fullmatch(capture, text)
        if whole is None or whole.groups() != tuple(n.group() for n in nums[skip:]):
            return None
    return replace(layout, lead=nums[skip].start(), skip=skip, capture=capture)


def _pattern(
    text: str, nums: list[re.Match[str]], values: set[int], groups_from: int | None = None
) -> str:
    """The line as a regex: its text, each number that is no value a run of digits of its
    width, each value a number with the decimals printed; each number from the
    `groups_from`-th on a group of its own (they then match what `_NUM` finds there)."""
    out, pos = ["^"], 0
    for k, n in enumerate(nums):
        out.append(_rx(text[pos : n.start()]))
        whole, _, dec = n.group().partition(".")
        if k in values:
            num = r"[0-9]{1,15}" + (rf"\.[0-9]{{{len(dec)}}}" if dec else "")
        else:
            num = f"[0-9]{{{len(whole)}}}" + (rf"\.[0-9]{{{len(dec)}}}" if dec else "")
        out.append(num if groups_from is None or k < groups_from else f"({num})")
        pos = n.end()
    return "".join(out) + _rx(text[pos:]) + "$"


def _values(text: str, start: int) -> list[tuple[int, int]] | None:
    """The spans of the numbers `Reader` reads from a `label: value, ...` body (lists too)."""
    holes: list[tuple[int, int]] = []
    for f in keyed_fields(text, start):
        # (a list too: `KV fetch: a waiting to start, b in progress, c completed waiting`,
        # each number before its label, which the layout's regex pins)
        end = f.start + len(f.value)
        pos = f.start
        while pos < end:
            while pos < end and text[pos] == " ":
                pos += 1
            n = VALUE_NUMBER.match(text, pos, end)
            if n is None:
                break
            holes.append(n.span())
            nxt = text.find(", ", n.end(), end)
            if nxt < 0:
                break
            pos = nxt + 2
    return holes


def _keys(text: str, body: int) -> set[str]:
    """A spec line's field keys and their metrics, as `Reader._spec` names them."""
    keys: set[str] = set()
    for f in keyed_fields(text, body):
        entry = lookup_field(f.key, _SPEC_FIELDS)
        if entry is not None:
            keys |= {entry[0], f.key}
    return keys


def _era(text: str, body: int) -> bool:
    """Whether a spec line's field set is of the bonus-counting era (`_BONUS_ERA`)."""
    return bool(_keys(text, body) & _BONUS_ERA)


def _ts_span(text: str, end: int) -> tuple[int, int] | None:
    """Where `Reader._ts(text, end)` finds the timestamp; (-1, -1) when it is not printed
    as the reader gives it (blanks joined)."""
    m = _LEVEL_TS.search(text, 0, end)
    if m is not None:
        span = m.span("ts")
    else:
        t = _ANY_TS.search(text, 0, end)
        if t is None:
            return None
        span = t.span()
    raw = text[span[0] : span[1]]
    return span if " ".join(raw.split()) == raw else (-1, -1)


def _at(text: str, span: tuple[int, int] | None) -> str | None:
    return None if span is None else text[span[0] : span[1]]


def _renumbered(text: str, nums: list[re.Match[str]], values: set[int], seed: int) -> str:
    """The line with each value changed to another (its digits and decimals as many, none
    0), each its own where the digits allow: the reader's samples then say which number
    each one is. A value is given digits whose number, and whose number as a percentage,
    no other number of the line has (read either way): a line of many small numbers (a
    timestamp's, a pid, `2 Engines`) leaves a one-digit value few such digits."""
    taken = {f for k, n in enumerate(nums) if k not in values for f in _readings(n.group())}
    out, pos = [], 0
    for k, n in enumerate(nums):
        out.append(text[pos : n.start()])
        raw = n.group()
        if k in values:
            whole, _, dec = raw.partition(".")
            first = ""
            for step in range(64):
                code, digits = k * 3 + seed * 7 + 1 + step * 5, []
                for _ in range(len(whole) + len(dec)):
                    code, d = divmod(code, 9)
                    digits.append(str(d + 1))
                got = "".join(reversed(digits))
                got = got[: len(whole)] + ("." + got[len(whole) :] if dec else "")
                first = first or got
                if not taken & _readings(got):
                    break
            else:
                got = first  # none free: `_outputs` finds the samples ambiguous
            raw = got
            taken |= _readings(raw)
        out.append(raw)
        pos = n.end()
    return "".join(out) + text[pos:]


def _readings(raw: str) -> set[float]:
    """A printed number's values as `_which` reads them: as printed, and as a percentage."""
    v = float(raw)
    return {v, float(f"{v!r}e-2")}


def _outputs(records: list[Record], copy: str, nums: list[re.Match[str]]) -> list[_Out] | None:
    """Which number of the line each sample is (None: one is no number, or two could be)."""
    values = [float(n.group()) for n in _NUM.finditer(copy)]
    out = []
    for r in records:
        assert isinstance(r, Sample)
        hit = _which(r.value, values)
        if hit is None:
            return None
        k, pct = hit
        out.append(_Out(r.metric, k, pct, len(nums[k].group().partition(".")[2])))
    return out


def _which(value: float, nums: list[float]) -> tuple[int, bool] | None:
    """The one number a sample is: as printed, or as a percentage (None: not one)."""
    plain = [k for k, v in enumerate(nums) if v == value]
    pct = [k for k, v in enumerate(nums) if float(f"{v!r}e-2") == value]
    if len(plain) + len(pct) != 1:
        return None
    return (plain[0], False) if plain else (pct[0], True)


def _sample_value(number: float, out: _Out) -> float:
    """A sample's value from its number, as the reader reads it (a percentage as the
    nearest double to the printed digits / 100, which `Read.fraction` gives)."""
    if not out.pct:
        return number
    return round(number * 10.0**out.dec) / 10.0 ** (out.dec + 2)


def _idle_numbers(
    text: str, nums: list[re.Match[str]], outputs: list[_Out]
) -> tuple[int, ...] | None:
    """The numbers whose being all 0 makes an engine line an idle interval (`_idle`): ()
    when no line of the layout is one, None when the reader does not read the line with
    them 0 as an idle one."""
    metrics = [o.metric for o in outputs]
    if not all(m in metrics for m in _ACTIVITY):
        return ()  # never idle: `_idle` says False or None
    activity = {o.num for o in outputs if o.metric in (*_ACTIVITY, "swapped_req")}
    out, pos = [], 0
    for k, n in enumerate(nums):
        out.append(text[pos : n.start()])
        out.append(re.sub(r"[0-9]", "0", n.group()) if k in activity else n.group())
        pos = n.end()
    records, counts, _ = _read_noting("".join(out) + text[pos:])  # (its layout's notes)
    if records or counts != {"engine": 1, "idle": 1}:
        return None
    return tuple(sorted(activity))


# ---------------------------------------------------------------------- chunks


def _tags(lay: _Layout) -> dict[str, pl.Expr]:
    """Where the layout has them, a line's timestamp (`ts`) and own rank (`rank`) as
    expressions over its text `t`."""
    import polars as pl

    out: dict[str, pl.Expr] = {}
    if lay.ts is not None:
        out["ts"] = pl.col("t").str.slice(lay.ts[0], lay.ts[1] - lay.ts[0])
    if lay.rank is not None:
        out["rank"] = pl.col("t").str.slice(lay.rank[0], lay.rank[1] - lay.rank[0])
    return out


class Fast:
    """Chunk-at-a-time reading of a vLLM log (see the module's notes)."""

    def __init__(self, reader: Reader, ctx: ParseContext) -> None:
        self.r = reader
        self.ctx = ctx
        self.layouts: list[_Layout] = []
        self.index: dict[str, int] = {}
        self.hits: list[int] = []
        # per layout: the rows it read in the chunk matched last (a restart's new version
        # is tried first from its second chunk on, not after the old one on every line)
        self.recent: list[int] = []
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def prepare(self, chunk: Chunk) -> Future[ChunkRun | None]:
        """Start preparing a chunk on a worker thread."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(AHEAD, thread_name_prefix="sessionlens-vllm")
        return self._pool.submit(self._prepare, chunk)

    def _prepare(self, chunk: Chunk) -> ChunkRun | None:
        import numpy as np
        import polars as pl

        t = pl.col("t")
        flags = {"word": t.str.contains(_FEED_RX), "ascii": t.str.len_bytes() == t.str.len_chars()}
        lines = _lines.polars_lines(chunk, flags)
        if lines is None:
            return None
        text, found = lines
        plain = found["ascii"]
        odd = np.flatnonzero(~plain)
        if len(odd):  # beyond ASCII: plain where every such character is (`_ODD_CHAR_RX`)
            plain[odd] = ~text.gather(odd).str.contains(_ODD_CHAR_RX).to_numpy()
        return ChunkRun(self, chunk, text, found["word"], plain)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def learn(self, text: str) -> int | None:
        """The index of a line's layout (learned now, or known), if it has one."""
        layout = _learn(text)
        if layout is None:
            return None
        digit = re.search("[0-9]", text)
        head = text[: digit.start()] if digit is not None else ""
        if layout.pattern.startswith("^" + _rx(head)):
            layout = replace(layout, head=head)
        with self._lock:
            at = self.index.get(layout.pattern)
            if at is not None:
                return at
            if len(self.layouts) >= _learning.MAX_LAYOUTS:
                return None
            self.layouts.append(layout)
            self.hits.append(0)
            self.recent.append(0)
            self.index[layout.pattern] = len(self.layouts) - 1  # published last
            return len(self.layouts) - 1


@dataclass(frozen=True, slots=True)
class Bench:
    """A benchmark run starts at this chunk row: the chunk's lines go to its reader from
    there."""

    row: int


class ChunkRun:
    """One chunk's lines: which go to `feed`, which are read in bulk, and their samples."""

    def __init__(
        self,
        fast: Fast,
        chunk: Chunk,
        t: pl.Series,
        word: npt.NDArray[np.bool_],
        plain: npt.NDArray[np.bool_],
    ) -> None:
        import numpy as np

        self.f = fast
        self.chunk = chunk
        self.t = t
        self.n = n = t.len()
        # lines holding no word: access lines and ignored ones
        other = np.flatnonzero(~word & plain)
        self.http = np.zeros(n, np.bool_)
        if len(other):
            self.http[other[t.gather(other).str.contains(_HTTP_RX).to_numpy()]] = True
        # ... and of those beyond plain (a request log's prompt in any script), told by the
        # reader's own regex, in Python
        odd = np.flatnonzero(~word & ~plain)
        if len(odd):
            texts = t.gather(odd).to_list()
            said = np.array([_found(_HTTP_ACCESS, x) is not None for x in texts], np.bool_)
            self.http[odd[said]] = True
        self.ignored = np.zeros(n, np.bool_)
        self.ignored[other] = True
        self.ignored[odd] = True
        self.ignored[self.http] = False
        # lines holding one: an engine, spec or MFU mark's read by a layout, others counted
        # (unread kinds) or fed
        cand = np.flatnonzero(word & plain)
        self.layout = np.full(n, -1, np.int64)
        # per layout: the rows it read, their numbers from its `skip`-th (`_try`), their
        # timestamps and ranks
        self.read: dict[
            int, tuple[npt.NDArray[np.int64], Any, pl.Series | None, pl.Series | None]
        ] = {}
        self.unread = np.full(n, -1, np.int8)  # the index of an unread line's kind
        # the candidates' texts before their first digit, numbered (`_heads`)
        self._head_rows: npt.NDArray[np.int64] | None = None
        self._tries = 0  # layouts tried on the chunk's candidates (`_try`)
        self._head_code: dict[str, int] = {}
        self._head_of: npt.NDArray[np.int64] = np.empty(0, np.int64)
        self.fed = np.zeros(n, np.bool_)
        self.fed[word & ~plain] = True
        if len(cand):
            marked = t.gather(cand).str.contains(_MARKS).to_numpy()
            self._match(cand[marked])
            self.fed[cand[marked]] = self.layout[cand[marked]] < 0
            rest = cand[~marked]
            kind = t.gather(rest).str.extract(_UNREAD_RX, 1)
            hit = kind.is_not_null().to_numpy()
            it = kind.str.starts_with("Iteration").fill_null(False).to_numpy()
            self.unread[rest[hit]] = np.where(it[hit], 0, 1)
            self.fed[rest[~hit]] = True
        self._read()

    @property
    def first(self) -> int:
        return self.chunk.first

    def _match(self, cand: npt.NDArray[np.int64]) -> None:
        """Each candidate's layout: the known ones, the one that read most in the chunk
        matched last first (then most in all), then those learned from lines no layout
        reads (a first chunk, a restart, a new field)."""

        self._match_each(cand)
        with self.f._lock:  # the order the next chunk tries them in (`_learning.tried`)
            self.f.recent[:] = _learning.recent_counts(self.layout[cand], len(self.f.recent))

    def _match_each(self, cand: npt.NDArray[np.int64]) -> None:
        import numpy as np

        f = self.f
        with f._lock:
            known = _learning.tried(range(len(f.layouts)), f.recent, f.hits)
        for li in known:
            if not self._try(cand, li):
                return
        failed: set[str] = set()
        # (the first chunk of a log whose prefix numbers change width, as `grep -n`'s do,
        # learns a few layouts of each width; `grep -r` over many files, a few of each file)
        budget = _learning.Budget(len(cand))
        while budget:
            open_ = cand[self.layout[cand] < 0]
            pick = next((r for r in open_[:64].tolist() if self.t[r] not in failed), None)
            if pick is None:
                return
            text = self.t[pick]
            new = f.learn(text)
            if new is None or new in known:
                failed.add(text)
                budget.failed()
                continue
            known.append(new)
            if not self._try(cand, new):
                return
            if self.layout[pick] < 0:  # (not its own line, in polars: learn no more from it)
                failed.add(text)
                budget.failed()
            else:
                budget.learned(int(np.count_nonzero(self.layout[open_] == new)))

    def _try(self, cand: npt.NDArray[np.int64], li: int) -> bool:
        """Match the candidates no layout read with layout `li`, and read the numbers of
        those it matches in the same regex pass where it has a capture pattern
        (`_Layout.capture`; else `_read` finds them); False when none is left."""
        import polars as pl

        open_ = cand[self.layout[cand] < 0]
        if len(open_) == 0:
            return False
        lay = self.f.layouts[li]
        self._tries += 1
        # many layouts tried (a log of many prefixes): each regex over its own lines only
        by_head = bool(lay.head) and self._tries > _learning.STALE_TRIES
        text = None if by_head else self.t.gather(open_)
        if by_head:
            near = self._heads(cand, lay.head)[self.layout[cand] < 0]
            if not near.all():
                open_ = open_[near]
                if len(open_) == 0:
                    return True
                text = self.t.gather(open_)
        if text is None:
            text = self.t.gather(open_)
        if not lay.capture:
            hit = text.str.contains(lay.pattern).to_numpy()
            if hit.any():
                self.read[li] = (open_[hit], None, None, None)
        else:
            got = text.to_frame("t").select(
                pl.col("t").str.extract_groups(lay.capture).struct.unnest(), "t"
            )
            numbers = got.columns[: lay.nums - lay.skip]
            hit = got[numbers[0]].is_not_null().to_numpy()
            if hit.any():
                # the timestamps and ranks of the lines matched only
                got = got.filter(pl.Series(hit)).with_columns(**_tags(lay))
                self.read[li] = (
                    open_[hit],
                    got.select(pl.col(numbers).cast(pl.Float64)).to_numpy(),
                    got["ts"] if lay.ts is not None else None,
                    got["rank"] if lay.rank is not None else None,
                )
        self.layout[open_[hit]] = li
        with self.f._lock:
            self.f.hits[li] += int(hit.sum())
        return True

    def _heads(self, cand: npt.NDArray[np.int64], head: str) -> npt.NDArray[np.bool_]:
        """Which candidates start with `head` up to their first digit (a layout's lines do):
        each candidate's text before its first digit, numbered once a chunk."""
        import numpy as np
        import polars as pl

        if self._head_rows is not cand:
            heads = self.t.gather(cand).str.extract("^([^0-9]*)", 1).fill_null("")
            seen = heads.unique(maintain_order=True)
            self._head_code = dict(zip(seen.to_list(), range(len(seen)), strict=True))
            self._head_of = heads.replace_strict(
                seen, pl.Series(range(len(seen)), dtype=pl.Int64), return_dtype=pl.Int64
            ).to_numpy()
            self._head_rows = cand
        code = self._head_code.get(head)
        if code is None:
            return np.zeros(len(cand), np.bool_)
        return np.asarray(self._head_of == code)

    def _numbers(
        self, lay: _Layout, rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.float64], pl.Series | None, pl.Series | None]:
        """The numbers of the layout's lines from its first value, their timestamps and
        ranks (for a layout of more numbers than a capture pattern reads cheaply)."""
        import polars as pl

        got = (
            self.t.gather(rows)
            .to_frame("t")
            .select(
                pl.col("t")
                .str.slice(lay.lead)
                .str.extract_all(_NUM.pattern)
                .list.eval(pl.element().cast(pl.Float64))
                .list.to_array(lay.nums - lay.skip)
                .alias("v"),
                **_tags(lay),
            )
        )
        return (
            got["v"].to_numpy(),
            got["ts"] if lay.ts is not None else None,
            got["rank"] if lay.rank is not None else None,
        )

    def _read(self) -> None:
        """Every number of the lines a layout read, and their timestamps and own ranks."""
        import numpy as np
        import polars as pl

        f = self.f
        self.rows: dict[int, npt.NDArray[np.int64]] = {}
        self.values: dict[int, npt.NDArray[np.float64]] = {}
        # `_inferred` of a layout's rows, by (layout, the reader's k and version)
        self._said: dict[tuple[int, int | None, str | None], npt.NDArray[np.int8]] = {}
        self.ts: dict[int, pl.Series] = {}
        self.ranks: dict[int, pl.Series] = {}  # strings
        self.kind = np.full(self.n, -1, np.int8)
        for li in sorted(self.read):  # (as `_try` read them: each layout's rows in order)
            lay = f.layouts[li]
            rows, values, ts, rank = self.read[li]
            if values is None:  # a layout without a capture pattern: its numbers found
                values, ts, rank = self._numbers(lay, rows)
            self.rows[li] = rows
            if lay.skip:  # numbered as in the whole line (the numbers not read are 0)
                whole = np.zeros((len(rows), lay.nums), np.float64)
                whole[:, lay.skip :] = values
                values = whole
            self.values[li] = values
            self.kind[rows] = lay.kind
            if ts is not None:  # (a layout's lines have a timestamp and a rank where it has)
                self.ts[li] = ts.cast(pl.Categorical)  # here, not on the walking thread
            if rank is not None:
                self.ranks[li] = rank
        del self.read
        # each engine line's rank (an index into `rank_names`) and whether it is idle, in
        # line order
        self.rank_names: list[str | None] = [None]
        codes: dict[str | None, int] = {None: 0}
        rows_, rank_, idle_ = [], [], []
        for li, rows in self.rows.items():
            lay = f.layouts[li]
            if lay.kind != _ENGINE:
                continue
            names = self.ranks.get(li)
            if names is None:
                rank_.append(np.zeros(len(rows), np.int64))
            else:  # a few names: each row's code looked up by polars
                seen = names.unique(maintain_order=True).to_list()
                for name in seen:
                    codes.setdefault(name, len(codes))
                mine = {name: codes[name] for name in seen}
                rank_.append(names.replace_strict(mine, return_dtype=pl.Int64).to_numpy())
            if lay.idle is None:
                idle_.append(np.zeros(len(rows), np.bool_))
            else:
                idle_.append((self.values[li][:, list(lay.idle)] == 0).all(axis=1))
            rows_.append(rows)
        self.rank_names = list(codes)
        self.rank_code = codes
        if rows_:
            order = np.argsort(np.concatenate(rows_), kind="stable")
            self.engine_rows = np.concatenate(rows_)[order]
            self.engine_rank = np.concatenate(rank_)[order]
            self.engine_idle = np.concatenate(idle_)[order]
        else:
            self.engine_rows = np.zeros(0, np.int64)
            self.engine_rank = np.zeros(0, np.int64)
            self.engine_idle = np.zeros(0, np.bool_)

    # ------------------------------------------------------------------ the walk

    def run(self, reader: Reader) -> Iterator[Record | Bench]:
        """Records of the chunk's lines in order (its samples go to the sink at the end); a
        benchmark run's start ends the walk with a `Bench`."""
        import numpy as np

        self.fed_samples: list[tuple[int, Sample]] = []
        # (row, the engine and idle state after it) for each fed row, as arrays grown by
        # doubling: spec lines after it take them (`_spec_state`, asked between any two fed
        # rows)
        self.n_states = 0
        self.state_row = np.empty(64, np.int64)
        self.state_rank = np.empty(64, np.int64)  # codes into `rank_names`
        self.state_idle = np.empty(64, np.bool_)
        self._push_state(-1, reader)
        self.dropped = np.zeros(self.n, np.bool_)  # rows read in bulk but fed after all
        # per layout of V0's cumulative counters: each row's differences (`_v0_rows`)
        self.deltas = {
            li: np.zeros((len(rows), len(self.f.layouts[li].counters)), np.float64)
            for li, rows in self.rows.items()
            if self.f.layouts[li].counters
        }
        self._counts()
        fed_rows = np.flatnonzero(self.fed).tolist()
        prev = k = 0
        while True:
            nxt = fed_rows[k] if k < len(fed_rows) else self.n
            special = self._special(reader, prev, nxt)
            row = nxt if special is None else special
            self._settle(reader, prev, row)
            if row >= self.n:
                break
            if special is None:
                k += 1
            else:
                self.dropped[row] = True
            text = self.t[row]
            if any(w in text for w in BENCH_WORDS) and _BENCH_START.search(text):
                yield from self._hand_over(row)
                yield Bench(row)
                return
            for rec in reader.feed(Line(self.first + row, text)):
                if isinstance(rec, Sample):
                    self.fed_samples.append((row, rec))
                else:
                    yield rec
            self._push_state(row, reader)
            prev = row + 1
        yield from self._hand_over(self.n)

    def _counts(self) -> None:
        """Running counts of the rows' marks (`_settle`, `_special`): what rows [a, b) hold
        is then two lookups, not a pass over them. A log with an error or a traceback
        every few lines settles the rows between its fed lines as often."""
        import numpy as np

        def running(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
            out = np.zeros(len(mask) + 1, np.int64)
            np.cumsum(mask, out=out[1:])
            return out

        self.n_http, self.n_ignored = running(self.http), running(self.ignored)
        self.n_unread = [running(self.unread == code) for code in range(len(_UNREAD_KINDS))]
        self.n_kind = [running(self.kind == code) for code in range(len(_KINDS))]
        self.n_idle = running(self.engine_idle)
        self.idle_at = np.flatnonzero(self.engine_idle)

    def _special(self, reader: Reader, a: int, b: int) -> int | None:
        """The first row in [a, b) read in bulk that `feed` must read after all: one that
        says a setting or a kind of line for the first time, or something new of the bonus
        token."""
        import numpy as np

        f = self.f
        found: list[int] = []
        done = reader._settings_done
        for li, rows in self.rows.items():
            lay = f.layouts[li]
            fed = (
                (lay.aggregated and "aggregated_engines" not in done)
                or (lay.kv and "kv_cache_device" not in done)
                or (lay.v0_title and reader._engine_v0 is True)  # then cumulative counters
                or not lay.unknown <= reader._unknown  # a field not known, noted first
            )
            if fed:
                at = int(np.searchsorted(rows, a))
                if at < len(rows) and rows[at] < b:
                    found.append(int(rows[at]))
            if lay.nan_idle:  # read only while the reader is idle
                # the first busy one, in windows that double: each is asked again after the
                # row found is fed, so a walk that scanned to `b` each time was quadratic
                lo, hi = np.searchsorted(rows, [a, b]).tolist()
                step = 16
                while lo < hi:
                    end = min(hi, lo + step)
                    busy = np.flatnonzero(~self._spec_state(rows[lo:end])[2])
                    if len(busy):
                        found.append(int(rows[lo + busy[0]]))
                        break
                    lo, step = end, step * 2
        for code, name in enumerate(_UNREAD_KINDS):
            if name not in reader._unread_kinds and self.n_unread[code][b] > self.n_unread[code][a]:
                hit = np.flatnonzero(self.unread[a:b] == code)
                found.append(a + int(hit[0]))
        if self.deltas:
            v0 = self._v0_rows(reader, a, min([b, *found]), settle=False)
            if v0 is not None:
                found.append(v0)
        bonus = self._bonus_row(reader, a, min([b, *found]))
        if bonus is not None:
            found.append(bonus)
        return min(found) if found else None

    def _bonus_row(self, reader: Reader, a: int, b: int) -> int | None:
        """The first spec row in [a, b) whose mean acceptance length tells the reader
        something new of the bonus token (`Reader._infer_bonus`, `_note_bonus`)."""
        import numpy as np

        if reader._bonus is not None and reader._bonus_clash:
            return None
        best: int | None = None
        for li, rows in self.rows.items():
            lay = self.f.layouts[li]
            if lay.kind != _SPEC or lay.accept < 0:
                continue
            lo, hi = np.searchsorted(rows, [a, b]).tolist()
            if hi <= lo:
                continue
            key = (li, reader._k, reader._version)
            whole = self._said.get(key)
            if whole is None:  # of all the layout's rows at once: a walk asks many times
                whole = self._said[key] = _inferred(lay, self.values[li], *key[1:])
            said = whole[lo:hi]
            new = said >= 0
            if reader._bonus is not None:
                new &= said != int(reader._bonus.value)
            hit = np.flatnonzero(new)
            if len(hit):
                row = int(rows[lo + hit[0]])
                best = row if best is None else min(best, row)
        return best

    def _settle(self, reader: Reader, a: int, b: int) -> None:
        """The reader's state after the rows [a, b), none of them fed: counts, idle
        intervals, the engine line last read, the first mean acceptance length."""
        import numpy as np

        if b <= a:
            return
        ctx = self.f.ctx
        reader._error_run = False  # none of these lines holds ERROR or CRITICAL
        reader.claimed = not bool(self.http[b - 1] or self.ignored[b - 1])
        for name, counts in (("http-access", self.n_http), ("ignored", self.n_ignored)):
            n = int(counts[b] - counts[a])
            if n:
                ctx.count(name, n)
        for code, name in enumerate(_UNREAD_KINDS):
            n = int(self.n_unread[code][b] - self.n_unread[code][a])
            if n:
                ctx.count(f"unread:{name}", n)
        for code, name in enumerate(_KINDS):
            n = int(self.n_kind[code][b] - self.n_kind[code][a])
            if n:
                ctx.count(name, n)
                if code == _STAGES:
                    ctx.embedded.add(_PHASES)  # as `feed` marks it
        lo, hi = np.searchsorted(self.engine_rows, [a, b]).tolist()
        if hi > lo:
            idle = int(self.n_idle[hi] - self.n_idle[lo])
            if idle:
                ctx.count("idle", idle)
                reader._idle_count += idle
                at = self.idle_at[int(np.searchsorted(self.idle_at, lo))]
                first_idle = self.first + int(self.engine_rows[at])
                reader._idle_first = reader._idle_first or first_idle
            reader._rank = self.rank_names[int(self.engine_rank[hi - 1])]
            reader._idle = bool(self.engine_idle[hi - 1])
        if self.deltas:
            self._v0_rows(reader, a, b, settle=True)
        if reader._accept_line is None:
            for li, rows in self.rows.items():
                if self.f.layouts[li].accept >= 0 or self.f.layouts[li].says_accept:
                    at = int(np.searchsorted(rows, a))
                    if at < len(rows) and rows[at] < b:
                        row = self.first + int(rows[at])
                        if reader._accept_line is None or row < reader._accept_line:
                            reader._accept_line = row

    def _v0_rows(self, reader: Reader, a: int, b: int, settle: bool) -> int | None:
        """V0's cumulative spec rows in [a, b), read in bulk: the first that `feed` must
        read (a state `_cumulative` does not read in, a count of speculative tokens that is
        no count, a rank's counter unknown before or gone down); or, with `settle`, none
        being such, each row's differences kept (`deltas`) and the reader's state after
        them (`_spec_v0`: the counters, the count of speculative tokens). The walk asks at
        every fed line: a few numpy calls on the rows between, one matrix of counters."""
        import numpy as np

        f = self.f
        parts = []
        for li in self.deltas:
            lo, hi = np.searchsorted(self.rows[li], [a, b]).tolist()
            if hi > lo:
                parts.append((li, lo, hi))
        if not parts:
            return None
        if not settle and not (
            "speculative_num_steps" in reader._settings_done
            and reader._derived_line is not None
            and reader._bonus is not None
            and (reader._bonus.value or reader._bonus_clash)
        ):
            return int(min(self.rows[li][lo] for li, lo, _ in parts))
        # the rows in line order, each with its layout's counters (nan: the layout has none
        # of that name) and count of speculative tokens
        blocks = []
        for li, lo, hi in parts:
            lay = f.layouts[li]
            num = dict(lay.counters)
            got = self.values[li][lo:hi][
                :, [num.get(c, lay.k_num) for c in _COUNTERS] + [lay.k_num]
            ]
            for j, c in enumerate(_COUNTERS):
                if c not in num:
                    got[:, j] = np.nan
            blocks.append(got)
        rows = np.concatenate([self.rows[li][lo:hi] for li, lo, hi in parts])
        value = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
        if len(parts) > 1:
            order = np.argsort(rows, kind="stable")
            rows, value = rows[order], value[order]
        k = value[:, -1]
        value = value[:, :-1]
        missing = np.isnan(value)
        present: npt.NDArray[np.bool_] = np.logical_not(missing.all(axis=0))
        if (missing[:, present]).any():
            return int(rows[0])  # layouts of other counters among each other: fed
        names = self.rank_names
        if len(names) == 1:  # one engine (V0's: none named): each row's before is the last
            code = np.zeros(len(rows), np.int64)
            before = np.arange(-1, len(rows) - 1)
            first = np.zeros(1, np.int64)
        else:
            names, code, _ = self._spec_state(rows)  # (one code per engine name)
            by_rank = np.lexsort((np.arange(len(rows)), code))
            same = np.zeros(len(rows), np.bool_)
            same[by_rank[1:]] = code[by_rank[1:]] == code[by_rank[:-1]]
            before = np.full(len(rows), -1, np.int64)
            before[by_rank[1:]] = by_rank[:-1]
            first = np.flatnonzero(~same)
        prev = value[np.maximum(before, 0)]
        counters = [c for j, c in enumerate(_COUNTERS) if present[j]]
        cols = np.flatnonzero(present)
        for i in first.tolist():
            rank = names[int(code[i])]
            prev[i, cols] = [reader._cumulative.get((rank, c), np.nan) for c in counters]
        bad = (k <= 0) | (np.isnan(prev[:, cols]) | (value[:, cols] < prev[:, cols])).any(axis=1)
        if not settle:
            hit = np.flatnonzero(bad)
            return int(rows[hit[0]]) if len(hit) else None
        assert not bad.any()
        delta = value - prev
        for li, lo, hi in parts:
            want = [_COUNTERS.index(c) for c, _ in f.layouts[li].counters]
            mine = delta if len(parts) == 1 else delta[np.searchsorted(rows, self.rows[li][lo:hi])]
            self.deltas[li][lo:hi] = mine[:, want]
        last = [len(rows) - 1]  # each rank's last row
        if len(names) > 1:
            ends = np.ones(len(rows), np.bool_)
            ends[by_rank[:-1]] = code[by_rank[1:]] != code[by_rank[:-1]]
            last = np.flatnonzero(ends).tolist()
        for i in last:
            rank = names[int(code[i])]
            for j, c in zip(cols.tolist(), counters, strict=True):
                reader._cumulative[(rank, c)] = float(value[i, j])
        reader._k = int(k[-1])
        return None

    # ------------------------------------------------------------------ the hand-over

    def _hand_over(self, upto: int) -> Iterator[Record]:
        """The samples of the chunk's rows before `upto`, in line order (to the sink): each
        row's samples placed at once (no sort), strings as categoricals made per row."""
        import numpy as np
        import polars as pl

        f = self.f
        metrics: dict[str, int] = {}
        # per part (a layout's rows kept, or the fed rows): rows, their samples' values and
        # metric codes (one row's samples after another), their ranks and timestamps
        parts: list[
            tuple[
                npt.NDArray[np.int64],
                int,
                npt.NDArray[np.float64],
                npt.NDArray[np.int64],
                pl.Series,
                pl.Series,
            ]
        ] = []
        for li, rows in self.rows.items():
            lay = f.layouts[li]
            values = self.values[li]
            keep = ~self.dropped[rows] & (rows < upto)
            rank: pl.Series | None = None
            if lay.kind in _AFTER_ENGINE:
                names, code, idle = self._spec_state(rows)
                keep &= ~idle
                rank = pl.Series(names, dtype=pl.String).cast(pl.Categorical).gather(code)
            else:
                if lay.idle is not None:
                    keep &= ~(values[:, list(lay.idle)] == 0).all(axis=1)
                if li in self.ranks:
                    rank = self.ranks[li].cast(pl.Categorical)
            sel = np.flatnonzero(keep)
            if len(sel) == 0:
                continue
            k = len(lay.outputs)
            vals = values[sel][:, [o.num for o in lay.outputs]]
            for j, o in enumerate(lay.outputs):
                if o.pct:
                    vals[:, j] = np.rint(vals[:, j] * 10.0**o.dec) / 10.0 ** (o.dec + 2)
            labels = [o.metric for o in lay.outputs]
            groups = [(sel, vals, labels)]
            if lay.counters:
                # V0's cumulative counters: the rates, each counter's difference, and the
                # mean acceptance length where something was drafted (`_spec_v0`)
                deltas = self.deltas[li][sel]
                col = {c: j for j, (c, _) in enumerate(lay.counters)}
                drafted = deltas[:, col["drafted_tokens"]]
                emitted = deltas[:, col["emitted_tokens"]]
                has = drafted != 0
                with np.errstate(divide="ignore", invalid="ignore"):
                    accept = emitted / (drafted / values[sel, lay.k_num])
                labels = labels + [c for c, _ in lay.counters]
                both = np.concatenate([vals, deltas], axis=1)
                groups = [
                    (
                        sel[has],
                        np.concatenate([both[has], accept[has, None]], axis=1),
                        [*labels, "accept_len"],
                    ),
                    (sel[~has], both[~has], labels),
                ]
            for sel, vals, labels in groups:
                if not len(sel):
                    continue
                codes = np.array([metrics.setdefault(m, len(metrics)) for m in labels])
                # (a null repeated: no values gathered, no query run)
                none = pl.Series("literal", [None], pl.Categorical).new_from_index(0, len(sel))
                parts.append(
                    (
                        rows[sel],
                        len(labels),
                        vals.ravel(),
                        np.tile(codes, len(sel)),
                        none if rank is None else rank.gather(sel),
                        none if li not in self.ts else self.ts[li].gather(sel),
                    )
                )
        fed = [(row, s) for row, s in self.fed_samples if row < upto]
        if fed:
            cols = batch_columns([s for _, s in fed])
            parts.append(
                (
                    np.array([row for row, _ in fed], np.int64),
                    1,  # one row per sample: a fed row's samples stay in their order
                    np.array(cols["value"], np.float64),
                    np.array([metrics.setdefault(m, len(metrics)) for m in cols["metric"]]),
                    pl.Series(cols["rank"], dtype=pl.String).cast(pl.Categorical),
                    pl.Series(cols["ts"], dtype=pl.String).cast(pl.Categorical),
                )
            )
        if not parts:
            return
        rows = np.concatenate([p[0] for p in parts])
        counts = np.concatenate([np.full(len(p[0]), p[1], np.int64) for p in parts])
        order = np.argsort(rows, kind="stable")  # a fed row's samples keep their order
        starts = np.empty(len(rows), np.int64)
        starts[order] = np.cumsum(counts[order]) - counts[order]
        total = int(counts.sum())
        value = np.empty(total, np.float64)
        metric = np.empty(total, np.int64)
        owner = np.empty(total, np.int64)  # the row (an index into `rows`) of each sample
        at = 0
        for p in parts:
            n, k = len(p[0]), p[1]
            pos = (starts[at : at + n][:, None] + np.arange(k)).ravel()
            value[pos] = p[2]
            metric[pos] = p[3]
            owner[pos] = np.repeat(np.arange(at, at + n), k)
            at += n
        cat = pl.Categorical
        null = pl.Series([None], dtype=pl.Int64)
        # (categoricals, the chunk's timestamps made so as it was prepared)
        rank = pl.concat([p[4] for p in parts]).gather(owner)
        ts = pl.concat([p[5] for p in parts]).gather(owner)
        frame = pl.DataFrame(
            {
                "line": rows[owner] + self.first,
                "block": null.new_from_index(0, total),
                "run": null.new_from_index(0, total),
                "rank": rank,
                "ts": ts,
                "metric": pl.Series(list(metrics), dtype=pl.String).cast(cat).gather(metric),
                "value": value,
            }
        )
        yield from SampleBatch(frame.select(BATCH_COLUMNS)).hand_over(f.ctx.sink)

    def _push_state(self, row: int, reader: Reader) -> None:
        """The reader's engine and idle state after fed row `row` (-1: before the chunk)."""
        import numpy as np

        n = self.n_states
        if n == len(self.state_row):
            self.state_row, self.state_rank, self.state_idle = (
                np.concatenate([a, np.empty_like(a)])
                for a in (self.state_row, self.state_rank, self.state_idle)
            )
        code = self.rank_code.get(reader._rank)
        if code is None:
            code = self.rank_code[reader._rank] = len(self.rank_names)
            self.rank_names.append(reader._rank)
        self.state_row[n], self.state_rank[n], self.state_idle[n] = row, code, reader._idle
        self.n_states = n + 1

    def _spec_state(
        self, rows: npt.NDArray[np.int64]
    ) -> tuple[list[str | None], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """The engine and idle state spec rows are read in: that of the engine line before
        each (read in bulk), or the reader's after the fed row before it, whichever is
        later. The engines as names (one each) and each row's index into them. (An engine
        line fed after all is a fed row too: its state is the one after it either way.)"""
        import numpy as np

        eng = self.engine_rows
        fed = self.state_row[: self.n_states]
        at_f = np.searchsorted(fed, rows) - 1
        rank = self.state_rank[at_f]
        idle = self.state_idle[at_f]
        if len(eng):
            at_e = np.searchsorted(eng, rows) - 1
            at = np.maximum(at_e, 0)
            bulk = (at_e >= 0) & (eng[at] > fed[at_f])
            rank = np.where(bulk, self.engine_rank[at], rank)
            idle = np.where(bulk, self.engine_idle[at], idle)
        return self.rank_names, rank, idle


def _inferred(
    lay: _Layout, values: npt.NDArray[np.float64], k: int | None, version: str | None
) -> npt.NDArray[np.int8]:
    """Per spec line, what `Reader._infer_bonus` says of its mean acceptance length: 1 it
    counts the bonus token, 0 it does not, -1 nothing."""
    import numpy as np

    al = values[:, lay.accept]
    out = np.full(len(al), -1, np.int8)
    undecided = np.ones(len(al), np.bool_)

    def say(mask: npt.NDArray[np.bool_], value: int) -> None:
        hit = undecided & mask
        out[hit] = value
        undecided[hit] = False

    if lay.positions:
        expected = values[:, lay.positions[0]]
        for p in lay.positions[1:]:
            expected = expected + values[:, p]  # summed in order, as `sum` does
        tol = 0.0051 + 0.0005 * len(lay.positions)
        say(np.abs(al - expected) <= tol, 0)
        say(np.abs(al - 1 - expected) <= tol, 1)
    if k and lay.accepted >= 0 and lay.drafted >= 0:
        drafted = values[:, lay.drafted]
        some = drafted != 0
        with np.errstate(divide="ignore", invalid="ignore"):
            expected = values[:, lay.accepted] / (drafted / k)
        say(some & (np.abs(al - expected) <= 0.0051), 0)
        say(some & (np.abs(al - 1 - expected) <= 0.0051), 1)
    every = np.ones(len(al), np.bool_)
    if lay.era:
        say(every, 1)
    if version is not None:
        by_version = bonus_from_version(version)
        if by_version is not None:
            say(every, int(by_version))
    say(al < 1 - 0.0051, 0)
    return out
