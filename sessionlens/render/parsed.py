"""Text for `sessionlens parse`: a readable table, JSON, or CSV of the tidy rows.

Owns the display of parse results (DESIGN §1, §3); returns strings and never writes files.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any

from .. import metrics, stats
from ..model import ParseResult

# Settings worth showing first in the table (a performance comparison turns on these).
KEY_SETTINGS = (
    "model_path",
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "speculative_attention_mode",
    "tp_size",
    "dp_size",
    "attention_backend",
    "disable_cuda_graph",
    "cuda_graph_max_bs",
    "max_tokens",
    "num_runs",
    "warmup",
)


def jsonable(value: Any) -> Any:
    """Settings and summaries as strict JSON: non-finite floats become strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def _sample_row(row: dict[str, Any]) -> dict[str, Any]:
    v = row["value"]
    if isinstance(v, float) and not math.isfinite(v):
        row = dict(row, value=None)
    return row


def to_json(result: ParseResult) -> str:
    """The `parse --format json` object of DESIGN §3."""
    sources = [jsonable(s.model_dump()) for s in result.sources]
    doc = {
        "sources": sources,
        "samples": [_sample_row(r) for r in result.columns.rows()],
        "diagnostics": [d.model_dump() for d in result.diagnostics],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def to_csv(result: ParseResult) -> str:
    """The tidy rows as CSV (floats unrounded)."""
    frame = result.samples
    return str(frame.write_csv())


def _fmt_setting(value: Any) -> str:
    text = json.dumps(jsonable(value), ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


def to_table(result: ParseResult) -> str:
    """A human-readable summary per source and metric: n, mean, min, max, unit."""
    per_source: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    cols = result.columns
    for source, metric, value in zip(cols.source, cols.metric, cols.value, strict=True):
        per_source[source][metric].append(value)
    out: list[str] = []
    for src in result.sources:
        facts = [src.format or "unknown format", f"{src.lines} lines", f"{src.samples} samples"]
        if src.embedded_formats:
            facts.append("with " + ", ".join(src.embedded_formats))
        out.append(f"{src.path}  ({', '.join(facts)})")
        settings = dict(src.settings)
        for block in src.blocks.with_settings():
            for k, v in block.settings.items():
                settings.setdefault(k, v)
        shown = [k for k in KEY_SETTINGS if k in settings]
        if not shown:
            shown = list(settings)[:12]
        if shown:
            out.append(
                "  settings: " + ", ".join(f"{k}={_fmt_setting(settings[k])}" for k in shown)
            )
            if len(settings) > len(shown):
                out.append(
                    f"            (+{len(settings) - len(shown)} more; --format json lists all)"
                )
        if src.summary:
            out.append("  summary:  " + _summary_line(src.summary))
        if src.blocks and len(src.blocks) > 1:
            out.append(f"  blocks:   {len(src.blocks)}")
        if src.record_counts:
            out.append("  records:  " + ", ".join(f"{k} {v}" for k, v in src.record_counts.items()))
        table = per_source.get(src.path, {})
        if table:
            rows: list[tuple[str, ...]] = [("metric", "n", "mean", "min", "max", "unit")]
            for metric, values in table.items():
                finite = [v for v in values if math.isfinite(v)]
                m = metrics.get(metric)
                if finite:
                    mean = stats.fmean(finite)  # exact sum: finite near the float limit too
                    cells = [
                        metrics.format_value(metric, x, unit=False)
                        for x in (mean, min(finite), max(finite))
                    ]
                else:
                    cells = ["nan", "nan", "nan"]
                unit = "%" if m.unit == "fraction" else m.unit
                cells = [c.removesuffix(" %") for c in cells]
                rows.append((metric, str(len(values)), *cells, unit))
            widths = [max(len(r[i]) for r in rows) for i in range(6)]
            for r in rows:
                left = r[0].ljust(widths[0])
                nums = "  ".join(r[i].rjust(widths[i]) for i in range(1, 5))
                out.append(f"  {left}  {nums}  {r[5]}".rstrip())
        out.append("")
    return "\n".join(out)


def _run_summary(summary: dict[str, Any]) -> str:
    tput = summary.get("throughput_tok_s")
    tput_text = metrics.format_value("throughput_tok_s", tput) if tput is not None else "—"
    text = (
        f"{summary.get('runs', 0)} runs, {summary.get('output_tokens', 0)} tokens in "
        f"{metrics.format_value('duration_s', summary.get('duration_s'))} = {tput_text}"
    )
    if summary.get("recomputed"):
        text += " (recomputed: the printed overall is missing)"
    return text


def _summary_line(summary: dict[str, Any]) -> str:
    if "throughput_tok_s" in summary and "runs" in summary:
        parts = summary.get("invocations")
        if isinstance(parts, list) and len(parts) > 1:
            lines = [
                f"{_run_summary({**summary, 'recomputed': False})} over {len(parts)} invocations"
            ]
            lines += [
                f"            block {p.get('block')}: {_run_summary(p)}"
                for p in parts
                if isinstance(p, dict)
            ]
            return "\n".join(lines)
        return _run_summary(summary)
    return ", ".join(f"{k}={_fmt_setting(v)}" for k, v in summary.items())
