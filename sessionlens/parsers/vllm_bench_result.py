"""`vllm-bench-result`: `vllm bench throughput` / `vllm bench latency` output and result files.

Owns the throughput and latency console lines (vllm/benchmarks/throughput.py, latency.py,
0.8.5–0.18 and the older benchmarks/ scripts), their `--output-json` documents (`indent=4`),
the PyTorch-benchmark `.pytorch.json` records all three commands write with
`SAVE_TO_PYTORCH_BENCHMARK_FORMAT=1`, and `vllm bench serve --save-result` JSON written over
several lines (`jq .`, `json.tool`, a paste). A one-line `--save-result` / `--append-result`
record stays vllm-bench-serve's, as it has been since 0.1 (a pinned `format` and committed
reports' provenance keep working); both go through `_blocks`' one record reader. The engine's
own log lines (throughput and latency run vLLM in-process) go to vllm-server's reader by id.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .._lines import Line, SourceText
from ..model import BlockStart, Record, Sample, Setting
from . import _blocks
from ._fields import is_count, read_number, shown, strip_head, strip_outer, value_problem
from .base import LineReader, ParseContext, read_lines

format_id = "vllm-bench-result"
priority = 15
_SERVER = "vllm-server"  # the in-process engine's log lines

# ------------------------------------------------------------------ console lines

# throughput.py: f"Throughput: {r:.2f} requests/s, {t:.2f} total tokens/s, {o:.2f} output
# tokens/s" (0.6+); the 2023-24 script printed `{r:.2f} requests/s, {t:.2f} tokens/s`. A
# `Throughput:` with requests/s alone is the 2023 serving script (vllm-bench-serve's).
_THROUGHPUT = re.compile(r"^\s*Throughput:\s+(?=[-+\d.na])(?P<rest>.*?requests/s\s*,.*)$")
_RATE_PART = re.compile(
    r"(?P<num>\S+?)\s+(?P<unit>requests/s|total tokens/s|output tokens/s|tokens/s)\s*(?:,|$)"
)
_RATE_METRIC = {
    "requests/s": "request_throughput_req_s",
    "total tokens/s": "total_throughput_tok_s",
    "tokens/s": "total_throughput_tok_s",  # the old script: prompt + output tokens
    "output tokens/s": "output_throughput_tok_s",
}
_TOTALS = re.compile(r"^\s*Total num (?P<what>prompt|output) tokens:\s*(?P<n>\S*)\s*$")
# latency.py: f"Avg latency: {np.mean(latencies)} seconds" and, per percentage of
# [10, 25, 50, 75, 90, 99], f"{p}% percentile latency: {x} seconds" (repr floats: no fixed
# decimals, so a value is whole only with ` seconds` after it).
_LATENCY = re.compile(
    r"^\s*(?:(?P<avg>Avg latency)|(?P<p>\d{1,2})% percentile latency):\s*(?P<rest>.*)$"
)
_SECONDS = re.compile(r"^(?P<num>\S+)\s+seconds?\b")
_NAMESPACE = re.compile(r"^\s*Namespace\((?P<body>.*)$")
# The console's result lines: no part of a JSON document, so one ends a document left open
# (a `{` pasted alone, a document cut before the console output resumes).
_CONSOLE = (_THROUGHPUT, _TOTALS, _LATENCY, _NAMESPACE)

# ------------------------------------------------------------------ JSON documents

# `--output-json` of throughput.py (keys -> metric; the other keys are settings) ...
_THROUGHPUT_JSON = {
    "elapsed_time": "benchmark_duration_s",
    "requests_per_second": "request_throughput_req_s",
    "tokens_per_second": "total_throughput_tok_s",
}
_THROUGHPUT_SETTINGS = {"num_requests": "num_prompts", "total_num_tokens": "total_num_tokens"}
# ... and of latency.py: `avg_latency`, `latencies` (one per iteration), `percentiles`.
_LATENCY_KEYS = frozenset({"avg_latency", "latencies", "percentiles"})
# The `.pytorch.json` metric names -> the metric of each benchmark value.
_PYTORCH_METRICS = {
    "requests_per_second": "request_throughput_req_s",
    "tokens_per_second": "total_throughput_tok_s",
    "latency": "total_latency_s",
}
_ENTRY = re.compile(r'^"(?P<key>(?:[^"\\]|\\.)*)"\s*:\s*(?P<rest>.*)$')

_SNIFF_CONSOLE = re.compile(
    r"^\s*Throughput:\s+[\d.]+ requests/s, [\d.]+ (?:total )?tokens/s"
    r"|^\s*Avg latency: [\d.e+-]+ seconds\s*$",
    re.MULTILINE,
)
# Keys that tell each document, in pairs: (one of the first, one of the second) anywhere.
_SNIFF_JSON = (
    (re.compile(r'"elapsed_time"\s*:'), re.compile(r'"(?:requests|tokens)_per_second"\s*:')),
    (re.compile(r'"avg_latency"\s*:'), re.compile(r'"(?:latencies|percentiles)"\s*:')),
    (re.compile(r'"name"\s*:\s*"vLLM benchmark"'), re.compile(r'"benchmark_values"\s*:')),
)
_SNIFF_SAVE_RESULT = re.compile(r'^\s*"(?:endpoint_type|model_id|tokenizer_id)"\s*:', re.M)


def sniff(head: str, name: str) -> float:
    """Score: the throughput / latency lines and JSON keys are decisive."""
    if _blocks.vllm_json(head):
        return 0.0  # a one-line `--save-result` record: vllm-bench-serve's since 0.1
    text = strip_head(head)
    if _SNIFF_CONSOLE.search(text) or any(
        a.search(text) and b.search(text) for a, b in _SNIFF_JSON
    ):
        return 1.0
    # a `--save-result` document over several lines: its request_throughput is a number
    # (GenAI-Perf's export has `endpoint_type` too, and a request_throughput object)
    if _SNIFF_SAVE_RESULT.search(text) and re.search(
        r'^\s*"request_throughput"\s*:\s*[-\d]', text, re.M
    ):
        return 1.0
    return 0.0


Path = tuple[str | int, ...]  # where a value sits in a document: keys and list indices


@dataclass(slots=True)
class _Doc:
    """A JSON document printed over several lines (`indent=`), read line by line.

    Each line of such a document is one entry (`"key": value`, a list item) or opens or
    closes a container, so a line pasted in between is no part of it, and a cut leaves the
    entries before it whole: a scalar is whole when its line is (a `,` after it, or its
    newline). `lines` holds the line of every value read, by its path.
    """

    line: int
    root: dict[str, Any] = field(default_factory=dict)
    stack: list[tuple[dict[str, Any] | list[Any], Path]] = field(default_factory=list)
    lines: dict[Path, int] = field(default_factory=dict)
    cut: list[tuple[str, int]] = field(default_factory=list)
    closed: bool = False


class Reader:
    """Line-level reader: console results, JSON documents, and the engine's own lines."""

    def __init__(self, ctx: ParseContext, *, embed_server: bool = True) -> None:
        self.ctx = ctx
        self._next_block = _blocks.counter()
        self._server: LineReader | None = ctx.embed(_SERVER) if embed_server else None
        self._doc: _Doc | None = None
        self._block: int | None = None  # the console block being read
        self._kind: str | None = None  # "throughput" | "latency"
        self._pending: dict[str, tuple[Any, int]] = {}  # run arguments (a Namespace dump)
        # `_blocks`' record reader, for `--save-result` documents (the same keys, the same
        # samples as vllm-bench-serve's one-line records)
        self._records = _blocks.BlockReader(format_id, ctx, json_records=True)

    # ------------------------------------------------------------------ entry points

    def feed(self, ln: Line) -> Iterator[Record]:
        text = strip_outer(ln.text)
        stripped = text.strip()
        if self._doc is not None:
            if self._doc_line(ln, text, stripped):
                return
            yield from self._end_doc()
        if stripped[:1] in ("{", "["):
            yield from self._json_start(ln, stripped)
            return
        m = _THROUGHPUT.match(text)
        if m is not None:
            yield from self._throughput(ln, m["rest"])
            return
        t = _TOTALS.match(text)
        if t is not None and self._kind == "throughput" and self._block is not None:
            yield from self._total(ln, t["what"], t["n"])
            return
        lat = _LATENCY.match(text)
        if lat is not None:
            yield from self._latency(ln, lat)
            return
        ns = _NAMESPACE.match(text)
        if ns is not None:
            self._namespace(ln, ns["body"])
            return
        if stripped and _blocks.FOREIGN.search(text) is None:
            self._block = self._kind = None  # free text ends a console result
        if self._server is not None:
            yield from self._served(self._server.feed(ln))

    def finish(self) -> Iterator[Record]:
        if self._doc is not None:
            yield from self._end_doc()
        if self._server is not None:
            yield from self._served(self._server.finish())

    def _served(self, records: Iterator[Record]) -> Iterator[Record]:
        """The engine log's records, the source marked as embedding its format."""
        for rec in records:
            if isinstance(rec, Sample | Setting) and rec.block is None:
                self.ctx.embedded.add(_SERVER)
            yield rec

    # ------------------------------------------------------------------ console

    def _open(self, ln: Line, kind: str) -> Iterator[Record]:
        self._block = self._next_block()
        self._kind = kind
        self.ctx.count("block")
        yield BlockStart(self._block, ln.no, format_id)
        for key, (value, line) in self._pending.items():
            yield Setting(key, value, line, self._block)
        self._pending.clear()

    def _throughput(self, ln: Line, rest: str) -> Iterator[Record]:
        yield from self._open(ln, "throughput")
        block = self._block
        pos = 0
        for part in _RATE_PART.finditer(rest):
            pos = part.end()
            value = self._number(ln, part["num"], f"{part['unit']} value", at_end=False)
            if value is not None:
                yield Sample(_RATE_METRIC[part["unit"]], value, ln.no, block)
        tail = rest[pos:].strip()
        if tail:
            # `1532.0` (cut in the number or before its unit): never a shorter number
            code = "truncated-value" if ln.cut else "unparsed-line"
            self.ctx.warn(ln.no, code, f"block {block}: the throughput line ends in {tail!r}")

    def _total(self, ln: Line, what: str, raw: str) -> Iterator[Record]:
        key = "total_input_tokens" if what == "prompt" else "total_output_tokens"
        if ln.cut:
            self.ctx.warn(ln.no, "truncated-value", f"the total of {what} tokens is cut ({raw!r})")
            return
        if not is_count(raw):  # not `²`, not `1.5e3`
            shown_raw = shown(raw)
            self.ctx.warn(
                ln.no, "unparsed-line", f"the total of {what} tokens is no count ({shown_raw})"
            )
            return
        yield Setting(key, int(raw), ln.no, self._block)

    def _latency(self, ln: Line, m: re.Match[str]) -> Iterator[Record]:
        if m["avg"] is not None or self._kind != "latency" or self._block is None:
            yield from self._open(ln, "latency")
        name = "total_latency_s_mean" if m["avg"] is not None else f"total_latency_s_p{m['p']}"
        s = _SECONDS.match(m["rest"])
        if s is None:  # no ` seconds` after the number: the line was cut inside it
            code = "truncated-value" if ln.cut else "unparsed-line"
            self.ctx.warn(ln.no, code, f"block {self._block}: {name}: {m['rest']!r} has no unit")
            return
        value = self._number(ln, s["num"], name, at_end=False)
        if value is not None:
            yield Sample(name, value, ln.no, self._block)

    def _number(self, ln: Line, raw: str, what: str, *, at_end: bool) -> float | None:
        got = read_number(raw, at_end=at_end, line_cut=ln.cut)
        if got.value is None:
            code = "truncated-value" if got.cut else "unparsed-line"
            self.ctx.warn(ln.no, code, f"block {self._block}: {what} is not read ({raw!r})")
            return None
        problem = value_problem(got.value)
        if problem is not None:
            self.ctx.warn(ln.no, problem, f"block {self._block}: {what} is {shown(raw)}")
            return None
        return got.value

    def _namespace(self, ln: Line, body: str) -> None:
        """`print(args)` (0.8.5): the run's arguments, settings of the block after it."""
        self.ctx.count("namespace")
        items, complete = _blocks.namespace_items(body)
        for key, value in items:
            self._pending[key] = (value, ln.no)
        if not complete:
            _blocks.cut_namespace(self.ctx, ln.no, len(items))

    # ------------------------------------------------------------------ JSON

    def _json_start(self, ln: Line, stripped: str) -> Iterator[Record]:
        """A document on one line, or the first line of one over several."""
        self._block = self._kind = None
        obj: Any = None
        with contextlib.suppress(ValueError, RecursionError):
            obj = json.loads(stripped)
        if obj is not None:
            yield from self._document(ln.no, obj, {})
            return
        if stripped == "{":
            self._doc = _Doc(ln.no)
            self._doc.stack.append((self._doc.root, ()))
            return
        if ln.cut:
            self.ctx.warn(ln.no, "truncated-output", "the JSON document is cut; nothing was read")
        else:
            self.ctx.warn(ln.no, "bad-record", "this line is not a whole JSON document; skipped")

    def _doc_line(self, ln: Line, text: str, stripped: str) -> bool:
        """Take a line of the open document; False when the document closed before it."""
        doc = self._doc
        assert doc is not None
        if not doc.stack:
            return False
        if any(rx.match(text) for rx in _CONSOLE):
            return False  # a result line of the console: the document was cut before it
        container, path = doc.stack[-1]
        if stripped in ("}", "},", "]", "],"):
            if (stripped[0] == "}") == isinstance(container, dict):
                doc.stack.pop()
                doc.closed = not doc.stack
            return True
        key: str | int
        if isinstance(container, dict):
            m = _ENTRY.match(stripped)
            if m is None:
                return True  # a line pasted in between: no part of the document
            key, rest = m["key"], m["rest"]
            with contextlib.suppress(ValueError, RecursionError):
                key = json.loads(f'"{key}"')  # `\u00b5s` and the like, as JSON reads them
        else:
            key, rest = len(container), stripped
        if rest in ("{", "["):
            child: dict[str, Any] | list[Any] = {} if rest == "{" else []
            self._put(doc, container, key, child, path, ln.no)
            doc.stack.append((child, (*path, key)))
            return True
        comma = rest.endswith(",")
        try:
            value = json.loads(rest[:-1] if comma else rest)
        except (ValueError, RecursionError):
            if ln.cut:  # the value is cut (`"model_id": "meta-lla`, `1.8`)
                doc.cut.append((".".join(str(p) for p in (*path, key)), ln.no))
            return True
        if ln.cut and not comma:
            doc.cut.append((".".join(str(p) for p in (*path, key)), ln.no))  # `1.89` of `1.8934`
            return True
        self._put(doc, container, key, value, path, ln.no)
        return True

    @staticmethod
    def _put(
        doc: _Doc,
        container: dict[str, Any] | list[Any],
        key: str | int,
        value: Any,
        path: Path,
        line: int,
    ) -> None:
        if isinstance(container, dict):
            container[str(key)] = value
        else:
            container.append(value)
        doc.lines[(*path, key)] = line

    def _end_doc(self) -> Iterator[Record]:
        doc, self._doc = self._doc, None
        assert doc is not None
        for what, line in doc.cut:
            self.ctx.warn(line, "truncated-value", f"the value of {what!r} is cut; no sample taken")
        if not doc.closed:
            self.ctx.warn(
                doc.line,
                "truncated-output",
                "the JSON document ends early; the entries before the cut are kept",
            )
        if doc.root:
            yield from self._document(doc.line, doc.root, doc.lines)

    def _document(self, line: int, obj: Any, lines: dict[Path, int]) -> Iterator[Record]:
        """The records of one whole (or salvaged) result document."""
        if isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj):
            yield from self._pytorch(line, obj)
        elif isinstance(obj, dict) and _LATENCY_KEYS & obj.keys():
            yield from self._latency_json(line, obj, lines)
        elif isinstance(obj, dict) and (_THROUGHPUT_JSON.keys() & obj.keys()):
            yield from self._throughput_json(line, obj, lines)
        elif isinstance(obj, dict) and _blocks.is_bench_record(obj):
            # the line of each key, and of each item of a list (`key[i]`)
            where = {
                str(k) if not rest else f"{k}[{rest[0]}]": at
                for (k, *rest), at in lines.items()
                if len(rest) <= 1
            }
            yield from self._records.read_record(line, obj, where)
        else:
            self.ctx.warn(line, "bad-record", "this JSON document is not a vLLM benchmark result")

    def _start_json(self, line: int) -> Iterator[Record]:
        self._block = self._next_block()
        self.ctx.count("record")
        yield BlockStart(self._block, line, format_id)
        for key, (value, at) in self._pending.items():
            yield Setting(key, value, at, self._block)
        self._pending.clear()

    def _json_value(self, line: int, what: str, value: Any) -> float | None:
        return _blocks.json_number(self.ctx, line, f"record {self._block}: {what}", value)

    def _throughput_json(
        self, line: int, obj: dict[str, Any], lines: dict[Path, int]
    ) -> Iterator[Record]:
        yield from self._start_json(line)
        for key, value in obj.items():
            at = lines.get((key,), line)
            metric = _THROUGHPUT_JSON.get(key)
            if metric is not None:
                number = self._json_value(at, key, value)
                if number is not None:
                    yield Sample(metric, number, at, self._block)
            else:
                for k, v in _blocks.flatten(_THROUGHPUT_SETTINGS.get(key, key), value):
                    yield Setting(k, v, at, self._block)

    def _latency_json(
        self, line: int, obj: dict[str, Any], lines: dict[Path, int]
    ) -> Iterator[Record]:
        yield from self._start_json(line)
        for key, value in obj.items():
            at = lines.get((key,), line)
            if key == "avg_latency":
                number = self._json_value(at, key, value)
                if number is not None:
                    yield Sample("total_latency_s_mean", number, at, self._block)
            elif key == "latencies" and isinstance(value, list):
                # one value per timed iteration: the runs of this block
                for i, v in enumerate(value, 1):
                    item = lines.get((key, i - 1), at)
                    number = self._json_value(item, f"latencies[{i - 1}]", v)
                    if number is not None:
                        yield Sample("total_latency_s", number, item, self._block, run=i)
            elif key == "percentiles" and isinstance(value, dict):
                for p, v in value.items():
                    name = f"total_latency_s_p{p}"
                    if not re.fullmatch(r"\d{1,2}", p):
                        self.ctx.warn(at, "unknown-field", f"percentile {p!r} is not read")
                        continue
                    item = lines.get((key, p), at)
                    number = self._json_value(item, f"percentiles[{p}]", v)
                    if number is not None:
                        yield Sample(name, number, item, self._block)
            else:
                for k, v in _blocks.flatten(key, value):
                    yield Setting(k, v, at, self._block)

    def _pytorch(self, line: int, records: list[dict[str, Any]]) -> Iterator[Record]:
        """`.pytorch.json`: one record per metric, the run's arguments in each."""
        yield from self._start_json(line)
        args = records[0].get("benchmark", {}).get("extra_info", {}).get("args", {})
        if isinstance(args, dict):
            for key, value in args.items():
                for k, v in _blocks.flatten(key, value):
                    yield Setting(k, v, line, self._block)
        for rec in records:
            metric = rec.get("metric", {})
            if not isinstance(metric, dict):
                continue
            name = _PYTORCH_METRICS.get(str(metric.get("name")))
            values = metric.get("benchmark_values")
            if name is None or not isinstance(values, list):
                self.ctx.warn(line, "unknown-field", f"metric {metric.get('name')!r} is not read")
                continue
            for i, v in enumerate(values, 1):
                number = self._json_value(line, f"{metric.get('name')}[{i - 1}]", v)
                if number is not None:
                    run = i if name == "total_latency_s" else None
                    yield Sample(name, number, line, self._block, run=run)


def line_reader(ctx: ParseContext, **options: Any) -> Reader:
    """A reader for throughput / latency output inside another format's source."""
    return Reader(ctx, **options)


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one throughput / latency output or result document, in line order."""
    return read_lines(Reader(ctx), src)
