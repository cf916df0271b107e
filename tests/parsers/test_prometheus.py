"""prometheus: scrapes of vLLM and SGLang /metrics, counters differenced between scrapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessionlens.parsers import detect, parse_file, parse_text

HERE = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "prometheus"


def values(result, metric: str) -> list[float]:
    c = result.columns
    return [v for m, v in zip(c.metric, c.value, strict=True) if m == metric]


def test_scrape_loop_deltas_rates_and_acceptance() -> None:
    r = parse_file(HERE / "vllm-0.11-eagle3-scrape-loop.prom")
    assert r.sources[0].format == "prometheus"
    # gauges of every scrape; counters from the second scrape on (the first is a baseline)
    assert values(r, "running_req") == [16.0, 16.0, 15.0]
    assert values(r, "accepted_tokens") == [3312.0, 3312.0]
    # 1 + Δaccepted / Δdrafts (vLLM's definition: the bonus token counted)
    assert values(r, "accept_len") == [1 + 3312 / 1800] * 2
    assert r.sources[0].settings["accept_len_counts_bonus"] is True
    assert values(r, "draft_acceptance_rate") == [3312 / 5400] * 2
    assert values(r, "position_acceptance_rate_2") == [0.41, 0.41]
    # rates only from the scrapes' own times (10 s apart)
    assert values(r, "gen_throughput_tok_s") == [511.2, 511.2]
    assert values(r, "ttft_ms_mean") == [211.3, 211.3]  # Δsum / Δcount, in ms
    assert set(r.columns.rank) == {"Engine 0"}
    assert set(r.columns.ts) == {
        "2026-03-02T09:15:00+00:00",
        "2026-03-02T09:15:10+00:00",
        "2026-03-02T09:15:20+00:00",
    }
    assert r.sources[0].settings["model_name"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert [d.code for d in r.diagnostics] == ["cumulative-baseline", "unknown-field"]
    assert r.diagnostics[1].message == (
        "2 metric families are not read: vllm:cache_config_info, vllm:request_params_n"
    )


def test_appended_scrapes_without_times_give_deltas_never_rates_and_a_restart() -> None:
    path = HERE / "vllm-dp2-appended-restart.txt"
    r = parse_file(path)
    assert values(r, "gen_throughput_tok_s") == []  # no time: a delta is no rate
    assert values(r, "interval_generation_tokens")[:2] == [5112.0, 5226.0]
    assert sorted(set(r.columns.rank)) == ["Engine 0", "Engine 1"]  # DP engines apart
    assert [str(d) for d in r.diagnostics][1] == (
        f"{path}:351: info: counters went down (vllm:prefix_cache_queries_total 156000 -> "
        "52000): the server restarted; this scrape starts a new launch and its counters set "
        "the new baseline [counter-reset]"
    )
    launches = {row["line"]: row["launch"].rsplit("#", 1)[1] for row in r.columns.rows()}
    assert (launches[3], launches[351], max(launches.items())[1]) == ("1", "2", "2")
    assert r.sources[0].summary["launch_lines"] == [3, 351]
    # the restart's scrape sets the new baseline: no delta straddles the restart
    lines = [
        ln for ln, m in zip(r.columns.line, r.columns.metric, strict=True) if m == "num_drafts"
    ]
    assert all(ln < 351 or ln > 467 for ln in lines)


def test_sglang_tp_ranks_of_one_group_count_once_and_the_cut_line_is_dropped() -> None:
    path = HERE / "sglang-0.5.3-tp2-all-schedulers-cut.log"
    r = parse_file(path)
    assert values(r, "running_req") == [24.0, 31.0, 30.0]  # not doubled by tp_rank=1
    assert r.sources[0].record_counts["duplicate-rank"] == 21  # 7 gauges x 3 scrapes
    assert values(r, "accept_len") == [2.87, 2.91, 2.84]  # SGLang's gauge, bonus counted
    assert values(r, "prefill_cache_hit_rate") == [0.31, 0.33, 0.33]
    assert values(r, "finished_requests") == [57.0]  # the last scrape's is cut
    assert values(r, "request_throughput_req_s") == [3.8]
    # the server's own gauge is kept, never a second rate of the counter beside it
    assert values(r, "gen_throughput_tok_s") == [1012.37, 1265.2, 1240.84]
    assert [d.code for d in r.diagnostics] == ["cumulative-baseline", "truncated-value"]


@pytest.mark.parametrize("rank", ["²", "9" * 5000], ids=["superscript", "5000-digits"])
def test_a_tp_rank_int_cannot_read_is_no_rank_of_a_group(rank: str) -> None:
    # `'²'.isdigit()` is true and `int('²')` raises; so does `int` on 5000 digits
    text = (HERE / "sglang-0.5.3-tp2-all-schedulers-cut.log").read_text()
    r = parse_text(text.replace('tp_rank="1"', f'tp_rank="{rank}"'), format="prometheus")
    assert values(r, "running_req") == [24.0, 24.0, 31.0, 31.0, 30.0, 30.0]  # two series now
    assert "duplicate-rank" not in r.sources[0].record_counts  # no group of ranks left
    assert [d.code for d in r.diagnostics] == ["cumulative-baseline", "truncated-value"]


def test_one_scrape_is_gauges_and_a_baseline() -> None:
    r = parse_file(HERE / "vllm-one-scrape-no-spec.prom")
    assert sorted(set(r.columns.metric)) == ["kv_cache_usage", "running_req", "waiting_req"]
    assert r.sources[0].record_counts["other-series"] == 1  # python_gc_*, not vLLM's


def test_an_sglang_accept_length_of_zero_is_not_speculating() -> None:
    text = (
        "# TYPE sglang:spec_accept_length gauge\n"
        'sglang:spec_accept_length{model_name="m",tp_rank="0"} 0.0\n'
        'sglang:num_running_reqs{model_name="m",tp_rank="0"} 3.0\n'
    )
    r = parse_text(text, path="m.prom")
    assert list(r.columns.metric) == ["running_req"]
    assert "accept_len_counts_bonus" not in r.sources[0].settings


def test_labels_in_any_order_escaped_and_scrape_separators_with_unix_times() -> None:
    text = (
        "# scrape 1772442900\n"
        'vllm:generation_tokens_total{model_name="a \\"b\\"",engine="0"} 100.0\n'
        "# scrape: 1772442905.5\n"
        'vllm:generation_tokens_total{engine="0",model_name="a \\"b\\""} 1200.0\n'
    )
    r = parse_text(text, path="m.prom")
    assert values(r, "interval_generation_tokens") == [1100.0]
    assert values(r, "gen_throughput_tok_s") == [200.0]  # 1100 tokens over 5.5 s
    assert r.sources[0].settings["model_name"] == 'a "b"'


def test_a_scrape_time_that_is_no_time_gives_no_rate() -> None:
    text = (
        "# scrape 2026-03-02T09:15:00Z\n"
        'vllm:generation_tokens_total{engine="0"} 100.0\n'
        "# scrape 2026-03-02T09:15:1\n"  # a paste broke it: no time, so no rate
        'vllm:generation_tokens_total{engine="0"} 300.0\n'
    )
    r = parse_text(text, path="m.prom")
    assert values(r, "interval_generation_tokens") == [200.0]
    assert values(r, "gen_throughput_tok_s") == []
    whole = parse_text(text.replace("09:15:1\n", "09:15:10\n"), path="m.prom")
    assert values(whole, "gen_throughput_tok_s") == [20.0]


def test_a_series_line_of_ours_without_its_number_is_said_not_dropped() -> None:
    text = (
        "# scrape 2026-03-02T09:15:00Z\n"
        "# TYPE vllm:generation_tokens_total counter\n"
        'vllm:generation_tokens_total{engine="0"} 100.0\n'
        'vllm:num_requests_running{engine="0"}\n'  # a hand cut the number off
        'python_gc_objects_collected_total{generation="0"}\n'  # not ours: passed over
    )
    r = parse_text(text, path="m.prom")
    assert [str(d) for d in r.diagnostics if d.code == "unparsed-line"] == [
        "m.prom:4: info: a series line that cannot be read: "
        'vllm:num_requests_running{engine="0"} [unparsed-line]'
    ]


def test_an_openmetrics_exemplar_is_passed_over() -> None:
    text = "".join(
        f"# scrape 2026-03-02T09:15:{k * 10:02d}Z\n"
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        f'vllm:time_to_first_token_seconds_bucket{{engine="0",le="0.1"}} {4 * k} '
        f'# {{trace_id="a{k}"}} 0.05 1772442000.{k}\n'
        f'vllm:time_to_first_token_seconds_sum{{engine="0"}} {0.2 * k!r}\n'
        f'vllm:time_to_first_token_seconds_count{{engine="0"}} {4 * k} # {{trace_id="b"}} 1\n'
        for k in range(1, 4)
    )
    r = parse_text(text, path="m.prom")
    assert values(r, "ttft_ms_mean") == pytest.approx([50.0, 50.0])  # 0.2 s over 4, twice
    assert [d.code for d in r.diagnostics if d.code != "cumulative-baseline"] == []


def test_sniff() -> None:
    assert detect("# HELP vllm:num_requests_running Number\n", "metrics.txt") == "prometheus"
    two = 'sglang:token_usage{tp_rank="0"} 0.1\nsglang:num_running_reqs{tp_rank="0"} 2.0\n'
    assert detect(two, "m.log") == "prometheus"
    assert detect("vllm:num_requests_running 1.0\n", "m.log") is None
