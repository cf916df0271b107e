"""Text and JSON for `sessionlens spec-math` (DESIGN §6 figures, rounded for reading)."""

from __future__ import annotations

import dataclasses
import json

from ..metrics import format_number, format_percent
from ..specmath import Economics


def economics_json(e: Economics) -> str:
    """Every figure, unrounded."""
    return json.dumps(dataclasses.asdict(e), indent=2) + "\n"


def economics_text(e: Economics) -> str:
    """Readable lines, one figure each."""
    out: list[str] = []
    if e.cycle_ms is not None and e.accept_len is not None:
        out.append(f"cycle time            {format_number(e.cycle_ms, 2)} ms per cycle")
        out.append(f"acceptance length     {format_number(e.accept_len, 2)} tokens per cycle")
    if e.ceiling_tok_s is not None:
        out.append(
            f"ceiling               {format_number(e.ceiling_tok_s, 1)} tok/s "
            "(1000 x accept len / cycle ms)"
        )
    if e.measured_tok_s is not None and e.efficiency is not None:
        out.append(
            f"measured              {format_number(e.measured_tok_s, 1)} tok/s = "
            f"{format_percent(e.efficiency)} of the ceiling"
        )
    if e.break_even_accept_len is not None and e.baseline_tok_s is not None:
        verdict = (
            "above it: speculation pays"
            if e.accept_len is not None and e.accept_len > e.break_even_accept_len
            else "speculation does not pay"
        )
        out.append(
            f"break-even accept len {format_number(e.break_even_accept_len, 2)} to match "
            f"the {format_number(e.baseline_tok_s, 1)} tok/s baseline ({verdict})"
        )
    if e.p_current_unbounded is not None:
        chain = (
            f", {format_percent(e.p_current_chain)} for a chain of {e.steps} steps"
            if e.p_current_chain is not None
            else ""
        )
        out.append(
            f"current acceptance p  {format_percent(e.p_current_unbounded)} "
            f"per token at unbounded depth{chain}"
        )
    if e.target_tok_s is not None and e.target_accept_len is not None:
        out.append(
            f"target                {format_number(e.target_tok_s, 1)} tok/s needs accept "
            f"len {format_number(e.target_accept_len, 3)}"
        )
        if e.reachable is False and e.steps is not None:
            out.append(
                f"                      unreachable with {e.steps} draft steps "
                f"(at most {e.steps + 1} tokens per cycle)"
            )
        elif e.reachable and e.p_needed_chain is not None:
            out.append(
                f"                      per-token acceptance needed with {e.steps} steps: "
                f"{format_percent(e.p_needed_chain)}"
            )
        if e.p_needed_unbounded is not None:
            out.append(
                f"                      per-token acceptance needed at unbounded depth: "
                f"{format_percent(e.p_needed_unbounded)}"
            )
    return "\n".join(out) + "\n"
