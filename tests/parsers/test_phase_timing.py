"""phase-timing: phase blocks and the cycle_ms rule of DESIGN §3, cut lines, vLLM stage times."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sessionlens._lines import Line
from sessionlens.model import BlockStart, Sample
from sessionlens.parsers import detect, parse_text
from sessionlens.parsers import phase_timing as pt
from sessionlens.parsers.base import ParseContext

SEED = (
    "Target verify:     29.47 ms/cyc  ( 97.0%)\n"
    "Target verify:     29.49 ms/cyc  ( 97.0%)\n"
    "Target verify:     29.48 ms/cyc  ( 96.8%)\n"
    "Target verify:     29.46 ms/cyc  ( 96.9%)\n"
    "Target verify:     29.49 ms/cyc  ( 96.8%)\n"
)

BLOCK = (
    "Draft (2 steps):    1.98 ms/cyc  (  6.5%)\n"
    "Tree build:         0.18 ms/cyc  (  0.6%)\n"
    "Target verify:     28.31 ms/cyc  ( 92.9%)\n"
)


def samples(text: str) -> list[tuple[int, int | None, str, float]]:
    c = parse_text(text, format="phase-timing").columns
    return list(zip(c.line, c.block, c.metric, c.value, strict=True))


def of(text: str, metric: str) -> list[float]:
    return [v for _, _, m, v in samples(text) if m == metric]


def diags(text: str) -> list[str]:
    r = parse_text(text, format="phase-timing")
    return [f"{d.line}:{d.code}:{d.message}" for d in r.diagnostics if d.code != "no-samples"]


def test_the_seed_lines_are_five_blocks_with_cycle_from_the_verify_share() -> None:
    r = parse_text(SEED)
    assert r.sources[0].format == "phase-timing"
    assert [(b.block, b.line) for b in r.sources[0].blocks] == [(i, i + 1) for i in range(5)]
    assert of(SEED, "phase_target_verify_ms_per_cycle") == [29.47, 29.49, 29.48, 29.46, 29.49]
    assert of(SEED, "verify_share") == [0.97, 0.97, 0.968, 0.969, 0.968]
    # shares add to 97 %, not 100 % ± 1: cycle = verify / share (DESIGN §6: 29.5 at 97 % -> 30.4)
    assert of(SEED, "cycle_ms")[0] == pytest.approx(29.47 / 0.97)
    assert round(of(SEED, "cycle_ms")[0], 1) == 30.4
    assert diags(SEED) == []


def test_shares_adding_to_100_give_the_sum_of_the_phases() -> None:
    got = samples(BLOCK)
    assert got == [
        (1, 0, "phase_draft_2_steps_ms_per_cycle", 1.98),
        (1, 0, "phase_draft_2_steps_share", 0.065),
        (2, 0, "phase_tree_build_ms_per_cycle", 0.18),
        (2, 0, "phase_tree_build_share", 0.006),
        (3, 0, "phase_target_verify_ms_per_cycle", 28.31),
        (3, 0, "phase_target_verify_share", 0.929),
        (3, 0, "verify_ms_per_cycle", 28.31),
        (3, 0, "verify_share", 0.929),
        (3, 0, "draft_ms_per_cycle", 1.98),
        (3, 0, "cycle_ms", 30.47),
    ]


def test_a_repeated_name_or_another_line_ends_a_block() -> None:
    text = BLOCK + BLOCK + "--\n" + BLOCK
    r = parse_text(text)
    assert [b.line for b in r.sources[0].blocks] == [1, 4, 8]
    assert of(text, "cycle_ms") == [30.47, 30.47, 30.47]


def test_several_verify_and_draft_phases_add_up() -> None:
    text = (
        "Draft step 1:   1.00 ms/cyc  (  4.0%)\n"
        "Draft step 2:   1.50 ms/cyc  (  6.0%)\n"
        "Verify attn:    10.00 ms/cyc  ( 40.0%)\n"
        "Verify MLP:     12.50 ms/cyc  ( 50.0%)\n"
    )
    got = {m: v for _, _, m, v in samples(text)}
    assert got["draft_ms_per_cycle"] == 2.5
    assert got["verify_ms_per_cycle"] == 22.5
    assert got["verify_share"] == 0.9
    assert got["cycle_ms"] == 25.0


def test_no_verify_phase_and_no_full_shares_give_no_cycle() -> None:
    text = "Draft:   1.00 ms/cyc  (  4.0%)\nSample:   0.50 ms/cyc  (  2.0%)\n"
    got = {m for _, _, m, _ in samples(text)}
    assert "cycle_ms" not in got
    assert "verify_ms_per_cycle" not in got
    assert "draft_ms_per_cycle" in got


def test_a_cut_share_gives_no_share_and_no_totals() -> None:
    text = BLOCK.replace("( 92.9%)\n", "( 92.")
    assert of(text, "phase_target_verify_ms_per_cycle") == [28.31]  # complete: its unit follows
    assert of(text, "phase_target_verify_share") == []
    assert of(text, "cycle_ms") == []
    assert diags(text) == [
        "3:truncated-value:phase 'Target verify': share '92.' is cut; no sample taken",
        "3:truncated-value:phase block 0 is incomplete; its verify, draft and cycle totals were "
        "not computed",
    ]


def test_a_share_the_line_breaks_in_is_cut_though_a_newline_follows() -> None:
    """`( 9` then `7.0%)` on the next line (a wrapped copy): not a share of 9 %."""
    text = BLOCK.replace("( 92.9%)\n", "( 9\n2.9%)\n")
    assert of(text, "phase_target_verify_share") == []
    assert of(text, "cycle_ms") == []
    assert (
        diags(text)[0]
        == "3:truncated-value:phase 'Target verify': share '9' is cut; no sample taken"
    )


def test_a_share_cut_after_its_last_decimal_is_cut_too() -> None:
    # `( 97.0` may be `( 97.05%)`: the profiler's decimals are not known, so it is cut
    assert of("Target verify:     29.47 ms/cyc  ( 97.0", "phase_target_verify_share") == []


def test_a_line_cut_before_its_unit() -> None:
    text = BLOCK + "Draft (2 steps):    1.9"
    assert diags(text) == [
        "4:truncated-value:phase 'Draft (2 steps)': the line is cut ('1.9'); no sample taken"
    ]
    assert of(text, "cycle_ms") == [30.47]  # the cut line would have started a new block


def test_a_cut_line_inside_an_open_block_withholds_its_totals() -> None:
    text = BLOCK + "Draft (2 steps):    1.98 ms/cyc  (  6.5%)\nTree build:   0.1"
    assert of(text, "cycle_ms") == [30.47]
    assert of(text, "draft_ms_per_cycle") == [1.98]  # only block 0's


def test_the_file_ending_inside_a_repeated_block_withholds_its_totals() -> None:
    text = BLOCK + "Draft (2 steps):    2.01 ms/cyc  (  6.6%)\n"
    assert of(text, "draft_ms_per_cycle") == [1.98]
    assert of(text, "phase_draft_2_steps_ms_per_cycle") == [1.98, 2.01]
    assert diags(text) == [
        "4:truncated-output:the file ends inside phase block 1 (1 of the 3 phases of the block "
        "before); its verify, draft and cycle totals were not computed"
    ]


@pytest.mark.parametrize(
    ("line", "ts"),
    [
        (
            "[2025-10-20 16:46:03 TP0] Target verify:     29.47 ms/cyc  ( 97.0%)",
            "2025-10-20 16:46:03",
        ),
        (
            "2026-03-18T11:22:05.123456789Z Target verify: 29.47 ms/cyc (97.0%)",
            "2026-03-18T11:22:05.123456789Z",
        ),
        ("sglang-1  | Target verify: 29.47 ms/cyc ( 97.0%)", None),
        ("[1,0]<stdout>:Target verify: 29.47 ms/cyc ( 97.0%)", None),
        ("> `Target verify:     29.47 ms/cyc  ( 97.0%)`", None),
        ("12:00:01 Target verify: 29.47 ms/cyc ( 97.0%)", "12:00:01"),
    ],
)
def test_names_lose_their_line_prefix(line: str, ts: str | None) -> None:
    c = parse_text(line + "\n", format="phase-timing").columns
    assert c.metric[:2] == ["phase_target_verify_ms_per_cycle", "phase_target_verify_share"]
    assert set(c.ts) == {ts}


def test_vllm_v0_stage_times() -> None:
    text = (
        "INFO 10-21 14:01:51 spec_decode_worker.py:1085] SpecDecodeWorker stage times: "
        "average_time_per_proposal_tok_ms=1.92 scoring_time_ms=22.41 "
        "verification_time_ms=0.88\n"
        "INFO 10-21 14:01:56 spec_decode_worker.py:1085] SpecDecodeWorker stage times: "
        "average_time_per_proposal_tok_ms=1.95 scoring_time_ms=22.6"
    )
    assert samples(text) == [
        (1, None, "draft_ms_per_token", 1.92),
        (1, None, "target_forward_ms", 22.41),
        (1, None, "rejection_sampling_ms", 0.88),
        (2, None, "draft_ms_per_token", 1.95),
    ]
    assert diags(text) == [
        "2:truncated-value:stage times: scoring_time_ms is cut ('22.6'); no sample taken"
    ]


def test_detection() -> None:
    assert detect(SEED, "x.log") == "phase-timing"
    server = (
        "[2025-10-20 16:46:03 TP0] Decode batch. #running-req: 1, #token: 113, "
        "token usage: 0.00, gen throughput (token/s): 59.80, #queue-req: 0, \n" + SEED
    )
    assert detect(server, "x.log") == "sglang-server"
    assert pt.sniff("nothing here\n", "x.log") == 0.0


def test_reader_blocks_can_be_numbered_by_the_embedding_parser() -> None:
    ctx = ParseContext(file="x")
    numbers = iter([7, 8])
    reader = pt.Reader(ctx, next_block=lambda: next(numbers))
    recs = []
    for no, text in enumerate(SEED.splitlines()[:2], start=1):
        assert reader.wants(text)
        recs += list(reader.feed(Line(no, text)))
    recs += list(reader.finish())
    assert [r.block for r in recs if isinstance(r, BlockStart)] == [7, 8]
    assert {r.block for r in recs if isinstance(r, Sample)} == {7, 8}
    assert not reader.wants("[2025-10-20 16:46:03] INFO:     GET /health HTTP/1.1 200")


@pytest.mark.parametrize(
    "wrap",
    [
        lambda r, line: f"{r}: {line}",  # srun --label
        lambda r, line: f"node{r + 1}: {line}",  # pdsh
        lambda r, line: f"2026-11-29T10:00:00.123456789Z [1,{r}]<stdout>:{line}",  # kubectl+mpirun
        lambda r, line: f"Nov 29 10:00:00 host python3[1234]: [2026-02-11 10:00:01 TP{r}] {line}",
    ],
    ids=["srun", "pdsh", "kubectl-mpirun", "journalctl"],
)
def test_two_ranks_behind_a_launcher_prefix_keep_their_own_blocks(
    wrap: Callable[[int, str], str],
) -> None:
    """Interleaved ranks are told apart by the tag a launcher or logger puts first: rank
    1's draft time is never added to rank 0's verify time."""
    phases = {0: ("1.98", "6.5", "28.31", "93.5"), 1: ("2.40", "7.8", "28.20", "92.2")}
    lines = []
    for name, i in (("Draft (2 steps)", 0), ("Target verify", 2)):
        for r, v in phases.items():
            lines.append(wrap(r, f"{name}:  {v[i]} ms/cyc  ( {v[i + 1]}%)"))
    r = parse_text("\n".join(lines) + "\n", "phase-timing")
    got = {
        rank: v
        for rank, m, v in zip(r.columns.rank, r.columns.metric, r.columns.value, strict=True)
        if m == "cycle_ms"
    }
    assert sorted(got.values()) == [30.29, 30.6]
    assert len(got) == 2
