"""sglang-bench-one-batch: cases as blocks, warm-up exclusion, the sweep plan, the table, cuts."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionlens import metrics
from sessionlens._lines import Line
from sessionlens.model import BlockStart, ParseResult, Record, Sample
from sessionlens.parsers import parse_text, sglang_bench_one_batch
from sessionlens.parsers.base import ParseContext

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "sglang-bench-one-batch"
FORMAT = "sglang-bench-one-batch"

RUN = """\
Prefill. latency: 0.03412 s, throughput:  15005.86 token/s
Decode 0. Batch size: 1, latency: 0.00661 s, throughput:    151.29 token/s
Decode 1. Batch size: 1, latency: 0.00651 s, throughput:    153.61 token/s
Decode.  median latency: 0.00649 s, median throughput:    154.08 token/s
Total. latency:  0.235 s, throughput:   2312.91 token/s
"""
WARM = RUN.replace("0.03412", "0.09999").replace("2312.91", "1111.11")


def parse(text: str) -> ParseResult:
    return parse_text(text, format=FORMAT)


def samples(text: str) -> list[tuple[int, int | None, str, float]]:
    cols = parse(text).columns
    return list(zip(cols.line, cols.block, cols.metric, cols.value, strict=True))


def codes(text: str) -> list[str]:
    return [f"{d.line}:{d.code}" for d in parse(text).diagnostics]


def blocks(text: str) -> list[dict[str, object]]:
    return [b.settings for b in parse(text).sources[0].blocks]


# ------------------------------------------------------------------ sniff


def test_sniff_claims_both_scripts() -> None:
    assert sglang_bench_one_batch.sniff(RUN, "r.log") == 1.0
    server = "batch size: 1\ninput_len: 1024\noutput_len: 16\nlatency: 0.35 s\n"
    assert sglang_bench_one_batch.sniff(server, "r.log") == 1.0
    table = "| batch size | input len | latency (s) | input throughput (tok/s) |\n"
    assert sglang_bench_one_batch.sniff(table, "r.log") == 0.9


def test_sniff_leaves_other_formats_alone() -> None:
    serving = (
        "============ Serving Benchmark Result ============\n"
        "Backend:                                 sglang\n"
        "Mean E2E Latency (ms):                   5123.87\n"
    )
    assert sglang_bench_one_batch.sniff(serving, "b.log") == 0.0
    offline = (
        "====== Offline Throughput Benchmark Result =======\n"
        "Last generation throughput (tok/s):      1523.40\n"
    )
    assert sglang_bench_one_batch.sniff(offline, "b.log") == 0.0
    server_log = (
        "[2025-01-02 03:04:05 TP0] Decode batch. #running-req: 1, #token: 90, "
        "token usage: 0.00, gen throughput (token/s): 59.90, #queue-req: 0\n"
    )
    assert sglang_bench_one_batch.sniff(server_log, "s.log") == 0.0


# ------------------------------------------------------------------ bench_one_batch


def test_one_run_is_one_block_with_summary_samples_only() -> None:
    got = samples(RUN)
    assert got == [
        (1, 0, "prefill_latency_s", 0.03412),
        (1, 0, "prefill_throughput_tok_s", 15005.86),
        (4, 0, "decode_median_latency_s", 0.00649),
        (4, 0, "decode_median_throughput_tok_s", 154.08),
        (5, 0, "total_latency_s", 0.235),
        (5, 0, "total_throughput_tok_s", 2312.91),
    ]
    assert blocks(RUN) == [{"batch_size": 1}]


def test_warmup_run_gives_no_sample() -> None:
    text = "Warmup ...\n" + WARM + "Benchmark ...\n" + RUN
    got = samples(text)
    assert {v for *_, v in got}.isdisjoint({0.09999, 1111.11})
    assert {b for _, b, _, _ in got} == {0}
    assert got[0][0] == 8  # line numbers are the file's


def test_median_disagreeing_with_batch_size_is_kept_and_flagged() -> None:
    text = RUN.replace("154.08", "254.08")
    assert ("4:inconsistent-value") in codes(text)
    assert (4, 0, "decode_median_throughput_tok_s", 254.08) in samples(text)


def test_run_cut_before_total_is_incomplete() -> None:
    text = RUN.rsplit("Total.", 1)[0] + "Total. latency:  0.2"
    got = samples(text)
    assert [m for *_, m, _ in got][-1] == "decode_median_throughput_tok_s"
    assert codes(text) == ["5:truncated-value", "1:incomplete-case"]


def test_sweep_plan_from_command_line_and_skip_lines() -> None:
    text = (
        "python3 -m sglang.bench_one_batch --model-path m --batch-size 1 2 4 \\\n"
        "  --input-len 512 --output-len 32\n"
        + RUN
        + "skipping (2, 512, 32) due to max batch size limit\n"
        + RUN.replace("Batch size: 1", "Batch size: 4")
    )
    assert blocks(text) == [
        {"batch_size": 1, "input_len": 512, "output_len": 32},
        {"batch_size": 4, "input_len": 512, "output_len": 32},
    ]
    assert "8:skipped-case" in codes(text)


def test_sweep_plan_that_disagrees_with_printed_batch_size_is_dropped() -> None:
    text = "python3 -m sglang.bench_one_batch --batch-size 8 --input-len 512\n" + RUN + RUN
    assert blocks(text) == [
        {"batch_size": 1, "input_len": 512},  # printed value wins
        {"batch_size": 1},  # the command line is no longer trusted
    ]
    assert codes(text) == ["3:inconsistent-value"]


# ------------------------------------------------------------------ bench_one_batch_server

OLD_CASE = """\
batch size: {bs}
latency: 2.61 s
output throughput: 98.08 token/s
(input + output) throughput: 490.42 token/s
"""
MID_CASE = """\
batch size: {bs}
input_len: 1024
output_len: 128
latency: 1.05 s
ttft: 0.04 s
last generation throughput: 127.35 tok/s
input throughput: 25600.00 tok/s
output throughput: 126.73 tok/s
"""


def test_unframed_old_layout_first_case_of_16_is_the_warmup() -> None:
    text = OLD_CASE.format(bs=16) + OLD_CASE.format(bs=1)
    got = samples(text)
    assert {line for line, *_ in got} == {6, 7, 8}
    assert codes(text) == ["1:warmup-excluded"]
    assert blocks(text) == [{"batch_size": 1}]


def test_unframed_first_case_of_another_size_is_kept() -> None:
    text = OLD_CASE.format(bs=1) + OLD_CASE.format(bs=16)
    assert len(samples(text)) == 6
    assert codes(text) == []


def test_unframed_new_layout_case_of_16_is_kept() -> None:
    # 0.4.7+ prints input_len next: no unframed warm-up there (--skip-warmup)
    text = MID_CASE.format(bs=16)
    assert len(samples(text)) == 5
    assert blocks(text) == [{"batch_size": 16, "input_len": 1024, "output_len": 128}]


def test_framed_warmup_is_excluded() -> None:
    text = (
        "======== Warmup Begin ========\n"
        + MID_CASE.format(bs=1)
        + "======== Warmup End   ========\n\n"
        + MID_CASE.format(bs=1)
    )
    got = samples(text)
    assert min(line for line, *_ in got) == 15
    assert codes(text) == []


def test_acc_length_is_the_cumulative_accept_length_with_bonus() -> None:
    text = MID_CASE.format(bs=1) + "acc_length: 2.91 \ncache hit rate: 0.1250\n"
    got = {m: v for _, _, m, v in samples(text)}
    assert got["accept_length"] == 2.91
    assert got["prefix_cache_hit_rate"] == 0.125
    assert parse(text).sources[0].settings["accept_len_counts_bonus"] is True


TABLE = """\
| batch size | input len | latency (s) | input throughput (tok/s) | output throughput (tok/s) | acc length | ITL (ms) | input cost ($/1M) | output cost ($/1M) | cache hit rate |
| ---------- | --------- | ----------- | ------------------------ | ------------------------- | ---------- | -------- | ----------------- | ------------------ | -------------- |
| 1 | 1024 | 1.05 | 25600.00 | 126.73 | n/a | 7.89 | 0.01 | 2.45 | n/a |
"""


def test_table_adds_only_what_the_case_lines_lack() -> None:
    text = MID_CASE.format(bs=1) + "\n" + TABLE
    got = samples(text)
    assert [m for _, _, m, _ in got].count("total_latency_s") == 1
    assert (12, 0, "itl_ms", 7.89) in got
    assert "accept_length" not in {m for _, _, m, _ in got}  # n/a is no value


def test_table_rows_that_do_not_match_the_cases_are_their_own_blocks() -> None:
    text = MID_CASE.format(bs=8) + "\n" + TABLE
    assert [b["batch_size"] for b in blocks(text)] == [8, 1]


def test_unknown_table_column_is_reported() -> None:
    text = TABLE.replace("cache hit rate |", "cache hit rate | spec verify (ms) |", 1)
    assert codes(text) == ["1:unknown-field"]


@pytest.mark.parametrize(
    "prefix",
    [
        "run.log:",
        "run.log-",
        "2025-07-02T09:14:40.123456789Z ",
        "bench-1  | ",
        "[1,0]<stdout>:",
        "- ",
    ],
)
def test_prefixed_output_keeps_the_warmup_out(prefix: str) -> None:
    # the warm-up markers must be seen behind the prefix, or the warm-up becomes a case
    text = "".join(
        prefix + x + "\n"
        for x in ("Warmup ...\n" + WARM + "Benchmark ...\n" + RUN).split("\n")[:-1]
    )
    got = samples(text)
    assert {v for *_, v in got}.isdisjoint({0.09999, 1111.11})
    assert [m for _, _, m, _ in got] == [m for _, _, m, _ in samples(RUN)]
    assert parse_text(text).sources[0].format == FORMAT


@pytest.mark.parametrize("prefix", ["sweep.log:", "bench-1  | ", "[1,0]<stdout>:"])
def test_prefixed_server_cases_are_detected_and_read(prefix: str) -> None:
    text = "".join(prefix + x + "\n" for x in MID_CASE.format(bs=1).split("\n")[:-1])
    r = parse_text(text)
    assert r.sources[0].format == FORMAT
    assert len(r.columns) == 5
    assert [b.settings for b in r.sources[0].blocks] == [
        {"batch_size": 1, "input_len": 1024, "output_len": 128}
    ]


def test_table_cell_before_the_cut_is_complete_when_a_space_follows_it() -> None:
    row = TABLE.split("\n")[2]
    cut = row[: row.index("126.73") + len("126.73 ")]  # `| 126.73 ` then the file ends
    r = parse(TABLE.split("\n")[0] + "\n" + TABLE.split("\n")[1] + "\n" + cut)
    got = dict(zip(r.columns.metric, r.columns.value, strict=True))
    assert got["output_throughput_tok_s"] == 126.73
    assert [str(d) for d in r.diagnostics] == [
        "<text>:3: warning: the table row is cut after 5 of 10 columns; the columns after the "
        "cut are not read [truncated-output]"
    ]
    r = parse(TABLE.split("\n")[0] + "\n" + TABLE.split("\n")[1] + "\n" + cut.rstrip())
    assert "output_throughput_tok_s" not in r.columns.metric  # `126.73` may have been longer


def test_non_finite_values_are_no_samples_and_odd_digits_never_raise() -> None:
    text = "python -m sglang.bench_one_batch --batch-size 1\u00b9 8\n" + RUN.replace(
        "15005.86", "inf"
    )
    got = samples(text)
    assert "prefill_throughput_tok_s" not in {m for _, _, m, _ in got}
    assert codes(text) == ["2:non-finite-value"]


# ------------------------------------------------------------------ embedding


def test_reader_uses_the_embedding_parsers_block_numbers() -> None:
    ctx = ParseContext(file="x")
    numbers = iter([7, 9])
    reader = sglang_bench_one_batch.Reader(ctx, next_block=lambda: next(numbers))
    recs: list[Record] = []
    for i, text in enumerate((RUN + RUN).splitlines(), 1):
        recs.extend(reader.feed(Line(i, text)))
    recs.extend(reader.finish())
    assert [r.block for r in recs if isinstance(r, BlockStart)] == [7, 9]
    assert {r.block for r in recs if isinstance(r, Sample)} == {7, 9}


# ------------------------------------------------------------------ fixtures as a whole


def _fixture_texts() -> list[Path]:
    return sorted(FIXTURES.glob("*.log"))


@pytest.mark.parametrize("path", _fixture_texts(), ids=lambda p: p.name)
def test_fixture_metrics_are_registered(path: Path) -> None:
    result = parse(path.read_text(encoding="utf-8"))
    assert result.columns.metric
    assert all(metrics.is_known(m) for m in result.columns.metric)


@pytest.mark.parametrize("path", _fixture_texts(), ids=lambda p: p.name)
def test_cut_anywhere_yields_only_samples_of_the_whole(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    whole = set(samples(text))
    cuts = {i + 1 for i, ch in enumerate(text) if ch == "\n"}
    cuts |= {i for i, ch in enumerate(text) if ch.isdigit() or ch == "."}
    for at in sorted(cuts):
        part = set(samples(text[:at]))
        assert part <= whole, f"cut at byte {at}: {part - whole}"


@pytest.mark.parametrize(
    "tail",
    [
        "154.\n",  # cut at the decimal point, a newline added after (an editor, a fence)
        "154.2\n",  # cut before its unit
        "154.22025-07-02T09:14:40.1Z [2025-07-02 09:14:40 TP0] Load weight end.\n",  # `cat`
    ],
)
def test_a_timing_without_its_unit_is_cut(tail: str) -> None:
    text = (
        "Prefill. latency: 0.03412 s, throughput:  15005.86 token/s\n"
        f"Decode.  median latency: 0.00649 s, median throughput:    {tail}"
    )
    r = parse_text(text, "sglang-bench-one-batch", path="x.log")
    got = dict(zip(r.columns.metric, r.columns.value, strict=True))
    assert "decode_median_throughput_tok_s" not in got
    assert got["decode_median_latency_s"] == 0.00649
    assert r.diagnostics[0].code == "truncated-value"
