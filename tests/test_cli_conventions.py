"""DESIGN §1 "CLI conventions" (issue 23), each as a user meets it: -h, -q on every command,
`--out -`, completion, plain metavars and listed choices, "did you mean", thresholds with
their unit, a length that counts the bonus token, and the Markdown file nobody reads."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sessionlens.cli import main
from tests.conftest import FIXTURES, ROOT

SEED = FIXTURES / "formats" / "bench-stdout" / "seed-truncated.log"
EXAMPLE = FIXTURES / "sessions" / "eagle3-attention-mode"
COMMANDS = ["parse", "report", "history", "check", "spec-math"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _session(tmp_path: Path) -> Path:
    root = tmp_path / "s"
    for config in ("a", "b"):
        (root / config).mkdir(parents=True)
        (root / config / "run.log").write_bytes(SEED.read_bytes())
    return root


@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_dash_h_is_help(capsys: pytest.CaptureFixture[str], command: str | None) -> None:
    args = [command] if command else []
    code, short, _ = run(capsys, *args, "-h")
    assert code == 0
    code, long, _ = run(capsys, *args, "--help")
    assert code == 0
    assert short == long
    assert short.startswith("Usage: sessionlens")
    assert "-h, --help" in short


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_plain_metavars_and_lists_choices(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    _, text, _ = run(capsys, command, "-h")
    for ugly in ("<list", "<str>", "<path>", "<float>", "<int>", "{", "Value error"):
        assert ugly not in text, f"{command}: {ugly!r} in help"
    assert "-q, --quiet" in text
    usage = text.splitlines()[0]
    expected = {
        "parse": "Usage: sessionlens parse [OPTIONS] FILE...",
        "report": "Usage: sessionlens report [OPTIONS] LOGDIR",
        "history": "Usage: sessionlens history [OPTIONS] RESULTS",
        "check": "Usage: sessionlens check [OPTIONS] [PATH]...",
        "spec-math": "Usage: sessionlens spec-math [OPTIONS]",
    }[command]
    assert usage == expected
    flat = " ".join(text.split())
    choices = {
        "parse": "table (default), json, csv or parquet",
        "report": "md (default), html or json",
        "history": "md (default), html, json or parquet",
        "spec-math": "text (default) or json",
    }
    if command in choices:
        assert choices[command] in flat
    if command == "parse":  # every format id, for --input-format
        from sessionlens.parsers import PARSERS

        assert [f for f in PARSERS if f not in flat] == []


def test_unknown_choices_say_what_is_allowed_and_what_was_meant(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, "report", str(EXAMPLE), "--format", "pdf")
    assert (code, err) == (
        2,
        "sessionlens: error: --format 'pdf' is not one of md, html, json [usage]\n",
    )
    code, _, err = run(capsys, "report", str(EXAMPLE), "--format", "htm")
    assert err == (
        "sessionlens: error: --format 'htm' is not one of md, html, json; did you mean 'html'? "
        "[usage]\n"
    )
    code, _, err = run(capsys, "parse", str(SEED), "--input-format", "bench-stdot")
    assert code == 2
    assert err.startswith(
        "sessionlens: error: --input-format 'bench-stdot' is no format id (known: "
    )
    assert err.endswith("; did you mean 'bench-stdout'? [usage]\n")
    root = _session(tmp_path)
    code, _, err = run(capsys, "report", str(root), "--baseline", "A")
    assert code == 2
    assert err.endswith("is not a config (configs: a, b); did you mean 'a'? [usage]\n")
    code, _, err = run(capsys, "report", str(root), "--hypothesis", "b > a on throughput_tok by 5%")
    assert code == 2
    assert "metric 'throughput_tok' of hypothesis H1 is in no config" in err
    assert err.endswith("; did you mean 'throughput_tok_s'? [usage]\n")
    (root / "sessionlens.toml").write_text(
        '[configs.a]\n[configs.b]\n[[hypotheses]]\nbaseline = "a"\ncandidate = "bb"\n'
    )
    code, _, err = run(capsys, "report", str(root))
    assert code == 2
    assert err.endswith(
        "unknown config 'bb' in candidate (configs: a, b); did you mean 'b'? [manifest]\n"
    )


@pytest.mark.parametrize(
    ("claim", "meant"),
    [
        ("b > a by 5", '"by 5%"'),
        ("b > a by 0.05", '"by 5%" (the fraction 0.05) or "by 0.05%"'),
        ("b < a on throughput_tok_s by 20", '"by 20%"'),
    ],
)
def test_a_threshold_without_its_unit_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, claim: str, meant: str
) -> None:
    code, out, err = run(capsys, "report", str(_session(tmp_path)), "--hypothesis", claim)
    assert (code, out) == (2, "")
    assert err == (
        f"sessionlens: error: --hypothesis {claim!r}: write the threshold with its unit: {meant} "
        "(`min_effect` in sessionlens.toml is the fraction) [usage]\n"
    )


def test_a_threshold_with_its_unit_and_the_default(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = _session(tmp_path)
    code, out, _ = run(capsys, "report", str(root), "-f", "json", "--hypothesis", "b > a by 5%")
    assert code == 0
    import json

    assert json.loads(out)["hypotheses"][0]["min_effect"] == 0.05
    code, out, _ = run(capsys, "report", str(root), "-f", "json", "--hypothesis", "b > a")
    assert json.loads(out)["hypotheses"][0]["min_effect"] == 0.02  # the README's default


def test_quiet_everywhere_leaves_errors_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = _session(tmp_path)
    code, out, err = run(capsys, "report", str(root), "--out", str(tmp_path / "r.md"))
    assert code == 0
    assert "warning:" in err  # the cut results sections
    assert "wrote" in err
    code, out, err = run(capsys, "report", str(root), "--out", str(tmp_path / "r.md"), "-q")
    assert (code, out, err) == (0, "", "")
    code, out, err = run(capsys, "parse", str(SEED), "-q")
    assert code == 0
    assert "throughput_tok_s" in out
    assert err == ""
    code, out, err = run(capsys, "parse", str(tmp_path / "missing.log"), "-q")
    assert (code, err) == (
        2,
        f"{tmp_path / 'missing.log'}: error: no such file or folder [usage]\n",
    )
    code, out, err = run(capsys, "spec-math", "--cycle-ms", "30", "--accept-len", "2", "-q")
    assert code == 0
    assert "ceiling" in out.lower()


def test_check_quiet_prints_nothing_when_fresh(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _session(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    monkeypatch.delenv("GIT_INDEX_FILE", raising=False)
    assert run(capsys, "report", "s", "--out", "s/report.md", "-q")[0] == 0
    code, out, err = run(capsys, "check")
    assert (code, out) == (0, "sessionlens check: 1 report fresh\n")
    code, out, err = run(capsys, "check", "-q")
    assert (code, out, err) == (0, "", "")
    (root / "a" / "run.log").write_text(SEED.read_text().replace("60.4", "70.4"))
    code, out, err = run(capsys, "check", "-q")
    assert code == 1
    assert "[stale-inputs]" in err


def test_out_dash_is_stdout(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    os.chdir(tmp_path)
    try:
        code, out, _ = run(capsys, "report", str(EXAMPLE), "--out", "-", "-q")
        assert code == 0
        assert out.startswith("<!-- sessionlens: ")
        code, out, _ = run(capsys, "parse", str(SEED), "--out", "-", "-f", "csv", "-q")
        assert code == 0
        assert out.startswith("config,source,line")
        assert not (tmp_path / "-").exists()
    finally:
        os.chdir(ROOT)


def test_history_out_dash_and_parquet_needs_a_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    results = tmp_path / "results"
    root = _session(results)
    assert run(capsys, "report", str(root), "--out", str(root / "report.md"), "-q")[0] == 0
    code, out, _ = run(capsys, "history", str(results), "--out", "-", "-q")
    assert code == 0
    assert out.startswith("#")
    code, _, err = run(capsys, "history", str(results), "-f", "parquet", "--out", "-")
    assert code == 2
    assert "--format parquet needs --out DIR" in err
    code, _, err = run(
        capsys, "history", str(results), "-f", "parquet", "--out", str(tmp_path / "ds") + "/", "-q"
    )
    assert (code, err) == (0, "")
    assert list((tmp_path / "ds").glob("session=*/config=*/part-0.parquet"))
    code, _, err = run(capsys, "history", str(results), "--out", str(tmp_path / "h") + "/")
    assert code == 2
    assert "names a folder" in err


def test_accept_len_counts_the_bonus_token(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "spec-math", "--cycle-ms", "30", "--accept-len", "0.5")
    assert (code, out) == (2, "")
    assert err == (
        "sessionlens: error: --accept-len counts the bonus token, so it is at least 1, not 0.5 "
        "(an acceptance rate is no length: length = 1 + rate × steps) [usage]\n"
    )
    assert run(capsys, "spec-math", "--cycle-ms", "30", "--accept-len", "1")[0] == 0


def _sessionlens(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`python -m sessionlens ARGS` of this checkout, with more environment."""
    return subprocess.run(
        [sys.executable, "-m", "sessionlens", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )


def _complete(words: str) -> list[str]:
    """What bash completion offers for the last word of `words` (typer's protocol)."""
    got = _sessionlens(
        _SESSIONLENS_COMPLETE="complete_bash",
        COMP_WORDS=words,
        COMP_CWORD=str(len(words.split(" ")) - 1),
    )
    return got.stdout.split()


def test_completion_as_typer_gives_it() -> None:
    # typer detects the shell from the process tree, and a test run without a shell
    # above it (a job started in the background) detects none: name the shell instead
    show = _sessionlens(
        "--show-completion", "bash", _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1"
    )
    assert show.returncode == 0, show.stderr
    assert "_sessionlens_completion()" in show.stdout
    assert _complete("sessionlens report x --format ") == ["md", "html", "json"]
    assert _complete("sessionlens parse x --input-format vllm-") == [
        "vllm-bench-result",
        "vllm-bench-serve",
        "vllm-server",
    ]
    help_text = _sessionlens("-h").stdout
    assert "--install-completion" in help_text
    assert "--show-completion" in help_text


def test_a_pasted_markdown_file_is_named_not_skipped_silently(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = _session(tmp_path)
    (root / "b" / "results-pasted.md").write_bytes(SEED.read_bytes())
    (root / "README.md").write_text("# why\n")  # a README is no input and no news
    (root / "b" / "old.md").write_text('<!-- sessionlens: {"session": ".."} -->\n')  # a report
    code, _, err = run(capsys, "report", str(root), "-f", "json")
    assert code == 0
    notes = [ln for ln in err.splitlines() if "[markdown-not-read]" in ln]
    assert notes == [
        "b/results-pasted.md: info: Markdown is never an input, so this file was not read; if it "
        "holds benchmark output, rename it results-pasted.txt (or .log) to make it one "
        "[markdown-not-read]"
    ]
    _, _, err = run(capsys, "report", str(root), "-f", "json", "-q")
    assert "[markdown-not-read]" not in err  # -q: errors only
    (root / "sessionlens.toml").write_text('exclude = ["b/*.md"]\n')
    _, _, err = run(capsys, "report", str(root), "-f", "json")
    assert "[markdown-not-read]" not in err  # left out on purpose: no word
