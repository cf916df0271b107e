"""guidellm: benchmarks.json (0.3 and 0.8 shapes), .yaml, .csv and 80-column console tables."""

from __future__ import annotations

from pathlib import Path

from sessionlens import _load
from sessionlens.parsers import guidellm, parse_file, parse_text
from tests.fixture_cases import values

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "guidellm"


def test_each_benchmark_is_a_load_point() -> None:
    for name in ("v0.8-benchmarks.json", "v0.8-benchmarks.yaml", "v0.8-console-wrapped-80.log"):
        r = parse_file(HERE / name)
        blocks = [b.settings for b in r.sources[0].blocks]
        assert [b["strategy"] for b in blocks] == ["synchronous", "constant", "concurrent"], name
        assert blocks[1]["request_rate"] == 5.0, name
        assert blocks[2]["max_concurrency"] == 16, name


def _loads(result) -> list[str]:
    src = result.sources[0]
    points = _load.load_points((src.path, b.block, b.settings) for b in src.blocks)
    return [points.get((src.path, b.block), "") for b in src.blocks]


def test_every_export_gives_each_benchmark_its_own_load_point() -> None:
    """The strategy is the load point, read the same from JSON, YAML, CSV and console, and
    as `vllm bench serve` would state it (synchronous: one in flight, no rate limit)."""
    want = [
        "max_concurrency=1, request_rate=inf",
        "request_rate=5",
        "max_concurrency=16, request_rate=inf",
    ]
    for name in (
        "v0.8-benchmarks.json",
        "v0.8-benchmarks.yaml",
        "v0.8-benchmarks.csv",
        "v0.8-console-wrapped-80.log",
    ):
        assert _loads(parse_file(HERE / name)) == want, name
    assert _loads(parse_file(HERE / "v0.3-benchmarks-cut.json")) == [
        "request_rate=inf",
        "request_rate=5",
    ]


def test_strategy_texts() -> None:
    assert guidellm._strategy_settings("throughput@unlimited") == [
        ("strategy", "throughput"),
        ("request_rate", "inf"),
        ("max_concurrency", "inf"),
    ]
    assert guidellm._strategy_settings("throughput@64") == [
        ("strategy", "throughput"),
        ("request_rate", "inf"),
        ("max_concurrency", 64),
    ]
    assert guidellm._strategy_settings("poisson@2.50") == [
        ("strategy", "poisson"),
        ("request_rate", 2.5),
    ]
    assert guidellm._strategy_settings("trace@1.00") == [("strategy", "trace@1.00")]
    # 5000 digits are infinity as a float, which `int` refuses: no cap read from them
    huge = guidellm._strategy_settings("concurrent@" + "7" * 5000)
    assert all(k != "max_concurrency" for k, _ in huge)
    # a `--profile sweep`: synchronous, throughput, then constant rates between them
    sweep = ["synchronous", "throughput@unlimited", "constant@1.00", "constant@2.00"]
    blocks = [("s", i, dict(guidellm._strategy_settings(t))) for i, t in enumerate(sweep)]
    assert list(_load.load_points(blocks).values()) == [
        "max_concurrency=1, request_rate=inf",
        "max_concurrency=inf, request_rate=inf",
        "request_rate=1",
        "request_rate=2",
    ]


def test_a_sweep_s_throughput_benchmark_is_a_load_point_of_its_own() -> None:
    text = (
        (HERE / "v0.8-benchmarks.json")
        .read_text()
        .replace('"type_": "synchronous"', '"type_": "throughput", "max_concurrency": null')
    )
    r = parse_text(text, format="guidellm", path="benchmarks.json")
    assert _loads(r) == [
        "max_concurrency=inf, request_rate=inf",
        "request_rate=5",
        "max_concurrency=16, request_rate=inf",
    ]
    capped = text.replace('"max_concurrency": null', '"max_concurrency": 64')
    r = parse_text(capped, format="guidellm", path="benchmarks.json")
    assert _loads(r)[0] == "max_concurrency=64, request_rate=inf"


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


def test_a_line_between_the_pieces_of_a_wrapped_line_is_no_piece() -> None:
    """A progress bar or log line printed between the two halves of a wrapped row or rule
    neither fills the terminal's width nor ends at the table's border: it is skipped."""
    path = HERE / "v0.8-console-wrapped-80.log"
    lines = path.read_text().split("\n")
    whole = parse_file(path)
    bar = "  0%|          | 0/1000 [00:00<00:10,  4.90it/s]"
    access = 'INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK'
    for first in range(len(lines) - 1):
        if len(lines[first]) != 80:
            continue  # not the first half of a wrapped line
        text = "\n".join([*lines[: first + 1], bar, access, *lines[first + 1 :]])
        r = parse_text(text, format="guidellm", path=path.name)
        assert list(r.columns.value) == list(whole.columns.value), first
        assert [b.settings for b in r.sources[0].blocks] == [
            b.settings for b in whole.sources[0].blocks
        ]


def test_a_row_that_lost_a_piece_is_not_read_shifted() -> None:
    """Without the second half of `synchronous`, the first half takes the next row's first
    half as a piece: the joined row has too many cells, so it gives a diagnostic and no
    value under a column that is not its own."""
    path = HERE / "v0.8-console-wrapped-80.log"
    lines = path.read_text().split("\n")
    assert lines[13].startswith(".5 | 20.3")
    r = parse_text("\n".join(lines[:13] + lines[14:]), format="guidellm", path=path.name)
    assert [(d.code, d.line, d.message) for d in r.diagnostics] == [
        (
            "unparsed-line",
            13,
            "a table row of 18 cells under a header of 13 columns; not read",
        )
    ]
    assert values(r, "ttft_ms_mean") == [31.5]
    assert values(r, "ttft_ms_p95") == [53.6]  # not 1.9, the next row's latency


def test_yaml_noise_at_indent_0_keeps_every_benchmark() -> None:
    path = HERE / "v0.8-benchmarks.yaml"
    lines = path.read_text().split("\n")
    whole = parse_file(path)
    access = 'INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK'
    for after in (1, lines.index("- config:", 2), len(lines) - 6):
        text = "\n".join([*lines[:after], access, *lines[after:]])
        r = parse_text(text, format="guidellm", path=path.name)
        assert sorted(r.columns.value) == sorted(whole.columns.value), after
        assert len(r.sources[0].blocks) == 3


def test_a_cut_report_keeps_the_benchmarks_before_the_cut() -> None:
    r = parse_file(HERE / "v0.3-benchmarks-cut.json")
    assert len(r.sources[0].blocks) == 2
    assert [d.code for d in r.diagnostics] == ["truncated-output"]


def test_csv_three_header_rows() -> None:
    r = parse_file(HERE / "v0.8-benchmarks.csv")
    assert values(r, "request_throughput_req_s") == [0.56, 4.97, 8.41]
    assert r.sources[0].blocks[2].settings["max_concurrency"] == 16
