"""Sniff regexes behind a literal prefilter (`base.Prefiltered`) find what the bare regexes
find: on every fixture's head, on each fixture line alone, and on lines with each literal
cut out (so a prefilter literal that a branch does not need would show up here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionlens.parsers import _blocks, _fields, sglang_bench_one_batch
from sessionlens.parsers.base import Prefiltered

FORMATS = Path(__file__).resolve().parents[2] / "fixtures" / "formats"
HEADS = sorted(
    p
    for p in FORMATS.rglob("*")
    if p.is_file() and not p.name.endswith((".expected.csv", ".diag.txt", ".got"))
)
SNIFFS: dict[str, Prefiltered] = {
    "SGLANG_MARKS": _blocks.SGLANG_MARKS,
    "VLLM_MARKS": _blocks.VLLM_MARKS,
    "GENERIC_MARKS": _blocks.GENERIC_MARKS,
    "one-batch": sglang_bench_one_batch._SNIFF_ONE,
}


def _texts(path: Path) -> list[str]:
    head = path.read_bytes()[: 64 << 10].decode("utf-8", "replace")
    return [head, _fields.strip_head(head), *head.split("\n")]


@pytest.mark.parametrize("path", HEADS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_prefilter_never_changes_a_sniff(path: Path) -> None:
    for name, sniff in SNIFFS.items():
        for text in _texts(path):
            bare = sniff.pattern.search(text)
            got = sniff.search(text)
            assert (got is None) == (bare is None), (name, text[:200])


def test_every_prefilter_literal_is_seen_by_some_fixture() -> None:
    """A literal no fixture holds is untested: each one occurs in some fixture head."""
    heads = "\n".join(p.read_bytes()[: 64 << 10].decode("utf-8", "replace") for p in HEADS)
    missing = [(name, lit) for name, s in SNIFFS.items() for lit in s.literals if lit not in heads]
    assert missing == []


@pytest.mark.parametrize("name", sorted(SNIFFS))
def test_a_match_always_holds_a_literal(name: str) -> None:
    """Every match the bare regex finds in any fixture line contains one of the literals."""
    sniff = SNIFFS[name]
    seen = 0
    for path in HEADS:
        for text in _texts(path)[2:]:
            m = sniff.pattern.search(text)
            if m is not None:
                seen += 1
                assert any(lit in m.group(0) for lit in sniff.literals), (name, m.group(0))
    assert seen > 0
