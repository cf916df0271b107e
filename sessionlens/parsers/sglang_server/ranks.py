"""The TP/DP rank rule of SGLang server logs (DESIGN §3 "Ranks"), once, for both paths.

Owns which batch line of a DP group is the batch (the lowest TP rank's, per timestamp), the
DP groups (DP tags, or each TP rank under DP attention) and the state that rule streams with.
`Ranks.dedup` is the line reader's step; `decide`, `hold` and `likely` are the bulk API the
chunk path (`fast`) decides whole runs of lines with, from the same state and the same
`classify`. It reads no text but rank tags (`_fields.rank_of`) and yields no record itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...model import Record
from ..base import ParseContext

# The tags duplicates are told by, in the order a rank key compares them: TP, or PP (printed
# alone at tp=1, where every pipeline stage reports the same batch), CP, MoE-DP, EP.
TAGS_KEY = ("TP", "PP", "ATTN_CP", "MOE_DP", "EP")

# What the rule does with a line, and (bulk) with every line of a (kind, layout, rank tags).
DUP, EMIT, PLAIN, FEED = 0, 1, 2, 3
NEW = FEED  # `classify`: a line the stateful step must take (`dedup`, or `feed` in bulk)

# A slot's facts for an emitting rank: ((kind, group), rank, key, group, a batch was held).
Slot = tuple[tuple[str, str], str, tuple[int, ...], str, bool]


@dataclass(slots=True)
class Batch:
    """The lines of one (kind, DP group) seen at one timestamp: one batch (DESIGN §3)."""

    ts: str
    seen: set[str] = field(default_factory=set)
    best_key: tuple[int, ...] | None = None
    best: list[Record] = field(default_factory=list)


def ranked(nums: dict[str, int]) -> bool:
    """Whether a line carries a rank tag that duplicates are told by (see `TAGS_KEY`)."""
    return any(t in nums for t in TAGS_KEY)


def key_of(nums: dict[str, int]) -> tuple[int, ...]:
    """A line's rank key: lower is the rank whose line is kept."""
    return tuple(nums.get(t, 0) for t in TAGS_KEY)


class Ranks:
    """The rank rule's streaming state, O(groups): held batches, each group's lowest rank
    key, the groups whose lowest rank is known from a past batch, and DP attention."""

    def __init__(self, ctx: ParseContext) -> None:
        self.ctx = ctx
        self.dp_attention = False
        self.pending: dict[tuple[str, str], Batch] = {}
        self.lowest: dict[str, tuple[int, ...]] = {}  # lowest rank key seen per DP group
        self.settled: set[str] = set()  # groups whose lowest rank is known from a past batch

    def restart(self) -> list[Record]:
        """A new launch: the held batches' records, and the state starts over."""
        out = self.flush()
        self.lowest.clear()
        self.settled.clear()
        self.dp_attention = False
        return out

    def flush(self) -> list[Record]:
        """The records of every batch still held back (at the end, or a restart)."""
        out: list[Record] = []
        for key in list(self.pending):
            out += self.pending.pop(key).best
        return out

    def group(self, nums: dict[str, int]) -> str:
        """The DP group a ranked line belongs to (DESIGN §3)."""
        if "DP" in nums:
            return f"DP{nums['DP']}"
        if self.dp_attention and "TP" in nums:
            return f"TP{nums['TP']}"  # DP attention without DPn tags: each TP is a group
        return ""

    def classify(self, rank: str | None, nums: dict[str, int], ts: str | None) -> int:
        """PLAIN: nothing to tell duplicates by (no rank tag or no time); DUP: a line from
        a rank above the lowest one seen in its DP group; NEW: the stateful step decides."""
        if rank is None or ts is None or not ranked(nums):
            return PLAIN
        lowest = self.lowest.get(self.group(nums))
        return DUP if lowest is not None and key_of(nums) > lowest else NEW

    def dedup(
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
        how = self.classify(rank, nums, ts)
        if how == PLAIN:
            return records
        if how == DUP:
            self.ctx.count("duplicate-rank")
            return []
        assert rank is not None
        assert ts is not None
        group = self.group(nums)
        key = key_of(nums)
        lowest = self.lowest.get(group)
        self.lowest[group] = key
        slot = (kind, group)
        batch = self.pending.get(slot)
        out: list[Record] = []
        if batch is not None and (batch.ts != ts or rank in batch.seen):
            # the timestamp moved on, or this rank already spoke: a new batch
            out = batch.best
            batch = None
            self.settled.add(group)
        if batch is None:
            batch = self.pending[slot] = Batch(ts)
        batch.seen.add(rank)
        if batch.best_key is not None:
            self.ctx.count("duplicate-rank")  # a lower rank replaces the held line
        batch.best_key = key
        if not any(key) or (key == lowest and group in self.settled):
            # Nothing can replace it (rank 0, or the group's known lowest rank after its
            # first batch), so it need not wait: samples stay in line order.
            batch.best = []
            return out + records if out else records
        batch.best = records
        return out

    # ------------------------------------------------------------------ bulk API

    def decide(
        self,
        kind: str,
        rank: str | None,
        nums: dict[str, int],
        taken: dict[tuple[str, str], str],
    ) -> tuple[int, Slot | None]:
        """What `dedup` does with every line of a kind and rank tags (each with a time), as
        long as only lines decided this way come between, so the state stays as it is:
        DUP, PLAIN, EMIT (the slot's facts for `hold`), or FEED (`dedup` must take it).
        `taken` maps each slot to the rank emitting for it in the run decided at once."""
        if "DP" in nums and not self.dp_attention:
            return FEED, None  # the line turns DP attention on
        how = self.classify(rank, nums, "")
        if how != NEW:
            return how, None
        assert rank is not None
        group = self.group(nums)
        k = key_of(nums)
        lowest = self.lowest.get(group)
        if lowest is None or k < lowest:
            return FEED, None  # a new lowest rank
        if any(k) and group not in self.settled:
            return FEED, None  # its line would wait for a lower rank
        slot = (kind, group)
        held = self.pending.get(slot)
        if held is not None and (held.best or held.seen != {rank}):
            return FEED, None
        if taken.setdefault(slot, rank) != rank:
            return FEED, None  # two ranks of one slot: their order decides
        return EMIT, (slot, rank, k, group, held is not None)

    def hold(self, facts: Slot, ts: str, lines: int) -> None:
        """The state `dedup` leaves after `lines` (≥ 1) emitting lines of a slot decided in
        bulk, the last at time `ts`."""
        slot, rank, key, group, had = facts
        held = Batch(ts)
        held.seen.add(rank)
        held.best_key = key
        self.pending[slot] = held
        if had or lines >= 2:
            self.settled.add(group)

    def likely(self, tags: list[tuple[str | None, dict[str, int]]]) -> list[bool]:
        """Per rank tags (as `rank_of` gives them), whether their lines are likely to be
        kept: untagged ones, and each group's lowest rank key among them (a guess: DP
        attention may change while the lines are read)."""
        likely = [False] * len(tags)
        lowest: dict[str, tuple[tuple[int, ...], list[int]]] = {}
        for k, (rank, nums) in enumerate(tags):
            if rank is None or not ranked(nums):
                likely[k] = True
                continue
            group = self.group(nums)
            key = key_of(nums)
            best = lowest.get(group)
            if best is None or key < best[0]:
                lowest[group] = (key, [k])
            elif key == best[0]:
                best[1].append(k)
        for _, ks in lowest.values():
            for k in ks:
                likely[k] = True
        return likely
