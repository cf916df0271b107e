"""analyze(): the seed's story from the example session, checked against scipy directly."""

from __future__ import annotations

import math
import shutil
import threading
import time
from pathlib import Path

import pytest
from scipy import stats as sps

from sessionlens.analysis import analyze
from sessionlens.session import load_session
from tests.conftest import FIXTURES

EXAMPLE = FIXTURES / "sessions" / "eagle3-attention-mode"
DECODE_RUNS = [60.4, 65.5, 50.9, 61.5, 59.5]


@pytest.fixture(scope="module")
def analysis():
    return analyze(load_session(EXAMPLE))


def hyp(analysis, hid: str):
    return next(h for h in analysis.hypotheses if h.id == hid)


def test_all_three_hypotheses_rejected(analysis) -> None:
    assert {h.id: h.verdict for h in analysis.hypotheses} == {
        "H1": "rejected",
        "H2": "rejected",
        "H3": "rejected",
    }


def test_h2_matches_an_independent_scipy_computation(analysis) -> None:
    configs = {c.name: c for c in analysis.configs}
    prefill = [r.value for r in analysis.runs if r.config == "eagle3-prefill"]
    decode = [r.value for r in analysis.runs if r.config == "eagle3-decode"]
    assert decode == DECODE_RUNS
    res = sps.ttest_ind(decode, prefill, equal_var=False)
    mean_a, mean_b = sum(prefill) / 5, sum(decode) / 5
    h2 = hyp(analysis, "H2")
    assert h2.change == pytest.approx(mean_b / mean_a - 1, rel=1e-12)
    # one launch a side: each level's variance is s²/n plus the assumed 2 % launch noise,
    # and the interval of the ratio is Fieller's, found here by scanning ρ
    within_a, within_b = sps.tvar(prefill) / 5, sps.tvar(decode) / 5
    var_a, var_b = within_a + (0.02 * mean_a) ** 2, within_b + (0.02 * mean_b) ** 2
    rho = mean_b / mean_a
    df = (var_b + rho**2 * var_a) ** 2 / (within_b**2 / 4 + (rho**2 * within_a) ** 2 / 4)
    t = sps.t.ppf(0.975, df)
    grid = [0.8 + i * 1e-6 for i in range(400_001)]
    inside = [g for g in grid if (mean_b - g * mean_a) ** 2 <= t**2 * (var_b + g**2 * var_a)]
    assert h2.ci_low == pytest.approx(inside[0] - 1, abs=2e-6)
    assert h2.ci_high == pytest.approx(inside[-1] - 1, abs=2e-6)
    assert h2.unit == "sample"
    assert (h2.launch_noise, h2.launch_noise_source) == (0.02, "assumed")
    assert h2.p_welch == pytest.approx(res.pvalue, rel=1e-9)  # the tests stay on samples
    mw = sps.mannwhitneyu(decode, prefill, alternative="two-sided")
    assert h2.p_mannwhitney == pytest.approx(mw.pvalue, rel=1e-9)
    assert h2.ci_high < h2.min_effect  # why it is rejected
    outliers = configs["eagle3-decode"].metrics["throughput_tok_s"].outliers
    assert [(o.source, o.value) for o in outliers] == [("eagle3-decode/bench.log", 50.9)]
    assert [r.value for r in analysis.runs if r.outlier] == [50.9]


def test_holm_adjusts_across_hypotheses(analysis) -> None:
    ps = [h.p_welch for h in analysis.hypotheses]
    order = sorted(range(3), key=lambda i: ps[i])
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (3 - rank) * ps[i]))
        assert analysis.hypotheses[i].p_holm == pytest.approx(running)


def test_economics_tell_the_seed_story(analysis) -> None:
    e = next(x for x in analysis.economics if x.config == "eagle3-decode")
    assert not e.cycle_is_estimate
    assert e.steps == 2
    assert e.cycle_ms == pytest.approx(30.4, abs=0.1)  # verify time / share, not 29.5
    assert e.ceiling_tok_s == pytest.approx(66, abs=0.6)
    assert e.baseline_config == "baseline"
    assert e.break_even_accept_len == pytest.approx(2.5, abs=0.05)
    assert e.reachable is False
    assert e.p_needed_unbounded == pytest.approx(0.78, abs=0.005)
    assert e.measured_tok_s == pytest.approx(sum(DECODE_RUNS) / 5)


def test_settings_diff_and_no_confounds(analysis) -> None:
    assert analysis.settings_diff["speculative_attention_mode"] == {
        "baseline": "prefill",
        "eagle3-prefill": "prefill",
        "eagle3-decode": "decode",
    }
    assert "random_seed" not in analysis.settings_diff  # launch noise
    assert all(h.confounds == [] for h in analysis.hypotheses)


def test_truncation_is_recorded(analysis) -> None:
    assert any(
        d.code == "truncated-output" and d.file == "eagle3-decode/bench.log"
        for d in analysis.diagnostics
    )


SERVER_ARGS = (
    "[2026-01-05 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1, "
    "attention_backend='{backend}', random_seed={seed}, port=300{seed}, "
    "speculative_algorithm=None)\n"
)


def _two_backends(root: Path) -> None:
    """Configs fa3 and triton: the seed's runs, and server args differing in the backend."""
    seed = (FIXTURES / "formats" / "bench-stdout" / "seed-truncated.log").read_text()
    for i, (name, backend) in enumerate((("fa3", "fa3"), ("triton", "triton"))):
        (root / name).mkdir()
        (root / name / "server.log").write_text(SERVER_ARGS.format(backend=backend, seed=i))
        (root / name / "bench.log").write_text(seed)


def test_two_subfolders_without_manifest(tmp_path: Path) -> None:
    _two_backends(tmp_path)
    s = load_session(tmp_path, hypotheses=["triton > fa3 by 5%"])
    a = analyze(s)
    assert [c.name for c in a.configs] == ["fa3", "triton"]
    assert a.settings_diff == {"attention_backend": {"fa3": "fa3", "triton": "triton"}}
    (h,) = a.hypotheses
    # the same runs on both sides: no change, and an interval too wide to rule out 5 %
    assert (h.id, h.claim, h.verdict) == ("H1", "triton > fa3 by 5%", "inconclusive")
    assert h.change == 0.0
    assert h.runs_needed is not None
    assert h.runs_needed > 5
    assert math.isclose(h.min_effect, 0.05)
    assert a.args.hypotheses == ["triton > fa3 by 5%"]


def test_vllm_cycle_estimate_pairs_spec_lines_with_engine_lines(tmp_path: Path) -> None:
    import shutil

    src = FIXTURES / "formats" / "vllm-server"
    for name, fixture in (
        ("eagle", "v0.9.2-data-parallel-compose.log"),
        ("ngram", "v0.8.5-apiserver-ansi-no-bonus.log"),
    ):
        (tmp_path / name).mkdir()
        shutil.copy(src / fixture, tmp_path / name / fixture)
    a = analyze(load_session(tmp_path, hypotheses=["ngram > eagle on gen_throughput_tok_s"]))
    e = next(x for x in a.economics if x.config == "eagle")
    assert e.cycle_is_estimate
    # (L, R, G) of the two intervals, read off the fixture by hand
    by_hand = [1000 * 2.395 * 46 / 790.5, 1000 * 2.39 * 24 / 527.8]
    assert e.cycle_ms == pytest.approx(sum(by_hand) / 2)
    # measured from the same Decode lines (no client throughput): ~100 % by construction
    assert e.measured_tok_s == pytest.approx((790.5 + 527.8) / 2 / ((46 + 24) / 2))
    assert e.efficiency is None
    assert e.ceiling_tok_s is not None
    # how each log counts the bonus token is no confound (the analysis adjusts for it)
    (h,) = a.hypotheses
    assert "accept_len_counts_bonus" not in [c.setting for c in h.confounds]
    assert "tensor_parallel_size" in [c.setting for c in h.confounds]
    assert any(d.code == "mixed-accept-len" for d in a.diagnostics)


def test_claims_on_one_metric_share_one_comparison_row_and_cli_ids_follow_the_manifest(
    tmp_path: Path,
) -> None:
    _two_backends(tmp_path)
    (tmp_path / "sessionlens.toml").write_text(
        '\ufeff[configs.fa3]\npaths = ["fa3/*"]\n\n[configs.triton]\npaths = ["triton/*"]\n\n'
        '[[hypotheses]]\nid = "H2"\nbaseline = "fa3"\ncandidate = "triton"\n'
        'metric = "output_tokens"\n'
    )  # with an editor's byte-order mark
    s = load_session(tmp_path, hypotheses=["triton > fa3 by 5%", "triton < fa3 on output_tokens"])
    a = analyze(s)
    assert [h.id for h in a.hypotheses] == ["H2", "H3", "H4"]  # never a clash
    rows = [(c.metric, c.baseline, c.candidate) for c in a.comparisons]
    assert len(rows) == len(set(rows))
    assert ("output_tokens", "fa3", "triton") in rows


def test_a_concurrency_sweep_in_one_folder_is_judged_point_by_point(tmp_path: Path) -> None:
    """Blocks of a sweep in one folder are different experiments: v0.1 pooled them with a
    mixed-settings warning; v0.2 (DESIGN §5) never pools across load points."""
    sweep = FIXTURES / "formats" / "sglang-bench-serving" / "sweep-3-blocks.log"
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        shutil.copy(sweep, tmp_path / name / "bench.log")
    a = analyze(load_session(tmp_path, hypotheses=["b > a on output_throughput_tok_s by 5%"]))
    assert not [d for d in a.diagnostics if d.code == "mixed-settings"]
    (h,) = a.hypotheses
    assert [p.load for p in h.points] == [f"max_concurrency={c}" for c in (4, 8, 16)]
    assert list(a.configs[0].points) == [p.load for p in h.points]
    assert a.configs[0].metrics["output_throughput_tok_s"].mean is None  # no pooled level


def test_a_manifest_setting_that_replaces_a_logged_one_is_said(tmp_path: Path) -> None:
    _two_backends(tmp_path)
    (tmp_path / "sessionlens.toml").write_text(
        '[configs.fa3]\npaths = ["fa3/*"]\nsettings = { attention_backend = "flashinfer" }\n'
        '[configs.triton]\npaths = ["triton/*"]\nsettings = { attention_backend = "triton" }\n'
    )
    a = analyze(load_session(tmp_path))
    said = [d for d in a.diagnostics if d.code == "settings-override"]
    assert [d.file for d in said] == ["fa3"]  # triton's equals its log: nothing to say
    assert "attention_backend = flashinfer, the logs say fa3" in said[0].message
    assert a.configs[0].settings["attention_backend"] == "flashinfer"


@pytest.mark.parametrize("by_key", [False, True], ids=["held", "read-when-asked"])
def test_summaries_on_two_threads_equal_the_sequential_ones(
    analysis, monkeypatch: pytest.MonkeyPatch, by_key: bool
) -> None:
    """A big session's summaries are made two at a time; the report is the same."""
    from sessionlens import analysis as A
    from sessionlens import group

    calls: list[bool] = []
    real = A._cells

    def spy(values, alpha, big, session, early=None):  # type: ignore[no-untyped-def]
        calls.append(big)
        return real(values, alpha, big, session, early)

    monkeypatch.setattr(A, "_PARALLEL_FROM", 0)
    monkeypatch.setattr(A, "_cells", spy)
    if by_key:
        monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    got = analyze(load_session(EXAMPLE))
    assert calls == [True]
    assert got.model_dump_json() == analysis.model_dump_json()


def test_summaries_begun_as_a_drained_tables_keys_are_made_equal_the_sequential_ones(
    analysis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big session drained (`consume`): each key's summary begins as soon as its values
    are made, on two threads, and the report is the same."""
    from sessionlens import analysis as A
    from sessionlens import group

    made_all = threading.Event()  # every key's values made
    early: list[bool] = []  # per summary: begun before that
    real_values, real_group = group.values_by_config, A._cell_group

    def values_by_config(*args, **kwargs):  # type: ignore[no-untyped-def]
        found = real_values(*args, **kwargs)
        made_all.set()
        return found

    def cell_group(*args):  # type: ignore[no-untyped-def]
        early.append(not made_all.is_set())
        return real_group(*args)

    made = A._Summaries.made

    def slow(self, key, points):  # type: ignore[no-untyped-def]
        time.sleep(0.02)  # keys made slower than a summary takes
        return made(self, key, points)

    monkeypatch.setattr(A, "_PARALLEL_FROM", 0)
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    monkeypatch.setattr(group, "values_by_config", values_by_config)
    monkeypatch.setattr(A._Summaries, "made", slow)
    monkeypatch.setattr(A, "_cell_group", cell_group)
    got = analyze(load_session(EXAMPLE), consume=True)
    assert len(early) > 4
    assert sum(early) > len(early) // 2
    assert got.model_dump_json() == analysis.model_dump_json()


@pytest.mark.parametrize("consume", [False, True], ids=["held", "drained"])
def test_an_interrupt_stops_the_summaries_not_started(
    monkeypatch: pytest.MonkeyPatch, consume: bool
) -> None:
    from sessionlens import analysis as A
    from sessionlens import group

    started: list[str] = []

    def interrupted(points, alpha, session):  # type: ignore[no-untyped-def]
        started.append(points)
        # a summary takes time: the other thread cannot run through every key before the
        # interrupt is seen (on a loaded machine an instant raise let it do so)
        time.sleep(0.2)
        raise KeyboardInterrupt

    made = A._Summaries.made

    def slow(self, key, points):  # type: ignore[no-untyped-def]
        time.sleep(0.05)  # a drained table's keys made while the summaries run
        return made(self, key, points)

    monkeypatch.setattr(A, "_PARALLEL_FROM", 0)
    monkeypatch.setattr(A, "_cell", interrupted)
    monkeypatch.setattr(group, "HOLD_ALL_ROWS", 0)
    monkeypatch.setattr(A._Summaries, "made", slow)
    session = load_session(EXAMPLE)
    n_keys = len(set(zip(session.columns.config, session.columns.metric, strict=True)))
    with pytest.raises(KeyboardInterrupt):
        analyze(session, consume=consume)
    assert n_keys > 4
    assert len(started) <= 3  # the one interrupted, and what the other thread had begun


def test_a_config_without_the_headline_metric_of_another(tmp_path: Path) -> None:
    """One config's bench runs and another's vLLM engine log: each lists what it has (the
    runs table took the first config's headline metric for every config: KeyError)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(
        FIXTURES / "formats" / "vllm-server" / "v0.9.2-data-parallel-compose.log", tmp_path / "a"
    )
    shutil.copy(FIXTURES / "formats" / "bench-stdout" / "seed-truncated.log", tmp_path / "b")
    a = analyze(load_session(tmp_path))
    assert {r.config for r in a.runs} == {"b"}
    assert "throughput_tok_s" in a.configs[1].metrics
    assert "throughput_tok_s" not in a.configs[0].metrics


def _pair_by_line(points_of, bonus):
    """The pairing of `_estimate_cycle` as v0.1 wrote it, row by row: the reference."""
    by_source: dict[str, list[tuple[int, int, str, float]]] = {}
    for metric, rank in {"running_req": 0, "gen_throughput_tok_s": 0, "accept_len": 1}.items():
        for p in points_of.get(("c", metric), []):
            by_source.setdefault(p.source, []).append((p.line, rank, metric, p.value))
    triples = []
    for rows in by_source.values():
        rows.sort()
        last: dict[str, tuple[int, float]] = {}
        for line, _, metric, value in rows:
            if metric != "accept_len":
                last[metric] = (line, value)
                continue
            run, gen = last.get("running_req"), last.get("gen_throughput_tok_s")
            if run and gen and line - run[0] <= 3 and line - gen[0] <= 3:
                triples.append((value + bonus, run[1], gen[1]))
    from sessionlens.specmath import estimate_cycle_ms_mean

    return estimate_cycle_ms_mean(triples)


@pytest.mark.parametrize("seed", range(40))
def test_cycle_estimate_pairs_as_the_row_by_row_rule(seed: int) -> None:
    """Random sources, lines (duplicates, gaps beyond the window, missing metrics) and
    values (zeros, negatives): the column pairing gives the row-by-row value, for Point
    lists and for PointLists."""
    import random

    import numpy as np

    from sessionlens import group
    from sessionlens.analysis import _estimate_cycle

    rnd = random.Random(seed)
    points: dict[tuple[str, str], list[group.Point]] = {}
    for metric in ("running_req", "gen_throughput_tok_s", "accept_len"):
        if rnd.random() < 0.05:
            continue
        rows = []
        unique = seed % 3 == 0  # each (source, line) once: in order, nothing to sort
        spots = rnd.sample([(s, n) for s in "ab" for n in range(1, 40)], rnd.randrange(0, 60))
        for k in range(len(spots) if unique else rnd.randrange(0, 60)):
            value = rnd.choice([0.0, -1.0, rnd.uniform(0, 50), float(rnd.randrange(1, 9))])
            source, line = spots[k] if unique else (rnd.choice("ab"), rnd.randrange(1, 40))
            rows.append(group.Point(value, source, line, None, None))
        rows.sort(key=lambda p: (p.source, p.line))
        if seed % 4 == 1:  # out of (source, line) order (combined DP groups can be)
            rnd.shuffle(rows)
        points[("c", metric)] = rows
    for bonus in (0.0, 1.0):
        want = _pair_by_line(points, bonus)
        assert _estimate_cycle("c", points, bonus) == want
        packed = {}
        for key, rows in points.items():
            names = sorted({p.source for p in rows})
            packed[key] = group.PointList(
                np.array([p.value for p in rows], np.float64),
                np.array([names.index(p.source) for p in rows], np.int32),
                names,
                np.array([p.line for p in rows], np.uint32),
                None,
                None,
            )
        assert _estimate_cycle("c", packed, bonus) == want


@pytest.mark.parametrize("seed", range(30))
def test_last_wins_reads_as_the_lexsort_by_key_then_value(seed: int) -> None:
    """What a binary search for the last key at or before another finds in `_last_wins`'
    arrays is what it found after `np.lexsort((vals, key))`: the same key and line, and the
    same value bit for bit (NaN, ±0 and ties included), in order or not."""
    import numpy as np

    from sessionlens.analysis import _last_wins

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    key = rng.integers(0, n // 2 + 2, n).astype(np.int64)
    if seed % 2:
        key.sort()
    line = key * 7 + 1
    vals = rng.choice([0.0, 1.5, 2.0, np.nan, -3.0, rng.uniform()], n)
    before = vals.copy()
    k, ln, v = _last_wins(key, line, vals)
    assert np.array_equal(vals, before, equal_nan=True)  # the caller's values untouched
    order = np.lexsort((vals, key))
    want_k, want_v = key[order], vals[order]
    probe = rng.integers(-1, n // 2 + 3, 200)
    at, want_at = (np.searchsorted(x, probe, side="right") - 1 for x in (k, want_k))
    found = at >= 0
    assert np.array_equal(found, want_at >= 0)
    at, want_at = at[found], want_at[found]
    assert np.array_equal(k[at], want_k[want_at])
    assert np.array_equal(ln[at], want_k[want_at] * 7 + 1)
    assert np.array_equal(v[at].view(np.int64), want_v[want_at].view(np.int64)) or np.array_equal(
        v[at], want_v[want_at], equal_nan=True
    )


def test_outlier_models_are_the_validated_ones_and_copies_keep_their_own_fields() -> None:
    from sessionlens.analysis import OutlierRef, _outlier_refs

    triples = [("cfg/a.log", 12, 50.9), ("cfg/b.log", 7, -0.0), ("cfg/a.log", 3, 1e300)]
    made = _outlier_refs(triples)
    checked = [OutlierRef(source=s, line=n, value=v) for s, n, v in triples]
    assert made == checked
    assert [m.model_dump_json() for m in made] == [m.model_dump_json() for m in checked]
    assert all(m.model_fields_set == {"source", "line", "value"} for m in made)
    moved = made[0].model_copy(update={"line": 13})
    assert moved.line == 13
    assert made[0].line == 12
    assert made[1] == checked[1]
    assert made[1].model_fields_set == {"source", "line", "value"}


def _summary(**kw):  # type: ignore[no-untyped-def]
    from sessionlens.analysis import MetricSummary

    none = dict.fromkeys(["mean", "median", "stdev", "cv", "ci_low", "ci_high", "min", "max"])
    return MetricSummary(n=3, **none, **kw)


def test_outliers_held_as_columns_are_the_list_of_their_refs() -> None:
    """`MetricSummary.outliers` holds a day-long log's outliers as columns: read, dumped,
    compared and described by its JSON schema as the `list[OutlierRef]` it replaces."""
    import numpy as np

    from sessionlens.analysis import MetricSummary, OutlierRef, Outliers

    names = ["cfg/a.log", "cfg/b.log"]
    triples = [("cfg/b.log", 12, 50.9), ("cfg/a.log", 7, -0.0), ("cfg/b.log", 3, math.inf)]
    refs = [OutlierRef(source=s, line=n, value=v) for s, n, v in triples]

    def cols() -> Outliers:
        return Outliers.of_columns(
            names,
            np.array([1, 0, 1], np.int64),
            np.array([12, 7, 3], np.int64),
            np.array([50.9, -0.0, math.inf]),
        )

    listed, held = _summary(outliers=refs), _summary(outliers=cols())
    assert isinstance(listed.outliers, Outliers)
    assert isinstance(held.outliers, Outliers)
    # dumped without a model made, the same as the validated list dumps
    assert held.model_dump() == listed.model_dump()
    assert held.model_dump_json() == listed.model_dump_json()
    assert held.outliers._made is None
    assert [type(v) for v in held.model_dump()["outliers"][0].values()] == [str, int, float]
    assert held.model_dump()["outliers"][1]["value"] == 0.0
    assert math.copysign(1, held.model_dump()["outliers"][1]["value"]) == -1
    assert len(held.outliers) == 3
    # read: the validated models, in order
    assert held.outliers[0] == refs[0]
    assert held.outliers[1:] == refs[1:]
    assert list(held.outliers) == refs
    assert held == listed
    assert held.outliers == refs
    assert held.outliers != refs[:2]
    assert cols() != Outliers(refs[::-1])
    assert repr(held.outliers) == repr(refs)
    # its JSON validates back to the same summary (a finite value: JSON has no infinity)
    finite = Outliers.of_columns(names, np.array([1]), np.array([12]), np.array([50.9]))
    again = MetricSummary.model_validate_json(_summary(outliers=finite).model_dump_json())
    assert again == _summary(outliers=refs[:1])
    assert again.outliers == finite
    assert _summary().outliers == []
    assert len(_summary().outliers) == 0
    # the JSON schema still says: an array of OutlierRef
    prop = MetricSummary.model_json_schema()["properties"]["outliers"]
    assert prop["type"] == "array"
    assert prop["items"] == {"$ref": "#/$defs/OutlierRef"}
    with pytest.raises(ValueError, match="differ in length"):
        Outliers.of_columns(names, np.array([0]), np.array([1, 2]), np.array([1.0]))
    with pytest.raises(TypeError):
        hash(held.outliers)


def test_a_reports_outliers_are_the_points_flagged() -> None:
    """The outliers a report names are the flagged points of the metric, whether the values
    are held as columns (`PointList`) or as `Point`s."""
    from sessionlens import group
    from sessionlens.analysis import _outliers_of

    points = [
        group.Point(v, f"cfg/{'ab'[i % 2]}.log", 10 + i, None, None)
        for i, v in enumerate([60.4, 65.5, 50.9, 61.5, 59.5])
    ]
    import numpy as np

    names = ["cfg/a.log", "cfg/b.log"]
    packed = group.PointList(
        np.array([p.value for p in points]),
        np.array([names.index(p.source) for p in points], np.int32),
        names,
        np.array([p.line for p in points], np.uint32),
        None,
        None,
    )
    want = [(points[i].source, points[i].line, points[i].value) for i in (4, 2)]
    for given in (points, packed):
        got = _outliers_of(given, [4, 2])
        assert [(o.source, o.line, o.value) for o in got] == want
        assert [type(x) for x in got._dumped()[0].values()] == [str, int, float]
        assert len(_outliers_of(given, [])) == 0
    # the example's run 3 (50.9 tok/s, the README's outlier), named where it was read
    one = analyze(load_session(EXAMPLE))
    decode = next(c for c in one.configs if c.name == "eagle3-decode")
    got = decode.metrics["throughput_tok_s"].outliers
    assert [(o.source, o.line, o.value) for o in got] == [("eagle3-decode/bench.log", 9, 50.9)]


def test_blocks_made_when_read_validate_dump_and_compare_as_their_list() -> None:
    """A source's phase blocks, held as arrays until read, share the outliers' protocol:
    they dump as `list[BlockInfo]`, validate back from Python and from JSON (which the
    blocks' own schema refused before they shared it), and equal their list."""
    import numpy as np

    from sessionlens.analysis import Outliers
    from sessionlens.model import BlockInfo, Blocks, BlockStarts, SourceInfo

    given = [BlockInfo(block=1, line=5, format="bench-stdout", settings={"max_concurrency": 4})]
    plain = [BlockStarts(np.array([0, 2], np.int64), np.array([1, 9], np.int64), "phase")]
    info = SourceInfo(path="a/server.log", format="sglang-server", blocks=Blocks(given, plain))
    want = [
        BlockInfo(block=0, line=1, format="phase"),
        given[0],
        BlockInfo(block=2, line=9, format="phase"),
    ]
    assert info.blocks == want
    assert info.blocks._made is not None  # read: made once, kept
    again = SourceInfo(path="a/server.log", format="sglang-server", blocks=Blocks(given, plain))
    dumped = again.model_dump()
    assert again.blocks._made is None  # dumped without a model made
    assert dumped["blocks"] == [b.model_dump() for b in want]
    assert SourceInfo.model_validate_json(again.model_dump_json()) == info
    assert SourceInfo.model_validate(dumped) == info
    assert len(again.blocks) == 3
    assert again.blocks[1:] == want[1:]
    assert Blocks() != Outliers()  # another kind of sequence: not equal, though both empty
    assert Blocks() == []
    with pytest.raises(TypeError, match="unhashable type: 'Blocks'"):
        hash(again.blocks)
