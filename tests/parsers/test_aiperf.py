"""aiperf: AIPerf and GenAI-Perf JSON, CSV and sweep exports, and rich console tables."""

from __future__ import annotations

from pathlib import Path

from sessionlens import _load
from sessionlens.parsers import aiperf, detect, parse_file, parse_text
from tests.fixture_cases import values

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "aiperf"


def test_json_0_13_maps_tags_units_and_spec_decode() -> None:
    r = parse_file(HERE / "v0.13-profile_export_aiperf-spec-decode.json")
    assert values(r, "ttft_ms_p99") == [68.82]
    assert values(r, "ttft_ms_mean") == [18.26]  # `avg`; the warm-up's 41.2 is not read
    assert values(r, "benchmark_duration_s") == [8.32]  # `sec`
    assert values(r, "accept_length") == [2.57]  # token-weighted: the run's pooled value
    assert values(r, "request_accept_length_p50") == [2.58]  # the per-request distribution
    assert values(r, "draft_acceptance_rate") == [0.5233]  # printed in percent
    assert (values(r, "num_drafts"), values(r, "accepted_tokens")) == ([35142.0], [55208.0])
    info = r.sources[0]
    assert info.settings["aiperf_version"] == "0.13.0"
    block = info.blocks[0].settings
    assert (block["max_concurrency"], block["input_len"], block["output_len"]) == (16, 550, 128)
    assert (block["accept_length_scope"], block["accept_len_counts_bonus"]) == ("benchmark", True)


def test_json_0_1_records_and_genai_perf_are_the_same_names() -> None:
    old = parse_file(HERE / "v0.1-profile_export_aiperf.json")
    assert values(old, "itl_ms_p50") == [7.79]
    assert old.sources[0].blocks[0].settings["max_concurrency"] == 16
    genai = parse_file(HERE / "genai-perf-0.0.16-profile_export_genai_perf.json")
    assert values(genai, "output_throughput_tok_s") == [1238.36]
    s = genai.sources[0].blocks[0].settings
    assert (s["max_concurrency"], s["input_len"], s["output_len"]) == (4, 200, 256)
    assert "request_rate" not in s  # `null`: not set


def test_a_json_cut_mid_number_keeps_the_values_before_it() -> None:
    r = parse_file(HERE / "v0.13-json-cut-mid-value.json")
    assert values(r, "itl_ms_p90") == [11.73]
    assert values(r, "itl_ms_p95") == []  # `12.0` was `12.01`
    codes = [d.code for d in r.diagnostics]
    assert codes[:2] == ["truncated-value", "truncated-output"]


def test_console_at_80_columns_reads_wrapped_labels_and_never_a_cut_value() -> None:
    r = parse_file(HERE / "v0.13-console-80-columns-ansi-prompt.log")
    assert values(r, "ttft_ms_p99") == [68.82]  # `Time to` / `First` / `Token` / `(ms)`
    assert values(r, "e2e_latency_ms_p90") == [1580.83]  # the one cell rich did not cut
    assert values(r, "e2e_latency_ms_mean") == []  # `1,487.…`
    assert values(r, "output_throughput_tok_s") == []  # `10,944…`
    assert values(r, "request_throughput_req_s") == [85.54]  # `Request Throug… (reque…`
    assert values(r, "accept_length") == [2.57]
    cut = [d for d in r.diagnostics if d.code == "truncated-value"]
    assert len(cut) == 6
    assert cut[-1].message == (
        "block 0: the value of 'Output Token Throug… (token… avg' is cut ('10,944…'); "
        "no sample taken"
    )


def test_console_benchmark_duration_line() -> None:
    """`Benchmark Duration: 8.32 sec` under the tables is the run's duration; cut before its
    unit, it is no sample."""
    r = parse_file(HERE / "v0.13-console-80-columns-ansi-prompt.log")
    assert values(r, "benchmark_duration_s") == [8.32]
    text = (HERE / "v0.13-console-80-columns-ansi-prompt.log").read_text()
    cut = text[: text.index("Benchmark Duration: 8.3") + len("Benchmark Duration: 8.3")]
    r = parse_text(cut, format="aiperf", path="cut.log")
    assert values(r, "benchmark_duration_s") == []
    assert r.diagnostics[-2].message == (
        "block 0: the value of 'Benchmark Duration' is cut ('8.3'); no sample taken"
    )


def test_thousands_separators_and_per_sec() -> None:
    r = parse_file(HERE / "genai-perf-0.0.16-thousands-separators.csv")
    assert values(r, "e2e_latency_ms_mean") == [3252.08]  # `"3,252.08"`
    assert values(r, "request_throughput_req_s") == [4.91]  # `(per sec)`
    assert values(r, "successful_requests") == [50.0]


def test_sweep_entries_are_load_points() -> None:
    for name in ("v0.13-profile_export_aiperf_sweep.json", "v0.13-profile_export_aiperf_sweep.csv"):
        r = parse_file(HERE / name)
        blocks = r.sources[0].blocks
        assert [b.settings["max_concurrency"] for b in blocks] == [8, 16, 32], name
        assert values(r, "ttft_ms_p99") == [32.85, 68.82, 190.41], name
        points = _load.load_points((name, b.block, b.settings) for b in blocks)
        assert list(points.values()) == [f"max_concurrency={c}" for c in (8, 16, 32)], name


def test_a_label_cut_by_rich_names_a_tag_only_when_one_fits() -> None:
    assert aiperf._tag_of("request throug\u2026") == "request_throughput"
    assert aiperf._tag_of("output token throug\u2026") == "output_token_throughput"
    assert aiperf._tag_of("output token throug\u2026 per user") == (
        "output_token_throughput_per_user"
    )
    assert aiperf._tag_of("time to\u2026") is None  # first or second token: not told


def test_a_cut_console_row_gives_no_sample() -> None:
    text = (
        "                NVIDIA AIPerf | LLM Metrics\n"
        "┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━┓\n"
        "┃                        Metric ┃    avg ┃\n"
        "┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━┩\n"
        "│ Request Throughput (requests/sec) │  85.5"
    )
    r = parse_text(text, path="x.log")
    assert r.sources[0].format == "aiperf"
    assert values(r, "request_throughput_req_s") == []
    assert [d.code for d in r.diagnostics] == ["truncated-value", "no-samples"]


def test_sniff_leaves_other_formats_alone() -> None:
    assert detect("============ Serving Benchmark Result ============\n", "x.log") != "aiperf"
    assert aiperf.sniff('{"request_throughput": 4.2, "mean_ttft_ms": 12.0}\n', "x.json") == 0
    assert aiperf.sniff("Metric,Value\nfoo,1\n", "notes.csv") == 0


def test_a_genai_perf_export_is_not_a_vllm_save_result() -> None:
    """Its `input_config` has `endpoint_type` as a `--save-result` document does, but its
    `request_throughput` is a metric object, not a number."""
    from sessionlens.parsers import vllm_bench_result

    head = (HERE / "genai-perf-0.0.16-profile_export_genai_perf.json").read_text()
    assert vllm_bench_result.sniff(head, "profile_export_genai_perf.json") == 0.0
    assert detect(head, "profile_export_genai_perf.json") == "aiperf"


def test_per_request_records_are_said_once_and_not_read() -> None:
    """AIPerf's `profile_export.jsonl` holds a record for every request (gigabytes for a
    long run): said at its first record, its bytes hashed and its lines counted, never read
    as JSON token by token (a run's statistics are in `profile_export_aiperf.json`)."""
    import hashlib

    path = HERE / "v0.13-profile_export.jsonl"
    r = parse_file(path)
    assert r.samples.height == 0
    assert [(d.level, d.code, d.line) for d in r.diagnostics] == [("info", "no-samples", 1)]
    assert "per-request records" in r.diagnostics[0].message
    info = r.sources[0]
    assert info.format == "aiperf"
    data = path.read_bytes()
    assert info.lines == data.count(b"\n") + (not data.endswith(b"\n"))
    assert info.sha256 == hashlib.sha256(data).hexdigest()


def test_an_export_on_one_line_is_read_not_taken_for_per_request_records() -> None:
    # (`jq -c` of an export: a whole JSON object on its first line, with no `metadata`)
    import json

    pretty = HERE / "v0.13-profile_export_aiperf-spec-decode.json"
    one_line = json.dumps(json.loads(pretty.read_text()))
    r = parse_text(one_line, format="aiperf", path="profile_export_aiperf.json")
    assert values(r, "ttft_ms_p99") == [68.82]
    assert values(r, "accept_length") == [2.57]
    assert not any(d.code == "no-samples" for d in r.diagnostics)


def test_a_first_line_nested_past_the_json_parsers_depth_is_no_traceback() -> None:
    # the per-request check loads a first line only where it may be a record, and a
    # document nested deeper than `json.loads` goes is read as before (not a RecursionError)
    deep = "[" * 5000 + "]" * 5000
    for head in (
        '{"time_to_first_token": {"unit": "ms", "avg": 25.1}, "x": ',
        '{"metadata": {}, "metrics": ',
    ):
        r = parse_text(head + deep + "}", format="aiperf", path="profile_export_aiperf.json")
        assert not any(d.code == "no-samples" and d.level == "info" for d in r.diagnostics)


def test_an_export_on_one_line_is_detected_as_aiperf() -> None:
    # (its `spec_decode_*` tags, each an object of statistics, are no vLLM result's keys)
    import json

    pretty = HERE / "v0.13-profile_export_aiperf-spec-decode.json"
    one_line = json.dumps(json.loads(pretty.read_text()))
    assert detect(one_line, "profile_export_aiperf.json") == "aiperf"
    r = parse_text(one_line, path="profile_export_aiperf.json")
    assert values(r, "accept_length") == [2.57]
