"""_blocks: rows by label (never by column), aliases, block boundaries, cut values, Namespace."""

from __future__ import annotations

import collections
import math
import re
from pathlib import Path
from typing import Any

import pytest

from sessionlens import metrics
from sessionlens.parsers import PARSERS, _blocks, _fields, parse_text
from sessionlens.parsers._blocks import lookup, namespace_items, parse_row, setting_value

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats"
MY_FORMATS = ("sglang-bench-serving", "vllm-bench-serve", "sglang-bench-offline")


def R(label: str, value: object) -> str:
    return f"{label:<40} {value:<10}"


def F(label: str, value: float) -> str:
    return f"{label:<40} {value:<10.2f}"


def samples(result) -> list[tuple[int | None, str, float]]:
    c = result.columns
    return list(zip(c.block, c.metric, c.value, strict=True))


def diags(result) -> list[str]:
    return [str(d) for d in result.diagnostics]


# ------------------------------------------------------------------ rows and aliases


def test_row_is_label_colon_whitespace_value_not_columns() -> None:
    row = parse_row(R("Total input tokens:", 1234567890123))  # wider than {:<10}: no padding
    assert row is not None
    assert (row.label, row.value, row.padded, row.at_end) == (
        "Total input tokens",
        "1234567890123",
        True,
        True,
    )
    padded = parse_row(R("Successful requests:", 5))
    assert padded is not None
    assert padded.value == "5"
    assert not padded.at_end
    collapsed = parse_row("Successful requests: 5")  # a paste that lost the padding
    assert collapsed is not None
    assert not collapsed.padded
    assert parse_row("  0%|   | 0/10 [00:00<?, ?it/s]") is None
    assert parse_row("base_url=None, host='127.0.0.1:30000'") is None
    assert parse_row("[2025-01-01 10:00:00] Decode batch. #running-req: 1") is None
    bare = parse_row("Per-position acceptance (%):")
    assert bare is not None
    assert bare.value == ""


@pytest.mark.parametrize(
    ("label", "section", "name"),
    [
        ("Max reqeuest concurrency", None, "max_concurrency"),  # SGLang 0.4.0-0.4.6 typo
        ("Maximum  request   concurrency", None, "max_concurrency"),
        ("Total Token throughput (tok/s)", None, "total_throughput_tok_s"),  # vLLM capital T
        ("Total token throughput (tok/s)", None, "total_throughput_tok_s"),
        ("Mean E2EL (ms)", "end to end latency", "e2e_latency_ms_mean"),
        ("Median E2E Latency (ms)", "end to end latency", "e2e_latency_ms_median"),
        ("P99.9 TTFT (ms)", "time to first token", "ttft_ms_p999"),
        ("P90 TPOT (ms)", None, "tpot_ms_p90"),
        ("Max ITL (ms)", "inter token latency", "itl_ms_max"),
        ("Accept length", None, "accept_length"),
        ("Acceptance length", "speculative decoding", "accept_length"),
        ("Acceptance rate (%)", "speculative decoding", "draft_acceptance_rate"),
        ("Position 3", "speculative decoding", "position_acceptance_rate_3"),
        ("TTFT SLO attainment (%)", "goodput", "ttft_slo_attainment"),
        ("Request goodput (req/s)", "goodput", "goodput_req_s"),
        ("Peak concurrent requests", None, "peak_concurrent_requests"),
        ("Last generation throughput (tok/s)", None, "last_gen_throughput_tok_s"),
        ("Device", "cache hit details", "cache_device"),
        ("Storage (hf3fs)", "cache hit details", "cache_storage_hf3fs"),
    ],
)
def test_aliases(label: str, section: str | None, name: str) -> None:
    spec = lookup(label, section)
    assert spec is not None
    assert spec.name == name
    if spec.kind == "metric":
        assert metrics.is_known(name), f"{name} is not in the metric registry"


def test_latency_rows_of_an_unknown_section_are_not_mapped() -> None:
    # vLLM 0.33's queue-inclusive latencies would otherwise pose as e2e_latency_*
    assert lookup("Mean E2EL (ms)", "queue inclusive end to end latency") is None
    assert lookup("Mean QE2EL (ms)", None) is None
    assert lookup("Device", None) is None  # cache rows only inside their section


@pytest.mark.parametrize(
    ("raw", "cast", "value"),
    [
        ("inf", "float", "inf"),
        ("not set", "int", None),
        ("None", "int", None),
        ("64", "int", 64),
        ("8.0", "float", 8.0),
        ("1.0 (Poisson process)", "float", 1.0),
        ("trace", "float", "trace"),
        ("sglang-oai", "str", "sglang-oai"),
        ("4", "float", 4.0),
    ],
)
def test_setting_values(raw: str, cast: _blocks.Cast, value: object) -> None:
    assert setting_value(raw, cast) == value


def test_namespace_scanner_keeps_scalars_only_and_never_evals() -> None:
    body = (
        "subparser='bench', dispatch_function=<function cmd at 0x7f3b>, seed=0, "
        "header=['a: b', 'c'], prompt_suffix='x, y=1', request_rate=inf, "
        "max_concurrency=None, ratio=-1.5e-3, flag=True, goodput={'ttft': 1})"
    )
    items, complete = namespace_items(body)
    assert complete
    assert dict(items) == {
        "subparser": "bench",
        "seed": 0,
        "prompt_suffix": "x, y=1",
        "request_rate": "inf",
        "max_concurrency": None,
        "ratio": -1.5e-3,
        "flag": True,
    }
    cut, complete = namespace_items("backend='sglang', num_prompts=10")
    assert not complete
    assert dict(cut) == {"backend": "sglang"}  # the last item may be cut: dropped


# ------------------------------------------------------------------ block boundaries

BLOCK = [
    R("Backend:", "sglang"),
    R("Traffic request rate:", "inf"),
    R("Successful requests:", 10),
    F("Benchmark duration (s):", 12.5),
    F("Request throughput (req/s):", 0.8),
]


def test_title_less_blocks_pasted_one_after_another_are_split_by_a_repeated_row() -> None:
    text = "\n".join([*BLOCK, "", *BLOCK[:3], F("Benchmark duration (s):", 9.25)]) + "\n"
    r = parse_text(text, "sglang-bench-serving", path="x.log")
    got = [(b, m, v) for b, m, v in samples(r) if m == "benchmark_duration_s"]
    assert got == [(0, "benchmark_duration_s", 12.5), (1, "benchmark_duration_s", 9.25)]
    assert [b.line for b in r.sources[0].blocks] == [1, 7]


def test_rows_before_a_title_are_their_own_partial_block() -> None:
    text = "\n".join(
        [
            F("Mean TTFT (ms):", 5.5),
            F("Median TTFT (ms):", 5.0),
            "============ Serving Benchmark Result ============",
            *BLOCK,
            "=" * 50,
            "",
        ]
    )
    r = parse_text(text, "sglang-bench-serving", path="x.log")
    assert [(b, m) for b, m, _ in samples(r)][:2] == [(0, "ttft_ms_mean"), (0, "ttft_ms_median")]
    assert {b for b, m, _ in samples(r)[2:]} == {1}
    assert r.sources[0].blocks[1].settings["backend"] == "sglang"


def test_whitespace_collapsed_paste_still_reads_and_keeps_settings() -> None:
    text = (
        "Backend: sglang\nTraffic request rate: 4.0\nSuccessful requests: 10\n"
        "Request throughput (req/s): 0.80\n"
    )
    r = parse_text(text, "sglang-bench-serving", path="x.log")
    assert samples(r) == [(0, "successful_requests", 10.0), (0, "request_throughput_req_s", 0.8)]
    assert r.sources[0].blocks[0].settings == {"backend": "sglang", "request_rate": 4.0}


def test_unknown_rows_are_skipped_counted_and_named_once_per_block() -> None:
    text = "\n".join([*BLOCK, F("Average input length:", 221.05), R("Weird row:", "x"), ""])
    r = parse_text(text, "sglang-bench-serving", path="x.log")
    assert len(samples(r)) == 3
    assert r.sources[0].record_counts["unknown-row"] == 2
    assert diags(r) == [
        "x.log:6: info: block 0: 2 rows not read: 'Average input length', 'Weird row' [unknown-row]"
    ]


def test_an_unknown_section_inside_a_block_is_skipped_whole() -> None:
    text = "\n".join(
        [
            *BLOCK,
            "----------------End-to-end Latency----------------",
            F("Mean E2EL (ms):", 900.0),
            "--------------Client-side Queueing---------------",
            R("Successful requests:", 3),
            F("Mean E2EL (ms):", 1.0),
            "=" * 50,
            "",
        ]
    )
    r = parse_text(text, "sglang-bench-serving", path="x.log")
    assert [m for _, m, _ in samples(r)][-1] == "e2e_latency_ms_mean"
    assert len(r.sources[0].blocks) == 1  # the repeated row did not split the block
    assert "Client-side Queueing: Successful requests" in diags(r)[0]


def test_a_decorative_header_or_unknown_title_above_a_block_is_its_label() -> None:
    text = "\n".join(
        ["------ concurrency 8 ------", "", *BLOCK, "", "===== rate 4 =====", *BLOCK, ""]
    )
    r = parse_text(text, "sglang-bench-serving", path="x.log")
    assert [b.settings.get("label") for b in r.sources[0].blocks] == ["concurrency 8", "rate 4"]


def test_dataset_facts_before_a_block_are_neither_a_block_nor_its_label() -> None:
    """SGLang's generated-shared-prefix dataset prints its statistics under a bare heading
    (`Total input tokens:` among them), and the image dataset `#Images per request: 2
    (fixed)`: the run's arguments stay with the real block, and nothing is a diagnostic."""
    text = "\n".join(
        [
            "Namespace(backend='sglang', dataset_name='generated-shared-prefix', "
            "max_concurrency=64)",
            "",
            "Generated shared prefix dataset statistics:",
            "Number of groups: 64",
            "Total input tokens: 2228224",
            "Average question length: 128.0 tokens",
            "",
            "#Images per request: 2 (fixed)",
            "Starting warmup with 1 sequences...",
            "============ Serving Benchmark Result ============",
            *BLOCK,
            R("Total input tokens:", 369103),
            "=" * 50,
            "",
        ]
    )
    r = parse_text(text, "sglang-bench-serving", path="x.log")
    (block,) = r.sources[0].blocks
    assert block.settings["dataset_name"] == "generated-shared-prefix"
    assert block.settings["total_input_tokens"] == 369103
    assert "label" not in block.settings
    assert diags(r) == []
    assert r.sources[0].record_counts["list-line"] == 3


@pytest.mark.parametrize(
    "above",
    [
        # vLLM's status sentences (0.11 ramp-up, 0.25+ trace self-timing)
        ["Traffic ramp-up strategy: linear.", "Will increase RPS from 1 to 20 RPS over the run."],
        ["Self timing is set, using the timestamps from the trace file."],
        [  # a failed request's traceback (0.14): its code lines are no label
            "Error 1: Traceback (most recent call last):",
            '  File "/usr/lib/python3/aiohttp/client.py", line 1425, in __aenter__',
            "    self._resp: _RetType = await self._coro",
        ],
    ],
)
def test_status_sentences_and_tracebacks_are_no_label(above: list[str]) -> None:
    r = parse_text("\n".join([*above, *BLOCK, ""]), "sglang-bench-serving")
    (block,) = r.sources[0].blocks
    assert "label" not in block.settings
    assert len(samples(r)) == 3


@pytest.mark.parametrize(
    "below",
    [
        ["============ Serving Benchmark Result ============", *BLOCK],  # a titled block
        BLOCK,  # a title-less one: its padded rows end the list
    ],
)
def test_a_bare_heading_right_above_a_block_is_its_label(below: list[str]) -> None:
    r = parse_text("\n".join(["Concurrency 8:", *below, ""]), "sglang-bench-serving")
    (block,) = r.sources[0].blocks
    assert block.settings["label"] == "Concurrency 8"
    assert samples(r) == samples(parse_text("\n".join([*below, ""]), "sglang-bench-serving"))
    assert len(samples(r)) == 3


@pytest.mark.parametrize(
    "broken",
    [
        # stderr written into a buffered stdout row (`2>&1 | tee`)
        [
            "Peak/usr/lib/python3/requests/__init__.py:102: RequestsDependencyWarning: old",
            "  warnings.warn(",
            " output token throughput (tok/s):    1312.00   ",
        ],
        [" output token throughput (tok/s):       1312.00   "],  # a paste cut at its start
    ],
)
def test_the_tail_of_a_broken_label_is_not_that_row(broken: list[str]) -> None:
    """` output token throughput (tok/s)` is `Peak output ...` cut: never output_throughput."""
    text = "\n".join([BLOCK[0], BLOCK[2], *broken, BLOCK[3], ""])
    r = parse_text(text, "sglang-bench-serving", path="x.log")
    assert "output_throughput_tok_s" not in [m for _, m, _ in samples(r)]
    assert [m for _, m, _ in samples(r)][-1] == "benchmark_duration_s"
    assert len(r.sources[0].blocks) == 1


def test_a_pasted_benchmark_command_gives_the_next_block_its_arguments() -> None:
    """`$ python3 -m sglang.bench_serving --random-input-len 1024 ...` pasted above a block,
    with no Namespace dump: its flags are the run's settings (confounds see them); a
    Namespace printed after it wins key by key; shell redirections are not flags."""
    title = "============ Serving Benchmark Result ============"
    command = (
        "user@gpu:~$ python3 -m sglang.bench_serving --backend sglang --random-input-len 1024 \\"
    )
    more = "    --num-prompts=200 --disable-tqdm --tag 'run a' 2>&1 | tee out.log --not-a-flag 1"
    r = parse_text("\n".join([command, more, "", title, *BLOCK, ""]), "sglang-bench-serving")
    (block,) = r.sources[0].blocks
    got = {k: v for k, v in block.settings.items() if k not in ("label", "request_rate")}
    assert got == {
        "backend": "sglang",
        "random_input_len": 1024,
        "num_prompts": 200,
        "disable_tqdm": True,
        "tag": "run a",
    }
    ns = "Namespace(backend='sglang-oai', random_input_len=2048, request_rate=4.0)"
    r = parse_text("\n".join([command, more, ns, title, *BLOCK, ""]), "sglang-bench-serving")
    (block,) = r.sources[0].blocks
    assert block.settings["random_input_len"] == 2048
    vllm = "$ vllm bench serve --model m --max-concurrency 16 --random-input-len 512"
    r = parse_text("\n".join([vllm, title, *BLOCK, ""]), "sglang-bench-serving")
    assert r.sources[0].blocks[0].settings["max_concurrency"] == 16


def test_server_lines_inside_a_block_neither_end_it_nor_label_the_next() -> None:
    text = "\n".join(
        [
            *BLOCK[:3],
            "[2025-11-14 09:11:03] Decode batch, #running-req: 4, #token: 4612, token usage: 0.03, "
            "cuda graph: True, gen throughput (token/s): 512.40, #queue-req: 0",
            F("Benchmark duration (s):", 12.5),
            "",
        ]
    )
    r = parse_text(text, "sglang-bench-serving", path="x.log")
    assert len(r.sources[0].blocks) == 1
    assert (0, "benchmark_duration_s", 12.5) in samples(r)
    assert (None, "gen_throughput_tok_s", 512.4) in samples(r)  # the embedded server reader
    assert r.sources[0].embedded_formats == ["sglang-server"]


# ------------------------------------------------------------------ values and cuts


@pytest.mark.parametrize(
    ("last", "expect"),
    [
        ("Successful requests:                     10", None),  # an int at the end: maybe 100
        ("Successful requests:                     10  ", 10.0),  # padding follows: complete
        ("Request throughput (req/s):              0.8", None),  # .2f with one decimal
        ("Request throughput (req/s):              0.", None),
        ("Request throughput (req/s):              0.81", 0.81),
        ("Request throughput (req/s):              ", None),
    ],
)
def test_a_value_at_the_end_of_a_cut_last_line(last: str, expect: float | None) -> None:
    text = "\n".join(
        [R("Backend:", "sglang"), R("Traffic request rate:", "inf"), F("Concurrency:", 1.0), last]
    )  # no final newline: the line is cut
    r = parse_text(text, "sglang-bench-serving", path="x.log")
    got = [v for _, m, v in samples(r) if m != "concurrency"]
    assert got == ([] if expect is None else [expect])
    codes = [d.code for d in r.diagnostics]
    assert ("truncated-value" in codes) == (expect is None)
    assert "truncated-output" in codes


def test_fewer_decimals_than_printed_are_kept_where_the_block_goes_on() -> None:
    """`0.8` (not `.2f`) on a line the block goes on after is whole; where the block ends
    there, the copy may have been cut at `0.8` (of `0.85`) with a newline added after."""
    rows = [R("Successful requests:", 10), "Request throughput (req/s):   0.8"]
    for after, got in (
        ([F("Benchmark duration (s):", 12.5), "=" * 50], [10.0, 0.8, 12.5]),
        (["=" * 50], [10.0, 0.8]),  # the footer
        (["```"], [10.0]),  # a fence closing a paste
        ([".5"], [10.0]),  # a wrapped copy: `0.8` / `.5`
        ([], [10.0]),  # the file's end
    ):
        r = parse_text("\n".join([*rows, *after, ""]), "sglang-bench-serving", path="x.log")
        assert [v for _, _, v in samples(r)] == got
        cut = [d for d in r.diagnostics if d.code == "truncated-value"]
        assert len(cut) == (len(got) == 1)


def test_percent_rows_are_fractions_and_nan_is_no_sample() -> None:
    text = "\n".join(
        [
            R("Successful requests:", 10),
            F("Acceptance rate (%):", 71.85),
            "Per-position acceptance (%):",
            F("  Position 0:", 82.1),
            "{:<40} {:.1f}%".format("Cache hit rate:", 37.5),
            R("Mean TPOT (ms):", "nan"),
            "",
        ]
    )
    r = parse_text(text, "vllm-bench-serve", path="x.log")
    assert samples(r) == [
        (0, "successful_requests", 10.0),
        (0, "draft_acceptance_rate", 0.7185),
        (0, "position_acceptance_rate_0", 0.821),
        (0, "cache_hit_rate", 0.375),
    ]
    assert diags(r) == [
        "x.log:6: warning: block 0: 'Mean TPOT (ms)' is nan; no sample taken [non-finite-value]"
    ]


def test_a_negative_or_huge_value_is_a_diagnostic_not_a_sample() -> None:
    # issue 19 case 12 for the block formats: a negative throughput is impossible
    text = "\n".join(
        [
            R("Successful requests:", 10),
            F("Output token throughput (tok/s):", -83.34),
            R("Mean TTFT (ms):", "1" * 500 + ".00"),
            "",
        ]
    )
    r = parse_text(text, "vllm-bench-serve", path="x.log")
    assert samples(r) == [(0, "successful_requests", 10.0)]
    assert diags(r) == [
        "x.log:2: warning: block 0: 'Output token throughput (tok/s)' is -83.34 (below "
        "zero); no sample taken [impossible-value]",
        "x.log:3: warning: block 0: 'Mean TTFT (ms)' is " + "1" * 39 + "\u2026; no sample "
        "taken [non-finite-value]",
    ]


def test_a_hard_wrapped_namespace_is_joined_and_a_cut_one_keeps_complete_items() -> None:
    ns = (
        "benchmark_args=Namespace(backend='sglang', num_prompts=100, request_rate=inf, "
        "max_concurrency=4, dataset_name='random')"
    )
    wrapped = [ns[i : i + 30] for i in range(0, len(ns), 30)]
    r = parse_text("\n".join([*wrapped, "", *BLOCK, ""]), "sglang-bench-serving", path="x.log")
    s = r.sources[0].blocks[0].settings
    assert (s["num_prompts"], s["max_concurrency"], s["dataset_name"]) == (100, 4, "random")
    r = parse_text(ns[:70], "sglang-bench-serving", path="x.log")
    assert diags(r)[0] == (
        "x.log:1: warning: the Namespace dump is cut; 2 arguments before the "
        "cut are kept [truncated-settings]"
    )


# ------------------------------------------------------------------ sniffing and truncation


@pytest.mark.parametrize("fmt", MY_FORMATS)
def test_sniff_takes_its_own_fixtures_and_steals_no_other_folder(fmt: str) -> None:
    sniff = PARSERS[fmt].sniff
    for folder in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        for path in sorted(folder.iterdir()):
            if path.name.endswith((".expected.csv", ".diag.txt", ".got")):
                continue
            head = path.read_text(encoding="utf-8", errors="replace")[:65536]
            mine = sniff(head, path.name)
            if folder.name == fmt:
                assert mine >= 0.5, path.name
            elif folder.name in PARSERS:  # another format's file must stay with its parser
                assert mine == 0.0 or mine < PARSERS[folder.name].sniff(head, path.name), path


def _my_fixtures() -> list[Path]:
    out = []
    for fmt in MY_FORMATS:
        for p in sorted((FIXTURES / fmt).iterdir()):
            if not p.name.endswith((".expected.csv", ".diag.txt", ".got")):
                out.append(p)
    return out


def _bag(result) -> collections.Counter[tuple[str, object]]:
    c = result.columns
    return collections.Counter(
        (m, "nan" if math.isnan(v) else v) for m, v in zip(c.metric, c.value, strict=True)
    )


@pytest.mark.parametrize("path", _my_fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cut_copies_only_yield_samples_of_the_whole_file(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    whole = _bag(parse_text(text, path=path.name))
    assert whole, "a fixture without samples"
    cuts = set()
    for m in re.finditer(r"\n", text):
        cuts.add(m.start() + 1)
        cuts.add(m.start())  # just before the newline: the last line is cut
    for m in re.finditer(r"\d[\d.]*", text):  # inside the last few numbers of each line
        cuts.update(range(m.start() + 1, m.end()))
    for i in sorted(cuts)[:: max(1, len(cuts) // 600)]:
        got = _bag(parse_text(text[:i], path=path.name))
        assert not got - whole, f"cut at {i} ({text[max(0, i - 40) : i]!r}) yields {got - whole}"


# ------------------------------------------------------------------ pastes and collectors

PASTED = [
    "============ Serving Benchmark Result ============",
    R("Backend:", "sglang"),
    R("Successful requests:", 100),
    R("Benchmark duration (s):", "10.00"),
    "---------------Time to First Token----------------",
    R("Mean TTFT (ms):", "55.10"),
    "=" * 50,
]


@pytest.mark.parametrize(
    ("line", "bare"),
    [
        ("bench.log:12:Mean TTFT (ms):   5", "Mean TTFT (ms):   5"),  # grep -n
        ("bench.log-13-----Time to First Token----", "----Time to First Token----"),  # context
        ("/var/log/run1/c16.log:Backend:  sglang", "Backend:  sglang"),
        ("2025-06-10T12:00:00.123456789Z Backend:  sglang", "Backend:  sglang"),  # docker -t
        ("bench-1  | Backend:  sglang", "Backend:  sglang"),  # compose
        ("[1,0]<stdout>:Backend:  sglang", "Backend:  sglang"),  # mpirun
        ("(APIServer pid=7) INFO 05-12 x", "INFO 05-12 x"),
        ("- Backend:  sglang", "Backend:  sglang"),  # Markdown bullet
        (
            "100%|██████████| 9/9 [00:01<00:00,  6.48it/s]Successful requests:  9",
            "Successful requests:  9",
        ),
        # never prefixes: an address, a percentile, a section rule, a negative number
        ("127.0.0.1:40052 - x", "127.0.0.1:40052 - x"),
        ("P99.9 TTFT (ms):   5", "P99.9 TTFT (ms):   5"),
        ("---- x ----", "---- x ----"),
        ("-1.5", "-1.5"),
        (
            "100%|██████████| 9/9 [00:01<00:00,  6.48it/s]",
            "100%|██████████| 9/9 [00:01<00:00,  6.48it/s]",
        ),
    ],
)
def test_strip_outer(line: str, bare: str) -> None:
    assert _fields.strip_outer(line) == bare


@pytest.mark.parametrize("prefix", ["bench.log:", "bench.log-40-", "svc-1  | ", "[1,0]<stdout>:"])
def test_prefixed_blocks_are_detected_and_read(prefix: str) -> None:
    r = parse_text("".join(prefix + line + "\n" for line in PASTED), path="p.log")
    assert r.sources[0].format == "sglang-bench-serving"
    assert samples(r) == [
        (0, "successful_requests", 100.0),
        (0, "benchmark_duration_s", 10.0),
        (0, "ttft_ms_mean", 55.1),
    ]
    assert r.sources[0].blocks[0].settings["backend"] == "sglang"


def test_grep_prefixed_jsonl_is_detected() -> None:
    rec = '{"backend": "sglang", "random_range_ratio": 1.0, "completed": 5, "request_throughput": 1.5}'
    r = parse_text(f"out.jsonl:{rec}\nout.jsonl:{rec}\n", path="g.log")
    assert r.sources[0].format == "sglang-bench-serving"
    assert [m for m in r.columns.metric] == ["successful_requests", "request_throughput_req_s"] * 2


def test_prose_naming_rows_is_no_benchmark() -> None:
    prose = "We compare Mean TTFT (ms): lower is better.\nRequest throughput (req/s): higher.\n"
    assert parse_text(prose, path="notes.txt").sources[0].format is None


@pytest.mark.parametrize("tail", ["Mean TT", "-----Time to Fi"])
def test_a_file_ending_in_a_partial_row_says_the_block_is_cut(tail: str) -> None:
    text = "\n".join(PASTED[:4]) + "\n" + tail
    r = parse_text(text, format="sglang-bench-serving")
    assert [d.code for d in r.diagnostics] == ["truncated-output"]


def test_a_shell_prompt_after_a_footerless_block_is_no_cut() -> None:
    text = "\n".join(PASTED[:4]) + "\nuser@host:~/bench$ "
    r = parse_text(text, format="sglang-bench-serving")
    assert [d.code for d in r.diagnostics] == []


def test_a_warning_between_rows_does_not_split_the_block() -> None:
    warn = "/usr/lib/python3/dist-packages/sglang/bench_serving.py:9: UserWarning: 1 request failed"
    lines = [*PASTED[:3], warn, "  warnings.warn(", *PASTED[3:]]
    r = parse_text("\n".join(lines) + "\n", format="sglang-bench-serving")
    assert len(r.sources[0].blocks) == 1
    assert [m for _, m, _ in samples(r)] == [
        "successful_requests",
        "benchmark_duration_s",
        "ttft_ms_mean",
    ]
    assert r.diagnostics == []


@pytest.mark.parametrize("label", ["TFT SLO attainment (%)", "Queue SLO attainment (%)"])
def test_rows_never_invent_unregistered_metric_names(label: str) -> None:
    assert lookup(label, "goodput" if "SLO" in label else None) is None
    assert _blocks._json_metric("p42_ttfx_ms") is None


@pytest.mark.parametrize(
    ("label", "metric"),
    [
        ("P42 TTFT (ms)", "ttft_ms_p42"),
        ("P80 ITL (ms)", "itl_ms_p80"),
        ("P99.5 E2EL (ms)", "e2e_latency_ms_p995"),
    ],
)
def test_custom_percentiles_are_a_registered_family(label: str, metric: str) -> None:
    # `--metric-percentiles` prints any P<p> row; the registry knows the whole family
    found = lookup(label, None)
    assert found is not None
    assert metric in str(found)


_REC = '{"backend": "sglang", "completed": 64, "request_throughput": 0.94, "accept_length": 2.9}'


@pytest.mark.parametrize(
    ("head", "jsonl"),
    [
        (f"{_REC}\n{_REC}\n", True),
        (f'{{"backend": "sgl\n{_REC}\n{_REC}\n', True),  # a corrupt first record
        (f"$ cat out.jsonl\n{_REC}\n{_REC}\n", True),  # pasted with its prompt
        ('{"backend": "sglang", "output_lens": [1, 2, 3', True),  # one record longer than the head
        (f"{_REC}", True),  # one record, no final newline
        ("{\nuser@box:~$ python3 -m sglang.bench_serving\nNamespace(backend='sglang')\n", False),
        (f"Namespace(backend='sglang')\n{_REC}\nBackend: sglang\nDone.\n", False),  # one of four
        ("============ Serving Benchmark Result ============\n", False),
        ("", False),
    ],
)
def test_jsonl_is_told_by_its_first_lines_not_by_a_first_brace(head: str, jsonl: bool) -> None:
    assert _blocks.looks_like_jsonl(head) is jsonl


@pytest.mark.parametrize(
    ("named", "merged"),
    [
        ({7: {"line": 30}}, False),  # a block of its own, beside the bulk ones
        ({2: {"settings": {"speculative_num_steps": 3}}}, True),  # one the bulk read started
        ({-1: {"line": 2}, 99: {"line": 3}}, False),  # before and after every bulk block
        ({21: {"line": 70}}, True),  # in the second of two bulk reads
    ],
)
def test_a_source_names_a_block_its_bulk_read_started_only_where_it_did(
    named: dict[int, dict[str, Any]], merged: bool
) -> None:
    """A block named by a record of its own (settings, a line) among blocks a fast path
    started in bulk: the bulk blocks are met one by one where one of them is named (the
    named one takes their line and format), and stay arrays where none is."""
    import numpy as np

    from sessionlens.model import BlockStarts
    from sessionlens.parsers import _source_blocks

    plain = [
        BlockStarts(np.array([0, 2, 5], np.int64), np.array([1, 9, 20], np.int64), "phase"),
        BlockStarts(np.array([8, 21], np.int64), np.array([40, 70], np.int64), "phase"),
    ]
    got = _source_blocks({b: dict(v) for b, v in named.items()}, plain, "sglang-server")
    assert bool(got._plain) is not merged
    blocks = {b.block: b for b in got}
    assert sorted(blocks) == sorted({0, 2, 5, 8, 21, *named})
    for b, line in ((0, 1), (2, 9), (5, 20), (8, 40), (21, 70)):
        assert blocks[b].line == line
        assert blocks[b].format == "phase"
    for b, v in named.items():
        assert blocks[b].settings == v.get("settings", {})


def test_passing_in_bulk_is_passes_line_by_line() -> None:
    """`BlockReader.passing` (a polars pass for the usual server-log prefixes, any other
    line asked on its own) says of every line what `passes` says: vLLM's and SGLang's
    lines behind their prefixes, uvicorn's, a block's title, rule and section, tqdm bars,
    odd process names, digits beyond ASCII, text that only looks like a prefix."""
    import numpy as np
    import polars as pl

    from sessionlens.parsers.base import ParseContext
    from sessionlens.parsers.vllm_server import Reader

    ctx = ParseContext(file="x.log")
    bench = ctx.embed("vllm-bench-serve", server=Reader(ctx))
    heads = [
        "(APIServer pid=1) ",
        "(EngineCore_DP0 pid=77) ",
        "(VllmWorker rank=0 pid=5) ",
        "(pid=12) ",
        "(Wörker pid=3) ",
        "(APIServer pid=١٢) ",
        "(APIServer pid=1)\t",
        "(APIServer pid=1, ip=10.0.0.1) ",
        "",
        "2026-03-02T09:15:00.123Z ",
        "svc-1  | ",
    ]
    bodies = [
        "INFO 11-14 09:05:43 [loggers.py:236] Engine 000: Avg prompt throughput: 1.0 tokens/s",
        'INFO:     127.0.0.1:36729 - "POST /generate HTTP/1.1" 200 OK',
        "WARNING 11-14 09:05:43 [x.py:1] something",
        "INFO 1-14 09:05:43 not a date",
        "INFO:127.0.0.1 glued",
        "[2025-11-14 09:00:00 TP0] Decode batch, #running-req: 1",
        "============ Serving Benchmark Result ============",
        "==================================================",
        "---------------Time to First Token----------------",
        "Successful requests:                     200",
        "100%|██████████| 200/200 [00:10<00:00, 19.9it/s]INFO 11-14 09:05:43 [x.py:1] after",
        "- INFO 11-14 09:05:43 [x.py:1] a bullet",
        "Namespace(backend='vllm', dispatch_function=<function x>)",
        "",
    ]
    lines = [h + b for h in heads for b in bodies]
    got = bench.passing(pl.Series(lines, dtype=pl.String))
    want = np.array([bench.passes(x) for x in lines])
    assert got.tolist() == want.tolist(), [
        x for x, g, w in zip(lines, got, want, strict=True) if g != w
    ]
    assert want.sum() > 20  # both kinds are there
