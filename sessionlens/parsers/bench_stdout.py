"""`bench-stdout`: the stdout of a simple benchmark client (DESIGN §2, the seed's script).

Header `Benchmarking URL` and `max_tokens=N, num_runs=N, warmup=N` (settings), warm-up lines
(counted, never samples), run lines `Run i/n: T tokens in S s = X tok/s (prompt: P toks)`
(one sample per complete field), and a `Results` section of no fixed layout, read best-effort.
The source summary holds the overall figure Σtokens/Σseconds, recomputed (and flagged with
`truncated-output`) when the section is missing or cut. Each `Benchmarking` header opens a
new block, so a file holding several invocations keeps them apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from .._lines import Line, SourceText
from ..model import BlockStart, Record, Sample, Setting, SummaryItem
from .base import ParseContext, read_number

format_id = "bench-stdout"
priority = 10

_RUN_SNIFF = re.compile(r"Run\s+\d+\s*/\s*\d+\s*:\s*\d+\s+tokens?\s+in\s")
_HEADER = re.compile(r"^\s*Benchmarking\b\s*(?P<url>\S*)")
_KV_LINE = re.compile(r"^\s*[a-z_]+\s*=\s*[^,\s]*(?:\s*,\s*[a-z_]+\s*=\s*[^,\s]*)*\s*,?\s*$")
_KV = re.compile(r"([a-z_]+)\s*=\s*([^,\s]*)(\s*,)?")
_WARMUP = re.compile(r"^\s*Warmup\s+\d+\s*/\s*\d+\s+done\b")
# Each number is followed by its (optional) terminator; a cut line stops anywhere.
_RUN = re.compile(
    r"Run\s+(?P<i>\d+)\s*/\s*(?P<n>\d+)\s*:\s*"
    r"(?:(?P<T>\d+)(?P<Tt>\s+tokens?\b)?"
    r"(?:\s+in\s+(?P<S>[\d.]+)(?P<St>\s*s\b)?"
    r"(?:\s*=\s*(?P<X>[\d.]+)(?P<Xt>\s*tok/s)?"
    r"(?:\s*\(\s*prompt\s*:\s*(?P<P>\d+)(?P<Pt>\s*toks?\b)?"
    r")?)?)?)?"
)
_RESULTS = re.compile(r"^\s*=+\s*Results?\s*=+\s*$", re.IGNORECASE)
_RESULT_ROW = re.compile(r"^\s*(?P<label>[A-Za-z][^:]{0,60}?)\s*:\s*(?P<rest>.*)$")
_TOKS = re.compile(r"(?P<v>[\d.]+)\s*tok/s")
_TOKENS_IN = re.compile(r"(?P<t>\d+)\s+tokens?\s+in\s+(?P<s>[\d.]+)\s*s\b")
_OVERALL = re.compile(r"overall|total|aggregate", re.IGNORECASE)

# (group, terminator group, metric, fixed decimals)
_FIELDS = (
    ("T", "Tt", "output_tokens", 0),
    ("S", "St", "duration_s", 2),
    ("X", "Xt", "throughput_tok_s", 1),
    ("P", "Pt", "prompt_tokens", 0),
)


def sniff(head: str, name: str) -> float:
    """Score: run lines are decisive; the header alone is a strong hint."""
    if _RUN_SNIFF.search(head):
        return 1.0
    if re.search(r"^\s*Benchmarking\s+\S+", head, re.MULTILINE) and "num_runs=" in head:
        return 0.9
    return 0.0


@dataclass
class _State:
    block: int = -1
    num_runs: dict[int, int] = field(default_factory=dict)
    runs_seen: dict[int, set[int]] = field(default_factory=dict)
    tokens: int = 0
    seconds: float = 0.0
    runs: int = 0
    in_results: int | None = None  # line of the Results header while inside it
    results_ok: bool = False
    results_cut_line: int | None = None
    printed_overall: float | None = None
    results: dict[str, float] = field(default_factory=dict)
    last_line: int = 0


def _typed(text: str) -> object:
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if re.fullmatch(r"-?\d+\.\d*", text):
        return float(text)
    if text in ("True", "true", "False", "false"):
        return text.lower() == "true"
    return text


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one client stdout, in line order."""
    st = _State()
    for ln in src.lines():
        st.last_line = ln.no
        yield from _line(ln, st, ctx)
    yield from _finish(st, ctx)


def _ensure_block(st: _State, line: int) -> Iterator[Record]:
    if st.block < 0:
        st.block = 0
        yield BlockStart(0, line, format_id)


def _line(ln: Line, st: _State, ctx: ParseContext) -> Iterator[Record]:
    text = ln.text
    if not text.strip():
        return
    m = _HEADER.match(text)
    if m:
        st.block += 1
        st.in_results = None
        yield BlockStart(st.block, ln.no, format_id)
        if m.group("url"):
            yield Setting("url", m.group("url"), ln.no, st.block)
        ctx.count("header")
        return
    if _KV_LINE.match(text) and st.in_results is None:
        yield from _ensure_block(st, ln.no)
        items = list(_KV.finditer(text))
        for j, kv in enumerate(items):
            key, raw = kv.group(1), kv.group(2)
            last = j == len(items) - 1 and kv.group(3) is None
            if last and ln.cut and re.fullmatch(r"\d*", raw):
                ctx.warn(ln.no, "truncated-value", f"setting {key} is cut ({raw!r}); not kept")
                continue
            value = _typed(raw)
            if key == "num_runs" and isinstance(value, int):
                st.num_runs[st.block] = value
            yield Setting(key, value, ln.no, st.block)
        ctx.count("settings")
        return
    if _WARMUP.match(text):
        ctx.count("warmup")
        return
    m = _RUN.search(text)
    if m:
        yield from _ensure_block(st, ln.no)
        yield from _run(ln, m, st, ctx)
        return
    if _RESULTS.match(text):
        st.in_results = ln.no
        ctx.count("results")
        return
    if st.in_results is not None:
        _result_row(ln, st, ctx)
        return
    if "Run " in text and re.search(r"Run\s+\d", text):
        ctx.warn(
            ln.no, "unparsed-line", f"a run line that could not be read: {text.strip()[:80]!r}"
        )


def _run(ln: Line, m: re.Match[str], st: _State, ctx: ParseContext) -> Iterator[Record]:
    ctx.count("run")
    run = int(m.group("i"))
    seen = st.runs_seen.setdefault(st.block, set())
    if run in seen:
        ctx.warn(ln.no, "duplicate-run", f"run {run} appears twice in this benchmark")
    seen.add(run)
    line_end = len(ln.text.rstrip())
    values: dict[str, float] = {}
    for grp, term, metric, decimals in _FIELDS:
        raw = m.group(grp)
        if raw is None:
            break
        at_end = m.group(term) is None and m.end(grp) >= line_end
        num = read_number(raw, at_end=at_end, line_cut=ln.cut, decimals=decimals or None)
        if num.cut or num.value is None:
            ctx.warn(
                ln.no, "truncated-value", f"run {run}: {metric} is cut ({raw!r}); no sample taken"
            )
            break
        values[metric] = num.value
        yield Sample(metric, num.value, ln.no, st.block, run)
    t, s, x = values.get("output_tokens"), values.get("duration_s"), values.get("throughput_tok_s")
    if t is not None and s is not None:
        st.tokens += int(t)
        st.seconds += s
        st.runs += 1
    if t is not None and s is not None and x is not None and s > 0:
        expected = t / s
        # X has 1 decimal; S was rounded to 0.01 s, which moves T/S by up to T*0.005/S².
        tolerance = 0.05 + t * 0.005 / (s * s) + 1e-9
        if abs(expected - x) > tolerance:
            ctx.warn(
                ln.no,
                "inconsistent-value",
                f"run {run}: {int(t)} tokens in {s:.2f} s is {expected:.1f} tok/s, "
                f"but {x:.1f} tok/s is printed; the printed value is kept",
            )


def _result_row(ln: Line, st: _State, ctx: ParseContext) -> None:
    text = ln.text.strip()
    row = _RESULT_ROW.match(text)
    tok = _TOKS.search(text) if row else None
    if row is None or tok is None:
        st.results_cut_line = ln.no
        ctx.warn(ln.no, "unknown-results", f"results line not understood: {text[:80]!r}")
        return
    num = read_number(tok.group("v"), at_end=False, line_cut=ln.cut, decimals=None)
    if num.value is None:
        st.results_cut_line = ln.no
        ctx.warn(ln.no, "truncated-value", f"results value is cut ({tok.group('v')!r})")
        return
    label = row.group("label").strip()
    ctx.count("result")
    if _OVERALL.search(label):
        st.printed_overall = num.value
        st.results_ok = True
        ti = _TOKENS_IN.search(text)
        if ti and float(ti.group("s")) > 0:
            expected = int(ti.group("t")) / float(ti.group("s"))
            if abs(expected - num.value) > 0.05 + expected * 0.001:
                ctx.warn(
                    ln.no,
                    "inconsistent-value",
                    f"overall: {ti.group('t')} tokens in {ti.group('s')} s is "
                    f"{expected:.1f} tok/s, but {num.value} tok/s is printed; "
                    "the printed value is kept",
                )
    else:
        st.results[label] = num.value
        st.results_ok = True


def _finish(st: _State, ctx: ParseContext) -> Iterator[Record]:
    for block, expected in sorted(st.num_runs.items()):
        got = len(st.runs_seen.get(block, set()))
        if got < expected:
            ctx.warn(
                st.last_line,
                "missing-runs",
                f"{got} of {expected} runs were read (num_runs={expected})",
            )
    recomputed = st.seconds > 0 and st.tokens > 0 and st.runs > 0
    overall = st.tokens / st.seconds if recomputed else None
    section_missing = st.in_results is None and st.printed_overall is None and not st.results_ok
    if st.printed_overall is not None:
        yield SummaryItem("runs", st.runs)
        yield SummaryItem("output_tokens", st.tokens)
        yield SummaryItem("duration_s", round(st.seconds, 6))
        yield SummaryItem("throughput_tok_s", st.printed_overall)
        yield SummaryItem("recomputed", False)
        if overall is not None and abs(overall - st.printed_overall) > 0.05 + overall * 0.005:
            ctx.warn(
                st.last_line,
                "inconsistent-value",
                f"the printed overall {st.printed_overall} tok/s differs from "
                f"Σtokens/Σseconds = {overall:.1f} tok/s of the runs read; "
                "the printed value is kept",
            )
    else:
        yield SummaryItem("runs", st.runs)
        yield SummaryItem("output_tokens", st.tokens)
        yield SummaryItem("duration_s", round(st.seconds, 6))
        yield SummaryItem("throughput_tok_s", overall)
        yield SummaryItem("recomputed", True)
        where = "is missing" if section_missing else "is cut"
        line = st.last_line if section_missing else (st.results_cut_line or st.last_line)
        figure = f"{overall:.1f} tok/s" if overall is not None else "nothing (no complete run)"
        if st.runs or st.block >= 0:
            ctx.warn(
                line,
                "truncated-output",
                f"the results section {where}; the overall throughput was recomputed "
                f"from {st.runs} runs (Σtokens/Σseconds): {figure}",
            )
    if st.results:
        yield SummaryItem("results", dict(st.results))
