"""Golden comparison: a unified diff on mismatch and a `.got` file beside the expected one."""

from __future__ import annotations

import difflib
from pathlib import Path


def compare(expected_path: Path, actual: str, update: bool) -> None:
    """Assert `actual` equals the file's text; with `update`, rewrite the file instead."""
    got_path = expected_path.with_name(expected_path.name + ".got")
    if update:
        expected_path.parent.mkdir(parents=True, exist_ok=True)
        expected_path.write_text(actual, encoding="utf-8")
        got_path.unlink(missing_ok=True)
        return
    if not expected_path.exists():
        got_path.write_text(actual, encoding="utf-8")
        raise AssertionError(
            f"{expected_path} does not exist; wrote {got_path.name} (run pytest --update-golden)"
        )
    expected = expected_path.read_text(encoding="utf-8")
    if expected == actual:
        got_path.unlink(missing_ok=True)
        return
    got_path.write_text(actual, encoding="utf-8")
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            fromfile=str(expected_path),
            tofile=str(got_path),
        )
    )
    raise AssertionError(f"output differs from {expected_path.name}:\n{diff}")
