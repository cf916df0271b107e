"""Every format fixture parses to its expected tidy rows and diagnostics (word for word)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixture_cases import cases, diag_text, parse_case, rows_csv
from tests.golden import compare

CASES = cases()


def test_fixtures_exist() -> None:
    assert len(CASES) > 0


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fixture(path: Path, update_golden: bool) -> None:
    result = parse_case(path)
    assert result.sources[0].format == path.parent.name, "detected format is not the folder's"
    compare(path.with_name(path.name + ".expected.csv"), rows_csv(result), update_golden)
    compare(path.with_name(path.name + ".diag.txt"), diag_text(result), update_golden)
