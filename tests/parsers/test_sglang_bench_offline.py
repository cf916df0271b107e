"""sglang-bench-offline: preamble noise, several blocks with label lines, engine lines."""

from __future__ import annotations

from pathlib import Path

from sessionlens.parsers import parse_file, parse_text, sglang_bench_offline

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "sglang-bench-offline"


def values(result, metric: str) -> list[float]:
    c = result.columns
    return [v for m, v in zip(c.metric, c.value, strict=True) if m == metric]


def test_two_blocks_each_with_its_label_line() -> None:
    r = parse_file(HERE / "two-runs-with-labels.log")
    src = r.sources[0]
    assert src.format == "sglang-bench-offline"
    assert [b.settings["label"] for b in src.blocks] == [
        "run A: --disable-cuda-graph",
        "run B: cuda graph on, bs<=160",
    ]
    assert [b.settings["backend"] for b in src.blocks] == ["engine", "engine"]
    assert values(r, "last_gen_throughput_tok_s") == [3411.07, 4620.58]
    assert values(r, "total_throughput_tok_s") == [6721.37, 9190.0]
    c = r.columns
    assert [b for m, b in zip(c.metric, c.block, strict=True) if m == "benchmark_duration_s"] == [
        0,
        1,
    ]
    assert r.diagnostics == []


def test_engine_decode_lines_glued_to_a_bar_are_read_by_the_server_reader() -> None:
    r = parse_file(HERE / "two-runs-with-labels.log")
    assert r.sources[0].embedded_formats == ["sglang-server"]
    assert values(r, "gen_throughput_tok_s") == [3120.55, 3120.55]
    c = r.columns
    assert {b for m, b in zip(c.metric, c.block, strict=True) if m == "gen_throughput_tok_s"} == {
        None
    }


def test_sniff_title_and_row() -> None:
    assert sglang_bench_offline.sniff("== Offline Throughput Benchmark Result ==\n", "x") == 1.0
    row = "Last generation throughput (tok/s):      3411.07\n"
    assert sglang_bench_offline.sniff(row, "x") == 0.9
    assert sglang_bench_offline.sniff("Request throughput (req/s):   3.00\n", "x") == 0.0


def test_a_title_with_no_rows_at_the_end_is_reported() -> None:
    text = "#Input tokens: 10\n\n====== Offline Throughput Benchmark Result =======\n"
    r = parse_text(text, path="x.log")
    assert r.sources[0].format == "sglang-bench-offline"
    assert [str(d) for d in r.diagnostics] == [
        "x.log:3: warning: the block titled 'Offline Throughput Benchmark Result' has no rows: "
        "the file ends after it [truncated-output]",
        "x.log: warning: recognised as sglang-bench-offline but no sample was read [no-samples]",
    ]


def test_a_titleless_paste_is_told_by_its_engine_backend() -> None:
    # 0.3.6 has no `Last generation throughput` row; `engine` is no serving client's backend
    rows = [
        ("Backend:", "engine"),
        ("Successful requests:", "1000"),
        ("Request throughput (req/s):", "11.92"),
    ]
    r = parse_text("".join(f"{k:<40} {v:<10}\n" for k, v in rows), path="t.txt")
    assert r.sources[0].format == "sglang-bench-offline"
    assert list(r.columns.metric) == ["successful_requests", "request_throughput_req_s"]
