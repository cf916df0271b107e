"""Ranks' rows combined as a source is read, for `report` (DESIGN §3, issue 22).

The analysis combines the rows that DP and TP ranks print for one timestamp into one
(`group._combine_key`: the k-th row of each rank at a timestamp of a source and metric,
summed or averaged by the metric's rule, Kahan's sum in table order). A TP8 log with
profiler phase lines prints eight rows for each one the analysis keeps, and the table held
all eight until then: 1.1 GB of a 1 GB log's 55 million samples. `RankFold` stands between
a source's parser and the table and makes those groups while the source is read, slice by
slice, with the analysis' own grouping and arithmetic (`group._dp_groups`' groups, found
here by two sorts of one number a row; `group.kahan_sums`). The table then holds a
group's row (rank null, the group's timestamp, first line, block and run, and its sum or
mean) in the place of its first row; a row alone in its group is held as read, and the
analysis combines it as it would have (the table is `folded`). The points the analysis
makes are the same, bit for bit, in the same order, and so is everything else `report`
reads from the table (its metrics, in the order first met; each source's first
timestamp). `parse` and `check` never fold: the tidy table keeps every rank's row.

While every keyed row (with a rank and a timestamp) is of one rank, rows pass as they
come: each is a group of its own. A group is made only once the rows that may still join
it are read: the rows from the first one whose timestamp is among the slice's last
(`_HOT`, `_HOT_ROWS`) wait for the next slice, so ranks' lines out of order by that many
rows fold exactly. A row read later whose timestamp has groups made already is checked
against what those groups were (`_Made`): when every group of that metric and timestamp
held the same ranks, and the row's rank among them, it starts a group of its own, as it
would have in the analysis; otherwise combining early might pair it wrongly. Then, if
nothing has been combined yet, the source is read on as it comes (`_passthrough`);
otherwise `Uncombinable` is raised and the caller reads the source again without a fold
(`session._parse_file`). The same happens on what the analysis would not sum by Kahan's
rule (a value beyond 1e300, more than 64 ranks), on timestamps that cannot be compared as
numbers (not one layout of digits, more than 18 digits), on keyed rows of a second rank
after rows of one were passed on, and when too many rows wait (`_MAX_HELD`).

Strings are compared as the numbers of polars' categoricals, which are one number for one
string in the process while some categorical lives (once none does, polars numbers the
strings afresh): the fold holds its ranks' and metrics' strings as a categorical column.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, NamedTuple

from . import _memory, metrics
from .group import _dp_groups, kahan_sums, rank_groups
from .model import (
    BATCH_COLUMNS,
    Sample,
    SampleBatch,
    SampleColumns,
    batch_frame,
    batch_schema,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import polars as pl

# the last 1/_HOT of a chunk's keyed rows (at least _HOT_ROWS): their timestamps' rows wait
# for the next chunk (lines of ranks out of order by up to this many stay exact and folded)
_HOT = 32
_HOT_ROWS = 4096
_MAX_HELD = 1 << 22  # rows waiting: more and the timestamps do not settle (Uncombinable)
_MAX_RANKS = 64  # a group's ranks as bits of one number (and `_KAHAN_MAX`)
_MAX_RANGES = 1024  # a metric's ranges of made timestamps kept apart (`_Made`)
# The fold costs about 0.3 µs a row and pays where it keeps a quarter of the rows or fewer
# (the first slice with groups decides). 8 TP ranks' phase lines: 13.9 million rows become
# 3.0 million (4.4 a group with the Decode lines), and a 1 GB log's report peaks 0.8 GB
# lower. Two vLLM engines (2 a group): 57 % more time to read for 50 MB less. Four DP
# ranks (2.9 a group): read as is.
_MIN_GROUP = 4.0
_SLICE = 1 << 18  # a batch's rows folded at a time (its working arrays: ~30 MB)
_SINGLES = 1 << 16  # rows added one by one, gathered into a batch of up to this many
_MAX_LUT = 1 << 22  # categorical numbers up to this looked up in a table (`_numbers`)


class Uncombinable(Exception):
    """A source whose ranks' rows cannot be combined while it is read exactly as the
    analysis would combine them: read it again without `RankFold`."""


class _Made:
    """Of one metric, the timestamps (as numbers) whose groups are made, as sorted,
    disjoint ranges, each with the ranks (bits) every group of its timestamps held; 0 when
    they differ. A range may hold timestamps that had no group: a row there is then
    judged as if they had (an early `Uncombinable`, never a wrong group)."""

    def __init__(self) -> None:
        import numpy as np

        self.lo = np.empty(0, np.int64)
        self.hi = np.empty(0, np.int64)
        self.mask = np.empty(0, np.uint64)

    def clash(self, ts: npt.NDArray[np.int64], bits: npt.NDArray[np.uint64]) -> bool:
        """Whether a row of these timestamps and ranks could join a made group."""
        import numpy as np

        if not len(self.lo) or not len(ts):
            return False
        at = np.searchsorted(self.lo, ts, side="right") - 1
        inside = at >= 0
        at = np.maximum(at, 0)
        inside &= ts <= self.hi[at]
        return bool((inside & ((self.mask[at] & bits) == 0)).any())

    def add_ranges(
        self, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], mask: npt.NDArray[np.uint64]
    ) -> None:
        """Made groups as `_made_ranges` gives one metric's: sorted, disjoint ranges of
        timestamps, each with the ranks every group there held (0 where they differ)."""
        import numpy as np

        if not len(lo):
            return
        if len(self.lo) and lo[0] > self.hi[-1]:  # after every made timestamp (the rule)
            if mask[0] == self.mask[-1]:
                self.hi[-1] = hi[0]
                lo, hi, mask = lo[1:], hi[1:], mask[1:]
            self.lo = np.concatenate([self.lo, lo])
            self.hi = np.concatenate([self.hi, hi])
            self.mask = np.concatenate([self.mask, mask])
        else:
            self._merge(lo, hi, mask)
        if len(self.lo) > _MAX_RANGES:
            self._coarsen()

    def _merge(
        self, lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64], mask: npt.NDArray[np.uint64]
    ) -> None:
        """Ranges that may overlap the made ones: overlapping ranges joined, their ranks
        kept where they agree (0 where not)."""
        import numpy as np

        lo = np.concatenate([self.lo, lo])
        hi = np.concatenate([self.hi, hi])
        mask = np.concatenate([self.mask, mask])
        o = np.argsort(lo, kind="stable")
        out_lo: list[int] = []
        out_hi: list[int] = []
        out_mask: list[int] = []
        for a, b, m in zip(lo[o].tolist(), hi[o].tolist(), mask[o].tolist(), strict=True):
            if out_lo and a <= out_hi[-1]:
                out_hi[-1] = max(out_hi[-1], b)
                if out_mask[-1] != m:
                    out_mask[-1] = 0
            else:
                out_lo.append(a)
                out_hi.append(b)
                out_mask.append(m)
        self.lo = np.array(out_lo, np.int64)
        self.hi = np.array(out_hi, np.int64)
        self.mask = np.array(out_mask, np.uint64)

    def _coarsen(self) -> None:
        """Neighbouring ranges joined two by two (ranks kept where they agree): fewer
        ranges that claim no more than the made groups held."""
        import numpy as np

        n = len(self.lo) // 2 * 2
        lo, hi, mask = self.lo[:n:2], self.hi[1:n:2], self.mask[:n:2]
        mask = np.where(mask == self.mask[1:n:2], mask, np.uint64(0))
        if n < len(self.lo):
            lo, hi = np.append(lo, self.lo[-1]), np.append(hi, self.hi[-1])
            mask = np.append(mask, self.mask[-1])
        self.lo, self.hi, self.mask = lo, hi, mask


def _made_ranges(
    m: npt.NDArray[np.int64], ts: npt.NDArray[np.int64], masks: npt.NDArray[np.uint64]
) -> tuple[
    npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.uint64]
]:
    """Made groups (metric numbers, timestamps, ranks as bits; any order) as ranges, metric
    by metric: each range's metric, first and last timestamp, and the ranks every group of
    its timestamps held (0 where they differ), neighbouring timestamps of the same ranks in
    one range; sorted by metric, then timestamp."""
    import numpy as np

    o = np.lexsort((masks, ts, m))
    m, ts, masks = m[o], ts[o], masks[o]
    new = np.ones(len(ts), np.bool_)
    new[1:] = (ts[1:] != ts[:-1]) | (m[1:] != m[:-1])
    starts = np.flatnonzero(new)
    keys, km = ts[starts], m[starts]
    same = np.minimum.reduceat(masks, starts) == np.maximum.reduceat(masks, starts)
    mask = np.where(same, masks[starts], np.uint64(0))
    # runs of timestamps (in order) of one metric with the same ranks: one range each
    run = np.ones(len(keys), np.bool_)
    run[1:] = (mask[1:] != mask[:-1]) | (km[1:] != km[:-1])
    at = np.flatnonzero(run)
    ends = np.append(at[1:], len(keys)) - 1
    return km[at], keys[at], keys[ends], mask[at]


class _Numbers:
    """Strings met (categorical numbers) numbered from 0 as met, and the same as a table
    from categorical number to number (-1: none yet), or None; and the strings as
    categoricals, held so that polars keeps their numbers."""

    def __init__(self) -> None:
        self.of: dict[int, int] = {}
        self.lut: npt.NDArray[np.int64] | None = None
        self.held: list[pl.Series] = []


class RankFold:
    """A source's rows on their way to the table, ranks' groups combined as read (the
    module's docstring). `add` and `add_batch` take what a parser gives, in order; `finish`
    passes on the last rows."""

    def __init__(self, columns: SampleColumns, config: str, source: str) -> None:
        self._out = columns
        self._config = config
        self._source = source
        self._held: pl.DataFrame | None = None  # rows waiting for the next chunk
        self._singles: list[Sample] = []  # rows added one by one, not yet a batch
        self._passthrough = False
        self._grouping = False  # a second rank met before any keyed row was passed on
        self._rank: int | None = None  # the one rank of the keyed rows passed as they are
        self._combined = False  # a group of two rows or more combined
        # the ranks and metrics met (categorical numbers), as numbers from 0
        self._ranks = _Numbers()
        self._metrics = _Numbers()
        self._sums: list[bool] = []  # per metric number: summed (else averaged)
        self._made: list[_Made] = []  # per metric number
        self._layout: bytes | None = None  # the timestamps' layout (digits as `d`)
        self._trimmer = _memory.Trimmer()  # the slices' working arrays, handed back

    # ------------------------------------------------------------------ intake

    def add(self, sample: Sample) -> None:
        """One row (a line-by-line reader's)."""
        if self._passthrough or (
            self._held is None and not self._singles and (sample.rank is None or sample.ts is None)
        ):
            self._out.add(self._config, self._source, sample)
            return
        self._singles.append(sample)
        if len(self._singles) >= _SINGLES:
            self._flush_singles(final=False)

    def add_batch(self, batch: SampleBatch) -> None:
        """A batch of rows (a fast path's chunk)."""
        if self._singles:
            self._flush_singles(final=False)
        self._batch(batch.frame, final=False)

    def finish(self) -> None:
        """Every row read: the rows still waiting are passed on."""
        if self._singles:
            self._flush_singles(final=True)
        elif self._held is not None:
            held, self._held = self._held, None
            self._take(held, final=True, joined=True)
        if self._combined:
            self._out.mark_folded()

    def _flush_singles(self, final: bool) -> None:
        rows, self._singles = self._singles, []
        self._batch(batch_frame(rows), final)

    def _batch(self, frame: pl.DataFrame, final: bool) -> None:
        """Rows in order: passed on as they are while every keyed row is of one rank (no
        group of two rows then), folded once a second rank comes with none passed yet;
        passed on as they are from then on if keyed rows of one rank were passed."""
        frame = _uniform(frame)
        if not self._passthrough and not self._grouping:
            ranks = _ranks_of(frame)
            if len(ranks) > 1 or (self._rank is not None and ranks - {self._rank}):
                if self._rank is None:
                    self._grouping = True
                else:  # rows of one rank passed as they are: no fold can be exact
                    self._passthrough = True
            elif ranks:
                self._rank = next(iter(ranks))
        if self._passthrough or not self._grouping:
            if frame.height:
                self._out.add_batch(self._config, self._source, SampleBatch(frame))
            return
        if not final:
            for at in range(0, frame.height, _SLICE):  # in slices: small working arrays
                self._take(frame.slice(at, _SLICE), final=False)
        else:
            self._take(frame, final=True)

    # ------------------------------------------------------------------ folding

    def _take(self, frame: pl.DataFrame, final: bool, joined: bool = False) -> None:
        """Rows after those waiting: the groups that are settled made and passed on, with
        the rows between them, in order; the rest wait (all pass when `final`)."""
        import polars as pl

        if self._held is not None and not joined:
            frame = pl.concat([self._held, frame], how="vertical")
        self._held = None
        try:
            self._fold(frame, final)
            self._trimmer.step()
        except _Trouble:
            if self._combined:
                raise Uncombinable(self._source) from None
            self._passthrough = True  # nothing combined yet: every row as read, from here
            self._emit(frame)

    def _fold(self, frame: pl.DataFrame, final: bool) -> None:
        import numpy as np
        import polars as pl

        n = frame.height
        # the strings as the categoricals' numbers (one for one string in the process)
        none = (1 << 32) - 1
        phys = frame.select(
            pl.col(c).to_physical().cast(pl.Int64).fill_null(none) for c in ("ts", "rank", "metric")
        )
        ts_all, rank_all, metric_all = (phys[c].to_numpy() for c in ("ts", "rank", "metric"))
        del phys
        keyed = (ts_all != none) & (rank_all != none)
        rows = np.flatnonzero(keyed)
        if not len(rows):
            self._emit(frame)
            return
        local, ts = self._timestamps(frame["ts"], ts_all, rows)
        bits = self._numbers(rank_all, rows, self._ranks, frame["rank"])
        if len(self._ranks.of) > _MAX_RANKS:
            raise _Trouble
        bit = np.left_shift(np.uint64(1), bits.astype(np.uint64))
        m = self._numbers(metric_all, rows, self._metrics, frame["metric"], rule=True)
        while len(self._made) < len(self._metrics.of):
            self._made.append(_Made())
        value = frame["value"].to_numpy()
        if float(np.abs(value[rows]).max()) > 1e300:
            raise _Trouble  # not summed by Kahan's rule in the analysis (`_combine_key`)
        # a row that could join a group made already (only a timestamp up to the last
        # made one can: most chunks have none)
        last = max((int(md.hi[-1]) for md in self._made if len(md.hi)), default=None)
        if last is not None and int(ts.min()) <= last:
            early = np.flatnonzero(ts <= last)
            for mi in np.unique(m[early]).tolist():
                at = early[m[early] == mi]
                if self._made[mi].clash(ts[at], bit[at]):
                    raise _Trouble
        # the rows that wait: from the first whose timestamp is among the last rows'
        if final:
            cut = n
        else:
            hot = min(len(rows), max(len(rows) // _HOT, _HOT_ROWS))
            recent = np.unique(ts[len(rows) - hot :])
            cut = int(rows[np.flatnonzero(np.isin(ts, recent))[0]])
        g = _runs(n, rows, m, local, bits)
        if g is None:  # numbers too big for one key a row
            h = _dp_groups(keyed, m, ts, bits)
            g = _Groups(h.members, h.first, h.size, h.plain)
        first, size, members = g.first, g.size, g.members
        if not self._combined and len(rows) < _MIN_GROUP * len(first):
            raise _Trouble  # groups too small to pay for the fold: rows as read
        lead = members[first]
        made = lead < cut
        # each row's group (keyed rows), for the group's ranks and the rows it takes
        gid = np.repeat(np.arange(len(first)), size)
        taken = np.zeros(n, np.bool_)
        out_plain = g.plain[g.plain < cut]
        taken[out_plain] = True
        taken[members[made[gid]]] = True
        rest = np.flatnonzero(~taken)
        if len(rest) > _MAX_HELD:
            raise _Trouble
        if final and len(rest):  # every row's group is made when all are read
            raise AssertionError("rows left after the last chunk")
        place = np.empty(n, np.int64)
        place[rows] = np.arange(len(rows))
        pos = place[members]  # members as places among the keyed rows
        masks = np.bitwise_or.reduceat(bit[pos], first)
        self._note_made(m[pos[first]][made], ts[pos[first]][made], masks[made])
        several = made & (size > 1)
        if several.any():
            self._combined = True
        # the rows passed on: plain rows and each made group's first row, in order
        chosen = np.concatenate([out_plain, lead[made]])
        kind = np.concatenate([np.full(len(out_plain), -1, np.int64), np.flatnonzero(made)])
        o = np.argsort(chosen, kind="stable")
        chosen, kind = chosen[o], kind[o]
        out = frame[chosen]
        if several.any():
            sel = np.flatnonzero(several)
            total = kahan_sums(value, members, first[sel], size[sel])
            summed = np.array(self._sums, np.bool_)[m[pos[first[sel]]]]
            total = np.where(summed, total, total / size[sel])
            line = frame["line"].to_numpy()
            lines = np.minimum.reduceat(line[members], first)[sel]
            new_value = value[chosen].copy()
            new_line = line[chosen].copy()
            is_sel = np.full(len(first), -1, np.int64)
            is_sel[sel] = np.arange(len(sel))
            which = np.where(kind >= 0, is_sel[np.maximum(kind, 0)], -1)
            hit = which >= 0
            new_value[hit] = total[which[hit]]
            new_line[hit] = lines[which[hit]]
            out = out.with_columns(
                pl.Series("value", new_value, pl.Float64),
                pl.Series("line", new_line, out["line"].dtype),
                pl.when(pl.Series(hit)).then(None).otherwise(pl.col("rank")).alias("rank"),
            )
        self._emit(out)
        if len(rest):
            self._held = frame[rest]

    def _note_made(
        self,
        m: npt.NDArray[np.int64],
        ts: npt.NDArray[np.int64],
        masks: npt.NDArray[np.uint64],
    ) -> None:
        """Made groups (their metric numbers, timestamps and ranks), every metric's ranges
        found at once (a slice holds a few dozen metrics: one pass, not one each)."""
        import numpy as np

        if not len(m):
            return
        rm, lo, hi, mask = _made_ranges(m, ts, masks)
        cut = np.flatnonzero(rm[1:] != rm[:-1]) + 1
        bounds = [0, *cut.tolist(), len(rm)]
        for a, b in itertools.pairwise(bounds):
            self._made[int(rm[a])].add_ranges(lo[a:b], hi[a:b], mask[a:b])

    def _emit(self, frame: pl.DataFrame) -> None:
        if frame.height:
            self._out.add_batch(self._config, self._source, SampleBatch(frame))

    # ------------------------------------------------------------------ codes

    def _numbers(
        self,
        codes: npt.NDArray[np.int64],
        rows: npt.NDArray[np.int64],
        numbers: _Numbers,
        column: pl.Series,
        rule: bool = False,
    ) -> npt.NDArray[np.int64]:
        """The keyed rows' strings (categorical numbers of `column`) as the source's
        numbers of them, from 0, each new one numbered as met (and held). With `rule`
        (metrics), each new one's rule is looked up (`_sums`). A table from categorical
        number to the source's number (-1: none yet) answers a slice that brings no new
        string in one lookup."""
        import numpy as np

        held = codes[rows]
        top = int(held.max())
        lut = numbers.lut
        if lut is not None and top < len(lut):
            found = lut[held]
            if int(found.min()) >= 0:
                return found
        seen, local, some = _dense(held)
        new: list[int] = []
        for code, at in zip(seen.tolist(), some.tolist(), strict=True):
            if code not in numbers.of:
                numbers.of[code] = len(numbers.of)
                new.append(int(rows[at]))
                if rule:
                    name = str(column[int(rows[at])])
                    self._sums.append(metrics.get(name).combine == "sum")
        if new:
            numbers.held.append(column.gather(new))
        mine = np.array([numbers.of[c] for c in seen.tolist()], np.int64)
        if top < _MAX_LUT:
            grown = np.full(max(top + 1, 0 if lut is None else len(lut)), -1, np.int64)
            if lut is not None:
                grown[: len(lut)] = lut
            grown[seen] = mine
            numbers.lut = grown
        return mine[local]

    def _timestamps(
        self, column: pl.Series, codes: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The keyed rows' timestamps as codes of this slice (0, 1, ...) and as numbers
        of the source, equal exactly where the strings are and in time order: a
        timestamp's digits, every timestamp being of one layout (digits as `d`)."""
        import polars as pl

        _, local, some = _dense(codes[rows])
        words = column.gather(rows[some]).cast(pl.String)
        numbers = self._digits(words)
        return local, numbers[local]

    def _digits(self, words: pl.Series) -> npt.NDArray[np.int64]:
        """Distinct timestamps as the numbers their digits make, read together: every one
        of the same bytes where it holds no ASCII digit and a digit where the first does
        (the source's layout), at most 18 digits; else `_Trouble`."""
        import numpy as np

        if not len(words):
            return np.empty(0, np.int64)
        width = words.str.len_bytes()
        size = int(width[0])
        if width.min() != width.max():  # (not n_unique: a hash of every row)
            raise _Trouble
        raw = np.frombuffer("".join(words.to_list()).encode(), np.uint8).reshape(len(words), size)
        digit = (raw >= ord("0")) & (raw <= ord("9"))
        layout = np.where(digit[0], ord("d"), raw[0]).astype(np.uint8).tobytes()
        if self._layout not in (None, layout):
            raise _Trouble
        self._layout = layout
        if not (digit == digit[0]).all() or not (raw[:, ~digit[0]] == raw[0, ~digit[0]]).all():
            raise _Trouble
        at = np.flatnonzero(digit[0])
        if len(at) > 18:
            raise _Trouble
        powers = 10 ** np.arange(len(at) - 1, -1, -1, dtype=np.int64)
        return (raw[:, at].astype(np.int64) - ord("0")) @ powers


def _ranks_of(frame: pl.DataFrame) -> set[int]:
    """The ranks (categorical numbers) of a frame's rows that have a rank and a
    timestamp (the rows the analysis combines)."""
    import polars as pl

    found = frame.select(
        pl.col("rank").to_physical().filter(pl.col("ts").is_not_null()).unique()
    ).to_series()
    return {int(r) for r in found.drop_nulls().to_list()}


def _dense(
    codes: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The distinct codes (sorted), each code's place among them, and for each distinct
    one a place that holds it (not always the first): by counting when the codes span a
    short range (a slice's do), else by sorting."""
    import numpy as np

    lo, hi = int(codes.min()), int(codes.max())
    if hi - lo > 4 * len(codes) + (1 << 16):
        seen, first, local = np.unique(codes, return_index=True, return_inverse=True)
        return seen, local.reshape(-1), first
    shifted = codes - lo
    present = np.bincount(shifted, minlength=hi - lo + 1) > 0
    where = np.flatnonzero(present)
    place = np.cumsum(present) - 1
    local = place[shifted]
    some = np.empty(len(where), np.int64)
    some[local] = np.arange(len(codes))  # one of each code's places (which one: any)
    return where + lo, local, some


class _Groups(NamedTuple):
    members: npt.NDArray[np.int64]  # rows, group by group, each group in row order
    first: npt.NDArray[np.int64]  # each group's first place in `members`
    size: npt.NDArray[np.int64]
    plain: npt.NDArray[np.int64]  # the rows not keyed


def _runs(
    n: int,
    rows: npt.NDArray[np.int64],
    m: npt.NDArray[np.int64],
    ts: npt.NDArray[np.int64],
    rank: npt.NDArray[np.int64],
) -> _Groups | None:
    """`group._dp_groups` of the keyed `rows` of `n` (their metric numbers, timestamp
    codes and rank numbers): the k-th row of each rank at a timestamp and metric, by two
    stable sorts of one number a row (row order kept among equals; the rows come nearly
    in timestamp order) instead of two lexsorts of four. None when the numbers would not
    fit in 62 bits."""
    import numpy as np

    if not len(rows):
        return None
    big_m = int(m.max()) + 1
    if (int(ts.max()) + 1) * big_m >= 1 << 62:  # a (timestamp, metric) as one number
        return None
    found = rank_groups(ts * big_m + m, rank)  # None: with the ranks, too big
    if found is None:
        return None
    o, first = found
    size = np.diff(np.append(first, len(o)))
    keyed = np.zeros(n, np.bool_)
    keyed[rows] = True
    return _Groups(rows[o], first, size, np.flatnonzero(~keyed))


class _Trouble(Exception):
    """Rows this fold cannot combine exactly as the analysis would."""


def _uniform(frame: pl.DataFrame) -> pl.DataFrame:
    """A batch's columns in one order and one set of types (strings as categoricals), so
    that waiting rows and the next batch join."""
    import polars as pl

    schema = batch_schema()
    cols: list[Any] = []
    if frame.columns == list(BATCH_COLUMNS) and all(
        frame[c].dtype == (pl.Categorical if c in _CODED else schema[c]) for c in BATCH_COLUMNS
    ):
        return frame
    for c in BATCH_COLUMNS:
        col = frame[c] if c in frame.columns else pl.repeat(None, frame.height, dtype=schema[c])
        col = col.cast(pl.Categorical if c in _CODED else schema[c])
        cols.append(col.alias(c))
    return pl.DataFrame(cols)


_CODED = ("rank", "ts", "metric")
