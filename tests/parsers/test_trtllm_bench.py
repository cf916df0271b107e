"""trtllm-bench: 0.12's tab rows, the PERFORMANCE OVERVIEW layouts, breakdowns and --report_json."""

from __future__ import annotations

from pathlib import Path

from sessionlens.parsers import parse_file, parse_text, trtllm_bench
from tests.fixture_cases import values

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "trtllm-bench"


def test_0_12_tab_rows_and_seconds() -> None:
    r = parse_file(HERE / "v0.12-throughput-tabs.log")
    assert r.sources[0].format == "trtllm-bench"
    assert values(r, "output_throughput_tok_s") == [23405.927228471104]  # `Token Throughput`
    assert values(r, "benchmark_duration_s") == [16.406100739]  # `Total Latency (seconds)`
    s = r.sources[0].blocks[0].settings
    assert (s["tp_size"], s["input_len"], s["output_len"]) == (1, 128.0, 128.0)
    assert s["tensorrt_llm_version"] == "0.12.0"
    assert r.diagnostics == []


def test_total_latency_in_ms_is_the_duration_in_seconds() -> None:
    r = parse_file(HERE / "v0.17-throughput-performance-overview.log")
    assert values(r, "benchmark_duration_s") == [13.573362]
    assert values(r, "concurrency") == [2138.3761]


def test_two_reports_are_two_blocks_and_the_mean_latency_is_read_once() -> None:
    r = parse_file(HERE / "v1.0-pytorch-streaming-eagle3-two-reports.log")
    assert len(r.sources[0].blocks) == 2
    assert values(r, "e2e_latency_ms_mean") == [45283.8893, 62038.9283]
    assert values(r, "ttft_ms_p99") == [2310.4402, 2310.4402]
    assert values(r, "request_accept_length_mean") == [2.4612, 2.4612]  # `[AR] AVERAGE`
    assert r.sources[0].blocks[0].settings["accept_len_counts_bonus"] is True


def test_a_value_cut_mid_number_is_no_sample() -> None:
    r = parse_file(HERE / "v0.19-latency-cut-mid-number.log")
    assert values(r, "e2e_latency_ms_p95") == [1305.1187]
    assert values(r, "e2e_latency_ms_p99") == []  # `1311.4` of a `.4f` value
    assert [d.code for d in r.diagnostics] == ["truncated-value"]


def test_a_fixed_four_decimal_value_at_a_cut_end_is_whole() -> None:
    text = "= PERFORMANCE OVERVIEW\nRequest Throughput (req/sec):      43.2060"
    assert values(parse_text(text, path="x.log"), "request_throughput_req_s") == [43.206]


def test_report_json_uses_the_same_names() -> None:
    r = parse_file(HERE / "v1.0-report_json.json")
    text = parse_file(HERE / "v1.0-pytorch-streaming-eagle3-two-reports.log")
    for metric in ("e2e_latency_ms_p99", "tpot_ms_p50", "output_throughput_tok_s"):
        assert values(r, metric) == values(text, metric)[:1], metric
    s = r.sources[0].blocks[0].settings
    assert (s["decoding_stats.mode"], s["input_len"]) == ("EAGLE3", 1024.0)


def test_sniff() -> None:
    assert trtllm_bench.sniff("= PERFORMANCE OVERVIEW\n", "x.log") == 1.0
    assert trtllm_bench.sniff("============ Serving Benchmark Result ============\n", "x") == 0


def test_per_user_throughput_is_the_generation_speed_as_aiperf_means_it() -> None:
    """AIPerf's per-user throughput is 1/ITL; trtllm-bench's `Per User Output Speed` (JSON
    `token_output_speed_tok_s`) is that quantity. `Per User Output Throughput [w/ ctx]`
    (JSON `performance.output_throughput_per_user_tok_s`) divides by the whole request
    latency, prefill included: not the same figure, so it is not read under that name."""
    log = parse_file(HERE / "v1.0-pytorch-streaming-eagle3-two-reports.log")
    js = parse_file(HERE / "v1.0-report_json.json")
    assert values(log, "output_throughput_per_user_tok_s") == [89.0372, 89.0372]
    assert values(js, "output_throughput_per_user_tok_s") == [89.0372]
    assert "'Per User Output Throughput [w/ ctx] (tps/user)'" in log.diagnostics[0].message
    assert "'performance.output_throughput_per_user_tok_s'" in js.diagnostics[0].message


def test_a_non_finite_json_setting_is_text() -> None:
    """JSON has no infinities: a `--report_json` value of Infinity or NaN is kept as text,
    as every other JSON reader keeps it (it was the float inf, which no JSON report holds)."""
    text = (HERE / "v1.0-report_json.json").read_text()
    text = text.replace(
        '"dtype": "bfloat16"',
        '"dtype": "bfloat16", "max_seq_len": Infinity, "max_batch": -Infinity, "beam": NaN',
        1,
    )
    r = parse_text(text, path="report.json")
    settings = r.sources[0].blocks[0].settings
    assert settings["engine.max_seq_len"] == "inf"
    assert settings["engine.max_batch"] == "-inf"
    assert settings["engine.beam"] == "nan"


def test_a_breakdown_in_seconds_spelled_out_is_read_in_seconds() -> None:
    # `(seconds)` is a unit the section header may name (found by the fuzz run: it raised)
    text = (HERE / "v0.19-latency-cut-mid-number.log").read_text()
    r = parse_text(text.replace("Breakdown (ms)", "Breakdown (seconds)"), path="t.log")
    ms = parse_text(text, path="t.log")
    p50 = [m for m in r.columns.metric if "p50" in m]
    assert p50  # a breakdown row read, in ms whatever the header's unit
    assert values(r, p50[0]) == [v * 1000 for v in values(ms, p50[0])]
