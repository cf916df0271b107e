"""Shared test options: `--update-golden` rewrites expected files instead of comparing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
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


def chromium(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Headless Chromium on a local page, with a profile of its own, no network chatter and
    no sandbox (CI runs as root); `extra` flags as `--dump-dom` or `--screenshot=FILE`."""
    exe = need_program("chromium")
    return subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}",
            *extra,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# What the code under test opens: an audit hook (they cannot be removed, so it records only
# while a test holds the `opened` fixture). "open" covers open() and os.open(); listings are
# os.scandir / os.listdir.
_OPENED: list[str] | None = None


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _OPENED is None or event not in ("open", "os.scandir", "os.listdir"):
        return
    path = args[0] if args else None
    if isinstance(path, str | bytes | os.PathLike):
        _OPENED.append(os.path.abspath(os.fsdecode(path)))


sys.addaudithook(_audit)


@pytest.fixture
def opened() -> Iterator[list[str]]:
    """Absolute paths of every file opened and folder listed during the test."""
    global _OPENED
    _OPENED = []
    try:
        yield _OPENED
    finally:
        _OPENED = None


# Hypothesis: derandomised in CI (DESIGN §9), no per-example deadline (CI machines stall).
import warnings  # noqa: E402

from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    # On a failure hypothesis' plugin imports libcst, which warns (DeprecationWarning from
    # mypy_extensions); under filterwarnings=error that hid the failure behind an INTERNALERROR.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield
