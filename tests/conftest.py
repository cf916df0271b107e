"""Shared test options: `--update-golden` rewrites expected files instead of comparing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite golden/expected files from the current output",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def need_program(name: str) -> str:
    """Path of an outside program; skip without it, except under CI=true (DESIGN §9)."""
    found = shutil.which(name)
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail(f"{name} is required under CI=true but is not installed")
    pytest.skip(f"{name} is not installed (it is installed by .ci/run)")
