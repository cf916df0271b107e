"""`phase-timing`: profiler lines `NAME: X ms/cyc ( P%)` and vLLM V0's stage-time line.

Owns phase blocks and their verify/draft/cycle totals (DESIGN §3). `Reader` is the line-level
state machine server logs embed (`ctx.embed_inline("phase-timing")`, through `line_reader`); it
reads no other record: any other line ends a block.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from .. import metrics
from .._lines import Line, SourceText
from ..model import BlockStart, Record, Sample
from ._fields import decimals_of, last_timestamp, percent, rank_of, read_number
from .base import ParseContext

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
