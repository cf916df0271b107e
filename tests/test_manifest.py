"""sessionlens.toml and the --hypothesis mini-language: values and exact error lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionlens.errors import ManifestError, UsageError
from sessionlens.manifest import load, parse_hypothesis

GOOD = """\
title = "t"
alpha = 0.1
target_tok_s = 150
exclude = ["notes/*"]

[configs.a]
paths = ["a/*"]
settings = { nccl = { proto = "LL" } }

[configs.b]
label = "B!"

[[hypotheses]]
claim = "b is faster"
baseline = "a"
candidate = "b"
min_effect = 0.2

[[hypotheses]]
id = "X"
metric = "accept_len"
baseline = "a"
candidate = "b"
direction = "decrease"
varies = ["k"]
"""


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "sessionlens.toml"
    p.write_text(text)
    return p


def test_good_manifest(tmp_path: Path) -> None:
    m = load(write(tmp_path, GOOD))
    assert m.title == "t"
    assert m.alpha == 0.1
    assert m.target_tok_s == 150
    assert [c.name for c in m.configs] == ["a", "b"]
    assert m.configs[0].settings == {"nccl.proto": "LL"}
    assert m.configs[1].paths == ["b/*"]
    assert m.configs[1].label == "B!"
    h1, h2 = m.hypotheses
    assert (h1.id, h1.metric, h1.direction, h1.min_effect) == (
        "H1",
        "throughput_tok_s",
        "increase",
        0.2,
    )
    assert (h2.id, h2.metric, h2.direction, h2.min_effect, h2.varies) == (
        "X",
        "accept_len",
        "decrease",
        0.02,
        ["k"],
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            GOOD.replace("alpha = 0.1", "alpah = 0.1"),
            "sessionlens.toml:2: error: unknown key 'alpah' (known: alpha, configs, exclude, "
            "hypotheses, launch_noise, slo, target_tok_s, title); did you mean 'alpha'? [manifest]",
        ),
        (
            GOOD.replace('candidate = "b"\nmin_effect', 'candidate = "c"\nmin_effect'),
            "sessionlens.toml:16: error: unknown config 'c' in candidate (configs: a, b) [manifest]",
        ),
        (
            GOOD.replace('direction = "decrease"', 'direction = "down"'),
            'sessionlens.toml:24: error: direction must be "increase" or "decrease", not \'down\' '
            "[manifest]",
        ),
        (
            GOOD.replace('label = "B!"', 'lable = "B!"'),
            "sessionlens.toml:11: error: unknown key 'lable' in config 'b' (known: format, label, "
            "launch_per_file, paths, settings); did you mean 'label'? [manifest]",
        ),
        (
            GOOD.replace('title = "t"', 'title = "t'),
            "sessionlens.toml:1: error: invalid TOML: Illegal character '\\n' [manifest]",
        ),
        (
            GOOD.replace("min_effect = 0.2", "min_effect = -1"),
            "sessionlens.toml:17: error: min_effect must be a fraction from 0 to 1000 (0.20 for 20 %), "
            "not -1 "
            "[manifest]",
        ),
        *(  # TOML's own inf and nan: the verdict rule cannot use them
            (
                GOOD.replace("min_effect = 0.2", f"min_effect = {bad}"),
                "sessionlens.toml:17: error: min_effect must be a fraction from 0 to 1000 (0.20 for 20 %), "
                f"not {bad} [manifest]",
            )
            for bad in ("inf", "nan")
        ),
    ],
)
def test_manifest_errors(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ManifestError) as info:
        load(write(tmp_path, text), shown="sessionlens.toml")
    assert info.value.cli_line() == expected


@pytest.mark.parametrize(
    ("text", "cand", "base", "metric", "direction", "effect"),
    [
        ("b > a", "b", "a", "throughput_tok_s", "increase", 0.02),
        (
            "eagle3-decode > eagle3-prefill on throughput_tok_s by 20%",
            "eagle3-decode",
            "eagle3-prefill",
            "throughput_tok_s",
            "increase",
            0.2,
        ),
        ("b<a on verify_ms_per_cycle by 10 %", "b", "a", "verify_ms_per_cycle", "decrease", 0.1),
        ("b > a by 2.5%", "b", "a", "throughput_tok_s", "increase", 0.025),
        # folder names with spaces, quoted
        (
            '"eagle3 décodé" > base by 5%',
            "eagle3 décodé",
            "base",
            "throughput_tok_s",
            "increase",
            0.05,
        ),
        ("b < 'my base' on ttft_ms_p99", "b", "my base", "ttft_ms_p99", "decrease", 0.02),
    ],
)
def test_hypothesis_language(
    text: str, cand: str, base: str, metric: str, direction: str, effect: float
) -> None:
    h = parse_hypothesis(text, "H4")
    assert (h.id, h.candidate, h.baseline, h.metric, h.direction) == (
        "H4",
        cand,
        base,
        metric,
        direction,
    )
    assert h.min_effect == pytest.approx(effect)
    assert h.claim == text.strip()


@pytest.mark.parametrize("text", ["b >> a", "b = a", "b > a by fast", "> a", '"a b > c', "a b > c"])
def test_hypothesis_language_errors(text: str) -> None:
    with pytest.raises(UsageError, match="cannot read --hypothesis"):
        parse_hypothesis(text, "H1")


def test_an_effect_beyond_float_range_is_refused() -> None:
    with pytest.raises(UsageError, match="too large"):
        parse_hypothesis("b > a by " + "9" * 310 + "%", "H1")


def test_a_config_compared_with_itself_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="itself"):
        parse_hypothesis("a > a by 5%", "H1")
    p = write(tmp_path, '[[hypotheses]]\nbaseline = "a"\ncandidate = "a"\n')
    with pytest.raises(ManifestError, match="itself"):
        load(p)


def test_ten_thousand_hypotheses_load_in_linear_time(tmp_path: Path) -> None:
    """Issue 19, case 14: finding the line of the i-th [[hypotheses]] scanned the file from
    the top, so 10,000 took 33 s to load. A line index makes it linear: about 1 s here,
    bounded at 8 s for slow machines (quadratic is 30 s and more)."""
    import time

    body = "".join(
        f'\n[[hypotheses]]\nclaim = "h{i}"\nbaseline = "a"\ncandidate = "b"\nmin_effect = 0.05\n'
        for i in range(10_000)
    )
    p = write(tmp_path, "[configs.a]\n[configs.b]\n" + body)
    start = time.perf_counter()
    manifest = load(p)
    took = time.perf_counter() - start
    assert len(manifest.hypotheses) == 10_000
    assert manifest.hypotheses[-1].line == 2 + 6 * 9_999 + 2  # each table still has its line
    assert took < 8, f"{took:.1f} s"
