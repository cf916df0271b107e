"""The packed sample table, the columnar points of the analysis, and the progress bar."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from sessionlens import _progress, group, model
from sessionlens.model import (
    SAMPLE_COLUMNS,
    Sample,
    SampleBatch,
    SampleColumns,
    batch_columns,
    batch_schema,
)
from sessionlens.session import load_session


def _samples(n: int, source: str = "a.log") -> list[Sample]:
    return [
        Sample(
            metric=("gen_throughput_tok_s", "running_req")[i % 2],
            value=float(i) / 4,
            line=i + 1,
            block=None if i % 3 else i // 3,
            run=None,
            rank=None if i % 5 == 0 else f"TP{i % 2}",
            ts=f"2026-01-01 10:00:{i % 60:02d}",
        )
        for i in range(n)
    ]


def _batch(samples: list[Sample]) -> SampleBatch:
    return SampleBatch(pl.DataFrame(batch_columns(samples), schema=batch_schema()))


def _mixed(monkeypatch: pytest.MonkeyPatch, pack: int) -> SampleColumns:
    monkeypatch.setattr(model, "_PACK_ROWS", pack)
    cols = SampleColumns()
    rows = _samples(40)
    for s in rows[:7]:
        cols.add("c1", "a.log", s)
    cols.add_batch("c1", "a.log", _batch(rows[7:30]))
    for s in rows[30:]:
        cols.add("c2", "b.log", s)
    return cols


def _plain() -> SampleColumns:
    cols = SampleColumns()
    for i, s in enumerate(_samples(40)):
        cols.add("c1" if i < 30 else "c2", "a.log" if i < 30 else "b.log", s)
    return cols


@pytest.mark.parametrize("pack", [3, 1000])
def test_batches_and_packed_rows_keep_order_and_values(
    monkeypatch: pytest.MonkeyPatch, pack: int
) -> None:
    got, want = _mixed(monkeypatch, pack), _plain()
    assert len(got) == len(want) == 40
    assert_frame_equal(got.frame(), want.frame())
    assert got.rows() == want.rows()
    for name in SAMPLE_COLUMNS:
        assert getattr(got, name) == getattr(want, name), name
    assert got.metric_names() == {"gen_throughput_tok_s", "running_req"}
    assert got.frame().schema == want.frame().schema
    assert got.lazy(categorical=True).collect_schema()["ts"] == pl.Categorical


@pytest.mark.parametrize("join", [1, 8, 1000])
def test_a_sources_consecutive_parts_are_joined(monkeypatch: pytest.MonkeyPatch, join: int) -> None:
    """Batch parts of one source (same shared facts, same columns) are joined once they
    hold `_JOIN_ROWS` rows or another source's part comes; the table reads the same."""
    monkeypatch.setattr(model, "_PACK_ROWS", 3)
    monkeypatch.setattr(model, "_JOIN_ROWS", join)
    rows = _samples(120)
    shared = [
        Sample(s.metric, s.value, s.line, None, None, "TP0", s.ts) for s in _samples(60)
    ]  # one rank, no block: parts without those columns
    cols, want = SampleColumns(), SampleColumns()
    for lo in range(0, 60, 4):  # 15 small batches of one source
        cols.add_batch("c1", "a.log", _batch(shared[lo : lo + 4]))
    for s in rows[:5]:  # rows one by one, packed 3 at a time
        cols.add("c1", "a.log", s)
    for lo in range(5, 120, 5):  # another source's batches, each with rank and block columns
        cols.add_batch("c2", "b.log", _batch(rows[lo : lo + 5]))
    for s in shared:
        want.add("c1", "a.log", s)
    for i, s in enumerate(rows):
        want.add("c1" if i < 5 else "c2", "a.log" if i < 5 else "b.log", s)
    assert len(cols) == 180
    n_parts = len(cols._parts)
    assert_frame_equal(cols.frame(), want.frame())  # reading joins the last run too
    # (parts before reading, after): every part its own; runs closed at 8 rows (two batches)
    # or by the next source; one part per source and the packed rows, the last run joined
    # when the table is read
    assert (n_parts, len(cols._parts)) == {1: (40, 40), 8: (21, 21), 1000: (25, 3)}[join]
    layouts = [model._layout(p, w) for p, w in zip(cols._parts, cols._words, strict=True)]
    assert all(
        a != b or la != lb or pa.height >= join
        for a, b, la, lb, pa in zip(
            cols._part_keys, cols._part_keys[1:], layouts, layouts[1:], cols._parts, strict=False
        )
    )


_WORDS = st.lists(st.one_of(st.none(), st.sampled_from(["", "a", "TP0", "10:00:01", "é"])))


@settings(max_examples=200, deadline=None)
@given(_WORDS, st.integers(0, 300))
def test_strings_are_held_as_codes_into_their_distinct_strings(
    words: list[str | None], many: int
) -> None:
    """A string column as codes: the strings again by code (None as a null code), each
    distinct string once in the order first seen, codes in the narrowest unsigned type
    (past 256 distinct strings, two bytes)."""
    rows = words + [f"w{i}" for i in range(many)]
    for kind in (pl.String, pl.Categorical):  # the fast paths hand over categoricals
        codes, found = model._encoded(pl.Series("ts", rows, pl.String).cast(kind))
        assert codes.name == "ts"
        assert codes.len() == len(rows)
        assert found.dtype == pl.String
        assert found.to_list() == list(dict.fromkeys(w for w in rows if w is not None))
        assert codes.dtype == (pl.UInt8 if len(found) <= 256 else pl.UInt16)
        assert found.gather(codes).to_list() == rows


def test_a_categorical_is_coded_whatever_its_categories_numbers() -> None:
    """A categorical's numbers count every string the process made categorical: a column
    of few strings whose numbers are far apart is coded as densely as one of close ones."""
    pl.Series([f"far{i}" for i in range(200_000)]).cast(pl.Categorical)
    rows = ["far199999", None, "far5", "far199999", "near"]
    codes, found = model._encoded(pl.Series("rank", rows).cast(pl.Categorical))
    assert codes.to_list() == [0, None, 1, 0, 2]
    assert codes.dtype == pl.UInt8
    assert found.to_list() == ["far199999", "far5", "near"]


def test_a_categorical_of_recent_strings_is_coded_from_its_least_number() -> None:
    """A batch's timestamps are strings the process made categorical last: close numbers,
    far from 0 in a long log. They are coded by a table from the least of them."""
    # (held: once no categorical lives, polars numbers strings from 0 again)
    old = pl.Series([f"old{i}" for i in range(300_000)]).cast(pl.Categorical)
    recent = [f"recent{i}" for i in range(5)]
    pl.Series(recent).cast(pl.Categorical)
    rows = [recent[3], None, recent[1], recent[3], recent[4], recent[0]]
    codes, found = model._encoded(pl.Series("ts", rows).cast(pl.Categorical))
    assert codes.to_list() == [0, None, 1, 0, 2, 3]
    assert found.to_list() == [recent[3], recent[1], recent[4], recent[0]]
    assert old.len() == 300_000


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["r0", "r1", "r2", "r3", "r4"]), min_size=1, max_size=60))
def test_a_categorical_without_nulls_is_coded_as_its_strings_are(rows: list[str]) -> None:
    """A categorical with no null (the fast paths' columns, coded with numpy from the
    categories' numbers) is coded as the same strings as a String column: the same codes,
    the same strings in the order first seen, the same type, also when its numbers are
    recent ones far from 0, and when they were numbered in another order than the rows'."""
    old = pl.Series([f"older{i}" for i in range(70_000)]).cast(pl.Categorical)
    numbered = pl.Series(["r4", "r3", "r2", "r1", "r0"]).cast(pl.Categorical)  # held
    want_codes, want_words = model._encoded(pl.Series("metric", rows, pl.String))
    codes, words = model._encoded(pl.Series("metric", rows).cast(pl.Categorical))
    assert codes.dtype == want_codes.dtype
    assert codes.to_list() == want_codes.to_list()
    assert words.to_list() == want_words.to_list()
    assert codes.name == "metric"
    assert old.len() + numbered.len() == 70_005


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=30),
    st.integers(1, 12),
    st.integers(0, 200_000),
    st.integers(0, 3),
)
@example(numbers=[0, 1, 2], run=1, late_at=5_000, shape=2)  # past the first prefix
@example(numbers=[0, 1, 2], run=1, late_at=100_000, shape=2)  # past the second
@example(numbers=[0, 1, 2], run=8, late_at=0, shape=0)
def test_each_numbers_first_row_is_found_in_runs_or_not(
    numbers: list[int], run: int, late_at: int, shape: int
) -> None:
    """`_first_rows` (each number's first row, the length where it is absent) against a
    plain search: columns in runs (timestamps), columns without (metrics in turn) where a
    number first comes far down (past the prefixes looked at first), short and long."""
    import numpy as np

    if shape == 0:  # in runs
        at = np.repeat(np.array(numbers), run)
    elif shape == 1:  # in turn, a long column
        at = np.resize(np.array(numbers), 70_000 + late_at)
    elif shape == 2:  # in turn, and a number met only far down
        at = np.resize(np.array(numbers), 70_000 + late_at)
        at[min(late_at, len(at) - 1)] = 41
    else:  # as drawn
        at = np.array(numbers)
    at = at.astype(np.intp)
    first = model._first_rows(at, 42)
    want = np.full(42, len(at))
    seen, rows = np.unique(at, return_index=True)  # (the first of equals, by sorting)
    want[seen] = rows
    assert first.tolist() == want.tolist()


@pytest.mark.parametrize("kind", [pl.String, pl.Categorical])
def test_a_part_holds_a_rank_that_every_row_shares_once(kind: Any) -> None:
    """A batch whose rows are all of one rank (or of none) holds that rank once for the
    part; rows of two ranks, or of a rank and none, hold the rank as codes."""
    for ranks, once in (
        (["TP3"] * 4, ("TP3",)),
        ([None] * 4, (None,)),
        (["TP3", "TP3", "TP4", "TP3"], None),
        (["TP3", None, "TP3", "TP3"], None),
    ):
        rows = [Sample("m", 1.0, i + 1, None, None, r, "10:00") for i, r in enumerate(ranks)]
        frame = _batch(rows).frame.with_columns(pl.col("rank").cast(kind))
        cols = SampleColumns()
        cols.add_batch("c", "a.log", SampleBatch(frame))
        assert cols._part_keys[0].rank == once
        assert ("rank" in cols._parts[0].columns) == (once is None)
        assert cols.frame()["rank"].to_list() == ranks


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=5))
def test_parts_codes_join_into_codes_of_one_list(parts: list[list[str | None]]) -> None:
    """Parts' codes, each into its own strings, joined: codes into one list holding each
    string once, giving every row's string."""
    coded = [model._encoded(pl.Series("rank", p, pl.String)) for p in parts]
    codes, found = model._recoded([c for c, _ in coded], [w for _, w in coded])
    rows = [w for p in parts for w in p]
    assert found.n_unique() == found.len()
    assert codes.name == "rank"
    assert found.gather(codes).to_list() == rows


def test_a_batch_is_held_in_few_bytes_a_row() -> None:
    """An engine line's samples (several ranks, thousands of timestamps): one byte a
    metric and a rank, two a timestamp, four a line number and four a value (printed
    values as scaled integers)."""
    rows = [
        Sample(
            "abcdef"[i % 6],
            float(i),
            1 + i // 6,
            None,
            None,
            f"DP{i // 6 % 3}",
            f"10:{i // 60:04d}",
        )
        for i in range(60_000)
    ]  # 6 metrics a line, 3 ranks, 1,000 timestamps
    cols = SampleColumns()
    cols.add_batch("c", "a.log", _batch(rows))
    (part,) = cols._parts
    assert dict(part.schema) == {
        "line": pl.UInt32,
        "rank": pl.UInt8,
        "ts": pl.UInt16,
        "metric": pl.UInt8,
        "value": pl.Int32,
    }
    assert cols.frame()["ts"].to_list() == [s.ts for s in rows]
    assert cols.frame()["value"].to_list() == [s.value for s in rows]


def _bits(values: list[float]) -> list[int]:
    import struct

    return [struct.unpack("<q", struct.pack("<d", v))[0] for v in values]


def _held(values: list[float], **kw: Any) -> SampleColumns:
    cols = SampleColumns()
    rows = [Sample("m", v, i + 1, None, None, None, None) for i, v in enumerate(values)]
    cols.add_batch("c", "a.log", _batch(rows), **kw)
    return cols


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-(10**12), 10**12), st.integers(0, 12)), min_size=1, max_size=50
    ),
    st.sampled_from([None, -0.0, float("nan"), float("inf"), 0.1 + 0.2, 3e9, 1e-300]),
)
@example(printed=[(3, 1), (7, 1)], odd=None)  # 0.3: polars' 3 / 10 is 0.30000000000000004
def test_values_are_held_as_scaled_integers_and_read_back_bit_for_bit(
    printed: list[tuple[int, int]], odd: float | None
) -> None:
    """Printed decimals (any digits, any decimals) are held as 32-bit integers where they
    fit, and read back as the very doubles (the bits, a negative zero's sign too); values
    that are no short decimal keep the part's values doubles."""
    values = [float(f"{m}e-{k}") for m, k in printed]
    if odd is not None:
        values.insert(len(values) // 2, odd)
    cols = _held(values)
    (part,) = cols._parts
    scaled = "value" in cols._words[0]
    assert part["value"].dtype == (pl.Int32 if scaled else pl.Float64)
    fits = all(
        abs(round(v * 10**k)) < 2**31 and float(f"{round(v * 10**k)}e-{k}") == v
        for v in values
        for k in [max(k for _, k in printed)]
        if v == v and abs(v) != float("inf")
    )
    if odd is None and max(k for _, k in printed) <= 9 and fits:
        assert scaled
    if odd is not None and (odd != odd or odd in (float("inf"), 3e9, 1e-300, 0.1 + 0.2)):
        assert not scaled
    if odd is not None and odd == 0 and str(odd) == "-0.0":
        assert not scaled  # 0 / 10**k is +0.0
    got = cols.frame()["value"].to_list()
    assert _bits(got) == _bits(values)
    (drained,) = list(cols.drain())
    read = drained.frame["value"]
    if "value" in drained.words:
        read = model.unscaled(read, int(drained.words["value"][0]))
    assert _bits(read.to_list()) == _bits(values)


def test_scaled_parts_of_other_scales_are_joined_to_the_same_values(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Parts of one source are joined: values of another scale (or none) read back the
    same after the join, in the frame, the drain and a Parquet file."""
    monkeypatch.setattr(model, "_JOIN_ROWS", 1 << 30)
    cols = SampleColumns()
    chunks = [
        [1.5, 2.25, 3.0],  # two decimals
        [7.0, 8.0],  # none
        [0.123, 4.5],  # three
        [2.0**31 + 0.5, 1.0],  # too big: doubles
        [float(2**20), 3.75],
    ]
    every = [v for chunk in chunks for v in chunk]
    line = 0
    for chunk in chunks:
        rows = []
        for v in chunk:
            line += 1
            rows.append(Sample("m", v, line, None, None, None, None))
        cols.add_batch("c", "a.log", _batch(rows))
    assert _bits(cols.frame()["value"].to_list()) == _bits(every)
    assert len(cols._parts) < len(chunks)  # joined where the layouts agree
    cols.write_parquet(tmp_path / "s.parquet")
    assert _bits(pl.read_parquet(tmp_path / "s.parquet")["value"].to_list()) == _bits(every)
    read: list[float] = []
    for d in cols.drain():
        col = d.frame["value"]
        scale = model.scale_of(d.words)
        read += (col if scale is None else model.unscaled(col, scale)).to_list()
    assert _bits(read) == _bits(every)


def test_extend_appends_packed_and_held_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    a = _mixed(monkeypatch, 3)
    b = SampleColumns()
    b.extend(a)
    b.extend(_plain())
    assert len(b) == 80
    assert b.line == _plain().line * 2


def test_parquet_is_the_frame(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cols = _mixed(monkeypatch, 3)
    cols.write_parquet(tmp_path / "s.parquet")
    assert_frame_equal(pl.read_parquet(tmp_path / "s.parquet"), cols.frame())
    buf = io.BytesIO()
    cols.write_parquet(buf)
    assert_frame_equal(pl.read_parquet(io.BytesIO(buf.getvalue())), cols.frame())


def test_a_small_table_does_not_need_polars() -> None:
    cols = SampleColumns()
    cols.add("c", "s", _samples(1)[0])
    assert cols._parts == []
    assert cols.value == [0.0]


# ---------------------------------------------------------------------- points


DECODE = (
    "[2026-01-01 10:00:{s:02d} {rank}] Decode batch, #running-req: 4, #token: 100, "
    "token usage: 0.01, cuda graph: True, gen throughput (token/s): {g:.2f}, #queue-req: 0\n"
)


def test_points_are_columns_that_read_as_points(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.log").write_text(
        "".join(DECODE.format(s=s, rank="TP0", g=10.0 + s) for s in range(4))
    )
    values = group.values_by_config(load_session(tmp_path))
    pts = values[("a", "gen_throughput_tok_s")]
    assert isinstance(pts, group.PointList)
    assert pts.values == [10.0, 11.0, 12.0, 13.0]
    assert pts.sources == ["a/x.log"] * 4
    assert pts.lines == [1, 2, 3, 4]
    assert list(pts) == [group.Point(10.0 + i, "a/x.log", i + 1, None, None) for i in range(4)]
    assert pts[-1] == group.Point(13.0, "a/x.log", 4, None, None)
    assert pts[1:3].values == [11.0, 12.0]
    assert len(group.PointList.empty()) == 0
    assert not group.PointList.empty()


def test_one_rank_per_source_skips_the_combination_it_would_not_change(tmp_path: Path) -> None:
    # the shortcut (at most one rank per source) must equal the combination itself
    (tmp_path / "a").mkdir()
    text = "".join(DECODE.format(s=s // 2, rank="TP0", g=float(s)) for s in range(10))
    (tmp_path / "a" / "x.log").write_text(text)
    session = load_session(tmp_path)
    quick = group.values_by_config(session)
    df = session.columns.lazy(categorical=True).with_row_index("_order").collect()
    keyed = pl.col("ts").is_not_null() & pl.col("rank").is_not_null()
    full = group._combine(df, keyed)
    assert quick[("a", "gen_throughput_tok_s")].values == (
        full.filter(pl.col("metric").cast(pl.String) == "gen_throughput_tok_s")["value"].to_list()
    )


EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "sessions" / "eagle3-attention-mode"


def test_values_read_key_by_key_are_those_read_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # above HOLD_ALL_ROWS samples a key's values are read from the table when asked: the
    # same points, in the same order, and the same analysis
    from sessionlens.analysis import analyze

    session = load_session(EXAMPLE)
    at_once = group.values_by_config(session)
    assert isinstance(at_once, dict)
    whole = analyze(session)
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    by_key = group.values_by_config(session, keep=("accept_len",))
    assert isinstance(by_key, group._ByKey)
    assert list(by_key) == list(at_once)
    assert len(by_key) == len(at_once)
    assert ("nope", "accept_len") not in by_key
    with pytest.raises(KeyError):
        by_key[("nope", "accept_len")]
    for key, pts in at_once.items():
        got = by_key[key]
        assert (got.values, got.sources, got.lines) == (pts.values, pts.sources, pts.lines)
        assert list(got) == list(pts)  # runs and blocks too
    assert by_key[("eagle3-decode", "accept_len")] is by_key[("eagle3-decode", "accept_len")]
    assert analyze(session) == whole


def test_keys_asked_from_two_threads_are_read_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`analysis._summaries` asks for keys from two threads: their polars reads never run
    at once (each already uses every polars thread; two held twice the buffers), and
    each thread gets its own key's points."""
    import threading
    import time

    session = load_session(EXAMPLE)
    at_once = group.values_by_config(session)
    assert isinstance(at_once, dict)
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    by_key = group.values_by_config(session)
    assert isinstance(by_key, group._ByKey)
    real = pl.collect_all
    reading = [0]
    most = [0]
    guard = threading.Lock()

    def counting(*args: Any, **kwargs: Any) -> Any:
        with guard:
            reading[0] += 1
            most[0] = max(most[0], reading[0])
        time.sleep(0.01)  # long enough for the other thread to come in, were it let
        try:
            return real(*args, **kwargs)
        finally:
            with guard:
                reading[0] -= 1

    monkeypatch.setattr(pl, "collect_all", counting)
    keys = list(at_once)
    got: dict[tuple[str, str], Any] = {}

    def ask(mine: list[tuple[str, str]]) -> None:
        for key in mine:
            got[key] = by_key[key]

    threads = [threading.Thread(target=ask, args=(keys[i::2],)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most[0] == 1
    assert len(keys) >= 4
    for key, pts in at_once.items():
        assert (got[key].values, got[key].lines) == (pts.values, pts.lines)


@pytest.mark.parametrize("join", [1, 1000])
def test_key_by_key_reads_of_parts_with_and_without_runs_and_blocks(
    monkeypatch: pytest.MonkeyPatch, join: int
) -> None:
    """A key's points read part by part (parts of several sources, some with runs or
    blocks, some with neither) are those of the table, in order, runs and blocks too."""
    monkeypatch.setattr(model, "_JOIN_ROWS", join)
    rows = _samples(60)
    bare = [Sample(s.metric, s.value, s.line, None, None, "TP0", s.ts) for s in rows]
    ran = [Sample(s.metric, s.value, s.line, s.block, 7, s.rank, s.ts) for s in rows[40:60]]
    cols = SampleColumns()
    cols.add_batch("c1", "a.log", _batch(bare[:10]))  # no block, no run column
    cols.add_batch("c1", "b.log", _batch(rows[10:30]))  # blocks
    cols.add_batch("c1", "a.log", _batch(bare[30:40]))
    cols.add_batch("c1", "b.log", _batch(ran))  # runs
    by_key = group._ByKey(cols, frozenset())
    frame = cols.frame()
    for config, metric in by_key:
        want = frame.filter((pl.col("config") == config) & (pl.col("metric") == metric))
        got = list(by_key[(config, metric)])
        assert [(p.value, p.source, p.line, p.run, p.block) for p in got] == list(
            want.select("value", "source", "line", "run", "block").iter_rows()
        )
    assert any(p.block is not None for p in by_key[("c1", "running_req")])
    assert any(p.run == 7 for p in by_key[("c1", "running_req")])


# ---------------------------------------------------------------------- progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_bar_when_stderr_is_not_a_terminal_or_quiet() -> None:
    out = io.StringIO()
    with _progress.progress(100, stream=out, delay=0) as advance:
        advance(10)
    assert advance is _progress._nothing
    tty = _Tty()
    with _progress.progress(100, enabled=False, stream=tty, delay=0) as advance:
        advance(10)
    assert tty.getvalue() == ""


def test_no_bar_for_quick_work() -> None:
    tty = _Tty()
    with _progress.progress(100, stream=tty, delay=60) as advance:
        for _ in range(10):
            advance(10)
    assert tty.getvalue() == ""


def test_a_bar_for_slow_work_on_a_terminal() -> None:
    tty = _Tty()
    with _progress.progress(1000, label="parsing", stream=tty, delay=0) as advance:
        advance(100)
        advance(100)
    assert "parsing" in tty.getvalue()


@pytest.mark.parametrize("seed", range(12))
def test_keyed_ranks_read_from_codes_are_those_of_the_decoded_rows(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which ranks each source's rows with a timestamp have (whether DP groups need
    combining) is read from every part's codes: the same as a query of the decoded table,
    for batches with one rank or several, packed rows, rows not packed yet, rows without a
    rank or a timestamp."""
    import random

    rng = random.Random(seed)
    monkeypatch.setattr(model, "_PACK_ROWS", rng.choice([3, 17, 1000]))
    monkeypatch.setattr(model, "_JOIN_ROWS", rng.choice([5, 1 << 18]))
    cols = SampleColumns()
    line = 0
    for _ in range(rng.randint(1, 8)):
        source = rng.choice(["a.log", "b.log", "c.log"])
        ranks = rng.choice([[None], ["TP0"], ["TP0", "TP1"], ["DP0 TP0", "DP1 TP1", None]])
        rows = []
        for _ in range(rng.randint(1, 30)):
            line += 1
            ts = None if rng.random() < 0.2 else f"2026-01-01 10:00:{line % 60:02d}"
            rank = rng.choice(ranks)
            rows.append(Sample("running_req", float(line), line, None, None, rank, ts))
        if rng.random() < 0.5:
            cols.add_batch("c1", source, _batch(rows))
        else:
            for s in rows:
                cols.add("c1", source, s)
    # a batch of one rank and no timestamp (a start-up line's rank): no DP group's
    cols.add_batch("c1", "a.log", _batch([Sample("x", 1.0, line + 1, None, None, "TP9", None)]))
    want: dict[str, set[str]] = {}
    for row in cols.rows():
        if row["rank"] is not None and row["ts"] is not None:
            want.setdefault(row["source"], set()).add(row["rank"])
    assert cols.keyed_ranks() == want
