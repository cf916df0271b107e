"""guidellm: benchmarks.json (0.3 and 0.8 shapes), .yaml, .csv and 80-column console tables."""

from __future__ import annotations

from pathlib import Path

from sessionlens.parsers import parse_file

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "guidellm"


def values(result, metric: str) -> list[float]:
    c = result.columns
    return [v for m, v in zip(c.metric, c.value, strict=True) if m == metric]


def test_each_benchmark_is_a_load_point() -> None:
    for name in ("v0.8-benchmarks.json", "v0.8-benchmarks.yaml", "v0.8-console-wrapped-80.log"):
        r = parse_file(HERE / name)
        blocks = [b.settings for b in r.sources[0].blocks]
        assert [b["strategy"] for b in blocks] == ["synchronous", "constant", "concurrent"], name
        assert blocks[1]["request_rate"] == 5.0, name
        assert blocks[2]["max_concurrency"] == 16, name


def test_json_and_yaml_agree_and_seconds_become_ms() -> None:
    j = parse_file(HERE / "v0.8-benchmarks.json")
    y = parse_file(HERE / "v0.8-benchmarks.yaml")
    for metric in ("e2e_latency_ms_median", "ttft_ms_p99", "output_throughput_tok_s"):
        assert values(j, metric) == values(y, metric), metric
    assert values(j, "e2e_latency_ms_median")[0] == 1744.4  # 1.7444 s


def test_console_wrapped_at_80_columns_reads_the_mean_before_its_margin() -> None:
    r = parse_file(HERE / "v0.8-console-wrapped-80.log")
    assert values(r, "ttft_ms_mean") == [21.4, 24.8, 31.5]  # `21.4 ± 0` / `.5`, rejoined
    assert values(r, "tpot_ms_p95") == [7.6, 8.0, 8.1]


def test_a_cut_report_keeps_the_benchmarks_before_the_cut() -> None:
    r = parse_file(HERE / "v0.3-benchmarks-cut.json")
    assert len(r.sources[0].blocks) == 2
    assert [d.code for d in r.diagnostics] == ["truncated-output"]


def test_csv_three_header_rows() -> None:
    r = parse_file(HERE / "v0.8-benchmarks.csv")
    assert values(r, "request_throughput_req_s") == [0.56, 4.97, 8.41]
    assert r.sources[0].blocks[2].settings["max_concurrency"] == 16
