"""sglang-bench-serving: versions, sweeps, JSONL records, accept-length scope, sniffing."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sessionlens.parsers import detect, parse_file, parse_text, sglang_bench_serving

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats"
HERE = FIXTURES / "sglang-bench-serving"


def values(result, metric: str) -> list[float]:
    c = result.columns
    return [v for m, v in zip(c.metric, c.value, strict=True) if m == metric]


def metrics_of(result, block: int) -> set[str]:
    c = result.columns
    return {m for m, b in zip(c.metric, c.block, strict=True) if b == block}


def test_typo_row_and_missing_rows_of_0_4_0() -> None:
    r = parse_file(HERE / "v0.4.0-typo-compose.log")  # docker-compose prefix on every line
    block = r.sources[0].blocks[0]
    assert block.settings["max_concurrency"] is None  # `Max reqeuest concurrency: not set`
    assert block.settings["request_rate"] == 8.0
    assert values(r, "total_throughput_tok_s") == [9111.29]
    assert values(r, "concurrency") == []  # 0.4.2+ only
    assert values(r, "tpot_ms_p99") == [17.03]


def test_0_4_4_accept_length_is_server_cumulative_and_counts_the_bonus() -> None:
    r = parse_file(HERE / "v0.4.4-eagle3-wrapped-args.log")
    s = r.sources[0].blocks[0].settings
    assert values(r, "accept_length") == [3.21]
    assert s["accept_length_scope"] == "server-cumulative"
    assert s["accept_len_counts_bonus"] is True
    assert not any(m.startswith("tpot_") for m in metrics_of(r, 0))  # no TPOT in 0.4.4-0.5.5
    assert values(r, "itl_ms_max") == [118.2]
    # the hard-wrapped benchmark_args dump is joined again
    assert s["dataset_path"] == "/data/ShareGPT_V3_unfiltered_cleaned_split.json"
    assert (s["max_concurrency"], s["warmup_requests"]) == (1, 1)


def test_newer_rows_peak_percentiles_goodput_and_cache() -> None:
    r = parse_file(HERE / "v0.5.14-plot-cache.log")
    assert values(r, "peak_concurrent_requests") == [33.0]
    assert values(r, "ttft_ms_p95") == [903.44]
    assert values(r, "cache_hit_rate") == [0.375]
    assert r.sources[0].blocks[0].settings["cache_total_cached_tokens"] == 196608
    assert "label" not in r.sources[0].blocks[0].settings  # the plot titles are no label
    r = parse_file(HERE / "v0.5.23-goodput.log")
    assert values(r, "goodput_req_s") == [10.82]
    assert values(r, "slo_attainment") == [0.8672]
    assert values(r, "tpot_slo_attainment") == [0.9141]
    assert r.sources[0].blocks[0].settings["slos_ms"] == "ttft=500 tpot=20"
    assert "label" not in r.sources[0].blocks[0].settings  # the FutureWarning is no label
    assert r.diagnostics == []


def test_sweep_blocks_keep_their_own_run_parameters() -> None:
    r = parse_file(HERE / "sweep-3-blocks.log")
    blocks = r.sources[0].blocks
    assert [b.settings["max_concurrency"] for b in blocks] == [4, 8, 16]
    assert [b.settings["label"] for b in blocks] == [
        f"run {i}/3: --max-concurrency {c}" for i, c in ((1, 4), (2, 8), (3, 16))
    ]
    assert all(b.settings["num_prompts"] == 160 for b in blocks)
    assert values(r, "accept_length") == [2.93, 2.91, 2.9]
    assert sorted(set(r.columns.block)) == [0, 1, 2]


def test_cut_block_keeps_the_rows_before_the_cut() -> None:
    r = parse_file(HERE / "cut-block.log")
    assert values(r, "itl_ms_mean") == [13.19]
    assert values(r, "itl_ms_median") == []
    assert [d.code for d in r.diagnostics] == ["truncated-value", "truncated-output"]


def test_jsonl_records_infinity_server_info_and_damaged_lines() -> None:
    r = parse_file(HERE / "v0.5.8-output.jsonl")
    blocks = r.sources[0].blocks
    assert len(blocks) == 2  # lines 1 and 3; line 2 holds two glued records, line 4 is cut
    s = blocks[0].settings
    assert s["request_rate"] == "inf"  # bare `Infinity` in the file
    assert s["server_info.speculative_num_steps"] == 3
    assert s["server_info.cuda_graph_bs"] == [1, 2, 4, 8, 16, 32]
    assert s["server_info.internal_states.0.avg_spec_accept_length"] == 2.87
    assert s["accept_length_scope"] == "server-cumulative"
    assert values(r, "peak_output_throughput_tok_s") == [2620.0, 2620.0]
    assert values(r, "itl_ms_std") == []  # NaN
    assert [(d.line, d.code) for d in r.diagnostics] == [
        (1, "non-finite-value"),
        (2, "bad-record"),
        (3, "non-finite-value"),
        (4, "truncated-output"),
    ]
    r = parse_file(HERE / "v0.4.4-output.jsonl")
    assert values(r, "accept_length") == [3.12]  # null in the second record: no sample
    assert "accept_length_scope" not in r.sources[0].blocks[1].settings
    assert "input_lens" not in r.sources[0].blocks[0].settings


def test_a_jsonl_line_is_not_json_and_the_reader_continues() -> None:
    rec = (
        '{"backend": "sglang", "request_rate": Infinity, "completed": 4, '
        '"request_throughput": 1.5, "mean_ttft_ms": NaN}'
    )
    r = parse_text(f"{rec}\nKilled\n{rec}\n", path="out.jsonl")
    assert r.sources[0].format is None  # no SGLang-only key: not sniffed as this format
    r = parse_text(f"{rec}\nKilled\n{rec}\n", "sglang-bench-serving", path="out.jsonl")
    assert values(r, "request_throughput_req_s") == [1.5, 1.5]
    assert [str(d) for d in r.diagnostics if d.code == "bad-record"] == [
        "out.jsonl:2: warning: this line is not one JSON record (expecting value at column 1); "
        "skipped [bad-record]"
    ]


def test_server_log_and_benchmark_in_one_terminal_yield_both() -> None:
    r = parse_file(HERE / "server-and-bench-one-terminal.log")
    src = r.sources[0]
    assert src.format == "sglang-bench-serving"
    assert src.embedded_formats == ["sglang-server"]
    assert values(r, "accept_len") == [2.95, 2.88]  # Decode lines (per interval)
    assert values(r, "accept_length") == [2.91]  # the block (cumulative)
    assert src.settings["speculative_num_steps"] == 3  # server_args, source-level
    assert len(src.blocks) == 1
    assert "label" not in src.blocks[0].settings


def test_sniff_scores_title_rows_and_shared_rows() -> None:
    sglang_block = (FIXTURES / "sglang-bench-serving" / "v0.5.6-peak-rows.log").read_text()
    assert sglang_bench_serving.sniff(sglang_block, "x.log") == 1.0
    lines = sglang_block.splitlines()
    at = lines.index(next(x for x in lines if x.startswith("Backend:")))
    no_title = "\n".join(lines[at : at + 5])  # Backend + Traffic request rate, no title
    assert sglang_bench_serving.sniff(no_title, "x.log") == 0.9
    shared = "Mean TTFT (ms):                          12.00\n"  # identical in both producers
    assert sglang_bench_serving.sniff(shared, "x.log") == 0.5
    assert detect(shared, "x.log") == "sglang-bench-serving"  # ties go to SGLang
    vllm = "============ Serving Benchmark Result ============\nSuccessful requests:   5\n"
    assert sglang_bench_serving.sniff(vllm, "x.log") == 0.0
    offline = "====== Offline Throughput Benchmark Result =======\nBackend:    engine\n"
    assert sglang_bench_serving.sniff(offline, "x.log") == 0.0


@pytest.mark.parametrize("name", ["v0.3.0-sharegpt.log", "v0.5.6-peak-rows.log"])
def test_every_sample_is_a_registered_metric_with_a_sane_value(name: str) -> None:
    from sessionlens import metrics

    r = parse_file(HERE / name)
    for m, v in zip(r.columns.metric, r.columns.value, strict=True):
        assert metrics.is_known(m), m
        assert math.isfinite(v)
        assert v >= 0


def test_phase_lines_after_a_block_are_a_phase_block_with_the_next_number() -> None:
    block = "\n".join(
        [
            "============ Serving Benchmark Result ============",
            f"{'Backend:':<40} {'sglang':<10}",
            f"{'Successful requests:':<40} {100:<10}",
            "=" * 50,
            "Target verify:     29.47 ms/cyc  ( 97.0%)",
            "Draft:              0.91 ms/cyc  (  3.0%)",
        ]
    )
    r = parse_text(block + "\n", path="b.log")
    src = r.sources[0]
    assert [(b.block, b.format) for b in src.blocks] == [
        (0, "sglang-bench-serving"),
        (1, "phase-timing"),
    ]
    assert src.embedded_formats == ["phase-timing"]
    got = {(b, m) for b, m in zip(r.columns.block, r.columns.metric, strict=True)}
    assert (1, "cycle_ms") in got
    assert (0, "successful_requests") in got


def test_a_jsonl_record_split_over_two_lines_is_one_record() -> None:
    whole = parse_file(HERE / "v0.5.8-output.jsonl")
    split = parse_file(HERE / "v0.5.8-output-record-split-in-two.jsonl")
    assert split.sources[0].format == "sglang-bench-serving"
    c, w = split.columns, whole.columns
    assert sorted(zip(c.metric, c.value, strict=True)) == sorted(
        zip(w.metric, w.value, strict=True)
    )
    # each value on the line its key is printed on; the record's block starts at its first
    assert split.sources[0].blocks[1].line == 3
    assert {ln for ln, b in zip(c.line, c.block, strict=True) if b == 1} == {3, 4}


def test_a_jsonl_first_part_without_its_rest_is_a_cut_record() -> None:
    line = (HERE / "v0.5.8-output.jsonl").read_text().split("\n")[0]
    head = line[: line.index('"mean_ttft_ms"') + 7]
    r = parse_text(line + "\n" + head + "\n", path="o.jsonl")
    assert [d.message for d in r.diagnostics][-1] == (
        "the last record is cut; no sample was taken from it"
    )
