"""Launches (DESIGN §5): folders, server starts inside logs, `launch_per_file`, the column."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import polars as pl
import pytest

from sessionlens import load_session, parse_file
from sessionlens._launch import LaunchSource, assign

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EXAMPLE = FIXTURES / "sessions" / "eagle3-attention-mode"
RESTART = FIXTURES / "formats" / "sglang-server" / "server-args-cut-0.4.6.log"


def test_a_folder_is_one_launch() -> None:
    got = assign(
        [
            LaunchSource("a/server.log", True, (1,)),
            LaunchSource("a/bench.log", False),
            LaunchSource("b/run1/bench.log", False),
            LaunchSource("b/run2/bench.log", False),
            LaunchSource("top.log", False),
        ]
    )
    assert got == {
        "a/server.log": [(0, "a")],
        "a/bench.log": [(0, "a")],
        "b/run1/bench.log": [(0, "b/run1")],
        "b/run2/bench.log": [(0, "b/run2")],
        "top.log": [(0, ".")],
    }


def test_server_starts_number_the_launches_of_a_folder() -> None:
    # two server logs, the later one by timestamp named first; a restart inside one
    got = assign(
        [
            LaunchSource("a/retry.log", True, (1, 40), first_ts="2025-06-01 13:00:00"),
            LaunchSource("a/server.log", True, (3,), first_ts="2025-06-01 12:00:00"),
            LaunchSource("a/bench.log", False),
        ]
    )
    assert got == {
        "a/server.log": [(0, "a#1")],
        "a/retry.log": [(0, "a#2"), (40, "a#3")],
        "a/bench.log": [(0, "a#3")],  # a client file joins the folder's last launch
    }


def test_lines_before_a_later_files_first_start_belong_to_the_launch_before() -> None:
    got = assign(
        [
            LaunchSource("a/1.log", True, (1,), first_ts="1"),
            LaunchSource("a/2.log", True, (9,), first_ts="2"),
        ]
    )
    assert got == {"a/1.log": [(0, "a#1")], "a/2.log": [(0, "a#1"), (9, "a#2")]}


def test_launch_per_file() -> None:
    got = assign(
        [
            LaunchSource("a/x.log", True, (1, 7)),
            LaunchSource("a/y.log", False),
            LaunchSource("b/z.log", False),
        ],
        per_file={"a/x.log", "a/y.log"},
    )
    assert got == {
        "a/x.log": [(0, "a/x.log#1"), (7, "a/x.log#2")],
        "a/y.log": [(0, "a/y.log")],
        "b/z.log": [(0, "b")],
    }


def test_example_session_has_one_launch_per_config() -> None:
    s = load_session(EXAMPLE)
    by_config = s.samples.group_by("config").agg(pl.col("launch").unique().alias("launches"))
    got = {row["config"]: sorted(row["launches"]) for row in by_config.iter_rows(named=True)}
    assert got == {
        "baseline": ["baseline"],
        "eagle3-prefill": ["eagle3-prefill"],
        "eagle3-decode": ["eagle3-decode"],
    }
    assert s.samples["load"].null_count() == s.samples.height


def test_restart_inside_a_log_is_a_second_launch(tmp_path: Path) -> None:
    session = tmp_path / "s"
    for name in ("a", "b"):
        (session / name).mkdir(parents=True)
    shutil.copy(RESTART, session / "a" / "server.log")
    shutil.copy(EXAMPLE / "baseline" / "server.log", session / "b" / "server.log")
    # the restart's own Decode line, so the second launch has a sample
    text = RESTART.read_text() + RESTART.read_text().splitlines(keepends=True)[3]
    (session / "a" / "server.log").write_text(text)
    s = load_session(session)
    a = s.samples.filter(s.samples["config"] == "a")
    assert sorted(a["launch"].unique().to_list()) == ["a#1", "a#2"]
    assert s.launches["a/server.log"] == [(0, "a#1"), (7, "a#2")]
    assert s.launches["b/server.log"] == [(0, "b")]


def test_parse_names_the_folder_as_given() -> None:
    r = parse_file(RESTART)
    assert r.samples["launch"].unique().to_list() == [f"{RESTART.parent.as_posix()}#1"]


def test_launches_that_differ_in_a_server_setting_are_named(tmp_path: Path) -> None:
    from sessionlens import analyze
    from sessionlens.render import render_report

    session = tmp_path / "s"
    for name in ("a", "b"):
        (session / name).mkdir(parents=True)
        shutil.copy(EXAMPLE / "baseline" / "server.log", session / name / "server.log")
    text = (EXAMPLE / "baseline" / "server.log").read_text()
    assert "chunked_prefill_size=8192" in text
    retry = text.replace("chunked_prefill_size=8192", "chunked_prefill_size=16384")
    # the retry started an hour later: it is the folder's second launch
    (session / "a" / "server-retry.log").write_text(retry.replace("2026-03-10", "2026-03-11"))
    a = analyze(load_session(session))
    mixed = [d for d in a.diagnostics if d.code == "mixed-settings"]
    assert [str(d) for d in mixed] == [
        "a: warning: config a: its launches differ in chunked_prefill_size (8192 in a#1, "
        "16384 in a#2); its statistics pool them: give each setting its own config "
        "[mixed-settings]"
    ]
    assert a.mixed_settings == {"a": {"chunked_prefill_size": [8192, 16384]}}
    assert set(a.settings_diff["chunked_prefill_size"]) == {"a", "b"}
    md = render_report(a, "md", "s")
    assert "| chunked_prefill_size | 8192, 16384 (launches differ) | 8192 |" in md


@pytest.mark.parametrize("seed", range(6))
def test_a_rows_launch_is_the_last_that_starts_at_or_before_its_line(seed: int) -> None:
    """The `launch` column of a source of many launches (a crash loop, thousands of counter
    resets): found by a binary search of the launches' first lines, it is the last launch
    that starts at or before the row's line, the first one before any; launches given out of
    line order are taken in turn, the later one winning, as a chain of conditions does."""
    from sessionlens.model import _spans_expr

    rng = random.Random(seed)
    starts = sorted(rng.sample(range(2, 5000), rng.choice([1, 2, 5, 300])))
    spans = [(1, "src#1")] + [(s, f"src#{k + 2}") for k, s in enumerate(starts)]
    if seed % 3 == 2:
        rng.shuffle(spans)  # out of line order
    lines = [rng.randrange(0, 5100) for _ in range(2000)] + [*starts, 0]
    frame = pl.DataFrame({"line": pl.Series(lines, dtype=pl.UInt32)})
    got = frame.select(_spans_expr(spans).alias("launch"))["launch"].to_list()
    want = []
    for line in lines:
        name = spans[0][1]
        for start, launch in spans[1:]:
            if line >= start:
                name = launch
        want.append(name)
    assert got == want
