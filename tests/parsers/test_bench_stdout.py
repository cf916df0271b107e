"""bench-stdout: the seed's client output, cut values, missing runs, results section."""

from __future__ import annotations

import pytest

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
    # a newline after it (an editor's, a fence's) does not make it whole: `toks)` is missing
    r = parse_text("Run 1/2: 2048 tokens in 33.88s = 60.4 tok/s (prompt: 3\n", path="x.log")
    assert values(r, "prompt_tokens") == []
    assert values(r, "throughput_tok_s") == [60.4]
    r = parse_text("Run 1/2: 2048 tokens in 33.88s = 60.4 tok/s (prompt: 3)\n", path="x.log")
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


# ------------------------------------------------------------------ pastes and prefixes

PREFIXES = [
    "bench.out:",  # grep over several files
    "bench.out-",  # grep context line
    "2025-06-10T12:00:00.123456789Z ",  # docker -t
    "bench-1  | ",  # docker compose
    "[1,0]<stdout>:",  # mpirun
    "- ",  # Markdown bullet
    "> - ",  # a quoted list
    "Nov 29 10:00:07 ",  # moreutils `ts`
    "Nov  9 10:00:07.123456 ",  # `ts -s`-like fractions, a one-digit day
    "Nov 29 10:00:07 gpu-host python3[1234]: ",  # journalctl
]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_outer_prefixes_keep_header_settings_and_results(prefix: str) -> None:
    text = "".join(prefix + line + "\n" for line in SEED.split("\n")[:-1])
    text += prefix + "  Overall: 10233 tokens in 173.01s = 59.1 tok/s\n"
    r = parse_text(text, path="p.log")
    assert r.sources[0].format == "bench-stdout"
    assert values(r, "throughput_tok_s") == [60.4, 65.5, 50.9, 61.5, 59.5]
    assert r.sources[0].blocks[0].settings == {
        "url": "http://localhost:8000",
        "max_tokens": 2048,
        "num_runs": 5,
        "warmup": 2,
    }
    assert r.sources[0].summary["throughput_tok_s"] == 59.1
    assert r.sources[0].summary["recomputed"] is False
    assert codes(r) == []


def test_number_followed_by_other_text_is_not_read() -> None:
    # `2,048` must not become 2 tokens: a field is complete only before its unit
    line = "Run 1/2: 2,048 tokens in 33.88s = 60.4 tok/s (prompt: 32 toks)\n"
    r = parse_text(line, format="bench-stdout", path="x")
    assert values(r, "output_tokens") == []
    assert values(r, "throughput_tok_s") == []
    assert [d.level for d in r.diagnostics if d.code == "unparsed-line"] == ["warning"]


def test_unit_spellings_and_extra_fields() -> None:
    text = (
        "Run 1/3: 1024 tokens in 12.38 sec = 82.7tok/s (prompt: 32)\n"
        "Run 2/3: 1024 tokens in 12.45s = 82.2 tok/s (prompt: 32 toks), ttft=0.081s\n"
    )
    r = parse_text(text, path="x")
    assert values(r, "throughput_tok_s") == [82.7, 82.2]
    assert values(r, "duration_s") == [12.38, 12.45]
    assert values(r, "prompt_tokens") == [32, 32]


def test_results_rows_several_per_line_and_unit_in_label() -> None:
    text = SEED.replace(
        "  Overall ...",
        "  Min: 50.9 tok/s, Max: 65.5 tok/s\n  Mean throughput (tok/s): 59.6\n"
        "  Per-run: 60.4, 65.5, 50.9, 61.5, 59.5 tok/s\n"
        "  Run 3/5: 50.9 tok/s\n  Overall: 10233 tokens in 173.01s = 59.1 tok/s\n",
    )
    r = parse_text(text, path="x")
    s = r.sources[0].summary
    assert s["results"] == {
        "Min": 50.9,
        "Max": 65.5,
        "Mean throughput (tok/s)": 59.6,
        "Run 3/5": 50.9,
    }
    assert s["throughput_tok_s"] == 59.1
    assert len(r.sources[0].blocks) == 1  # `Run 3/5: 50.9 tok/s` is a row, not a new run
    assert values(r, "throughput_tok_s") == [60.4, 65.5, 50.9, 61.5, 59.5]
    # the list's last number is not the row's value
    assert [d.line for d in r.diagnostics if d.code == "unknown-results"] == [16]


def test_results_without_overall_line_is_recomputed_not_truncated() -> None:
    r = parse_text(SEED.replace("  Overall ...", "  Mean: 59.6 tok/s\n"), path="x")
    assert r.sources[0].summary["recomputed"] is True
    assert "truncated-output" not in codes(r)
    assert "unknown-results" in codes(r)


def test_warmup_run_lines_are_not_samples() -> None:
    text = "Warmup run 1/1: 41 tokens in 0.71s = 57.7 tok/s\nRun 1/1: 2048 tokens in 33.88s = 60.4 tok/s\n"
    r = parse_text(text, path="x")
    assert values(r, "throughput_tok_s") == [60.4]
    assert r.sources[0].record_counts["warmup"] == 1


def test_restarted_run_numbers_open_a_new_invocation() -> None:
    runs = SEED.split("\n")[6:11]
    text = "\n".join(["a.log:" + x for x in runs] + ["b.log:" + x for x in runs[:2]]) + "\n"
    r = parse_text(text, path="g.log")
    assert [b.block for b in r.sources[0].blocks] == [0, 1]
    assert [
        b for b, m in zip(r.columns.block, r.columns.metric, strict=True) if m == "duration_s"
    ] == [0, 0, 0, 0, 0, 1, 1]
    # `Run i/5` announces five runs: the second invocation has only two
    assert any("benchmark 1: 2 of 5 runs" in d.message for d in r.diagnostics)
    assert "duplicate-run" in codes(r)


def test_word_for_word_repeat_is_counted_once() -> None:
    line = "Run 1/2: 2048 tokens in 33.88s = 60.4 tok/s (prompt: 32 toks)\n"
    r = parse_text(line + line, path="x")
    assert values(r, "throughput_tok_s") == [60.4]
    assert len(r.sources[0].blocks) == 1
    assert "duplicate-run" in codes(r)


def test_several_invocations_each_keep_their_summary() -> None:
    first = "\n".join(SEED.split("\n")[:9]) + "\n"  # runs 1-3 of 5, then ^C
    second = SEED.replace("  Overall ...", "  Overall: 10233 tokens in 173.01s = 59.1 tok/s\n")
    r = parse_text(first + second, path="two.log")
    s = r.sources[0].summary
    inv = s["invocations"]
    assert [i["block"] for i in inv] == [0, 1]
    assert inv[0]["recomputed"] is True
    assert inv[0]["runs"] == 3
    assert inv[1] == {
        "block": 1,
        "runs": 5,
        "output_tokens": 10233,
        "duration_s": 173.01,
        "throughput_tok_s": 59.1,
        "recomputed": False,
    }
    assert s["runs"] == 8
    assert s["recomputed"] is True  # one invocation lost its results section
    assert abs(s["throughput_tok_s"] - (6144 + 10233) / (105.38 + 173.01)) < 1e-9
    # the printed overall is checked against its own invocation's runs only
    assert "inconsistent-value" not in codes(r)
    diags = [str(d) for d in r.diagnostics]
    assert (
        "two.log:9: warning: benchmark 0: 3 of 5 runs were read (num_runs=5) [missing-runs]"
        in diags
    )


@pytest.mark.parametrize(
    ("text", "got", "code"),
    [
        ("Run 1/2: 2048 tok", [2048], "truncated-value"),  # cut inside the unit: 2048 is whole
        ("Run 1/2: 2048 tokens in 33.88 se", [2048, 33.88], "truncated-value"),
        ("Run 1/2: 2048 tokens in 33.88s = ", [2048, 33.88], "truncated-value"),
        ("Run 1/2: 2048 tokens in 0.00s = inf tok/s\n", [2048, 0.0], "non-finite-value"),
        ("Run 1/2: 0 tokens in 0.00s = NaN tok/s (prompt: 3)\n", [0, 0.0], "non-finite-value"),
        ("Run 1/2: 2048 tokens in 33.88s = -inf tokens/s\n", [2048, 33.88], "non-finite-value"),
        ("Run 1/2: 2048 tokens in 33.88s = infinite tok/s\n", [2048, 33.88], "unparsed-line"),
        ("Run 1/2: 2048 tokens in 33.88s = n/a tok/s\n", [2048, 33.88], "unparsed-line"),
        ("Run 1/2: 2048 tokens in 33.88s\n", [2048, 33.88], "unparsed-line"),
    ],
)
def test_a_run_line_without_its_throughput_says_why(text: str, got: list[float], code: str) -> None:
    r = parse_text(text, format="bench-stdout", path="x")
    assert list(r.columns.value) == got
    assert codes(r)[0] == code
    if code == "non-finite-value":
        assert "the throughput is " in r.diagnostics[0].message


def test_huge_digit_runs_never_raise() -> None:
    text = (
        f"Run {'9' * 5000}/5: {'1' * 5000} tokens in 1.00s = 1.0 tok/s\nmax_tokens={'7' * 5000}\n"
    )
    parse_text(text, format="bench-stdout", path="x")  # no ValueError from int()


def test_server_lines_in_the_same_terminal_go_to_their_own_reader() -> None:
    sglang = (
        "[2025-10-06 09:04:10 TP0] Decode batch. #running-req: 1, #token: 2400, token usage: "
        "0.02, accept len: 1.98, cuda graph: True, gen throughput (token/s): 59.80, #queue-req: 0"
    )
    vllm = (
        "(APIServer pid=1) INFO 05-12 08:21:03 [loggers.py:118] Engine 000: Avg prompt "
        "throughput: 2.4 tokens/s, Avg generation throughput: 31.7 tokens/s, Running: 1 reqs, "
        "Waiting: 0 reqs, GPU KV cache usage: 0.3%, Prefix cache hit rate: 0.0%"
    )
    text = SEED.replace(
        "  Overall ...", f"{sglang}\n{vllm}\n  Overall: 10233 tokens in 173.01s = 59.1 tok/s\n"
    )
    text += "Target verify:     29.47 ms/cyc  ( 97.0%)\n"
    r = parse_text(text, path="mixed.log")
    src = r.sources[0]
    assert src.format == "bench-stdout"
    assert src.embedded_formats == ["phase-timing", "sglang-server", "vllm-server"]
    got = dict(zip(r.columns.metric, r.columns.value, strict=False))
    assert got["accept_len"] == 1.98
    assert got["prompt_throughput_tok_s"] == 2.4
    assert got["phase_target_verify_ms_per_cycle"] == 29.47
    assert src.summary["throughput_tok_s"] == 59.1  # the results section is not broken
    assert codes(r) == []
    # the phase block and the invocation have their own block numbers
    assert [(b.block, b.format) for b in src.blocks] == [(0, "bench-stdout"), (1, "phase-timing")]


def test_a_client_logging_with_timestamps_is_not_taken_for_a_server() -> None:
    stamp = "[2025-10-06 09:03:40] "
    text = "".join(stamp + line + "\n" for line in SEED.split("\n")[:-1])
    text += stamp + "  Overall: 10233 tokens in 173.01s = 59.1 tok/s\n"
    r = parse_text(text, path="logged.log")
    assert r.sources[0].format == "bench-stdout"
    assert values(r, "throughput_tok_s") == [60.4, 65.5, 50.9, 61.5, 59.5]
    assert r.sources[0].blocks[0].settings["num_runs"] == 5
    assert r.sources[0].summary["throughput_tok_s"] == 59.1
    assert r.sources[0].embedded_formats == []


def test_a_settings_line_cut_in_a_key_keeps_the_pairs_before() -> None:
    text = "Benchmarking http://localhost:8000\n  max_tokens=2048, num_runs=5, warm"
    result = parse_text(text, format="bench-stdout", path="b.log")
    (src,) = result.sources
    settings = src.blocks[0].settings
    assert settings["max_tokens"] == 2048
    assert settings["num_runs"] == 5
    assert "warm" not in settings
    assert "warmup" not in settings
    assert "truncated-settings" in [d.code for d in result.diagnostics if d.line == 2]
