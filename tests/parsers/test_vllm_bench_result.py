"""vllm-bench-result: throughput / latency consoles, their JSON, save-result documents."""

from __future__ import annotations

import json
from pathlib import Path

from sessionlens.parsers import detect, parse_file, parse_text

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "vllm-bench-result"
SERVE = HERE.parent / "vllm-bench-serve"


def values(result, metric: str) -> list[float]:
    c = result.columns
    return [v for m, v in zip(c.metric, c.value, strict=True) if m == metric]


def test_throughput_console_with_its_namespace_and_engine_lines() -> None:
    r = parse_file(HERE / "throughput-0.8.5-namespace-engine-lines.log")
    info = r.sources[0]
    assert info.format == "vllm-bench-result"
    assert values(r, "request_throughput_req_s") == [22.01]
    assert values(r, "total_throughput_tok_s") == [25356.12]
    assert values(r, "output_throughput_tok_s") == [2817.35]
    s = info.blocks[0].settings
    # the load point's keys come from `print(args)`; the totals are the block's settings
    assert (s["input_len"], s["output_len"], s["dataset_name"]) == (1024, 128, "random")
    assert (s["total_input_tokens"], s["total_output_tokens"]) == (1024000, 128000)
    assert "dispatch_function" not in s
    # the in-process engine's lines are vllm-server's, read by its reader
    assert info.embedded_formats == ["vllm-server"]
    assert info.settings["vllm_version"] == "0.8.5"
    assert r.diagnostics == []


def test_the_2023_throughput_line_has_one_token_rate_prompt_and_output() -> None:
    r = parse_file(HERE / "throughput-2023-two-rates.log")
    assert values(r, "total_throughput_tok_s") == [2306.2]
    assert values(r, "output_throughput_tok_s") == []
    assert r.sources[0].blocks[0].settings["num_prompts"] == 1000


def test_a_throughput_line_cut_in_a_rate_keeps_the_rates_before_it() -> None:
    text = "Throughput: 22.01 requests/s, 25356.12 total tokens/s, 2817.3"
    r = parse_text(text, path="t.log")
    assert r.sources[0].format == "vllm-bench-result"
    assert values(r, "request_throughput_req_s") == [22.01]
    assert values(r, "output_throughput_tok_s") == []
    assert [str(d) for d in r.diagnostics] == [
        "t.log:1: warning: block 0: the throughput line ends in '2817.3' [truncated-value]"
    ]


def test_latency_console_pasted_with_crlf_and_colour() -> None:
    r = parse_file(HERE / "latency-0.11-crlf-ansi-eagle3.log")
    assert values(r, "total_latency_s_mean") == [1.8834126770663415]
    assert values(r, "total_latency_s_p99") == [1.9312468101549894]
    assert r.sources[0].blocks[0].line == 7  # one block: the average and its percentiles
    assert len(r.sources[0].blocks) == 1
    assert r.sources[0].settings["speculative_algorithm"] == "eagle3"  # the engine line's
    assert r.diagnostics == []


def test_a_latency_value_without_its_unit_is_cut() -> None:
    r = parse_text("Avg latency: 1.88 seconds\n10% percentile latency: 1.862", path="l.log")
    assert values(r, "total_latency_s_mean") == [1.88]
    assert values(r, "total_latency_s_p10") == []
    assert [d.code for d in r.diagnostics] == ["truncated-value"]


def test_throughput_output_json() -> None:
    r = parse_file(HERE / "throughput-output.json")
    assert values(r, "benchmark_duration_s") == [45.43389823101461]
    assert values(r, "request_throughput_req_s") == [22.009998791839523]
    s = r.sources[0].blocks[0].settings
    assert (s["num_prompts"], s["total_num_tokens"]) == (1000, 1152000)
    # each value on the line of its key
    assert list(r.columns.line) == [2, 5, 6]


def test_a_cut_latency_json_keeps_the_entries_before_the_cut() -> None:
    path = HERE / "latency-output-cut-in-percentiles.json"
    r = parse_file(path)
    assert values(r, "total_latency_s_mean") == [1.8862833333333333]
    assert list(r.columns.run)[:7] == [None, 1, 2, 3, 4, 5, 6]  # a run per timed iteration
    assert list(r.columns.line)[:3] == [2, 4, 5]  # each value on its own line
    # the percentiles before the cut are whole; `"75": 1.89` (of 1.89035) is not
    assert values(r, "total_latency_s_p50") == [1.879]
    assert values(r, "total_latency_s_p75") == []
    assert [str(d) for d in r.diagnostics] == [
        f"{path}:15: warning: the value of 'percentiles.75' is cut; no sample taken "
        "[truncated-value]",
        f"{path}:1: warning: the JSON document ends early; the entries before the cut are "
        "kept [truncated-output]",
    ]


def test_a_document_line_pasted_in_between_is_no_part_of_it() -> None:
    doc = '{\n    "elapsed_time": 45.4,\n    "num_requests": 1000,\n    "tokens_per_second": 25355.5\n}\n'
    noisy = doc.replace(
        '    "num', 'INFO:     127.0.0.1:1 - "GET /metrics HTTP/1.1" 200 OK\n    "num'
    )
    for text in (doc, noisy, doc[: doc.rindex("}")]):  # the last line whole: its value too
        assert values(parse_text(text, path="t.json"), "total_throughput_tok_s") == [25355.5]
    cut = parse_text(doc[: doc.index("25355.5") + 6], path="t.json")  # `25355.`
    assert values(cut, "total_throughput_tok_s") == []
    assert values(cut, "benchmark_duration_s") == [45.4]
    assert [d.code for d in cut.diagnostics] == ["truncated-value", "truncated-output"]


def test_a_document_left_open_ends_at_the_console_result_after_it() -> None:
    """A `{` pasted alone (or a document cut) and then the console's output: the result
    lines are read, not taken for lines pasted inside the document."""
    console = (HERE / "throughput-0.8.5-namespace-engine-lines.log").read_text()
    for head in ("{\n", '{\n    "elapsed_time": 45.4,\n'):
        r = parse_text(head + console, path="t.log")
        assert values(r, "request_throughput_req_s") == [22.01]
        assert values(r, "output_throughput_tok_s") == [2817.35]
        assert r.sources[0].blocks[-1].settings["input_len"] == 1024
        assert [d.code for d in r.diagnostics] == ["truncated-output"]


def test_save_result_document_reads_as_the_one_line_record_does() -> None:
    """The split: one line is vllm-bench-serve's (since 0.1), a document over several
    lines this format's; both are read by the same record reader."""
    doc = (HERE / "save-result-0.18-spec-jq.json").read_text()
    pretty = parse_text(doc, path="r.json")
    one_line = parse_text(json.dumps(json.loads(doc)), path="r.json")
    assert pretty.sources[0].format == "vllm-bench-result"
    assert one_line.sources[0].format == "vllm-bench-serve"
    assert sorted(zip(pretty.columns.metric, pretty.columns.value, strict=True)) == sorted(
        zip(one_line.columns.metric, one_line.columns.value, strict=True)
    )
    s = pretty.sources[0].blocks[0].settings
    assert (s["accept_length_scope"], s["accept_len_counts_bonus"]) == ("benchmark", True)
    assert (s["max_concurrency"], s["request_rate"]) == (16, "inf")
    assert values(pretty, "accept_length") == [1 + 30195 / 21011]
    for case in SERVE.glob("*.json*"):
        if case.suffix in (".json", ".jsonl"):
            assert detect(case.read_text(), case.name) == "vllm-bench-serve", case.name


def test_no_spec_keys_means_not_speculating_not_zero() -> None:
    r = parse_file(HERE / "save-result-0.11-no-spec-pasted.md")
    names = set(r.columns.metric)
    assert not names & {"accept_length", "draft_acceptance_rate", "num_drafts"}
    assert "accept_len_counts_bonus" not in r.sources[0].blocks[0].settings
    assert values(r, "output_throughput_tok_s") == [827.9284138346626]


def test_an_acceptance_length_of_zero_is_no_drafts_not_a_length() -> None:
    rec = json.loads((HERE / "save-result-0.18-spec-jq.json").read_text())
    rec["spec_decode_acceptance_length"] = 0.0
    for text in (json.dumps(rec), json.dumps(rec, indent=2)):  # both formats: one rule
        r = parse_text(text, path="r.json")
        assert values(r, "accept_length") == []
        d = [x for x in r.diagnostics if x.code == "impossible-value"]
        assert [x.message for x in d] == [
            "record 0: spec_decode_acceptance_length is 0, below 1 (no drafts were made); "
            "no sample taken"
        ]


def test_pytorch_benchmark_records() -> None:
    r = parse_file(HERE / "throughput_tp1.pytorch.json")
    assert values(r, "request_throughput_req_s") == [22.009998791839523]
    assert r.sources[0].blocks[0].settings["input_len"] == 1024
    latency = [
        {
            "benchmark": {"name": "vLLM benchmark", "extra_info": {"args": {"batch_size": 8}}},
            "model": {"name": "m"},
            "metric": {"name": "latency", "benchmark_values": [1.5, 1.25], "extra_info": {}},
        }
    ]
    r = parse_text(json.dumps(latency), path="l.pytorch.json")
    assert list(zip(r.columns.metric, r.columns.run, r.columns.value, strict=True)) == [
        ("total_latency_s", 1, 1.5),
        ("total_latency_s", 2, 1.25),
    ]
    assert r.sources[0].blocks[0].settings["batch_size"] == 8


def test_sniff() -> None:
    assert detect("Throughput: 5.99 requests/s\nAverage latency: 1.2 s\n", "x.log") != (
        "vllm-bench-result"
    )  # the 2023 serving script: requests/s alone
    assert detect("Avg latency: 1.5 seconds\n", "x.log") == "vllm-bench-result"
    assert detect('{\n    "avg_latency": 1.5,\n    "latencies": [\n', "x.json") == (
        "vllm-bench-result"
    )


def test_any_whole_percentile_is_a_known_latency_metric() -> None:
    # found by the CI fuzz run: a `percentiles` key of "11" made an unregistered metric
    from sessionlens import metrics

    doc = {"avg_latency": 1.88, "latencies": [1.87, 1.89], "percentiles": {"11": 1.87, "50": 1.88}}
    r = parse_text(json.dumps(doc), path="latency.json")
    assert values(r, "total_latency_s_p11") == [1.87]
    text = parse_text(
        "Avg latency: 1.88 seconds\n33% percentile latency: 1.862 seconds\n", path="l.log"
    )
    assert values(text, "total_latency_s_p33") == [1.862]
    for name in ("total_latency_s_p11", "total_latency_s_p33"):
        assert metrics.is_known(name)
        assert (metrics.get(name).unit, metrics.get(name).better) == ("s", "lower")


def test_a_token_total_int_cannot_read_is_a_note_not_a_setting() -> None:
    # `'²'.isdigit()` is true and `int('²')` raises; so does `int` on 5000 digits
    text = (HERE / "throughput-0.8.5-namespace-engine-lines.log").read_text()
    whole = parse_text(text)
    assert whole.sources[0].blocks[0].settings["total_input_tokens"] == 1024000
    for raw in ("²", "9" * 5000):
        r = parse_text(text.replace("tokens:  1024000", f"tokens:  {raw}"))
        assert list(r.columns.value) == list(whole.columns.value)  # the same samples
        settings = r.sources[0].blocks[0].settings
        assert "total_input_tokens" not in settings
        assert settings["total_output_tokens"] == 128000
        [note] = [d for d in r.diagnostics if d.line == 12]
        assert note.code == "unparsed-line"
        assert len(str(note)) < 200
