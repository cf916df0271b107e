"""A big session's values read key by key (`group._ByKey`) are those read at once, DP groups
combined too: the same points in the same order, the same values bit for bit (issue 22: the
combination of a day-long log's DP groups and phase ranks no longer holds the whole table at
once)."""

from __future__ import annotations

import dataclasses
import itertools
import random
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from sessionlens import group, model
from sessionlens.model import Sample, SampleBatch, SampleColumns, batch_columns, batch_schema


class _Session:
    """What `values_by_config` reads of a session: its table."""

    def __init__(self, columns: SampleColumns) -> None:
        self.columns = columns


def _batch(samples: list[Sample]) -> SampleBatch:
    return SampleBatch(pl.DataFrame(batch_columns(samples), schema=batch_schema()))


def _log(rng: random.Random, ranks: list[str | None], n: int) -> list[Sample]:
    """Interval lines of several DP groups (each its own rank), some at the same timestamp,
    a rank twice in a second, phase blocks, lines without a rank or a time."""
    out: list[Sample] = []
    line = 0
    for step in range(n):
        ts = f"2026-01-01 10:{step // 120 % 60:02d}:{step // 2 % 60:02d}"
        for rank in ranks:
            line += 1
            for metric in ("gen_throughput_tok_s", "running_req", "accept_len"):
                value = rng.choice([rng.uniform(0, 3000), 0.1, 0.2, 0.3, 1e16, 1.0])
                block = step if metric == "accept_len" and rng.random() < 0.5 else None
                out.append(Sample(metric, value, line, block, None, rank, ts))
        if rng.random() < 0.1:
            line += 1
            out.append(Sample("cycle_ms", rng.random(), line, step, None, None, ts))
            out.append(Sample("cycle_ms", rng.random(), line, None, 3, "TP0", None))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_dp_groups_combined_key_by_key_are_those_combined_at_once(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    monkeypatch.setattr(model, "_JOIN_ROWS", rng.choice([50, 1000, 1 << 18]))
    cols = SampleColumns()
    for source, ranks in (("a.log", ["DP0 TP0", "DP1 TP1", "DP2 TP2"]), ("b.log", ["TP0"])):
        rows = _log(rng, list(ranks), 150)
        cut = rng.randrange(1, len(rows))
        cols.add_batch("c1", source, _batch(rows[:cut]))
        for s in rows[cut : cut + 40]:
            cols.add("c1", source, s)
        cols.add_batch("c1", source, _batch(rows[cut + 40 :]))
    session: Any = _Session(cols)
    at_once = group.values_by_config(session)
    assert isinstance(at_once, dict)
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)

    def not_here(*args: Any) -> Any:
        raise AssertionError("_combine_key combines these values itself")

    monkeypatch.setattr(group, "_combine", not_here)
    by_key = group.values_by_config(session)
    assert isinstance(by_key, group._ByKey)
    assert list(by_key) == list(at_once)
    for key, pts in at_once.items():
        got = by_key[key]
        assert [(p.value, p.source, p.line, p.run, p.block) for p in got] == [
            (p.value, p.source, p.line, p.run, p.block) for p in pts
        ], key
    # the combination did something: three DP groups at one timestamp are one point
    assert len(at_once[("c1", "running_req")]) < sum(1 for s in cols.metric if s == "running_req")


def test_points_keep_runs_and_blocks_as_columns() -> None:
    pts = group.PointList.empty()
    assert list(pts) == []
    ints = group.Ints(*_ints([3, None, 5]))
    assert ints.tolist() == [3, None, 5]
    assert ints[1] is None
    assert ints[2] == 5
    assert ints[1:].tolist() == [None, 5]


def _ints(values: list[int | None]) -> tuple[Any, Any]:
    import numpy as np

    return (
        np.array([v or 0 for v in values], np.int32),
        np.array([v is None for v in values], np.bool_),
    )


def test_the_example_session_reads_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    from sessionlens.session import load_session

    session = load_session(
        Path(__file__).resolve().parent.parent / "fixtures" / "sessions" / "eagle3-attention-mode"
    )
    at_once = group.values_by_config(session)
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    by_key = group.values_by_config(session)
    for key, pts in at_once.items():
        assert list(by_key[key]) == list(pts)


def test_values_combined_by_polars_where_numpy_might_not_agree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # infinities, values near the float limit and big groups are left to `_combine`
    cols = SampleColumns()
    rows = [
        Sample("running_req", v, i + 1, None, None, f"DP{i % 3}", f"10:00:{i // 3:02d}")
        for i, v in enumerate([1.0, float("inf"), 2.0, 1e308, 1e308, 3.0, *range(200)])
    ]
    rows += [Sample("running_req", 1.5, 999, None, None, f"DP{r}", "11:00:00") for r in range(70)]
    cols.add_batch("c1", "a.log", _batch(rows))
    session: Any = _Session(cols)
    at_once = group.values_by_config(session)
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    by_key = group.values_by_config(session)
    got = by_key[("c1", "running_req")]
    assert [(p.value, p.line) for p in got] == [
        (p.value, p.line) for p in at_once[("c1", "running_req")]
    ]
    frame = cols.lazy(categorical=True).collect()
    assert group._combine_key(frame, "running_req") is None
    fallback = _counting(monkeypatch, "_combine")
    _drained_alike(session, at_once)  # drained too (its rows hold no config or metric)
    assert fallback == [1]


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Calls of `group.<name>` from now on, counted (the function still runs)."""
    calls: list[int] = []
    real = getattr(group, name)

    def counted(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(group, name, counted)
    return calls


def _drained_alike(session: Any, at_once: Any) -> dict[tuple[str, str], group.PointList]:
    """A table drained (`consume`) gives the values read at once (bit for bit), and is
    then empty."""
    drained = group.values_by_config(session, consume=True)
    assert isinstance(drained, dict)
    assert list(drained) == list(at_once)
    for key, pts in at_once.items():
        assert [(p.value, p.source, p.line, p.run, p.block) for p in drained[key]] == [
            (p.value, p.source, p.line, p.run, p.block) for p in pts
        ], key
        assert drained[key]._values.tobytes() == pts._values.tobytes(), key
    assert len(session.columns) == 0
    # keys read from the same lines hold one array of them, which nothing may write
    held = list(drained.values())
    assert not any(pts._lines.flags.writeable for pts in held)
    for a, b in itertools.pairwise(held):
        if a._lines.dtype == b._lines.dtype and np.array_equal(a._lines, b._lines):
            assert b._lines is a._lines
    return drained


@pytest.mark.parametrize("seed", range(6))
def test_a_drained_table_gives_the_values_read_at_once(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parts with a shared rank and with a rank column, rows added one by one (a part
    holding config and source), three sources of two configs, DP groups combined."""
    rng = random.Random(seed)
    monkeypatch.setattr(model, "_JOIN_ROWS", rng.choice([50, 1000, 1 << 18]))
    monkeypatch.setattr(model, "_PACK_ROWS", rng.choice([7, 1 << 16]))
    cols = SampleColumns()
    for config, source, ranks in (
        ("c1", "a.log", ["DP0 TP0", "DP1 TP1", "DP2 TP2"]),
        ("c1", "b.log", ["TP0"]),
        ("c2", "c.log", [None]),
    ):
        rows = _log(rng, list(ranks), 150)
        cut = rng.randrange(1, len(rows))
        cols.add_batch(config, source, _batch(rows[:cut]))
        for s in rows[cut : cut + 40]:
            cols.add(config, source, s)
        cols.add_batch(config, source, _batch(rows[cut + 40 :]))
    session: Any = _Session(cols)
    at_once = group.values_by_config(session)
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    frames = _counting(monkeypatch, "_widened")
    drained = _drained_alike(session, at_once)
    # an interval line's three metrics: one array of lines (per config)
    assert len({id(pts._lines) for pts in drained.values()}) < len(drained)
    # every key combined from numpy columns of its pieces (its values are finite): no
    # frame of a key's rows made and joined (issue 22: a DP log's peak RSS)
    assert frames == []


@pytest.mark.parametrize("seed", range(6))
def test_a_drained_table_of_printed_values_gives_the_values_read_at_once(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Printed values (held as scaled integers, each part of its own scale or as doubles)
    drained and read key by key are the values read at once, bit for bit, with and
    without DP groups; a key's points hold them scaled where every part shares a scale."""
    rng = random.Random(100 + seed)
    monkeypatch.setattr(model, "_JOIN_ROWS", rng.choice([50, 1000, 1 << 18]))
    cols = SampleColumns()
    for config, source, ranks in (
        ("c1", "a.log", ["DP0 TP0", "DP1 TP1"]),
        ("c2", "c.log", [None]),
    ):
        rows = _log(rng, list(ranks), 150)
        at = 0
        while at < len(rows):  # chunks of their own scale: 0 to 4 decimals, or doubles
            end = min(len(rows), at + rng.randrange(20, 200))
            k = rng.choice([0, 1, 2, 3, 4, None])
            chunk = [
                Sample(
                    s.metric,
                    rng.random() if k is None else round(rng.uniform(0, 3000), k),
                    s.line,
                    s.block,
                    s.run,
                    s.rank,
                    s.ts,
                )
                for s in rows[at:end]
            ]
            cols.add_batch(config, source, _batch(chunk))
            at = end
    session: Any = _Session(cols)
    at_once = group.values_by_config(session)
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    _drained_alike(session, at_once)

    # one source without ranks, every chunk of two decimals: its keys' points stay scaled
    one = SampleColumns()
    rows = _log(rng, [None], 300)
    for at in range(0, len(rows), 97):
        one.add_batch(
            "c",
            "a.log",
            _batch(
                [
                    Sample(
                        s.metric, round(rng.uniform(0, 3000), 2), s.line, s.block, None, None, None
                    )
                    for s in rows[at : at + 97]
                ]
            ),
        )
    session = _Session(one)
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 1 << 30)
    at_once = group.values_by_config(session)
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    drained = _drained_alike(session, at_once)
    assert all(pts._scale == 2 for pts in drained.values())
    for key, pts in at_once.items():
        assert drained[key][3].value == pts[3].value, key  # one point, made alone


def test_a_drained_session_analyses_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """The example session, analysed with its table drained and read key by key: the same
    JSON report, and the session's samples are gone afterwards."""
    from sessionlens import analyze
    from sessionlens.session import load_session

    where = Path(__file__).resolve().parent.parent / "fixtures" / "sessions"
    for name in ("eagle3-attention-mode", "sweep-attention-backends"):
        want = analyze(load_session(where / name)).model_dump_json()
        monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
        session = load_session(where / name)
        assert analyze(session, consume=True).model_dump_json() == want
        assert session.samples.height == 0
        monkeypatch.undo()


def test_keys_of_the_same_lines_share_their_dp_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys read from the same lines (each line's metrics) make their DP groups once; a key
    of other lines makes its own, and every key's values are those combined at once."""
    cols = SampleColumns()
    rows: list[Sample] = []
    line = 0
    for step in range(300):
        ts = f"10:{step // 60:02d}:{step % 60 // 3:02d}"  # three steps a second
        for rank in ("DP0", "DP1"):
            line += 1
            for metric in ("gen_throughput_tok_s", "running_req", "token_usage"):
                rows.append(Sample(metric, (step * 7 + line) % 97 / 3, line, None, None, rank, ts))
        if step % 4 == 0:  # a metric of other lines
            line += 1
            rows.append(Sample("accept_len", 1 + step % 5 / 4, line, None, None, "DP0", ts))
    cols.add_batch("c1", "a.log", _batch(rows))
    session: Any = _Session(cols)
    at_once = group.values_by_config(session)
    made = _counting(monkeypatch, "_dp_groups")
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    _drained_alike(session, at_once)
    assert len(made) == 2  # the three metrics of each line, then accept_len's lines
    # combined: two DP groups at a timestamp are one point
    assert len(at_once[("c1", "running_req")]) == 300


def test_keys_of_as_many_other_rows_make_their_own_groups(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two keys with the same number of rows but other timestamps and ranks: the second
    does not take the first one's groups."""
    rows = [
        Sample("running_req", float(i), i + 1, None, None, f"DP{i % 2}", f"10:00:{i // 2:02d}")
        for i in range(20)  # ten timestamps, two DP groups each: ten points
    ]
    rows += [
        Sample("gen_throughput_tok_s", float(i), 40 + i, None, None, "DP0", f"10:01:{i:02d}")
        for i in range(20)  # one a second: twenty points
    ]
    cols = SampleColumns()
    cols.add_batch("c1", "a.log", _batch(rows))
    session: Any = _Session(cols)
    at_once = group.values_by_config(session)
    assert len(at_once[("c1", "running_req")]) == 10
    assert len(at_once[("c1", "gen_throughput_tok_s")]) == 20
    made = _counting(monkeypatch, "_dp_groups")
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    _drained_alike(session, at_once)
    assert len(made) == 2


@pytest.mark.parametrize("seed", range(6))
def test_a_key_of_one_source_holds_no_source_number_a_point(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key whose points all come from one log holds its source as one number seen as a
    column (no byte a point); a key of several logs holds a number a point. Both give every
    point's source as the rows say, whole or sliced or taken, read at once or drained."""
    import numpy as np

    rng = random.Random(seed)
    monkeypatch.setattr(model, "_JOIN_ROWS", rng.choice([50, 1000, 1 << 18]))
    cols = SampleColumns()
    want: dict[tuple[str, str], list[str]] = {}
    # c1 reads one log, c2 two (their rows interleaved part by part)
    for config, sources in (("c1", ["one.log"]), ("c2", ["x.log", "y.log", "x.log"])):
        for source in sources:
            rows = _log(rng, ["TP0"], rng.randint(5, 60))
            cols.add_batch(config, source, _batch(rows))
            for s in rows:
                want.setdefault((config, s.metric), []).append(source)
    session: Any = _Session(cols)
    if seed % 2:
        monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
        got = group._drained(cols, combine=False)
    else:
        got = group.values_by_config(session)
    assert set(got) == set(want)
    for key, pts in got.items():
        assert [p.source for p in pts] == want[key], key
        assert pts.sources == want[key]
        assert pts[1:3].sources == want[key][1:3]
        at = np.array([len(pts) - 1, 0], np.int64)
        assert pts.take(at).sources == [want[key][-1], want[key][0]]
        strides = pts._sources.strides[0]
        assert (strides == 0) == (key[0] == "c1"), key


def test_a_drained_key_of_lines_beyond_32_bits_combines_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A log of more than 2**32 lines: its parts hold 64-bit line numbers, and a drained
    key's DP groups take the first line of each group from them as read at once."""
    rng = random.Random(7)
    cols = SampleColumns()
    for source, far in (("a.log", 0), ("b.log", 1 << 32)):
        rows = _log(rng, ["DP0 TP0", "DP1 TP1"], 60)
        cols.add_batch(
            "c1", source, _batch([dataclasses.replace(s, line=s.line + far) for s in rows])
        )
    session: Any = _Session(cols)
    at_once = group.values_by_config(session)
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    frames = _counting(monkeypatch, "_widened")
    drained = _drained_alike(session, at_once)
    assert frames == []
    lines = drained[("c1", "running_req")].lines
    assert min(lines) < 1 << 32 <= max(lines)


def test_a_drained_key_of_rows_with_and_without_rank_combines_alike(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows without a rank or a time between a key's DP groups pass as they are, the
    groups around them combine."""
    rows: list[Sample] = []
    for step in range(40):
        ts = f"2026-01-01 10:00:{step:02d}"
        for r in range(3):
            rows.append(
                Sample("running_req", 10.0 * r + step, 4 * step + r, None, None, f"DP{r}", ts)
            )
        rows.append(Sample("running_req", 0.5 + step, 4 * step + 3, None, None, None, ts))
    cols = SampleColumns()
    cols.add_batch("c1", "a.log", _batch(rows))
    session: Any = _Session(cols)
    at_once = group.values_by_config(session)
    assert len(at_once[("c1", "running_req")]) == 80  # 40 groups and 40 rows alone
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    frames = _counting(monkeypatch, "_widened")
    _drained_alike(session, at_once)
    assert frames == []


def test_a_drained_key_of_one_rank_keeps_its_values_scaled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A key whose rows have a rank and a time but no group of two (one rank printing)
    keeps its printed values as held (scaled integers), and they read as at once; a key
    whose groups combine holds the sums as doubles."""
    rows: list[Sample] = []
    for step in range(50):
        ts = f"2026-01-01 10:00:{step:02d}"
        rows.append(Sample("running_req", step * 0.25, 2 * step + 1, None, None, "TP0", ts))
        for r in range(2):
            rows.append(Sample("num_token", step + 0.5 * r, 2 * step + 2, None, None, f"DP{r}", ts))
    cols = SampleColumns()
    cols.add_batch("c1", "a.log", _batch(rows))
    session: Any = _Session(cols)
    at_once = group.values_by_config(session)
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    drained = _drained_alike(session, at_once)
    assert drained[("c1", "running_req")]._scale == 2
    assert drained[("c1", "num_token")]._scale is None
    assert len(drained[("c1", "num_token")]) == 50


@pytest.mark.parametrize("big", [False, True])
def test_a_key_of_parts_at_two_scales_is_held_at_the_larger(
    big: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key read from parts held at scales 0 and 2 (whole numbers in one log, two
    decimals in another) holds its values at scale 2, the whole numbers times 100; where
    one would not fit in 32 bits so, as doubles. The same values, bit for bit, either way."""
    whole = [
        Sample("running_req", float(v), i + 1, None, None, None, None)
        for i, v in enumerate([3, 0, 17, 30_000_000 if big else 12])
    ]
    cents = [
        Sample("running_req", v, i + 1, None, None, None, None)
        for i, v in enumerate([0.25, 1.5, 0.01])
    ]
    for drain in (False, True):
        cols = SampleColumns()
        cols.add_batch("c1", "a.log", _batch(whole))
        cols.add_batch("c1", "b.log", _batch(cents))
        session: Any = _Session(cols)
        if drain:
            monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
            got = group.values_by_config(session, consume=True)
        else:
            got = group.values_by_config(session)
        pts = got[("c1", "running_req")]
        assert [p.value for p in pts] == [s.value for s in whole + cents]
        assert (
            pts._values.tobytes()
            == pl.Series([s.value for s in whole + cents]).to_numpy().tobytes()
        )
        if drain:  # (read at once, the table's values are made doubles first)
            assert pts._scale == (None if big else 2)


@pytest.mark.parametrize("seed", range(12))
def test_a_part_split_by_key_is_polars_partition(seed: int) -> None:
    """`_by_key` (numpy's split of a part of numbers, polars' where it holds nulls or is
    split by config too) gives `partition_by(maintain_order=True)`'s pieces: the keys in
    the order they first come, each key's rows in order, the same columns and types."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    metric_type = (pl.UInt8, pl.UInt16)[seed % 2]
    keys = int(rng.integers(1, 12))
    frame = pl.DataFrame(
        {
            "value": pl.Series(rng.integers(-5, 5, n), dtype=pl.Int32)
            if seed % 3
            else pl.Series(rng.random(n)),
            "line": pl.Series(np.sort(rng.integers(0, 10_000, n)), dtype=pl.UInt32),
            "ts": pl.Series(rng.integers(0, 50, n), dtype=pl.UInt16),
            "metric": pl.Series(
                rng.integers(0, keys, n) * (300 if seed % 2 else 1), dtype=metric_type
            ),
        }
    )
    cases = [(frame, ["metric"])]
    with_null = frame.with_columns(
        block=pl.Series([None if i % 3 else i for i in range(n)], dtype=pl.Int32)
    )
    cases.append((with_null, ["metric"]))
    cases.append(
        (
            frame.with_columns(config=pl.Series(rng.integers(0, 3, n), dtype=pl.UInt8)),
            ["config", "metric"],
        )
    )
    for f, by in cases:
        got = group._by_key(f, by)
        want = f.partition_by(by, maintain_order=True)
        assert len(got) == len(want)
        for (config, metric, piece), sub in zip(got, want, strict=True):
            assert metric == sub["metric"][0]
            assert config == (sub["config"][0] if "config" in by else None)
            assert piece.equals(sub.drop(by))
            assert piece.schema == sub.drop(by).schema
    # every line's metrics in turn (a Decode batch line's): their pieces share the lines,
    # timestamps and ranks (one array each), and hold values of their own
    lines = np.repeat(np.arange(n, dtype=np.uint32), 3)
    turn = pl.DataFrame(
        {
            "value": pl.Series(rng.integers(0, 9, 3 * n), dtype=pl.Int32),
            "line": lines,
            "ts": (lines // 4).astype(np.uint16),
            "metric": pl.Series(np.tile([5, 2, 7], n), dtype=pl.UInt8),
        }
    )
    split = group._by_key(turn, ["metric"])
    assert [m for _, m, _ in split] == [5, 2, 7]  # as first met
    pieces = [piece for _, _, piece in split]
    for piece in pieces:
        assert piece["line"].to_list() == list(range(n))
    for c in ("line", "ts"):
        assert len({piece[c].to_numpy().ctypes.data for piece in pieces}) == 1
    assert len({piece["value"].to_numpy().ctypes.data for piece in pieces}) == 3
