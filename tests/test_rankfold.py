"""Ranks' rows combined as a source is read (`_rankfold`, for `report`): the analysis gets
exactly the points it makes from the whole table, on sources made to break it (repeated
timestamps, ranks out of order, a rank twice in a second, rows without a rank, a rank that
comes late, -0.0), in batches and slices of every size, and on every fixture."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import polars as pl
import pytest

from sessionlens import _rankfold, group, session
from sessionlens.analysis import analyze
from sessionlens.model import BATCH_COLUMNS, Sample, SampleBatch, SampleColumns, batch_schema
from sessionlens.session import load_session

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _stamp(t: int) -> str:
    return f"2025-11-14 {t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d}"


def _source(rng: random.Random, n_seconds: int) -> list[dict[str, Any]]:
    """Rows as a multi-rank server log gives them: per second, each rank's phase lines
    (a summed and an averaged metric), sometimes twice, sometimes missing a rank, lines a
    little out of order, a Decode line of TP0, lines without rank or timestamp, and now
    and then a timestamp printed again much later (a restart, midnight)."""
    ranks = [f"TP{i}" for i in range(rng.choice([1, 2, 4, 8]))]
    rows: list[dict[str, Any]] = []
    line = 0
    t = 0
    for _ in range(n_seconds):
        t += 1
        if rng.random() < 0.01 and t > 30:
            t -= rng.randint(2, 30)  # a timestamp printed again
        stamp = _stamp(t)
        batch: list[dict[str, Any]] = []
        for _cycle in range(rng.choice([1, 1, 1, 2])):
            for rank in ranks:
                if rng.random() < 0.05:
                    continue  # this rank's line comes in another second, or never
                for metric in ("num_token", "verify_ms_per_cycle"):  # sum, mean
                    value = rng.choice([-0.0, 0.0, 1.5, 1e-17, 3.25, rng.random() * 100])
                    batch.append({"rank": rank, "ts": stamp, "metric": metric, "value": value})
        if rng.random() < 0.3:
            rank = None if rng.random() < 0.5 else ranks[0]
            ts = stamp if rank is None or rng.random() < 0.5 else None
            batch.append({"rank": rank, "ts": ts, "metric": "gen_throughput", "value": 1.0})
        if len(batch) > 2 and rng.random() < 0.2:  # two lines swapped
            i = rng.randrange(len(batch) - 1)
            batch[i], batch[i + 1] = batch[i + 1], batch[i]
        for row in batch:
            line += 1
            # now and then a row that names an earlier line (a block's totals do)
            at = line - rng.randint(1, 5) if rng.random() < 0.03 and line > 5 else line
            rows.append({"line": at, "block": line // 50, "run": None, **row})
    return rows


def _frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=batch_schema()).select(BATCH_COLUMNS)


def _points(columns: SampleColumns) -> list[tuple[Any, ...]]:
    got = group.values_by_config(SimpleNamespace(columns=columns))  # type: ignore[arg-type]
    out = []
    for key, pts in got.items():
        values = np.asarray(pts._values, np.float64)
        out.append(
            (
                key,
                values.view(np.uint64).tolist(),  # bit for bit: -0.0 is not 0.0
                [int(x) for x in pts._lines],
                [pts._names[i] for i in pts._sources],
                None if pts._runs is None else pts._runs.tolist(),
                None if pts._blocks is None else pts._blocks.tolist(),
            )
        )
    return out


def _read_one(
    rows: list[dict[str, Any]], name: str, rng: random.Random, fold: bool
) -> SampleColumns:
    """One source's rows into a table, in batches of random sizes (and some rows one by
    one), through a `RankFold` if asked; read again without it when it cannot be exact
    (as `session._parse_file` does)."""
    mine = SampleColumns()
    sink = _rankfold.RankFold(mine, "cfg", name) if fold else None
    at = 0
    try:
        while at < len(rows):
            size = rng.choice([1, 7, 50, 333, 5000])
            part = rows[at : at + size]
            at += size
            if sink is None:
                mine.add_batch("cfg", name, SampleBatch(_frame(part)))
            elif size == 1 and rng.random() < 0.5:
                r = part[0]
                sink.add(
                    Sample(r["metric"], r["value"], r["line"], r["block"], None, r["rank"], r["ts"])
                )
            else:
                sink.add_batch(SampleBatch(_frame(part)))
        if sink is not None:
            sink.finish()
    except _rankfold.Uncombinable:
        return _read_one(rows, name, rng, fold=False)
    return mine


def _read(sources: list[list[dict[str, Any]]], rng: random.Random, fold: bool) -> SampleColumns:
    columns = SampleColumns()
    for i, rows in enumerate(sources):
        columns.extend(_read_one(rows, f"s{i}.log", rng, fold))
    return columns


@pytest.mark.parametrize("seed", range(40))
def test_the_fold_gives_the_analysis_its_own_points(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    # small slices and windows: rows wait across many slice boundaries
    monkeypatch.setattr(_rankfold, "_SLICE", rng.choice([16, 64, 1 << 19]))
    monkeypatch.setattr(_rankfold, "_HOT_ROWS", rng.choice([1, 8, 64]))
    monkeypatch.setattr(_rankfold, "_MIN_GROUP", rng.choice([0.0, 0.0, 2.0]))
    if rng.random() < 0.5:  # the per-key readers, not the whole-table one
        monkeypatch.setattr(group, "HOLD_ALL_ROWS", 10)
    sources = [_source(rng, rng.choice([20, 200, 600])) for _ in range(rng.choice([1, 2, 3]))]
    plain = _read(sources, random.Random(seed), fold=False)
    folded = _read(sources, random.Random(seed), fold=True)
    assert _points(folded) == _points(plain)
    if len(folded) < len(plain):  # rows were combined: the table says so
        assert folded.folded


def test_a_source_of_eight_ranks_holds_one_row_a_group() -> None:
    """Eight ranks a timestamp: groups big enough for the fold (`_MIN_GROUP`)."""
    rows = []
    for t in range(100):
        for r in range(8):
            rows.append(
                {
                    "line": len(rows) + 1,
                    "block": None,
                    "run": None,
                    "rank": f"TP{r}",
                    "ts": _stamp(t),
                    "metric": "verify_ms_per_cycle",
                    "value": 30.0 + r,
                }
            )
    columns = SampleColumns()
    fold = _rankfold.RankFold(columns, "cfg", "a.log")
    fold.add_batch(SampleBatch(_frame(rows)))
    fold.finish()
    assert len(columns) == 100
    assert columns.folded
    frame = columns.frame()
    assert frame["rank"].null_count() == 100
    assert frame["value"].to_list() == [33.5] * 100  # the mean of 30..37
    assert frame["line"].to_list() == [1 + 8 * t for t in range(100)]


def test_a_repeat_after_groups_were_made_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A timestamp printed again, by a rank its made groups lacked: Uncombinable."""
    monkeypatch.setattr(_rankfold, "_SLICE", 16)
    monkeypatch.setattr(_rankfold, "_HOT_ROWS", 1)
    monkeypatch.setattr(_rankfold, "_MIN_GROUP", 0.0)
    printed = [(t, r) for t in range(40) for r in (("TP0", "TP0") if t == 3 else ("TP0", "TP1"))]
    printed.append((3, "TP1"))  # t = 3 again, by the rank its groups lacked
    rows = [
        {
            "line": i + 1,
            "block": None,
            "run": None,
            "rank": r,
            "ts": _stamp(t),
            "metric": "num_token",
            "value": 1.0,
        }
        for i, (t, r) in enumerate(printed)
    ]
    fold = _rankfold.RankFold(SampleColumns(), "cfg", "a.log")
    for at in range(0, len(rows) - 1, 16):  # the groups of t = 3 made and passed on
        fold.add_batch(SampleBatch(_frame(rows[at : min(at + 16, len(rows) - 1)])))
    with pytest.raises(_rankfold.Uncombinable):
        fold.add_batch(SampleBatch(_frame(rows[-1:])))


def _sessions() -> list[Path]:
    found = [p for p in sorted((FIXTURES / "formats").iterdir()) if p.is_dir()]
    return found + [p for p in sorted((FIXTURES / "sessions").iterdir()) if p.is_dir()]


@pytest.mark.parametrize("folder", _sessions(), ids=lambda p: p.name)
def test_every_fixture_reports_the_same_folded(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The analysis (the JSON report's contract) of each fixture folder, read folded in
    slices of 32 rows, equals the analysis of the whole table."""
    monkeypatch.setattr(_rankfold, "_SLICE", 32)
    monkeypatch.setattr(_rankfold, "_HOT_ROWS", 4)
    monkeypatch.setattr(_rankfold, "_MIN_GROUP", 0.0)
    monkeypatch.setattr(session, "FOLD_FROM", 0)
    try:
        plain = analyze(load_session(folder)).model_dump_json()
    except Exception as exc:  # a folder no report reads (refused alike when folded)
        with pytest.raises(type(exc)):
            load_session(folder, fold=True)
        return
    assert analyze(load_session(folder, fold=True)).model_dump_json() == plain


def test_small_groups_are_read_as_they_are() -> None:
    """Two ranks a timestamp (half the rows): not worth a fold, every row kept."""
    rows = [
        {
            "line": i + 1,
            "block": None,
            "run": None,
            "rank": f"Engine {i % 2}",
            "ts": _stamp(i // 2),
            "metric": "gen_throughput",
            "value": 1.0,
        }
        for i in range(200)
    ]
    columns = SampleColumns()
    fold = _rankfold.RankFold(columns, "cfg", "a.log")
    fold.add_batch(SampleBatch(_frame(rows)))
    fold.finish()
    assert len(columns) == 200
    assert not columns.folded
    assert columns.frame()["rank"].null_count() == 0


def _fold_of_nothing() -> _rankfold.RankFold:
    return _rankfold.RankFold(SampleColumns(), "cfg", "s.log")


def test_timestamps_are_read_as_the_numbers_their_digits_make() -> None:
    fold = _fold_of_nothing()
    stamps = ["2025-11-14 09:00:01", "2025-11-14 23:59:59", "2026-01-02 00:00:00"]
    got = fold._digits(pl.Series(stamps))
    assert got.tolist() == [int("".join(c for c in s if c.isdigit())) for s in stamps]
    # later slices must keep the layout; within it any digits
    assert fold._digits(pl.Series(["1999-12-31 00:00:09"])).tolist() == [19991231000009]
    # a layout with letters and characters of several bytes, read as bytes
    other = _fold_of_nothing()
    words = ["14 нояб 09:00:01", "15 нояб 10:00:02"]
    assert other._digits(pl.Series(words)).tolist() == [14090001, 15100002]
    assert other._digits(pl.Series([], dtype=pl.String)).tolist() == []


@pytest.mark.parametrize(
    ("first", "later"),
    [
        (["2025-11-14 09:00:01", "2025-11-14T09:00:02"], None),  # two layouts in a slice
        (["2025-11-14 09:00:01", "2025-11-14 9:00:02"], None),  # a digit fewer
        (["12:00:01"], ["2025-11-14 09:00:02"]),  # a later slice of another layout
        (["1d:00:01", "12:00:01"], None),  # a letter where the other has a digit
        (["12:00:01", "1d:00:01"], None),  # ... and the other way round
        (["1234567890123456789"], None),  # 19 digits: not one int64 in order
    ],
)
def test_timestamps_of_no_single_layout_are_not_folded(
    first: list[str], later: list[str] | None
) -> None:
    fold = _fold_of_nothing()
    if later is not None:
        fold._digits(pl.Series(first))  # one layout: read
    with pytest.raises(_rankfold._Trouble):
        fold._digits(pl.Series(first if later is None else later))


def test_strings_keep_their_numbers_from_slice_to_slice() -> None:
    """`_numbers`: numbered as met, the table answers what it holds and grows for what
    it does not (a new string above it, a new string inside it); the strings numbered are
    held as categoricals (polars numbers strings afresh once no categorical lives)."""
    fold = _fold_of_nothing()
    held = _rankfold._Numbers()
    strings = [f"rank-{i}" for i in range(41)]
    column = pl.Series(strings).cast(pl.Categorical)  # their numbers: consecutive
    number = dict(zip(strings, column.to_physical().to_list(), strict=True))
    slices = [
        [7, 3, 7, 3],
        [3, 7, 3],  # nothing new: from the table
        [3, 40, 7],  # a string above the table
        [5, 40, 3],  # a string inside it, not numbered yet
        [40, 5, 7, 3],
    ]
    numbering: dict[int, int] = {}
    for picks in slices:
        part = pl.Series([strings[i] for i in picks]).cast(pl.Categorical)
        codes = part.to_physical().cast(pl.Int64).to_numpy()
        got = fold._numbers(codes, np.arange(len(codes)), held, part)
        for code in sorted(set(codes.tolist())):  # `_dense` numbers a slice's new codes
            numbering.setdefault(code, len(numbering))  # in the order of their numbers
        assert got.tolist() == [numbering[c] for c in codes.tolist()]
        assert held.of == numbering
        assert held.lut is not None
        assert {c: int(held.lut[c]) for c in numbering} == numbering
        assert (np.delete(held.lut, list(numbering)) == -1).all()
        kept = pl.concat(held.held)
        assert kept.dtype == pl.Categorical
        assert sorted(number[w] for w in kept.to_list()) == sorted(numbering)


def test_a_source_read_again_lets_go_of_its_first_reading(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """When the fold gives up (`Uncombinable`), the file is read again without it, and the
    first reading's table and fold are let go before that second reading starts (not held
    by the handled exception's frames through it)."""
    import gc
    import weakref

    class Rows:  # stands for what the first reading holds (its table, its fold)
        pass

    log = tmp_path / "a.log"
    log.write_text("x\n", encoding="utf-8")
    monkeypatch.setattr(session, "FOLD_FROM", 0)
    first: list[weakref.ref[Rows]] = []
    alive_at_second: list[bool] = []
    real = session.parse_path

    def parse_path(*args: Any, fold: bool = False, **kwargs: Any) -> Any:
        if fold:
            rows = Rows()
            first.append(weakref.ref(rows))
            raise _rankfold.Uncombinable("a.log")
        gc.collect()
        alive_at_second.append(first[0]() is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(session, "parse_path", parse_path)
    got = session._parse_file(log, "cfg", "a.log", SampleColumns(), None, lambda n: None, True)
    assert got is not None
    assert alive_at_second == [False]


def _ranges_one_metric(ts: list[int], masks: list[int]) -> list[tuple[int, int, int]]:
    """A metric's made groups as ranges, written plainly: per timestamp the ranks every
    group there held (0 where they differ), neighbouring timestamps of one mask joined."""
    per: dict[int, set[int]] = {}
    for t, k in zip(ts, masks, strict=True):
        per.setdefault(t, set()).add(k)
    out: list[tuple[int, int, int]] = []
    for t in sorted(per):
        mask = next(iter(per[t])) if len(per[t]) == 1 else 0
        if out and out[-1][2] == mask:
            out[-1] = (out[-1][0], t, mask)
        else:
            out.append((t, t, mask))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_made_groups_of_every_metric_become_ranges_at_once(seed: int) -> None:
    """`_made_ranges` gives, metric by metric, the ranges each metric's groups alone give
    (groups in any order, timestamps repeated, ranks that differ at a timestamp)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    m = rng.integers(0, int(rng.integers(1, 8)), n).astype(np.int64)
    ts = (rng.integers(0, int(rng.integers(1, 60)), n) + (1 << 40)).astype(np.int64)
    masks = rng.choice(np.array([1, 3, 255, 1 << 63], np.uint64), n)
    rm, lo, hi, mask = _rankfold._made_ranges(m, ts, masks)
    got = list(zip(rm.tolist(), lo.tolist(), hi.tolist(), mask.tolist(), strict=True))
    want = [
        (mi, a, b, k)
        for mi in sorted(set(m.tolist()))
        for a, b, k in _ranges_one_metric(ts[m == mi].tolist(), masks[m == mi].tolist())
    ]
    assert got == want
