"""`sessionlens check` (DESIGN §8): in-process findings, and the real pre-commit framework
driving it in a temporary git repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sessionlens.check import read_header
from sessionlens.cli import main
from tests.conftest import FIXTURES, ROOT, need_program

EXAMPLE = FIXTURES / "sessions" / "eagle3-attention-mode"
BENCH = """Benchmarking http://localhost:8000
  max_tokens=2048, num_runs=3, warmup=1

  Run 1/3: 2048 tokens in 24.79s = 82.6 tok/s (prompt: 32 toks)
  Run 2/3: 2048 tokens in 24.65s = 83.1 tok/s (prompt: 29 toks)
  Run 3/3: 2048 tokens in 24.91s = 82.2 tok/s (prompt: 33 toks)
"""


def small_session(root: Path, faster: float = 1.0) -> Path:
    for name, scale in (("a", 1.0), ("b", faster)):
        (root / name).mkdir(parents=True, exist_ok=True)
        text = BENCH
        if scale != 1.0:
            text = (
                text.replace("24.79s = 82.6", "12.40s = 165.2")
                .replace("24.65s = 83.1", "12.33s = 166.1")
                .replace("24.91s = 82.2", "12.46s = 164.4")
            )
        (root / name / "bench.log").write_text(text)
    return root


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_fresh_then_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "session")
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "report", "session", "--out", "session/report.md", "-q")[0] == 0
    assert run(capsys, "report", "session", "--out", "session/report.json", "-q")[0] == 0
    code, out, err = run(capsys, "check")
    assert (code, out, err) == (0, "sessionlens check: 1 report fresh\n", "")
    # one more run of the decode config, fast enough to change numbers but not verdicts
    bench = tmp_path / "session" / "eagle3-decode" / "bench.log"
    text = bench.read_text()
    bench.write_text(
        text.replace(
            "(prompt: 34 toks)\n",
            "(prompt: 34 toks)\n  Run 6/5: 2048 tokens in 33.00s = 62.1 tok/s (prompt: 30 toks)\n",
        )
    )
    code, out, err = run(capsys, "check", "session/eagle3-decode/bench.log")
    assert code == 1
    lines = err.splitlines()
    assert lines[0].startswith("session/report.md:1: error: its session's inputs changed")
    assert lines[0].endswith("[stale-inputs]")
    assert any(
        line.endswith("[changed-number]") and line.startswith("session/report.md:")
        for line in lines
    )
    assert any(
        line.startswith("session/report.json: error: differs from a fresh analysis")
        for line in lines
    )
    assert lines[-1] == (
        "session/report.md: to regenerate it, run: sessionlens report session "
        "--out session/report.md"
    )


def test_changed_verdict_and_recorded_args(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    small_session(tmp_path / "s")
    monkeypatch.chdir(tmp_path)
    assert (
        run(
            capsys,
            "report",
            "s",
            "--out",
            "s/report.md",
            "-q",
            "--baseline",
            "a",
            "--hypothesis",
            "b > a by 50%",
        )[0]
        == 0
    )
    header = read_header(tmp_path / "s" / "report.md")
    assert header is not None
    assert header["args"] == {"baseline": "a", "hypotheses": ["b > a by 50%"]}
    assert header["verdicts"] == {"H1": "rejected"}
    small_session(tmp_path / "s", faster=2.0)  # b now twice as fast: the verdict flips
    code, _, err = run(capsys, "check", "s")
    assert code == 1
    assert (
        "s/report.md:1: error: H1: the report says rejected, the data now give "
        "supported [changed-verdict]" in err.splitlines()
    )
    assert err.splitlines()[-1] == (
        "s/report.md: to regenerate it, run: sessionlens report s "
        "--out s/report.md --baseline a --hypothesis 'b > a by 50%'"
    )


def test_gate_fails_closed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    small_session(tmp_path / "s")
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "report", "s", "--out", "s/report.md", "-q")[0] == 0
    (tmp_path / "s" / "a" / "mystery.bin").write_bytes(b"\x00\x01binary\x02" * 10)
    code, _, err = run(capsys, "check")
    assert code == 1
    assert "s/a/mystery.bin: error: binary data, not a text log" in err
    (tmp_path / "s" / "a" / "mystery.bin").unlink()
    (tmp_path / "s" / "sessionlens.toml").write_text("[configs.a]\nnope = 1\n")
    code, _, err = run(capsys, "check")
    assert code == 1
    assert err.splitlines()[0] == (
        "s/sessionlens.toml:2: error: unknown key 'nope' in config "
        "'a' (known: format, label, launch_per_file, paths, settings) [bad-manifest]"
    )


def test_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "check") == (0, "", "")  # nothing to check
    code, _, err = run(capsys, "check", "missing.log")
    assert (code, err) == (2, "missing.log: error: no such file or folder [usage]\n")


# ---------------------------------------------------------------- the real pre-commit


def isolated_env(repo: Path) -> dict[str, str]:
    """No global or system git config (a hooksPath there would stop pre-commit)."""
    return {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "PRE_COMMIT_HOME": str(repo.parent / "pre-commit-home"),
        "PYTHONPATH": str(ROOT),
    }


def git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **isolated_env(repo),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "PRE_COMMIT_HOME": str(repo.parent / "pre-commit-home"),
        "PYTHONPATH": str(ROOT),
    }
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, env=env, check=False
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    need_program("git")
    pytest.importorskip("pre_commit") if os.environ.get("CI") != "true" else None
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git(repo, "init", "-q", "-b", "main").returncode == 0
    hook = (
        "repos:\n- repo: local\n  hooks:\n  - id: sessionlens-check\n"
        "    name: sessionlens check\n"
        f"    entry: {sys.executable} -m sessionlens check\n"
        "    language: system\n    pass_filenames: true\n    require_serial: true\n"
    )
    (repo / ".pre-commit-config.yaml").write_text(hook)
    for name in ("one", "two"):
        small_session(repo / name)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "sessionlens",
                "report",
                name,
                "--out",
                f"{name}/report.md",
                "-q",
            ],
            cwd=repo,
            check=True,
            env=env,
        )
    assert git(repo, "add", "-A").returncode == 0
    assert git(repo, "commit", "-q", "--no-verify", "-m", "start").returncode == 0
    install = subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env=isolated_env(repo),
    )
    assert install.returncode == 0, install.stderr
    return repo


def test_pre_commit_refuses_stale_and_passes_fresh(repo: Path) -> None:
    log = repo / "one" / "b" / "bench.log"
    log.write_text(log.read_text().replace("82.6 tok/s", "92.6 tok/s").replace("24.79s", "22.12s"))
    git(repo, "add", "one/b/bench.log")
    refused = git(repo, "commit", "-m", "new run without the report")
    assert refused.returncode != 0
    assert "sessionlens check" in refused.stdout + refused.stderr
    assert "to regenerate it, run: sessionlens report one --out one/report.md" in (
        refused.stdout + refused.stderr
    )
    subprocess.run(
        [sys.executable, "-m", "sessionlens", "report", "one", "--out", "one/report.md", "-q"],
        cwd=repo,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    git(repo, "add", "one")
    accepted = git(repo, "commit", "-m", "new run with its report")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr


def test_pre_commit_leaves_untouched_sessions_alone(repo: Path) -> None:
    # session two goes stale behind the hook's back...
    log = repo / "two" / "a" / "bench.log"
    log.write_text(log.read_text().replace("82.2 tok/s", "72.2 tok/s").replace("24.91s", "28.37s"))
    git(repo, "add", "two")
    assert git(repo, "commit", "-q", "--no-verify", "-m", "sneak").returncode == 0
    # ...and a commit that touches only session one is not held up by it
    (repo / "one" / "notes.md").write_text("why we ran this\n")
    git(repo, "add", "one/notes.md")
    ok = git(repo, "commit", "-m", "notes for one")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # while a full check still sees it
    full = subprocess.run(
        [sys.executable, "-m", "sessionlens", "check"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert full.returncode == 1
    assert "two/report.md" in full.stderr


def test_hook_manifest_is_valid() -> None:
    pytest.importorskip("pre_commit") if os.environ.get("CI") != "true" else None
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "validate-manifest",
            str(ROOT / ".pre-commit-hooks.yaml"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_changed_number_is_shown_where_the_lines_differ() -> None:
    from sessionlens.check import _clip, _start

    was = "| eagle3-decode | eagle3-decode | bench.log | 5 | 59.6 ± 6.7 tok/s | 60.4 tok/s | 9.1 % | [1] [2] |"
    now = was.replace("9.1 %", "9.3 %")
    a, b = _clip(was, _start(was, now)), _clip(now, _start(was, now))
    assert a != b
    assert "9.1 %" in a
    assert "9.3 %" in b
