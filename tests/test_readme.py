"""The README's promises: two commands first, and a library example that runs as printed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


def test_opens_with_two_commands() -> None:
    block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert block is not None
    assert README.index(block.group(0)) < README.index("##")
    lines = block.group(1).strip().splitlines()
    assert lines == [
        "python3 -m pip install . && sessionlens report fixtures/sessions/eagle3-attention-mode "
        "--out report.md",
        "python3 -m pip install '.[test]' && python3 -m pytest",
    ]


def test_library_example_runs() -> None:
    section = README.split("## As a library", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    proc = subprocess.run(
        [sys.executable, "-c", code.group(1)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "[60.4, 65.5, 50.9, 61.5, 59.5]"
    assert lines[1] == "True"
    assert "'truncated-output'" in lines[2]
    assert lines[3:6] == ["H1 rejected -0.0%", "H2 rejected -1.2%", "H3 rejected -26.9%"]
    assert lines[6] == "65.6"
    assert lines[7] == "UsageError no-such-session usage"


def test_library_example_type_checks(tmp_path: Path) -> None:
    """Issue 23: `mypy --strict` on the example as printed, against this checkout's package
    (its py.typed): `round(ceiling_tok_s, 1)` of a `float | None` failed it."""
    section = README.split("## As a library", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    example = tmp_path / "readme_example.py"
    example.write_text(code.group(1))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--follow-imports=silent",  # the package as a typed dependency, as installed
            "--cache-dir",
            str(tmp_path / "cache"),
            str(example),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "MYPYPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found in 1 source file" in proc.stdout


def test_verdict_excerpt_matches_the_report() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sessionlens",
            "report",
            "fixtures/sessions/eagle3-attention-mode",
            "--format",
            "json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    for line in proc.stderr.splitlines():
        if " REJECTED: " in line or " SUPPORTED: " in line or " INCONCLUSIVE: " in line:
            assert line in README, f"README's verdict excerpt is stale: {line}"


def test_report_excerpt_matches_the_golden_report() -> None:
    golden = (ROOT / "tests" / "golden" / "eagle3-attention-mode" / "report.md").read_text()
    quoted = [line[2:] for line in README.splitlines() if line.startswith("> ")]
    assert quoted
    for line in quoted:
        assert line in golden, f"README's report excerpt is stale: {line}"
