"""bench-stdout: the seed's client output, cut values, missing runs, results section."""

from __future__ import annotations

from sessionlens.parsers import parse_text

SEED = """Benchmarking http://localhost:8000
  max_tokens=2048, num_runs=5, warmup=2

  Warmup 1/2 done (41 tokens)
  Warmup 2/2 done (41 tokens)

  Run 1/5: 2048 tokens in 33.88s = 60.4 tok/s (prompt: 32 toks)
  Run 2/5: 2048 tokens in 31.26s = 65.5 tok/s (prompt: 31 toks)
  Run 3/5: 2048 tokens in 40.24s = 50.9 tok/s (prompt: 26 toks)
  Run 4/5: 2041 tokens in 33.21s = 61.5 tok/s (prompt: 28 toks)
  Run 5/5: 2048 tokens in 34.42s = 59.5 tok/s (prompt: 34 toks)

  ========== Results ==========
  Overall ..."""


def values(result, metric: str) -> list[float]:
    return [
        v for m, v in zip(result.columns.metric, result.columns.value, strict=True) if m == metric
    ]


def codes(result) -> list[str]:
    return [d.code for d in result.diagnostics]


def test_seed_runs_and_recomputed_summary() -> None:
    r = parse_text(SEED, path="seed.log")
    assert r.sources[0].format == "bench-stdout"
    assert values(r, "throughput_tok_s") == [60.4, 65.5, 50.9, 61.5, 59.5]
    assert values(r, "output_tokens") == [2048, 2048, 2048, 2041, 2048]
    assert values(r, "prompt_tokens") == [32, 31, 26, 28, 34]
    s = r.sources[0].summary
    assert s["recomputed"] is True
    assert s["runs"] == 5
    assert s["output_tokens"] == 10233
    assert abs(s["duration_s"] - 173.01) < 1e-9
    assert abs(s["throughput_tok_s"] - 10233 / 173.01) < 1e-12
    assert "truncated-output" in codes(r)
    assert r.columns.run == [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4 + [5] * 4
    assert r.columns.line[0] == 7


def test_settings_from_header() -> None:
    r = parse_text(SEED, path="seed.log")
    block = r.sources[0].blocks[0]
    assert block.settings["max_tokens"] == 2048
    assert block.settings["num_runs"] == 5
    assert block.settings["warmup"] == 2


def test_value_cut_mid_number_gives_no_sample() -> None:
    text = SEED.split("  Run 5/5")[0] + "  Run 5/5: 2048 tokens in 34.42s = 59."
    r = parse_text(text, path="cut.log")
    assert values(r, "throughput_tok_s") == [60.4, 65.5, 50.9, 61.5]
    assert values(r, "duration_s")[-1] == 34.42  # complete fields before the cut are kept
    assert values(r, "output_tokens")[-1] == 2048
    diags = [str(d) for d in r.diagnostics]
    assert (
        "cut.log:11: warning: run 5: throughput_tok_s is cut ('59.'); no sample taken "
        "[truncated-value]" in diags
    )
    assert "truncated-output" in codes(r)


def test_short_decimals_are_cut_even_with_newline() -> None:
    r = parse_text("Run 1/2: 2048 tokens in 34.4\n", path="x.log")
    assert values(r, "output_tokens") == [2048]
    assert values(r, "duration_s") == []
    assert "truncated-value" in codes(r)


def test_integer_at_end_of_cut_line_is_cut() -> None:
    r = parse_text("Run 1/2: 2048 tokens in 33.88s = 60.4 tok/s (prompt: 3", path="x.log")
    assert values(r, "throughput_tok_s") == [60.4]
    assert values(r, "prompt_tokens") == []
    r = parse_text("Run 1/2: 2048 tokens in 33.88s = 60.4 tok/s (prompt: 3\n", path="x.log")
    assert values(r, "prompt_tokens") == [3]


def test_missing_runs_and_inconsistent_value() -> None:
    text = (
        "Benchmarking http://localhost:8000\n  max_tokens=2048, num_runs=3, warmup=0\n"
        "  Run 1/3: 2048 tokens in 33.88s = 70.4 tok/s (prompt: 32 toks)\n"
    )
    r = parse_text(text, path="m.log")
    diags = [str(d) for d in r.diagnostics]
    assert any("[missing-runs]" in d and "1 of 3 runs" in d for d in diags)
    assert any("[inconsistent-value]" in d and "60.4 tok/s" in d for d in diags)
    assert values(r, "throughput_tok_s") == [70.4]  # the printed value is kept


def test_complete_results_section_is_used() -> None:
    text = SEED.replace(
        "  Overall ...",
        "  Overall: 10233 tokens in 173.01s = 59.1 tok/s\n  Mean of runs: 59.6 tok/s\n",
    )
    r = parse_text(text, path="ok.log")
    s = r.sources[0].summary
    assert s["recomputed"] is False
    assert s["throughput_tok_s"] == 59.1
    assert s["results"] == {"Mean of runs": 59.6}
    assert "truncated-output" not in codes(r)


def test_several_invocations_are_blocks() -> None:
    r = parse_text(SEED + "\n" + SEED, path="two.log")
    assert len(r.sources[0].blocks) == 2
    assert sorted(set(r.columns.block)) == [0, 1]
    assert len(values(r, "throughput_tok_s")) == 10


def test_noise_is_cleaned() -> None:
    noisy = "\x1b[32m  Run 1/1: 2048 tokens in 33.88s = 60.4 tok/s (prompt: 32 toks)\x1b[0m\r\n"
    noisy += "> [1;36m  Run 2/2: 2048 tokens in 31.26s = 65.5 tok/s (prompt: 31 toks)[0m\n"
    r = parse_text(noisy, path="n.log")
    assert values(r, "throughput_tok_s") == [60.4, 65.5]
