"""The JSON report keeps every key of DESIGN §7's contract (extensions are allowed)."""

from __future__ import annotations

import json

import pytest

from sessionlens.cli import main
from tests.conftest import FIXTURES

# DESIGN §7's top-level keys, in the contract's order
TOP_ORDER = [
    "sessionlens_version",
    "title",
    "inputs_digest",
    "configs",
    "settings_diff",
    "hypotheses",
    "economics",
    "args",
    "diagnostics",
]
TOP = set(TOP_ORDER)
CONFIG = {"name", "label", "settings", "sources", "metrics"}
METRIC = {"n", "mean", "median", "stdev", "cv", "ci_low", "ci_high", "min", "max", "outliers"}
OUTLIER = {"source", "line", "value"}
HYPOTHESIS = {
    "id",
    "claim",
    "metric",
    "baseline",
    "candidate",
    "direction",
    "min_effect",
    "verdict",
    "change",
    "ci_low",
    "ci_high",
    "p_welch",
    "p_mannwhitney",
    "p_holm",
    "hedges_g",
    "n_baseline",
    "n_candidate",
    "runs_needed",
    "verdict_without_outliers",
    "confounds",
    "reason",
}
ECONOMICS = {
    "config",
    "cycle_ms",
    "cycle_is_estimate",
    "accept_len",
    "steps",
    "measured_tok_s",
    "ceiling_tok_s",
    "efficiency",
    "baseline_config",
    "baseline_tok_s",
    "break_even_accept_len",
    "p_current_chain",
    "p_current_unbounded",
    "target_tok_s",
    "target_accept_len",
    "reachable",
    "p_needed_chain",
    "p_needed_unbounded",
}
DIAGNOSTIC = {"level", "code", "file", "line", "message"}


@pytest.fixture(scope="module")
def doc() -> dict:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert (
            main(
                ["report", str(FIXTURES / "sessions" / "eagle3-attention-mode"), "--format", "json"]
            )
            == 0
        )
    return json.loads(out.getvalue())


def test_contract_keys(doc: dict) -> None:
    assert set(doc) >= TOP
    assert list(doc)[: len(TOP_ORDER)] == TOP_ORDER
    for c in doc["configs"]:
        assert set(c) >= CONFIG
        for m in c["metrics"].values():
            assert set(m) >= METRIC
            for o in m["outliers"]:
                assert set(o) >= OUTLIER
    for h in doc["hypotheses"]:
        assert set(h) >= HYPOTHESIS
        assert h["verdict"] in ("supported", "rejected", "inconclusive")
        for c in h["confounds"]:
            assert set(c) == {"setting", "baseline", "candidate"}
    for e in doc["economics"]:
        assert set(e) >= ECONOMICS
    for d in doc["diagnostics"]:
        assert set(d) >= DIAGNOSTIC
    assert doc["args"] == {"baseline": None, "hypotheses": []}
    assert doc["inputs_digest"].startswith("sha256:")


def test_numbers_are_unrounded(doc: dict) -> None:
    h2 = next(h for h in doc["hypotheses"] if h["id"] == "H2")
    assert h2["change"] == pytest.approx((59.56 - 60.3) / 60.3)
    assert len(repr(h2["change"])) > 8  # not rounded for display
