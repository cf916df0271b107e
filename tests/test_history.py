"""`sessionlens history` (DESIGN §10) on results repositories built here.

A dozen nightly sessions committed with their reports and dates (tests/history_gen.py): EAGLE-3
steps up on the sixth night and drops on the last, the plain model stays flat. The acceptance
checks of issue 24, the dates, the cache, the dataset read back with polars, the CLI's exit
codes and the golden history report.
"""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from sessionlens import __version__
from sessionlens import history as hist
from sessionlens.cli import main
from tests.conftest import FIXTURES, need_program
from tests.golden import compare
from tests.history_gen import DOZEN, STEP_AT, nightly

GOLDEN = Path(__file__).resolve().parent / "golden" / "history"


def scrub(text: str) -> str:
    return re.sub(r'("sessionlens_version": )"[^"]*"', r'\1"<v>"', text)


@pytest.fixture(scope="module")
def dozen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The acceptance repository: twelve nights, each committed at 02:00 UTC of its day."""
    need_program("git")
    root = tmp_path_factory.mktemp("dozen") / "results"
    nightly(root, DOZEN)
    return root


@pytest.fixture(scope="module")
def flat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve flat nights, no git and no reports: dated by their folder names."""
    root = tmp_path_factory.mktemp("flat") / "results"
    levels = {"baseline": [82.0] * 12, "eagle3": [66.0] * 12}
    nightly(root, levels, seed=3, commit=False, reports=False)
    return root


def _entries(cache: Path) -> list[Path]:
    return [p for p in cache.glob("*.json") if re.fullmatch(r"[0-9a-f]{64}\.json", p.name)]


def _series(h: hist.History, config: str) -> hist.HistorySeries:
    return next(s for s in h.series if s.config == config and s.metric == "throughput_tok_s")


def test_step_found_where_it_starts_and_the_drop_is_a_regression(dozen: Path) -> None:
    h = hist.history(dozen)
    assert [s.session for s in h.sessions] == [f"2026-03-{d:02d}" for d in range(1, 13)]
    eagle = _series(h, "eagle3")
    assert [cp.session for cp in eagle.change_points] == [f"2026-03-{STEP_AT + 1:02d}"]
    cp = eagle.change_points[0]
    assert cp.index == STEP_AT
    assert cp.ci_low is not None
    assert cp.ci_high is not None
    assert 0.05 < cp.ci_low < cp.change < cp.ci_high < 0.15  # the +10 % step
    assert cp.above_noise is True
    latest = eagle.latest
    assert latest is not None
    assert latest.verdict == "regression"
    assert latest.session == "2026-03-12"
    assert latest.since == f"2026-03-{STEP_AT + 1:02d}"
    assert latest.sessions == 11 - STEP_AT
    assert latest.ci_high is not None
    assert latest.ci_high < -latest.min_effect
    # the plain model stayed where it was: one regime, nothing shown
    base = _series(h, "baseline")
    assert base.change_points == []
    assert base.latest is not None
    assert base.latest.verdict == "no-change"


def test_flat_history_shows_no_change(flat: Path) -> None:
    h = hist.history(flat)
    assert len(h.series) == 2
    for s in h.series:
        assert s.change_points == []
        assert s.latest is not None
        assert s.latest.verdict == "no-change"
        assert s.latest.sessions == 11
    # no report, no git: each session noted, dated by nothing, ordered by its folder name
    assert {d.code for d in h.diagnostics} == {"history-no-report", "history-undated"}
    assert [s.date_from for s in h.sessions] == ["folder"] * 12
    assert [s.session for s in h.sessions] == sorted(s.session for s in h.sessions)


def test_dates_come_from_the_report_commits(dozen: Path) -> None:
    h = hist.history(dozen)
    assert {s.date_from for s in h.sessions} == {"commit"}
    assert h.sessions[0].date == "2026-03-01T02:00:00"
    assert h.sessions[0].report == "2026-03-01/report.md"
    point = _series(h, "eagle3").points[0]
    assert (point.session, point.date, point.launches) == ("2026-03-01", "2026-03-01T02:00:00", 1)
    assert point.ci_low is not None
    assert point.ci_low < point.level < (point.ci_high or 0)


def test_dates_from_logs_win(tmp_path: Path) -> None:
    # the fixture session's server logs carry `[2026-03-10 13:00:12 …]` timestamps
    root = tmp_path / "results"
    shutil.copytree(FIXTURES / "sessions" / "eagle3-attention-mode", root / "a")
    h = hist.history(root)
    assert [(s.session, s.date, s.date_from) for s in h.sessions] == [
        ("a", "2026-03-10T13:00:12", "logs")
    ]


def test_judge_and_too_few_sessions() -> None:
    from sessionlens import stats
    from sessionlens.diagnostics import CODES

    assert hist.judge(-0.10, -0.03, "higher", 0.02) == "regression"
    assert hist.judge(-0.10, -0.03, "lower", 0.02) == "improvement"  # latency fell
    assert hist.judge(0.03, 0.10, "higher", 0.02) == "improvement"
    assert hist.judge(-0.03, 0.10, "higher", 0.02) == "no-change"
    assert hist.judge(-0.10, -0.01, "higher", 0.02) == "no-change"  # not beyond δ
    assert hist.judge(None, None, "higher", 0.02) == "no-change"
    # one session before the newest: no session-to-session noise to judge with
    noise = stats.regime_noise([100.0], [])
    got = hist._latest([100.0, 80.0], [], noise, ["a", "b"], None, 0.02)
    assert (got.verdict, got.ci_low, got.change) == ("no-change", None, pytest.approx(-0.2))
    assert got.warnings == [stats.W_FEW_SESSIONS, hist.W_UNKNOWN_DIRECTION]
    used = [
        stats.W_FEW_SESSIONS,
        hist.W_UNKNOWN_DIRECTION,
        "history-no-report",
        "history-outside",
        "history-unreadable-session",
        "history-undated",
    ]
    assert [c for c in used if c not in CODES] == []


def test_parse_date() -> None:
    assert hist.parse_date("2026-03-10 12:58:04") == datetime(2026, 3, 10, 12, 58, 4)
    assert hist.parse_date("2026-03-10T12:58:04.123") == datetime(2026, 3, 10, 12, 58, 4)
    assert hist.parse_date("2026-03-10 12:58") == datetime(2026, 3, 10, 12, 58)
    assert hist.parse_date("03-10 12:58:04") is None  # vLLM prints no year
    assert hist.parse_date("12:58:04") is None
    assert hist.parse_date("2026-13-40 12:58:04") is None


def test_dataset_reads_back_with_hive_partitions(dozen: Path, tmp_path: Path) -> None:
    out = tmp_path / "dataset"
    assert main(["history", str(dozen), "--format", "parquet", "--out", str(out), "-q"]) == 0
    parts = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))
    assert len(parts) == 24
    assert parts[0] == "session=2026-03-01/config=baseline/part-0.parquet"
    lf = pl.scan_parquet(out, hive_partitioning=True)
    assert {"session", "config", "metric", "value", "source", "launch"} <= set(
        lf.collect_schema().names()
    )
    strings = pl.scan_parquet(
        out, hive_partitioning=True, hive_schema={"session": pl.String, "config": pl.String}
    )
    counts = (
        strings.filter(pl.col("metric") == "throughput_tok_s")
        .group_by("session", "config")
        .agg(pl.len(), pl.col("value").mean())
        .sort("session", "config")
        .collect()
    )
    assert counts.height == 24
    assert counts["len"].to_list() == [5] * 24  # five runs a night and config
    assert counts["session"][0] == "2026-03-01"
    # written again over itself: replaced whole
    assert main(["history", str(dozen), "--format", "parquet", "--out", str(out), "-q"]) == 0
    assert len(list(out.rglob("*.parquet"))) == 24


def test_dataset_never_replaces_a_foreign_folder(dozen: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    assert main(["history", str(dozen), "--format", "parquet", "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "which is not part of a sessionlens dataset" in err
    assert (out / "notes.txt").read_text() == "keep me"


def test_partition_values_are_encoded(tmp_path: Path) -> None:
    from sessionlens.render.history import dataset_parts

    frame = pl.DataFrame({"config": ["a/b=c"], "metric": ["m"], "value": [1.0]})
    (path, data), *rest = dataset_parts(["nightly/2026-03-01"], lambda _: frame)
    assert rest == []
    assert path == "session=nightly%2F2026-03-01/config=a%2Fb%3Dc/part-0.parquet"
    (tmp_path / path).parent.mkdir(parents=True)
    (tmp_path / path).write_bytes(data)
    back = pl.scan_parquet(
        tmp_path, hive_partitioning=True, hive_schema={"session": pl.String, "config": pl.String}
    ).collect()
    assert back.select("session", "config").row(0) == ("nightly/2026-03-01", "a/b=c")


def test_cache_is_used_and_safe_to_delete(dozen: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hist._Hashes, "RACY_S", -1.0)  # the fixture's files are seconds old
    first = hist.history(dozen)
    cache = dozen / hist.CACHE_DIR
    assert (cache / ".gitignore").read_text().endswith("*\n")
    assert len(_entries(cache)) == 12
    assert (cache / "hashes.json").is_file()  # the inputs' sha256 by their stat

    def no_parsing(*args: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(hist, "_analyse", no_parsing)
    assert hist.history(dozen) == first
    # a file whose stat still matches is not read again for its sha256
    monkeypatch.setattr("sessionlens.session.hash_file", no_parsing)
    assert hist.history(dozen) == first
    monkeypatch.undo()
    shutil.rmtree(cache)
    assert hist.history(dozen) == first


def test_a_changed_input_is_read_again(tmp_path: Path) -> None:
    root = tmp_path / "results"
    nightly(root, {"baseline": [82.0] * 3, "eagle3": [60.0] * 3}, commit=False)
    before = hist.history(root)
    log = root / "2026-03-03" / "eagle3" / "bench.log"
    log.write_text(
        log.read_text()
        .replace("Run 5/5", "Run 5/5 ")
        .replace(" tok/s (prompt", " tok/s  (prompt", 1)
    )
    after = hist.history(root)
    assert before.sessions[2].inputs_digest != after.sessions[2].inputs_digest
    assert len(_entries(root / hist.CACHE_DIR)) == 3  # the stale entry pruned


def test_a_session_folder_itself(tmp_path: Path) -> None:
    # RESULTS may be one session with its report: its cache is a dot-folder, never an input
    root = tmp_path / "results"
    folder = nightly(root, {"baseline": [82.0], "eagle3": [60.0]}, commit=False)[0]
    one = hist.history(folder)
    two = hist.history(folder)
    assert (folder / hist.CACHE_DIR).is_dir()
    assert [s.session for s in one.sessions] == [folder.name]
    assert one.sessions[0].inputs_digest == two.sessions[0].inputs_digest
    assert one.series == []  # nothing recurs in one session


def test_settings_file(dozen: Path, tmp_path: Path) -> None:
    root = tmp_path / "results"
    shutil.copytree(dozen, root, ignore=shutil.ignore_patterns(hist.CACHE_DIR))
    (root / hist.SETTINGS_FILE).write_text('min_effect = 0.2\nmetrics = ["throughput_tok_s"]\n')
    h = hist.history(root)
    assert h.min_effect == 0.2
    assert h.metrics == ["throughput_tok_s"]
    latest = _series(h, "eagle3").latest
    assert latest is not None
    assert latest.verdict == "no-change"  # an 11 % drop is smaller than a 20 % δ
    (root / hist.SETTINGS_FILE).write_text("min_effect = 5\n")
    with pytest.raises(hist.ManifestError, match="min_effect must be a fraction"):
        hist.history(root)
    (root / hist.SETTINGS_FILE).write_text("delta = 0.1\n")
    with pytest.raises(hist.ManifestError, match="unknown key 'delta'"):
        hist.history(root)


def test_metric_option(dozen: Path, capsys) -> None:
    assert main(["history", str(dozen), "--metric", "duration_s", "--format", "json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {s["metric"] for s in doc["series"]} == {"duration_s"}
    latest = next(s for s in doc["series"] if s["config"] == "eagle3")["latest"]
    assert latest["verdict"] == "regression"  # a longer run (lower is better) got worse
    assert main(["history", str(dozen), "--metric", "throughput_toks"]) == 2
    assert capsys.readouterr().err == (
        "sessionlens: error: metric 'throughput_toks' is in no session; did you mean "
        "throughput_tok_s? [usage]\n"
    )


def test_cli_exit_codes(dozen: Path, tmp_path: Path, capsys) -> None:
    assert main(["history", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["history", str(empty)]) == 2
    assert capsys.readouterr().err.endswith(
        "error: no session found: no committed report, no sessionlens.toml [input]\n"
    )
    assert main(["history", str(dozen), "--format", "parquet"]) == 2
    assert "--format parquet needs --out DIR" in capsys.readouterr().err
    assert main(["history", str(dozen), "--out", str(dozen / "2026-03-01" / "h.html")]) == 2
    assert "refusing to write inside a session" in capsys.readouterr().err
    out = tmp_path / "history.html"
    assert main(["history", str(dozen), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0].startswith("eagle3 · throughput_tok_s REGRESSION: ")
    assert err.splitlines()[-1] == f"wrote {out}"
    page = out.read_text()
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="sessionlens-trend"' in page
    assert 'class="verdict regression"' in page
    assert "change point: a new regime starts at 2026-03-06" in page


def test_check_takes_no_history_for_a_report(dozen: Path, monkeypatch, capsys) -> None:
    # the nightly reports stay fresh, and a history written beside them is no report
    out = dozen / "history.md"
    assert main(["history", str(dozen), "--out", str(out), "-q"]) == 0
    monkeypatch.chdir(dozen)
    assert main(["check"]) == 0
    assert capsys.readouterr().out == "sessionlens check: 12 reports fresh\n"
    out.unlink()


def test_text_plot_marks_the_change_point_and_the_newest(dozen: Path) -> None:
    from sessionlens.render.history_view import trend_text

    plot = trend_text(_series(hist.history(dozen), "eagle3")).splitlines()
    column = plot[0].index("┆")
    assert all(line[column] == "┆" for line in plot[:8])
    assert "▼" in "".join(plot[:8])
    assert plot[-2].strip().startswith("2026-03-01")
    assert plot[-2].endswith("2026-03-12")


@pytest.mark.parametrize("name", ["history.md.j2", "history.html.j2"])
def test_templates_render_under_strict_undefined(dozen: Path, name: str) -> None:
    from sessionlens.render.base import environment
    from sessionlens.render.history_view import build

    empty = hist.History(sessionlens_version=__version__, results="results", series=[])
    for h in (hist.history(dozen), empty):
        text = environment().get_template(name).render(view=build(h), body="", html=False)
        assert text.strip()
    text = environment().get_template(name).render(view=build(empty), body="", html=False)
    assert "nothing to trend yet" in text or name.endswith("html.j2")


def test_names_from_folders_are_escaped(tmp_path: Path) -> None:
    from sessionlens.render.history import render_history

    root = tmp_path / "results"
    levels = {"baseline": [82.0, 82.5, 81.9], "eagle3": [60.0, 60.2, 59.8]}
    for folder in nightly(root, levels, commit=False, reports=False):
        folder.rename(folder.with_name(folder.name + "|<script>"))
    h = hist.history(root)
    assert h.sessions[0].session == "2026-03-01|<script>"
    md = render_history(h, "md")
    assert "| 2026-03-01\\|\\<script\\> |" in md
    assert "<script>" not in md
    page = render_history(h, "html")
    assert "<script>" not in page
    assert "2026-03-01|&lt;script&gt;" in page


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_golden_history(dozen: Path, fmt: str, update_golden: bool, capsys) -> None:
    assert main(["history", str(dozen), "--format", fmt]) == 0
    out, err = capsys.readouterr()
    compare(GOLDEN / f"history.{fmt}", scrub(out), update_golden)
    compare(GOLDEN / "stderr.txt", err, update_golden)
    if fmt == "json":
        doc = json.loads(out)
        assert doc["sessionlens_version"] == __version__
        # DESIGN §10's shape
        series = doc["series"][0]
        assert set(series) >= {"config", "metric", "points", "change_points", "latest"}
        assert set(series["points"][0]) >= {
            "session",
            "date",
            "level",
            "ci_low",
            "ci_high",
            "launches",
        }
        assert set(series["latest"]) >= {"verdict", "change", "ci_low", "ci_high"}


def test_broken_and_outside_sessions_are_noted(tmp_path: Path) -> None:
    root = tmp_path / "results"
    nightly(root, {"baseline": [82.0, 82.4], "eagle3": [60.0, 60.3]}, commit=False)
    broken = root / "broken"
    broken.mkdir()
    (broken / "sessionlens.toml").write_text("[configs.x]\npaths = 5\n")
    (tmp_path / "elsewhere").mkdir()
    stray = root / "stray"
    stray.mkdir()
    header = {
        "sessionlens_version": "0.1.0",
        "session": "../../elsewhere",
        "inputs_digest": "sha256:0",
        "verdicts": {},
        "args": {},
    }
    (stray / "report.md").write_text(f"<!-- sessionlens: {json.dumps(header)} -->\n")
    damaged = root / "damaged"
    damaged.mkdir()
    (damaged / "report.md").write_text('<!-- sessionlens: {"session": "." -->\n')
    h = hist.history(root)
    codes = [(d.code, d.file) for d in h.diagnostics]
    assert ("history-outside", "stray/report.md") in codes
    assert ("history-bad-report", "damaged/report.md") in codes  # as `check` refuses it
    assert ("history-unreadable-session", "broken") in codes
    assert [(s.session, s.analysed) for s in h.sessions] == [
        ("2026-03-01", True),
        ("2026-03-02", True),
        ("broken", False),
    ]
    assert len(h.series) == 2  # the readable sessions still make their series
