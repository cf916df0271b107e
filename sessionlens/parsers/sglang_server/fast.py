"""The chunk path of `sglang-server`: a whole chunk of a big log read with polars, exactly
as `reader.Reader` would read it line by line (held equal to it by a test on every fixture).

Owns the layouts (a batch line's shape learned as a regex), the chunk walk and the bulk
hand-over of samples. It restates no rule of the reader: field keys and value shapes come
from `reader`, the rank rule from `ranks` (its bulk API), rank tags from `_fields`, and line
cleaning from `_lines` (its substitutions, or `clean` itself).
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ... import _learning, _lines
from ..._codes import numbered, present_codes
from ..._lines import Chunk, Line, SourceText
from ...model import (
    BATCH_COLUMNS,
    BlockStart,
    Record,
    Sample,
    SampleBatch,
    batch_columns,
    batch_schema,
)
from .._blocks import BlockReader
from .._fields import RANK_TAG, TIMESTAMP, last_timestamp, rank_of
from .._fields import pinned_digits as _pinned
from .._fields import regex_literal as _rx
from ..base import PhasePlan
from . import ranks
from .reader import (
    _BENCH_FORMAT,
    _BENCH_WORD,
    _BOOLS,
    _FIELDS,
    _FIELDS_PRINTED,
    _GLUED,
    _PHASES,
    _TAIL,
    FEED_WORDS,
    GLUED_RX,
    Reader,
    _bracketed,
    _Own,
    _sub_key,
    glued_at,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import polars as pl

# Read line by line, a day-long log (1 GB, 6.8 million lines) costs minutes of Python. The
# fast path reads a whole chunk with polars and leaves to `Reader.feed` only the lines it
# cannot prove it reads exactly the same way. Its rules, each keeping the result identical:
# - a chunk's lines are `_lines.polars_lines`: polars' split where it is `_lines`' split,
#   cleaned as `_lines.clean` cleans them;
# - a line that holds none of the words `feed` acts on is skipped; an access line is counted;
#   a line with a rare word (events, server args, phase lines) goes to `feed`;
# - a batch line is read by a layout: a regex learned from a batch line's text that pins its
#   prefix shape, field keys and value shapes, so that a line matching it yields what `feed`
#   would yield; a line no layout reads goes to `feed` (and may teach a new layout: a
#   mid-file restart with another version's layout costs a few lines);
# - a value printed below zero (`#full token: -12`) is a value shape of its own, which gives
#   no sample: its lines go to `feed` until the reader has given all its diagnostics for
#   that field (`_MAX_BAD_NOTES`), and are tallied in bulk from then on;
# - a line whose trailing `, ` lost its blank (`#queue-req: 0,`: trimmed by an editor or a
#   hook) is read as the reader reads it, the last value before the comma;
# - a field the reader does not know (a newer version's) is part of a layout, its value
#   pinned to a plain shape: a line that would have a key noted goes to `feed`, the others
#   are counted in bulk (`unknown-field`);
# - fields glued by blanks instead of `, ` (a PD prefill server's `#transferring-req: 0
#   time: 0.07 `, 0.4.6–0.4.8) are read as the reader splits them, each a known key and a
#   plain number, the blanks after each pinned;
# - the TP-rank rule is applied in bulk only in its steady state (the emitting rank of a
#   group known and nothing held back); any other batch line goes to `feed`;
# - from a benchmark run's start on, `feed` hands every line to the run's block reader: the
#   lines it would hand back as they are (`BlockReader.passes`) are read as above while it
#   holds nothing, the others go to `feed`;
# - a chunk's samples are handed over at its end in the order `feed` would have yielded them.
# Chunks are split, classified and matched on worker threads; the main thread walks them in
# order. `tests/parsers/test_sglang_server_fast.py` compares both paths on every fixture.

_MAX_FAILED = 4096  # shapes of lines learning gave nothing for, remembered at most
_DIGITS_AS_ZERO = str.maketrans("123456789", "000000000")
# batch lines `feed` takes in a chunk before the rest of it goes there too, once they are
# also more than one in `_FEED_SHARE` of the rows walked (each costs a new segment, a few
# tenths of a millisecond, as much as `feed` spends on a dozen lines)
_MAX_FEEDS = 256
_FEED_SHARE = 16
_STATEFUL_RX = re.compile(f"batch|server_args=|{re.escape(_BENCH_WORD)}")  # `_stateful`'s
AHEAD = 2  # chunks prepared at once on worker threads while the main thread walks one
_WINDOW = 8192  # batch rows decided at once at first; the window grows while all goes well

# The lines `feed` must see beside batch lines: those holding one of the reader's words.
_RARE = FEED_WORDS
_DECODE, _PREFILL, _HTTP = "Decode batch", "Prefill batch", "HTTP/"
_PHASE_WORD = "ms/cyc"  # the lines the phase reader may read in bulk hold it

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
_ZERO = r"0{1,15}(?:\.0{1,15})?"
# the value of a field the reader does not know, as a layout pins it: a number, a flag or a
# word, without the `, `, `[`, `=` or `:` that would make the reader split or key it otherwise
_UNKNOWN_VALUE = r"[A-Za-z0-9_.%+-]{1,40}"
_ZERO_SIGNED = (r"0{{1,15}}(?:\.0{{1,15}})?", r"0{{1,15}}\.0{{{d},15}}")  # without, with decimals
# What the bulk TP-rank rule decides for a (kind, rank) of a run (`ranks.Ranks.decide`).
_DUP, _EMIT, _PLAIN, _FEED = ranks.DUP, ranks.EMIT, ranks.PLAIN, ranks.FEED


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
    # per capture group: (item, offset, characters after it in its item: a percent's `%`,
    # a line's last `,`) of its text in the line split at ", " (cheaper to read than the
    # capture groups), or None (see `_items`)
    items: tuple[tuple[int, int, int], ...] | None
    # fields printed below zero (`#full token: -12`): no sample, a diagnostic for each of
    # the first `_MAX_BAD_NOTES` of a field, then a tally; the reader's `_bad` keys of them
    bad: tuple[tuple[str, str, str], ...] = ()
    # fields the reader does not know (a newer version's), each key as the reader names it,
    # once per field printed: counted on every line, noted at a key's first line
    # (`Reader._unknown_field`; the line that would note one is fed)
    unknown: tuple[str, ...] = ()


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
    if m is None:
        return None
    mixed = m.group("mixed")  # 0.3.0's `Prefill batch(mixed #running-req: N).`
    if any(w in text for w in _RARE):
        return None  # lines a layout reads are known to hold no rare word
    p = _FAST_PREFIX.fullmatch(text, 0, at)
    if p is not None and RANK_TAG.search(p.group("lead")) is None:
        # SGLang's own `[date time TAGS] `, each rank number with its digit count: the tags
        # are then sliced at a fixed width (TP9 and TP10 lines have a layout each)
        found = RANK_TAG.findall(p.group("tags"))
        tags = "".join(f" {t}[0-9]{{{len(n)}}}" for t, n in found)
        head = f"^{_pinned(p.group('lead'))}\\[{_TS_SHAPES[len(p.group('ts'))]}{tags}\\] "
        spans = (p.start("ts"), len(p.group("ts")), p.end("ts"), len(p.group("tags")))
    else:
        other = _other_prefix(text, at)  # a logging config's own prefix, a collector's
        if other is None:
            return None
        head, spans, found = other
    names = [t for t, _ in found]
    if len(set(names)) != len(names):
        return None
    col = 1 if kind == "prefill" else 0
    pieces: list[str] = []
    groups: list[tuple[str | None, str, bool]] = []  # (metric, how, is pool usage)
    piece_of: list[int] = []  # per group: its piece (the items a field is printed in)
    body = text[m.end() :]
    # `..., #queue-req: 0,`: the trailing `, ` of 0.5's lines with its blank trimmed (by an
    # editor, a hook, a log viewer); the reader reads the last value before the comma
    comma = body.endswith(",")
    items = (body[:-1] if comma else body).split(", ")
    if comma and (not items[-1] or items[-1].endswith(",")):
        return None
    if "[" in body:
        items = _bracketed(items)  # `est uncap acc len: 3.25 [3.00, 3.50]` is one field
    prev_key = ""  # the key of a `key: sub=N` item, for the `sub=N` items after it
    bad: list[tuple[str, str, str]] = []  # (kind, key as `_field` names it, code)
    bad_groups: set[int] = set()
    unknown: list[str] = []  # keys of fields the reader does not know, as it names them
    for i, item in enumerate(items):
        if not item:
            if i == len(items) - 1 and i > 0:
                pieces.append("")  # the trailing ", " of some versions
                continue
            return None
        sep = item.rfind(": ")
        spec = _FIELDS_PRINTED.get(item[:sep]) if sep > 0 else None
        if spec is None and sep > 0 and ": " in item[:sep]:
            # fields glued by blanks (PD prefill 0.4.6–0.4.8), split as `Reader._fields` does
            glued = _glued(item) if kind == "prefill" else None
            if glued is None:
                return None
            parts: list[str] = []
            for g_lead, g_shape, g_spec in glued:
                parts.append(g_lead + g_shape)
                groups.append((g_spec[1], "num", False))
                piece_of.append(len(pieces))
            pieces.append("".join(parts))
            prev_key = ""
            continue
        raw = item[sep + 2 :]
        lead = item[: sep + 2]  # the item's literal text before its value
        if spec is not None and spec[3] == "skip":
            # a field the reader passes over whatever it holds: its text of this shape
            pieces.append(_rx(lead) + _pinned(raw))
            prev_key = ""
            continue
        if sep < 0 or (spec is not None and "=" in raw and raw[:1].isalpha()):
            # 0.4.9 SWA pools, read as `Reader._fields` reads them: `#token: full=N, swa=M`
            # is `#full token: N`, `#swa token: M`
            key = item[:sep] if sep > 0 else prev_key
            sub, eq, raw = (item if sep < 0 else raw).partition("=")
            if not (key and eq and sub.isalpha()):
                return None
            prev_key = key
            shown = _sub_key(key.strip(), sub)
            spec = _FIELDS.get(shown.lower())
            lead = item[: len(item) - len(raw)]
            if spec is None or spec[3] in ("bool", "pct", "skip"):
                return None
        elif spec is None:
            # a field the reader does not know: noted once, counted on every line, its value
            # ignored (`Reader._field`); the value pinned to a shape it reads alike
            shown = item[:sep].strip()
            if (
                sep == 0
                or not shown
                or ": " in item[:sep]
                or _FIELDS.get(shown.lower()) is not None
                or re.fullmatch(_UNKNOWN_VALUE, raw) is None
            ):
                return None
            pieces.append(_rx(lead) + _UNKNOWN_VALUE)
            unknown.append(shown)
            prev_key = ""
            continue
        else:
            prev_key = ""
            shown = item[:sep]
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
            sign = ""
            if num.startswith("-") and not pct:
                sign, num = "-", num[1:]
            frac = _fraction(num, decimals)
            if frac is None:
                return None
            if not sign:
                shape = f"([0-9]{{1,15}}{frac})"
            elif num.strip("0.") == "":
                # `-0.00` (a pool's usage of a count below zero): the reader's sample is -0.0
                shape = "(-" + _ZERO_SIGNED[bool(decimals)].format(d=decimals) + ")"
            else:
                # below zero: no sample (`_bad_value`). `-12`, `-3.50`: whatever the fraction;
                # `-0.05`: by the fraction alone, printed with as many decimals (one
                # alternative per place of its first nonzero digit)
                shape = f"(-0{{0,14}}[1-9][0-9]{{0,14}}{frac})"
                if not num.split(".")[0].strip("0"):
                    places = len(num.partition(".")[2])
                    alts = "|".join(
                        f"0{{{i}}}[1-9][0-9]{{{places - 1 - i}}}" for i in range(places)
                    )
                    shape = f"(-0{{1,15}}\\.(?:{alts}))"
                bad.append((kind, shown.strip(), "impossible-value"))
                bad_groups.add(len(groups))
            value_how = "pct" if pct else "num"
            if pct:
                shape += "%"
        pieces.append(f"{_rx(lead)}{shape}")
        groups.append((spec[1] if col else spec[0], value_how, how == "usage"))
        piece_of.append(len(pieces) - 1)
    tail_text = text[at + len(marker) : m.end()]
    outputs: list[tuple[str, tuple[int, ...], str]] = []
    if mixed is None:
        tail = re.sub(r"[0-9]+", "[0-9]+", _rx(tail_text))
    else:
        # the running count in the tail is the line's first value, before the fields'
        # (`Reader._batch`), never one of theirs: a field of the same metric too, and the
        # reader would give both
        if any(metric == "prefill_running_req" for metric, _, _ in groups):
            return None
        at_n = m.start("mixed") - (at + len(marker))
        rest = tail_text[at_n + len(mixed) :]
        if any(c.isdigit() for c in tail_text[:at_n] + rest):
            return None
        tail = _rx(tail_text[:at_n]) + "([0-9]{1,15})" + _rx(rest)
        outputs.append(("prefill_running_req", (1,), "num"))
    first = len(outputs)  # capture groups before the fields' own
    end = ",$" if comma else "$"
    pattern = head + _rx(marker) + tail + ", ".join(pieces) + end
    whole = re.fullmatch(pattern, text)
    if whole is None:  # a layout that does not read its own line
        return None
    for g, (metric, h, _) in enumerate(groups):
        if g in bad_groups:
            continue  # no sample, and not the metric's first either (`_fields`)
        if metric and all(o[0] != metric for o in outputs):  # the first of each, as `_fields`
            outputs.append((metric, (g + 1 + first,), h))
    usage = [
        (g + 1 + first, h)
        for g, (_, h, is_usage) in enumerate(groups)
        if is_usage and g not in bad_groups
    ]
    total = "prefill_token_usage" if col else "token_usage"
    if usage and not any(o[0] in ("token_usage", "prefill_token_usage") for o in outputs):
        outputs.append((total, tuple(g for g, _ in usage), "max"))
    idle: list[str] = []
    if kind == "decode":
        # the line with a zero in one running_req value: `_batch` then keeps no sample
        number = r"([0-9]{1,15}(?:\.[0-9]{1,15})?)"
        for g, (metric, _, _) in enumerate(groups):
            if metric == "running_req" and g not in bad_groups:
                parts = list(pieces)
                parts[piece_of[g]] = parts[piece_of[g]].replace(number, f"({_ZERO})")
                idle.append(head + _rx(marker) + tail + ", ".join(parts) + end)
    return _Layout(
        kind=kind,
        pattern=pattern,
        ts_at=spans[0],
        ts_len=spans[1],
        tags_at=spans[2],
        tags_len=spans[3],
        outputs=tuple(outputs),
        usage_how=tuple(h for _, h in usage),
        idle_patterns=tuple(idle),
        accept=any(o[0] == "accept_len" for o in outputs),
        # the tail's numbers (` batch [12]`) are of any width: no value's offset may count them
        items=_items(
            whole,
            ["num"] * first + [h for _, h, _ in groups],
            m.end() if any(c.isdigit() for c in tail_text) else 0,
            comma,
        ),
        bad=tuple(bad),
        unknown=tuple(unknown),
    )


def _fraction(num: str, decimals: int | None) -> str | None:
    """The regex of a value's fraction as a layout pins it, from the unsigned number printed
    (`num`) and its field's fixed decimals: at least those decimals (fewer would be a cut
    value: `feed` says so), or any; None when `num` is no plain number of that kind."""
    d = _DEC_SHAPE.fullmatch(num)
    if decimals:
        if d is None or len(d.group("d")) < decimals:
            return None
        return rf"\.[0-9]{{{decimals},15}}"
    if d is None and _INT_SHAPE.fullmatch(num) is None:
        return None
    return r"(?:\.[0-9]{1,15})?"


def _glued(
    item: str,
) -> list[tuple[str, str, tuple[str | None, str | None, int | None, str]]] | None:
    """An item of fields glued by blanks (`#transferring-req: 0 time: 0.07 `), as the
    reader reads it (`_GLUED`, each key stripped and looked up in `_FIELDS`, each value
    with the blanks after it): per field, the regex of its text before the value, its
    value's shape (a capture group) with those blanks, and the key's entry. None unless
    the fields tile the item and each is a known numeric key with a plain number of its
    full decimals, below the reader's bound on such items."""
    if len(item) >= 400:  # (the reader reads longer ones as one field)
        return None
    out: list[tuple[str, str, tuple[str | None, str | None, int | None, str]]] = []
    at = values = 0
    for g in _GLUED.finditer(item):
        if g.start() != at:
            return None
        at = g.end()
        spec = _FIELDS.get(g.group("k").strip().lower())
        raw = g.group("v")
        if spec is None or spec[3] != "n":
            return None
        frac = _fraction(raw, spec[2])
        if frac is None:
            return None
        values += len(raw)
        blanks = item[g.end("v") : g.end()]
        out.append(
            (_rx(item[g.start() : g.start("v")]), f"([0-9]{{1,15}}{frac}){_rx(blanks)}", spec)
        )
    if not out or at != len(item):
        return None
    # the reader splits an item so only below 400 characters: every item the layout matches
    # must be, its values at their widest (15 digits, a point, 15 decimals)
    widest = len(item) - values + 31 * len(out)
    return out if widest < 400 else None


def _other_prefix(
    text: str, at: int
) -> tuple[str, tuple[int, int, int, int], list[tuple[str, str]]] | None:
    """A batch line's prefix of another shape (`2026-01-25 11:22:05.874 INFO 120984 [ TP0
    scheduler.py:415] `): its regex (the text, each run of digits as that many digits), where
    the timestamp and the rank tags `Reader._batch` finds in it stand (`last_timestamp`,
    `rank_of`), and the tags. Those are found by the text's shape, not its digits' values:
    every line the regex matches has them at the same places. None without a timestamp,
    with tags that are not printed as `rank_of` joins them, or with a second `] ` in the
    line (which `feed` may read as two lines glued)."""
    prefix = text[:at]
    if text.count("] ") > 1:
        return None
    stamps = list(TIMESTAMP.finditer(prefix))
    if not stamps:
        return None
    ts = stamps[-1]
    tags = list(RANK_TAG.finditer(prefix))
    if tags:
        start, end = tags[0].start(), tags[-1].end()
        if start == 0 or prefix[start:end] != " ".join(t.group() for t in tags):
            return None
        tags_at, tags_len = start - 1, end - start + 1  # with the character before them
    else:
        tags_at, tags_len = ts.end(), 0
    head = "^" + _pinned(prefix)
    rank = text[tags_at + 1 : tags_at + tags_len] or None
    if last_timestamp(prefix) != ts.group() or rank_of(prefix)[0] != rank:
        return None
    spans = (ts.start(), len(ts.group()), tags_at, tags_len)
    return head, spans, [(t.group(1), t.group(2)) for t in tags]


def _items(
    whole: re.Match[str], hows: list[str], varying_until: int, comma: bool = False
) -> tuple[tuple[int, int, int], ...] | None:
    """Where each capture group's text stands in `text.split(", ")` of a line the layout
    reads: (item, offset in it, characters after it: a percent's `%`, the `,` that ends
    a line of `comma`), the same for every such line (no `, ` in a value, and what
    precedes a value in its item is literal text or of a pinned width); None when a group
    is not its item's tail, or its item starts before `varying_until` (text of varying
    width before it), and the values are then read with the capture groups."""
    text = whole.string
    bounds: list[tuple[int, int]] = []
    at = 0
    for item in text.split(", "):
        bounds.append((at, at + len(item)))
        at += len(item) + 2
    found: list[tuple[int, int, int]] = []
    for g, how in enumerate(hows, start=1):
        start, end = whole.span(g)
        k = next(i for i, (a, b) in enumerate(bounds) if a <= start <= b)
        a, b = bounds[k]
        after = (how == "pct") + (comma and k == len(bounds) - 1)
        if end + after != b or a < varying_until:
            return None
        found.append((k, start - a, after))
    return tuple(found)


class Fast:
    """Chunk-at-a-time reading of what `Reader.feed` would read the same way.

    Chunks are prepared (split, classified, matched to the layouts known so far: no reader
    state is touched) on worker threads, `AHEAD` chunks ahead, while this thread walks the
    oldest one; polars and numpy let go of the GIL, so every core works.
    """

    def __init__(
        self, reader: Reader, src: SourceText, sink: Callable[[SampleBatch], None] | None
    ) -> None:
        self.r = reader
        self.src = src
        self.sink = sink
        self.layouts: list[_Layout] = []
        self.bad = False  # whether a layout reads a value below zero (`_Layout.bad`)
        self.unknown = False  # whether a layout holds a field not known (`_Layout.unknown`)
        self.index: dict[str, int] = {}  # layout pattern -> its place in `layouts`
        self.metrics: list[str] = []  # metric names of the layouts' outputs
        self.metric_ids: list[tuple[int, ...]] = []  # per layout: its outputs' metric ids
        self.hits: list[int] = []  # per layout: rows it read so far (the order tried in)
        self.recent: list[int] = []  # per layout: rows it read in the last chunk prepared
        self.handed = 0  # samples handed over in bulk so far (`chunk_size`) ...
        self.walked = 0  # ... from the chunks walked, of these bytes
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._failed: set[str] = set()  # shapes of lines no layout was learned from

    def prepare(self, chunk: Chunk) -> Future[ChunkRun | None]:
        """Start preparing a chunk on the worker thread."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(AHEAD, thread_name_prefix="sessionlens-sglang")
        layouts = list(self.layouts)
        return self._pool.submit(self._prepare, chunk, layouts)

    def _prepare(self, chunk: Chunk, layouts: list[_Layout]) -> ChunkRun | None:
        import polars as pl

        flags = {
            "dec": pl.col("t").str.contains(_DECODE, literal=True),
            "pre": pl.col("t").str.contains(_PREFILL, literal=True),
        }
        lines = _lines.polars_lines(chunk, flags)
        if lines is None:
            return None
        t, found = lines
        return ChunkRun(self, chunk, t, found["dec"], found["pre"], layouts)

    def walk(self, chunk: Chunk, prepared: Future[ChunkRun | None]) -> Iterator[Record]:
        """Records of a prepared chunk's lines, in line order (samples go to the sink)."""
        run = prepared.result()
        self.walked += len(chunk.data)
        if run is None or (self.r.bench is not None and not run.enter_bench(-1)):
            for ln in self.src.chunk_lines(chunk):
                yield from self.r.feed(ln)
            return
        yield from run.run()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def learn(self, text: str) -> _Layout | None:
        """The layout of a batch line (a new one is kept), if it has one. A line of a shape
        (its text, each digit as 0) that gave none is not tried again: learning compiles
        regexes, and a log whose batch lines no layout reads would pay it on every line."""
        shape = text.translate(_DIGITS_AS_ZERO)
        if shape in self._failed:
            return None
        layout = _learn(text)
        with self._lock:  # the preparing thread learns too
            kept = None if layout is None else self._keep(layout)
            if kept is None:
                if len(self._failed) >= _MAX_FAILED:
                    self._failed.clear()
                self._failed.add(shape)
            return kept

    def _keep(self, layout: _Layout) -> _Layout | None:
        at = self.index.get(layout.pattern)
        if at is not None:
            return self.layouts[at]
        if len(self.layouts) >= _learning.MAX_LAYOUTS:
            return None
        ids = []
        for metric, _, _ in layout.outputs:
            if metric not in self.metrics:
                self.metrics.append(metric)
            ids.append(self.metrics.index(metric))
        self.metric_ids.append(tuple(ids))
        self.hits.append(0)
        self.recent.append(0)
        self.bad = self.bad or bool(layout.bad)
        self.unknown = self.unknown or bool(layout.unknown)
        self.layouts.append(layout)
        self.index[layout.pattern] = len(self.layouts) - 1  # published last
        return layout


@dataclass
class _Segment:
    """Matched batch rows [a, c) (positions in `ChunkRun.m_row`) decided in bulk from one
    snapshot of the TP-rank state; `stop` is the row where the segment ends."""

    a: int
    c: int
    stop: int
    feed_at: int | None  # the row whose TP-rank step only `feed` can take (it is `stop`)
    status: npt.NDArray[np.int8]  # per position in [a, c)
    # per slot: (its facts, the rows of its emitting lines, in order)
    emitting: dict[tuple[str, str], tuple[ranks.Slot, npt.NDArray[np.int64]]]
    keep: npt.NDArray[np.int64]  # positions (in the batch arrays) of lines giving samples


class ChunkRun:
    """The lines of one chunk: which go to `feed`, which are read in bulk, in line order.

    Samples are gathered for the whole chunk and handed over at its end, ordered as `feed`
    would have yielded them (by the row that yielded each, then its place in that row's
    output); other records are yielded as they come (no consumer orders them with samples).
    """

    def __init__(
        self,
        fast: Fast,
        chunk: Chunk,
        t: pl.Series,
        dec: npt.NDArray[np.bool_],
        pre: npt.NDArray[np.bool_],
        layouts: list[_Layout],
    ) -> None:
        import numpy as np
        import polars as pl

        self.f = fast
        self.r = fast.r
        self.chunk = chunk
        self.n = t.len()
        self.stateful_feeds = 0
        self.window = _WINDOW
        # From a benchmark run's start on (`enter_bench`), its block reader: the lines that
        # it would not hand back to the server reader as they are go to `feed` too.
        self.bench: BlockReader | None = None
        self.bench_rows: npt.NDArray[np.int64] = np.zeros(0, np.int64)
        self.keep: list[npt.NDArray[np.int64]] = []  # batch positions whose samples to read
        self.fed: list[tuple[int, Sample]] = []
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
        self._plan_phases(t)
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
        # (a chunk of `grep -r` output over many files learns a few layouts of each file)
        budget = _learning.Budget(nb)
        failed: set[int] = set()
        while budget:
            unread = np.flatnonzero(self.b_layout < 0)
            pick = next((k for k in unread[:64].tolist() if k not in failed), None)
            if pick is None:
                break
            layout = fast.learn(self.b_t[pick])
            if layout is None or fast.index[layout.pattern] in self.tried:
                failed.add(pick)
                budget.failed()
                continue
            self._match(np.arange(nb) > pick - 1, [layout])
            if self.b_layout[pick] < 0:  # (not its own line, in polars: learn no more from it)
                failed.add(pick)
                budget.failed()
            else:
                budget.learned(int(np.count_nonzero(self.b_layout == fast.index[layout.pattern])))
        with fast._lock:  # the order the next chunk tries them in (`_learning.tried`)
            fast.recent[:] = _learning.recent_counts(self.b_layout, len(fast.recent))
        self._set_feeds()
        self._read_ahead()

    @property
    def first(self) -> int:
        return self.chunk.first

    def _plan_phases(self, t: pl.Series) -> None:
        """Phase lines the phase reader reads in bulk (`InlineReader.plan`): those `feed`
        hands it as they are (no other line's prefix glued in, no benchmark run's start),
        with the rank `Reader._phase_rank` gives; they are no longer fed."""
        import numpy as np
        import polars as pl

        self.phases: PhasePlan | None = None
        self.planned = np.zeros(self.n, np.bool_)
        self.run_first: list[int] = []
        if len(self.rare_rows) == 0:
            return
        rare = t.gather(self.rare_rows)
        cand = rare.to_frame("t").select(
            pl.col("t").str.contains(_PHASE_WORD, literal=True)
            & ~pl.col("t").str.contains(_BENCH_WORD, literal=True)
            & (pl.col("t").str.count_matches("] ", literal=True) <= 1)
        )
        rows = self.rare_rows[cand.to_series().to_numpy()]
        if len(rows) == 0:
            return
        plan = self.r.phase.plan(t, rows, _phase_rank_spans, GLUED_RX)
        if len(plan.planned) == 0:
            return
        self.phases = plan
        self.planned[plan.planned] = True
        self.run_first = plan.run_first.tolist()
        self.rare_rows = self.rare_rows[~self.planned[self.rare_rows]]

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
        queues: dict[str, list[_Layout]] = {}
        for kind in ("decode", "prefill"):
            mine = {f.index[lay.pattern]: lay for lay in layouts if lay.kind == kind}
            queues[kind] = [mine[li] for li in _learning.tried(mine, f.recent, f.hits)]
        for queue in queues.values():
            for lay in queue:
                self.tried.add(f.index[lay.pattern])
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

        uniq, inverse = numbered(codes)
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
        if len(self.bench_rows):  # a benchmark run's reader may take them: fed
            read &= ~np.isin(self.b_row, self.bench_rows)
        fed = np.union1d(self.rare_rows, self.b_row[~read])
        self.feed_rows = np.union1d(fed, self.bench_rows).tolist()
        # the rows among them that change the TP-rank state (`_stateful`, but for a benchmark
        # run not begun yet): a segment decides no row past the next one (`_segment`)
        self.stateful_rows = [r for r in self.feed_rows if _STATEFUL_RX.search(self.t[r])]
        self.m_pos = np.flatnonzero(read)  # positions in the batch arrays
        self.m_row = self.b_row[self.m_pos]

    # ------------------------------------------------------------------ the walk

    def enter_bench(self, after: int) -> bool:
        """Read on in bulk below a benchmark run's block reader (`Reader.bench`), from the
        row after `after` on: whether it can. The lines it hands back to the server reader
        as they are (`BlockReader.passes`) are read as before, and counted as it counts
        them; any other line goes to `feed`. Not when another reader took the benchmark's
        server lines, or a phase line read in bulk would not pass, or a line that would not
        pass follows a phase run read in bulk (the server reader never sees it: it does not
        close the block there) — the chunk is read line by line from here on then."""
        import numpy as np

        bench = self.r.bench
        if not isinstance(bench, BlockReader):
            return False
        own = bench.embedded
        if not isinstance(own, _Own) or own.reader is not self.r:
            return False
        rows = np.flatnonzero(~bench.passing(self.t))
        rows = rows[rows > after]
        if self.planned[rows].any() or self.planned[rows[rows > 0] - 1].any():
            return False
        self.bench = bench
        self.bench_rows = rows
        self._set_feeds()
        return True

    def run(self) -> Iterator[Record]:
        """Records of the chunk's lines; its samples go to the sink at the end."""
        n = self.n
        i = 0
        seg: _Segment | None = None
        while i < n:
            if self.stateful_feeds > _MAX_FEEDS + i // _FEED_SHARE:  # too irregular: by line
                self._settle(seg, i)
                seg = None
                for row in range(i, n):
                    yield from self._feed(row)
                break
            if not self._idle():  # an open traceback or phase block takes the line
                if self.r._tb is not None and self._plain(i):
                    if not self.r.traceback_takes(self.t[i]):
                        # the line closes the traceback (its diagnostic), then is read as
                        # any other: in bulk where the bulk path reads it
                        self.r.close_traceback()
                        continue
                    if not self._bulk_row(i):
                        # the traceback takes it and `feed` does nothing else: no TP-rank
                        # state read or changed, whatever it holds (a frame's
                        # `schedule_batch.py` or `batch = ...` is no batch line)
                        yield from self._take(i, self.r.feed(Line(self.first + i, self.t[i])))
                        i += 1
                        continue
                if (
                    self.r._tb is None
                    and self._passes_through()
                    and not self._fed_row(i)
                    and not self.planned[i]
                ):
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
                s = bisect_left(self.stateful_rows, i)
                seg = self._segment(i, self.stateful_rows[s] if s < len(self.stateful_rows) else n)
            end = min(j, seg.stop)
            self._count_http(i, end)
            if self.bench is not None:
                # They would have passed through it, each counted. (The samples it would
                # have marked as the server log's embedded: `Reader.finish` unmarks them.)
                self.bench.passed(end - i)
            yield from self._take_phases(i, end)
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
        return self.r._tb is None and self.r.phase.idle and self._passes_through()

    def _plain(self, row: int) -> bool:
        """Whether all `feed` does with the row while a traceback is open is the traceback's
        step (`Reader.traceback_takes`): no benchmark run's reader, no phase block open, no
        benchmark run's start, no line glued after a cut one (`Reader._feed_own`), and no
        planned phase line but a run's first (the rest of a run whose first line the
        traceback took is fed: the bulk path takes runs from their first line only)."""
        text = self.t[row]
        if self.planned[row]:
            k = bisect_left(self.run_first, row)
            if k == len(self.run_first) or self.run_first[k] != row:
                return False
        return (
            self.bench is None
            and self.r.bench is None
            and self.r.phase.idle
            and _BENCH_WORD not in text
            and glued_at(text) is None
        )

    def _bulk_row(self, row: int) -> bool:
        """Whether the bulk path reads the row: a batch row it decides, or a planned phase
        row."""
        import numpy as np

        k = int(np.searchsorted(self.m_row, row))
        return bool(k < len(self.m_row) and self.m_row[k] == row) or bool(self.planned[row])

    def _passes_through(self) -> bool:
        """No benchmark run's reader, or one that holds nothing (`passes_through`)."""
        return self.bench is None or self.bench.passes_through

    def _fed_row(self, row: int) -> bool:
        k = bisect_left(self.feed_rows, row)
        return k < len(self.feed_rows) and self.feed_rows[k] == row

    def _close_phase(self, row: int) -> Iterator[Record]:
        """What `Reader._feed_own` does first with a line that is not a phase line (none of
        the rare words) while a phase block is open: the phase reader closes the block."""
        records = list(self.r.phase.feed(Line(self.first + row, self.t[row])))
        if records:
            self.r.ctx.embedded.add(_PHASES)
            self._bench_marks(records)
        yield from self._take(row, records)
        assert self.r.phase.idle  # any line without `ms/cyc` or stage times closes a block

    def _bench_marks(self, records: Iterable[Record]) -> None:
        """What `Reader.feed` marks of records a benchmark run's reader passes on."""
        if self.bench is not None and any(isinstance(r, BlockStart) for r in records):
            self.r.ctx.embedded.add(_BENCH_FORMAT)

    def _take(self, row: int, records: Iterable[Record]) -> Iterator[Record]:
        """Records `feed` gave for a row: its samples kept for the hand-over (with the row
        that gave them), the others yielded."""
        for rec in records:
            if isinstance(rec, Sample):
                self.fed.append((row, rec))
            else:
                yield rec

    def _stateful(self, row: int) -> bool:
        """Whether `feed` may read or change the TP-rank state or the rows read in bulk at
        this line (batch lines and server args do, and a benchmark run's start; events,
        phase and access lines do not)."""
        text = self.t[row]
        starts = self.r.bench is None and _BENCH_WORD in text
        return "batch" in text or "server_args=" in text or starts

    def _take_phases(self, i: int, end: int) -> Iterator[Record]:
        """The planned phase runs that start in rows [i, end), which the walk reaches with
        no block open and nothing fed in between (a run never straddles `end`: its rows are
        no batch and no fed rows)."""
        if self.phases is None:
            return
        lo, hi = bisect_left(self.run_first, i), bisect_left(self.run_first, end)
        if hi > lo:
            starts = self.r.phase.take(self.phases, lo, hi, self.first)
            self.r.ctx.embedded.add(_PHASES)
            if starts is not None:
                if self.bench is not None:
                    self.r.ctx.embedded.add(_BENCH_FORMAT)  # as `Reader.feed` marks them
                yield starts

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
        if self.r.bench is not None and self.bench is None and not self.enter_bench(row):
            self.stateful_feeds = self.n + _MAX_FEEDS  # a benchmark run from here: by line
            return
        if row in self.unread:
            layout = self.f.learn(text)
            if layout is not None and self.f.index[layout.pattern] not in self.tried:
                later = self.b_row > row
                if later.any():
                    self._match(later, [layout])
                    self._set_feeds()

    # ------------------------------------------------------------------ bulk

    def _segment(self, i: int, until: int) -> _Segment:
        """Decide the matched batch rows from row i on, a window's worth, in bulk, none
        from row `until` on (a row `feed` takes that may change the state: the walk would
        decide those rows again after it; a log with a cut batch line every hundred lines
        would otherwise decide a whole window for each)."""
        import numpy as np

        a = int(np.searchsorted(self.m_row, i))
        c = min(a + self.window, int(np.searchsorted(self.m_row, until)))
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
        combos, inverse = numbered(code)
        decided = np.empty(len(combos), np.int8)
        slots: dict[int, ranks.Slot] = {}
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
        emitting: dict[tuple[str, str], tuple[ranks.Slot, npt.NDArray[np.int64]]] = {}
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
    ) -> tuple[int, ranks.Slot | None]:
        """What the reader does with lines of this kind, layout and rank tags, as long as only
        lines decided in bulk come between (the rank rule's bulk step, `Ranks.decide`)."""
        if layout.accept and not self.r._bonus_set:
            return _FEED, None  # its first line sets `accept_len_counts_bonus`
        if not all(self.r.bad_tallied(key) for key in layout.bad):
            return _FEED, None  # a value below zero the reader still gives a diagnostic for
        if layout.unknown and self.r.notes_unknown(layout.unknown):
            return _FEED, None  # a field not known that the reader still notes
        rank, nums = rank_of(tags)
        return self.r.ranks.decide("decode" if is_dec else "prefill", rank, nums, taken)

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
        if self.f.bad and len(pos):
            # values below zero, past their diagnostics: tallied (`_decide` fed the others)
            per_layout = np.bincount(self.b_layout[pos], minlength=len(self.f.layouts))
            for li in np.flatnonzero(per_layout).tolist():
                for key in self.f.layouts[li].bad:
                    self.r.tally_bad(key, int(per_layout[li]))
        if self.f.unknown and len(pos):
            # fields not known, past their notes: counted (`_decide` fed the others)
            per_field = np.array([len(x.unknown) for x in self.f.layouts], np.int64)
            n = int(per_field[self.b_layout[pos]].sum())
            if n:
                ctx.count("unknown-field", n)
        for facts, rows in seg.emitting.values():
            n = int(np.searchsorted(rows, upto))
            if not n:
                continue
            row = int(rows[n - 1])
            lay = self.f.layouts[int(self.b_layout[np.searchsorted(self.b_row, row)])]
            self.r.ranks.hold(facts, self.t[row][lay.ts_at : lay.ts_at + lay.ts_len], n)
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
        likely[: len(self.tags)] = self.r.ranks.likely([rank_of(tag) for tag in self.tags])
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
        import polars as pl

        f = self.f
        lay_of = self.b_layout[pos]
        layouts = present_codes(lay_of)
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
        layouts = present_codes(lay_of)
        found = [self._values(li, pos[lay_of == li]) for li in layouts]
        ts_parts: list[pl.Series] = []
        ts_rows: list[npt.NDArray[np.int64]] = []
        for li, got in zip(layouts, found, strict=True):
            k = len(f.layouts[li].outputs)
            ids = f.metric_ids[li]
            if len(layouts) == 1:  # every row of one layout (a log's steady state): views
                idx = np.arange(len(pos))
                grid = (value.reshape(-1, k), metric.reshape(-1, k), owner.reshape(-1, k))
                for j in range(k):
                    grid[0][:, j] = got[f"v{j}"].to_numpy()
                    grid[1][:, j] = ids[j]
                    grid[2][:, j] = idx
            else:  # a column at a time: each row's j-th sample at its start + j
                idx = np.flatnonzero(lay_of == li)
                at = start[idx]
                for j in range(k):
                    value[at] = got[f"v{j}"].to_numpy()
                    metric[at] = ids[j]
                    owner[at] = idx
                    at += 1
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
        phases = self.phases.samples() if self.phases is not None else None
        if phases is not None:
            phases = phases.with_columns(pl.col("line") + self.first)
        if fed or phases is not None:
            # By the row that yields each, and at one row: a phase block's totals, then the
            # samples `feed` gives for the row (the line that ends the block), then the bulk
            # samples; each kind in its own order. One stable sort of the rows (each kind's
            # are ascending already: runs to merge) and one gather.
            pieces = [] if phases is None else [phases]
            if fed:
                pieces.append(
                    pl.DataFrame(
                        {"emit": [row for row, _ in fed], **batch_columns([s for _, s in fed])},
                        schema=schema,
                    ).with_columns(pl.col("rank", "ts", "metric").cast(pl.Categorical))
                )
            if bulk is not None:
                pieces.append(bulk)
            emit = np.concatenate([p["emit"].to_numpy() for p in pieces])
            if len(pieces) == 1 and bool((emit[1:] >= emit[:-1]).all()):
                frame = pieces[0]
            else:
                order = np.argsort(emit, kind="stable")
                frame = pl.concat(pieces, how="diagonal")[order]
        if frame is None or frame.height == 0:
            return
        frame = frame.select(
            pl.col(c) if c in frame.columns else pl.lit(None, schema[c]).alias(c)
            for c in BATCH_COLUMNS
        )
        self.f.handed += frame.height
        yield from SampleBatch(frame).hand_over(self.f.sink)


def _phase_rank_spans(text: str) -> tuple[tuple[str, int, int], ...]:
    """Where the rank `Reader._phase_rank` gives a phase line stands in it: (tag, start and
    width of its number) per rank tag; the same for every line that differs from this one
    only in digits, in runs of the same width (`find` and `RANK_TAG` see only digits)."""
    at = text.find("]")
    if at <= 0:
        return ()
    return tuple((m.group(1), m.start(2), len(m.group(2))) for m in RANK_TAG.finditer(text, 0, at))


def _groups(layout: _Layout) -> list[pl.Expr]:
    """The texts of the layout's capture groups its outputs read, as columns `1`, `2`, ...
    of a line `t` it reads (a percent without its `%`)."""
    import polars as pl

    if layout.items is None:
        return [pl.col("t").str.extract_groups(layout.pattern).struct.unnest()]
    parts = pl.col("t").str.split(", ")
    out = []
    for g in sorted({g for _, gs, _ in layout.outputs for g in gs}):
        item, offset, after = layout.items[g - 1]
        col = parts.list.get(item).str.slice(offset)
        if after:  # a percent's `%`, a line's last `,`: the value's length is all but these
            col = col.str.slice(0, col.str.len_chars() - after)
        out.append(col.alias(str(g)))
    return out


def _value(groups: tuple[int, ...], how: str, usage_how: tuple[str, ...]) -> pl.Expr:
    """A sample's value from the layout's capture groups, as `_fields` computes it."""
    import polars as pl

    def one(group: int, h: str) -> pl.Expr:
        raw = pl.col(str(group))
        if h == "bool":
            return (raw == "True").cast(pl.Float64)
        if h == "pct":  # as `_fields.percent`: the printed digits times 1e-2
            return pl.concat_str([raw, pl.lit("e-2")]).cast(pl.Float64)
        return raw.cast(pl.Float64)

    if how == "max":
        # Python's `max` keeps the first of equal values and polars' the last: they differ
        # on -0.0 and 0.0 (`-0.00`, a pool's usage of a count below zero), so the groups go
        # in reversed
        pairs = list(zip(groups, usage_how, strict=True))[::-1]
        return pl.max_horizontal([one(gr, h) for gr, h in pairs])
    return one(groups[0], how)
