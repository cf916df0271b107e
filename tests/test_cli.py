"""The command line in-process: output, one-line errors, exit codes (DESIGN §1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sessionlens.cli import main
from tests.conftest import FIXTURES

SEED = FIXTURES / "formats" / "bench-stdout" / "seed-truncated.log"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_parse_json_seed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "parse", str(SEED), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    tput = [s["value"] for s in doc["samples"] if s["metric"] == "throughput_tok_s"]
    assert tput == [60.4, 65.5, 50.9, 61.5, 59.5]
    assert [d["code"] for d in doc["diagnostics"]].count("truncated-output") == 1
    src = doc["sources"][0]
    assert set(src) >= {
        "path",
        "format",
        "embedded_formats",
        "lines",
        "sha256",
        "settings",
        "summary",
        "blocks",
    }
    assert src["summary"]["recomputed"] is True
    assert src["summary"]["throughput_tok_s"] == 10233 / 173.01
    assert set(doc["samples"][0]) == {
        "config",
        "source",
        "line",
        "block",
        "run",
        "rank",
        "ts",
        "launch",
        "load",
        "metric",
        "value",
    }
    assert doc["samples"][0]["launch"] == SEED.parent.as_posix()
    assert doc["samples"][0]["load"] is None
    assert "[truncated-output]" in err


def test_parse_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "parse", str(SEED))
    assert code == 0
    assert "throughput_tok_s  5     59.6   50.9   65.5  tok/s" in out
    assert "recomputed" in out


def test_parse_csv_and_parquet(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(capsys, "parse", str(SEED), "--format", "csv")
    assert code == 0
    assert out.splitlines()[0] == ("config,source,line,block,run,rank,ts,launch,load,metric,value")
    assert len(out.splitlines()) == 21
    target = tmp_path / "s.parquet"
    code, out, _ = run(capsys, "parse", str(SEED), "--out", str(target))
    assert code == 0
    assert out == ""
    import polars as pl

    frame = pl.read_parquet(target)
    assert frame.filter(pl.col("metric") == "throughput_tok_s")["value"].to_list() == [
        60.4,
        65.5,
        50.9,
        61.5,
        59.5,
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["parse", "/no/such/file.log"],
            "/no/such/file.log: error: no such file or folder [usage]",
        ),
        (
            ["parse", "--format", "parquet", str(SEED)],
            "sessionlens: error: --format parquet needs --out FILE [usage]",
        ),
        (
            ["parse", "--format", "json", "--out", "x.csv", str(SEED)],
            "sessionlens: error: --format json conflicts with the suffix of --out x.csv [usage]",
        ),
        (["parse", "--bogus"], None),
        ([], None),
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], expected: str | None
) -> None:
    code, _out, err = run(capsys, *args)
    assert code == 2
    assert "Traceback" not in err
    if expected is not None:
        assert err.strip().splitlines()[-1] == expected


def test_random_bytes_empty_file_empty_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rnd = tmp_path / "random.bin"
    rnd.write_bytes(bytes((i * 7919 + 13) % 256 for i in range(4096)))
    code, _, err = run(capsys, "parse", str(rnd))
    assert code == 2
    assert err.splitlines() == [
        f"{rnd}: error: binary data, not a text log; leave it out with `exclude` in "
        "sessionlens.toml [unknown-format]",
        "sessionlens: error: no sample could be read from 1 file [input]",
    ]
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    code, _, err = run(capsys, "parse", str(empty))
    assert code == 2
    assert err.splitlines() == [
        f"{empty}: warning: the file is empty [empty-file]",
        "sessionlens: error: no sample could be read from 1 file [input]",
    ]
    folder = tmp_path / "nothing"
    folder.mkdir()
    (folder / "notes.md").write_text("# not an input\n")
    (folder / "junk.txt").write_text("hello\nworld\n")
    code, _, err = run(capsys, "parse", str(folder))
    assert code == 2
    assert f"{folder}/junk.txt: error: no parser recognises this file (2 lines)" in err
    assert "notes.md" not in err


def test_out_refuses_to_overwrite_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_bytes(SEED.read_bytes())
    code, _, err = run(capsys, "parse", str(log), "--format", "json", "--out", str(log))
    assert code == 2
    assert err.strip().endswith("refusing to overwrite an input file with the output [usage]")
    assert log.read_bytes() == SEED.read_bytes()


def test_unwritable_out_keeps_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "parse", str(SEED), "--out", str(tmp_path / "no" / "x.json"))
    assert code == 2
    assert "cannot write" in err
    assert list(tmp_path.iterdir()) == []


def test_python_dash_m_and_version() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sessionlens", "--version"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(FIXTURES.parent)},
    )
    assert proc.returncode == 0
    assert proc.stdout.startswith("sessionlens ")


def test_import_is_light() -> None:
    code = (
        "import sys, sessionlens; sessionlens.parse_text; "
        "print(sorted(m for m in ('polars', 'scipy') if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(FIXTURES.parent)},
    )
    assert proc.stdout.strip() == "[]"


EXAMPLE = FIXTURES / "sessions" / "eagle3-attention-mode"


def test_spec_math_worked_example(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys,
        "spec-math",
        "--cycle-ms",
        "29.5",
        "--accept-len",
        "2.0",
        "--baseline-tok-s",
        "83",
        "--target-tok-s",
        "150",
        "--steps",
        "2",
    )
    assert code == 0
    assert err == ""
    assert "ceiling               67.8 tok/s" in out
    assert "break-even accept len 2.45" in out
    assert "unreachable with 2 draft steps" in out
    assert "per-token acceptance needed at unbounded depth: 77.4 %" in out
    assert "50.0 % per token at unbounded depth, 61.8 % for a chain of 2 steps" in out
    code, out, _ = run(
        capsys, "spec-math", "--cycle-ms", "29.5", "--accept-len", "2.0", "--format", "json"
    )
    assert code == 0
    assert json.loads(out)["ceiling_tok_s"] == pytest.approx(1000 * 2.0 / 29.5)
    code, _, err = run(capsys, "spec-math", "--cycle-ms", "0", "--accept-len", "2.0")
    assert code == 2
    assert err == "sessionlens: error: --cycle-ms must be positive, not 0 [usage]\n"


def test_report_json_out(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code, stdout, err = run(capsys, "report", str(EXAMPLE), "--out", str(out))
    assert code == 0
    assert stdout == ""
    doc = json.loads(out.read_text())
    assert {h["id"]: h["verdict"] for h in doc["hypotheses"]} == {
        "H1": "rejected",
        "H2": "rejected",
        "H3": "rejected",
    }
    assert "H2 REJECTED: throughput_tok_s changed by -1.2 %" in err
    assert f"wrote {out}" in err
    code, _, err = run(capsys, "report", str(EXAMPLE), "--format", "json", "--quiet")
    assert code == 0
    assert "REJECTED" not in err
    assert "[single-launch]" not in err  # info lines are quiet too


def test_report_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "report", str(tmp_path / "nope"))
    assert (code, err) == (2, f"{tmp_path / 'nope'}: error: no such folder [usage]\n")
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "sessionlens.toml").write_text("[configs.a]\nbogus = 1\n")
    code, _, err = run(capsys, "report", str(tmp_path / "s"))
    assert code == 2
    assert err == (
        f"{tmp_path / 's' / 'sessionlens.toml'}:2: error: unknown key 'bogus' in "
        "config 'a' (known: format, label, launch_per_file, paths, settings) [manifest]\n"
    )
    code, _, err = run(
        capsys, "report", str(EXAMPLE), "--out", str(EXAMPLE / "eagle3-decode" / "bench.log")
    )
    assert code == 2
    assert "refusing to overwrite an input file" in err
    code, _, err = run(
        capsys,
        "report",
        str(EXAMPLE),
        "--format",
        "json",
        "--hypothesis",
        "eagle3-decode >> baseline",
    )
    assert code == 2
    assert "cannot read --hypothesis" in err


@pytest.mark.parametrize("flag", ["--cycle-ms", "--accept-len", "--baseline-tok-s"])
def test_spec_math_refuses_non_finite_numbers(
    capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    args = {"--cycle-ms": "29.5", "--accept-len": "2.0", "--baseline-tok-s": "83"}
    args[flag] = "nan"
    code, out, err = run(capsys, "spec-math", *[x for kv in args.items() for x in kv])
    assert code == 2
    assert out == ""
    assert f"{flag} must be a finite number" in err


def _error_storm(path: Path, times: int) -> None:
    """An SGLang 0.5.3 log (as the `errors-oom-nccl` fixture prints it) whose sampler
    reports NaN logits after every Decode batch, `times` times, and one OOM once."""
    head = (FIXTURES / "formats" / "sglang-server" / "errors-oom-nccl-0.5.3.log").read_text(
        encoding="utf-8"
    )
    lines = head.splitlines()[:3]  # server args, the pool, ready
    for k in range(times):
        ts = f"2025-10-10 22:{1 + k // 60:02d}:{k % 60:02d}"
        lines.append(
            f"[{ts} TP0] Decode batch. #running-req: 48, #token: 98110, token usage: 0.14, "
            f"accept len: 3.31, accept rate: 0.41, cuda graph: True, gen throughput "
            f"(token/s): {2990.41 + k:.2f}, #queue-req: 12, "
        )
        lines.append(f"\x1b[31m[{ts} TP1] Detected errors during sampling! NaN in the logits.")
    lines.append(
        "[2025-10-10 22:09:00 TP0] Scheduler hit an exception: Traceback (most recent call last):"
    )
    lines.append("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_repeated_error_is_printed_three_times_and_counted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An error storm: the same error of one file is printed `SAID_TIMES` times, then one
    line at its last place counts the rest; `--format json` keeps every one."""
    log = tmp_path / "server.log"
    _error_storm(log, 7)
    code, out, err = run(capsys, "parse", str(log), "--format", "json")
    assert code == 0
    nan = [d for d in json.loads(out)["diagnostics"] if "NaN in the logits" in d["message"]]
    assert [d["line"] for d in nan] == [5, 7, 9, 11, 13, 15, 17]
    said = [line for line in err.splitlines() if "NaN in the logits" in line]
    assert said == [
        f"{log}:5: error: Detected errors during sampling! NaN in the logits. [server-error]",
        f"{log}:7: error: Detected errors during sampling! NaN in the logits. [server-error]",
        f"{log}:9: error: Detected errors during sampling! NaN in the logits. [server-error]",
        f"{log}:17: error: Detected errors during sampling! NaN in the logits. (4 more times "
        "up to this line, not printed) [server-error]",
    ]
    assert err.count("CUDA out of memory") == 1  # said once: printed as it is
    # exactly SAID_TIMES: nothing counted
    _error_storm(log, 3)
    _, _, err = run(capsys, "parse", str(log), "--format", "json")
    assert err.count("NaN in the logits") == 3
    assert "not printed" not in err


def test_a_repeated_error_is_one_report_note_that_counts_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The report's data-quality notes: one file's same error, said again and again, is one
    note (how often, the first places); the same error in another file is a note of its
    own, and an error said once is listed as it is."""
    for name, times in (("a", 7), ("b", 2)):
        (tmp_path / name).mkdir()
        _error_storm(tmp_path / name / "server.log", times)
    out = tmp_path / "report.md"
    code, _, err = run(capsys, "report", str(tmp_path), "--out", str(out))
    assert code == 0, err
    notes = out.read_text(encoding="utf-8").split("## Data-quality notes", 1)[1]
    notes = notes.split("\n## ", 1)[0]
    nan = [line for line in notes.splitlines() if "NaN in the logits" in line]
    assert len(nan) == 2
    assert (
        "a/server.log:5, a/server.log:7, a/server.log:9, a/server.log:11, a/server.log:13 "
        "and 2 more (error, server-error): 7 times: Detected errors during sampling!" in nan[0]
    )
    assert "b/server.log:5, b/server.log:7 (error, server-error): 2 times:" in nan[1]
    oom = [line for line in notes.splitlines() if "CUDA out of memory" in line]
    assert len(oom) == 2
    assert all(" times:" not in line for line in oom)


def test_the_cli_collects_cycles_less_often_while_it_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While a command runs, the cycle collector's youngest generation is collected every
    `GC_FIRST` allocations, not every 700 (its older generations walk every live object:
    a log of many diagnostics made that a third of the time); afterwards the caller's
    thresholds are back, also when the command fails."""
    import gc

    from sessionlens import cli

    seen: list[tuple[int, int, int]] = []

    def fake_main(args: list[str]) -> int:
        seen.append(gc.get_threshold())
        if args == ["boom"]:
            raise KeyboardInterrupt
        return 0

    before = gc.get_threshold()
    monkeypatch.setattr(cli, "_main", fake_main)
    assert cli.main(["parse"]) == 0
    assert cli.main(["boom"]) == 130
    assert seen == [(cli.GC_FIRST, *before[1:])] * 2
    assert before[0] < cli.GC_FIRST
    assert gc.get_threshold() == before
