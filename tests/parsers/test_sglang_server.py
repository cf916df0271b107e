"""sglang-server: every Decode/Prefill variant has a fixture, and the rules of DESIGN §2–§3."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from sessionlens import metrics
from sessionlens._lines import Line
from sessionlens.model import Sample, Setting
from sessionlens.parsers import parse_file, parse_text
from sessionlens.parsers import sglang_server as sg
from sessionlens.parsers.base import ParseContext

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "sglang-server"

# Variant id -> (fixture, a regex only that variant's lines match), from log-formats §2.
_N = r"\d+"
_F = r"\d+\.\d\d"
_S = rf"(?:accept len: {_F}, (?:accept rate: {_F}, )?)?"
VARIANTS = {
    "D1": (
        "d01-p02-0.4.0-tp1.log",
        rf"Decode batch\. #running-req: {_N}, #token: {_N}, token usage: {_F}, "
        rf"gen throughput \(token/s\): {_F}, #queue-req: {_N}$",
    ),
    "D2": (
        "d02-p02-0.4.2-eagle-tp2.log",
        rf"Decode batch\. #running-req: {_N}, #token: {_N}, token usage: {_F}, "
        rf"accept len: {_F}, gen throughput \(token/s\): {_F}, #queue-req: {_N}$",
    ),
    "D3": (
        "d03-p03-0.4.4-tp1.log",
        rf"Decode batch\. .*gen throughput \(token/s\): {_F}, largest-len: {_N}, "
        rf"#queue-req: {_N}, $",
    ),
    "D4": (
        "d04-p03-0.4.5-eagle3.log",
        rf"Decode batch\. .*token usage: {_F}, {_S}gen throughput \(token/s\): {_F}, "
        rf"#queue-req: {_N}, $",
    ),
    "D5": (
        "d05-p04-0.4.6-tp2-retract.log",
        rf"Decode batch\. .*token usage: {_F}, {_S}gen throughput \(token/s\): {_F}, "
        rf"#queue-req: {_N}$",
    ),
    "D6": (
        "d06-p04-0.4.7-tp1.log",
        rf"Decode batch\. .*token usage: {_F}, {_S}cuda graph: (?:True|False), "
        rf"gen throughput \(token/s\): {_F}, #queue-req: {_N}$",
    ),
    "D7": (
        "d07-p06-0.5.1-eagle3-tp2.log",
        rf"Decode batch\. .*cuda graph: (?:True|False), gen throughput \(token/s\): {_F}, "
        rf"#queue-req: {_N}, $",
    ),
    "D8": (
        "d08-p07-0.5.4-dp-attention.log",
        rf"Decode batch \[{_N}\], #running-req: .*accept len: {_F}, accept rate: {_F}, "
        rf".*#queue-req: {_N}, $",
    ),
    "D9": (
        "d09-p08-0.5.5-tp4-all-schedulers.log",
        rf"Decode batch, #running-req: .*cuda graph: (?:True|False), "
        rf"gen throughput \(token/s\): {_F}, #queue-req: {_N}, $",
    ),
    "D10": (
        "d10-p09-0.5.9-mamba-mtp.log",
        rf"Decode batch, #running-req: .*cuda graph: (?:True|False), "
        rf"gen throughput \(token/s\): {_F}, #queue-req: {_N}$",
    ),
    "P1": (
        "p01-0.3.0-dp2.log",
        rf"Prefill batch(?:\(mixed #running-req: {_N}\))?\. #new-seq: {_N}, #new-token: {_N}, "
        rf"#cached-token: {_N}, cache hit rate: {_F}%, (?:#running-req: {_N}, )?"
        rf"#queue-req: {_N}$",
    ),
    "P2": (
        "d01-p02-0.4.0-tp1.log",
        rf"Prefill batch\. .*cache hit rate: {_F}%, token usage: {_F}, "
        rf"#running-req: {_N}, #queue-req: {_N}$",
    ),
    "P3": (
        "d03-p03-0.4.4-tp1.log",
        rf"Prefill batch\. #new-seq: {_N}, #new-token: {_N}, #cached-token: {_N}, "
        rf"token usage: {_F}, #running-req: {_N}, #queue-req: {_N}, $",
    ),
    "P4": (
        "d05-p04-0.4.6-tp2-retract.log",
        rf"Prefill batch\. #new-seq: {_N}, #new-token: {_N}, #cached-token: {_N}, "
        rf"token usage: {_F}, #running-req: {_N}, #queue-req: {_N}$",
    ),
    "P5": (
        "d06-p05-0.4.9-swa-hybrid.log",
        rf"Prefill batch\. .*#cached-token: {_N}, #token: .*token usage: .*"
        rf"#running-req: {_N}, #queue-req: {_N}$",
    ),
    "P6": (
        "d07-p06-0.5.1-eagle3-tp2.log",
        rf"Prefill batch\. .*token usage: {_F}, #running-req: {_N}, #queue-req: {_N}, $",
    ),
    "P7": (
        "d08-p07-0.5.4-dp-attention.log",
        rf"Prefill batch \[{_N}\], #new-seq: .*#queue-req: {_N}, $",
    ),
    "P8": (
        "d09-p08-0.5.5-tp4-all-schedulers.log",
        rf"Prefill batch, #new-seq: .*#running-req: {_N}, #queue-req: {_N}, $",
    ),
    "P9": (
        "d10-p09-0.5.9-mamba-mtp.log",
        rf"Prefill batch, .*#queue-req: {_N}, input throughput \(token/s\): {_F}, "
        r"cuda graph: (?:True|False)$",
    ),
    "P10": (
        "d10-p10-0.5.10-mfu.log",
        rf"Prefill batch, .*#queue-req: {_N}, cuda graph: (?:True|False), "
        rf"input throughput \(token/s\): {_F}",
    ),
    "P11": (
        "d10-p11-0.5.23-dict-args-compose.log",
        rf"Prefill batch, .*#queue-req: {_N}, #pending-token: {_N}, "
        rf"(?:#replay-token: {_N}, )?cuda graph: (?:True|False), "
        rf"input throughput \(token/s\): {_F}",
    ),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS, key=lambda v: (v[0], int(v[1:]))))
def test_every_variant_has_a_fixture(variant: str) -> None:
    name, pattern = VARIANTS[variant]
    path = FIXTURES / name
    assert path.is_file(), f"{variant}: {name} is missing"
    lines = path.read_text(encoding="utf-8").splitlines()
    hits = [ln for ln in lines if re.search(pattern, ln)]
    assert hits, f"{variant}: no line of {name} has the variant's form"
    result = parse_file(path)
    kind = "decode" if variant.startswith("D") else "prefill"
    assert result.sources[0].record_counts.get(kind, 0) > 0


def test_variant_table_covers_d1_to_d10_and_p1_to_p11() -> None:
    assert set(VARIANTS) == {f"D{i}" for i in range(1, 11)} | {f"P{i}" for i in range(1, 12)}


def test_every_emitted_metric_is_registered() -> None:
    for path in sorted(FIXTURES.glob("*.log")):
        for name in set(parse_file(path).columns.metric):
            assert metrics.is_known(name), f"{path.name}: {name} is not registered"


# ------------------------------------------------------------------ helpers


def rows(text: str) -> list[tuple[int, str | None, str, float]]:
    r = parse_text(text, format="sglang-server")
    c = r.columns
    return list(zip(c.line, c.rank, c.metric, c.value, strict=True))


def values(text: str, metric: str) -> list[float]:
    return [v for _, _, m, v in rows(text) if m == metric]


def diags(text: str) -> list[str]:
    """The parser's diagnostics (the driver's `no-samples` aside)."""
    r = parse_text(text, format="sglang-server")
    return [f"{d.line}:{d.code}:{d.message}" for d in r.diagnostics if d.code != "no-samples"]


D = (
    "[2025-11-14 09:12:44 {rank}] Decode batch, #running-req: {run}, #token: 100, "
    "token usage: 0.01, cuda graph: True, gen throughput (token/s): {gen}, #queue-req: 0, "
)


def dec(rank: str, gen: str = "10.00", run: int = 4, ts: str = "2025-11-14 09:12:44") -> str:
    return D.format(rank=rank, run=run, gen=gen).replace("2025-11-14 09:12:44", ts) + "\n"


# ------------------------------------------------------------------ ranks (DESIGN §3)


def test_tp_duplicates_of_one_batch_count_once_and_keep_the_lowest_rank() -> None:
    text = dec("TP2") + dec("TP0") + dec("TP3") + dec("TP1")
    got = [(line, rank) for line, rank, m, _ in rows(text) if m == "gen_throughput_tok_s"]
    assert got == [(2, "TP0")]
    assert parse_text(text).sources[0].record_counts["duplicate-rank"] == 3


def test_two_batches_in_one_second_are_two_samples() -> None:
    text = dec("TP0", "1.00") + dec("TP1", "1.00") + dec("TP1", "2.00") + dec("TP0", "2.00")
    assert values(text, "gen_throughput_tok_s") == [1.0, 2.0]


def test_a_higher_rank_printing_the_batch_a_second_later_is_a_duplicate() -> None:
    text = (
        dec("TP0", "1.00", ts="2025-11-14 09:12:44")
        + dec("TP1", "1.00", ts="2025-11-14 09:12:45")
        + dec("TP0", "2.00", ts="2025-11-14 09:12:46")
    )
    assert values(text, "gen_throughput_tok_s") == [1.0, 2.0]


def test_only_higher_ranks_still_give_one_sample_per_batch() -> None:
    # e.g. a log grep'd for TP1 and TP2 only: TP1 is the lowest rank there is
    text = dec("TP2", "1.00") + dec("TP1", "1.00") + dec("TP1", "2.00", ts="2025-11-14 09:12:50")
    got = [(rank, v) for _, rank, m, v in rows(text) if m == "gen_throughput_tok_s"]
    assert got == [("TP1", 1.0), ("TP1", 2.0)]


def test_dp_groups_are_separate_samples_tagged_with_their_rank() -> None:
    text = dec("DP0 TP0", "1.00") + dec("DP1 TP1", "2.00") + dec("DP1 TP0", "2.00")
    got = sorted((rank, v) for _, rank, m, v in rows(text) if m == "gen_throughput_tok_s")
    # DP1's lines at one timestamp are one batch: TP0 is kept
    assert got == [("DP0 TP0", 1.0), ("DP1 TP0", 2.0)]


def test_dp_attention_makes_each_tp_only_tag_its_own_group() -> None:
    lines = dec("TP0", "1.00") + dec("TP1", "2.00")
    args = (
        "[2025-11-14 09:10:00] server_args=ServerArgs(tp_size=2, dp_size=2, "
        "enable_dp_attention=True)\n"
    )
    assert sorted(values(args + lines, "gen_throughput_tok_s")) == [1.0, 2.0]
    assert values(lines, "gen_throughput_tok_s") == [1.0]  # without DP attention: duplicates


def test_dpn_tags_seen_switch_on_dp_attention_for_tp_only_tags() -> None:
    text = dec("DP0 TP0", "1.00") + dec("TP0", "3.00") + dec("TP1", "4.00")
    assert sorted(values(text, "gen_throughput_tok_s")) == [1.0, 3.0, 4.0]


@pytest.mark.parametrize(
    ("tags", "rank"),
    [
        ("DP1 PP0 ATTN_CP0 MOE_DP0 TP1 EP1", "DP1 PP0 ATTN_CP0 MOE_DP0 TP1 EP1"),
        ("TP0 PP1", "TP0 PP1"),
        ("EP2 TP2", "EP2 TP2"),
    ],
)
def test_rank_tags_are_kept_as_printed_in_any_order(tags: str, rank: str) -> None:
    assert {r for _, r, _, _ in rows(dec(tags))} == {rank}


# ------------------------------------------------------------------ prefixes


@pytest.mark.parametrize(
    ("line", "rank", "ts"),
    [
        (
            "2026-03-18 11:22:05.874 INFO 120984 [ TP0 scheduler_metrics_mixin.py:415] {body}",
            "TP0",
            "2026-03-18 11:22:05.874",
        ),
        (
            "2025-12-10T08:00:41.511002001Z [2025-12-10 08:00:41.511 DP1 TP1] {body}",
            "DP1 TP1",
            "2025-12-10 08:00:41.511",
        ),
        ("sglang-1  | [2026-10-30 15:02:03 TP0 EP0] {body}", "TP0 EP0", "2026-10-30 15:02:03"),
        ("[1,0]<stdout>:[2025-08-02 07:05:03 TP0] {body}", "TP0", "2025-08-02 07:05:03"),
        ("node0/server.log:[2025-10-09 13:02:11 TP0] {body}", "TP0", "2025-10-09 13:02:11"),
        (
            "(SGLangEngine pid=4242, ip=127.0.0.1) [2025-11-20 18:01:02] {body}",
            None,
            "2025-11-20 18:01:02",
        ),
        ("[10:02:41 DP1 TP0] {body}", "DP1 TP0", "10:02:41"),
        ("\x1b[32m[2025-06-12 09:00:00]\x1b[0m {body}", None, "2025-06-12 09:00:00"),
        ("> [2025-06-12 09:00:00] `{body}`", None, "2025-06-12 09:00:00"),
    ],
)
def test_the_header_is_found_behind_any_prefix(line: str, rank: str | None, ts: str) -> None:
    body = (
        "Decode batch, #running-req: 2, #token: 10, token usage: 0.01, cuda graph: True, "
        "gen throughput (token/s): 88.20, #queue-req: 0"
    )
    r = parse_text(line.format(body=body) + "\n")
    assert r.sources[0].format == "sglang-server"
    c = r.columns
    assert set(zip(c.rank, c.ts, strict=True)) == {(rank, ts)}
    assert dict(zip(c.metric, c.value, strict=True))["gen_throughput_tok_s"] == 88.2


# ------------------------------------------------------------------ fields


def test_running_req_zero_is_no_sample() -> None:
    text = dec("TP0", run=0) + dec("TP0", "5.00", ts="2025-11-14 09:12:50")
    assert values(text, "gen_throughput_tok_s") == [5.0]
    assert parse_text(text).sources[0].record_counts["decode-idle"] == 1


def test_prefill_with_running_req_zero_is_still_a_sample() -> None:
    text = (
        "[2026-04-05 20:02:50] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, "
        "token usage: 0.08, #running-req: 0, #queue-req: 0, cuda graph: True, "
        "input throughput (token/s): 559.53\n"
    )
    assert values(text, "prefill_input_throughput_tok_s") == [559.53]
    assert values(text, "prefill_running_req") == [0.0]


def test_trailing_comma_space_is_no_field() -> None:
    assert diags(dec("TP0")) == []
    assert values(dec("TP0"), "queue_req") == [0.0]


def test_keys_in_another_order_give_the_same_samples() -> None:
    p9 = (
        "[2026-03-01 12:02:00] Prefill batch, #new-seq: 2, #new-token: 2048, #cached-token: 0, "
        "token usage: 0.02, #running-req: 0, #queue-req: 0, input throughput (token/s): 401.25, "
        "cuda graph: False\n"
    )
    shuffled = (
        "[2026-03-01 12:02:00] Prefill batch, cuda graph: False, #queue-req: 0, "
        "input throughput (token/s): 401.25, #running-req: 0, token usage: 0.02, "
        "#cached-token: 0, #new-token: 2048, #new-seq: 2\n"
    )
    a = sorted((m, v) for _, _, m, v in rows(p9))
    b = sorted((m, v) for _, _, m, v in rows(shuffled))
    assert a == b
    assert len(a) == 8


def test_unknown_keys_are_ignored_once_noted_and_counted() -> None:
    line = (
        "[2026-10-30 15:02:03] Decode batch, #running-req: 3, dspark est: 0.42, "
        "token usage: 0.01, gen throughput (token/s): 402.77, #queue-req: 0\n"
    )
    r = parse_text(line + line.replace("15:02:03", "15:02:04"))
    assert [(d.code, d.line, d.message) for d in r.diagnostics] == [
        (
            "unknown-field",
            1,
            "decode field 'dspark est' is not known; ignored (later occurrences are only counted)",
        ),
    ]
    assert r.sources[0].record_counts["unknown-field"] == 2
    assert values(line, "gen_throughput_tok_s") == [402.77]


def test_a_value_cut_mid_number_on_the_last_line_gives_no_sample() -> None:
    text = dec("TP0", ts="2025-11-14 09:12:40") + (
        "[2025-11-14 09:12:44 TP0] Decode batch, #running-req: 24, #token: 19418, "
        "token usage: 0.01, cuda graph: True, gen throughput (token/s): 1012.37, #queue-req: 1"
    )
    assert values(text, "queue_req") == [0.0]  # only the complete line's
    assert values(text, "gen_throughput_tok_s") == [10.0, 1012.37]  # fields before the cut kept
    assert diags(text) == [
        "2:truncated-value:decode field '#queue-req' is cut ('1'); no sample taken"
    ]


def test_a_value_with_fewer_decimals_than_its_format_is_cut() -> None:
    text = (
        "[2025-04-10 09:31:07 TP0] Decode batch. #running-req: 1, #token: 511, "
        "token usage: 0.00, accept len: 4.0"
    )
    assert values(text, "accept_len") == []
    assert values(text, "token_usage") == [0.0]
    assert diags(text) == [
        "1:truncated-value:decode field 'accept len' is cut ('4.0'); no sample taken"
    ]


def test_a_complete_fixed_decimal_value_at_the_cut_end_is_kept() -> None:
    text = (
        "[2025-04-10 09:31:07 TP0] Decode batch. #running-req: 1, #token: 511, "
        "token usage: 0.00, accept len: 4.02"
    )
    assert values(text, "accept_len") == [4.02]
    assert diags(text) == []


def test_a_cut_key_is_a_truncated_field() -> None:
    text = "[2026-04-08 14:05:21 TP0] Decode batch, #running-req: 5, #queue-re"
    assert values(text, "running_req") == [5.0]
    assert diags(text) == ["1:truncated-value:decode field '#queue-re' is cut; no sample taken"]


def test_percentages_are_fractions() -> None:
    text = (
        "[2024-12-05 10:11:02 TP0] Prefill batch. #new-seq: 14, #new-token: 3542, "
        "#cached-token: 98, cache hit rate: 2.69%, token usage: 0.01, #running-req: 0, "
        "#queue-req: 18\n"
        "[2026-10-30 15:02:04 TP0] Decode batch, #running-req: 3, token usage: 0.01, "
        "gen throughput (token/s): 411.03, #queue-req: 0, fwd occupancy: 88.90%, "
        "fwd+idle occupancy: 97.61%\n"
    )
    assert values(text, "prefill_cache_hit_rate") == [0.0269]
    assert values(text, "fwd_occupancy") == [0.889]
    assert values(text, "fwd_idle_occupancy") == [0.9761]


@pytest.mark.parametrize(
    ("pool", "usage", "extra"),
    [
        (
            "#token: full=4184, swa=4184, token usage: full=0.01, swa=0.02",
            0.02,
            {"num_token": 4184.0, "num_swa_token": 4184.0, "swa_token_usage": 0.02},
        ),
        (
            "#full token: 5046, full token usage: 0.01, #swa token: 400, swa token usage: 0.03",
            0.03,
            {"num_token": 5046.0, "full_token_usage": 0.01},
        ),
        (
            "#full token: 5046, full token usage: 0.01, mamba num: 2, mamba usage: 0.08",
            0.08,
            {"mamba_num": 2.0, "mamba_usage": 0.08},
        ),
        (
            "#gpu token: 14410, gpu token usage: 0.01, #cpu token: 90000, cpu token usage: 0.40",
            0.01,
            {"num_token": 14410.0},
        ),
    ],
)
def test_hybrid_pools_give_the_fullest_pool_as_token_usage(
    pool: str, usage: float, extra: dict[str, float]
) -> None:
    text = (
        f"[2026-03-01 12:02:02 TP0] Decode batch, #running-req: 2, {pool}, cuda graph: True, "
        "gen throughput (token/s): 242.08, #queue-req: 0\n"
    )
    got = {m: v for _, _, m, v in rows(text)}
    assert got["token_usage"] == usage
    for k, v in extra.items():
        assert got[k] == v
    assert diags(text) == []


def test_a_cut_inside_the_pools_gives_no_token_usage() -> None:
    text = (
        "[2026-03-01 12:02:02 TP0] Decode batch, #running-req: 2, #full token: 5046, "
        "full token usage: 0.01, mamba num: 2, mamba usage: 0.0"
    )
    assert values(text, "token_usage") == []  # mamba usage (maybe 0.08) was cut
    assert values(text, "full_token_usage") == [0.01]


def test_pd_prefill_fields_glued_by_a_space() -> None:
    text = (
        "[2025-06-20 10:01:00] Prefill batch. #new-seq: 1, #new-token: 512, #cached-token: 0, "
        "token usage: 0.00, #unbootstrapped-req: 0, #queue-req: 0, #transferring-req: 1 "
        "input throughput (token/s): 1234.56 \n"
    )
    got = {m: v for _, _, m, v in rows(text)}
    assert got["prefill_transfer_req"] == 1.0
    assert got["prefill_input_throughput_tok_s"] == 1234.56
    assert diags(text) == []


def test_mixed_chunk_prefill_takes_running_req_from_its_header() -> None:
    text = (
        "[10:02:41 DP0 TP0] Prefill batch(mixed #running-req: 8). #new-seq: 2, "
        "#new-token: 1012, #cached-token: 10, cache hit rate: 0.98%, #queue-req: 0\n"
    )
    assert values(text, "prefill_running_req") == [8.0]


def test_lines_that_only_mention_a_batch_are_not_batches() -> None:
    text = "[2025-05-02 16:20:00] Decode batch size is capped at 256 because of cuda graphs\n"
    assert rows(text) == []


# ------------------------------------------------------------------ settings


def settings_of(text: str) -> dict[str, object]:
    return parse_text(text, format="sglang-server").sources[0].settings


def test_server_args_and_capacity_lines_are_settings() -> None:
    text = (
        "[2025-10-20 16:40:00] server_args=ServerArgs(model_path='/models/k2', tp_size=8, "
        "speculative_algorithm='EAGLE3', speculative_num_steps=2, speculative_eagle_topk=1, "
        "speculative_num_draft_tokens=3, speculative_attention_mode='decode', "
        "attention_backend='flashinfer', disable_cuda_graph=False, cuda_graph_max_bs=48, "
        "chunked_prefill_size=None)\n"
        "[2025-10-20 16:44:53 TP0] max_total_num_tokens=250112, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=48, context_len=131072, "
        "available_gpu_mem=10.61 GB\n"
        "[2025-10-20 16:44:10 TP0] KV Cache is allocated. #tokens: 250112, KV size: 16.42 GB\n"
        "[2025-10-20 16:46:03 TP0] Decode batch. #running-req: 1, #token: 113, token usage: 0.00, "
        "accept len: 2.01, accept rate: 0.67, cuda graph: False, gen throughput (token/s): 59.80, "
        "#queue-req: 0, \n"
    )
    s = settings_of(text)
    assert s["speculative_attention_mode"] == "decode"
    assert s["speculative_num_steps"] == 2
    assert s["disable_cuda_graph"] is False
    assert s["chunked_prefill_size"] == 8192  # the scheduler's resolved value wins
    assert s["max_total_num_tokens"] == 250112
    assert s["kv_cache_tokens"] == 250112
    assert s["kv_cache_gb"] == 16.42
    assert s["accept_len_counts_bonus"] is True
    assert "available_gpu_mem" not in s  # launch noise (DESIGN §4)


@pytest.mark.parametrize(
    ("sizes", "gb"),
    [
        ("K size: 27.78 GB, V size: 27.78 GB", 55.56),
        ("K size: 27.78 GB, V size: 27.78. GB", None),  # found by the fuzzer: no float('27.78.')
        ("K size: 1.2.3 GB, V size: 1 GB", None),
        ("KV size: 16.42. GB", None),
        ("KV size: . GB", None),
    ],
)
def test_kv_cache_sizes_are_read_as_numbers_or_not_at_all(sizes: str, gb: float | None) -> None:
    text = f"[2025-07-06 10:00:13 TP0] KV Cache is allocated. #tokens: 1040234, {sizes}\n" + dec(
        "TP0"
    )
    r = parse_text(text, format="sglang-server")
    s = r.sources[0].settings
    assert s["kv_cache_tokens"] == 1040234
    assert s.get("kv_cache_gb") == gb
    unread = [d for d in r.diagnostics if d.code == "unparsed-line" and d.line == 1]
    assert len(unread) == (gb is None)


def test_a_kv_cache_token_count_of_5000_digits_is_not_read() -> None:
    # `int` refuses more than 4300 digits: the count is at most 18 digits, or no match
    text = f"[2025-07-06 10:00:13 TP0] KV Cache is allocated. #tokens: {'9' * 5000}, "
    r = parse_text(text + "KV size: 1.5 GB\n" + dec("TP0"), format="sglang-server")
    assert "kv_cache_tokens" not in r.sources[0].settings
    assert len(r.columns) > 0


def test_no_accept_len_no_bonus_setting() -> None:
    assert "accept_len_counts_bonus" not in settings_of(dec("TP0"))


def test_dict_form_server_args_flatten_nested_records() -> None:
    text = (
        "[2026-10-30 15:00:00] server_args={'model_path': 'm', 'tp_size': 8, "
        "'cuda_graph_config': {'decode': {'backend': 'full', 'max_bs': 64}}, "
        "'enable_dp_attention': False}\n"
    ) + dec("TP0")
    s = settings_of(text)
    assert s["cuda_graph_config.decode.max_bs"] == 64
    assert s["tp_size"] == 8


def test_a_cut_dump_keeps_the_settings_before_the_cut() -> None:
    text = (
        "[2025-05-03 10:05:00] server_args=ServerArgs(model_path='m', tp_size=2, "
        "speculative_algorithm='EAGLE', speculative_draft_model_path='lmzheng/sglang-EAG"
    )
    r = parse_text(text, format="sglang-server")
    assert r.sources[0].settings == {
        "model_path": "m",
        "tp_size": 2,
        "speculative_algorithm": "EAGLE",
    }
    assert [(d.code, d.line) for d in r.diagnostics] == [
        ("truncated-settings", 1),
        ("no-samples", None),
    ]


def test_a_second_launch_is_flagged_with_what_changed() -> None:
    text = (
        "[2025-05-03 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1, "
        "attention_backend=None)\n"
        + dec("TP0")
        + "[2025-05-03 11:00:00] server_args=ServerArgs(model_path='m', tp_size=1, "
        "attention_backend='fa3')\n"
    )
    assert diags(text) == [
        "3:server-restart:a second server launch (the first is at line 1); its samples are "
        "a launch of their own and settings keep their last value; changed settings: "
        "attention_backend: None -> 'fa3'"
    ]


def test_a_percent_the_line_breaks_before_its_sign_is_cut() -> None:
    """`cache hit rate: 1.91` then `%, ...` on the next line (a wrapped copy): not 191 %."""
    line = (
        "[10:02:40 DP0 TP0] Prefill batch. #new-seq: 8, #new-token: 2054, #cached-token: 40, "
        "cache hit rate: 1.91\n%, #running-req: 0, #queue-req: 2\n"
    )
    assert "prefill_cache_hit_rate" not in [m for _, _, m, _ in rows(line)]
    assert values(line, "prefill_new_tokens") == [2054]
    assert diags(line) == [
        "1:truncated-value:prefill field 'cache hit rate' has no `%` ('1.91'); no sample taken"
    ]


def test_a_log_cut_mid_line_then_another_glued_on_by_cat() -> None:
    """`cat a.log b.log` where `a` ends mid-line: the cut line gives its complete fields and
    a truncated-value, and the glued line (here the next launch's server args) is read."""
    args = "[2025-05-03 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
    cut = dec("TP0").replace(", #queue-req: 0, \n", "")[:-3]  # `gen throughput ...: 10`
    text = args + dec("TP0") + cut + args.replace("tp_size=1", "tp_size=2")
    assert [d.split(":")[1] for d in diags(text)] == ["truncated-value", "server-restart"]
    assert values(text, "gen_throughput_tok_s") == [10.0]
    assert values(text, "running_req") == [4, 4]  # the cut line's complete fields are kept


def test_the_same_dump_again_before_the_server_did_anything_is_one_launch() -> None:
    """SGLang 0.5's in-process Engine (bench_offline_throughput) logs its server args in
    `__init__`, then again as it starts its processes: one launch, not a restart."""
    args = "server_args={'model_path': 'm', 'tp_size': 1, 'random_seed': 7}\n"
    once = args + "[2026-10-02 08:00:01] " + args + dec("TP0")
    assert diags(once) == []
    r = parse_text(once, format="sglang-server")
    assert r.sources[0].record_counts["server-args-repeat"] == 1
    assert r.sources[0].settings["random_seed"] == 7
    # a launch that served, or failed, in between: the next dump is a new launch
    for between in (dec("TP0"), "[2026-10-02 08:00:02] Traceback (most recent call last):\n"):
        twice = args + between + args + dec("TP0")
        assert [d.split(":")[1] for d in diags(twice)][-1] == "server-restart"
    # settings that differ are a new launch even with nothing in between
    other = args.replace("7}", "8}")
    assert [d.split(":")[1] for d in diags(args + other)] == ["server-restart"]


def test_hostile_server_args_run_nothing_and_stay_text(tmp_path: Path) -> None:
    src = FIXTURES / "server-args-hostile-0.5.1.log"
    copy = tmp_path / src.name
    copy.write_bytes(src.read_bytes())
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        s = parse_file(copy.name).sources[0].settings
    finally:
        os.chdir(cwd)
    assert not (tmp_path / "PWNED").exists()
    assert not Path("PWNED").exists()
    assert s["tokenizer_path"] == "__import__('os').system('touch PWNED')"
    assert s["custom_sigquit_handler"] == "<function main.<locals>.handler at 0x7f3a2c1d9e40>"
    assert s["lora_target_modules"] == ["q_proj", "v_proj"]


# ------------------------------------------------------------------ events


def test_a_multi_line_traceback_is_one_diagnostic() -> None:
    text = (
        "[2025-10-10 22:01:06 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/x/scheduler.py", line 2870, in run_scheduler_process\n'
        "    scheduler.event_loop_normal()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/x/scheduler.py", line 2875, in run_scheduler_process\n'
        "RuntimeError: NCCL error: unhandled system error\n" + dec("TP0", ts="2025-10-10 22:01:07")
    )
    assert diags(text) == [
        "1:server-error:Scheduler hit an exception: RuntimeError: NCCL error: unhandled system "
        "error"
    ]
    assert values(text, "gen_throughput_tok_s") == [10.0]  # the line after is read normally


def test_a_traceback_cut_before_its_exception_line() -> None:
    text = 'Traceback (most recent call last):\n  File "/x/launch_server.py", line 14'
    assert diags(text) == [
        "1:server-error:traceback: the traceback is cut before its exception line"
    ]


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (
            "[2025-10-10 22:01:05 TP1] Detected errors during sampling! NaN in the logits.",
            "server-error",
        ),
        (
            "[rank1]:[E1010 22:11:06.220000 812 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught "
            "collective operation timeout: WorkNCCL(SeqNum=1102) ran for 600012 milliseconds",
            "server-error",
        ),
        ("[2025-10-10 22:01:06 TP1] NCCL error: unhandled system error", "server-error"),
        (
            "[2025-10-10 22:11:07] Received sigquit from a child process. It usually means the "
            "child failed.",
            "server-error",
        ),
        (
            "[2025-02-20 08:00:10 TP0] Not enough memory. Please try to increase "
            "--mem-fraction-static.",
            "server-error",
        ),
        (
            "[2025-10-10 22:01:02 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3, "
            "#new_token_ratio: 0.3102 -> 0.5000",
            "server-warning",
        ),
        (
            "[2025-05-02 16:21:30 TP0] Decode out of memory happened. #retracted_reqs: 12, "
            "#new_token_ratio: 0.4121 -> 0.6500",
            "server-warning",
        ),
    ],
)
def test_error_signatures(line: str, code: str) -> None:
    r = parse_text(line + "\n", format="sglang-server")
    assert [(d.code, d.line) for d in r.diagnostics if d.code != "no-samples"] == [(code, 1)]


def test_benign_lines_are_no_errors() -> None:
    text = (
        "[2025-10-10 22:00:00 TP0] NCCL version 2.21.5+cuda12.4\n"
        "[2025-10-10 22:00:00 TP0] Setting up the scheduler watchdog\n"
        '[2025-10-10 22:00:01] INFO:     127.0.0.1:40052 - "POST /generate HTTP/1.1" '
        "200 OK\n"
    )
    assert diags(text) == []


def test_cuda_graph_capture_of_the_target_is_one_sample_per_launch() -> None:
    tail = " mem usage={m} GB. avail mem=17.79 GB.\n"
    text = (
        "[2025-08-25 11:00:21 TP1] Capture cuda graph end. Time elapsed: 9.12 s."
        + tail.format(m="0.42")
        + "[2025-08-25 11:00:21 TP0] Capture cuda graph end. Time elapsed: 9.08 s."
        + tail.format(m="0.42")
        + "[2025-08-25 11:00:31 TP0] Capture draft cuda graph end. Time elapsed: 8.40 s."
        + tail.format(m="0.31")
        + "[2026-10-30 15:01:31 TP0 EP0] Capture target verify CUDA graph end. elapsed=28.77 s, "
        "mem usage=1.42 GB, avail mem=9.78 GB.\n"
    )
    assert values(text, "cuda_graph_capture_s") == [9.08]
    assert values(text, "cuda_graph_capture_mem_gb") == [0.42]


# ------------------------------------------------------------------ embedding


def test_phase_lines_inside_a_server_log_are_read_once_as_phase_timing() -> None:
    text = (
        dec("TP0") + "[2025-10-20 16:46:03 TP0] Draft (2 steps):   0.74 ms/cyc  (  2.5%)\n"
        "[2025-10-20 16:46:03 TP0] Target verify:     29.47 ms/cyc  ( 97.0%)\n" + dec("TP0")
    )
    r = parse_text(text)
    src = r.sources[0]
    assert src.format == "sglang-server"
    assert src.embedded_formats == ["phase-timing"]
    assert [(b.block, b.line, b.format) for b in src.blocks] == [(0, 2, "phase-timing")]
    got = {m: v for m, v in zip(r.columns.metric, r.columns.value, strict=True)}
    assert got["cycle_ms"] == 30.21
    assert src.record_counts["phase"] == 2


def test_reader_is_a_line_level_state_machine() -> None:
    ctx = ParseContext(file="mixed.log")
    reader = sg.Reader(ctx)
    recs = []
    for no, text in enumerate(
        [
            dec("TP1").strip(),
            dec("TP0").strip(),
            dec("TP0", "7.00", ts="2025-11-14 09:13:00").strip(),
        ],
        start=1,
    ):
        recs += list(reader.feed(Line(no, text)))
    recs += list(reader.finish())
    got = [
        (r.line, r.value)
        for r in recs
        if isinstance(r, Sample) and r.metric == "gen_throughput_tok_s"
    ]
    assert got == [(2, 10.0), (3, 7.0)]
    assert not [r for r in recs if isinstance(r, Setting)]
    assert ctx.counts["decode"] == 3


# ---------------------------------------------------------------- a benchmark run further on


BENCH_AFTER_HEAD = FIXTURES / "bench-after-head-0.5.4-tp2.log"


def _bench_part() -> str:
    text = BENCH_AFTER_HEAD.read_text()
    return text[text.index("benchmark_args=") :]


def test_a_benchmark_run_past_the_detected_head_is_read_not_dropped() -> None:
    """Format detection sees the first 64 KB; a bench_serving run printed into a server log
    much later is still read, and the server's lines around it stay server records."""
    text = BENCH_AFTER_HEAD.read_text()
    assert text.index("Serving Benchmark Result") > 65_536  # past the head
    result = parse_file(BENCH_AFTER_HEAD)
    (src,) = result.sources
    assert src.format == "sglang-server"
    assert src.embedded_formats == ["sglang-bench-serving"]
    df = result.samples
    bench = df.filter(df["block"].is_not_null())
    got = dict(zip(bench["metric"].to_list(), bench["value"].to_list(), strict=True))
    assert got["output_throughput_tok_s"] == 479.0
    assert got["successful_requests"] == 64
    assert got["itl_ms_p99"] == 66.4
    # Decode lines before, during and after the run: one sample per batch (TP0 of two ranks)
    gen = df.filter(df["metric"] == "gen_throughput_tok_s")
    assert gen.height == text.count("TP0] Decode batch")
    assert gen["line"].max() > text[: text.index("=====")].count("\n")
    assert not [d for d in result.diagnostics if d.level != "info"]


def test_phase_blocks_and_a_later_benchmark_block_never_share_a_number() -> None:
    phases = (FIXTURES / "d07-eagle3-0.5.3post2-tp8-phase-timing.log").read_text()
    result = parse_text(phases + _bench_part() + phases, format="sglang-server", path="s.log")
    df = result.samples
    blocks = df.filter(df["block"].is_not_null())
    bench_block = blocks.filter(blocks["metric"] == "output_throughput_tok_s")["block"].to_list()
    phase_blocks = set(blocks.filter(blocks["metric"] != "output_throughput_tok_s")["block"])
    assert len(bench_block) == 1
    phase_metrics = blocks.filter(blocks["block"] != bench_block[0])
    assert phase_metrics.height > 0  # phase blocks both before and after the run
    assert phase_metrics["line"].min() < df.filter(df["block"] == bench_block[0])["line"].min()
    assert phase_metrics["line"].max() > df.filter(df["block"] == bench_block[0])["line"].max()
    assert bench_block[0] in phase_blocks  # the bench block's own other metrics
    # every block number belongs to one contiguous run of lines
    import polars as pl

    spans = blocks.group_by("block").agg(lo=pl.col("line").min(), hi=pl.col("line").max())
    spans = spans.sort("lo")
    los, his = spans["lo"].to_list(), spans["hi"].to_list()
    assert all(h < lo for h, lo in zip(his, los[1:], strict=False))


def test_a_bracketed_range_stays_inside_its_field() -> None:
    """SGLang 0.5.16+ DSpark: `est uncap acc len: 3.25 [3.00, 3.50]` holds `, ` in its value;
    an estimate, known and not kept (no `unknown-field` note)."""
    line = (
        "[2026-10-30 15:01:01 TP0] Decode batch, #running-req: 3, #token: 900, "
        "token usage: 0.01, accept len: 3.10, est uncap acc len: 3.25 [3.00, 3.50], "
        "cuda graph: True, gen throughput (token/s): 150.00, #queue-req: 0\n"
    )
    result = parse_text(line * 2, format="sglang-server", path="s.log")
    assert result.diagnostics == []
    assert 3.25 not in result.columns.value
    got = dict(zip(result.columns.metric, result.columns.value, strict=True))
    assert got["gen_throughput_tok_s"] == 150.0
    assert got["accept_len"] == 3.10
    assert got["queue_req"] == 0


def test_non_finite_and_impossible_values_are_diagnostics_never_samples() -> None:
    # issue 19 case 12: `inf`, a 500-digit value, `nan` and a negative throughput
    big = "1" * 500 + ".00"
    lines = [
        dec("TP0", gen="inf", ts="2025-11-14 09:12:41"),
        dec("TP0", gen=big, ts="2025-11-14 09:12:42"),
        dec("TP0", gen="nan", ts="2025-11-14 09:12:43"),
        dec("TP0", gen="-83.34", ts="2025-11-14 09:12:44"),
        dec("TP0", gen="83.34", ts="2025-11-14 09:12:45"),
    ]
    r = parse_text("".join(lines), format="sglang-server", path="s.log")
    gen = [
        (ln, v)
        for m, v, ln in zip(r.columns.metric, r.columns.value, r.columns.line, strict=True)
        if m == "gen_throughput_tok_s"
    ]
    assert gen == [(5, 83.34)]
    assert r.sources[0].samples == len(r.columns.metric)
    assert [str(d) for d in r.diagnostics] == [
        "s.log:1: warning: decode field 'gen throughput (token/s)' is inf (not a finite "
        "number); no sample taken [non-finite-value]",
        "s.log:2: warning: decode field 'gen throughput (token/s)' is "
        + "1" * 39
        + "\u2026 (not a finite number); no sample taken [non-finite-value]",
        "s.log:3: warning: decode field 'gen throughput (token/s)' is nan (not a finite "
        "number); no sample taken [non-finite-value]",
        "s.log:4: warning: decode field 'gen throughput (token/s)' is -83.34 (below zero); "
        "no sample taken [impossible-value]",
    ]
    assert r.sources[0].record_counts["non-finite-value"] == 3
    assert r.sources[0].record_counts["impossible-value"] == 1


def test_bad_values_past_the_first_twenty_of_a_field_are_tallied() -> None:
    lines = [dec("TP0", gen="nan", ts=f"2025-11-14 09:12:{s:02d}") for s in range(25)]
    r = parse_text("".join(lines), format="sglang-server", path="s.log")
    said = [d for d in r.diagnostics if d.code == "non-finite-value"]
    assert len(said) == 21
    assert str(said[-1]) == (
        "s.log:1: warning: decode field 'gen throughput (token/s)': 5 more such values "
        "(after the 20 shown from here on) gave no sample [non-finite-value]"
    )


def test_markdown_bold_is_stripped_around_words_never_inside_a_value() -> None:
    # issue 19 case 13: `tp_size=10**10**10` became `101010` (every `**` was stripped)
    text = (
        "[2025-11-14 09:12:40] server_args=ServerArgs(model_path='m', tp_size=10**10**10, "
        "dp_size=2)\n"
        "**[2025-11-14 09:12:44 TP0] Decode batch, #running-req: 4, #token: 100, token usage: "
        "0.01, cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 0**\n"
    )
    r = parse_text(text, format="sglang-server", path="s.log")
    settings = r.sources[0].settings
    assert settings["tp_size"] == "10**10**10"
    assert settings["dp_size"] == 2
    assert [str(d) for d in r.diagnostics] == [
        "s.log:1: warning: server_args: tp_size is '10**10**10', an expression, not a value; "
        "kept as its text [unreadable-setting]"
    ]
    assert "gen_throughput_tok_s" in r.columns.metric


@pytest.mark.parametrize(
    ("pools", "usage"),
    [
        ("full token usage: 0.02, swa token usage: 0.31", 0.31),
        ("full token usage: 0.05, mamba usage: 0.21", 0.21),
        ("#token: full=4104, swa=4104, token usage: full=0.01, swa=0.02", 0.02),  # 0.4.9
    ],
)
def test_hybrid_prefill_token_usage_is_the_fullest_pool(pools: str, usage: float) -> None:
    text = (
        f"[2026-03-02 07:41:09] Prefill batch, #new-seq: 1, #new-token: 1536, #cached-token: 0, "
        f"{pools}, #running-req: 0, #queue-req: 0, input throughput (token/s): 38.12, "
        "cuda graph: False\n"
    )
    assert values(text, "prefill_token_usage") == [usage]
