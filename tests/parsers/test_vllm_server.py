"""vllm-server: keyed engine/spec lines, bonus-token inference, V0 deltas, idle rule, cuts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sessionlens import metrics
from sessionlens.parsers import parse_text, vllm_server
from sessionlens.parsers.vllm_server import bonus_from_version

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "vllm-server"

ENGINE = (
    "INFO 05-12 08:21:03 [loggers.py:118] Engine 000: Avg prompt throughput: 2.4 tokens/s, "
    "Avg generation throughput: 31.7 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
    "GPU KV cache usage: 0.3%, Prefix cache hit rate: 0.0%"
)
SPEC_085 = (
    "INFO 05-12 08:21:03 [metrics.py:82] SpecDecoding metrics: Draft acceptance rate: 62.3%, "
    "Mean acceptance length: {al}, Accepted: 1870 tokens, Drafted: 3000 tokens, "
    "Per-position acceptance rate: 0.790, 0.620, 0.460"
)


def rows(text: str) -> list[tuple[int, str | None, str, float]]:
    result = parse_text(text, format="vllm-server")
    return [(r["line"], r["rank"], r["metric"], r["value"]) for r in result.columns.rows()]


def values(text: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for _, _, metric, value in rows(text):
        out.setdefault(metric, []).append(value)
    return out


def diags(text: str) -> list[str]:
    return [f"{d.line}:{d.code}" for d in parse_text(text, format="vllm-server").diagnostics]


def settings(text: str) -> dict[str, object]:
    return parse_text(text, format="vllm-server").sources[0].settings


# ------------------------------------------------------------------ sniff


def test_sniff_claims_engine_lines_and_spec_lines() -> None:
    assert vllm_server.sniff(ENGINE, "x.log") == 1.0
    assert vllm_server.sniff(SPEC_085.format(al="1.87"), "x.log") == 1.0
    assert (
        vllm_server.sniff(
            "INFO 04-30 09:10:02 [api_server.py:1043] vLLM API server version 0.8.5", "x.log"
        )
        == 0.8
    )


def test_sniff_leaves_other_formats_alone() -> None:
    sglang = (
        "[2025-01-02 03:04:05 TP0] Decode batch. #running-req: 1, #token: 90, "
        "token usage: 0.00, gen throughput (token/s): 59.90, #queue-req: 0"
    )
    assert vllm_server.sniff(sglang, "server.log") == 0.0
    assert vllm_server.sniff("Run 1/5: 2048 tokens in 33.88s = 60.4 tok/s", "b.log") == 0.0
    # a terminal holding a vLLM server and a serving benchmark: the block parser decides
    mixed = ENGINE + "\n============ Serving Benchmark Result ============\n"
    assert vllm_server.sniff(mixed, "t.log") < 1.0


# ------------------------------------------------------------------ engine lines


def test_engine_fields_in_any_order_and_subset() -> None:
    shuffled = (
        "INFO 12-03 10:00:00 [loggers.py:236] Engine 003: Running: 5 reqs, "
        "GPU KV cache usage: 12.5%, Avg generation throughput: 40.0 tokens/s, "
        "Waiting: 2 reqs, Avg prompt throughput: 0.0 tokens/s\n"
    )
    got = rows(shuffled)
    assert got == [  # in printed order
        (1, "Engine 003", "running_req", 5.0),
        (1, "Engine 003", "kv_cache_usage", 0.125),
        (1, "Engine 003", "gen_throughput_tok_s", 40.0),
        (1, "Engine 003", "waiting_req", 2.0),
        (1, "Engine 003", "prompt_throughput_tok_s", 0.0),
    ]


@pytest.mark.parametrize(
    "prefix",
    [
        "",
        "(APIServer pid=2236552) ",
        "[1;36m(APIServer pid=2236552)[0;0m ",
        "\x1b[0;36m(APIServer pid=1)\x1b[0;0m ",
        "2025-12-05T09:14:02.118734562Z ",
        "vllm-1  | ",
        "[1,0]<stdout>:",
        "server.log:",
        "(RayWorkerWrapper pid=1, ip=127.0.0.1) ",
    ],
)
def test_engine_line_behind_any_prefix(prefix: str) -> None:
    got = rows(prefix + ENGINE + "\n")
    assert got[0] == (1, "Engine 000", "prompt_throughput_tok_s", 2.4)
    assert [m for _, _, m, _ in got] == [
        "prompt_throughput_tok_s",
        "gen_throughput_tok_s",
        "running_req",
        "waiting_req",
        "kv_cache_usage",
        "prefix_cache_hit_rate",
    ]
    assert parse_text(prefix + ENGINE + "\n", format="vllm-server").columns.ts[0] == (
        "05-12 08:21:03"
    )


def test_v0_line_with_final_period_and_pending() -> None:
    v0 = (
        "INFO 10-21 14:01:45 metrics.py:349] Avg prompt throughput: 412.6 tokens/s, Avg "
        "generation throughput: 318.4 tokens/s, Running: 8 reqs, Swapped: 0 reqs, Pending: 3 "
        "reqs, GPU KV cache usage: 4.1%, CPU KV cache usage: 0.5%.\n"
    )
    got = values(v0)
    assert got["waiting_req"] == [3.0]
    assert got["kv_cache_usage"] == [0.041]
    assert got["cpu_kv_cache_usage"] == [0.005]


def test_idle_intervals_are_dropped_but_draining_ones_kept() -> None:
    idle = ENGINE.replace("2.4", "0.0").replace("31.7", "0.0").replace("Running: 1", "Running: 0")
    draining = ENGINE.replace("Running: 1", "Running: 0")
    text = idle + "\n" + draining + "\n"
    got = rows(text)
    assert {line for line, *_ in got} == {2}
    assert diags(text) == ["1:idle-interval"]


def test_cut_engine_line_keeps_complete_fields_only() -> None:
    cut = ENGINE.split(", Waiting")[0] + ", Waiting: 1"
    assert values(cut) == {
        "prompt_throughput_tok_s": [2.4],
        "gen_throughput_tok_s": [31.7],
        "running_req": [1.0],
    }
    assert diags(cut) == ["1:truncated-value"]
    # the unit started: the number before it is complete
    assert values(ENGINE.split(", Waiting")[0] + ", Waiting: 1 re")["waiting_req"] == [1.0]


@pytest.mark.parametrize("at", ["Running: 1", "Avg generation throughput: 31.", "usage: 0."])
def test_a_line_broken_where_a_unit_should_follow_is_cut(at: str) -> None:
    """A wrapped copy (tmux, `fold`, a paste): the line ends, newline and all, where the
    field's unit or `%` is printed; its number may be the start of a longer one."""
    head, tail = ENGINE.split(at, 1)
    broken = f"{head}{at}\n{tail.lstrip()}\n"
    got = values(broken)
    assert diags(broken)[0] == "1:truncated-value"
    clean = values(ENGINE + "\n")
    for metric, found in got.items():  # what is read is what the clean line says
        assert found == clean[metric]
    assert len(got) < len(clean)


def test_cut_idle_looking_line_gives_no_sample() -> None:
    cut = "INFO 05-12 08:21:03 [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tok"
    assert rows(cut) == []
    assert diags(cut) == ["1:truncated-value", "None:no-samples"]


def test_kv_fetch_and_device_kv_usage() -> None:
    line = (
        "(APIServer pid=5) INFO 11-03 16:40:10 [loggers.py:257] Engine 000: Avg prompt "
        "throughput: 1.0 tokens/s, Avg generation throughput: 9.0 tokens/s, Running: 4 reqs, "
        "Waiting: 0 reqs, KV fetch: 3 waiting to start, 1 in progress, 2 completed waiting, "
        "NPU KV cache usage: 3.2%\n"
    )
    got = values(line)
    assert got["kv_fetch_waiting_req"] == [3.0]
    assert got["kv_fetch_in_progress_req"] == [1.0]
    assert got["kv_fetch_completed_waiting_req"] == [2.0]
    assert got["kv_cache_usage"] == [0.032]
    assert settings(line)["kv_cache_device"] == "NPU"


def test_unknown_engine_field_is_reported_once() -> None:
    line = ENGINE + ", Bananas: 3 reqs\n"
    assert diags(line + line) == ["1:unknown-field"]
    assert "bananas" not in " ".join(values(line))


# ------------------------------------------------------------------ spec lines


def test_spec_line_takes_rank_of_engine_line_before_it() -> None:
    text = (
        ENGINE
        + "\n"
        + SPEC_085.format(al="1.87")
        + "\n"
        + ENGINE.replace("Engine 000", "Engine 001")
        + "\n"
        + SPEC_085.format(al="1.87")
    )
    ranks = {(line, rank) for line, rank, _, _ in rows(text + "\n")}
    assert ranks == {(1, "Engine 000"), (2, "Engine 000"), (3, "Engine 001"), (4, "Engine 001")}


def test_per_position_rates_are_zero_based() -> None:
    got = values(SPEC_085.format(al="1.87") + "\n")
    assert got["position_acceptance_rate_0"] == [0.79]
    assert got["position_acceptance_rate_2"] == [0.46]
    assert "position_acceptance_rate_3" not in got
    assert got["draft_acceptance_rate"] == [0.623]


def test_cut_per_position_list_keeps_whole_positions() -> None:
    cut = SPEC_085.format(al="1.87")[:-2]  # "..., 0.620, 0.4"
    got = values(cut)
    assert got["position_acceptance_rate_1"] == [0.62]
    assert "position_acceptance_rate_2" not in got
    # an incomplete list cannot tell whether the length counts the bonus token
    assert diags(cut) == ["1:truncated-value", "1:accept-len-bonus-unknown"]


@pytest.mark.parametrize(
    ("al", "expected"),
    [("1.87", False), ("2.87", True)],  # 0.8.5: accepted/drafts; 0.9+: 1 + accepted/drafts
)
def test_bonus_told_by_per_position_rates(al: str, expected: bool) -> None:
    assert settings(SPEC_085.format(al=al) + "\n")["accept_len_counts_bonus"] is expected


def test_bonus_told_by_field_set_of_0_10_2() -> None:
    # a dev build's order: rate first, throughput fields, no `Avg`, no per-position list
    line = (
        "INFO 09-01 10:00:00 [metrics.py:96] SpecDecoding metrics: Draft acceptance rate: "
        "61.8%, Mean acceptance length: 2.85, Accepted throughput: 82.50 tokens/s, Drafted "
        "throughput: 133.50 tokens/s, Accepted: 825 tokens, Drafted: 1335 tokens\n"
    )
    got = values(line)
    assert got["accepted_throughput_tok_s"] == [82.5]
    assert got["draft_acceptance_rate"] == [0.618]
    assert settings(line)["accept_len_counts_bonus"] is True


def test_bonus_told_by_config_k_when_no_positions() -> None:
    config = (
        "INFO 05-01 10:00:00 [core.py:58] Initializing a V1 LLM engine (v0.9.0.dev3) with "
        "config: model='m', speculative_config=SpeculativeConfig(method='eagle', model='d', "
        "num_spec_tokens=3), tensor_parallel_size=1\n"
    )
    line = (
        "INFO 05-01 10:00:10 [metrics.py:82] SpecDecoding metrics: Mean acceptance length: "
        "2.87, Accepted: 1870 tokens, Drafted: 3000 tokens\n"
    )
    assert settings(config + line)["accept_len_counts_bonus"] is True


def test_bonus_unknown_is_said_not_guessed() -> None:
    line = (
        "INFO 05-01 10:00:10 [metrics.py:82] SpecDecoding metrics: Mean acceptance length: "
        "1.87, Accepted: 1870 tokens, Drafted: 3000 tokens\n"
    )
    assert "accept_len_counts_bonus" not in settings(line)
    assert diags(line) == ["1:accept-len-bonus-unknown"]
    assert values(line)["accept_len"] == [1.87]


def test_bonus_from_version_line() -> None:
    line = (
        "INFO 05-01 10:00:10 [metrics.py:82] SpecDecoding metrics: Mean acceptance length: "
        "2.10, Accepted: 1870 tokens, Drafted: 3000 tokens\n"
    )
    head = "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.9.2\n"
    assert settings(head + line)["accept_len_counts_bonus"] is True
    assert settings(head.replace("0.9.2", "0.8.5") + line)["accept_len_counts_bonus"] is False


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.7.3", False),
        ("0.8.5", False),
        ("0.8.5.post1", False),
        ("0.8.5+cu118", False),
        ("0.8.5.dev3+g1a2b", False),
        ("0.8.6.dev12+gabc", None),
        ("0.9.0rc1", True),
        ("0.9.0", True),
        ("0.10.2", True),
        ("0.33.0", True),
        ("main", None),
    ],
)
def test_bonus_from_version(version: str, expected: bool | None) -> None:
    assert bonus_from_version(version) is expected


def test_conflicting_lines_warn_mixed_accept_len() -> None:
    text = SPEC_085.format(al="1.87") + "\n" + SPEC_085.format(al="2.87") + "\n"
    assert settings(text)["accept_len_counts_bonus"] is False
    assert diags(text) == ["2:mixed-accept-len"]


def test_early_v1_speculative_metrics_are_per_interval() -> None:
    line = (
        "INFO 03-24 16:04:02 [metrics.py:42] Speculative metrics: Draft acceptance rate: "
        "0.203, Number of accepted tokens: 104, Number of draft tokens: 512, \n"
    )
    got = values(line + line)
    assert got["accepted_tokens"] == [104.0, 104.0]  # not differenced
    assert got["draft_acceptance_rate"] == [0.203, 0.203]


# ------------------------------------------------------------------ V0 cumulative counters

V0_SPEC = (
    "INFO 10-21 14:01:45 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.587, "
    "System efficiency: 0.541, Number of speculative tokens: 3, Number of accepted tokens: {a}, "
    "Number of draft tokens: {d}, Number of emitted tokens: {e}."
)
V0_INIT = (
    "INFO 10-21 14:00:09 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with "
    "config: model='m', speculative_config=SpeculativeConfig(draft_model='d', "
    "num_spec_tokens=3), tensor_parallel_size=1)\n"
)


@pytest.mark.parametrize("at", ["Draft acceptance rate: 0.", "System efficiency: 0."])
def test_a_v0_line_broken_at_a_decimal_point_is_cut_not_a_full_stop(at: str) -> None:
    """V0's sentence ends in a full stop after its last count; a field printed with
    decimals never ends in its point: `0.` then `587, ...` is a wrapped copy."""
    line = V0_SPEC.format(a=1320, d=2250, e=1623)
    head = line[: line.index(at) + len(at)]
    text = V0_INIT + head + "\n" + line[len(head) :] + "\n"
    got = values(text)
    assert 0.0 not in got.get("draft_acceptance_rate", []) + got.get("system_efficiency", [])
    assert "1:truncated-value" not in diags(text)
    assert "2:truncated-value" in diags(text)
    assert values(V0_INIT + line + "\n")["emitted_tokens"] == [1623.0]  # its full stop


def test_v0_counters_become_deltas_from_engine_start() -> None:
    text = (
        V0_INIT
        + V0_SPEC.format(a=1320, d=2250, e=1623)
        + "\n"
        + V0_SPEC.format(a=3050, d=5100, e=3860)
        + "\n"
    )
    got = values(text)
    assert got["accepted_tokens"] == [1320.0, 1730.0]
    assert got["drafted_tokens"] == [2250.0, 2850.0]
    assert got["emitted_tokens"] == [1623.0, 2237.0]
    # Δemitted / (Δdrafted / k): tokens per verify cycle, bonus included
    assert got["accept_len"] == [1623 / 750, 2237 / 950]
    assert got["draft_acceptance_rate"] == [0.587, 0.587]  # rates as printed
    s = settings(text)
    assert s["accept_len_counts_bonus"] is True
    assert s["accept_len_derived"] is True
    assert s["speculative_num_steps"] == 3
    assert s["speculative_algorithm"] == "draft_model"
    assert s["tensor_parallel_size"] == 1  # the stray `)` of 0.4–0.6 is not part of the value


def test_v0_counters_without_engine_start_set_a_baseline() -> None:
    text = V0_SPEC.format(a=1320, d=2250, e=1623) + "\n" + V0_SPEC.format(a=3050, d=5100, e=3860)
    got = values(text + "\n")
    assert got["accepted_tokens"] == [1730.0]
    assert diags(text + "\n") == ["1:cumulative-baseline"]


def test_v0_typo_tokens_tokens_is_read() -> None:
    text = (
        V0_INIT
        + V0_SPEC.replace("draft tokens:", "draft tokens tokens:")
        .replace("emitted tokens:", "emitted tokens tokens:")
        .format(a=1320, d=2250, e=1623)
        + "\n"
    )
    assert values(text)["emitted_tokens"] == [1623.0]


def test_v0_cut_final_counter_is_not_guessed() -> None:
    text = V0_INIT + V0_SPEC.format(a=1320, d=2250, e=1623)[:-3]  # "... emitted tokens: 16"
    got = values(text)
    assert "emitted_tokens" not in got
    assert "accept_len" not in got
    assert got["drafted_tokens"] == [2250.0]


# ------------------------------------------------------------------ settings


def test_non_default_args_and_aliases() -> None:
    line = (
        "(APIServer pid=1) INFO 09-09 11:50:02 [utils.py:328] non-default args: {'model': "
        "'m', 'speculative_config': {'method': 'eagle3', 'num_speculative_tokens': 3}}\n"
    )
    s = settings(line)
    assert s["speculative_config.method"] == "eagle3"
    assert s["speculative_algorithm"] == "eagle3"
    assert s["speculative_num_steps"] == 3


def test_cut_config_line_keeps_settings_before_the_cut() -> None:
    line = (
        "INFO 04-30 09:10:14 [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: "
        "model='m', tensor_parallel_size=2, max_seq_len=1310"
    )
    result = parse_text(line, format="vllm-server")
    s = result.sources[0].settings
    assert s["tensor_parallel_size"] == 2
    assert "max_seq_len" not in s
    assert s["vllm_version"] == "0.8.5"
    assert [d.code for d in result.diagnostics] == ["truncated-settings", "no-samples"]


def test_error_lines_are_reported_once_per_run() -> None:
    text = (
        "ERROR 12-05 09:14:17 [core.py:1] EngineCore failed.\n"
        "ERROR 12-05 09:14:17 [core.py:2] Traceback (most recent call last):\n" + ENGINE + "\n"
    )
    result = parse_text(text, format="vllm-server")
    assert [str(d) for d in result.diagnostics] == [
        "<text>:1: error: the server logged an error: 'EngineCore failed.' [server-error]"
    ]


# ------------------------------------------------------------------ fixtures as a whole


def _fixture_texts() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*.log"))


@pytest.mark.parametrize("path", _fixture_texts(), ids=lambda p: p.name)
def test_fixture_metrics_are_registered(path: Path) -> None:
    result = parse_text(path.read_text(encoding="utf-8"), format="vllm-server")
    assert result.columns.metric, "the fixture yields samples"
    assert all(metrics.is_known(m) for m in result.columns.metric)


@pytest.mark.parametrize("path", _fixture_texts(), ids=lambda p: p.name)
def test_cut_anywhere_yields_only_samples_of_the_whole(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    whole = set(_samples(text))
    cuts = {i + 1 for i, ch in enumerate(text) if ch == "\n"}
    cuts |= {i for i, ch in enumerate(text) if ch.isdigit() or ch in ".%"}
    for at in sorted(cuts):
        part = _samples(text[:at])
        assert set(part) <= whole, f"cut at byte {at}: {set(part) - whole}"


def _samples(text: str) -> list[tuple[int, str | None, str, float]]:
    result = parse_text(text, format="vllm-server")
    cols = result.columns
    return list(zip(cols.line, cols.rank, cols.metric, cols.value, strict=True))


def test_nan_rates_are_no_samples() -> None:
    line = (
        "INFO 04-30 09:11:25 [metrics.py:82] SpecDecoding metrics: Draft acceptance rate: "
        "nan%, Mean acceptance length: nan, Accepted: 0 tokens, Drafted: 0 tokens, "
        "Per-position acceptance rate: nan, nan\n"
    )
    result = parse_text(ENGINE + "\n" + line, format="vllm-server")
    got = [m for m, ln in zip(result.columns.metric, result.columns.line, strict=True) if ln == 2]
    assert got == ["accepted_tokens", "drafted_tokens"]
    # the two rates and the two per-position rates: none is dropped without being counted
    assert result.sources[0].record_counts["nan-value"] == 4


def test_infinite_and_negative_values_are_diagnostics_not_samples() -> None:
    text = ENGINE.replace("2.4 tokens/s", "inf tokens/s") + "\n"
    result = parse_text(text, format="vllm-server", path="v.log")
    assert "prompt_throughput_tok_s" not in result.columns.metric
    assert "gen_throughput_tok_s" in result.columns.metric
    assert result.sources[0].record_counts["non-finite-value"] == 1
    assert [str(d) for d in result.diagnostics] == [
        "v.log:1: warning: engine line: prompt_throughput_tok_s is inf (not a finite number); "
        "no sample taken [non-finite-value]"
    ]
    gen = re.search(r"Avg generation throughput: ([\d.]+)", ENGINE)
    assert gen is not None
    text = ENGINE.replace(gen.group(), "Avg generation throughput: -83.34") + "\n"
    result = parse_text(text, format="vllm-server", path="v.log")
    assert "gen_throughput_tok_s" not in result.columns.metric
    assert [str(d) for d in result.diagnostics] == [
        "v.log:1: warning: engine line: gen_throughput_tok_s is -83.34 (below zero); "
        "no sample taken [impossible-value]"
    ]


def test_a_third_kv_device_is_an_unknown_field_not_a_new_metric() -> None:
    v0 = (
        "INFO 10-21 14:02:01 metrics.py:349] Avg prompt throughput: 512.0 tokens/s, Avg "
        "generation throughput: 96.3 tokens/s, Running: 8 reqs, Swapped: 0 reqs, Pending: 0 "
        "reqs, GPU KV cache usage: 4.1%, C\x01PU KV cache usage: 0.0%.\n"
    )
    got = {m for _, _, m, _ in _samples(v0)}
    assert "kv_cache_usage" in got
    assert all(metrics.is_known(m) for m in got)
    assert diags(v0) == ["1:unknown-field"]


def test_the_servers_own_args_dump_is_no_benchmark_run() -> None:
    # `vllm serve` (0.8.5) logs its args as a Namespace with a `dispatch_function`, like
    # `vllm bench serve`'s dump; its `subparser='serve'` tells them apart
    args = (
        "(APIServer pid=1) INFO 04-30 09:10:02 [api_server.py:1044] args: Namespace("
        "subparser='serve', model_tag='m', port=8000, tensor_parallel_size=2, "
        "dispatch_function=<function ServeSubcommand.cmd at 0x7f1c2e3b1d80>)"
    )
    bench = (
        "Namespace(subparser='bench', dispatch_function=<function f at 0x7f>, max_concurrency=8)"
    )
    assert not vllm_server._BENCH_START.search(args)
    assert vllm_server._BENCH_START.search(bench)
    r = parse_text("\n".join([args, ENGINE]) + "\n", path="serve.log", format="vllm-server")
    src = r.sources[0]
    assert src.embedded_formats == []
    assert "foreign-line" not in src.record_counts  # no block reader took the lines
    assert "gen_throughput_tok_s" in r.columns.metric


def test_a_benchmark_block_past_the_sniffed_head_is_still_read() -> None:
    # `vllm serve` and `vllm bench serve` in one log: detection sees only the first 64 KB,
    # all server lines, so this parser must hand the block to the bench-serve reader.
    access = '(APIServer pid=1) INFO:     127.0.0.1:40000 - "POST /v1/completions HTTP/1.1" 200 OK'
    lines = [access] * 900 + [ENGINE]
    lines += [
        "Namespace(subparser='bench', dispatch_function=<function f at 0x7f>, max_concurrency=8)",
        "============ Serving Benchmark Result ============",
        f"{'Successful requests:':<40} {200:<10}",
        f"{'Output token throughput (tok/s):':<40} {829.82:<10}",
        "=" * 50,
        ENGINE.replace("31.7", "12.5"),
    ]
    r = parse_text("\n".join(lines) + "\n", path="serve.log")
    src = r.sources[0]
    assert src.format == "vllm-server"
    assert src.embedded_formats == ["vllm-bench-serve"]
    got = [
        (b, m, v)
        for b, m, v in zip(r.columns.block, r.columns.metric, r.columns.value, strict=True)
    ]
    assert (0, "successful_requests", 200.0) in got
    assert (0, "output_throughput_tok_s", 829.82) in got
    assert [v for b, m, v in got if m == "gen_throughput_tok_s"] == [31.7, 12.5]  # both sides
    assert src.blocks[0].format == "vllm-bench-serve"
    assert src.blocks[0].settings["max_concurrency"] == 8
    assert r.diagnostics == []


@pytest.mark.parametrize("k", ["inf", "nan", "0", "-2", "2.5"])
def test_a_v0_spec_line_whose_token_count_is_no_count(k: str) -> None:
    """Found by the CI fuzz run: `Number of speculative tokens: inf` raised OverflowError
    (exit 3). It is a diagnostic, and the count of the engine's config (3) stays the one used."""
    path = FIXTURES / "v0.6.3-v0-spec-cumulative.log"
    text = re.sub(
        r"Number of speculative tokens: \d+", f"Number of speculative tokens: {k}", path.read_text()
    )
    r = parse_text(text, format="vllm-server", path="v0.log")
    codes = [d.code for d in r.diagnostics]
    assert ("non-finite-value" if k in ("inf", "nan") else "impossible-value") in codes
    assert r.sources[0].settings.get("speculative_num_steps") == 3
