"""`bench-stdout`: the stdout of a simple benchmark client (DESIGN §2, the seed's script).

Header `Benchmarking URL` and `max_tokens=N, num_runs=N, warmup=N` (settings), warm-up lines
(counted, never samples), run lines `Run i/n: T tokens in S s = X tok/s (prompt: P toks)`
(one sample per complete field), and a `Results` section of no fixed layout, read best-effort.
Each invocation (a `Benchmarking` header, or run numbers starting again) is a block with its
own checks; the source summary holds the overall figure Σtokens/Σseconds, recomputed (and
flagged with `truncated-output`) when the section is missing or cut. Server-log and profiler
lines printed to the same terminal go to those formats' readers, asked for by id (`ctx.embed`).
It never opens files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .._lines import Line, SourceText
from ..model import BlockStart, Record, Sample, Setting, SummaryItem
from ._blocks import FOREIGN, counter
from ._fields import NUMBER, read_number, strip_head, strip_outer
from .base import LineReader, ParseContext

format_id = "bench-stdout"
priority = 10
_VLLM, _SGLANG = "vllm-server", "sglang-server"  # the server logs a terminal may hold

_RUN_SNIFF = re.compile(r"Run\s+\d+\s*/\s*\d+\s*:\s*\d+\s+tokens?\s+in\s")
_HEADER = re.compile(r"^\s*Benchmarking\b[\s.:]*(?P<url>\S*)")
_VALUE = r"(?:'[^']*'|\"[^\"]*\"|[^,\s()]*)"  # unquoted: no `(`, so `r = post(url, ...)` is code
_KV_LINE = re.compile(
    rf"^\s*[A-Za-z_][\w.-]*\s*=\s*{_VALUE}(?:\s*,\s*[A-Za-z_][\w.-]*\s*=\s*{_VALUE})*\s*,?\s*$"
)
_KV = re.compile(rf"([A-Za-z_][\w.-]*)\s*=\s*({_VALUE})(\s*,)?")
# A settings line cut inside a key (`max_tokens=2048, num_runs=5, warm`): its pairs before
# the cut are kept, the cut one is said.
_KV_CUT = re.compile(
    rf"^\s*(?:[A-Za-z_][\w.-]*\s*=\s*{_VALUE}\s*,\s*)+(?P<rest>[A-Za-z_][\w.-]*\s*=?\s*)$"
)
_WARMUP = re.compile(r"\bwarm[\s-]?up\b", re.IGNORECASE)
# Each number is followed by its (optional) terminator; a cut line stops anywhere.
_RUN = re.compile(
    r"\bRun\s+(?P<i>\d{1,9})\s*/\s*(?P<n>\d{1,9})\s*:\s*"
    r"(?:(?P<T>\d{1,15})(?P<Tt>\s+tokens?\b)?"
    r"(?:\s+in\s+(?P<S>[\d.]{1,20})(?P<St>\s*s(?:ec(?:onds?)?)?\b)?"
    r"(?:\s*=\s*(?P<X>[\d.]{1,20})(?P<Xt>\s*tok(?:en)?s?/s)?"
    r"(?:\s*\(\s*prompt\s*:\s*(?P<P>\d{1,15})(?P<Pt>\s*(?:toks?|tokens?)\b|\s*(?=\)))?"
    r")?)?)?)?"
)
_RESULTS = re.compile(
    r"^\s*(?:[=#*-]{2,}\s*)?(?:Results?|Summary)\s*(?:[=#*-]{2,}\s*)?:?\s*$", re.IGNORECASE
)
# `label:` at the start of a results line or after `, ` / `; ` / `| ` (several per line).
_LABEL = re.compile(
    r"(?:^|(?<=[,;|]))\s*(?P<label>[A-Za-z][A-Za-z0-9 _()/%.+-]{0,60}?)\s*:(?=\s|$)"
)
_NON_FINITE = re.compile(r"=\s*([-+]?(?:inf(?:inity)?|nan))\s*tok(?:en)?s?/s", re.IGNORECASE)
_TOKS = re.compile(r"(?P<v>[-+]?[\d.]+)\s*tok(?:en)?s?/s")
_TOKENS_IN = re.compile(r"(?P<t>\d{1,15})\s+tokens?\s+in\s+(?P<s>\d{1,15}(?:\.\d*)?)\s*s\b")
_OVERALL = re.compile(r"overall|total|aggregate|combined", re.IGNORECASE)

# Lines of a server log printed to the same terminal (a server started with `&`, the seed's
# phase-timing lines): they go to an embedded reader of that log, never to the results.
_VLLM_LINE = re.compile(
    r"Avg (?:prompt|generation) throughput\s*:|SpecDecoding metrics|Speculative metrics"
    r"|SpecDecodeWorker stage times|non-default args:|LLM engine \(v"
    r"|^\s*(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d"
)
_SGLANG_LINE = re.compile(
    r"(?:Decode|Prefill) batch[.,\s\[(]|server_args=|:\s*[-+]?[\d.]+\s*ms/cyc\b"
)
# The client's own lines, even behind a logging prefix that looks like a server's.
_BENCH_LINE = re.compile(
    r"\bRun\s+\d+\s*/\s*\d+\s*:|\bBenchmarking\b|\bWarm-?up\s+\d+\s*/|\bnum_runs\s*="
    r"|=\s*Results?\s*=|\d\s*tok(?:en)?s?/s\b"
)
_LOG_STAMP = re.compile(
    r"^\s*(?:\[[^\]]*\d\d:\d\d:\d\d[^\]]*\]|(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d[,.\d]*)"
    r"(?:\s*-?\s*(?:INFO|WARNING|DEBUG)\b\s*[-:]?)?\s*"
)
_UNITS = ("tokens", "toks", "tok/s", "tokens/s", "sec", "seconds")
# The client stopping on an exception: the traceback's last line (`requests.exceptions.
# ReadTimeout: ...`, `KeyboardInterrupt`); the runs after it are missing for that reason.
_TRACEBACK = re.compile(r"^\s*Traceback \(most recent call last\)")
_EXCEPTION = re.compile(
    r"^\s*(?P<exc>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Timeout|Interrupt|Exit))"
    r"(?::\s*(?P<msg>.*))?$"
)
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
    if "num_runs=" in head and re.search(r"^\s*Benchmarking\s+\S+", strip_head(head), re.M):
        return 0.9
    return 0.0


@dataclass
class _Inv:
    """One invocation of the client: a block with its own runs and results section."""

    block: int
    line: int
    num_runs: int | None = None  # from the header's settings
    announced: int | None = None  # n of `Run i/n`, when no header says num_runs
    runs: dict[int, tuple[int, str]] = field(default_factory=dict)  # run -> (line, text)
    last_run: int = 0
    tokens: int = 0
    seconds: float = 0.0
    counted: int = 0  # runs whose tokens and seconds were both read
    results_line: int | None = None  # line of the results header, once seen
    results_rows: int = 0  # understood rows of the section
    results_last_ok: bool = False  # the section's last line was understood
    results_cut_line: int | None = None
    printed_overall: float | None = None
    overall_line: int | None = None
    results: dict[str, float] = field(default_factory=dict)
    last_line: int = 0


@dataclass
class _State:
    invs: list[_Inv] = field(default_factory=list)
    last_line: int = 0
    servers: dict[str, LineReader] = field(default_factory=dict)  # format id -> reader
    # one numbering for invocations and the embedded log's phase blocks
    next_block: Callable[[], int] = field(default_factory=counter)
    claimed: bool = True  # whether the last line belonged to the current invocation
    in_traceback: bool = False  # a `Traceback` line was seen and its exception line not yet

    @property
    def inv(self) -> _Inv | None:
        return self.invs[-1] if self.invs else None


def _typed(text: str) -> object:
    if re.fullmatch(r"-?\d{1,18}", text):
        return int(text)
    if re.fullmatch(r"-?\d{1,18}\.\d{0,18}", text):
        return float(text)
    if text in ("True", "true", "False", "false"):
        return text.lower() == "true"
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one client stdout, in line order."""
    st = _State()
    for ln in src.lines():
        st.last_line = ln.no
        text = strip_outer(ln.text)
        server = _VLLM_LINE.search(text) or _SGLANG_LINE.search(text)
        if server or FOREIGN.search(text):
            if server or not _BENCH_LINE.search(text):
                yield from _server_line(ln, text, st, ctx)
                continue
            # the client's own line behind a logging prefix (`[2025-… ] Run 1/5: …`)
            text = _LOG_STAMP.sub("", text, count=1)
        st.claimed = True
        yield from _line(ln, text, st, ctx)
        if st.invs and text.strip() and st.claimed:
            st.invs[-1].last_line = ln.no
    for fid, reader in st.servers.items():
        yield from _embedded(fid, reader.finish(), ctx)
    yield from _finish(st, ctx)


def _server_line(ln: Line, text: str, st: _State, ctx: ParseContext) -> Iterator[Record]:
    ctx.count("server-line")
    fid = _VLLM if _VLLM_LINE.search(text) else _SGLANG
    reader = st.servers.get(fid)
    if reader is None:
        reader = st.servers[fid] = (
            ctx.embed(fid) if fid == _VLLM else ctx.embed(fid, next_block=st.next_block)
        )
    yield from _embedded(fid, reader.feed(Line(ln.no, text, ln.cut)), ctx)


def _embedded(fid: str, records: Iterator[Record], ctx: ParseContext) -> Iterator[Record]:
    for rec in records:
        if isinstance(rec, Sample | Setting) and rec.block is None:  # phase blocks say so
            ctx.embedded.add(fid)
        yield rec


def _new_inv(st: _State, line: int) -> Iterator[Record]:
    inv = _Inv(st.next_block(), line, last_line=line)
    st.invs.append(inv)
    yield BlockStart(inv.block, line, format_id)


def _line(ln: Line, text: str, st: _State, ctx: ParseContext) -> Iterator[Record]:
    if not text.strip():
        return
    m = _HEADER.match(text)
    if m:
        yield from _new_inv(st, ln.no)
        if m.group("url"):
            yield Setting("url", m.group("url"), ln.no, st.invs[-1].block)
        ctx.count("header")
        return
    if _RESULTS.match(text):
        if st.inv is None:
            yield from _new_inv(st, ln.no)
        assert st.inv is not None
        st.inv.results_line = ln.no
        ctx.count("results")
        return
    inv = st.inv
    in_results = inv is not None and inv.results_line is not None
    if not in_results and _KV_LINE.match(text):
        yield from _settings(ln, text, st, ctx)
        return
    if not in_results and ln.cut and (cut := _KV_CUT.match(text)) is not None:
        yield from _settings(ln, text[: cut.start("rest")], st, ctx)
        ctx.warn(
            ln.no,
            "truncated-settings",
            f"the settings line is cut at {cut.group('rest').strip()!r}; the settings before "
            "it are kept",
        )
        return
    m = _RUN.search(text)
    # A run line says `T tokens`, or stops before that on a cut line; `Run 3/5: 50.9 tok/s`
    # in a results section is a row of it.
    is_run = m is not None and (
        m.group("Tt") is not None
        or m.end() >= len(text.rstrip())
        or (not in_results and re.search(r"\btokens?\b", text[m.end() :]) is not None)
        or (not in_results and ln.cut)
    )
    if m is not None and is_run and not _WARMUP.search(text, 0, m.start()):
        yield from _run(ln, text, m, st, ctx)
        return
    if _WARMUP.search(text) and not in_results:
        ctx.count("warmup")
        return
    if inv is not None and inv.results_line is not None:
        _result_line(ln, text, inv, ctx)
        return
    if re.search(r"\bRun\s+\d", text):
        ctx.warn(
            ln.no, "unparsed-line", f"a run line that could not be read: {text.strip()[:80]!r}"
        )
        return
    if _TRACEBACK.match(text):
        st.in_traceback = True
        ctx.count("traceback")
        return
    e = _EXCEPTION.match(text) if st.in_traceback or inv is not None else None
    if e is not None and (st.in_traceback or e.group("msg") is not None):
        st.in_traceback = False
        what = e.group("exc") + (f": {e.group('msg')[:80]}" if e.group("msg") else "")
        ctx.warn(ln.no, "client-error", f"the benchmark client stopped on {what}")
        return
    st.claimed = False  # other text (a shell prompt, grep's `--`): not the invocation's


def _settings(ln: Line, text: str, st: _State, ctx: ParseContext) -> Iterator[Record]:
    if st.inv is None:
        yield from _new_inv(st, ln.no)
    inv = st.inv
    assert inv is not None
    items = list(_KV.finditer(text))
    for j, kv in enumerate(items):
        key, raw = kv.group(1), kv.group(2)
        if j == len(items) - 1 and kv.group(3) is None and ln.cut:
            # nothing follows the last value of a cut line: `warmup=2` may have been `20`
            ctx.warn(ln.no, "truncated-value", f"setting {key} is cut ({raw!r}); not kept")
            continue
        value = _typed(raw)
        if key == "num_runs" and isinstance(value, int) and not isinstance(value, bool):
            inv.num_runs = value
        yield Setting(key, value, ln.no, inv.block)
    ctx.count("settings")


def _recaps(before: re.Match[str], m: re.Match[str], cut: bool) -> bool:
    """Whether run line `m` repeats the figures of `before` (a results section's recap);
    on a cut line, the fields it still has (the last one maybe only begun)."""
    if before.group("i") != m.group("i") or m.group("T") is None:
        return False
    for g in "TSXP":
        now, was = m.group(g), before.group(g)
        if now is None:
            return cut  # the line stops before this field: only a cut may do that
        if was is None or not (now == was or (cut and was.startswith(now))):
            return False
    return True


def _run(ln: Line, text: str, m: re.Match[str], st: _State, ctx: ParseContext) -> Iterator[Record]:
    ctx.count("run")
    run = int(m.group("i"))
    body = ln.text.strip()  # with its outer prefix: the same run from two files differs
    inv = st.inv
    earlier = inv.runs.get(run) if inv is not None else None
    # a word-for-word repeat (a doubled paste, `tee` twice), or a cut copy of one
    if earlier is not None and (earlier[1] == body or (ln.cut and earlier[1].startswith(body))):
        assert inv is not None
        ctx.warn(
            ln.no,
            "duplicate-run",
            f"run {run} repeats line {earlier[0]} word for word; it is counted once",
        )
        return
    if inv is not None and inv.results_line is not None and earlier is not None:
        before = _RUN.search(earlier[1])
        if before is not None and _recaps(before, m, ln.cut):
            # the results section recaps the runs: the same figures, not a new invocation
            ctx.count("results-recap")
            inv.results_rows += 1
            return
    restart: str | None = None
    if inv is not None and (inv.results_line is not None or run in inv.runs):
        # Run numbers start again, or runs follow a results section: a new invocation
        # whose `Benchmarking` header is not in the file (grep output, a cut paste).
        restart = (
            "after its results section"
            if inv.results_line is not None
            else f"after run {inv.last_run}"
        )
    if inv is None or restart is not None:
        yield from _new_inv(st, ln.no)
        inv = st.invs[-1]
    if restart is not None:
        ctx.warn(
            ln.no,
            "duplicate-run",
            f"run {run} appears again {restart} with no `Benchmarking` header between: "
            f"taken as a new invocation (block {inv.block})",
        )
    inv.runs[run] = (ln.no, body)
    inv.last_run = run
    if inv.num_runs is None:
        inv.announced = int(m.group("n"))
    line_end = len(text.rstrip())
    values: dict[str, float] = {}
    said = False  # a diagnostic already explains where reading stopped
    for grp, term, metric, decimals in _FIELDS:
        raw = m.group(grp)
        if raw is None:
            break
        tail = text[m.end(grp) : line_end].strip()
        # the unit was printed (or its start, on a cut last line): the number is whole
        ended = m.group(term) is not None or (
            ln.cut and tail != "" and any(u.startswith(tail) for u in _UNITS)
        )
        at_end = not ended and m.end(grp) >= line_end
        said = True
        if not ended and not at_end:
            ctx.warn(
                ln.no,
                "unparsed-line",
                f"run {run}: {metric} {raw!r} is followed by "
                f"{text[m.end(grp) : m.end(grp) + 12]!r}, not its unit; not read",
                level="warning",  # a run's sample is missing, not just a line skipped
            )
            break
        # every field prints a unit after it (`tokens`, `s`, `tok/s`, `toks)`): one the line
        # ends without is cut, newline or not
        num = read_number(raw, at_end=at_end, line_cut=ln.cut or at_end, decimals=decimals or None)
        if num.cut or num.value is None:
            ctx.warn(
                ln.no, "truncated-value", f"run {run}: {metric} is cut ({raw!r}); no sample taken"
            )
            break
        said = False
        values[metric] = num.value
        yield Sample(metric, num.value, ln.no, inv.block, run)
    if not said and "throughput_tok_s" not in values:
        # the fields stop before the throughput: say why there is no sample
        rest = text[m.end() :].strip()
        word = re.search(r"[a-z/]+$", rest)
        bare = rest
        if word is not None and any(u.startswith(word.group()) for u in _UNITS):
            bare = rest[: word.start()]  # the start of a unit the cut took the rest of
        odd = _NON_FINITE.match(rest)
        if ln.cut and re.fullmatch(r"[\s\d.=]*", bare):
            ctx.warn(ln.no, "truncated-value", f"run {run}: the line is cut before its throughput")
        elif odd is not None and "duration_s" in values:
            # `= inf tok/s` after `in 0.00s`: Python's float printing of a division by zero
            ctx.warn(
                ln.no,
                "non-finite-value",
                f"run {run}: the throughput is {odd.group(1)}; no sample taken",
            )
        else:
            where = f"from {rest[:30]!r}" if rest else "(the line has none)"
            ctx.warn(
                ln.no,
                "unparsed-line",
                f"run {run}: the throughput cannot be read {where}; no sample taken",
                level="warning",
            )
    t, s, x = values.get("output_tokens"), values.get("duration_s"), values.get("throughput_tok_s")
    if t is not None and s is not None and s > 0:  # `0 tokens in 0.00s`: nothing to add
        inv.tokens += int(t)
        inv.seconds += s
        inv.counted += 1
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


def _result_line(ln: Line, text: str, inv: _Inv, ctx: ParseContext) -> None:
    """A results line: one or more `label: … X tok/s` rows (`Min: 1 tok/s, Max: 2 tok/s`)."""
    body = text.strip()
    labels = list(_LABEL.finditer(body))
    understood = bool(labels)
    for k, lab in enumerate(labels):
        end = labels[k + 1].start() if k + 1 < len(labels) else len(body)
        segment = body[lab.end() : end].rstrip(" ,;|")
        at_end = end >= len(body)
        if not _result_row(ln, lab.group("label").strip(), segment, at_end, inv, ctx):
            understood = False
    if not labels:
        ctx.warn(ln.no, "unknown-results", f"results line not understood: {body[:80]!r}")
    inv.results_last_ok = understood and not ln.cut
    if not understood:
        inv.results_cut_line = ln.no


def _result_row(
    ln: Line, label: str, segment: str, at_end: bool, inv: _Inv, ctx: ParseContext
) -> bool:
    """Read one row; False (with a diagnostic) when it is not understood or cut."""
    value: str | None = None
    complete = True
    tok = _TOKS.search(segment)
    ti = _TOKENS_IN.search(segment)
    if tok is not None:
        before = segment[: tok.start()]
        if ti is not None and ti.end() <= tok.start():
            before = before[: ti.start()] + before[ti.end() :]
        if NUMBER.search(before) is None:  # X must be the row's own number, not a list's last
            value = tok.group("v")
    elif ("tok/s" in label or "tokens/s" in label) and not re.search(r"\d", label):
        # the unit is in the label: `Mean throughput (tok/s): 59.6`; never a reference
        # figure inside it (`vs baseline (82.6 tok/s): -29.4%` is a ratio)
        seg = segment.strip()
        first = NUMBER.match(seg)
        ratio = first is not None and seg[first.end() :].lstrip()[:1] in ("%", "x", "×")
        if first is not None and not ratio and NUMBER.search(seg, first.end()) is None:
            value = first.group()
            complete = not (at_end and first.end() >= len(seg))
    if value is None:
        ctx.warn(ln.no, "unknown-results", f"results row not understood: {label}: {segment[:60]!r}")
        return False
    num = read_number(value, at_end=not complete, line_cut=ln.cut, decimals=None)
    if num.value is None:
        ctx.warn(ln.no, "truncated-value", f"results value {label!r} is cut ({value!r})")
        return False
    ctx.count("result")
    inv.results_rows += 1
    if _OVERALL.search(label) and inv.printed_overall is None:
        inv.printed_overall = num.value
        inv.overall_line = ln.no
        if ti and float(ti.group("s")) > 0:
            expected = int(ti.group("t")) / float(ti.group("s"))
            if abs(expected - num.value) > 0.05 + expected * 0.001:
                ctx.warn(
                    ln.no,
                    "inconsistent-value",
                    f"{label}: {ti.group('t')} tokens in {ti.group('s')} s is "
                    f"{expected:.1f} tok/s, but {num.value} tok/s is printed; "
                    "the printed value is kept",
                )
    else:
        inv.results[label] = num.value
    return True


def _check(inv: _Inv, where: str, ctx: ParseContext) -> dict[str, Any]:
    """One invocation's diagnostics and summary figures."""
    expected = inv.num_runs if inv.num_runs is not None else inv.announced
    got = len(inv.runs)
    if expected is not None and got < expected:
        said = f"num_runs={expected}" if inv.num_runs is not None else f"Run i/{expected}"
        ctx.warn(
            inv.last_line, "missing-runs", f"{where}{got} of {expected} runs were read ({said})"
        )
    overall = inv.tokens / inv.seconds if inv.seconds > 0 and inv.tokens > 0 else None
    out: dict[str, Any] = {
        "runs": inv.counted,
        "output_tokens": inv.tokens,
        "duration_s": round(inv.seconds, 6),
    }
    if inv.printed_overall is not None:
        out["throughput_tok_s"] = inv.printed_overall
        out["recomputed"] = False
        if overall is not None and abs(overall - inv.printed_overall) > 0.05 + overall * 0.005:
            ctx.warn(
                inv.overall_line,
                "inconsistent-value",
                f"{where}the printed overall {inv.printed_overall} tok/s differs from "
                f"Σtokens/Σseconds = {overall:.1f} tok/s of the runs read; "
                "the printed value is kept",
            )
    else:
        out["throughput_tok_s"] = overall
        out["recomputed"] = True
        figure = f"{overall:.1f} tok/s" if overall is not None else "nothing (no complete run)"
        done = f"the overall throughput was recomputed from {inv.counted} runs"
        if inv.results_line is not None and inv.results_rows and inv.results_last_ok:
            ctx.warn(
                inv.results_line,
                "unknown-results",
                f"{where}the results section prints no overall line; {done} "
                f"(Σtokens/Σseconds): {figure}",
            )
        else:
            missing = inv.results_line is None
            line = inv.last_line if missing else (inv.results_cut_line or inv.last_line)
            ctx.warn(
                line,
                "truncated-output",
                f"{where}the results section {'is missing' if missing else 'is cut'}; "
                f"{done} (Σtokens/Σseconds): {figure}",
            )
    if inv.results:
        out["results"] = dict(inv.results)
    return out


def _finish(st: _State, ctx: ParseContext) -> Iterator[Record]:
    several = len(st.invs) > 1
    per = [_check(inv, f"benchmark {inv.block}: " if several else "", ctx) for inv in st.invs]
    if not several:
        summary = per[0] if per else None
        if summary is None:
            return
        for key in ("runs", "output_tokens", "duration_s", "throughput_tok_s", "recomputed"):
            yield SummaryItem(key, summary[key])
        if "results" in summary:
            yield SummaryItem("results", summary["results"])
        return
    # Several invocations: the source's figure is Σtokens/Σseconds over all of them, and
    # `recomputed` says whether some invocation's results section was missing or cut (its
    # meaning in DESIGN §2); each invocation's own figures are kept beside them.
    tokens = sum(inv.tokens for inv in st.invs)
    seconds = sum(inv.seconds for inv in st.invs)
    yield SummaryItem("runs", sum(inv.counted for inv in st.invs))
    yield SummaryItem("output_tokens", tokens)
    yield SummaryItem("duration_s", round(seconds, 6))
    yield SummaryItem("throughput_tok_s", tokens / seconds if seconds > 0 and tokens > 0 else None)
    yield SummaryItem("recomputed", any(p["recomputed"] for p in per))
    yield SummaryItem(
        "invocations", [{"block": inv.block, **p} for inv, p in zip(st.invs, per, strict=True)]
    )
