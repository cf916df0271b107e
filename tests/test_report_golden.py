"""Golden reports of the fixture sessions: Markdown, JSON and stderr, versions scrubbed.

On a mismatch the test prints a unified diff and writes `<file>.got`; `pytest --update-golden`
rewrites the goldens (see tests/golden/README.md for when that is right).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sessionlens import __version__
from sessionlens.cli import main
from tests.conftest import FIXTURES, ROOT
from tests.golden import compare

GOLDEN = Path(__file__).resolve().parent / "golden"
SESSIONS = sorted(p for p in (FIXTURES / "sessions").iterdir() if p.is_dir())


def scrub(text: str) -> str:
    text = text.replace(f'"sessionlens_version":"{__version__}"', '"sessionlens_version":"<v>"')
    return re.sub(r'("sessionlens_version": )"[^"]*"', r'\1"<v>"', text)


def test_sessions_exist() -> None:
    assert [p.name for p in SESSIONS] != []


@pytest.mark.parametrize("session", SESSIONS, ids=lambda p: p.name)
@pytest.mark.parametrize("fmt", ["md", "json"])
def test_report_golden(
    session: Path,
    fmt: str,
    update_golden: bool,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    rel = session.relative_to(ROOT).as_posix()
    assert main(["report", rel, "--format", fmt]) == 0
    out, err = capsys.readouterr()
    compare(GOLDEN / session.name / f"report.{fmt}", scrub(out), update_golden)
    compare(GOLDEN / session.name / "stderr.txt", err, update_golden)
