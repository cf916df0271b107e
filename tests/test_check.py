"""`sessionlens check` (DESIGN §8): in-process findings, and the real pre-commit framework
driving it in a temporary git repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


@pytest.fixture(autouse=True)
def _outside_a_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process checks read the working tree, even when the suite runs from a git hook."""
    for key in ("PRE_COMMIT", "GIT_INDEX_FILE", "GIT_DIR", "GIT_WORK_TREE"):
        monkeypatch.delenv(key, raising=False)


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


def shipped_hook() -> dict[str, Any]:
    import yaml  # pre-commit's own dependency

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["sessionlens-check"]
    return dict(hooks[0])


def local_hook_config() -> str:
    """The shipped hook as a `local` one (this interpreter, no environment to install)."""
    hook = shipped_hook()
    hook.update(entry=f"{sys.executable} -m sessionlens check", language="system")
    return json.dumps({"repos": [{"repo": "local", "hooks": [hook]}]})  # JSON is YAML


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    need_program("git")
    pytest.importorskip("pre_commit") if os.environ.get("CI") != "true" else None
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git(repo, "init", "-q", "-b", "main").returncode == 0
    (repo / ".pre-commit-config.yaml").write_text(local_hook_config())
    for name in ("one", "two"):
        small_session(repo / name)
        (repo / name / "b" / "bench2.log").write_text(BENCH)
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


def test_the_hook_runs_on_every_commit_and_reads_the_diff_itself() -> None:
    """Case 4: with `pass_filenames` and no `always_run`, `git rm one/b/bench2.log` was
    "(no files to check)": pre-commit never passes a deleted path."""
    hook = shipped_hook()
    assert (hook["always_run"], hook["pass_filenames"], hook["require_serial"]) == (
        True,
        False,
        True,
    )


def test_pre_commit_refuses_a_deleted_or_renamed_input(repo: Path) -> None:
    """Case 4, under the real framework (a local hook with the shipped hook's fields)."""
    assert git(repo, "rm", "-q", "one/b/bench2.log").returncode == 0
    refused = git(repo, "commit", "-m", "drop a run")
    out = refused.stdout + refused.stderr
    assert refused.returncode == 1, out
    assert "(no files to check)" not in out
    assert "one/report.md:1: error: its session's inputs changed" in out
    assert "two/report.md" not in out
    assert git(repo, "reset", "-q", "--hard").returncode == 0
    assert git(repo, "mv", "two/b/bench2.log", "two/b/bench3.log").returncode == 0
    refused = git(repo, "commit", "-m", "rename a run")
    out = refused.stdout + refused.stderr
    assert refused.returncode == 1, out
    assert "two/report.md:1: error: its session's inputs changed" in out
    assert "two/report.md: to regenerate it, run: sessionlens report two --out two/report.md" in out


def test_a_plain_git_hook_checks_the_staged_versions(repo: Path) -> None:
    """Case 4: as a `.git/hooks` script, `check` read the working tree, so a staged stale
    input was committed when the working tree had been put back."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\nexec {sys.executable} -m sessionlens check\n")
    hook.chmod(0o755)
    log = repo / "one" / "b" / "bench.log"
    fresh = log.read_text()
    stale = fresh.replace("82.6 tok/s", "92.6 tok/s").replace("24.79s", "22.12s")
    log.write_text(stale)
    assert git(repo, "add", "one/b/bench.log").returncode == 0
    log.write_text(fresh)  # the working tree is fresh again; the index is not
    refused = git(repo, "commit", "-m", "stale run staged")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refused.stderr.splitlines()[0].startswith(
        "one/report.md:1: error: its session's inputs changed"
    )
    assert git(repo, "reset", "-q", "--hard").returncode == 0
    # `git commit PATH` commits from a temporary index (GIT_INDEX_FILE)
    log.write_text(stale)
    refused = git(repo, "commit", "-m", "partial", "one/b/bench.log")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "one/report.md:1: error: its session's inputs changed" in refused.stderr
    # and what is staged decides: a stale working tree does not hold up a fresh commit
    (repo / "one" / "notes.md").write_text("why\n")
    assert git(repo, "add", "one/notes.md").returncode == 0
    accepted = git(repo, "commit", "-m", "notes")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "sessionlens check: 1 report fresh" in accepted.stdout + accepted.stderr


def test_inside_a_commit_without_a_repository_the_gate_fails_closed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    need_program("git")
    monkeypatch.setenv("PRE_COMMIT", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "check")
    assert (code, out) == (1, "")
    assert err.startswith(
        "sessionlens: error: cannot read the staged changes: git rev-parse failed: fatal: "
        "not a git repository"
    )
    assert err.endswith(" [git-failed]\n")


HOOK_REPO_FILES = (
    "pyproject.toml",
    "README.md",
    ".pre-commit-hooks.yaml",
    "sessionlens",
    "templates",
)


def test_the_shipped_hook_under_pre_commit_try_repo(tmp_path: Path) -> None:
    """Case 4 end to end: pre-commit installs sessionlens from this repository into a hook
    environment (pip, from the local wheels where the machine has them) and runs the
    shipped hook on a commit that deletes one session's input and renames another's."""
    need_program("git")
    pytest.importorskip("pre_commit") if os.environ.get("CI") != "true" else None
    hook_repo = tmp_path / "hook-repo"
    hook_repo.mkdir()
    for name in HOOK_REPO_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, hook_repo / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, hook_repo / name)
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "hook")):
        assert git(hook_repo, *args).returncode == 0
    target = tmp_path / "repo"
    target.mkdir()
    assert git(target, "init", "-q", "-b", "main").returncode == 0
    for name in ("one", "two"):
        small_session(target / name)
        (target / name / "b" / "bench2.log").write_text(BENCH)
        assert (
            main(["report", str(target / name), "--out", str(target / name / "report.md"), "-q"])
            == 0
        )
    assert git(target, "add", "-A").returncode == 0
    assert git(target, "commit", "-q", "--no-verify", "-m", "start").returncode == 0
    assert git(target, "rm", "-q", "one/b/bench2.log").returncode == 0
    assert git(target, "mv", "two/b/bench2.log", "two/b/bench3.log").returncode == 0
    env = {k: v for k, v in isolated_env(target).items() if k != "PYTHONPATH"}  # the install
    shm = Path("/dev/shm")
    scratch = Path(tempfile.mkdtemp(dir=shm if os.access(shm, os.W_OK) else tmp_path))
    env["TMPDIR"] = str(scratch)  # the hook environment's files: in memory where possible
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "sessionlens-check"],
            cwd=target,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
            env=env,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "(no files to check)" not in out
    assert "sessionlens check....." in out
    assert "Failed" in out
    for name in ("one", "two"):
        assert f"{name}/report.md:1: error: its session's inputs changed" in out
        assert (
            f"{name}/report.md: to regenerate it, run: sessionlens report {name} --out {name}/report.md"
            in out
        )


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


# ---------------------------------------------------------------- fail closed (issue 19)


def gate_repo(root: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A repository (a `.git` folder is what `check` looks for) with two fresh sessions."""
    (root / ".git").mkdir(parents=True)
    for name in ("one", "two"):
        small_session(root / name)
        (root / name / "b" / "bench2.log").write_text(BENCH)
        assert (
            main(["report", str(root / name), "--out", str(root / name / "report.md"), "-q"]) == 0
        )
    capsys.readouterr()
    return root


def with_header(report: Path, change: Callable[[dict[str, Any]], None]) -> None:
    first, _, rest = report.read_text().partition("\n")
    header = json.loads(first.removeprefix("<!-- sessionlens: ").removesuffix(" -->"))
    change(header)
    line = "<!-- sessionlens: " + json.dumps(header, separators=(",", ":")) + " -->"
    report.write_text(line + "\n" + rest)


def make_stale(session: Path) -> None:
    log = session / "b" / "bench.log"
    log.write_text(log.read_text().replace("82.6 tok/s", "92.6 tok/s").replace("24.79s", "22.12s"))


REGENERATE_SESSION = (
    "one/report.md: regenerate it from its session: sessionlens report SESSION --out one/report.md"
)


@pytest.mark.parametrize(
    ("session", "finding"),
    [
        (
            "../../outside/one",
            'one/report.md:1: error: the header\'s session "../../outside/one" is outside the repository; not read [outside-repository]',
        ),
        (
            "/",
            "one/report.md:1: error: the header's session \"/\" is an absolute path; it must name the session relative to the report's folder [bad-header]",
        ),
        (
            "/etc",
            "one/report.md:1: error: the header's session \"/etc\" is an absolute path; it must name the session relative to the report's folder [bad-header]",
        ),
        (
            "one\x00/../..",
            "one/report.md:1: error: the header's session holds a NUL character [bad-header]",
        ),
        (
            "../out",
            'one/report.md:1: error: the header\'s session "../out" leads outside the repository through a symbolic link; not read [outside-repository]',
        ),
    ],
)
def test_a_session_outside_the_repository_is_a_finding_and_never_opened(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    opened: list[str],
    session: str,
    finding: str,
) -> None:
    """Case 1: `"../../outside/one"` passed a fresh copy outside as "2 reports fresh"; `"/"`
    walked /etc and /opt; `"/etc"` listed its folders as configs."""
    repo = gate_repo(tmp_path / "repo", capsys)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copytree(repo / "one", outside / "one")  # a fresh copy: it would pass if read
    (repo / "out").symlink_to(outside / "one")
    make_stale(repo / "one")
    with_header(repo / "one" / "report.md", lambda h: h.update(session=session))
    monkeypatch.chdir(repo)
    opened.clear()
    code, out, err = run(capsys, "check")
    assert (code, out) == (1, "")
    assert err.splitlines() == [finding, REGENERATE_SESSION]
    assert [p for p in opened if p.startswith((str(outside), "/etc", "/opt"))] == []


def _delete_a_quote(text: str) -> str:
    return text.replace('"session":', '"session:', 1)


@pytest.mark.parametrize(
    ("damage", "finding"),
    [
        (
            _delete_a_quote,
            "one/report.md:1: error: the sessionlens header is not valid JSON: Expecting ':' delimiter (column 60) [bad-header]",
        ),
        (
            lambda t: "\n" + t,
            "one/report.md:1: error: the sessionlens header is on line 2; it must be the first line [bad-header]",
        ),
        (
            lambda t: "\ufeff" + t,
            "one/report.md:1: error: a byte order mark comes before the sessionlens header; it must start the file [bad-header]",
        ),
        (
            lambda t: " " + t,
            "one/report.md:1: error: text comes before the sessionlens header; it must start the first line [bad-header]",
        ),
        (
            lambda t: t.replace(" -->\n", " --> edited\n", 1),
            "one/report.md:1: error: text follows the sessionlens header's `-->` on the first line [bad-header]",
        ),
        (
            lambda t: t.replace('"session":"."', '"session":1', 1),
            'one/report.md:1: error: the header\'s "session" must be a non-empty string, not 1 [bad-header]',
        ),
        (
            lambda t: t.replace('"args":{"baseline":null,"hypotheses":[]}', '"args":[]', 1),
            'one/report.md:1: error: the header\'s "args" must be an object, not [] [bad-header]',
        ),
        (
            lambda t: t.replace('"hypotheses":[]', '"hypotheses":[{}]', 1),
            'one/report.md:1: error: the header\'s "args.hypotheses" must be a list of strings, not [{}] [bad-header]',
        ),
        (
            lambda t: t.split("\n", 1)[1],
            "one/report.md:1: error: it has no sessionlens header: its first line must be `<!-- sessionlens: {…} -->` [bad-header]",
        ),
    ],
    ids=[
        "quote-deleted",
        "blank-first-line",
        "bom",
        "leading-space",
        "text-after",
        "session-1",
        "args-list",
        "hypotheses-of-objects",
        "no-header",
    ],
)
def test_a_damaged_or_missing_header_is_a_finding(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    damage: Callable[[str], str],
    finding: str,
) -> None:
    """Case 2: each of these was a silent skip (the report not checked at all) or exit 3."""
    repo = gate_repo(tmp_path / "repo", capsys)
    make_stale(repo / "one")  # the skip hid this
    report = repo / "one" / "report.md"
    report.write_text(damage(report.read_text(encoding="utf-8")), encoding="utf-8")
    monkeypatch.chdir(repo)
    code, out, err = run(capsys, "check")
    assert (code, out) == (1, "")
    assert err.splitlines() == [finding, REGENERATE_SESSION]


def test_an_unreadable_or_binary_report_is_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Case 2: mode 000 (simulated: the tests run as root) and binary after the header."""
    repo = gate_repo(tmp_path / "repo", capsys)
    monkeypatch.chdir(repo)
    real_open = os.open

    def denied(path: Any, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith("one/report.md"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(os, "open", denied)
        code, out, err = run(capsys, "check")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "one/report.md: error: cannot read it: Permission denied [unreadable-report]",
        REGENERATE_SESSION,
    ]
    report = repo / "one" / "report.md"
    lines = report.read_bytes().split(b"\n")
    report.write_bytes(b"\n".join([*lines[:3], b"\x89PNG\r\n\x1a\n\xff\x00\x00", *lines[3:]]))
    code, out, err = run(capsys, "check")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "one/report.md:4: error: it is not UTF-8 text (byte 0x89); a sessionlens report is UTF-8 Markdown [unreadable-report]",
        "one/report.md: to regenerate it, run: sessionlens report one --out one/report.md",
    ]


def test_a_report_is_known_by_its_header_whatever_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = gate_repo(tmp_path / "repo", capsys)
    (repo / "one" / "report.md").rename(repo / "one" / "2025-12-01-memfrac.md")
    (repo / "one" / "notes.md").write_text("# why we ran this\n")  # no header: not a report
    make_stale(repo / "one")
    monkeypatch.chdir(repo)
    code, out, err = run(capsys, "check")
    assert (code, out) == (1, "")
    assert err.splitlines()[0].startswith(
        "one/2025-12-01-memfrac.md:1: error: its session's inputs changed"
    )
    assert err.splitlines()[-1] == (
        "one/2025-12-01-memfrac.md: to regenerate it, run: sessionlens report one "
        "--out one/2025-12-01-memfrac.md"
    )


@pytest.mark.parametrize("how", ["dot", "pwd", "folder-above", "submodule"])
def test_a_folder_above_sessions_checks_every_report_under_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Case 3: `check .` chose the reports whose session holds `.`: none, so it passed."""
    repo = gate_repo(tmp_path / "repo", capsys)
    results = repo / "results"
    results.mkdir()
    (repo / "one").rename(results / "one")
    sub = repo / "sub"
    sub.mkdir()
    (sub / ".git").write_text("gitdir: ../.git/modules/sub\n")  # a submodule's checkout
    (repo / "two").rename(sub / "two")
    make_stale(results / "one")
    make_stale(sub / "two")
    monkeypatch.chdir(repo)
    arg, stale = {
        "dot": (".", ["results/one/report.md", "sub/two/report.md"]),
        "pwd": (str(repo), ["results/one/report.md", "sub/two/report.md"]),
        "folder-above": ("results", ["results/one/report.md"]),
        "submodule": ("sub", ["sub/two/report.md"]),
    }[how]
    code, out, err = run(capsys, "check", arg)
    assert (code, out) == (1, "")
    refused = [line.split(":", 1)[0] for line in err.splitlines() if "to regenerate it" in line]
    assert refused == stale


def test_a_path_inside_a_session_validates_every_report_up_to_the_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Case 3: `cd one/b && sessionlens check bench2.log` only looked under one/b."""
    repo = gate_repo(tmp_path / "repo", capsys)
    monkeypatch.chdir(repo / "one" / "b")
    assert run(capsys, "check", "bench2.log") == (0, "sessionlens check: 1 report fresh\n", "")
    make_stale(repo / "one")
    code, out, err = run(capsys, "check", "bench2.log")
    assert (code, out) == (1, "")
    assert err.splitlines()[0].startswith("../report.md:1: error: its session's inputs changed")
    assert err.splitlines()[-1] == (
        "../report.md: to regenerate it, run: sessionlens report .. --out ../report.md"
    )
    # a forged report on the way up is a finding though it claims another session
    with_header(repo / "one" / "report.md", lambda h: h.update(session="../../elsewhere"))
    (repo / "report.md").write_text("<!-- sessionlens: {damaged -->\n")
    code, out, err = run(capsys, "check", "bench2.log")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        '../report.md:1: error: the header\'s session "../../elsewhere" is outside the repository; not read [outside-repository]',
        "../report.md: regenerate it from its session: sessionlens report SESSION --out ../report.md",
        "../../report.md:1: error: the sessionlens header is not valid JSON: Expecting property name enclosed in double quotes (column 20) [bad-header]",
        "../../report.md: regenerate it from its session: sessionlens report SESSION --out ../../report.md",
    ]


def test_a_report_that_is_a_link_or_too_big_is_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Case 5: `report.md -> /dev/zero` read 3 GB and died with MemoryError."""
    repo = gate_repo(tmp_path / "repo", capsys)
    report = repo / "one" / "report.md"
    fresh = report.read_text()
    report.unlink()
    report.symlink_to("/dev/zero")
    (repo / "two" / "report.md").unlink()
    (repo / "two" / "report.md").symlink_to("../one/b/bench.log")  # inside: still not followed
    import resource

    def bounded() -> None:  # were /dev/zero read again, it would stop at 3 GB, not at OOM
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    proc = subprocess.run(
        [sys.executable, "-m", "sessionlens", "check"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=bounded,
    )
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.splitlines() == [
        "one/report.md: error: it is a symbolic link (to /dev/zero); a committed report must be the file itself, so the link is not followed [report-is-link]",
        "one/report.md: replace the link with the report itself: sessionlens report SESSION --out one/report.md",
        "two/report.md: error: it is a symbolic link (to ../one/b/bench.log); a committed report must be the file itself, so the link is not followed [report-is-link]",
        "two/report.md: replace the link with the report itself: sessionlens report SESSION --out two/report.md",
    ]
    (repo / "two" / "report.md").unlink()
    report.unlink()
    report.write_text(fresh + "<!-- padding -->\n" * ((16 << 20) // 17 + 1))
    long_line = fresh.replace("\n## Configs", "\n" + "x" * (1 << 20) + "x\n## Configs", 1)
    (repo / "two" / "report.md").write_text(long_line)
    monkeypatch.chdir(repo)
    code, out, err = run(capsys, "check")
    assert (code, out) == (1, "")
    line = long_line[: long_line.index("xxx")].count("\n") + 1
    assert err.splitlines() == [
        f"one/report.md: error: it is over 16 MB ({report.stat().st_size:,} bytes), too big for a report; not read [unreadable-report]",
        "one/report.md: to regenerate it, run: sessionlens report one --out one/report.md",
        f"two/report.md:{line}: error: this line is over 1 MB, too long for a report; not read [unreadable-report]",
        "two/report.md: to regenerate it, run: sessionlens report two --out two/report.md",
    ]


def test_an_input_link_outside_the_session_is_a_finding_that_says_how_to_settle_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Case 5: input links to /proc/self/environ or /etc were read by `check`."""
    repo = gate_repo(tmp_path / "repo", capsys)
    (repo / "one" / "b" / "env.log").symlink_to("/proc/self/environ")
    monkeypatch.chdir(repo)
    code, out, err = run(capsys, "check")
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == (
        "one/b/env.log: error: this link leads outside the session (to /proc/self/environ); "
        "not read [outside-session]"
    )
    assert err.splitlines()[-1] == (
        "one/report.md: settle the inputs named above, then regenerate it: "
        "sessionlens report one --out one/report.md"
    )


def test_every_finding_code_is_in_the_catalog() -> None:
    import ast

    from sessionlens import check
    from sessionlens.diagnostics import CODES

    tree = ast.parse(Path(check.__file__).read_text(encoding="utf-8"))
    codes = set(check.BLOCKING_CODES)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = [*node.args, *(k.value for k in node.keywords if k.arg == "code")]
            where = {"Finding": 2, "_Refused": 1}.get(node.func.id)
            if where is not None and len(args) > where and isinstance(args[where], ast.Constant):
                codes.add(args[where].value)
    codes.add("unreadable-report")  # _Refused's default
    assert len(codes) > 12
    assert sorted(c for c in codes if c not in CODES) == []


def test_an_unknown_input_is_a_finding_that_names_its_fix_and_exclude_alone_is_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Case 6: a notes.txt in a config locked the user out: `check` said "run sessionlens
    report", which cannot fix it, and a sessionlens.toml holding only `exclude` was refused
    ("names no config")."""
    repo = gate_repo(tmp_path / "repo", capsys)
    (repo / "one" / "a" / "notes.txt").write_text("launched with --mem-fraction 0.8\n")
    monkeypatch.chdir(repo)
    code, out, err = run(capsys, "check")
    assert (code, out) == (1, "")
    assert err.splitlines()[0] == (
        "one/a/notes.txt: error: no parser recognises this file (1 line); if it is not a log, "
        'leave it out: exclude = ["a/notes.txt"] in one/sessionlens.toml; if it is one, pin '
        'its format in [configs.a] (format = "<format id>") [unknown-format]'
    )
    assert err.splitlines()[-1] == (
        "one/report.md: settle the inputs named above, then regenerate it: "
        "sessionlens report one --out one/report.md"
    )
    (repo / "one" / "sessionlens.toml").write_text('exclude = ["a/notes.txt"]\n')
    code, out, err = run(capsys, "report", "one", "--out", "one/report.md", "-q")
    assert (code, out) == (0, "")
    assert "notes.txt" not in err
    assert run(capsys, "check") == (0, "sessionlens check: 2 reports fresh\n", "")
