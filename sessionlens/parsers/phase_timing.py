"""`phase-timing`: profiler lines `NAME: X ms/cyc ( P%)` and vLLM V0's stage-time line.

Owns phase blocks and their verify/draft/cycle totals (DESIGN §3). `Reader` is the line-level
state machine server logs embed (`ctx.embed_inline("phase-timing")`, through `line_reader`); it
reads no other record: any other line ends a block.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from .. import _learning, metrics
from .._codes import present_codes
from .._lines import Line, SourceText
from ..model import BlockStart, BlockStarts, Record, Sample
from ._fields import (
    TIMESTAMP,
    decimals_of,
    last_timestamp,
    percent,
    pinned_digits,
    rank_of,
    read_number,
)
from ._fields import regex_literal as _lit
from .base import ParseContext, PhasePlan, RankSpans

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import polars as pl

format_id = "phase-timing"
priority = 15

_SNIFF = re.compile(r":\s*[-+]?\d[\d.]*\s*ms/cyc\b")
_STAGE_SNIFF = "SpecDecodeWorker stage times"
# Every line `Reader.starts` is true of holds one of these (for embedders picking lines).
WORDS = ("ms/cyc", _STAGE_SNIFF)

# `NAME: 29.47 ms/cyc`: the name stands between the colon before the value and the colon
# (or start) before it; see `_clean_name` for the prefixes taken off. Found with rfind, not
# a regex, so a 25 KB line costs linear time.
_SHARE = re.compile(r"\s*\(\s*(?P<v>[^%)\s]*)\s*(?P<pct>%)?\s*(?P<close>\))?")
# What may follow the colon on a cut last line that stops before `ms/cyc`.
_CUT_TAIL = re.compile(r"\s*[-+]?[\d.]*\s*(?:m(?:s(?:/(?:c(?:y)?)?)?)?)?\s*")
_LEADING_JUNK = re.compile(
    r"^(?:\d{4}-\d{2}-\d{2}T\S+\s+"  # docker `-t` RFC 3339 timestamp
    r"|\(\w*\s*pid=\d+[^)]*\)\s*"  # Ray / vLLM process prefix
    r"|\S+\.(?:log|txt|out|err)(?:\.\d+)?-(?:\d+-)?"  # grep context line `file-`
    r")+"
)
_STAGE_KV = re.compile(r"(?P<k>[A-Za-z_]+)=(?P<v>\S*)")
_STAGE_FIELDS = {
    "average_time_per_proposal_tok_ms": "draft_ms_per_token",
    "scoring_time_ms": "target_forward_ms",
    "verification_time_ms": "rejection_sampling_ms",
}


def sniff(head: str, name: str) -> float:
    """Score: phase lines are a strong hint, but a server log that embeds them wins."""
    if _SNIFF.search(head):
        if "Decode batch" in head or "Prefill batch" in head or "server_args=" in head:
            return 0.5
        return 0.9
    if _STAGE_SNIFF in head:
        return 0.6
    return 0.0


def _split_phase(text: str, at: int) -> tuple[str, int, str] | None:
    """(name, end of the name, value text) of a line whose `ms/cyc` starts at `at`."""
    colon = text.rfind(":", 0, at)
    if colon < 0:
        return None
    ms = text[colon + 1 : at].strip()
    if not ms or any(c.isspace() for c in ms):
        return None
    name = _clean_name(text[text.rfind(":", 0, colon) + 1 : colon])
    return (name, colon, ms) if name else None


def _clean_name(raw: str) -> str:
    """The phase name without the line's prefix (`[ts TP0] `, `svc-1  | `, docker time)."""
    cut = max(raw.rfind("]"), raw.rfind("|"), raw.rfind(">:"))
    if cut >= 0:
        raw = raw[cut + 1 :].lstrip(":")
    raw = _LEADING_JUNK.sub("", raw.strip())
    # A time-only prefix leaves its seconds (`05 Target verify`): drop leading tokens
    # that do not start with a letter.
    words = raw.split()
    while words and not words[0][:1].isalpha():
        words.pop(0)
    return " ".join(words)


@dataclass
class _Phase:
    name: str
    ms: float
    share: float | None  # fraction of the cycle, as printed
    ms_decimals: int = 0
    share_decimals: int = 0  # of the fraction (the printed percent's decimals + 2)


@dataclass
class _Block:
    index: int
    first_line: int
    last_line: int = 0
    ts: str | None = None
    rank: str | None = None
    slugs: set[str] = field(default_factory=set)
    phases: list[_Phase] = field(default_factory=list)
    cut: bool = False  # a phase value was cut: the totals would be guesses


class Reader:
    """Line-level state machine: feed every line in order, then call `finish`."""

    def __init__(self, ctx: ParseContext, next_block: Callable[[], int] | None = None) -> None:
        self.ctx = ctx
        self._next_block = next_block
        self._blocks = 0
        self._block: _Block | None = None
        self._names: set[str] = set()  # phase names seen in the file (for cut lines)
        self._prev: list[str] = []  # phase slugs of the last closed block, in order
        self.took_last = False  # whether the last fed line was read as a phase line
        self.words = WORDS
        self._layouts: list[_Layout] = []  # the chunk path's (`plan`), learned as it reads
        self._recent: list[int] = []  # per layout: lines it read in the last chunk planned
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ the chunk path

    def plan(
        self,
        t: pl.Series,
        rows: npt.NDArray[np.int64],
        rank_spans: RankSpans,
        split: str | None = None,
    ) -> PhasePlan:
        """What feeding a chunk's phase lines would give, read in bulk (`_plan`): `t` the
        chunk's lines, `rows` the candidates (lines holding `ms/cyc` that the embedder would
        hand this reader as they are), `rank_spans` where the rank it would hand with each
        stands, `split` a regex of lines the embedder does not hand as they are (it splits
        them: a run next to one is left to feeding). A worker thread may call it: it learns
        layouts, touching no other state."""
        import numpy as np

        cand = t.gather(rows)
        layout = np.full(len(rows), -1, np.int64)
        with self._lock:
            layouts = list(self._layouts)
            order = _learning.tried(range(len(layouts)), self._recent)
        _match(cand, layout, layouts, order)
        failed = np.zeros(len(rows), np.bool_)
        budget = _learning.Budget(len(rows))
        while budget:
            unread = np.flatnonzero((layout < 0) & ~failed)
            if len(unread) == 0:
                break
            k = int(unread[0])  # the first line of a shape not read yet
            new = learn(cand[k], rank_spans)
            if new is None:
                failed[k] = True
                budget.failed()
                continue
            with self._lock:
                if new not in self._layouts and len(self._layouts) < _learning.MAX_LAYOUTS:
                    self._layouts.append(new)
                    self._recent.append(0)
                if new not in self._layouts:
                    break
                layouts = list(self._layouts)
            _match(cand, layout, layouts, [layouts.index(new)])
            if layout[k] < 0:  # (the layout does not read its own line in polars: no more)
                failed[k] = True
                budget.failed()
            else:
                budget.learned(int(np.count_nonzero(layout == layouts.index(new))))
        with self._lock:  # the order the next chunk tries them in (`_learning.tried`)
            self._recent[:] = _learning.recent_counts(layout, len(self._recent))
        return _plan(t, rows, layout, layouts, cand, split)

    def take(self, plan: PhasePlan, lo: int, hi: int, first: int) -> BlockStarts | None:
        """Feed the plan's runs `lo` to `hi` (their lines, and the line after each, which
        ends its last block; `first` is the chunk's first line number): the state that
        leaves, and their blocks' starts (the samples are `PhasePlan.samples`). No block
        may be open."""
        import numpy as np

        assert isinstance(plan, _Plan)
        assert self._block is None
        if hi <= lo:
            return None
        b0, b1 = int(plan.run_blocks[lo]), int(plan.run_blocks[hi])
        if self._next_block is not None:
            index = np.array([self._next_block() for _ in range(b1 - b0)], np.int64)
        else:
            index = np.arange(self._blocks, self._blocks + b1 - b0, dtype=np.int64)
        self._blocks += b1 - b0
        plan.taken.append((b0, index))
        r0, r1 = int(plan.run_rows[lo]), int(plan.run_rows[hi])
        self.ctx.count("phase", r1 - r0)
        for li in present_codes(plan.layout[r0:r1]):
            self._names.add(plan.layouts[li].name)
        b = b1 - 1  # the last block's slugs, in order
        lines = plan.layout[plan.starts[b] : plan.lasts[b] + 1].tolist()
        self._prev = [plan.layouts[li].slug for li in lines]
        self.took_last = False
        return BlockStarts(index, plan.first_rows[b0:b1] + first, format_id)

    @property
    def blocks(self) -> int:
        """Phase blocks numbered so far."""
        return self._blocks

    def number_with(self, next_block: Callable[[], int]) -> None:
        """Take block numbers from `next_block` from now on (shared with an embedder)."""
        self._next_block = next_block

    @property
    def idle(self) -> bool:
        """No block is open: a line without `ms/cyc` or stage times changes nothing."""
        return self._block is None

    def wants(self, text: str) -> bool:
        """Whether `feed` must see this line (cheap; False for most lines of a server log)."""
        return self._block is not None or self.starts(text)

    @staticmethod
    def starts(text: str) -> bool:
        """Whether a line may be a phase or stage-times line (whatever the reader's state)."""
        return "ms/cyc" in text or _STAGE_SNIFF in text

    def feed(self, ln: Line, rank: str | None = None) -> Iterator[Record]:
        """Records of one line; any line that is not a phase line closes the open block."""
        text = ln.text
        self.took_last = False
        if "ms/cyc" in text:
            at = text.find("ms/cyc")
            found = _split_phase(text, at)
            if found is not None:
                self.took_last = True
                yield from self._phase(ln, *found, text[at + 6 :], rank)
                return
        if _STAGE_SNIFF in text:
            yield from self._close()
            self.took_last = True
            yield from _stage_times(ln, self.ctx)
            return
        if ln.cut and (self._block is not None or self._names):
            self._cut_line(ln)
        yield from self._close()

    def finish(self) -> Iterator[Record]:
        """Records still owed at the end of the source (the last block's totals)."""
        block = self._block
        if block is not None and not block.cut:
            slugs = [metrics.slug(p.name) for p in block.phases]
            if len(slugs) < len(self._prev) and self._prev[: len(slugs)] == slugs:
                # The file ends inside a block that repeats the previous one's phases:
                # the rest was cut off, and totals over part of a cycle would be guesses.
                self._block = None
                self.ctx.warn(
                    block.last_line,
                    "truncated-output",
                    f"the file ends inside phase block {block.index} "
                    f"({len(slugs)} of the {len(self._prev)} phases of the block "
                    "before); its verify, draft and cycle totals were not computed",
                )
                return
        yield from self._close()

    # ------------------------------------------------------------------ internals

    def _cut_line(self, ln: Line) -> None:
        """A cut last line that is not a whole phase line. It may have been the open
        block's next phase, so that block's totals would be guesses — unless the line
        repeats one of the block's names, which would have started a new block."""
        text = ln.text
        colon = text.rfind(":")
        name = ""
        if colon >= 0 and _CUT_TAIL.fullmatch(text, colon + 1):
            name = _clean_name(text[text.rfind(":", 0, colon) + 1 : colon])
        if name and name in self._names:
            tail = text[colon + 1 :].strip()
            self.ctx.warn(
                ln.no,
                "truncated-value",
                f"phase {name!r}: the line is cut ({tail!r}); no sample taken",
            )
        if self._block is not None and not (name and metrics.slug(name) in self._block.slugs):
            self._block.cut = True

    def _phase(
        self, ln: Line, name: str, name_end: int, ms: str, after: str, rank: str | None
    ) -> Iterator[Record]:
        slug = metrics.slug(name)
        self.ctx.count("phase")
        self._names.add(name)
        block = self._block
        if block is not None and slug in block.slugs:
            yield from self._close()  # a repeated name starts the next block
            block = None
        if block is None:
            index = self._next_block() if self._next_block else self._blocks
            self._blocks += 1
            block = self._block = _Block(index, ln.no)
            yield BlockStart(index, ln.no, format_id)
        block.slugs.add(slug)
        block.last_line = ln.no
        ts = last_timestamp(ln.text[:name_end])
        block.ts, block.rank = ts, rank
        # The value is followed by its unit, so it is complete unless it ends in a dot.
        num = read_number(ms, at_end=False, line_cut=ln.cut)
        if num.value is None:
            block.cut = True
            self.ctx.warn(
                ln.no,
                "truncated-value" if num.cut or ln.cut else "unparsed-line",
                f"phase {name!r}: ms/cyc value {ms!r} cannot be read; no sample taken",
            )
            return
        yield Sample(f"phase_{slug}_ms_per_cycle", num.value, ln.no, block.index, None, rank, ts)
        share, share_dec = self._share(ln, after, name, block)
        block.phases.append(_Phase(name, num.value, share, decimals_of(ms), share_dec))
        if share is not None:
            yield Sample(f"phase_{slug}_share", share, ln.no, block.index, None, rank, ts)

    def _share(self, ln: Line, after: str, name: str, block: _Block) -> tuple[float | None, int]:
        """The phase's share of the cycle as a fraction (None: absent or cut), and the
        fraction's decimals."""
        s = _SHARE.match(after)
        if s is None:
            if ln.cut and not after.strip():
                block.cut = True  # the share may have followed
            return None, 0
        raw = s.group("v")
        rest = after[s.end() :]
        terminated = s.group("pct") is not None or s.group("close") is not None
        at_end = not terminated and not rest.strip()
        # `( 97.0%)`: a share the line ends in, with neither `%` nor `)`, is cut (a wrapped
        # or cut copy), whether or not a newline follows
        num = read_number(raw, at_end=at_end, line_cut=ln.cut or at_end)
        if num.value is None:
            block.cut = True
            self.ctx.warn(
                ln.no, "truncated-value", f"phase {name!r}: share {raw!r} is cut; no sample taken"
            )
            return None, 0
        return percent(raw, num.value), decimals_of(raw) + 2

    def _close(self) -> Iterator[Record]:
        block, self._block = self._block, None
        if block is None or not block.phases:
            return
        self._prev = [metrics.slug(p.name) for p in block.phases]
        if block.cut:
            self.ctx.warn(
                block.last_line,
                "truncated-value",
                f"phase block {block.index} is incomplete; its verify, draft and "
                "cycle totals were not computed",
            )
            return
        yield from _totals(block)


# ------------------------------------------------------------------ phase lines in bulk

# A phase line's layout is learned from one line and checked by reading that line with
# `Reader`; a chunk's phase lines are matched against the layouts (a regex each), their values
# read in polars, and their blocks and totals formed with numpy as `Reader` forms them:
# - the text before the name (a log's prefix) varies only in its digits, each run of a
#   pinned width: `_clean_name`, `last_timestamp` and rank tags read every such line alike;
# - the name, its colon and the blanks are the learned line's; the value has its decimals,
#   the share (if any) a `%` and `)` with nothing after;
# - sums of printed values are exact integer sums of their digits divided once, which is
#   what rounding an exact sum at the printed decimals gives (`_ms_sum`, `_share_sum`);
# - a run of phase lines is read in bulk only when the lines before and after it are no
#   phase line: no block is open at its start, and the line after it ends its last block.
_MS_SHAPE = re.compile(r"[0-9]{1,8}(?:\.(?P<d>[0-9]{1,6}))?")
_SHARE_SHAPE = re.compile(r"(?P<gap> *)\( *[0-9]{1,3}(?:\.(?P<d>[0-9]{1,6}))?%\)")
_TOTALS = ("verify_ms_per_cycle", "verify_share", "draft_ms_per_cycle", "cycle_ms")


class _Layout(NamedTuple):
    pattern: str
    name: str
    slug: str
    ms_at: int  # where the value starts (the text before it has a pinned width)
    ms_gap: int  # the blanks between the value and `ms/cyc`
    ms_dec: int
    share_skip: int  # from the end of `ms/cyc` past the share's `(`; -1: no share
    share_dec: int  # the fraction's decimals (the printed percent's + 2)
    ts_at: int  # -1: no timestamp
    ts_len: int
    rank: tuple[tuple[str, int, int], ...]  # the embedder's rank (`RankSpans`); (): None
    rank_at: int  # where the rank stands as it is printed (-1: its tags stand apart)
    rank_len: int
    verify: bool
    draft: bool


def learn(text: str, rank_spans: RankSpans) -> _Layout | None:
    """The layout of a phase line, when `Reader` reads every line of that shape alike (with
    the rank an embedder hands with it, where `rank_spans` says)."""
    at = text.find("ms/cyc")
    if at < 0 or text.count("ms/cyc") != 1 or _STAGE_SNIFF in text:
        return None
    found = _split_phase(text, at)
    if found is None:
        return None
    name, colon, ms = found
    mid = text[colon + 1 : at]
    ms_at = colon + 1 + len(mid) - len(mid.lstrip(" "))
    gap = len(mid) - len(mid.rstrip(" "))
    m = _MS_SHAPE.fullmatch(ms)
    if m is None or text[ms_at : at - gap] != ms:
        return None
    after = text[at + 6 :]
    share = _SHARE_SHAPE.fullmatch(after) if after else None
    if after and share is None:
        return None
    # the name's words are the last words before the colon: the text before them is the
    # line's prefix, which `_clean_name` drops whatever its digits
    words = [w for w in re.finditer(r"\S+", text[:colon])]
    k = len(name.split())
    if len(words) < k or " ".join(w.group() for w in words[-k:]) != name:
        return None
    start = words[-k].start()
    prefix = pinned_digits(text[:start])
    pattern = f"^{prefix}{_lit(text[start : colon + 1])}{' ' * (ms_at - colon - 1)}[0-9]{{1,8}}"
    if m.group("d"):
        pattern += rf"\.[0-9]{{{len(m.group('d'))}}}"
    pattern += " " * gap + "ms/cyc"
    share_skip, share_dec = -1, 0
    if share is not None:
        d = share.group("d") or ""
        pattern += share.group("gap") + r"\( *[0-9]{1,3}" + (rf"\.[0-9]{{{len(d)}}}" if d else "")
        pattern += r"%\)"
        share_skip, share_dec = len(share.group("gap")) + 1, len(d) + 2
    pattern += "$"
    if re.fullmatch(pattern, text) is None:
        return None
    ts = None
    for t in TIMESTAMP.finditer(text, 0, colon):
        ts = t
    spans = rank_spans(text)
    if any(start + width > colon for _, start, width in spans):
        return None
    rank = " ".join(tag + text[at : at + width] for tag, at, width in spans)
    rank_at = spans[0][1] - len(spans[0][0]) if spans else -1
    if spans and text[rank_at : rank_at + len(rank)] != rank:
        rank_at = -1
    lower = name.lower()
    layout = _Layout(
        pattern=pattern,
        name=name,
        slug=metrics.slug(name),
        ms_at=ms_at,
        ms_gap=gap,
        ms_dec=len(m.group("d") or ""),
        share_skip=share_skip,
        share_dec=share_dec,
        ts_at=ts.start() if ts is not None else -1,
        ts_len=ts.end() - ts.start() if ts is not None else 0,
        rank=spans,
        rank_at=rank_at,
        rank_len=len(rank),
        verify="verify" in lower,
        draft="draft" in lower,
    )
    return layout if _reads_as_reader(layout, text) else None


def _reads_as_reader(layout: _Layout, text: str) -> bool:
    """Whether the layout reads `text`, and a line after it, as `Reader` does."""
    import numpy as np
    import polars as pl

    rank = " ".join(tag + text[at : at + width] for tag, at, width in layout.rank) or None
    ctx = ParseContext(file="")
    reader = Reader(ctx)
    want = [*reader.feed(Line(1, text), rank), *reader.feed(Line(2, "x"))]
    t = pl.Series([text, "x"], dtype=pl.String)
    plan = _plan(t, np.zeros(1, np.int64), np.zeros(1, np.int64), [layout])
    bulk = Reader(ParseContext(file=""))
    starts = bulk.take(plan, 0, len(plan.run_first), 1)
    frame = plan.samples()
    if starts is None or frame is None:
        return False
    got: list[Record] = [
        BlockStart(b, line, format_id)
        for b, line in zip(starts.blocks.tolist(), starts.lines.tolist(), strict=True)
    ]
    got += [
        Sample(metric, value, line + 1, block, None, rank, ts)
        for metric, value, line, block, rank, ts in frame.select(
            "metric", "value", "line", "block", "rank", "ts"
        ).iter_rows()
    ]
    return not ctx.diagnostics and want == got and bulk._prev == reader._prev


def _match(
    cand: pl.Series, layout: npt.NDArray[np.int64], layouts: list[_Layout], order: list[int]
) -> None:
    """Give the candidates not read yet the first of `layouts` (in `order`, those tried)
    that reads them."""
    import numpy as np

    for li in order:
        open_ = np.flatnonzero(layout < 0)
        if len(open_) == 0:
            return
        lines = cand if len(open_) == cand.len() else cand.gather(open_)
        hit = lines.str.contains(layouts[li].pattern).to_numpy()
        layout[open_[hit]] = li


@dataclass
class _Plan:
    """A chunk's phase lines read in bulk, in runs (see `PhasePlan`)."""

    layouts: list[_Layout]
    planned: npt.NDArray[np.int64]  # the chunk rows read in bulk, ascending
    run_first: npt.NDArray[np.int64]  # the first row of each run
    run_rows: npt.NDArray[np.int64]  # run r's lines: planned[run_rows[r] : run_rows[r + 1]]
    run_blocks: npt.NDArray[np.int64]  # run r's blocks: [run_blocks[r], run_blocks[r + 1])
    layout: npt.NDArray[np.int64]  # the layout of each planned line
    starts: npt.NDArray[np.int64]  # per block: its first line (an index in `planned`)
    lasts: npt.NDArray[np.int64]  # ... and its last
    first_rows: npt.NDArray[np.int64]  # per block: the chunk row of its first line
    frame: pl.DataFrame | None  # the samples: emit, rel (block), lrow, rank, ts, metric, value
    taken: list[tuple[int, npt.NDArray[np.int64]]] = field(default_factory=list)

    def samples(self) -> pl.DataFrame | None:
        """The samples of the runs taken, in the order feeding their lines yields them:
        `emit` (the chunk row that yields each: a block's totals come with the line after
        it), `line` (the chunk row read), `block` and the other batch columns."""
        import numpy as np
        import polars as pl

        if self.frame is None or not self.taken:
            return None
        actual = np.full(len(self.first_rows), -1, np.int64)
        for b0, index in self.taken:
            actual[b0 : b0 + len(index)] = index
        block = actual[self.frame["rel"].to_numpy()]
        frame = self.frame.with_columns(block=pl.Series(block, dtype=pl.Int64))
        if (block < 0).any():
            frame = frame.filter(pl.col("block") >= 0)
        return frame.drop("rel").rename({"lrow": "line"})


def _rank_of(layout: _Layout) -> pl.Expr | None:
    """The rank of a line of the layout, from line `t` (None: no rank)."""
    import polars as pl

    if not layout.rank:
        return None
    if layout.rank_at >= 0:  # the tags stand as the rank joins them: one slice
        return pl.col("t").str.slice(layout.rank_at, layout.rank_len)
    pieces: list[pl.Expr] = []
    for k, (tag, start, width) in enumerate(layout.rank):
        pieces += [pl.lit((" " if k else "") + tag), pl.col("t").str.slice(start, width)]
    return pl.concat_str(pieces)


def _ts_of(layout: _Layout) -> pl.Expr | None:
    """The timestamp of a line of the layout, from line `t` (None: none)."""
    import polars as pl

    return pl.col("t").str.slice(layout.ts_at, layout.ts_len) if layout.ts_at >= 0 else None


def _by_layout(
    text: pl.Series,
    lay: npt.NDArray[np.int64],
    layouts: list[_Layout],
    read: Callable[[_Layout], pl.Expr | None],
) -> pl.Series:
    """A categorical column of the lines, each read by its layout's expression (one
    expression per distinct expression, not per layout)."""
    import numpy as np
    import polars as pl

    exprs: dict[str, tuple[pl.Expr, list[int]]] = {}
    for li in present_codes(lay):
        expr = read(layouts[li])
        if expr is not None:
            exprs.setdefault(str(expr), (expr, []))[1].append(li)
    out = pl.Series("literal", [None], pl.Categorical).new_from_index(0, text.len())
    for expr, lis in exprs.values():
        mask = np.zeros(len(layouts), np.bool_)
        mask[lis] = True
        mask = mask[lay]
        if mask.all():
            return text.to_frame("t").select(expr.cast(pl.Categorical)).to_series()
        at = np.flatnonzero(mask)
        got = text.gather(at).to_frame("t").select(expr.cast(pl.Categorical)).to_series()
        out = out.scatter(at, got)
    return out


def _empty_plan(layouts: list[_Layout]) -> _Plan:
    import numpy as np

    none = np.zeros(0, np.int64)
    one = np.zeros(1, np.int64)
    return _Plan(layouts, none, none, one, one, none, none, none, none, None)


def _exact_sum(
    mask: npt.NDArray[np.bool_],
    ints: npt.NDArray[np.int64],
    dec: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    blk: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Per block (lines `starts[b]` up to the next start), the sum of the printed values
    of the lines in `mask` (each `ints / 10**dec`) rounded at their most decimals, and
    whether the block has such a line. Exact: integers below 2**53, divided once."""
    import numpy as np

    if len(dec) and dec.min() == dec.max():  # one number of decimals: a plain sum
        has = np.logical_or.reduceat(mask, starts)
        total = np.add.reduceat(np.where(mask, ints, 0), starts)
        return total / 10.0 ** np.where(has, int(dec[0]), 0), has
    top = np.maximum.reduceat(np.where(mask, dec, -1), starts)
    scale = np.where(mask, 10 ** np.maximum(top[blk] - dec, 0), 0)
    total = np.add.reduceat(ints * scale, starts)
    return total / 10.0 ** np.maximum(top, 0), top >= 0


def _plan(
    t: pl.Series,
    rows: npt.NDArray[np.int64],
    layout: npt.NDArray[np.int64],
    layouts: list[_Layout],
    cand: pl.Series | None = None,
    split: str | None = None,
) -> _Plan:
    """The runs of matched candidates feeding would read alike, their blocks (a name that
    repeats, or the line after the run, ends one) and their samples (`_Plan.samples`);
    `cand`, when given, the candidates' lines (`t.gather(rows)`); `split` the embedder's
    (`Reader.plan`)."""
    import numpy as np
    import polars as pl

    n = t.len()
    src = np.flatnonzero(layout >= 0)  # candidates read by a layout
    prow = rows[src]
    if len(prow) == 0:
        return _empty_plan(layouts)
    # runs of consecutive rows, planned when the lines before and after are no phase line
    cut = np.flatnonzero(np.diff(prow) != 1) + 1
    a = np.concatenate([[0], cut]).astype(np.int64)
    e = np.concatenate([cut, [len(prow)]]).astype(np.int64)
    edge = np.concatenate([prow[a] - 1, prow[e - 1] + 1])
    inside = (edge >= 0) & (edge < n)
    phase_edge = np.zeros(len(edge), np.bool_)
    if inside.any():
        around = t.gather(edge[inside])  # `Reader.starts` of each: its words, ORed
        phase_edge[inside] = np.logical_or.reduce(
            [around.str.contains(w, literal=True).to_numpy() for w in WORDS]
            # ... or a line the embedder splits (SGLang: a cut line glued to the next, whose
            # cut head closes the block as incomplete): the run is left to feeding
            + ([around.str.contains(split).to_numpy()] if split else [])
        )
    good = ~phase_edge[: len(a)] & ~phase_edge[len(a) :] & (prow[e - 1] + 1 < n)
    if not good.any():
        return _empty_plan(layouts)
    kept = np.repeat(good, e - a)
    src, prow = src[kept], prow[kept]
    lay = layout[src]
    sizes = (e - a)[good]
    m = len(prow)
    run_rows = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    run_of = np.repeat(np.arange(len(sizes)), sizes)
    ends = run_rows[1:]
    # blocks: one ends where a name repeats (`nxt`: the next line of the same name in its
    # run), or where its run ends; the block that starts at j ends at `reach[j]`
    slugs = sorted({x.slug for x in layouts})
    slug_id = np.array([slugs.index(x.slug) for x in layouts], np.int64)[lay]
    order = np.lexsort((np.arange(m), slug_id))
    same = slug_id[order][1:] == slug_id[order][:-1]
    nxt = np.full(m, m, np.int64)
    nxt[order[:-1][same]] = order[1:][same]
    nxt = np.minimum(nxt, ends[run_of])
    reach = np.minimum.accumulate(nxt[::-1])[::-1]
    is_start = np.zeros(m, np.bool_)
    cur, rid = run_rows[:-1].copy(), np.arange(len(sizes))
    while len(cur):
        is_start[cur] = True
        cur = reach[cur]
        alive = cur < ends[rid]
        cur, rid = cur[alive], rid[alive]
    starts = np.flatnonzero(is_start)
    blk = np.cumsum(is_start) - 1
    per_run = np.add.reduceat(is_start.astype(np.int64), run_rows[:-1])
    run_blocks = np.concatenate([[0], np.cumsum(per_run)]).astype(np.int64)
    nxt_start = np.concatenate([starts[1:], [m]])
    last = nxt_start - 1  # each block's last line
    # a block's totals come with the next block's first line, or the line after its run
    ends_run = nxt_start == ends[run_of[starts]]
    emit_totals = np.where(ends_run, prow[last] + 1, prow[np.minimum(nxt_start, m - 1)])

    def per_line(get: Callable[[_Layout], int]) -> npt.NDArray[np.int64]:
        return np.array([get(x) for x in layouts], np.int64)[lay]

    ms_dec, share_dec = per_line(lambda x: x.ms_dec), per_line(lambda x: x.share_dec)
    share_skip = per_line(lambda x: x.share_skip)
    # every candidate planned (a log's steady state): the candidates' lines as they are
    text = cand if cand is not None and m == len(rows) else t.gather(prow)
    got = (
        pl.DataFrame(
            {
                "t": text,
                "ms_at": per_line(lambda x: x.ms_at),
                "gap": per_line(lambda x: x.ms_gap),
                "skip": np.maximum(share_skip, 0),
            }
        )
        .lazy()
        .with_columns(at=pl.col("t").str.find("ms/cyc", literal=True).cast(pl.Int64))
        # (`find` counts bytes, `slice` characters: a line's characters beyond ASCII stand
        # before `ms/cyc`, in the text its layout pins, so the difference is all of them)
        .with_columns(
            at=pl.col("at") - (pl.col("t").str.len_bytes() - pl.col("t").str.len_chars())
            if not all(x.pattern.isascii() for x in layouts)
            else pl.col("at")
        )
        .select(
            ms=pl.col("t")
            .str.slice(pl.col("ms_at"), pl.col("at") - pl.col("gap") - pl.col("ms_at"))
            .cast(pl.Float64),
            share=pl.col("t")
            .str.slice(pl.col("at") + 6 + pl.col("skip"))
            .str.strip_chars(" %)")
            .cast(pl.Float64, strict=False),
        )
        .collect()
    )
    has_share = share_skip >= 0
    ms = got["ms"].to_numpy()
    # the printed digits as integers (exact: at most 14 digits), and each share as
    # `percent` reads it (the nearest double to the printed digits / 100)
    ms_int = np.rint(ms * 10.0**ms_dec).astype(np.int64)
    share_int = np.where(
        has_share, np.rint(got["share"].fill_null(0.0).to_numpy() * 10.0 ** (share_dec - 2)), 0
    ).astype(np.int64)
    share = share_int / 10.0**share_dec
    # the totals of each block, as `_totals` makes them
    verify = np.array([x.verify for x in layouts], np.bool_)[lay]
    draft = np.array([x.draft for x in layouts], np.bool_)[lay]
    every = np.ones(m, np.bool_)
    v_ms, has_v = _exact_sum(verify, ms_int, ms_dec, starts, blk)
    d_ms, has_d = _exact_sum(draft, ms_int, ms_dec, starts, blk)
    all_ms, _ = _exact_sum(every, ms_int, ms_dec, starts, blk)
    v_share, _ = _exact_sum(verify, share_int, share_dec, starts, blk)
    all_share, _ = _exact_sum(every, share_int, share_dec, starts, blk)
    has_v_share = has_v & ~np.logical_or.reduceat(verify & ~has_share, starts)
    near = ~np.logical_or.reduceat(~has_share, starts) & (np.abs(all_share - 1) <= 0.01 + 1e-9)
    by_ratio = ~near & has_v_share & (v_share != 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        cycle = np.where(near, all_ms, v_ms / np.where(by_ratio, v_share, 1.0))
    # the samples, each with the line that yields it and its place among that line's
    names = sorted(
        {f"phase_{x.slug}_{what}" for x in layouts for what in ("ms_per_cycle", "share")}
        | set(_TOTALS)
    )
    code = {name: i for i, name in enumerate(names)}
    ms_code = per_line(lambda x: code[f"phase_{x.slug}_ms_per_cycle"])
    share_code = per_line(lambda x: code[f"phase_{x.slug}_share"])
    at = np.arange(m)
    parts = [
        (prow, 10, blk, at, ms_code, ms),  # (emit, place, block, line, metric, value)
        (
            prow[has_share],
            11,
            blk[has_share],
            at[has_share],
            share_code[has_share],
            share[has_share],
        ),
    ]
    for k, (present, values) in enumerate(
        ((has_v, v_ms), (has_v_share, v_share), (has_d, d_ms), (near | by_ratio, cycle))
    ):
        parts.append(
            (
                emit_totals[present],
                k,
                np.flatnonzero(present),
                last[present],
                np.full(int(present.sum()), code[_TOTALS[k]], np.int64),
                values[present],
            )
        )
    emit = np.concatenate([p[0] for p in parts])
    place = np.concatenate([np.full(len(p[0]), p[1], np.int64) for p in parts])
    order = np.lexsort((place, emit))
    line = np.concatenate([p[3] for p in parts])[order]
    cat = pl.Categorical
    frame = pl.DataFrame(
        {
            "emit": emit[order],
            "rel": np.concatenate([p[2] for p in parts])[order],
            "lrow": prow[line],
            "rank": _by_layout(text, lay, layouts, _rank_of).gather(line),
            "ts": _by_layout(text, lay, layouts, _ts_of).gather(line),
            "metric": pl.Series(names, dtype=pl.String)
            .cast(cat)
            .gather(np.concatenate([p[4] for p in parts])[order]),
            "value": np.concatenate([p[5] for p in parts]).astype(np.float64)[order],
        }
    )
    return _Plan(
        layouts=layouts,
        planned=prow,
        run_first=prow[run_rows[:-1]],
        run_rows=run_rows,
        run_blocks=run_blocks,
        layout=lay,
        starts=starts,
        lasts=last,
        first_rows=prow[starts],
        frame=frame,
    )


def _totals(block: _Block) -> Iterator[Sample]:
    """verify/draft sums and cycle_ms by DESIGN §3, on the block's last line."""
    line, index, rank, ts = block.last_line, block.index, block.rank, block.ts
    phases = block.phases
    verify = [p for p in phases if "verify" in p.name.lower()]
    draft = [p for p in phases if "draft" in p.name.lower()]
    verify_ms = _ms_sum(verify) if verify else None
    verify_share = _share_sum(verify) if verify else None
    if verify_ms is not None:
        yield Sample("verify_ms_per_cycle", verify_ms, line, index, None, rank, ts)
    if verify_share is not None:
        yield Sample("verify_share", verify_share, line, index, None, rank, ts)
    if draft:
        yield Sample("draft_ms_per_cycle", _ms_sum(draft), line, index, None, rank, ts)
    cycle = None
    total_share = _share_sum(phases)
    if total_share is not None and abs(total_share - 1) <= 0.01 + 1e-9:
        cycle = _ms_sum(phases)
    elif verify_ms is not None and verify_share:
        cycle = verify_ms / verify_share
    if cycle is not None:
        yield Sample("cycle_ms", cycle, line, index, None, rank, ts)


# Sums of printed values are exact at the printed decimals: round them there, so that
# 0.74 + 29.47 is 30.21 and not 30.209999999999997.
def _ms_sum(phases: list[_Phase]) -> float:
    return round(math.fsum(p.ms for p in phases), max(p.ms_decimals for p in phases))


def _share_sum(phases: list[_Phase]) -> float | None:
    """Sum of the phases' shares, or None when one has none."""
    shares = [p.share for p in phases]
    if any(s is None for s in shares):
        return None
    total = math.fsum(s for s in shares if s is not None)
    return round(total, max(p.share_decimals for p in phases))


def _stage_times(ln: Line, ctx: ParseContext) -> Iterator[Record]:
    """vLLM V0 `SpecDecodeWorker stage times: k=v k=v k=v` (each `%.02f`)."""
    text = ln.text
    at = text.find(_STAGE_SNIFF)
    ts = last_timestamp(text[:at])
    body = text[at + len(_STAGE_SNIFF) :]
    ctx.count("stage-times")
    end = len(body.rstrip())
    for kv in _STAGE_KV.finditer(body):
        metric = _STAGE_FIELDS.get(kv.group("k"))
        if metric is None:
            continue
        raw = kv.group("v")
        num = read_number(raw, at_end=kv.end() >= end, line_cut=ln.cut, decimals=2)
        if num.value is None:
            if num.cut:
                ctx.warn(
                    ln.no,
                    "truncated-value",
                    f"stage times: {kv.group('k')} is cut ({raw!r}); no sample taken",
                )
            else:
                ctx.warn(
                    ln.no, "unparsed-line", f"stage times: {kv.group('k')}={raw!r} is not a number"
                )
            continue
        yield Sample(metric, num.value, ln.no, None, None, None, ts)


# mpirun's `--tag-output`: `[job,rank]<stdout>:` before every line of every rank.
_MPI_TAG = re.compile(r"\[\d+,(?P<rank>\d+)\]<std(?:out|err)>:")
# SGLang's `[time TPn]` prefix, wherever it stands (journalctl, kubectl put theirs first).
_RANKED_BRACKET = re.compile(r"\[[^\]]*\b(?:TP|DP|PP|EP|ATTN_CP|MOE_DP)\d+\s*\]")
# A launcher's label before the phase line: `srun --label`'s `0: `, pdsh's `node1: `.
_LABEL_TAG = re.compile(r"^\s*(?P<tag>[\w.-]{1,64}):\s(?=.*:\s*[-+]?\d[\d.]*\s*ms/cyc)")


def _line_rank(text: str) -> str | None:
    """The rank a phase line comes from (ranks printing at once interleave their blocks):
    mpirun's tag, the `TPn` of a `[... TPn]` prefix, or a launcher's label (`0: `)."""
    end = text.find("ms/cyc")
    head = text[:end] if end > 0 else text
    m = _MPI_TAG.search(head)
    if m is not None:
        return f"rank{m.group('rank')}"
    b = _RANKED_BRACKET.search(head)
    if b is not None:
        return rank_of(b.group())[0]
    t = _LABEL_TAG.match(text)
    return t.group("tag") if t is not None else None


def line_reader(ctx: ParseContext, *, next_block: Callable[[], int] | None = None) -> Reader:
    """A reader for phase lines inside another format's source (`ctx.embed_inline`); its
    blocks take their numbers from `next_block` when the embedder numbers blocks too."""
    return Reader(ctx, next_block=next_block)


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of a file of phase lines, in line order. Ranks printing at once interleave
    their blocks: each rank's lines go to a reader of its own (one block numbering); a line
    without a rank goes to every reader it concerns."""
    numbers = itertools.count()

    def next_block() -> int:
        return next(numbers)

    readers: dict[str | None, Reader] = {}
    for ln in src.lines():
        text = ln.text
        rank = _line_rank(text)
        if rank is not None:
            reader = readers.get(rank)
            if reader is None and (ln.cut or Reader.starts(text)):
                reader = readers[rank] = Reader(ctx, next_block=next_block)
            targets = [reader] if reader is not None else []
        else:
            targets = [r for r in readers.values() if r.wants(text)]
            if not targets and (ln.cut or Reader.starts(text)):
                targets = [readers.setdefault(None, Reader(ctx, next_block=next_block))]
        for reader in targets:
            if reader.wants(text) or ln.cut:  # a cut last line may be a phase line's start
                yield from reader.feed(ln, rank)
    for reader in readers.values():
        yield from reader.finish()
