"""The library as another tool uses it (issue 23): exceptions that carry data, `load_session`
refusing what `report` refuses, `render_report`, docstrings that say what a call does."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

import sessionlens
from sessionlens.errors import InputError, ManifestError, UsageError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "fixtures" / "sessions" / "eagle3-attention-mode"


def test_exceptions_carry_data_and_the_cli_line_only_on_request(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as usage:
        sessionlens.load_session(tmp_path / "missing")
    e = usage.value
    assert (e.message, e.path, e.line, e.code, e.exit_code) == (
        "no such folder",
        str(tmp_path / "missing"),
        None,
        "usage",
        2,
    )
    assert str(e) == f"{tmp_path / 'missing'}: no such folder"  # no "error:", no [usage]
    assert e.cli_line() == f"{tmp_path / 'missing'}: error: no such folder [usage]"
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "sessionlens.toml").write_text('title = "t"\nalpah = 1\n')
    with pytest.raises(ManifestError) as bad:
        sessionlens.load_session(tmp_path / "s")
    assert (bad.value.line, bad.value.code) == (2, "manifest")
    assert str(bad.value).startswith(f"{tmp_path / 's' / 'sessionlens.toml'}:2: unknown key")
    assert "[manifest]" not in str(bad.value)
    assert "error:" not in str(bad.value)
    assert UsageError("x").cli_line() == "sessionlens: error: x [usage]"
    assert str(UsageError("x")) == "x"


def test_load_session_refuses_a_session_without_samples(tmp_path: Path) -> None:
    """`report` exits 2 on it; the library said nothing and returned an empty session."""
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError) as info:
        sessionlens.load_session(empty)
    assert info.value.message == "no sample could be read from 0 inputs"
    assert [d.code for d in info.value.diagnostics] == ["empty-folder"]
    (empty / "a").mkdir()
    (empty / "a" / "x.log").write_bytes(b"\x00\x01\x02" * 100)
    with pytest.raises(InputError) as binary:
        sessionlens.load_session(empty)
    assert binary.value.message == "no sample could be read from 1 input"
    assert "unknown-format" in [d.code for d in binary.value.diagnostics]
    # what `check` and `history` judge themselves
    s = sessionlens.load_session(empty, allow_empty=True)
    assert len(s.samples) == 0


def test_render_report_is_what_report_writes() -> None:
    analysis = sessionlens.analyze(sessionlens.load_session(EXAMPLE))
    md = sessionlens.render_report(analysis)
    assert md.startswith("<!-- sessionlens: ")
    assert json.loads(md.splitlines()[0][len("<!-- sessionlens: ") : -4])["session"] == "."
    html = sessionlens.render_report(analysis, "html", session_ref="../s")
    assert html.lstrip().lower().startswith("<!doctype html")
    assert "<script" not in html
    doc = json.loads(sessionlens.render_report(analysis, "json"))
    assert [h["verdict"] for h in doc["hypotheses"]] == ["rejected"] * 3
    with pytest.raises(ValueError, match="unknown report format 'pdf'; choose one of md"):
        sessionlens.render_report(analysis, "pdf")


@pytest.mark.parametrize("name", ["parse_file", "parse_text", "load_session", "analyze"])
def test_public_functions_say_what_they_take_return_and_raise(name: str) -> None:
    doc = inspect.getdoc(getattr(sessionlens, name)) or ""
    assert len(doc.splitlines()) >= 5, f"{name}: {doc!r}"
    assert "Raises" in doc or "raises" in doc, name


def test_parse_file_names_the_format_ids() -> None:
    from sessionlens.parsers import PARSERS

    doc = inspect.getdoc(sessionlens.parse_file) or ""
    missing = [fid for fid in PARSERS if fid not in doc]
    assert missing == []
