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
METRIC_V02 = {"launches", "n_eff", "warmup_dropped"}
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
HYPOTHESIS_V02 = {
    "unit",
    "launch_noise",
    "launch_noise_source",
    "verdict_raw",
    "holm_level",
    "runs_needed_note",
    "points",
}
NOISE = {"launch_cv", "source", "df", "within_cv", "min_detectable_effect"}
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
            assert set(m) >= METRIC | METRIC_V02
            for o in m["outliers"]:
                assert set(o) >= OUTLIER
    for h in doc["hypotheses"]:
        assert set(h) >= HYPOTHESIS | HYPOTHESIS_V02
        assert h["unit"] in ("launch", "sample")
        assert h["points"] == []  # no sweep
        assert h["verdict"] in ("supported", "rejected", "inconclusive")
        for c in h["confounds"]:
            assert set(c) == {"setting", "baseline", "candidate"}
    for e in doc["economics"]:
        assert set(e) >= ECONOMICS
    for d in doc["diagnostics"]:
        assert set(d) >= DIAGNOSTIC
    assert set(doc["noise"]) == {"throughput_tok_s", "verify_ms_per_cycle"}
    for n in doc["noise"].values():
        assert set(n) >= NOISE
        assert n["source"] in ("measured", "given", "assumed")
    assert doc["args"] == {"baseline": None, "hypotheses": []}
    assert doc["inputs_digest"].startswith("sha256:")


def test_numbers_are_unrounded(doc: dict) -> None:
    h2 = next(h for h in doc["hypotheses"] if h["id"] == "H2")
    assert h2["change"] == pytest.approx((59.56 - 60.3) / 60.3)
    assert len(repr(h2["change"])) > 8  # not rounded for display


def test_v02_fields_of_the_example(doc: dict) -> None:
    noise = doc["noise"]["throughput_tok_s"]
    assert (noise["launch_cv"], noise["source"], noise["df"]) == (0.02, "assumed", None)
    h1 = next(h for h in doc["hypotheses"] if h["id"] == "H1")
    assert (h1["unit"], h1["n_baseline"], h1["n_candidate"]) == ("sample", 26, 26)
    assert (h1["verdict_raw"], h1["launch_noise_source"]) == ("rejected", "assumed")
    # three claims: each decided at its Holm step (the smallest p at alpha / 3)
    assert sorted(h["holm_level"] for h in doc["hypotheses"]) == pytest.approx(
        [0.05 / 3, 0.05 / 2, 0.05]
    )
    decode = next(c for c in doc["configs"] if c["name"] == "eagle3-decode")
    gen = decode["metrics"]["gen_throughput_tok_s"]
    assert gen["launches"] == 1
    assert gen["n_eff"] < gen["n"] / 5  # Decode intervals are strongly autocorrelated
    assert gen["warmup_dropped"] >= 0
