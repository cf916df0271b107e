"""vllm-bench-serve: old and new layouts, P99.9, .2f peak requests, spec section, forks."""

from __future__ import annotations

from pathlib import Path

from sessionlens.parsers import detect, parse_file, parse_text, vllm_bench_serve

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "vllm-bench-serve"


def values(result, metric: str) -> list[float]:
    c = result.columns
    return [v for m, v in zip(c.metric, c.value, strict=True) if m == metric]


def test_old_benchmark_serving_layout() -> None:
    r = parse_file(HERE / "benchmark_serving-2024.log")
    assert r.sources[0].format == "vllm-bench-serve"
    assert values(r, "input_throughput_tok_s") == [6697.67]  # only the old layout prints it
    assert values(r, "total_throughput_tok_s") == []
    assert values(r, "itl_ms_p99") == [312.06]
    s = r.sources[0].blocks[0].settings
    assert s["request_rate"] == "inf"  # preamble `Traffic request rate: inf`, outside the block
    assert s["num_prompts"] == 1000


def test_0_10_layout_percentiles_peak_and_capital_t() -> None:
    r = parse_file(HERE / "v0.10.2-serve.log")
    assert values(r, "ttft_ms_p999") == [233.09]  # `P99.9 TTFT (ms)`
    assert values(r, "e2e_latency_ms_p999") == [11402.01]  # `P99.9 E2EL (ms)`
    assert values(r, "e2e_latency_ms_mean") == [8952.47]
    assert values(r, "peak_concurrent_requests") == [71.0]  # printed `71.00` by vLLM
    assert values(r, "total_throughput_tok_s") == [6081.96]  # `Total Token throughput`
    s = r.sources[0].blocks[0].settings
    assert (s["max_concurrency"], s["request_rate"], s["burstiness"]) == (64, 4.0, 1.0)
    assert s["percentile_metrics"] == "ttft,tpot,itl,e2el"  # from the Namespace dump
    assert "dispatch_function" not in s  # `<function ...>` is not a scalar
    assert r.diagnostics == []


def test_speculative_section_counts_the_bonus_and_covers_the_benchmark_only() -> None:
    r = parse_file(HERE / "v0.18-spec-decoding.log")
    s = r.sources[0].blocks[0].settings
    assert (s["accept_length_scope"], s["accept_len_counts_bonus"]) == ("benchmark", True)
    assert values(r, "accept_length") == [2.44]
    assert values(r, "draft_acceptance_rate") == [0.7185]
    assert values(r, "num_drafts") == [52339.0]
    assert values(r, "position_acceptance_rate_1") == [0.616]
    assert values(r, "position_acceptance_rate_2") == []  # `41.3` at the cut end of the file
    assert values(r, "failed_requests") == [0.0]
    assert [str(d) for d in r.diagnostics] == [
        f"{HERE / 'v0.18-spec-decoding.log'}:42: warning: block 0: the value of 'Position 2' "
        "is cut ('41.3'); no sample taken [truncated-value]",
        f"{HERE / 'v0.18-spec-decoding.log'}:9: warning: block 0 is cut: the file ends inside "
        "it; the rows before the cut are kept [truncated-output]",
    ]


def test_spec_section_pasted_alone_is_vllm() -> None:
    r = parse_file(HERE / "spec-section-alone.txt")
    assert r.sources[0].format == "vllm-bench-serve"
    assert values(r, "accept_length") == [2.36]
    assert r.sources[0].blocks[0].settings["label"] == (
        "vLLM 0.18, EAGLE-3 num_speculative_tokens=2, concurrency 8"
    )


def test_fork_rows_are_skipped_with_one_note() -> None:
    r = parse_file(HERE / "fork-extra-rows.log")
    assert values(r, "total_throughput_tok_s") == [805.7]
    assert len(r.diagnostics) == 1
    d = r.diagnostics[0]
    assert (d.code, d.level, d.line) == ("unknown-row", "info", 9)
    assert d.message == (
        "block 0: 4 rows not read: 'Average input length', 'Average output length', "
        "'GPU Memory: Mean GPU memory (GB)', 'GPU Memory: Max GPU memory (GB)'"
    )


def test_sniff_needs_a_vllm_marker_and_yields_to_sglang() -> None:
    title = "============ Serving Benchmark Result ============\n"
    assert vllm_bench_serve.sniff(title + "Successful requests:   5\n", "x") == 1.0
    assert vllm_bench_serve.sniff("Mean E2EL (ms):        12.00\n", "x") == 0.9
    assert vllm_bench_serve.sniff(title + "Backend:      vllm\n", "x") == 0.0  # SGLang layout
    assert detect(title + "Backend:      vllm\n", "x") == "sglang-bench-serving"
    assert vllm_bench_serve.sniff("Mean TTFT (ms):        12.00\n", "x") == 0.45


def test_vllm_server_lines_in_the_same_terminal_go_to_the_embedded_reader() -> None:
    text = (HERE / "v0.18-spec-decoding.log").read_text() + "\n"
    text = text.replace(
        "Starting initial single prompt test run...",
        "(APIServer pid=7) INFO 03-20 15:41:00 [loggers.py:123] Engine 000: Avg prompt "
        "throughput: 2.4 tokens/s, Avg generation throughput: 31.7 tokens/s, Running: 1 reqs, "
        "Waiting: 0 reqs, GPU KV cache usage: 0.3%, Prefix cache hit rate: 0.0%",
    )
    r = parse_text(text, path="x.log")
    assert r.sources[0].format == "vllm-bench-serve"
    assert values(r, "gen_throughput_tok_s") == [31.7]
    assert r.sources[0].embedded_formats == ["vllm-server"]
    assert values(r, "accept_length") == [2.44]


def test_save_result_results_no_metric_takes_are_listed_not_settings() -> None:
    """Probe requests (0.27+), client-side queueing (0.32+), diffusion (0.25+) and pooling
    (0.29+) figures are outcomes: as settings they would be confounds. `--metadata` keys
    stay settings; `rtfx` (0.17+, audio) is read as the printed block's RTFx row is."""
    import json

    record = {
        "backend": "openai",
        "max_concurrency": 16,
        "nccl_proto": "LL",  # `--metadata nccl_proto=LL`
        "completed": 200,
        "request_throughput": 11.37,
        "output_throughput": 1457.0,
        "mean_ttft_ms": 41.5,
        "rtfx": 214.7712,
        "probe_completed": 10,
        "probe_median_e2el_ms": 41.2,
        "p99_client_queue_time_ms": 3.5,
        "mean_e2el_including_client_queue_ms": 120.0,
        "diffusion_mean_steps": 4.0,
        "input_sequence_throughput": 9.5,
        "total_input_sequences": 200,
    }
    r = parse_text(json.dumps(record) + "\n", "vllm-bench-serve", path="r.json")
    (block,) = r.sources[0].blocks
    assert {k for k in block.settings if k in record} == {
        "backend",
        "max_concurrency",
        "nccl_proto",
    }
    got = dict(zip(r.columns.metric, r.columns.value, strict=True))
    assert got["rtfx"] == 214.7712
    assert got["output_throughput_tok_s"] == 1457.0
    assert [str(d) for d in r.diagnostics] == [
        "r.json:1: info: record 0: 7 results not read: 'probe_completed', "
        "'probe_median_e2el_ms', 'p99_client_queue_time_ms', "
        "'mean_e2el_including_client_queue_ms', 'diffusion_mean_steps' and 2 more "
        "[unknown-field]"
    ]


def _pairs(result) -> list[tuple[str, float]]:
    c = result.columns
    return list(zip(c.metric, c.value, strict=True))


def test_a_block_pasted_as_comments_reads_as_the_block() -> None:
    """Every line behind `# ` (a block kept in a script): the field layer strips the marker."""
    plain = parse_file(HERE / "v0.10.2-serve.log")
    r = parse_file(HERE / "commented-paste-hash-prefix.log")
    assert r.sources[0].format == "vllm-bench-serve"
    assert _pairs(r) == _pairs(plain)
    assert r.sources[0].blocks[0].settings.get("label") == (
        "vllm bench serve, llama-3.1-8b, H100, --max-concurrency 64 (2025-09-20)"
    )


def test_a_block_behind_pytest_log_prefixes_reads_as_the_block() -> None:
    plain = parse_file(HERE / "v0.10.2-serve.log")
    r = parse_file(HERE / "pytest-log-prefix.log")
    assert _pairs(r) == _pairs(plain)
    assert r.diagnostics == []


def test_the_2023_benchmark_serving_script() -> None:
    """`Throughput: 5.99 requests/s` and latencies in seconds, read in ms."""
    r = parse_file(HERE / "benchmark_serving-2023-throughput-requests.log")
    assert r.sources[0].format == "vllm-bench-serve"
    assert _pairs(r) == [
        ("benchmark_duration_s", 166.94),
        ("request_throughput_req_s", 5.99),
        ("e2e_latency_ms_mean", 24310.0),
        ("latency_per_token_ms_mean", 60.0),
        ("latency_per_output_token_ms_mean", 130.0),
    ]
    assert r.sources[0].blocks[0].settings["request_rate"] == 4.0  # the Namespace's


def test_a_throughput_row_in_another_unit_is_not_the_request_rate() -> None:
    text = "Total time: 166.94 s\nThroughput: 5.99 requests/s\nAverage latency: 24.31 s\n"
    other = text.replace("5.99 requests/s", "5.99 tokens/s")
    r = parse_text(other, format="vllm-bench-serve", path="x.log")
    assert values(r, "request_throughput_req_s") == []
    assert [d.code for d in r.diagnostics] == ["unknown-row"]


def test_a_2023_value_cut_before_its_unit_is_no_sample() -> None:
    """The 2023 script's rows carry their unit (`0.06 s`): cut before it, the scale is
    unknown, so no sample (found by the CI property test: 0.06 was kept as 0.06 ms)."""
    text = (HERE / "benchmark_serving-2023-throughput-requests.log").read_text()
    for marker, metric in (
        ("0.06", "latency_per_token_ms_mean"),
        ("5.99 req", "request_throughput_req_s"),
    ):
        cut = text[: text.index(marker) + len(marker)]
        r = parse_text(cut, format="vllm-bench-serve", path="cut.log")
        assert values(r, metric) == []
        assert "truncated-value" in [d.code for d in r.diagnostics]
    whole = parse_text(text, format="vllm-bench-serve", path="whole.log")
    assert values(whole, "latency_per_token_ms_mean") == [60.0]
