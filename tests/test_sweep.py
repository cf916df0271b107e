"""Sweeps (DESIGN §5 "Load points and sweeps"): load points, per-point verdicts, SLO
capacity, Pareto fronts — on sessions of generated bench_serving output with a known truth."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from sessionlens import _load, sweep
from sessionlens.analysis import analyze
from sessionlens.cli import main
from sessionlens.errors import ManifestError, UsageError
from sessionlens.session import load_session
from tests.sweep_gen import session

MANIFEST = """
title = "backends"
{slo}
[configs.triton]
paths = ["triton/**"]
[configs.flashinfer]
paths = ["flashinfer/**"]
{hypotheses}
"""

CLAIM = """
[[hypotheses]]
metric = "{metric}"
baseline = "triton"
candidate = "flashinfer"
direction = "{direction}"
min_effect = {delta}
{extra}
"""


def _claim(metric: str, delta: float, direction: str = "increase", extra: str = "") -> str:
    return CLAIM.format(metric=metric, delta=delta, direction=direction, extra=extra)


def _session(tmp_path: Path, hypotheses: str, slo: str = "", launches: int = 3, **kw) -> Path:
    configs = kw.pop(
        "configs", {"triton": (1.0, [4, 8, 16, 32]), "flashinfer": (1.2, [4, 8, 16, 32])}
    )
    return session(
        tmp_path / "s",
        configs,
        launches=launches,
        manifest=MANIFEST.format(slo=slo, hypotheses=hypotheses),
        **kw,
    )


def test_load_points_name_what_varies():
    blocks = [
        ("a.log", 0, {"max_concurrency": 4, "request_rate": "inf", "num_prompts": 40}),
        ("a.log", 1, {"max_concurrency": 8, "request_rate": float("inf"), "num_prompts": 80}),
        ("b.log", 0, {"max_concurrency": 8}),  # a client that printed less
        ("c.log", 0, {"max_tokens": 64}),  # no load setting: no load point
    ]
    assert _load.load_points(blocks) == {
        ("a.log", 0): "max_concurrency=4",
        ("a.log", 1): "max_concurrency=8",
        ("b.log", 0): "max_concurrency=8",
    }
    one = [("a.log", 0, {"max_concurrency": 16, "request_rate": "inf"})]
    assert _load.load_points(one) == {("a.log", 0): "max_concurrency=16, request_rate=inf"}
    ordered = sorted(
        ["max_concurrency=16", "max_concurrency=4", "max_concurrency=128"], key=_load.order_key
    )
    assert ordered == ["max_concurrency=4", "max_concurrency=16", "max_concurrency=128"]


def test_capacity_interpolates_between_the_last_pass_and_the_first_fail():
    loads = ["c=4", "c=8", "c=16", "c=32"]
    tput = {"c=4": 100.0, "c=8": 180.0, "c=16": 300.0, "c=32": 380.0}
    tpot = {"c=4": 10.0, "c=8": 14.0, "c=16": 22.0, "c=32": 40.0}
    cap = sweep.capacity(loads, tput, {"tpot": tpot}, {"tpot": 30.0})
    # 30 lies 8/18 of the way from 22 to 40: 300 + 8/18 · 80
    assert cap.value == pytest.approx(300 + 8 / 18 * 80)
    assert (cap.bound, cap.at, cap.towards, cap.limit) == ("interpolated", "c=16", "c=32", "tpot")
    beyond = sweep.capacity(loads, tput, {"tpot": tpot}, {"tpot": 50.0})
    assert (beyond.value, beyond.bound, beyond.at) == (380.0, "beyond", "c=32")
    below = sweep.capacity(loads, tput, {"tpot": tpot}, {"tpot": 5.0})
    assert (below.value, below.bound, below.limit) == (None, "below", "tpot")
    # two bounds: the one crossed first decides
    ttft = {"c=4": 100.0, "c=8": 150.0, "c=16": 400.0, "c=32": 900.0}
    both = sweep.capacity(loads, tput, {"tpot": tpot, "ttft": ttft}, {"tpot": 30.0, "ttft": 300.0})
    assert both.value == pytest.approx(180 + (300 - 150) / (400 - 150) * 120)
    assert (both.at, both.limit) == ("c=8", "ttft")
    assert sweep.capacity(loads, tput, {}, {"tpot": 30.0}).bound == "unknown"


def test_pareto_front_and_dominance():
    a = {"c=4": (100.0, 10.0), "c=8": (180.0, 14.0), "c=16": (170.0, 22.0)}  # c=16 is beaten
    assert sweep.pareto_front(a) == ["c=4", "c=8"]
    b = {"c=4": (110.0, 9.0), "c=8": (190.0, 13.0), "c=16": (200.0, 20.0)}
    assert sweep.dominates(b, a) == ("c=4", "c=8", "c=16")
    assert sweep.dominates(a, b) is None
    assert sweep.dominates(a, {"c=64": (1.0, 1.0)}) is None


def test_a_clearly_faster_candidate_is_supported_at_every_common_point(tmp_path: Path):
    root = _session(tmp_path, _claim("output_throughput_tok_s", 0.05))
    a = analyze(load_session(root))
    (h,) = a.hypotheses
    assert h.verdict == "supported"
    assert [p.load for p in h.points] == [f"max_concurrency={c}" for c in (4, 8, 16, 32)]
    assert {p.verdict for p in h.points} == {"supported"}
    # the hypothesis' own numbers are its least favourable point's
    worst = min(h.points, key=lambda p: p.change or 0)
    assert (h.change, h.ci_low, h.ci_high) == (worst.change, worst.ci_low, worst.ci_high)
    assert h.reason.startswith("Supported at all 4 load points both configs share.")
    assert a.family == 4  # the points are the Holm family's members


def test_a_latency_claim_larger_than_the_truth_is_rejected(tmp_path: Path):
    # TPOT is about 1/1.2 of triton's: a 17 % cut, claimed as 40 %
    root = _session(tmp_path, _claim("tpot_ms_median", 0.40, "decrease"))
    (h,) = analyze(load_session(root)).hypotheses
    assert h.verdict == "rejected"
    assert len(h.points) == 4
    assert {p.verdict for p in h.points} == {"rejected"}


def test_at_names_one_point(tmp_path: Path):
    extra = "at = { max_concurrency = 16 }"
    root = _session(tmp_path, _claim("output_throughput_tok_s", 0.05, extra=extra))
    (h,) = analyze(load_session(root)).hypotheses
    assert [p.load for p in h.points] == ["max_concurrency=16"]
    assert h.verdict == "supported"
    cli = load_session(
        root,
        hypotheses=["flashinfer > triton on output_throughput_tok_s by 5% at max_concurrency=8"],
    )
    h2 = analyze(cli).hypotheses[-1]
    assert [p.load for p in h2.points] == ["max_concurrency=8"]


def test_at_that_matches_no_point_lists_the_points(tmp_path: Path):
    root = _session(
        tmp_path, _claim("output_throughput_tok_s", 0.05, extra="at = { max_concurrency = 12 }")
    )
    with pytest.raises(ManifestError) as e:
        analyze(load_session(root))
    assert e.value.cli_line() == (
        "sessionlens.toml:9: error: hypothesis H1: `at max_concurrency=12` must name exactly one "
        "load point of triton on output_throughput_tok_s, but matches 0 (its points: "
        "max_concurrency=4; max_concurrency=8; max_concurrency=16; max_concurrency=32) [manifest]"
    )
    bare = _session(tmp_path / "2", "")
    claim = "flashinfer > triton on output_throughput_tok_s at max_concurrency=3"
    with pytest.raises(UsageError, match="matches 0"):
        analyze(load_session(bare, hypotheses=[claim]))


def test_no_pooling_across_load_points(tmp_path: Path):
    root = _session(tmp_path, "")
    a = analyze(load_session(root))
    tri = next(c for c in a.configs if c.name == "triton")
    whole = tri.metrics["output_throughput_tok_s"]
    assert whole.mean is None  # no level across points
    assert "swept" in whole.warnings
    assert list(tri.points) == [f"max_concurrency={c}" for c in (4, 8, 16, 32)]
    at4 = tri.points["max_concurrency=4"]["output_throughput_tok_s"]
    assert (at4.n, at4.launches) == (3, 3)
    # comparisons pair the points; concurrency, num_prompts and seeds never count as mixed
    assert [c.load for c in a.comparisons if c.metric == "output_throughput_tok_s"] == list(
        tri.points
    )
    assert not [d for d in a.diagnostics if d.code == "mixed-settings"]
    # one noise over every (config, load point) cell
    assert a.noise["output_throughput_tok_s"].configs == 8


def test_mixed_settings_still_fire_within_a_point(tmp_path: Path):
    root = _session(tmp_path, "", launches=2)
    log = root / "flashinfer" / "launch-2" / "bench.log"
    log.write_text(
        log.read_text().replace("model='meta-llama/Llama-3.1-8B-Instruct'", "model='other/model'")
    )
    a = analyze(load_session(root))
    mixed = [str(d) for d in a.diagnostics if d.code == "mixed-settings"]
    assert mixed == [
        "flashinfer: warning: config flashinfer pools runs made with different settings (model: "
        "meta-llama/Llama-3.1-8B-Instruct, other/model); its statistics mix them: give each its own "
        "config (a sub-folder, or [configs] in sessionlens.toml) [mixed-settings]"
    ]


def test_points_only_one_side_has_are_listed_not_compared(tmp_path: Path):
    configs = {"triton": (1.0, [4, 8, 16]), "flashinfer": (1.2, [4, 8, 16, 32])}
    root = _session(tmp_path, _claim("output_throughput_tok_s", 0.05), configs=configs)
    a = analyze(load_session(root))
    assert [(u.config, u.load) for u in a.unpaired if u.metric == "output_throughput_tok_s"] == [
        ("flashinfer", "max_concurrency=32")
    ]
    (h,) = a.hypotheses
    assert len(h.points) == 3
    assert "(max_concurrency=32 only in flashinfer: not compared)" in h.reason


def test_capacities_match_the_interpolation_of_the_printed_means(tmp_path: Path):
    root = _session(tmp_path, "", slo="slo = { tpot_ms_p99 = 20 }", launches=1)
    a = analyze(load_session(root))
    for c in a.configs:
        loads = list(c.points)
        tput = {k: c.points[k]["output_throughput_tok_s"].mean for k in loads}
        tpot = {k: c.points[k]["tpot_ms_p99"].mean for k in loads}
        ok = [k for k in loads if tpot[k] <= 20]
        first_fail = next(k for k in loads if tpot[k] > 20)
        last = ok[-1]
        f = (20 - tpot[last]) / (tpot[first_fail] - tpot[last])
        want = tput[last] + f * (tput[first_fail] - tput[last])
        cap = a.capacity[c.name]["capacity_output_tok_s"]
        assert cap.mean == pytest.approx(want, rel=1e-9)
        assert cap.bound == "interpolated"
        assert (cap.ci_low, cap.ci_high) == (None, None)  # one launch: no interval
        assert c.metrics["capacity_output_tok_s"].n == 1


def test_capacity_claims_have_an_interval_with_launches(tmp_path: Path):
    claim = _claim("capacity_output_tok_s", 0.05)
    root = _session(tmp_path, claim, slo="slo = { tpot_ms_p99 = 25 }", launches=3)
    a = analyze(load_session(root))
    (h,) = a.hypotheses
    assert h.verdict == "supported"
    assert (h.unit, h.n_baseline, h.n_candidate) == ("launch", 3, 3)
    cap = a.capacity["flashinfer"]["capacity_output_tok_s"]
    assert cap.ci_low is not None
    assert cap.ci_low < cap.mean < cap.ci_high


def test_report_of_the_fixture_sweep(capsys: pytest.CaptureFixture[str]):
    fixture = (
        Path(__file__).resolve().parent.parent
        / "fixtures"
        / "sessions"
        / "sweep-attention-backends"
    )
    assert main(["report", str(fixture), "--format", "json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {h["id"]: h["verdict"] for h in doc["hypotheses"]} == {
        "H1": "supported",
        "H2": "rejected",
        "H3": "supported",
        "H4": "supported",
    }
    assert [d["better"] for d in doc["dominance"]] == ["flashinfer"]
    assert main(["report", str(fixture), "-q"]) == 0
    md = capsys.readouterr().out
    assert "## Sweep" in md
    assert "| triton |" in md
    plot = md.split("```text sweep\n", 1)[1].split("```", 1)[0]
    assert re.search(r"A = triton; B = flashinfer", plot)
    assert main(["report", str(fixture), "--format", "html", "-q"]) == 0
    page = capsys.readouterr().out
    assert page.count('class="sessionlens-curves"') == 1
    assert math.isfinite(doc["capacity"]["triton"]["capacity_output_tok_s"]["mean"])
