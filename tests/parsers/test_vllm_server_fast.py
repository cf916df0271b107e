"""The vLLM server log's chunk path (issue 22) gives exactly what the line-by-line path gives.

Every comparison runs `vllm_server.parse` twice on the same file, the chunk path off and
forced on (even for tiny files, with tiny chunks so chunk borders fall everywhere), and
compares samples (in order, every column), the other records, the record counts, the
embedded formats and the reader's notes. Speed is measured in benchmarks/, never here.
"""

from __future__ import annotations

import math
import random
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sessionlens import _lines
from sessionlens.model import Sample, SampleBatch
from sessionlens.parsers import vllm_server as V
from sessionlens.parsers.base import ParseContext
from sessionlens.parsers.vllm_server import fast as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import variants

FORMATS = Path(__file__).resolve().parent.parent.parent / "fixtures" / "formats"
FIXTURES = sorted(
    p
    for d in ("vllm-server", "vllm-bench-serve", "phase-timing")
    for p in (FORMATS / d).iterdir()
    if p.is_file() and not p.name.endswith((".expected.csv", ".diag.txt", ".got", ".md"))
)


class Bulk:
    """Counts the lines the chunk path read by a layout (so a test proves it ran)."""

    rows = 0


def count_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on count in `Bulk.rows` the lines the chunk path reads by a layout."""
    real = F.ChunkRun._read

    def counting(self: Any) -> None:
        real(self)
        Bulk.rows += sum(len(r) for r in self.rows.values())

    monkeypatch.setattr(F.ChunkRun, "_read", counting)
    Bulk.rows = 0


@pytest.fixture(autouse=True)
def _count_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    count_bulk(monkeypatch)


def _key(s: Sample) -> tuple[Any, ...]:
    v = "nan" if isinstance(s.value, float) and math.isnan(s.value) else s.value
    return (s.metric, v, s.line, s.block, s.run, s.rank, s.ts)


def parse(
    path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool, chunk: int = 1 << 20
) -> tuple[Any, ...]:
    """Everything one parse gives, samples apart from the other records."""
    monkeypatch.setattr(V, "FAST", fast)
    monkeypatch.setattr(V, "FAST_CHUNK", chunk)
    monkeypatch.setattr(V, "FAST_MIN_BYTES", 0)
    src = _lines.read(path, display=path.name)
    ctx = ParseContext(file=path.name)
    samples: list[tuple[Any, ...]] = []

    def take(batch: SampleBatch) -> None:
        samples.extend(_key(s) for s in batch.samples())

    ctx.sink = take
    others = []
    for rec in V.parse(src, ctx):
        if isinstance(rec, Sample):
            samples.append(_key(rec))
        else:
            others.append(rec)
    notes = [str(d) for d in [*src.notes, *ctx.diagnostics]]  # the file's and the reader's
    counts = dict(ctx.counts)
    return samples, others, counts, sorted(ctx.embedded), notes, src.n_lines, src.sha256


def spec_lines_fed(
    path: Path, lines: list[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, list[int]]:
    """`same_in_bulk` at two chunk sizes, and the line numbers of the spec lines `feed`
    read in the chunk path's last run (not the learning's own readers)."""
    fed: list[int] = []
    real = V.Reader._spec

    def spec(self: Any, ln: Any, m: Any) -> Any:
        if self.ctx.file == path.name:
            fed.append(ln.no)
        return real(self, ln, m)

    monkeypatch.setattr(V.Reader, "_spec", spec)
    path.write_text("\n".join(lines) + "\n")
    for chunk in (3000, 1 << 20):
        assert_same(path, monkeypatch, chunk)
    fed.clear()
    Bulk.rows = 0
    parse(path, monkeypatch, fast=True)
    return Bulk.rows, fed


def assert_same(path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    slow = parse(path, monkeypatch, fast=False)
    fast = parse(path, monkeypatch, fast=True, chunk=chunk)
    names = ("samples", "other records", "counts", "embedded", "notes", "lines", "sha256")
    for name, a, b in zip(names, slow, fast, strict=True):
        assert b == a, f"{path.name}, chunk {chunk}: {name} differ"


def same_in_bulk(
    path: Path, lines: list[str], monkeypatch: pytest.MonkeyPatch, chunks: tuple[int, ...]
) -> int:
    """Write `lines` to `path`, hold both paths equal on it at each chunk size, and give
    how many rows the chunk path then reads in bulk."""
    path.write_text("\n".join(lines) + "\n")
    for chunk in chunks:
        assert_same(path, monkeypatch, chunk)
    Bulk.rows = 0
    parse(path, monkeypatch, fast=True)
    return Bulk.rows


@pytest.mark.parametrize("chunk", [300, 1 << 20])
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_chunk_path_gives_what_the_line_path_gives_on_every_fixture(
    path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_same(path, monkeypatch, chunk)


def test_the_fixtures_are_read_in_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    # the comparisons above prove something only if lines take the bulk path
    read = 0
    for path in FIXTURES:
        Bulk.rows = 0
        parse(path, monkeypatch, fast=True)
        read += Bulk.rows
    assert read >= 30


# ---------------------------------------------------------------------- generated logs

PREFIXES = [
    "(APIServer pid={pid}) INFO {ts} [loggers.py:236] ",
    "INFO {ts} [loggers.py:80] ",
    "INFO {ts} metrics.py:349] ",
    "vllm-1  | (APIServer pid={pid}) INFO {ts} [loggers.py:118] ",
    "2025-12-05T09:12:40.{ns}Z \x1b[0;36m(APIServer pid={pid})\x1b[0;0m \x1b[32mINFO\x1b[0m {ts} [loggers.py:236] ",
    "[1;36m(APIServer pid={pid})[0;0m INFO {ts} [loggers.py:236] ",
]
ENGINES = [
    "Engine {e:03d}: Avg prompt throughput: {p:.1f} tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: {w} reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: {h:.1f}%",
    "Avg prompt throughput: {p:.1f} tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: {w} reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: {h:.1f}%",
    "Engine {e:03d}: Avg prompt throughput: {p:.1f} tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: {w} reqs, Preemptions: {pre}, Prefix cache hit rate: {h:.1f}%, GPU KV cache usage: {kv:.1f}%",
    "2 Engines Aggregated: Avg prompt throughput: {p:.1f} tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: {w} reqs, GPU KV cache usage: {kv:.1f}%, Prefix cache hit rate: {h:.1f}%",
    "Avg prompt throughput: {p:.1f} tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Swapped: 0 reqs, Pending: {w} reqs, GPU KV cache usage: {kv:.1f}%, CPU KV cache usage: 0.0%.",
    "Engine {e:03d}: Avg prompt throughput: {p:.1f} tokens/s, Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: {w} reqs, XPU KV cache usage: {kv:.1f}%",
]
SPECS = [
    "SpecDecoding metrics: Mean acceptance length: {al:.2f}, Accepted throughput: {at:.2f} tokens/s, Drafted throughput: {dt:.2f} tokens/s, Accepted: {acc} tokens, Drafted: {dr} tokens, Per-position acceptance rate: {p0:.3f}, {p1:.3f}, {p2:.3f}, Avg Draft acceptance rate: {rate:.1f}%",
    "SpecDecoding metrics: Draft acceptance rate: {rate:.1f}%, Mean acceptance length: {al:.2f}, Accepted: {acc} tokens, Drafted: {dr} tokens, Per-position acceptance rate: {p0:.3f}, {p1:.3f}",
    "Speculative metrics: Draft acceptance rate: {fr:.3f}, Number of accepted tokens: {acc}, Number of draft tokens: {dr}, ",
    "SpecDecoding metrics: Mean acceptance length: {al:.2f}, Accepted: {acc} tokens, Drafted: {dr} tokens, Avg Draft acceptance rate: nan%",
]
MFUS = [
    "Engine {e:03d}: MFU: {tf:.1f} TF/s/device {gb:.1f} GB/s/device",
    "MFU: {tf:.1f} TF/s/GPU {gb:.1f} GB/s/GPU",
]
OTHER = [
    "Engine {e:03d}: Iteration({it}): 2 context requests, 2048 context tokens, 4 generation requests, 4 generation tokens, iteration elapsed time: 28.97 ms, GPU KV cache usage: 3.6%",
    "DiffusionDecoding metrics: Committed token throughput: 150.20 tokens/s, Mean denoising steps per canvas: 3.21",
    "Prefix cache hit rate: GPU: {h:.2f}%, CPU: 0.00%",
    "Error in chat completion stream generator.",
    "Engine {e:03d}: Avg prompt throughput: 12.0 tokens/s, Avg generation throughput: 3.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, Unknown thing: 4, GPU KV cache usage: 1.0%",
    "Engine {e:03d}: Avg prompt throughput: 12.0 tokens/s, Avg generation throughput: nan tokens/s, Running: 1 reqs, Waiting: 0 reqs",
    "Engine {e:03d}: Avg prompt throughput: 12.0 tokens/s, Avg generation throughput: 3.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, KV fetch: 0 waiting to start, 1 in progress, 0 completed waiting, GPU KV cache usage: 1.0%",
    "Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 5.0%, Prefix cache hit rate: 1.0% — ünïcode",
    "SpecDecodeWorker stage times: average_time_per_proposal_tok_ms=2.31 scoring_time_ms=30.42 verification_time_ms=1.07",
]
STARTS = [
    "vLLM API server version {ver}",
    "non-default args: {{'model': 'm', 'speculative_config': {{'method': 'eagle3', 'num_speculative_tokens': 3}}}}",
    "Initializing a V1 LLM engine (v{ver}) with config: model='m', speculative_config=SpeculativeConfig(method='eagle3', model='d', num_spec_tokens=3), seed=0",
]


def generated_log(seed: int) -> bytes:
    """A small vLLM log with what real ones hold: engine and spec lines of several versions
    behind several prefixes, DP engines, idle intervals, MFU and iteration lines, access
    lines, errors, restarts, cut or odd values, lines that are not ASCII, a cut last line."""
    rng = random.Random(seed)
    out: list[str] = []
    t = 0
    prefix = rng.choice(PREFIXES)
    engine, spec = rng.choice(ENGINES), rng.choice(SPECS)

    def pre() -> str:
        ts = f"11-14 {10 + t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"
        return prefix.format(pid=rng.choice([1, 12, 5120]), ts=ts, ns=rng.randrange(10**9))

    for text in STARTS:
        out.append(pre() + text.format(ver=rng.choice(["0.12.0", "0.8.5", "0.9.2"])))
    for step in range(rng.randrange(150, 260)):
        t += rng.randrange(1, 3)
        if rng.random() < 0.02:  # a restart: another version, prefix, layout
            prefix = rng.choice(PREFIXES)
            engine, spec = rng.choice(ENGINES), rng.choice(SPECS)
            for text in STARTS:
                out.append(pre() + text.format(ver=rng.choice(["0.13.0", "0.33.0", "0.8.6.dev3"])))
        for e in range(rng.choice([1, 1, 2])):
            running = rng.choice([0, 0, 1, 4, 16, 64])
            v = {
                "e": e,
                "p": rng.choice([0.0, rng.uniform(1, 9000)]),
                "g": 0.0 if running == 0 and rng.random() < 0.7 else rng.uniform(0, 3000),
                "r": running,
                "w": 0 if rng.random() < 0.8 else rng.randrange(5),
                "pre": rng.randrange(3),
                "kv": rng.uniform(0, 99),
                "h": rng.uniform(0, 60),
            }
            out.append(pre() + engine.format(**v))
            dr = rng.randrange(0, 3000)
            pos = sorted((rng.uniform(0.2, 0.95) for _ in range(3)), reverse=True)
            acc = round(sum(round(p, 3) for p in pos) * dr / 3)
            s = {
                "al": rng.choice(
                    [1 + acc / (dr / 3) if dr else 1.0, sum(pos), rng.uniform(0.5, 4)]
                ),
                "at": acc / 10,
                "dt": dr / 10,
                "acc": acc,
                "dr": dr,
                "p0": pos[0],
                "p1": pos[1],
                "p2": pos[2],
                "rate": acc / dr * 100 if dr else 0.0,
                "fr": acc / dr if dr else 0.0,
            }
            if rng.random() < 0.9:
                out.append(pre() + spec.format(**s))
            if rng.random() < 0.3:
                out.append(
                    pre()
                    + rng.choice(MFUS).format(
                        e=e, tf=rng.uniform(90, 140), gb=rng.uniform(1200, 1700)
                    )
                )
        for _ in range(rng.randrange(3)):
            port = rng.randrange(30000, 60000)
            out.append(
                pre().split(" INFO ")[0]
                + f' INFO:     127.0.0.1:{port} - "POST /v1/completions HTTP/1.1" 200 OK'
            )
        roll = rng.random()
        if roll < 0.15:
            out.append(pre() + rng.choice(OTHER).format(e=0, it=step, h=rng.uniform(0, 60)))
        elif roll < 0.17:
            out.append(
                pre().replace("INFO", "ERROR") + "Error in chat completion stream generator."
            )
            out.append(pre().replace("INFO", "ERROR") + "Traceback (most recent call last):")
        elif roll < 0.18:
            out.append("")
        elif roll < 0.19:
            out.append("some free text without a word the reader acts on")
    text = "\n".join(out) + "\n"
    text += pre() + "Engine 000: Avg prompt throughput: 12.0 tokens/s, Avg generation throughput: 3"
    data = text.encode()
    if seed % 3 == 0:  # a line with bytes that are not UTF-8
        at = data.find(b"HTTP/1.1", len(data) // 2)
        data = data[:at] + b"\xff\xfe" + data[at:]
    return data


@pytest.mark.parametrize("seed", range(8))
def test_generated_logs_read_the_same(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"gen-{seed}.log"
    path.write_bytes(generated_log(seed))
    for chunk in (700, 5000, 1 << 20):
        assert_same(path, monkeypatch, chunk)
    assert Bulk.rows > 0


def test_a_benchmark_run_in_the_log_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = generated_log(1).decode("utf-8", "replace").split("\n")
    bench = (FORMATS / "vllm-bench-serve").glob("*.log")
    block = next(p for p in sorted(bench) if "Serving Benchmark Result" in p.read_text())
    at = len(log) // 2
    lines = [*log[:at], *block.read_text().split("\n"), *log[at:]]
    path = tmp_path / "bench.log"
    path.write_text("\n".join(lines))
    for chunk in (700, 1 << 20):
        assert_same(path, monkeypatch, chunk)


# ---------------------------------------------------------------------- the rules behind it


# Each branch of every marker `Reader.feed` looks for, at its shortest.
MARKERS = {
    "_ENGINE_MARK": ["Avg prompt throughput:", "Avg generation throughput :"],
    "_SPEC_MARK": ["SpecDecoding metrics:", "Speculative metrics:"],
    "_MFU_MARK": ["MFU:"],
    "_UNREAD": ["DiffusionDecoding metrics:", "Iteration(1):"],
    "_PREFIX_V0": ["Prefix cache hit rate: GPU:"],
    "_ENGINE_INIT": [
        "Initializing a V1 LLM engine (v1) with config: ",
        "Initializing an LLM engine (v1) with config: ",
        "Dumping input data for LLM engine (v1) with config: ",
    ],
    "_NON_DEFAULT": ["non-default args: {"],
    "_VERSION": ["vLLM server version 1", "vLLM API server version: v1", "\u2588 version 1"],
    "_BENCH_START": [
        "= Serving Benchmark Result =",
        "Namespace(a, dispatch_function=",
        "Starting initial single prompt test run",
    ],
    "_LEVEL_TS": ["ERROR 01-01 00:00:00", "CRITICAL 01-01 00:00:00"],
    "_TS_LEVEL": ["[2026-01-01 00:00:00] ERROR ", "[2026-01-01 00:00:00] CRITICAL "],
}


@pytest.mark.parametrize("name", sorted(MARKERS))
def test_every_line_the_reader_acts_on_holds_a_word(name: str) -> None:
    # lines without one of `FEED_WORDS` are read in bulk as access or ignored lines: every
    # marker `feed` acts on needs one of the words (the level check only acts on errors)
    rx = getattr(V, name)
    for text in MARKERS[name]:
        assert rx.search(text), text
        assert any(w in text for w in V.FEED_WORDS), text
    assert V._STAGE_TIMES in V.FEED_WORDS


def test_each_regex_is_searched_only_where_its_literal_is() -> None:
    """`feed` searches a line with a regex only where the line holds the regex's literal
    (`_LITERAL`; `_UNREAD`'s two words, `_TS_LEVEL`'s `[`): every line of every fixture, and
    every marker's examples, that the regex matches holds it."""
    lines = [x for p in FIXTURES for x in p.read_text(errors="replace").splitlines()]
    lines += [x for examples in MARKERS.values() for x in examples]
    pairs: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
        (rx, (word,)) for rx, word in V._LITERAL.items()
    ]
    pairs += [(V._UNREAD, ("Iteration(", "DiffusionDecoding")), (V._TS_LEVEL, ("[",))]
    for rx, words in pairs:
        assert all(w in rx.pattern.replace("\\", "") for w in words), rx.pattern
        hits = [x for x in lines if rx.search(x)]
        assert hits, rx.pattern  # (the fixtures show each)
        for x in hits:
            assert any(w in x for w in words), (rx.pattern, x)


@pytest.mark.parametrize(
    "line",
    [
        "INFO 11-14 09:00:00 [loggers.py:80] Avg prompt throughput: nan tokens/s, Avg generation throughput: 1.0 tokens/s",
        "INFO 11-14 09:00:00 [loggers.py:80] Avg prompt throughput: 1.0 tokens/s, Running: 5",
        "ERROR 11-14 09:00:00 [loggers.py:80] Avg prompt throughput: 1.0 tokens/s, Running: 5 reqs",
        # V0's cumulative counters without its own count of speculative tokens (the reader
        # takes the config's then)
        "INFO 10-21 14:01:45 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.587, System efficiency: 0.541, Number of accepted tokens: 1320, Number of draft tokens: 2250, Number of emitted tokens: 1623.",
        "INFO 11-14 09:00:00 [loggers.py:80] Avg prompt throughput: 1.0 tokens/s — ü",
    ],
)
def test_no_layout_for_lines_read_otherwise(line: str) -> None:
    assert F._learn(line) is None


def test_a_layout_reads_its_own_line() -> None:
    line = (
        "(APIServer pid=1) INFO 12-05 09:14:02 [loggers.py:236] Engine 001: Avg prompt throughput: "
        "5120.0 tokens/s, Avg generation throughput: 1875.3 tokens/s, Running: 96 reqs, Waiting: 12 "
        "reqs, GPU KV cache usage: 91.4%, Prefix cache hit rate: 12.0%"
    )
    layout = F._learn(line)
    assert layout is not None
    assert re.fullmatch(layout.pattern, line)
    assert [o.metric for o in layout.outputs] == [
        "prompt_throughput_tok_s",
        "gen_throughput_tok_s",
        "running_req",
        "waiting_req",
        "kv_cache_usage",
        "prefix_cache_hit_rate",
    ]
    assert [o.pct for o in layout.outputs] == [False] * 4 + [True] * 2
    assert layout.rank is not None
    assert line[layout.rank[0] : layout.rank[1]] == "Engine 001"
    assert layout.ts is not None
    assert line[layout.ts[0] : layout.ts[1]] == "12-05 09:14:02"
    assert layout.idle is not None
    assert layout.kv


@pytest.mark.parametrize(
    "line",
    [
        # a docker timestamp, `pid=1`, `2 Engines`: numbers 1, 2, 5, 9, 12, 15 on the line
        # before the values, and two values of one digit (`Waiting: 0`, `Corrupted: 0`)
        "2025-12-05T09:15:12.119021556Z (APIServer pid=1) INFO 12-05 09:15:12 "
        "[loggers.py:236] 2 Engines Aggregated: Avg prompt throughput: 2010.6 tokens/s, Avg "
        "generation throughput: 2240.9 tokens/s, Running: 128 reqs, Waiting: 0 reqs, GPU KV "
        "cache usage: 95.0%, Prefix cache hit rate: 12.6%, Corrupted: 0 reqs",
        "2025-01-02T03:04:05.6Z (APIServer pid=7) INFO 01-02 03:04:05 [loggers.py:8] Engine 3: "
        "Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: "
        "13 reqs, Waiting: 4 reqs, GPU KV cache usage: 6.0%, Prefix cache hit rate: 7.0%, "
        "Corrupted: 0 reqs",
    ],
)
def test_a_line_of_many_small_numbers_is_learned(line: str) -> None:
    """Learning tells the samples' numbers apart by changing each value to digits no other
    number of the line has (as printed or as a percentage): a line whose prefix holds most
    one-digit numbers still leaves its one-digit values some."""
    layout = F._learn(line)
    assert layout is not None
    assert "corrupted_req" in [o.metric for o in layout.outputs]


def test_a_fixture_repeated_with_errors_among_its_lines_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The v0.12 fixture's steady part (engine lines of three field sets, a server error and
    its traceback) repeated as a long-running server writes it, timestamps advancing: the
    same through both paths, and every engine line read in bulk but the ones `feed` reads
    for a first time."""
    lines = (FORMATS / "vllm-server" / "v0.12-tty-colours-docker-aggregated.log").read_text()
    head, steady = lines.split("\n")[:6], lines.split("\n")[6:]
    out = list(head)
    for k in range(60):
        minute = f"{15 + k // 60:02d}:{k % 60:02d}"
        out += [
            ln.replace("09:14:", f"{minute}:").replace("12-05 09:14", f"12-05 {minute}")
            for ln in steady
            if ln
        ]
    rows = same_in_bulk(tmp_path / "repeated.log", out, monkeypatch, (3000, 1 << 20))
    engine = sum("Avg prompt throughput" in ln for ln in out)
    assert rows >= engine - 6


@pytest.mark.parametrize(
    ("line", "first"),
    [
        (
            "(APIServer pid=1) INFO 12-05 09:14:02 [loggers.py:236] Engine 001: Avg prompt "
            "throughput: 5120.0 tokens/s, Avg generation throughput: 1875.3 tokens/s, Running: 96 "
            "reqs, Waiting: 12 reqs, GPU KV cache usage: 91.4%, Prefix cache hit rate: 12.0%",
            "5120.0",
        ),
        (
            "(APIServer pid=1) INFO 11-14 09:00:13 [metrics.py:96] SpecDecoding metrics: Mean "
            "acceptance length: 3.02, Accepted throughput: 135.60 tokens/s, Drafted throughput: "
            "201.60 tokens/s, Accepted: 1356 tokens, Drafted: 2016 tokens, Per-position "
            "acceptance rate: 0.870, 0.656, 0.492, Avg Draft acceptance rate: 67.3%",
            "3.02",
        ),
    ],
)
def test_a_layout_reads_from_its_first_value(line: str, first: str) -> None:
    """The numbers of the prefix (pid, date, source line, engine) are not read: the values
    start at a place the layout pins, and are numbered as in the whole line."""
    layout = F._learn(line)
    assert layout is not None
    assert line[layout.lead :].startswith(first)
    nums = F._NUM.findall(line)
    assert nums[layout.skip] == first
    assert layout.skip >= 6  # pid, month, day, hours, minutes, seconds at least
    assert min(o.num for o in layout.outputs) == layout.skip


@pytest.mark.parametrize("seed", range(20))
def test_a_layouts_groups_are_the_numbers_from_its_first_value(seed: int) -> None:
    """`_Layout.capture` matches what `pattern` matches, and its groups are the numbers
    `_NUM` finds from `lead` on: values of other widths (1 to 15 digits), the same
    decimals; a value of 16 digits, other decimals or a wider pid match neither."""
    import polars as pl

    rnd = random.Random(seed)
    line = (
        "(APIServer pid=1) INFO 12-05 09:14:02 [loggers.py:236] Engine 001: Avg prompt "
        "throughput: {a}.{b} tokens/s, Avg generation throughput: {c}.4 tokens/s, Running: "
        "{d} reqs, Waiting: 0 reqs, GPU KV cache usage: {e}.4%, Prefix cache hit rate: 2.0%"
    )
    layout = F._learn(line.format(a=5120, b=0, c=1875, d=96, e=91))
    assert layout is not None
    assert layout.capture

    def width(k: int) -> str:
        return str(rnd.randrange(1, 10)) + "".join(str(rnd.randrange(10)) for _ in range(k - 1))

    fits = [
        line.format(
            a=width(rnd.randrange(1, 16)),
            b=rnd.randrange(10),
            c=width(15),
            d=width(1),
            e=width(rnd.randrange(1, 4)),
        )
        for _ in range(30)
    ]
    misfits = [
        line.format(a=width(16), b=1, c=1, d=1, e=1),
        line.format(a=1, b="25", c=1, d=1, e=1),
        line.format(a=1, b=2, c=1, d="1.5", e=1),
        line.format(a=1, b=2, c=1, d=1, e=1).replace("pid=1)", "pid=12)"),
    ]
    text = pl.Series(fits + misfits)
    got = text.str.extract_groups(layout.capture).struct.unnest()
    assert text.str.contains(layout.pattern).to_list() == [True] * 30 + [False] * 4
    assert got[got.columns[0]].is_not_null().to_list() == [True] * 30 + [False] * 4
    for k, one in enumerate(fits):
        assert list(got.row(k)) == F._NUM.findall(one[layout.lead :])


@pytest.mark.parametrize("positions", [3, 10, 12])
def test_layouts_of_many_numbers_are_matched_then_read(
    positions: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spec line of many per-position rates has more numbers than a capture pattern reads
    cheaply (`_CAPTURE_MAX`): its layout has none, its lines are matched and then their
    numbers found, and the log reads as line by line either way."""
    rnd = random.Random(positions)
    out = []
    for k in range(300):
        ts = f"11-14 09:{k // 60:02d}:{k % 60:02d}"
        out.append(
            f"(APIServer pid=1) INFO {ts} [loggers.py:236] Engine 000: Avg prompt throughput: "
            f"{rnd.uniform(0, 9000):.1f} tokens/s, Avg generation throughput: "
            f"{rnd.uniform(1, 3000):.1f} tokens/s, Running: {rnd.randrange(1, 64)} reqs, "
            f"Waiting: 0 reqs, GPU KV cache usage: {rnd.uniform(0, 99):.1f}%, Prefix cache hit "
            f"rate: {rnd.uniform(0, 60):.1f}%"
        )
        rates = ", ".join(f"{rnd.uniform(0.2, 0.95):.3f}" for _ in range(positions))
        out.append(
            f"(APIServer pid=1) INFO {ts} [metrics.py:96] SpecDecoding metrics: Mean acceptance "
            f"length: {rnd.uniform(1, 4):.2f}, Accepted throughput: {rnd.uniform(1, 500):.2f} "
            f"tokens/s, Drafted throughput: {rnd.uniform(1, 900):.2f} tokens/s, Accepted: "
            f"{rnd.randrange(1, 9999)} tokens, Drafted: {rnd.randrange(1, 9999)} tokens, "
            f"Per-position acceptance rate: {rates}, Avg Draft acceptance rate: "
            f"{rnd.uniform(0, 100):.1f}%"
        )
    path = tmp_path / "spec.log"
    path.write_text("\n".join(out) + "\n")
    spec = F._learn(out[1])
    assert spec is not None
    assert (spec.nums - spec.skip > F._CAPTURE_MAX) == (positions > 10)
    assert bool(spec.capture) == (positions <= 10)
    found: list[int] = []  # rows whose numbers were found after the match
    real = F.ChunkRun._numbers

    def counting(self: Any, lay: Any, rows: Any) -> Any:
        found.append(len(rows))
        return real(self, lay, rows)

    monkeypatch.setattr(F.ChunkRun, "_numbers", counting)
    for chunk in (700, 1 << 20):
        assert_same(path, monkeypatch, chunk)
    assert Bulk.rows > 0
    assert (sum(found) > 0) == (positions > 10)


def test_kv_fetch_counts_are_read_in_bulk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """0.33's `KV fetch: a waiting to start, b in progress, c completed waiting` (a list of
    numbers each before its label) in engine lines: learned, the same through both paths."""
    rng = random.Random(6)
    lines = []
    for k in range(400):
        a, b, c = (rng.choice([0, 1, 7, 12, 130]) for _ in range(3))
        lines.append(
            f"(APIServer pid=5120) INFO 11-03 16:{k // 60:02d}:{k % 60:02d} [loggers.py:257] "
            f"Engine 00{k % 2}: Avg prompt throughput: {rng.uniform(0, 999):.1f} tokens/s, Avg "
            f"generation throughput: {rng.uniform(1, 999):.1f} tokens/s, Running: "
            f"{rng.randint(1, 64)} reqs, Waiting: 0 reqs, Deferred: {rng.randint(0, 3)} reqs, "
            f"KV fetch: {a} waiting to start, {b} in progress, {c} completed waiting, XPU KV "
            f"cache usage: {rng.uniform(0, 99):.1f}%, Prefix cache hit rate: 25.0%"
        )
    rows = same_in_bulk(tmp_path / "kv-fetch.log", lines, monkeypatch, (3000, 1 << 20))
    assert rows >= 400 - 8


def test_lines_with_fields_not_known_are_read_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A version's new field (`Waiting for KV: 2 reqs`, unknown to the reader) is noted once
    a file, at its first line, and a line of that layout is then read as any other: learned,
    the line that notes it fed, the rest read in bulk. A second field first met later (a
    second layout), in engine and spec lines alike, is noted at its own first line; idle
    intervals of the new layout are told as before."""
    rng = random.Random(11)
    lines = []
    for k in range(600):
        ts = f"11-14 09:{k // 60 % 60:02d}:{k % 60:02d}"
        extra = f"Waiting for KV: {rng.randint(0, 3)} reqs, "
        if k >= 300:
            extra += f"Swapped to CPU: {rng.randint(0, 9)} reqs, "
        running = 0 if k % 50 == 7 else rng.randint(1, 64)
        gen = 0.0 if running == 0 else rng.uniform(1, 999)
        lines.append(
            f"(APIServer pid=1) INFO {ts} [loggers.py:236] Engine 00{k % 2}: Avg prompt "
            f"throughput: {0.0 if running == 0 else rng.uniform(0, 999):.1f} tokens/s, Avg "
            f"generation throughput: {gen:.1f} tokens/s, {extra}Running: {running} reqs, "
            f"Waiting: 0 reqs, GPU KV cache usage: {rng.uniform(0, 99):.1f}%, Prefix cache "
            "hit rate: 12.5%"
        )
        if k % 3 == 0:
            lines.append(
                f"(APIServer pid=1) INFO {ts} [metrics.py:96] SpecDecoding metrics: Mean "
                f"acceptance length: {rng.uniform(1, 3):.2f}, Accepted throughput: "
                f"{rng.uniform(1, 99):.2f} tokens/s, Drafted throughput: {rng.uniform(99, 199):.2f}"
                f" tokens/s, Accepted: {rng.randint(1, 99)} tokens, Drafted: "
                f"{rng.randint(100, 199)} tokens, Tree depth: {rng.randint(1, 5)}, Per-position "
                f"acceptance rate: {rng.random():.3f}, {rng.random():.3f}, Avg Draft "
                f"acceptance rate: {rng.uniform(0, 99):.1f}%"
            )
    path = tmp_path / "new-field.log"
    rows = same_in_bulk(path, lines, monkeypatch, (3000, 1 << 20))
    assert rows >= len(lines) - 24  # matched a layout, not fed
    notes = [n for n in parse(path, monkeypatch, fast=True)[4] if "[unknown-field]" in n]
    assert len(notes) == 3, notes
    assert [n.split(":")[1] for n in notes] == ["1", "2", "401"], notes
    assert "Waiting for KV" in notes[0]
    assert "Swapped to CPU" in notes[2]


def test_characters_read_as_plain_are_classed_alike_by_python_and_polars() -> None:
    """Every character beyond ASCII that the chunk path reads like ASCII (none of
    `_ODD_CHAR_RX`'s) is no word character, space or digit to Python's `re` and to polars'
    regex alike (`\\b` then agrees too), nor to `str`'s own tests; `_plain` takes none that
    polars finds odd."""
    chars = [chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000]
    odd = pl.Series(chars).str.contains(F._ODD_CHAR_RX).to_numpy()
    plain = [c for c, o in zip(chars, odd, strict=True) if not o]
    assert 5000 < len(plain) < 20000  # symbols and punctuation: several thousand
    for rx in (r"\w", r"\s", r"\d"):  # (and so `\b`, which `\w` decides)
        assert not pl.Series(plain).str.contains(rx).any(), rx
        assert not any(re.search(rx, c) for c in plain), rx
    assert not any(c.isalnum() or c.isspace() or c.isdigit() for c in plain)
    # (`_plain` in Python's tables, older than polars': a character they leave unassigned is
    # not plain to it, and its line is fed)
    known = [c for c in plain if unicodedata.category(c) != "Cn"]
    assert len(known) > 0.8 * len(plain)
    assert all(F._plain(f"│ {c} INFO") for c in known)
    assert not any(F._plain(c) for c, o in zip(chars, odd, strict=True) if o and c.isalnum())


def test_lines_behind_symbols_beyond_ascii_are_read_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paste whose every line starts with `│ ` (a log viewer's gutter), engine lines with
    a `→ ` and a `✓` in them: read like ASCII lines, in bulk; lines holding a letter, a
    digit, a space or a mark beyond ASCII (`é`, `①`, a no-break space, a combining accent)
    are fed; both paths give the same."""
    rng = random.Random(13)
    odd = ["é", "①", "\u00a0", "e\u0301", "Ⓐ", "‿"]
    lines = []
    for k in range(500):
        ts = f"11-14 09:{k // 60 % 60:02d}:{k % 60:02d}"
        lead = rng.choice(["│ ", "│ ", "→ ", "✓ "])
        if k % 50 == 9:
            lead = odd[k // 50 % len(odd)]  # glued: `\\b` and `\\s` decide on it
        lines.append(
            f"{lead}INFO {ts} [loggers.py:236] Engine 000: Avg prompt throughput: "
            f"{rng.uniform(0, 999):.1f} tokens/s, Avg generation throughput: "
            f"{rng.uniform(1, 999):.1f} tokens/s, Running: {rng.randint(1, 64)} reqs, "
            f"Waiting: 0 reqs, GPU KV cache usage: {rng.uniform(0, 99):.1f}%, Prefix cache "
            "hit rate: 12.5%"
        )
        lines.append(
            f'{lead}INFO:     127.0.0.1:{40000 + k} - "POST /v1/completions HTTP/1.1" 200 OK'
        )
        if k % 3 == 0:  # `--enable-log-requests`: a prompt in any script, no word fed
            prompt = rng.choice(["你好，请介绍一下你自己。", "Привет!", "é\u0301 ½ INFO:  x"])
            lines.append(
                f"INFO {ts} [logger.py:43] Received request chatcmpl-{k}: prompt: '{prompt}', "
                "params: SamplingParams(n=1, temperature=0.7), lora_request: None."
            )
    path = tmp_path / "gutter.log"
    rows = same_in_bulk(path, lines, monkeypatch, (3000, 1 << 20))
    assert rows >= 500 - 10 - 8  # every engine line but the odd ones (and a first few)
    fed: list[int] = []
    real = V.Reader.feed

    def feed(self: Any, ln: Any) -> Any:
        if self.ctx.file == path.name:
            fed.append(ln.no)
        return real(self, ln)

    monkeypatch.setattr(V.Reader, "feed", feed)
    parse(path, monkeypatch, fast=True)
    assert len(fed) < 40, len(fed)  # the odd engine lines and a first few, no prompt


def test_grep_n_output_of_two_logs_is_read_in_bulk_from_its_first_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`grep -n` over the logs of servers of several process ids prefixes each line with a
    file name and a line number whose width grows: a layout for each width of each number
    and kind of line (here 40), far more than a chunk's few tries at lines that teach
    nothing new. All are learned in the first chunk, and every line but the first few of
    each layout is read in bulk."""
    rng = random.Random(15)
    lines = []
    for k in range(6000):
        ts = f"11-14 09:{k // 120 % 60:02d}:{k // 2 % 60:02d}"
        pid = (7, 42, 311, 5120, 31337)[k // 2 % 5]
        head = f"logs/node{k % 2}/server.log:{k + 1}:(APIServer pid={pid}) INFO {ts}"
        if k % 2 == 0:
            lines.append(
                f"{head} [loggers.py:236] Engine 000: Avg prompt throughput: "
                f"{rng.uniform(0, 999):.1f} tokens/s, Avg generation throughput: "
                f"{rng.uniform(1, 999):.1f} tokens/s, Running: {rng.randint(1, 64)} reqs, "
                f"Waiting: 0 reqs, GPU KV cache usage: {rng.uniform(0, 99):.1f}%, Prefix cache "
                "hit rate: 12.5%"
            )
        else:
            lines.append(
                f"{head} [metrics.py:96] SpecDecoding metrics: Mean acceptance length: "
                f"{rng.uniform(1, 3):.2f}, Accepted throughput: {rng.uniform(1, 99):.2f} "
                f"tokens/s, Drafted throughput: {rng.uniform(99, 199):.2f} tokens/s, Accepted: "
                f"{rng.randint(1, 99)} tokens, Drafted: {rng.randint(100, 199)} tokens, "
                f"Per-position acceptance rate: {rng.random():.3f}, {rng.random():.3f}, Avg "
                f"Draft acceptance rate: {rng.uniform(0, 99):.1f}%"
            )
    rows = same_in_bulk(tmp_path / "grep-n.log", lines, monkeypatch, (1 << 24,))
    assert rows >= len(lines) - 80, rows


def test_grep_over_many_files_is_read_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`grep -r` over a results tree: 150 files, each file's lines behind its path, one file
    after another: more layouts than a reader used to keep (64). Each file's are learned
    as it begins, the stale ones tried no more, and nearly every line is read in bulk."""
    rng = random.Random(18)
    lines = []
    for f in range(150):
        for k in range(30):
            ts = f"11-14 {f // 60 % 24:02d}:{f % 60:02d}:{k:02d}"
            lines.append(
                f"INFO {ts} [loggers.py:236] Engine 000: Avg prompt "
                f"throughput: {rng.uniform(0, 999):.1f} tokens/s, Avg generation throughput: "
                f"{rng.uniform(1, 999):.1f} tokens/s, Running: {rng.randint(1, 64)} reqs, "
                f"Waiting: 0 reqs, GPU KV cache usage: {rng.uniform(0, 99):.1f}%, Prefix cache "
                "hit rate: 12.5%"
            )
    lines = list(variants.grep_r(lines, rng, files=150))  # each file's 30 lines
    rows = same_in_bulk(tmp_path / "grep-r.log", lines, monkeypatch, (1 << 17, 1 << 22))
    assert rows > 0.9 * len(lines), rows


@pytest.mark.parametrize("engine", ["V1 ", ""])
def test_speculative_metrics_lines_are_read_in_bulk_unless_a_v0_engine_counts_them(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Early V1's `Speculative metrics` lines (0.8.0-0.8.1: V0's title, per-interval counts)
    are learned and read in bulk; after a V0 engine's start the reader takes the same lines
    for cumulative counters, and they are fed: the same through both paths either way."""
    rng = random.Random(7)
    lines = [
        f"INFO 03-24 16:02:24 [core.py:51] Initializing a{'n' * (not engine)} {engine}LLM "
        "engine (v0.8.1) with config: model='Qwen/Qwen2.5-7B-Instruct'"
    ]
    for k in range(300):
        ts = f"03-24 16:{k // 60:02d}:{k % 60:02d}"
        lines.append(
            f"INFO {ts} [loggers.py:80] Avg prompt throughput: {rng.uniform(0, 999):.1f} "
            f"tokens/s, Avg generation throughput: {rng.uniform(1, 999):.1f} tokens/s, "
            f"Running: {rng.randint(1, 9)} reqs, Waiting: 0 reqs, GPU KV cache usage: "
            f"{rng.uniform(0, 9):.1f}%, Prefix cache hit rate: 0.0%"
        )
        lines.append(
            f"INFO {ts} [metrics.py:42] Speculative metrics: Draft acceptance rate: "
            f"{rng.random():.3f}, Number of accepted tokens: {k * 100 + rng.randint(0, 99)}, "
            f"Number of draft tokens: {k * 512 + 512}, "
        )
    rows, fed = spec_lines_fed(tmp_path / "spec.log", lines, monkeypatch)
    assert rows >= 600 - 16  # the engine and spec lines matched a layout
    if engine:
        assert len(fed) <= 8  # and were read so
    else:
        assert len(fed) == 300  # the spec lines were fed: cumulative counters


def test_idle_intervals_nan_spec_lines_are_read_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.8.5 prints an idle interval's SpecDecoding line with `nan` values: learned, and read
    in bulk while the reader is idle (a spec line then gives nothing); after a busy engine
    line the same line is fed (its `nan`s are notes), and reads the same."""
    rng = random.Random(8)
    pre = "\x1b[36m(APIServer pid=4012)\x1b[0m INFO 04-30 09:{m:02d}:{s:02d}"
    lines = []
    for k in range(400):
        head = pre.format(m=k // 60, s=k % 60)
        busy = k >= 20 and rng.random() < 0.5  # idle at first: no mean acceptance length yet
        running = rng.randint(1, 32) if busy else 0
        gen = rng.uniform(10, 400) if busy else 0.0
        lines.append(
            f"{head} [loggers.py:111] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
            f"generation throughput: {gen:.1f} tokens/s, Running: {running} reqs, Waiting: 0 "
            f"reqs, GPU KV cache usage: {rng.uniform(0, 9) if busy else 0:.1f}%, Prefix cache "
            "hit rate: 0.0%"
        )
        if busy and rng.random() < 0.9:
            rate = rng.uniform(40, 80)
            spec = (
                f"Draft acceptance rate: {rate:.1f}%, Mean acceptance length: "
                f"{1 + rate / 50:.2f}, Accepted: {rng.randint(1, 999)} tokens, Drafted: "
                f"{rng.randint(1000, 2000)} tokens"
            )  # (no per-position rates: whether it counts the bonus token stays unknown,
            # and the note says the first line with a mean acceptance length, a `nan` one)
        else:  # idle, or (rarely) busy with nothing drafted
            spec = (
                "Draft acceptance rate: nan%, Mean acceptance length: nan, Accepted: 0 "
                "tokens, Drafted: 0 tokens, Per-position acceptance rate: nan, nan, nan"
            )
        if k == 200 and not busy:
            spec += ", Widgets: 3"  # a field the reader names in a note, idle or not
        lines.append(f"{head} [metrics.py:82] SpecDecoding metrics: {spec}")
    _, fed = spec_lines_fed(tmp_path / "nan.log", lines, monkeypatch)
    nan_lines = [k + 1 for k, x in enumerate(lines) if "nan%" in x]
    busy_nan = [n for n in nan_lines if "Running: 0 reqs" not in lines[n - 2]]
    assert len(nan_lines) > 150  # both kinds of `nan` line are there
    assert busy_nan
    assert set(busy_nan) <= set(fed)  # a busy interval's `nan` line is fed (its notes)
    assert len(fed) <= len(busy_nan) + 16  # the idle ones are read in bulk


def test_v0_prefix_cache_and_stage_times_lines_are_read_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """V0 with prefix caching prints `Prefix cache hit rate: GPU: 12.50%, CPU: 0.00%` after
    each engine line; its samples take that engine line's idle state (none after an idle
    one). With speculative decoding it prints `SpecDecodeWorker stage times: k=v ...`,
    which phase-timing's reader reads (idle or not; the source then embeds phase-timing).
    Learned and read in bulk, idle intervals and access lines among them, a restart in the
    middle: the same through both paths."""
    rng = random.Random(9)
    lines = [
        "INFO 10-21 14:00:01 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with "
        "config: model='meta-llama/Llama-3.1-8B-Instruct'"
    ]
    for k in range(500):
        ts = f"10-21 14:{k // 60 % 60:02d}:{k % 60:02d}"
        busy = rng.random() < 0.7
        lines.append(
            f"INFO {ts} metrics.py:349] Avg prompt throughput: {rng.uniform(0, 999) * busy:.1f} "
            f"tokens/s, Avg generation throughput: {rng.uniform(1, 999) if busy else 0:.1f} "
            f"tokens/s, Running: {rng.randint(1, 9) if busy else 0} reqs, Swapped: 0 reqs, "
            f"Pending: {rng.randint(0, 3) if busy else 0} reqs, GPU KV cache usage: "
            f"{rng.uniform(0, 9) if busy else 0:.1f}%, CPU KV cache usage: 0.0%."
        )
        lines.append(
            f"INFO {ts} metrics.py:365] Prefix cache hit rate: GPU: {rng.uniform(0, 99):.2f}%, "
            f"CPU: {rng.choice([0.0, 1.25]):.2f}%"
        )
        if k >= 100 and rng.random() < 0.8:
            lines.append(
                f"INFO {ts} spec_decode_worker.py:1071] SpecDecodeWorker stage times: "
                f"average_time_per_proposal_tok_ms={rng.uniform(0, 3):.2f} "
                f"scoring_time_ms={rng.uniform(20, 60):.2f} "
                f"verification_time_ms={rng.uniform(0, 1):.2f}"
            )
        if rng.random() < 0.3:
            lines.append('INFO:     127.0.0.1:52016 - "POST /v1/completions HTTP/1.1" 200 OK')
        if k == 250:
            lines.append(lines[0].replace("v0.6.3", "v0.6.4"))  # a restart
    path = tmp_path / "v0-prefix.log"
    rows = same_in_bulk(path, lines, monkeypatch, (3000, 1 << 20))
    samples = parse(path, monkeypatch, fast=True)[0]
    prefix = [s for s in samples if s[0] == "prefix_cache_hit_rate"]
    assert 250 < len(prefix) < 450  # the busy intervals' only
    stages = [s for s in samples if s[0] == "target_forward_ms"]
    assert len(stages) == sum("stage times" in x for x in lines) > 250
    assert "phase-timing" in parse(path, monkeypatch, fast=True)[3]
    # the engine, prefix and stage-times lines, learned from the first ones
    assert rows >= 1000 + len(stages) - 40


def test_v0_cumulative_spec_lines_are_differenced_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """V0's `Speculative metrics` line prints counters cumulative since the engine started;
    the reader takes each counter's difference from the line before and the mean acceptance
    length they give. In bulk as long as nothing new happens: the lines before any engine
    start (a baseline note), idle intervals, intervals that drafted nothing (no mean
    acceptance length), counters that go down (a note), a count of speculative tokens of 0
    (a note), and a restart with another count are all there, and read the same through both
    paths; only the lines where one of these happens are fed."""
    rng = random.Random(10)
    lines: list[str] = []
    acc = dra = emi = 0
    k = 3
    for i in range(700):
        ts = f"10-21 14:{i // 60:02d}:{i % 60:02d}"
        if i in (20, 450):  # the engine starts (the first lines before it: a baseline)
            k = 3 if i == 20 else 5
            acc = dra = emi = 0
            lines.append(
                f"INFO {ts} llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: "
                "model='meta-llama/Llama-3.1-8B-Instruct'"
            )
        busy = rng.random() < 0.8
        lines.append(
            f"INFO {ts} metrics.py:349] Avg prompt throughput: {rng.uniform(0, 99) * busy:.1f} "
            f"tokens/s, Avg generation throughput: {rng.uniform(1, 999) * busy:.1f} tokens/s, "
            f"Running: {rng.randint(1, 9) * busy} reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV "
            f"cache usage: {rng.uniform(0, 9) * busy:.1f}%, CPU KV cache usage: 0.0%."
        )
        if busy:
            d = k * rng.choice([0, rng.randint(1, 300)])
            a = rng.randint(0, d)
            acc, dra, emi = acc + a, dra + d, emi + a + d // k
        if i == 300:  # counters that go down with no engine start
            acc, dra, emi = acc // 2, dra // 2, emi // 2
        lines.append(
            f"INFO {ts} metrics.py:367] Speculative metrics: Draft acceptance rate: "
            f"{acc / max(dra, 1):.3f}, System efficiency: {rng.random():.3f}, Number of "
            f"speculative tokens: {0 if i == 600 else k}, Number of accepted tokens: {acc}, "
            f"Number of draft tokens: {dra}, Number of emitted tokens: {emi}."
        )
    rows, fed = spec_lines_fed(tmp_path / "v0-spec.log", lines, monkeypatch)
    spec = [n for n, x in enumerate(lines, 1) if "Speculative metrics" in x]
    samples, _, _, _, notes, _, _ = parse(tmp_path / "v0-spec.log", monkeypatch, fast=True)
    assert len(spec) == 700
    assert any("counter-reset" in n for n in notes)
    assert any("cumulative-baseline" in n for n in notes)
    assert any("num_speculative_tokens is 0" in n for n in notes)
    accept = [s for s in samples if s[0] == "accept_len"]
    assert 200 < len(accept) < sum(s[0] == "accepted_tokens" for s in samples)
    # the lines before the first start and those where something happens, a few each
    assert len(fed) < 40, fed
    assert rows > 1300


def test_v0_cumulative_lines_of_two_engines_and_two_layouts_are_differenced_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader keeps each engine's counters apart (the engine of the engine line before a
    spec line); here two engines take turns, their spec lines of two layouts (a call site's
    line number of another width), an error between now and then (a fed line: the rows
    between two are differenced from what the reader holds), one engine's counters going
    down once: the same through both paths."""
    rng = random.Random(11)
    lines: list[str] = [
        "INFO 10-21 14:00:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: "
        "model='meta-llama/Llama-3.1-8B-Instruct'"
    ]
    counts = {0: [0, 0, 0], 1: [0, 0, 0]}
    for i in range(800):
        ts = f"10-21 14:{i // 120:02d}:{i // 2 % 60:02d}"
        engine = i % 2
        running = rng.randint(0, 9)
        lines.append(
            f"INFO {ts} metrics.py:349] Engine {engine:03d}: Avg prompt throughput: "
            f"{rng.uniform(0, 99) * bool(running):.1f} tokens/s, Avg generation throughput: "
            f"{rng.uniform(1, 999) * bool(running):.1f} tokens/s, Running: {running} reqs, "
            "Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 1.0%, CPU KV cache usage: 0.0%."
        )
        c = counts[engine]
        if running:
            d = 3 * rng.randint(1, 300)
            a = rng.randint(0, d)
            c[0], c[1], c[2] = c[0] + a, c[1] + d, c[2] + a + d // 3
        if i == 501:
            c[0], c[1], c[2] = c[0] // 2, c[1] // 2, c[2] // 2
        site = rng.choice(["metrics.py:367", "metrics.py:1367"])
        lines.append(
            f"INFO {ts} {site}] Speculative metrics: Draft acceptance rate: "
            f"{c[0] / max(c[1], 1):.3f}, System efficiency: {rng.random():.3f}, Number of "
            f"speculative tokens: 3, Number of accepted tokens: {c[0]}, Number of draft tokens: "
            f"{c[1]}, Number of emitted tokens: {c[2]}."
        )
        if rng.random() < 0.05:
            lines.append(f"ERROR {ts} serving_completion.py:99] Error in completion stream.")
    rows, fed = spec_lines_fed(tmp_path / "v0-engines.log", lines, monkeypatch)
    assert rows > 1400
    assert len(fed) < 40, fed


@pytest.mark.parametrize("bench", [False, True])
def test_nan_spec_lines_of_busy_and_idle_intervals_read_the_same(
    bench: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SpecDecoding lines printing `nan` after busy engine lines (each fed: its notes) and
    after idle ones (read in bulk), among lines with values: the first busy `nan` line
    after a place the walk stops is found in windows (scanning to the next fed line each
    time was quadratic), and the two paths agree, a benchmark run among the lines or not;
    the idle intervals' `nan` lines are read in bulk."""
    rng = random.Random(4)
    pre = "(APIServer pid=4012) INFO 04-30 {h:02d}:{m:02d}:{s:02d}"
    lines = []
    for k in range(3000):
        head = pre.format(h=k // 3600, m=k // 60 % 60, s=k % 60)
        kind = rng.choice(["busy-nan", "idle-nan", "values"]) if k >= 10 else "idle-nan"
        idle = kind == "idle-nan"
        lines.append(
            f"{head} [loggers.py:236] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
            f"generation throughput: {0 if idle else rng.uniform(10, 400):.1f} tokens/s, "
            f"Running: {0 if idle else rng.randint(1, 32)} reqs, Waiting: 0 reqs, GPU KV "
            f"cache usage: {0 if idle else rng.uniform(0, 9):.1f}%, Prefix cache hit rate: 0.0%"
        )
        if kind != "values":
            spec = (
                "Mean acceptance length: nan, Accepted throughput: 0.00 tokens/s, Drafted "
                "throughput: 0.00 tokens/s, Accepted: 0 tokens, Drafted: 0 tokens, "
                "Per-position acceptance rate: nan, nan, nan, Avg Draft acceptance rate: nan%"
            )
        else:
            spec = (
                f"Mean acceptance length: 1.90, Accepted throughput: {rng.uniform(1, 99):.2f} "
                f"tokens/s, Drafted throughput: 99.00 tokens/s, Accepted: 30 tokens, Drafted: "
                "99 tokens, Per-position acceptance rate: 0.500, 0.300, 0.100, Avg Draft "
                "acceptance rate: 30.0%"
            )
        lines.append(f"{head} [metrics.py:82] SpecDecoding metrics: {spec}")
    if bench:
        block = next(
            p
            for p in sorted((FORMATS / "vllm-bench-serve").glob("*.log"))
            if "Serving Benchmark Result" in p.read_text()
        )
        lines[3000:3000] = block.read_text().split("\n")
    path = tmp_path / "nan.log"
    _, fed = spec_lines_fed(path, lines, monkeypatch)
    # (before the line a benchmark run may start at: from there on, the rest goes to `feed`)
    idle_nan = [
        n for n in range(2, 3000) if "nan%" in lines[n - 1] and "Running: 0 " in lines[n - 2]
    ]
    assert len(idle_nan) > 400
    assert len(set(idle_nan) & set(fed)) < 20  # read in bulk


@pytest.mark.parametrize("chunk", [20000, 1 << 20])
def test_lines_below_a_benchmark_runs_reader_are_read_in_bulk(
    chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `vllm bench serve` run printed into the server's log (both writing one file), early
    on and again later: from its first line on its block reader takes the lines and hands
    the server's back; a chunk it would hand back whole, holding nothing, is read in bulk
    below it (the lines counted as it counts them), any other chunk line by line. Both
    paths agree, and chunks after the run are read in bulk."""
    rng = random.Random(9)
    pre = "(APIServer pid=4012) INFO 04-30 {h:02d}:{m:02d}:{s:02d}"
    lines = []
    for k in range(12000):
        head = pre.format(h=k // 3600, m=k // 60 % 60, s=k % 60)
        lines.append(
            f"{head} [loggers.py:236] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg "
            f"generation throughput: {rng.uniform(10, 400):.1f} tokens/s, Running: "
            f"{rng.randint(1, 32)} reqs, Waiting: 0 reqs, GPU KV cache usage: "
            f"{rng.uniform(0, 9):.1f}%, Prefix cache hit rate: 0.0%"
        )
        if k % 97 == 5:
            lines.append(
                f'(APIServer pid=4012) INFO:     127.0.0.1:{k} - "POST /v1/x HTTP/1.1" 200'
            )
    block = next(
        p
        for p in sorted((FORMATS / "vllm-bench-serve").glob("*.log"))
        if "Serving Benchmark Result" in p.read_text()
    )
    run = block.read_text().split("\n")
    lines[9000:9000] = run
    lines[150:150] = run
    walked: list[bool] = []
    real = V._Bench.bulk

    def bulk(self: Any, t: Any) -> bool:
        walked.append(real(self, t))
        return walked[-1]

    monkeypatch.setattr(V._Bench, "bulk", bulk)
    same_in_bulk(tmp_path / "with-runs.log", lines, monkeypatch, (chunk,))
    assert any(walked)  # chunks below the run's reader read in bulk
    if chunk < 1 << 20:
        assert not all(walked)  # and those holding its second run line by line


def test_no_chunk_is_read_in_bulk_while_the_runs_reader_holds_something() -> None:
    """Below a benchmark run's reader, a chunk is read in bulk only while that reader
    holds nothing: not while a Namespace dump it took may go on over the next lines."""
    import polars as pl

    from sessionlens._lines import Line
    from sessionlens.parsers.base import ParseContext

    ctx = ParseContext(file="x.log")
    server = V.Reader(ctx)
    bench = V._Bench(ctx, server)
    bench.start()
    engine = (
        "(APIServer pid=1) INFO 04-30 10:00:00 [loggers.py:236] Engine 000: Avg prompt "
        "throughput: 0.0 tokens/s, Avg generation throughput: 9.0 tokens/s, Running: 1 reqs, "
        "Waiting: 0 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%"
    )
    t = pl.Series([engine] * 3)
    assert bench.bulk(t)
    list(bench.feed(Line(1, "Namespace(backend='vllm', dispatch_function=<function x>,")))
    assert not bench.bulk(t)  # the dump may go on
    list(bench.feed(Line(2, engine)))  # a server line ends it
    assert bench.bulk(t)
    assert not bench.bulk(pl.Series([engine, "============ Serving Benchmark Result ============"]))
