"""Sessions: discovery, configs, digest, non-inputs, unassigned inputs, loops (DESIGN §2, §4)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessionlens.errors import ManifestError, UsageError
from sessionlens.session import digest, load_session
from tests.conftest import FIXTURES

SEED = (FIXTURES / "formats" / "bench-stdout" / "seed-truncated.log").read_text()


def make(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_subfolders_are_configs_and_non_inputs_skipped(tmp_path: Path) -> None:
    root = make(
        tmp_path,
        {
            "b/run.log": SEED,
            "a/run.log": SEED,
            "a/notes.md": "x",
            "README.txt": "x",
            ".hidden/x.log": SEED,
            "a/.dot.log": SEED,
            "report.md": "x",
            "report.json": "{}",
        },
    )
    s = load_session(root)
    assert [c.name for c in s.configs] == ["a", "b"]
    assert [src.path for src in s.sources] == ["a/run.log", "b/run.log"]
    assert sorted(set(s.columns.config)) == ["a", "b"]
    sha = hashlib.sha256(SEED.encode()).hexdigest()
    expected = hashlib.sha256(f"a/run.log\t{sha}\nb/run.log\t{sha}\n".encode()).hexdigest()
    assert s.inputs_digest == "sha256:" + expected
    assert digest([("b/run.log", sha), ("a/run.log", sha)]) == s.inputs_digest


def test_file_beside_config_folders_is_unassigned(tmp_path: Path) -> None:
    root = make(tmp_path, {"a/run.log": SEED, "b/run.log": SEED, "stray.log": SEED})
    s = load_session(root)
    diags = [str(d) for d in s.diagnostics]
    assert (
        "stray.log: warning: no config takes this input: it sits beside the config "
        "sub-folders; move it into a config's folder, or leave it out: "
        'exclude = ["stray.log"] in sessionlens.toml [unassigned-input]'
    ) in diags
    assert "stray.log" in [src.path for src in s.sources]  # still in the digest
    assert "stray.log" not in set(s.columns.source)


def test_flat_folder_is_one_config(tmp_path: Path) -> None:
    root = make(tmp_path / "mysession", {"one.log": SEED, "two.log": SEED})
    s = load_session(root)
    assert [c.name for c in s.configs] == ["mysession"]
    assert any(d.code == "single-config" for d in s.diagnostics)


def test_manifest_globs_and_unmatched(tmp_path: Path) -> None:
    root = make(
        tmp_path,
        {
            "sessionlens.toml": '[configs.fast]\npaths = ["runs/fast*"]\n[configs.slow]\n'
            'paths = ["runs/slow*"]\n',
            "runs/fast-1.log": SEED,
            "runs/slow-1.log": SEED,
            "runs/other.log": SEED,
        },
    )
    s = load_session(root)
    assert s.source_config == {
        "runs/fast-1.log": "fast",
        "runs/other.log": None,
        "runs/slow-1.log": "slow",
    }
    assert any(d.code == "unassigned-input" and d.file == "runs/other.log" for d in s.diagnostics)


def test_metric_missing_lists_metrics(tmp_path: Path) -> None:
    root = make(
        tmp_path,
        {
            "sessionlens.toml": '[configs.a]\n[configs.b]\n\n[[hypotheses]]\nbaseline = "a"\n'
            'candidate = "b"\nmetric = "accept_len"\n',
            "a/run.log": SEED,
            "b/run.log": SEED,
        },
    )
    with pytest.raises(ManifestError) as info:
        load_session(root)
    assert info.value.cli_line() == (
        f"{root}/sessionlens.toml:7: error: metric 'accept_len' of hypothesis H1 is in no "
        "config (metrics: duration_s, output_tokens, prompt_tokens, throughput_tok_s) [manifest]"
    )


def test_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such folder"):
        load_session(tmp_path / "missing")
    root = make(tmp_path, {"a/run.log": SEED, "b/run.log": SEED})
    with pytest.raises(UsageError, match="--baseline 'c' is not a config"):
        load_session(root, baseline="c")
    with pytest.raises(UsageError, match="unknown candidate config 'c'"):
        load_session(root, hypotheses=["c > a"])


def test_symlink_loop_is_a_diagnostic(tmp_path: Path) -> None:
    root = make(tmp_path, {"a/run.log": SEED})
    os.symlink(root / "a", root / "a" / "loop")
    s = load_session(root)
    assert [str(d) for d in s.diagnostics if d.code == "symlink-loop"] == [
        "a/loop: error: this link leads back to a folder that holds it; not followed [symlink-loop]"
    ]
    assert [src.path for src in s.sources] == ["a/run.log"]


def test_gz_input(tmp_path: Path) -> None:
    import gzip

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "run.log.gz").write_bytes(gzip.compress(SEED.encode()))
    s = load_session(tmp_path)
    assert s.sources[0].format == "bench-stdout"
    assert len(s.columns) == 20


def test_folders_nested_deeper_than_the_recursion_limit_are_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from sessionlens import _discover

    depth = 400
    deep = tmp_path
    for _ in range(depth):
        deep = deep / "d"
        deep.mkdir()
    (deep / "bench.log").write_text("x\n")
    (tmp_path / "d" / "a.log").write_text("x\n")
    (tmp_path / "z.log").write_text("x\n")
    # a recursion limit below the depth: a recursive walk would fail
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(300)
    try:
        found, diags = _discover.walk(tmp_path)
    finally:
        sys.setrecursionlimit(old)
    rel = [p.relative_to(tmp_path).as_posix() for p in found]
    assert rel == ["d/a.log", "/".join(["d"] * depth) + "/bench.log", "z.log"]
    assert diags == []


def test_a_manifest_config_that_gets_no_file_is_said(tmp_path: Path) -> None:
    seed = FIXTURES / "formats" / "bench-stdout" / "seed-truncated.log"
    for name in ("fp16", "fp8"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "bench.log").write_bytes(seed.read_bytes())
    (tmp_path / "sessionlens.toml").write_text(
        '[configs.fp16]\npaths = ["fp16/*"]\n[configs.fp8]\npaths = ["fp8/*"]\n'
        '[configs.dup]\npaths = ["fp8/*"]\n[configs.none]\npaths = ["nothing/*"]\n'
    )
    s = load_session(tmp_path)
    empty = [d for d in s.diagnostics if d.code == "empty-config"]
    assert [d.message.split(" ")[1] for d in empty] == ["dup", "none"]


# ---------------------------------------------------------------- symlinks (issue 19, case 5)


def test_a_link_inside_the_session_is_read_as_its_target(tmp_path: Path) -> None:
    root = make(tmp_path / "s", {"a/run.log": SEED, "b/real/run.log": SEED})
    os.symlink("../a/run.log", root / "b" / "same.log")
    os.symlink("real", root / "b" / "linked")
    s = load_session(root)
    assert [src.path for src in s.sources] == [
        "a/run.log",
        "b/linked/run.log",
        "b/real/run.log",
        "b/same.log",
    ]
    assert [d for d in s.diagnostics if d.code in ("outside-session", "unreadable-file")] == []


def test_a_link_leaving_the_session_is_never_read(tmp_path: Path, opened: list[str]) -> None:
    outside = make(tmp_path / "outside", {"run.log": SEED})
    root = make(tmp_path / "s", {"a/run.log": SEED, "b/run.log": SEED})
    os.symlink("/proc/self/environ", root / "b" / "env.log")
    os.symlink("/etc", root / "b" / "etc")
    os.symlink("../../outside/run.log", root / "b" / "copy.log")
    os.symlink(outside, root / "c")
    os.symlink("/nowhere/at/all.log", root / "b" / "gone.log")
    opened.clear()
    s = load_session(root)
    assert [str(d) for d in s.diagnostics if d.code == "outside-session"] == [
        "b/copy.log: warning: this link leads outside the session (to ../../outside/run.log); not read [outside-session]",
        "b/env.log: warning: this link leads outside the session (to /proc/self/environ); not read [outside-session]",
        "b/etc: warning: this link leads outside the session (to /etc); not read [outside-session]",
        "b/gone.log: warning: this link leads outside the session (to /nowhere/at/all.log); not read [outside-session]",
        f"c: warning: this link leads outside the session (to {outside}); not read [outside-session]",
    ]
    assert [src.path for src in s.sources] == ["a/run.log", "b/run.log"]
    assert [p for p in opened if p.startswith(("/proc", "/etc", str(outside)))] == []


# ---------------------------------------------------------------- scale (issue 19, case 14)


@pytest.fixture
def deep_root(tmp_path: Path) -> Iterator[Path]:
    """A folder for a tree deeper than PATH_MAX: in memory where /dev/shm is (on a disk
    with `discard`, removing 2,100 folders waits seconds for the journal), and removed with
    `rm -r`, which walks it iteratively (pytest's own cleanup recurses and fails on it, for
    every later run on the machine)."""
    import subprocess
    import tempfile

    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(dir=shm)) if os.access(shm, os.W_OK) else tmp_path / "deep"
    root.mkdir(exist_ok=True)
    try:
        yield root
    finally:
        subprocess.run(["rm", "-rf", "--", str(root)], check=True)


def test_a_2100_level_tree_is_walked_in_linear_time(
    deep_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each folder's real path is carried down, not asked of the file system: a realpath per
    folder made a 2,100-level tree take 104 s (each call walks every level above it)."""
    from sessionlens import _discover

    fd = os.open(deep_root, os.O_RDONLY)
    for depth in range(1, 2101):
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
        if depth == 1000:
            os.close(os.open("run.log", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    os.close(fd)
    calls: list[str] = []
    real = os.path.realpath

    def counting(path: str) -> str:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(os.path, "realpath", counting)
    found, diags = _discover.walk(deep_root)
    assert len(calls) == 1  # the root's, and no link to resolve
    assert [p.relative_to(deep_root).as_posix() for p in found] == ["d/" * 1000 + "run.log"]
    # past PATH_MAX the system cannot list a folder: said, not hidden
    assert [(d.code, d.message) for d in diags] == [
        ("unreadable-file", "cannot list the folder: File name too long")
    ]


# ---------------------------------------------------------------- a manifest of `exclude` only


def test_a_manifest_may_hold_only_exclude(tmp_path: Path) -> None:
    """Issue 19, case 6: it was refused ("the manifest names no config")."""
    root = make(tmp_path, {"a/run.log": SEED, "b/run.log": SEED, "b/notes.txt": "why\n"})
    (root / "sessionlens.toml").write_text('exclude = ["*/notes.txt"]\n')
    s = load_session(root)
    assert [c.name for c in s.configs] == ["a", "b"]
    assert [src.path for src in s.sources] == ["a/run.log", "b/run.log"]
    assert [d.code for d in s.diagnostics if d.level != "info"] == ["truncated-output"] * 2
    (root / "sessionlens.toml").write_text(
        'exclude = ["*/notes.txt"]\n\n[[hypotheses]]\nbaseline = "a"\ncandidate = "c"\n'
    )
    with pytest.raises(ManifestError) as err:
        load_session(root)
    assert err.value.cli_line() == (
        f"{root / 'sessionlens.toml'}:3: error: unknown config 'c' in candidate "
        "(configs: a, b) [manifest]"
    )
