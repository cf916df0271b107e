"""Grouping: the confound rule of DESIGN §4, launch noise, settings diff, DP-group combination."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionlens.analysis import analyze
from sessionlens.group import confounds, is_noise, settings_diff, values_by_config
from sessionlens.session import load_session

A = {
    "attention_backend": "fa3",
    "tp_size": 8,
    "port": 30000,
    "random_seed": 1,
    "max_tokens": 2048,
    "num_runs": 5,
    "log_dir": "/tmp/a",
    "speculative_attention_mode": "prefill",
}


def test_named_setting_is_no_confound() -> None:
    b = dict(
        A,
        speculative_attention_mode="decode",
        port=30001,
        random_seed=2,
        num_runs=3,
        log_dir="/tmp/b",
    )
    assert confounds(A, b, ["speculative_attention_mode"]) == []
    assert confounds(A, b, None) == []  # one setting differs: that is the treatment


def test_unnamed_settings_are_confounds() -> None:
    b = dict(A, speculative_attention_mode="decode", attention_backend="triton")
    assert confounds(A, b, ["speculative_attention_mode"]) == [
        ("attention_backend", "fa3", "triton")
    ]
    assert confounds(A, b, None) == [
        ("attention_backend", "fa3", "triton"),
        ("speculative_attention_mode", "prefill", "decode"),
    ]


def test_benchmark_parameters_are_confounds_unless_varied() -> None:
    b = dict(A, max_tokens=512)
    assert confounds(A, b, None) == [("max_tokens", 2048, 512)]
    assert confounds(A, b, ["max_tokens"]) == []
    assert confounds(A, dict(A, num_runs=10), None) == []  # not num_runs


def test_one_sided_keys_are_no_confound() -> None:
    b = dict(A)
    b["new_flag"] = True
    assert confounds(A, b, []) == []
    assert settings_diff({"a": A, "b": b}) == {"new_flag": {"a": None, "b": True}}


def test_launch_noise() -> None:
    for key in (
        "port",
        "host",
        "random_seed",
        "nccl_port",
        "log_dir",
        "crash_dump_folder",
        "metrics.port",
        "dist_init_addr",
        "download_dir",
    ):
        assert is_noise(key), key
    for key in ("attention_backend", "tp_size", "model_path", "speculative_num_steps"):
        assert not is_noise(key), key


DECODE = (
    "[2026-01-01 10:00:{s:02d} {rank}] Decode batch, #running-req: {r}, #token: 100, "
    "token usage: 0.01, accept len: {a:.2f}, accept rate: 0.50, cuda graph: True, "
    "gen throughput (token/s): {g:.2f}, #queue-req: 0\n"
)


def test_dp_groups_combine_per_timestamp(tmp_path: Path) -> None:
    (tmp_path / "dp").mkdir()
    lines = []
    for s in range(3):
        lines.append(DECODE.format(s=s, rank="DP0 TP0", r=4, a=2.0, g=100.0))
        lines.append(DECODE.format(s=s, rank="DP1 TP1", r=2, a=3.0, g=50.0))
    (tmp_path / "dp" / "server.log").write_text("".join(lines))
    session = load_session(tmp_path)
    values = values_by_config(session)
    # gen throughput and running requests sum over DP groups; accept len averages
    assert [p.value for p in values[("dp", "gen_throughput_tok_s")]] == [150.0] * 3
    assert [p.value for p in values[("dp", "running_req")]] == [6.0] * 3
    assert [p.value for p in values[("dp", "accept_len")]] == [2.5] * 3
    a = analyze(session)
    assert a.configs[0].metrics["gen_throughput_tok_s"].n == 3


def test_same_rank_twice_in_one_second_is_not_summed(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    text = DECODE.format(s=1, rank="DP0 TP0", r=1, a=2.0, g=60.0) + DECODE.format(
        s=1, rank="DP0 TP0", r=1, a=2.0, g=62.0
    )
    (tmp_path / "c" / "server.log").write_text(text)
    values = values_by_config(load_session(tmp_path))
    assert [p.value for p in values[("c", "gen_throughput_tok_s")]] == [60.0, 62.0]


def test_measured_outcomes_are_neither_settings_nor_confounds() -> None:
    a = {
        "attention_backend": "fa3",
        "total_output_tokens_retokenized": 81876,
        "server_info.internal_states.0.last_gen_throughput": 61.2,
        "kv_cache_tokens": 425984,
    }
    b = {
        "attention_backend": "triton",
        "total_output_tokens_retokenized": 81871,
        "server_info.internal_states.0.last_gen_throughput": 60.1,
        "kv_cache_tokens": 425000,
    }
    assert confounds(a, b, ["attention_backend"]) == []
    assert set(settings_diff({"a": a, "b": b})) == {"attention_backend"}


def test_launches_are_ordered_by_their_start_number_and_odd_names_do_not_raise() -> None:
    from sessionlens.group import _launch_order

    names = ["run#10", "run#9", "run", "run#²", "other#1"]  # `'²'.isdigit()` is true
    assert sorted(names, key=_launch_order) == ["other#1", "run", "run#9", "run#10", "run#²"]


def _general_by_launch(points, launches, series):  # type: ignore[no-untyped-def]
    """`by_launch` the general way (the points as `Point`s: no run of the list taken)."""
    from sessionlens.group import by_launch

    return by_launch(list(points), launches, series)


@pytest.mark.parametrize("seed", range(40))
def test_launches_of_one_source_in_line_order_are_runs_of_its_points(seed: int) -> None:
    """A config's one log in line order is split by binary search, its launches' values
    views of the list; the launches, values, positions and series flags are those of the
    general rule, on random spans (points before the first span, spans without a point,
    starts beyond every line, a name two spans share, lines out of order)."""
    import random

    import numpy as np

    from sessionlens.group import PointList, by_launch

    rng = random.Random(seed)
    n = rng.choice([1, 2, 5, 50, 400])
    lines = sorted(rng.sample(range(1, 5 * n + 10), n))
    if seed % 7 == 3 and n > 1:  # out of order: the general way
        i = rng.randrange(n - 1)
        lines[i], lines[i + 1] = lines[i + 1], lines[i]
    k = rng.randint(1, 4)
    starts = sorted(rng.sample(range(0, 5 * n + 40), k))
    if seed % 5 == 0:
        starts[0] = 3  # points before the first span: they belong to it
    names = [f"s#{i + 1}" for i in range(k)]
    if seed % 9 == 4 and k > 2:
        names[2] = names[0]  # a name two spans share: the general way
    spans = {"cfg/server.log": list(zip(starts, names, strict=True))}
    if seed % 13 == 8 and k > 1:  # spans out of line order: the general way
        spans["cfg/server.log"].reverse()
    if seed % 11 == 6:
        spans = {}  # no launches known: the source is a launch of its own
    dtype = np.uint32 if seed % 2 else np.int64
    values = np.array([rng.gauss(50, 5) for _ in range(n)])
    points = PointList(
        values, np.zeros(n, np.int32), ["cfg/server.log"], np.array(lines, dtype), None, None
    )
    series = {"cfg/server.log"} if seed % 3 else set()
    got = by_launch(points, spans, series)
    want = _general_by_launch(points, spans, series)
    assert [(g.name, g.series) for g in got] == [(w.name, w.series) for w in want]
    for g, w in zip(got, want, strict=True):
        assert g.values.tolist() == w.values.tolist()
        assert list(g.positions) == list(w.positions)
        assert isinstance(g.positions, range) or g.positions.dtype == np.int64
        if len(g.values):
            assert g.at([0, len(g.values) - 1]) == w.at([0, len(w.values) - 1])
            mask = np.arange(n) % 3 == 0
            assert g.taken(mask).tolist() == w.taken(mask).tolist()
    assert sum(len(g.values) for g in got) == n


@pytest.mark.parametrize("seed", range(30))
def test_dp_groups_by_one_number_a_row_are_those_of_two_lexsorts(seed: int) -> None:
    """The DP groups made by two stable sorts of one number a row (source and timestamp,
    then rank or place) are those of two lexsorts of four keys: the same members in the
    same order, the same group starts; codes too big for one number take the lexsorts."""
    import random

    import numpy as np

    from sessionlens import group

    rng = random.Random(seed)
    n = rng.choice([1, 2, 7, 60, 500])
    keyed = np.array([rng.random() < 0.8 for _ in range(n)], np.bool_)
    m = int(keyed.sum())
    top = (1 << 32) - 1 if seed % 5 == 0 else rng.choice([1, 3, 40])  # u32 codes, any size
    pick = [rng.randint(0, top) for _ in range(4)]
    src = np.array([rng.choice(pick[:2]) for _ in range(m)], np.uint32)
    ts = np.sort(np.array([rng.choice(pick) for _ in range(m)], np.uint32))
    if seed % 3 == 1 and m > 2:  # a timestamp out of order (a rank a second late)
        ts[[0, m - 1]] = ts[[m - 1, 0]]
    rank = np.array([rng.randint(0, 3) for _ in range(m)], np.uint32)
    got = group._dp_groups(keyed, src, ts, rank)
    rows = np.flatnonzero(keyed)
    o, first = group._lexsorted_groups(rows, src, ts, rank)
    members = rows[o]
    assert got.members.tolist() == members.tolist()
    assert got.first.tolist() == first.tolist()
    assert got.size.tolist() == np.diff(np.append(first, m)).tolist()
    assert got.plain.tolist() == np.flatnonzero(~keyed).tolist()


@pytest.mark.parametrize("seed", range(20))
def test_kahan_sums_are_kahans_rule_in_order(seed: int) -> None:
    """Each group's Kahan sum, in its members' order, from 0.0: bit for bit a plain loop's,
    on groups all of two values, of one or two, and of several sizes, negative zeros too."""
    import random
    import struct

    import numpy as np

    from sessionlens.group import kahan_sums

    rng = random.Random(seed)
    n_groups = rng.randint(1, 60)
    most = (2, 2, 5)[seed % 3]
    sizes = [rng.randint(1 if seed % 3 else 2, most) for _ in range(n_groups)]
    values = [
        rng.choice([rng.uniform(-1e3, 1e3), 1e16, -1e16, 0.1, -0.0, 3.0]) for _ in range(sum(sizes))
    ]
    members = np.array(rng.sample(range(len(values)), len(values)), np.int64)
    first = np.cumsum([0, *sizes[:-1]]).astype(np.int64)
    size = np.array(sizes, np.int64)
    got = kahan_sums(np.array(values), members, first, size)
    want = []
    for g in range(n_groups):
        total = comp = 0.0
        for j in range(sizes[g]):
            y = values[members[first[g] + j]] - comp
            t = total + y
            comp = (t - total) - y
            total = t
        want.append(total)

    def bits(xs: list[float]) -> list[bytes]:
        return [struct.pack("<d", x) for x in xs]

    assert bits(got.tolist()) == bits(want)


@pytest.mark.parametrize("seed", range(20))
def test_kahan_sums_of_small_integers_are_the_plain_sums(seed: int) -> None:
    """Counts and flags (integers whose group sums stay below 2**53) take a plain sum: bit
    for bit Kahan's rule from 0.0 (an all -0.0 group is 0.0); near 2**53, or where the
    groups do not tile the members, Kahan's loop runs as before."""
    import random
    import struct

    import numpy as np

    from sessionlens import group

    rng = random.Random(seed)
    n_groups = rng.randint(1, 60)
    sizes = [rng.randint(1, 6) for _ in range(n_groups)]
    pool = [-0.0, 0.0, 1.0, -7.0, 64.0, 2.0**40, -(2.0**40)]
    if seed % 4 == 3:
        pool.append(2.0**51)  # times a group of 4 or more: 2**53, not exact
    values = [rng.choice(pool) for _ in range(sum(sizes))]
    if seed % 5 == 0:
        values = [-0.0] * len(values)
    members = np.array(rng.sample(range(len(values)), len(values)), np.int64)
    first = np.cumsum([0, *sizes[:-1]]).astype(np.int64)
    size = np.array(sizes, np.int64)
    value = np.array(values)
    plain = group._exact_integers(value, members, first, size)
    assert plain == (max(abs(v) for v in values) * max(sizes) < 2.0**53)
    sel = np.arange(0, n_groups, 2)
    assert (
        not group._exact_integers(value, members, first[sel], size[sel])
        or len(sel) == 1 == n_groups
    )
    for f, s in ((first, size), (first[sel], size[sel])):
        got = group.kahan_sums(value, members, f, s)
        want = []
        for g in range(len(f)):
            total = comp = 0.0
            for j in range(int(s[g])):
                y = values[members[f[g] + j]] - comp
                t = total + y
                comp = (t - total) - y
                total = t
            want.append(total)
        assert [struct.pack("<d", x) for x in got.tolist()] == [struct.pack("<d", x) for x in want]
