"""The SGLang server log's fast path (issue 9) gives exactly what the line-by-line path gives.

Every comparison runs `sglang_server.parse` twice on the same file, the fast path off and
forced on (even for tiny files, with tiny chunks and windows so chunk borders and bulk
windows fall everywhere), and compares samples (in order, every column), the other records,
the record counts, the embedded formats and the reader's notes. Speed is measured in
benchmarks/, never here.
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from sessionlens import _codes, _lines
from sessionlens._lines import Line
from sessionlens.model import BlockStart, BlockStarts, Sample, SampleBatch
from sessionlens.parsers import phase_timing
from sessionlens.parsers import sglang_server as S
from sessionlens.parsers.base import ParseContext
from sessionlens.parsers.sglang_server import fast as F
from sessionlens.parsers.sglang_server import reader as R

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import variants

FORMATS = Path(__file__).resolve().parent.parent.parent / "fixtures" / "formats"
FIXTURES = sorted(
    p
    for d in ("sglang-server", "phase-timing")
    for p in (FORMATS / d).iterdir()
    if p.is_file() and not p.name.endswith((".expected.csv", ".diag.txt", ".got", ".md"))
)


class Bulk:
    """Counts the batch lines the fast path read in bulk (so a test proves it ran)."""

    rows = 0


def count_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on count in `Bulk.rows` the batch lines the chunk path reads in bulk."""
    real = F.ChunkRun._samples

    def counting(self: Any, pos: Any) -> Any:
        Bulk.rows += len(pos)
        return real(self, pos)

    monkeypatch.setattr(F.ChunkRun, "_samples", counting)
    Bulk.rows = 0


@pytest.fixture(autouse=True)
def _count_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    count_bulk(monkeypatch)


def _key(s: Sample) -> tuple[Any, ...]:
    v = "nan" if isinstance(s.value, float) and math.isnan(s.value) else s.value
    return (s.metric, v, s.line, s.block, s.run, s.rank, s.ts)


WINDOW = F._WINDOW  # (tests decide windows of 3 rows: borders everywhere)


def parse(
    path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fast: bool,
    chunk: int = 1 << 20,
    window: int = 3,
) -> tuple[Any, ...]:
    """Everything one parse gives, samples apart from the other records."""
    monkeypatch.setattr(S, "FAST", fast)
    monkeypatch.setattr(S, "FAST_CHUNK", chunk)
    monkeypatch.setattr(S, "FAST_MIN_BYTES", 0)
    monkeypatch.setattr(F, "_WINDOW", window)
    src = _lines.read(path, display=path.name)
    ctx = ParseContext(file=path.name)
    samples: list[tuple[Any, ...]] = []

    def take(batch: SampleBatch) -> None:
        samples.extend(_key(s) for s in batch.samples())

    ctx.sink = take  # type: ignore[attr-defined]
    others: list[Any] = []
    for rec in S.parse(src, ctx):
        if isinstance(rec, Sample):
            samples.append(_key(rec))
        elif isinstance(rec, BlockStarts):  # the block starts of a bulk read, one by one
            pairs = zip(rec.blocks.tolist(), rec.lines.tolist(), strict=True)
            others += [BlockStart(b, n, rec.format) for b, n in pairs]
        else:
            others.append(rec)
    notes = [str(d) for d in [*src.notes, *ctx.diagnostics]]  # the file's and the reader's
    return samples, others, dict(ctx.counts), sorted(ctx.embedded), notes, src.n_lines, src.sha256


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


def rows_fed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The chunk rows the fast path gives `feed` from now on, filled as it runs."""
    fed: list[int] = []
    real = F.ChunkRun._feed

    def feeding(self: Any, row: int) -> Any:
        fed.append(row)
        return real(self, row)

    monkeypatch.setattr(F.ChunkRun, "_feed", feeding)
    return fed


def assert_same(path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    slow = parse(path, monkeypatch, fast=False)
    fast = parse(path, monkeypatch, fast=True, chunk=chunk)
    names = ("samples", "other records", "counts", "embedded", "notes", "lines", "sha256")
    for name, a, b in zip(names, slow, fast, strict=True):
        assert b == a, f"{path.name}, chunk {chunk}: {name} differ"


@pytest.mark.parametrize("chunk", [300, 1 << 20])
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fast_path_gives_what_the_line_path_gives_on_every_fixture(
    path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_same(path, monkeypatch, chunk)


def test_the_fixtures_are_read_in_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    # the comparisons above prove something only if batch lines take the bulk path
    read = 0
    for path in FIXTURES:
        Bulk.rows = 0
        parse(path, monkeypatch, fast=True)
        read += Bulk.rows
    assert read >= 40


# ---------------------------------------------------------------------- generated logs

D_OLD = (
    "Decode batch, #running-req: {r}, #token: {tok}, token usage: {u:.2f}, accept len: "
    "{a:.2f}, accept rate: {ar:.2f}, cuda graph: True, gen throughput (token/s): {g:.2f}, "
    "#queue-req: {q}, "
)
D_NEW = (
    "Decode batch, #running-req: {r}, #token: {tok}, token usage: {u:.2f}, accept len: "
    "{a:.2f}, accept rate: {ar:.2f}, cuda graph: True, gen throughput (token/s): {g:.2f}, "
    "#queue-req: {q}, fwd occupancy: {o:.2f}%"
)
D_HYBRID = (
    "Decode batch [{it}], #running-req: {r}, #full token: {tok}, full token usage: {u:.2f}, "
    "#swa token: {tok}, swa token usage: {u2:.2f}, cuda graph: False, "
    "gen throughput (token/s): {g:.2f}, #queue-req: {q}, "
)
P_OLD = (
    "Prefill batch, #new-seq: {s}, #new-token: {nt}, #cached-token: {c}, token usage: {u:.2f}, "
    "#running-req: {r}, #queue-req: {q}, "
)
P_NEW = (
    "Prefill batch, #new-seq: {s}, #new-token: {nt}, #cached-token: {c}, token usage: {u:.2f}, "
    "#running-req: {r}, #queue-req: {q}, cuda graph: False, input throughput (token/s): {t:.2f}"
)
ARGS = "server_args=ServerArgs(tp_size=8, random_seed={seed}, enable_dp_attention={dp})"
ODD = [  # lines the fast path must hand to the line-by-line path, or read as it would
    "Decode batch, #running-req: 3, #token: 9, token usage: 0.1, cuda graph: True",
    "Decode batch, #running-req: 3, #token: nan, token usage: 0.10, cuda graph: True",
    "Decode batch, #running-req: 3, #widgets: 4, token usage: 0.10, cuda graph: True",
    "Decode batch, #running-req: 0, #token: 0, token usage: 0.00, cuda graph: True, ",
    "Decode batch, #running-req: 00.0, #token: 1, token usage: 0.00, cuda graph: True",
    "Decode batch, #token: full=10, swa=5, token usage: full=0.10, swa=0.20, ",
    "Decode batch, #running-req: 2, #token: 9, token usage: 0.10, cuda graph: maybe",
    "Decode batch, #running-req: 2, #token: 9, token usage: 0.10 nccl hiccup",
    "Decode batch. #running-req: 2, #token: 99999999999999999999, token usage: 0.10",
    "Prefill batch(mixed #running-req: 2). #new-seq: 1, #new-token: 3, #cached-token: 0",
    "Prefill batch, #new-seq: 1, #new-token: 8, cache hit rate: 12.5%, #running-req: 1",
    "Decode batch, GET /x HTTP/1.1, #running-req: 2",
]


def _noisy(rng: random.Random, text: str) -> str:
    """Terminal and paste noise that `_lines.clean` removes (or keeps)."""
    pick = rng.random()
    if pick < 0.04:
        return "\x1b[32m" + text + "\x1b[0m"
    if pick < 0.06:
        return "[1;36m" + text.replace("batch", "[0mbatch", 1)
    if pick < 0.07:
        return "> " + text
    if pick < 0.08:
        return "`" + text + "`"
    if pick < 0.09:
        return text.replace("Decode", "**Decode**", 1)
    if pick < 0.10:
        return "junk 10%\r" + text
    return text


def bench_run(rng: random.Random, server: list[str], stopped: bool = False) -> list[str]:
    """A bench_serving run printed into the server's terminal, `server`'s lines among its
    own: the argument dump (sometimes wrapped), progress, a result block (a row whose one
    decimal may be a cut, a server line between rows) and its JSON record (sometimes split
    over two lines); `stopped`: the run stopped before its block."""
    c = rng.choice([1, 8, 64])
    ns = (
        f"benchmark_args=Namespace(backend='sglang', dataset_name='random', num_prompts=64, "
        f"max_concurrency={c}, request_rate=inf, seed=1)"
    )
    roll = rng.random()
    if roll < 0.3:  # wrapped; another thread's line may come before its rest
        out = [ns[:60], *server[6:7], ns[60:]] if roll < 0.15 else [ns[:60], ns[60:]]
    else:
        out = [ns]
    out += ["", "#Input tokens: 65536", "Starting warmup with 1 sequences..."]
    out += server[:2]
    out += ["Warmup completed with 1 sequences. Starting main benchmark run..."]
    out += server[2:4]
    if stopped:
        return [*out, "^C"]
    out += [" 50%|█████     | 32/64 [00:34<00:34, 0.93it/s]"]
    out += ["============ Serving Benchmark Result ============"]
    out += [
        "Backend:                                 sglang    ",
        f"Max request concurrency:                 {c}         ",
        "Successful requests:                     64        ",
        f"Benchmark duration (s):                  {rng.uniform(10, 90):.2f}     ",
        f"Output token throughput (tok/s):         {rng.uniform(100, 900):.2f}    ",
    ]
    if rng.random() < 0.5:
        out += server[4:5]  # another thread's line between two rows
    out += ["---------------Time to First Token----------------"]
    out += [f"Mean TTFT (ms):                          {rng.uniform(10, 900):.1f}"]
    if rng.random() < 0.5:
        out += server[5:6]  # after a row of one decimal: the block may be cut there
    out += [f"Median TTFT (ms):                        {rng.uniform(10, 900):.2f}    "]
    out += ["=================================================="]
    throughput = rng.uniform(100, 900)
    record = (
        f'{{"backend": "sglang", "max_concurrency": {c}, "output_throughput": {throughput:.2f}}}'
    )
    roll = rng.random()
    if roll < 0.3:
        out.append(record)
    elif roll < 0.5:
        out += [record[:30], *server[7:8], record[30:]] if roll < 0.4 else [record[:30]]
    return out


def generated_log(seed: int, bench: str = "") -> bytes:
    """A small log with what real ones hold: TP duplicates in any order (a higher rank a
    second late), idle intervals, DP attention, restarts with another version's layout,
    access lines, phase blocks, tracebacks, noise, odd lines, bad bytes, a cut last line;
    `bench`: benchmark runs printed into it from its tenth step on ("runs"), or one run
    stopped before its result block ("stopped")."""
    rng = random.Random(seed)
    out: list[str] = []
    second = 0
    ms = False
    lead = ""
    tags = ["TP{r}"]
    decode, prefill = D_OLD, P_OLD

    def stamp(late: int = 0) -> str:
        t = second + late
        base = f"2026-01-01 {10 + t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d}"
        return base + (f".{rng.randrange(1000):03d}" if ms else "")

    def prefix(r: int, late: int = 0) -> str:
        tag = " ".join(x.format(r=r, d=r % 2) for x in tags)
        return f"{lead}[{stamp(late)}{' ' + tag if tag else ''}] "

    out.append(f"{lead}[{stamp()}] " + ARGS.format(seed=seed, dp=False))
    for step in range(rng.randrange(120, 200)):
        second += rng.randrange(1, 3)
        if rng.random() < 0.03:  # a restart: another version, another prefix
            ms = not ms
            lead = rng.choice(["", "sglang-1  | ", "node0: "])
            tags = rng.choice([["TP{r}"], ["TP{r}", "EP{r}"], ["DP{d}", "TP{r}"], []])
            decode = rng.choice([D_OLD, D_NEW, D_HYBRID])
            prefill = rng.choice([P_OLD, P_NEW])
            dp = bool(tags) and tags[0].startswith("DP")
            out.append(f"{lead}[{stamp()}] " + ARGS.format(seed=step, dp=dp))
        values = {
            "r": rng.choice([0, 1, 4, 8, 16, 32]),
            "tok": rng.randrange(1, 90000),
            "u": rng.random(),
            "u2": rng.random(),
            "a": rng.uniform(1, 4),
            "ar": rng.random(),
            "g": rng.uniform(10, 3000),
            "q": rng.randrange(3),
            "o": rng.uniform(0, 100),
            "it": step,
            "s": rng.randrange(1, 5),
            "nt": rng.randrange(10, 5000),
            "c": rng.randrange(100),
            "t": rng.uniform(100, 9000),
        }
        ranks = list(range(rng.choice([1, 2, 4, 12])))  # TP9 and TP10: two tag widths
        rng.shuffle(ranks)
        for r in ranks:
            late = 1 if r and rng.random() < 0.1 else 0
            line = prefix(r, late) + decode.format(**values)
            out.append(_noisy(rng, line))
        if rng.random() < 0.3:
            for r in ranks:
                out.append(_noisy(rng, prefix(r) + prefill.format(**values)))
        for _ in range(rng.randrange(3)):
            port = rng.randrange(30000, 60000)
            out.append(f'[{stamp()}] INFO:     127.0.0.1:{port} - "POST /generate HTTP/1.1" 200 OK')
        roll = rng.random()
        if roll < 0.06:
            out.append(f"[{stamp()} TP0] Draft (3 steps):   0.74 ms/cyc  (  2.5%)")
            out.append(f"[{stamp()} TP0] Target verify:     29.47 ms/cyc  ( 97.5%)")
        elif roll < 0.08:
            out.append(
                f"[{stamp()} TP0] Scheduler hit an exception: Traceback (most recent call last):"
            )
            out.append('  File "/x/scheduler.py", line 1, in run')
            out.append("RuntimeError: boom")
        elif roll < 0.12:
            out.append(prefix(0) + rng.choice(ODD))
        elif roll < 0.13:
            out.append("")
        elif roll < 0.14:
            out.append(f"[{stamp()}] KV cache pool is full. Retract requests. #retracted_reqs: 1")
        if bench and (step == 10 or (step > 10 and bench == "runs" and rng.random() < 0.05)):
            server = [prefix(r) + decode.format(**values) for r in ranks] * 3
            out += bench_run(rng, server, stopped=bench == "stopped")
            for _ in range(8):  # phase blocks once a run has started
                out.append(f"[{stamp()} TP0] Draft (3 steps):   0.74 ms/cyc  (  2.5%)")
                out.append(f"[{stamp()} TP0] Target verify:     29.47 ms/cyc  ( 97.5%)")
                out.append(prefix(0) + decode.format(**values))
    text = "\n".join(out) + "\n"
    text += prefix(0) + "Decode batch, #running-req: 12, #token: 14000, token usage: 0.0"
    data = text.encode()
    if seed % 3 == 0:  # a line with bytes that are not UTF-8
        at = data.find(b"HTTP/1.1", len(data) // 2)
        data = data[:at] + b"\xff\xfe" + data[at:]
    return data


@pytest.mark.parametrize("seed", range(6))
def test_generated_logs_read_the_same(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"gen-{seed}.log"
    path.write_bytes(generated_log(seed))
    for chunk in (700, 5000, 1 << 20):
        assert_same(path, monkeypatch, chunk)
    assert Bulk.rows > 0


@pytest.mark.parametrize(
    ("seed", "bench"), [(0, "runs"), (1, "runs"), (2, "runs"), (4, "stopped"), (5, "stopped")]
)
def test_logs_with_benchmark_runs_read_the_same(
    seed: int, bench: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From a benchmark run's start on, its block reader takes every line: the server lines
    it hands back as they are are still read in bulk."""
    path = tmp_path / f"bench-{seed}.log"
    data = generated_log(seed, bench)
    path.write_bytes(data)
    for chunk in (700, 5000, 1 << 20):
        assert_same(path, monkeypatch, chunk)
    text = data.decode(errors="replace")
    after = text[text.index("benchmark_args=") :].count("Decode batch")
    assert after > 0.8 * text.count("Decode batch")
    # most batch lines after the first run's start were read in bulk (duplicates aside)
    assert Bulk.rows > after // 4


def test_chunks_of_a_dense_log_are_made_smaller() -> None:
    full = S.FAST_CHUNK
    assert S.chunk_size(0, 0) == full  # nothing walked yet
    assert S.chunk_size(S.CHUNK_SAMPLES // 4, full) == full  # a decode log: as it is
    # twice as many samples a byte as a chunk should hold: chunks half as long
    assert S.chunk_size(2 * S.CHUNK_SAMPLES, full) == full // 2
    assert S.chunk_size(100 * S.CHUNK_SAMPLES, full) == full // 3  # never below a third


@pytest.mark.parametrize("seed", range(3))
def test_chunks_made_smaller_as_the_log_is_read_read_the_same(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunks after the first ones take the size of the samples' density
    (`chunk_size`): chunk borders move as the file is read, and it reads as the line path
    does."""
    path = tmp_path / f"gen-{seed}.log"
    path.write_bytes(generated_log(seed))
    sizes: list[int] = []
    real = S.chunk_size

    def sizing(samples: int, read: int) -> int:
        sizes.append(real(samples, read))
        return sizes[-1]

    made: list[int] = []
    prepare = F.Fast.prepare

    def preparing(self: Any, chunk: Any) -> Any:
        made.append(len(chunk.data))
        return prepare(self, chunk)

    monkeypatch.setattr(S, "chunk_size", sizing)
    monkeypatch.setattr(F.Fast, "prepare", preparing)
    monkeypatch.setattr(S, "CHUNK_SAMPLES", 5)
    assert_same(path, monkeypatch, 3000)
    assert Bulk.rows > 0
    # chunks were made smaller, and read so
    assert sizes[0] == 3000
    assert min(sizes) == 1000
    assert min(made[:2]) > 2000
    assert sorted(made)[len(made) // 2] < 1500


@pytest.mark.parametrize("seed", range(3))
def test_segment_codes_by_sort_read_the_same(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window's (kind, layout, rank tags) codes and the rank tags' categorical codes are
    numbered by a lookup table when they span few values, by a sort otherwise: the sort
    path (forced here for both) reads as the line path does too."""
    monkeypatch.setattr(_codes, "_TABLE", 0)
    path = tmp_path / f"gen-{seed}.log"
    path.write_bytes(generated_log(seed))
    for chunk in (700, 1 << 20):
        assert_same(path, monkeypatch, chunk)
    assert Bulk.rows > 0


def test_a_layout_learned_while_a_window_is_decided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A preparing thread may learn a layout while the walk decides a window of rows
    (`_segment`): each (kind, layout, rank tags) the TP-rank rule is asked about is one of
    the window's rows' (the codes are read back with the count of layouts they were made
    with), and the rows are read as the line path reads them."""
    path = tmp_path / "gen.log"
    path.write_bytes(generated_log(1))
    values = {"r": 4, "tok": 9, "u": 0.5, "a": 2.5, "ar": 0.5, "g": 12.5, "q": 0}
    extra = iter(
        [f"node{k}: [2030-01-01 00:00:00 TP0] " + D_OLD.format(**values) for k in range(24)]
    )
    real_decide, real_segment = F.ChunkRun._decide, F.ChunkRun._segment
    window: set[tuple[bool, str, str]] = set()
    asked: list[tuple[bool, str, str]] = []

    def segment(self: Any, i: int, until: int) -> Any:
        import numpy as np

        a = int(np.searchsorted(self.m_row, i))
        pos = self.m_pos[a : min(a + self.window, int(np.searchsorted(self.m_row, until)))]
        layouts = self.f.layouts
        window.clear()
        window.update(
            (bool(self.b_dec[p]), layouts[self.b_layout[p]].pattern, self.tags[self.b_tags[p]])
            for p in pos.tolist()
        )
        got = real_segment(self, i, until)
        assert set(asked) <= window
        asked.clear()
        return got

    def deciding(self: Any, is_dec: bool, layout: Any, tags: str, taken: Any) -> Any:
        asked.append((is_dec, layout.pattern, tags))
        line = next(extra, None)
        if line is not None:
            learned = F._learn(line)
            assert learned is not None
            self.f._keep(learned)  # as a preparing thread's `learn` does, meanwhile
        return real_decide(self, is_dec, layout, tags, taken)

    monkeypatch.setattr(F.ChunkRun, "_segment", segment)
    monkeypatch.setattr(F.ChunkRun, "_decide", deciding)
    assert_same(path, monkeypatch, 1 << 20)
    assert next(extra, None) is None  # every extra layout was learned mid-window
    assert Bulk.rows > 0


def test_a_mid_file_layout_change_is_learned_not_read_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = "[2025-11-14 09:00:{s:02d} TP{rank}] " + D_OLD
    new = "[2025-11-14 10:00:{s:02d}.123 TP{rank}] " + D_NEW
    values = {"r": 5, "tok": 7, "u": 0.5, "a": 2, "ar": 0.5, "g": 99, "q": 0, "o": 50}
    lines = [
        (old if s < 30 else new).format(s=s, rank=rank, **values)
        for s in range(60)
        for rank in (1, 0, 2, 3)
    ]
    path = tmp_path / "change.log"
    path.write_text("\n".join(lines) + "\n")
    assert_same(path, monkeypatch, 1 << 20)
    fed = rows_fed(monkeypatch)
    parse(path, monkeypatch, fast=True)
    # the first lines of each layout settle the TP-rank state; the rest go in bulk
    assert len(fed) < 20
    assert Bulk.rows > 20


def test_rank_tags_of_two_widths_are_read_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a layout pins its tags' width: TP0-TP9 and TP10-TP15 lines have a layout each, and both
    # are read in bulk (the TP-rank rule across them as on the line path)
    line = "[2025-11-14 09:{m:02d}:{s:02d} TP{rank}] " + D_OLD
    values = {"tok": 7, "u": 0.5, "a": 2, "ar": 0.5, "g": 99, "q": 0, "o": 50}
    ranks = [3, 12, 0, 15, 9, 10, 1, 2, 4, 5, 6, 7, 8, 11, 13, 14]
    lines = [
        line.format(m=t // 60, s=t % 60, rank=rank, r=t % 7, **values)
        for t in range(200)
        for rank in ranks
    ]
    path = tmp_path / "tp16.log"
    path.write_text("\n".join(lines) + "\n")
    for chunk in (4000, 1 << 20):
        assert_same(path, monkeypatch, chunk)
    assert Bulk.rows > 150  # the TP0 lines, in bulk
    fed = rows_fed(monkeypatch)
    parse(path, monkeypatch, fast=True)
    assert len(fed) < 40  # the first intervals settle the TP-rank state; no width is fed


def test_a_record_separator_byte_is_not_taken_for_a_carriage_return(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the fast path parks `\r` as `\x1e`; in a chunk without `\r`, a `\x1e` is a byte of the
    # log and stays one (a `\r` would start the line over)
    line = "[2025-11-14 09:00:{s:02d} TP0] " + D_OLD
    values = {"tok": 7, "u": 0.5, "a": 2, "ar": 0.5, "g": 99, "q": 0, "o": 50}
    lines = [line.format(s=s, r=s + 1, **values) for s in range(60)]
    lines[20] = "junk 10%\x1e`" + lines[20]
    lines[30] = "> " + lines[30].replace("#token", "#tok\x1een", 1)
    path = tmp_path / "rs.log"
    path.write_text("\n".join(lines) + "\n")
    assert_same(path, monkeypatch, 1 << 20)
    assert Bulk.rows > 40


def _read_values(layout: Any, lines: list[str], how: str) -> list[tuple[Any, ...]]:
    frame = pl.DataFrame({"t": lines})
    if how == "groups":
        frame = frame.select(pl.col("t").str.extract_groups(layout.pattern).struct.unnest())
    else:
        frame = frame.select(F._groups(layout))
    return list(frame.select(sorted(frame.columns, key=int)).iter_rows())


def test_values_split_at_commas_are_the_capture_groups() -> None:
    rng = random.Random(4)
    shapes = [
        "[2026-01-01 10:00:{s:02d} TP{t}] " + D_OLD,
        "sglang-1  | [2026-01-01 10:00:{s:02d}.123 DP1 TP{t}] " + D_NEW,
        "[10:00:{s:02d} TP{t}] Decode batch. #running-req: {r}, #token: {tok}, "
        "token usage: {u:.2f}, gen throughput (token/s): {g:.2f}",
        "[2026-01-01 10:00:{s:02d} TP{t}] Prefill batch, #new-seq: {r}, #new-token: {tok}, "
        "#cached-token: {q}, cache hit rate: {o:.2f}%, token usage: {u:.2f}, #running-req: {r}",
    ]
    for shape in shapes:

        def line(shape: str = shape) -> str:
            values = {
                "r": rng.randrange(1, 10 ** rng.randrange(1, 6)),
                "tok": rng.randrange(10 ** rng.randrange(1, 8)),
                "u": rng.random(),
                "a": rng.uniform(1, 9),
                "ar": rng.random(),
                "g": rng.uniform(0, 10 ** rng.randrange(1, 6)),
                "q": rng.randrange(100),
                "o": rng.uniform(0, 100),
            }
            return shape.format(s=rng.randrange(60), t=rng.randrange(8), **values)

        layout = F._learn(line())
        assert layout is not None, shape
        assert layout.items is not None, shape
        lines = [line() for _ in range(300)]
        lines = [x for x in lines if re.fullmatch(layout.pattern, x)]
        assert len(lines) > 200
        assert _read_values(layout, lines, "split") == _read_values(layout, lines, "groups")


def test_a_value_after_a_numbered_tail_is_read_with_the_capture_groups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `Decode batch [3] #running-req: 1, ...`: the first value shares its item with a number
    # of any width, so its offset in the item is not fixed (whatever item that is: a lead
    # holding `, ` moves it)
    for lead in ("", "a, b "):
        line = lead + "[2026-01-01 10:00:{s:02d} TP0] Decode batch [{n}] "
        line += "#running-req: {r}, #token: 9"
        layout = F._learn(line.format(s=0, n=3, r=4))
        assert layout is not None
        assert layout.items is None
        lines = [line.format(s=s, n=n, r=s + 11) for s in range(60) for n in (10, 9, 1234)]
        path = tmp_path / "numbered.log"
        path.write_text("\n".join(lines) + "\n")
        Bulk.rows = 0
        assert_same(path, monkeypatch, 1 << 20)
        assert Bulk.rows > 20


# ---------------------------------------------------------------------- the rules behind it


def _examples(pattern: str) -> list[str]:
    """One text per top-level alternative of a regex made of literals and simple groups."""
    alts, depth, start = [], 0, 0
    for i, c in enumerate(pattern):
        if c == "(" and pattern[i - 1 : i] != "\\":
            depth += 1
        elif c == ")" and pattern[i - 1 : i] != "\\":
            depth -= 1
        elif c == "|" and depth == 0:
            alts.append(pattern[start:i])
            start = i + 1
    alts.append(pattern[start:])
    out = []
    for alt in alts:
        text = re.sub(r"\(\?:([^|)]*)[^)]*\)", r"\1", alt)  # first choice of a group
        out.append(re.sub(r"\\(.)", r"\1", text.replace(r"\w*", "")))  # unescape
    return out


def test_every_event_holds_a_rare_word() -> None:
    # lines without a rare word skip `Reader.feed`: every event it acts on must hold one
    examples = _examples(R._EVENT.pattern)
    assert len(examples) >= 15
    for text in examples:
        assert R._EVENT.search(text), text
        assert any(w in text for w in F._RARE), text
    for text in ("server_args=ServerArgs(", "Draft: 1.00 ms/cyc", *phase_timing.WORDS):
        assert any(w in text for w in F._RARE)


def test_polars_cleaning_is_clean() -> None:
    rng = random.Random(9)
    alphabet = [
        "\x1b",
        "[",
        "]",
        "0",
        "1",
        ";",
        "m",
        "*",
        "`",
        "~",
        ">",
        " ",
        "a",
        "\x07",
        "(",
        "B",
        "=",
        "?",
        "K",
        "\x1e",
        "Decode batch",
    ]
    lines = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(25))) for _ in range(4000)]
    # `\x1e` is a parked `\r` when the chunk held `\r`s, else a byte of the log as any other
    got = _lines.clean_series(pl.Series(lines, dtype=pl.String), True).to_list()
    assert got == [_lines.clean(x.replace("\x1e", "\r")) for x in lines]
    got = _lines.clean_series(pl.Series(lines, dtype=pl.String), False).to_list()
    assert got == [_lines.clean(x) for x in lines]


def test_json_log_lines_are_unwrapped_in_polars_as_clean_does() -> None:
    """docker's json-file envelope and a JSON formatter's record are unwrapped in polars
    where their text allows (`DOCKER_JSON_RX`, `FORMATTER_JSON_RX`), by `clean` otherwise:
    the same text either way, for envelopes `json.dumps` wrote of random texts (escapes,
    ANSI codes, nested JSON, newlines, control bytes, non-ASCII) and for near-envelopes
    (other key orders, spacing, a broken end)."""
    rng = random.Random(5)
    alphabet = ["\x1b[32m", "\x1b[0m", "[1;36m", '"', "\\", "/", "\n", "\r", "\t", "\x1e",
                '{"', "}", "`", "**", "> ", "~~~", "é", "€", " ", "a", "Decode batch, #token: 1",
                "\x7f", "\u2028", ":", ",", "<", "->", "&"]  # fmt: skip
    lines = []
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
        if rng.random() < 0.05:  # a JSON-formatted log the container printed
            text = '{"asctime": "2025-01-01 10:00:00,123", "message": "' + text + '"}'
        if rng.random() < 0.7:
            text += "\n"
        stream = rng.choice(["stdout", "stderr"])
        obj = {"log": text, "stream": stream, "time": "2025-11-14T09:10:00.123456789Z"}
        line = json.dumps(obj, separators=(",", ":"), ensure_ascii=rng.random() < 0.5)
        if rng.random() < 0.3:  # a JSON logging formatter's record instead
            stamp = rng.choice(["2026-10-30 15:02:03,123", "2026-10-30 15:02:03", "15:02", ""])
            level = rng.choice(["INFO", "DEBUG", "WARNING", "ERROR", "CRITICAL", "info"])
            message = text.removesuffix("\n")
            record = {"asctime": stamp, "levelname": level, "name": "sglang.x", "message": message}
            if rng.random() < 0.1:
                record = {"message": message, "asctime": stamp}
            line = json.dumps(record, ensure_ascii=rng.random() < 0.5)
            if rng.random() < 0.4:  # other fields before the message (vLLM's)
                extra = rng.choice(
                    [
                        '"processName": "EngineCore_DP0", "process": 7100',
                        '"process": 0, "x": null, "y": true',
                        '"process": 007',  # no JSON
                        '"process": -12, "message": "first"',  # a key twice
                        '"log": "docker\'s"',
                        '"completed": 5',  # a benchmark record's key: data, not a log
                        '"name2": "a\\"b"',
                    ]
                )
                line = line.replace(', "message": ', f", {extra}, " + '"message": ', 1)
        if rng.random() < 0.5:  # as Go's encoder writes it (docker's): `<>&` escaped
            for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
                line = line.replace(char, escaped)
        if rng.random() < 0.1:
            line = line.replace("/", "\\/")  # (valid JSON too)
        roll = rng.random()
        if roll < 0.05:
            line = json.dumps(obj)  # spaces after the separators
        elif roll < 0.1:
            line = json.dumps({"stream": stream, **obj}, separators=(",", ":"))
        elif roll < 0.15:
            line = line[:-1]  # cut
        elif roll < 0.2:
            line = " " + line + " "
        elif roll < 0.25:
            line = line.replace("\\t", "\t")  # a raw control byte: no JSON
        lines.append(line)
    matched = pl.Series(lines).str.contains(_lines.DOCKER_JSON_RX).sum()
    assert 300 < matched < 2500  # both paths taken
    assert pl.Series(lines).str.contains(_lines.FORMATTER_JSON_RX).sum() > 100
    for parked in (False, True):
        want = [_lines.clean(x.replace("\x1e", "\r") if parked else x) for x in lines]
        for esc in (False, True):  # (a docker log's bytes hold no ESC: `\u001b` stands there)
            got = _lines.clean_series(pl.Series(lines, dtype=pl.String), parked, esc)
            assert got.to_list() == want


def _random_chunks(
    rng: random.Random, alphabet: list[str], chunks: int, most_chars: int, most_lines: int
) -> Iterator[tuple[list[str], tuple[pl.Series, dict[str, Any]] | None]]:
    """`chunks` chunks of random lines of `alphabet`'s pieces (under `most_chars` pieces a
    line, 1 to under `most_lines` lines a chunk), each with what `polars_lines` makes of it."""
    for _ in range(chunks):
        lines = [
            "".join(rng.choice(alphabet) for _ in range(rng.randrange(most_chars)))
            for _ in range(rng.randrange(1, most_lines))
        ]
        data = ("\n".join(lines) + "\n").encode()
        yield lines, _lines.polars_lines(_lines.Chunk(1, data))


def test_polars_lines_clean_every_noisy_line() -> None:
    """The noise is looked for as parts ORed (and bidi controls only in a chunk holding
    their first byte): every line any part of `NOISE_RX` finds is cleaned as `clean` does,
    and a chunk holding a bidi control is read line by line."""
    rng = random.Random(11)
    alphabet = ["\x1b", "[", "1", ";", "m", "*", "**", "`", "~", ">", " ", "a", "\u202e",
                "\u2067", "\u2070", "\xe9", "\u20ac", "[0m", "Decode batch"]  # fmt: skip
    bidi = re.compile(_lines.BIDI_RX)
    for lines, got in _random_chunks(rng, alphabet, 300, 12, 20):
        if any(bidi.search(x) for x in lines):
            assert got is None
            continue
        assert got is not None
        assert got[0].to_list() == [_lines.clean(x) for x in lines]
        flagged = pl.Series(lines).str.contains(_lines.NOISE_RX).to_list()
        assert flagged == [re.search(_lines.NOISE_RX, x) is not None for x in lines]


def test_polars_lines_read_crlf_and_carriage_returns_as_clean_does() -> None:
    """A chunk's `\r`s (CRLF line ends, several `\r`s, progress-bar rewrites, a `\r`
    alone) give every line as `clean` gives it; a chunk whose `\r`s all end lines is split
    with none parked (its lines are no noise: not cleaned one by one in Python)."""
    rng = random.Random(5)
    alphabet = ["\r", "\r", "a", " ", "[", "1", "m", "\x1b", "Decode batch", "10%", "\x1e"]
    for lines, got in _random_chunks(rng, alphabet, 400, 8, 12):
        if got is None:  # a `\x1e` and a `\r` in one chunk: read line by line
            assert any("\x1e" in x for x in lines)
            assert any("\r" in x for x in lines)
            continue
        assert got[0].to_list() == [_lines.clean(x) for x in lines], lines
    log = (FORMATS / "sglang-server" / "d07-p06-0.5.1-eagle3-tp2.log").read_bytes()
    log = log.rstrip(b"\n") + b"\n"  # (the fixture is cut: its last line has no end)
    crlf = log.replace(b"\n", b"\r\n") + b"last\r\r\n"
    split = _lines._polars_split(crlf)
    assert split is not None
    assert split[1] is False  # nothing parked
    want = [_lines.clean(x) for x in crlf.decode().split("\n")[:-1]]
    got = _lines.polars_lines(_lines.Chunk(1, crlf))
    assert got is not None
    assert got[0].to_list() == want
    assert got[0].to_list() == [*map(_lines.clean, log.decode().split("\n")[:-1]), "last"]


def test_polars_splits_lines_as_the_line_reader_does(monkeypatch: pytest.MonkeyPatch) -> None:
    data = (
        b'a\n\n  spaced  \n\ttab\n"quoted",x\n#hash\n\xc3\xa9t\xc3\xa9\n,,\n'
        b"[2026-01-01 10:00:00] x\n" * 3
    )
    fast = F.Fast(S.Reader(ParseContext(file="x")), _lines.from_text(""), None)
    got = _lines.polars_lines(_lines.Chunk(1, data))
    assert got is not None
    assert got[0].to_list() == data.decode().split("\n")[:-1]
    try:
        # a separator, a NUL, bytes that are not UTF-8 anywhere in the chunk, a BOM that
        # starts it (polars strips it): the chunk is read line by line
        for bad in (b"x\x1fy\n", b"x\x00y\n", b"\xff\n", b"\xc3\n"):
            assert fast._prepare(_lines.Chunk(1, data + bad + data), []) is None, bad
        assert fast._prepare(_lines.Chunk(1, b"\xef\xbb\xbfbom\n" + data), []) is None
    finally:
        fast.close()


@pytest.mark.parametrize(
    "line",
    [
        "[2026-01-01 10:00:00 TP0] Decode batch, #running-req: 1, token usage: 0.1",  # decimals
        "[2026-01-01 10:00:00 TP0] Decode batch, #running-req: 1, #widgets: 2 [a]",  # odd value
        "[2026-01-01 10:00:00 TP0] Decode batch, #running-req: nan",  # not a plain number
        "[2026-01-01 10:00:00 TP0 TP1] Decode batch, #running-req: 1",  # a tag twice
        "INFO [ TP0 x.py:1] Decode batch, #running-req: 1",  # a prefix with no timestamp
        "2026-01-01 10:00:00 TP0 INFO DP1 Decode batch, #running-req: 1",  # tags apart
        "2026-01-01 10:00:00 [x] [ TP0 x.py:1] Decode batch, #running-req: 1",  # two `] `
        "[2026-01-01 10:00:00 TP0] Decode batch, #running-req: 1, NCCL: 2",  # a rare word
        "ms/cyc | [2026-01-01 10:00:00 TP0] Decode batch, #running-req: 1",  # one `feed` reads
        # 0.3.0's mixed running count, and the same metric among the fields (the reader
        # gives both)
        "[10:00:00 TP0] Prefill batch(mixed #running-req: 2). #new-seq: 1, #running-req: 3",
    ],
)
def test_no_layout_for_lines_read_otherwise(line: str) -> None:
    assert F._learn(line) is None


@pytest.mark.parametrize(
    ("line", "ts", "rank"),
    [
        (  # a logging config of its own (`--log-config`)
            "2026-01-25 11:22:05.874 INFO 120984 [ TP0 scheduler_metrics_mixin.py:415] Decode "
            "batch [4451], #running-req: 1, #token: 900, token usage: 0.00, cuda graph: True, "
            "gen throughput (token/s): 42.31, #queue-req: 0, ",
            "2026-01-25 11:22:05.874",
            "TP0",
        ),
        (  # journalctl, the tags of DP attention
            "Nov 29 10:00:00 gpu-7 python3[1234]: 2026-01-25 11:22:05,874 DP1 TP3 INFO Prefill "
            "batch, #new-seq: 2, #new-token: 812, #cached-token: 0, token usage: 0.01, "
            "#running-req: 3, #queue-req: 0",
            "2026-01-25 11:22:05,874",
            "DP1 TP3",
        ),
        (  # no rank at all
            "2026-01-25T11:22:05.874Z sglang | Decode batch, #running-req: 4, #token: 9, token "
            "usage: 0.00, gen throughput (token/s): 1.50, #queue-req: 0",
            "2026-01-25T11:22:05.874Z",
            None,
        ),
    ],
)
def test_a_batch_line_behind_another_prefix_is_learned(
    line: str, ts: str, rank: str | None
) -> None:
    """The timestamp and the rank tags stand where the reader finds them (the last timestamp
    of the prefix, every tag in it), at places the layout's regex pins: the layout slices
    them as the reader reads them."""
    layout = F._learn(line)
    assert layout is not None
    assert re.fullmatch(layout.pattern, line)
    assert line[layout.ts_at : layout.ts_at + layout.ts_len] == ts
    assert (line[layout.tags_at + 1 : layout.tags_at + layout.tags_len] or None) == rank
    reader = S.Reader(ParseContext(file="x"))
    records = [*reader.feed(Line(1, line)), *reader.finish()]
    samples = [r for r in records if isinstance(r, Sample)]
    assert samples
    assert {(r.ts, r.rank) for r in samples} == {(ts, rank)}


def test_a_log_of_another_prefix_reads_the_same_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The custom-logging fixture's lines over and over, timestamps, pids and batch numbers
    changing (their widths too): the same through both paths, read in bulk."""
    rng = random.Random(5)
    fixture = FORMATS / "sglang-server" / "custom-logging-0.5.8.log"
    head, *steady = fixture.read_text().split("\n")[:-1]
    lines = [head]
    for k in range(400):
        ln = rng.choice(steady)
        pid = rng.choice(["120984", "120985", "98"])
        ln = re.sub(r"INFO \d+ \[", f"INFO {pid} [", ln)
        ln = ln.replace("11:22:", f"11:{22 + k // 60:02d}:")
        lines.append(ln)
    rows = same_in_bulk(tmp_path / "custom.log", lines, monkeypatch, (2000, 1 << 20))
    batch = sum("batch" in ln for ln in lines)
    assert rows >= batch - 12  # but a few `feed` reads (a layout's first line)


def test_a_layout_reads_its_own_line() -> None:
    line = "sglang-1  | [2026-01-01 10:00:00.123 DP1 TP3] " + D_NEW.format(
        r=4, tok=9, u=0.5, a=2.5, ar=0.5, g=12.5, q=0, o=45.5
    )
    layout = F._learn(line)
    assert layout is not None
    assert re.fullmatch(layout.pattern, line)
    assert [m for m, _, _ in layout.outputs] == [
        "running_req",
        "num_token",
        "token_usage",
        "accept_len",
        "accept_rate",
        "cuda_graph",
        "gen_throughput_tok_s",
        "queue_req",
        "fwd_occupancy",
    ]
    assert line[layout.ts_at : layout.ts_at + layout.ts_len] == "2026-01-01 10:00:00.123"
    assert len(layout.idle_patterns) == 1
    assert not re.fullmatch(layout.idle_patterns[0], line)
    assert re.fullmatch(layout.idle_patterns[0], line.replace("#running-req: 4", "#running-req: 0"))


@pytest.mark.parametrize("spread", [3, 1 << 20])
def test_tag_ids_of_near_and_far_codes(spread: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rank tags are numbered from their categorical codes by a lookup table when the codes
    lie close together and by a sort when they do not; both number tags in the same way."""
    import numpy as np

    if spread < 1 << 16:  # the lookup table, not the sort

        def no_sort(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("np.unique called")

        monkeypatch.setattr(np, "unique", no_sort)

    layout = F._learn(
        "[2026-01-01 10:00:00 TP0] "
        + D_NEW.format(r=4, tok=9, u=0.5, a=2.5, ar=0.5, g=12.5, q=0, o=45.5)
    )
    assert layout is not None
    rng = random.Random(spread)
    tags = ["TP3", "TP0", "TP7"]
    picks = [rng.randrange(3) for _ in range(50)]
    text = pl.Series(
        [f"[2026-01-01 10:00:00 {tags[p]}] Decode batch" for p in picks], dtype=pl.String
    )
    codes = np.array([10 + p * spread for p in picks], np.uint32)
    run = F.ChunkRun.__new__(F.ChunkRun)
    run.tags, run._tag_index = [" TP1"], {" TP1": 0}  # one tag known from an earlier layout
    got = run._tag_ids(codes, text, layout)
    # tags are numbered in the order of their codes, after those known
    assert run.tags == [" TP1", " TP3", " TP0", " TP7"]
    assert [run.tags[i] for i in got.tolist()] == [" " + tags[p] for p in picks]


def test_docker_timestamps_before_each_line_are_read_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`docker logs -t` puts its own nanosecond timestamp before every line: the layout pins
    its digits' widths, not their values (one layout, not one a line)."""
    fixture = FORMATS / "sglang-server" / "pd-decode-0.5.6-docker-dp2.log"
    lines = fixture.read_text().split("\n")[:-1]
    out = lines[:6]
    rng = random.Random(2)
    for k in range(300):
        ln = lines[6 + k % 6]
        ns = f"{rng.randrange(10**9):09d}"
        ln = re.sub(r"T08:01:1\d\.\d{9}Z", f"T08:{2 + k // 60:02d}:{k % 60:02d}.{ns}Z", ln)
        out.append(ln)
    rows = same_in_bulk(tmp_path / "docker.log", out, monkeypatch, (3000, 1 << 20))
    batch = sum("batch" in ln for ln in out)
    assert rows >= batch - 12


def test_a_shape_no_layout_reads_is_learned_from_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batch lines with a field no layout knows are fed; learning (which compiles regexes) is
    tried once for their shape, not again on every one of them."""
    lines = [
        f"[2026-01-01 10:{k // 60:02d}:{k % 60:02d} TP0] Decode batch, #running-req: {k % 9 + 1}"
        f", #widgets: {k % 7}, gen throughput (token/s): {k + 0.5:.2f}, #queue-req: 0"
        for k in range(2000)
    ]
    path = tmp_path / "widgets.log"
    path.write_text("\n".join(lines) + "\n")
    calls = 0
    real = F._learn

    def counting(text: str) -> Any:
        nonlocal calls
        calls += 1
        return real(text)

    monkeypatch.setattr(F, "_learn", counting)
    assert_same(path, monkeypatch, 1 << 20)
    assert 0 < calls <= 40  # the widths of `#running-req`, `#widgets` and the throughput


def test_a_field_the_reader_passes_over_is_read_around_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.5.16's `est uncap acc len: 5.35 [5.10, 5.60]` (a range with a `, ` inside, which the
    reader skips) before the fields it reads, idle lines among them: the same through both
    paths, and read in bulk."""
    rng = random.Random(4)
    lines = []
    for k in range(600):
        running = rng.choice([0, 3, 12, 120])
        est = rng.choice(["5.35 [5.10, 5.60]", "12.05 [9.10, 15.60]", "0.00 [0.00, 0.00]"])
        fields = [
            f"#running-req: {running}",
            f"#token: {running * 700}, token usage: 0.06, accept len: 4.71, accept rate: 0.47",
            "cap len: 6.20, block accept len: 5.10",
            f"est uncap acc len: {est}",
            f"cuda graph: True, gen throughput (token/s): {rng.uniform(0, 999):.2f}",
            "#queue-req: 0",
        ]
        if k % 2:  # the skipped field first: the running count's place in the line moves
            fields.insert(0, fields.pop(3))
        ts = f"2026-07-20 10:{k // 60:02d}:{k % 60:02d}"
        lines.append(f"[{ts} TP0] Decode batch, " + ", ".join(fields))
    rows = same_in_bulk(tmp_path / "dspark.log", lines, monkeypatch, (4000, 1 << 20))
    assert rows >= 600 * 3 // 4 - 12  # the busy ones (idle lines give no sample)


def test_mixed_prefill_lines_of_0_3_0_are_read_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.3.0's `Prefill batch(mixed #running-req: N).`: the running count in the tail is the
    line's first sample, then the fields'; the same through both paths, read in bulk."""
    rng = random.Random(8)
    lines = []
    for k in range(500):
        ts = f"10:{k // 60:02d}:{k % 60:02d}"
        dp = rng.choice([0, 1])
        running = rng.choice([1, 8, 17, 130])
        if rng.random() < 0.5:
            lines.append(
                f"[{ts} DP{dp} TP0] Prefill batch(mixed #running-req: {running}). #new-seq: 2, "
                f"#new-token: {rng.randrange(9999)}, #cached-token: 10, cache hit rate: "
                f"{rng.uniform(0, 99):.2f}%, #queue-req: 0"
            )
        else:
            lines.append(
                f"[{ts} DP{dp} TP0] Decode batch. #running-req: {running}, #token: 3120, token "
                f"usage: 0.00, gen throughput (token/s): {rng.uniform(0, 999):.2f}, #queue-req: 0"
            )
    rows = same_in_bulk(tmp_path / "mixed.log", lines, monkeypatch, (3000, 1 << 20))
    assert rows >= 500 - 12


def test_values_below_zero_are_read_in_bulk_once_only_tallied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HiSparse with SWA (0.5.23) may print `#full token: -12, full token usage: -0.00`.
    The reader takes no sample of a value below zero and gives a diagnostic for each of the
    first `_MAX_BAD_NOTES` of a field, then only tallies them. Lines of such values on
    every TP rank, in the 0.5.23 and the 0.4.9 SWA forms, idle ones among them, with usages
    of -0.00 and 0.00 side by side (Python's `max` keeps the first of the two, polars' the
    last): the same through both paths; past the diagnostics, read in bulk."""
    rng = random.Random(7)
    lines = []
    for k in range(400):
        ts = f"2026-10-30 15:{k // 60:02d}:{k % 60:02d}"
        running = rng.choice([0, 3, 3, 3, 17])
        full = rng.choice(["14410", "-12", "-3", "0", "-0"])
        usage = (
            rng.choice(["-0.00", "-0.01"]) if full.startswith("-") else rng.choice(["0.02", "0.00"])
        )
        swa_usage = rng.choice(["0.00", "0.11", "-0.00"])
        for rank in range(4):
            if k % 3:
                body = (
                    f"#running-req: {running}, #full token: {full}, full token usage: {usage}, "
                    f"#swa token: 3000, swa token usage: {swa_usage}, cuda graph: True, "
                    f"gen throughput (token/s): {rng.uniform(0, 999):.2f}, #queue-req: 0"
                )
            else:
                body = (
                    f"#running-req: {running}, #token: full={full}, swa=3000, token usage: "
                    f"full={usage}, swa={swa_usage}, gen throughput (token/s): 410.00, "
                    "#queue-req: 0, "
                )
            lines.append(f"[{ts} TP{rank}] Decode batch, {body}")
    path = tmp_path / "hisparse.log"
    rows = same_in_bulk(path, lines, monkeypatch, (3000, 1 << 20))
    assert rows > 150
    # -0.0 == 0.0: the signs of the values compared on their own
    signs = [
        [math.copysign(1.0, s[1]) for s in parse(path, monkeypatch, fast)[0]]
        for fast in (False, True)
    ]
    assert signs[0] == signs[1]
    assert signs[0].count(-1.0) > 50
    fed = rows_fed(monkeypatch)
    _, _, counts, _, notes, _, _ = parse(path, monkeypatch, fast=True)
    below = [n for n in notes if "impossible-value" in n]
    # of each field the first 20 (`#token: full=-12` is `#full token` too, `token usage:
    # full=-0.01` is `full token usage`), and a tally of the rest
    assert len(below) == 2 * (R._MAX_BAD_NOTES + 1), below
    assert counts["impossible-value"] > 4 * 100
    # those 40 lines and the first ones that settle the TP-rank state and the layouts
    assert len(fed) < 120, len(fed)


def test_a_log_with_a_cut_batch_line_every_fifty_lines_is_read_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ranks writing one stream cut each other's lines now and then: a batch line cut at
    any place (mid-number, mid-key, before its marker) every fifty lines or so. Each goes to
    `feed`, the rows between are decided in bulk up to it (not a whole window each time),
    and a chunk with hundreds of them is not given up to `feed`: the same as the line path,
    and only the cut lines and a few more are fed."""
    rng = random.Random(14)
    lines: list[str] = []
    cut = 0
    for k in range(6000):
        ts = _second(k)
        for rank in range(4):
            line = (
                f"[{ts} TP{rank}] Decode batch, #running-req: {rng.randint(1, 40)}, #token: "
                f"{rng.randint(0, 9999)}, token usage: {rng.random():.2f}, accept len: "
                f"{rng.uniform(1, 4):.2f}, cuda graph: True, gen throughput (token/s): "
                f"{rng.uniform(0, 999):.2f}, #queue-req: 0, "
            )
            if rng.random() < 0.025:
                line = line[: rng.randint(20, len(line) - 3)]
                cut += 1
            lines.append(line)
    assert cut > 2 * F._MAX_FEEDS  # (a chunk of them all)
    path = tmp_path / "cut.log"
    rows = same_in_bulk(path, lines, monkeypatch, (1 << 18, 1 << 24))
    assert rows > 5000
    fed = rows_fed(monkeypatch)
    decided: list[int] = []  # each segment's rows
    real_segment = F.ChunkRun._segment

    def segment(self: Any, i: int, until: int) -> Any:
        got = real_segment(self, i, until)
        decided.append(got.c - got.a)
        return got

    monkeypatch.setattr(F.ChunkRun, "_segment", segment)
    parse(path, monkeypatch, fast=True, chunk=1 << 24, window=WINDOW)
    assert len(fed) < cut + 64, (len(fed), cut)
    assert sum(decided) < 2 * len(lines), sum(decided)


def test_lines_whose_trailing_blank_was_trimmed_are_read_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.5's batch lines end in `, `; a log that an editor, a pre-commit hook or a log viewer
    trimmed ends them in `,`. Such lines on every TP rank, ending in a count, a percent, a
    flag, a pool's `swa=N`, a field not known, and a few ending in `, ,` or `,,` (which the
    reader reads otherwise): the same through both paths, and read in bulk."""
    rng = random.Random(16)
    ends = [
        lambda: f"#queue-req: {rng.randint(0, 9)},",
        lambda: f"cache hit rate: {rng.uniform(0, 99):.2f}%,",
        lambda: f"cuda graph: {rng.choice(['True', 'False'])},",
        lambda: f"#token: full={rng.randint(0, 9999)}, swa={rng.randint(0, 999)},",
        lambda: f"spec draft time: {rng.random():.2f},",
        lambda: "#queue-req: 0, ,",
        lambda: "#queue-req: 0,,",
    ]
    lines = []
    for k in range(3000):
        ts = f"2026-10-30 15:{k // 60 % 60:02d}:{k % 60:02d}"
        end = ends[k // 100 % 5]() if k % 97 else ends[5 + k % 2]()
        for rank in range(2):
            lines.append(
                f"[{ts} TP{rank}] Decode batch, #running-req: {rng.randint(0, 40)}, #token: "
                f"{rng.randint(0, 9999)}, token usage: {rng.random():.2f}, gen throughput "
                f"(token/s): {rng.uniform(0, 999):.2f}, {end}"
            )
    rows = same_in_bulk(tmp_path / "trimmed.log", lines, monkeypatch, (3000, 1 << 20))
    assert rows > 2700, rows  # (of 3000 on rank 0, a few dozen idle)
    # read by splitting at `, ` (not with the capture groups), the last value without its `,`
    for line in (lines[2], lines[202]):
        layout = F._learn(line)
        assert layout is not None
        assert layout.items is not None, line


def test_grep_over_many_files_is_read_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`grep -r` over a results tree: 120 files, each file's lines behind its path (folders
    named by words), one file after another: a layout or two for each, far more than a
    chunk used to learn or a reader used to keep. Each is learned as its file begins (in the
    chunk's preparation, the stale ones tried no more), and nearly every line is read in
    bulk."""
    rng = random.Random(17)
    lines = []
    for f in range(120):
        for k in range(40):
            ts = f"2026-10-30 {f // 60 % 24:02d}:{f % 60:02d}:{k:02d}"
            for rank in range(2):
                lines.append(
                    f"[{ts} TP{rank}] Decode batch, #running-req: "
                    f"{rng.randint(1, 40)}, #token: {rng.randint(0, 9999)}, token usage: "
                    f"{rng.random():.2f}, gen throughput (token/s): {rng.uniform(1, 999):.2f}, "
                    "#queue-req: 0, "
                )
    lines = list(variants.grep_r(lines, rng, files=120))  # each file's 80 lines
    path = tmp_path / "grep-r.log"
    rows = same_in_bulk(path, lines, monkeypatch, (1 << 17, 1 << 22))
    assert rows > 0.9 * 120 * 40, rows
    fed = rows_fed(monkeypatch)
    parse(path, monkeypatch, fast=True, chunk=1 << 22)
    assert len(fed) < 0.1 * len(lines), len(fed)


def test_fields_not_known_are_read_in_bulk_once_noted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newer version's fields (`spec draft time: 0.42`, `mode: decode`), unknown to the
    reader, on every TP rank: the reader notes each key at its first line and counts every
    occurrence; the chunk path learns the layout, feeds the line that notes a key first and
    counts the rest in bulk. A second key first met later (another layout), a key printed in
    Decode and Prefill lines, and more keys than the reader notes (`_MAX_UNKNOWN_NOTES`):
    the same through both paths, and read in bulk."""
    rng = random.Random(12)
    lines = []
    for k in range(600):
        ts = f"2026-10-30 15:{k // 60 % 60:02d}:{k % 60:02d}"
        extra = f"spec draft time: {rng.uniform(0, 2):.2f}, mode: {rng.choice(['decode', 'x'])}, "
        if k >= 300:
            extra += f"#pinned-{k // 10}: {rng.randint(0, 9)}, "  # a key every 10 lines: 30
        for rank in range(4):
            running = 0 if k % 40 == 3 else rng.randint(1, 30)
            lines.append(
                f"[{ts} TP{rank}] Decode batch, #running-req: {running}, #token: "
                f"{rng.randint(0, 9999)}, token usage: {rng.random():.2f}, {extra}gen throughput "
                f"(token/s): {rng.uniform(0, 999):.2f}, #queue-req: 0, "
            )
        if k % 7 == 0:
            lines.append(
                f"[{ts} TP0] Prefill batch, #new-seq: 1, #new-token: {rng.randint(1, 999)}, "
                f"#cached-token: 0, token usage: 0.01, spec draft time: 0.00, #running-req: 3, "
                "#queue-req: 0, "
            )
    path = tmp_path / "new-fields.log"
    rows = same_in_bulk(path, lines, monkeypatch, (3000, 1 << 20))
    assert rows > 600
    fed = rows_fed(monkeypatch)
    _, _, counts, _, notes, _, _ = parse(path, monkeypatch, fast=True)
    noted = [n for n in notes if "[unknown-field]" in n]
    assert len(noted) == R._MAX_UNKNOWN_NOTES, noted  # of 32 keys, the first 20
    assert counts["unknown-field"] == sum(
        x.count("spec draft time") + x.count("mode: ") + x.count("#pinned-") for x in lines
    )
    assert len(fed) < 150, len(fed)


@pytest.mark.parametrize(
    ("value", "bad"),
    [("-12", True), ("-3.50", True), ("-0", False), ("-00.000", False), ("-0.05", True)],
)
def test_a_field_below_zero_is_learned(value: str, bad: bool) -> None:
    line = (
        f"[2026-10-30 15:02:05 TP0] Decode batch, #running-req: 3, #full token: {value}, "
        "full token usage: -0.00, cuda graph: True, gen throughput (token/s): 410.00, "
        "#queue-req: 0"
    )
    layout = F._learn(line)
    assert layout is not None
    assert layout.bad == ((("decode", "#full token", "impossible-value"),) if bad else ())
    assert ("num_token" in [m for m, _, _ in layout.outputs]) is not bad
    assert re.fullmatch(layout.pattern, line)
    assert not re.fullmatch(layout.pattern, line.replace(value, "12" if bad else "-7"))


@pytest.mark.parametrize("seed", range(4))
def test_pd_prefill_fields_glued_by_blanks_are_read_in_bulk(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PD prefill server of 0.4.6–0.4.8 glues its last fields with a blank, not `, `
    (`#transferring-req: 1 time: 0.07 `, 0.4.8's `... input throughput (token/s): 812.50 `):
    the chunk path splits them as the reader does and reads such lines in bulk, on every
    TP rank. Among them, lines the reader reads otherwise, which are fed: two blanks, a
    field it does not know, a value with too few decimals, a value below zero, a glued pair
    that does not tile its item, one glued in a Decode line, and cut lines."""
    rng = random.Random(seed)
    tails = [
        "#transferring-req: {n} time: {x:.2f} ",
        "#transferring-req: {n} input throughput (token/s): {x:.2f} ",
        "#transferring-req: {n} time: {x:.2f}",  # nothing after the last value
    ]
    odd = [
        "#transferring-req: {n}  time: {x:.2f} ",
        "#transferring-req: {n} spec time: {x:.2f} ",
        "#transferring-req: {n} time: {x:.1f} ",
        "#transferring-req: -{n} time: {x:.2f} ",
        "#transferring-req: {n} x time: {x:.2f} ",
        "#transferring-req: {n} #queue-req: {n} ",
    ]
    tail = rng.choice(tails)
    lines = [
        "[2025-06-20 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2, "
        "disaggregation_mode='prefill')"
    ]
    for k in range(400):
        ts = f"2025-06-20 10:{k // 60 % 60:02d}:{k % 60:02d}"
        form = rng.choice(odd) if rng.random() < 0.05 else tail
        for rank in range(2):
            text = (
                f"[{ts} TP{rank}] Prefill batch. #new-seq: {rng.randint(1, 8)}, #new-token: "
                f"{rng.randint(1, 9000)}, #cached-token: {rng.randint(0, 99)}, token usage: "
                f"{rng.random():.2f}, #unbootstrapped-req: {rng.randint(0, 3)}, #queue-req: "
                f"{rng.randint(0, 9)}, " + form.format(n=rng.randint(0, 3), x=rng.uniform(0, 900))
            )
            if rng.random() < 0.01:
                text = text[: rng.randint(40, len(text) - 1)]
            lines.append(text)
        if k % 50 == 7:
            lines.append(
                f"[{ts} TP0] Decode batch. #running-req: 3, #token: 700, token usage: 0.01, "
                "gen throughput (token/s): 41.00, #queue-req: 0 time: 0.50 "
            )
    rows = same_in_bulk(tmp_path / "pd-prefill.log", lines, monkeypatch, (4000, 1 << 20))
    assert rows > 600, rows


def test_glued_fields_are_learned_only_as_the_reader_splits_them() -> None:
    head = (
        "[2025-06-20 10:01:00 TP0] Prefill batch. #new-seq: 1, #new-token: 512, #cached-token: "
        "0, token usage: 0.00, #unbootstrapped-req: 0, #queue-req: 0, "
    )
    line = head + "#transferring-req: 1 input throughput (token/s): 3021.44 "
    layout = F._learn(line)
    assert layout is not None
    outputs = {m for m, _, _ in layout.outputs}
    assert {"prefill_transfer_req", "prefill_input_throughput_tok_s"} <= outputs
    assert re.fullmatch(layout.pattern, line)
    assert not re.fullmatch(layout.pattern, line.replace("1 input", "1  input"))
    assert not re.fullmatch(layout.pattern, line.rstrip())
    for tail in (
        "#transferring-req: 1 spec input: 3021.44 ",  # a key the reader does not know
        "#transferring-req: 1 input throughput (token/s): 3021.4 ",  # a decimal short
        "#transferring-req: -1 input throughput (token/s): 3021.44 ",
        "#transferring-req: 1 input throughput (token/s):3021.44 ",  # not glued as it reads
        "#transferring-req: 1 cuda graph: True ",  # not a number
        "#transferring-req: 1 full token usage: 0.50 ",  # a pool's, which the reader sums up
    ):
        assert F._learn(head + tail) is None, tail
    decode = line.replace(head[26 : head.index("token usage")], "Decode batch. #running-req: 2, ")
    assert "Decode batch. #running-req: 2, token usage" in decode
    assert F._learn(decode) is None  # (glued fields are a prefill server's alone)


@pytest.mark.parametrize("blanks", [1, 300, 367])
def test_an_item_of_glued_fields_is_learned_only_if_every_match_stays_under_400(
    blanks: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reader splits glued fields only in an item under 400 characters; a layout is
    learned from such an item only when the widest values it matches keep it under."""
    head = (
        "Prefill batch. #new-seq: 1, #new-token: 512, #cached-token: 0, token usage: 0.00, "
        "#unbootstrapped-req: 0, #queue-req: 0, "
    )
    lines = [
        f"[2025-06-20 10:00:{k % 60:02d} TP0] {head}#transferring-req: "
        f"{1 if k < 20 else 123456}{' ' * blanks}time: 0.07 "
        for k in range(40)
    ]
    rows = same_in_bulk(tmp_path / "wide.log", lines, monkeypatch, (2000, 1 << 20))
    assert (rows > 0) is (blanks < 367)  # (300: 388 characters at the widest)


def _second(k: int) -> str:
    """The timestamp of second k of a generated log."""
    return f"2026-10-30 {k // 3600 % 24:02d}:{k // 60 % 60:02d}:{k % 60:02d}"


def _decode(rng: random.Random, lead: str, extra: str = "") -> str:
    """A Decode batch line behind `lead` (its prefix) with random values, `extra` (fields)
    before its throughput."""
    return (
        f"{lead} Decode batch, #running-req: {rng.randint(1, 40)}, #token: "
        f"{rng.randint(0, 9999)}, token usage: {rng.random():.2f}, {extra}gen throughput "
        f"(token/s): {rng.uniform(0, 999):.2f}, #queue-req: 0, "
    )


# a steady Decode batch line of second `s` (`.format(s=...)`)
_STEADY = (
    "[2026-02-11 10:00:{s:02d} TP0] Decode batch, #running-req: 3, #token: 100, token "
    "usage: 0.10, gen throughput (token/s): 10.00, #queue-req: 0, "
)


def _traceback(rng: random.Random, ts: str) -> list[str]:
    """A traceback as servers print them among batch lines: uvicorn's for a failed request
    (frames in `schedule_batch.py`, a `batch = ...` line), chained ones, one cut before its
    exception line, one holding a batch line's words in a frame's code and a blank line,
    one followed by a line `_EXC_LINE` reads as an exception."""
    frames = [
        '  File "/sgl/python/sglang/srt/entrypoints/http_server.py", line 412, in generate',
        "    ret = await tokenizer_manager.generate_request(obj, request).__anext__()",
        '  File "/sgl/python/sglang/srt/managers/schedule_batch.py", line 1050, in prepare',
        "    batch = self.get_next_batch_to_run()",
    ]
    exc = f"ValueError: The input ({rng.randint(1, 9) * 70000} tokens) is too long."
    kind = rng.randrange(6)
    out = [f"[{ts}] ERROR:    Exception in ASGI application", "Traceback (most recent call last):"]
    out += frames[: rng.choice((2, 4))]
    if kind == 1:  # chained
        out += [exc, "", "During handling of the above exception, another exception occurred:"]
        out += ["", "Traceback (most recent call last):", *frames[2:], "RuntimeError: failed"]
    elif kind == 2:  # cut before its exception line
        pass
    elif kind == 3:  # a frame's code holding a batch line's words, and a blank line
        out += ['    logger.info(f"Decode batch, #running-req: {n}, #token: 10, ")', "", exc]
    elif kind == 4:  # a line read as another exception line after it: it closes it
        out += [exc, 'INFO:     127.0.0.1:5000 - "POST /generate HTTP/1.1" 500']
    else:
        out.append(exc)
    return out


def test_tracebacks_among_batch_lines_are_read_the_same_and_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server printing a traceback for each failed request (a client sending prompts that
    are too long): the traceback's lines go to the reader's traceback, the rows between in
    bulk, the batch line that closes a traceback in bulk too, and no frame line counts as a
    batch line (`schedule_batch.py`): a chunk of them is never given up to `feed` (a log of
    uvicorn's tracebacks read 5.8× slower than without them)."""
    rng = random.Random(23)
    lines: list[str] = []
    tracebacks = 0
    for k in range(5000):
        ts = _second(k)
        for rank in range(4):
            lines.append(_decode(rng, f"[{ts} TP{rank}]", "cuda graph: True, "))
            if rng.random() < 0.05:
                lines += _traceback(rng, ts)
                tracebacks += 1
    lines += _traceback(rng, "2026-10-30 02:00:00")  # open at the end: `finish` closes it
    path = tmp_path / "tracebacks.log"
    rows = same_in_bulk(path, lines, monkeypatch, (1 << 13, 1 << 16, 1 << 24))
    assert rows >= 5000  # (of its 20,000 batch lines, the 5,000 that give samples: the
    # others are duplicate ranks)
    fed = rows_fed(monkeypatch)
    parse(path, monkeypatch, fast=True, chunk=1 << 16, window=WINDOW)
    # each traceback's first lines (rare words) and the few that settle the state: not its
    # frames, nor the line after it
    assert tracebacks > 900
    assert len(fed) < 2 * tracebacks + 100, (len(fed), tracebacks)


def test_a_traceback_in_a_paste_indented_as_a_whole_ends_at_the_next_log_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log pasted with every line indented (a Markdown code block, a notes file): a
    traceback's frames are indented further, its exception line as its first line, and the
    log's next line closes it (it took every line to the end of the file before, as one
    frame each: 3,000 batch lines lost, and the exception read as cut)."""
    rng = random.Random(5)
    lines: list[str] = []
    for k in range(3000):
        ts = _second(k)
        for rank in range(2):
            lines.append(_decode(rng, f"    [{ts} TP{rank}]"))
        if k == 1500:
            lines += [
                "    Traceback (most recent call last):",
                '      File "/sgl/python/sglang/srt/managers/scheduler.py", line 1, in f',
                "        batch = self.get_next_batch_to_run()",
                "    ValueError: boom",
            ]
    path = tmp_path / "indented.log"
    assert same_in_bulk(path, lines, monkeypatch, (1 << 13, 1 << 20)) > 0
    samples, *_, notes, _, _ = parse(path, monkeypatch, fast=False)
    after = {s[2] for s in samples if s[2] > 3006}  # (metric, value, line, ...)
    assert len(after) == 1499  # a line of samples for each second after it
    assert [n for n in notes if "traceback" in n] == [
        "indented.log:3003: error: traceback: ValueError: boom [server-error]"
    ]


def test_a_batch_line_behind_an_outer_prefix_closes_a_cut_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind an outer prefix (`server: `), a batch line right after a traceback cut before
    its exception line looks like that exception line to `_EXC_LINE` (`server:`), and the
    traceback took it: its samples were lost. A line the reader reads as a batch line is no
    traceback's line; both paths read every one, in bulk."""
    rng = random.Random(5)
    lines: list[str] = []
    for k in range(3000):
        ts = _second(k)
        if k % 2:  # a prefix of another shape too (`_other_prefix`)
            lead = f"server: {ts}.{k % 1000:03d} INFO 120984 [ TP0 scheduler.py:415]"
        else:
            lead = f"server: [{ts} TP0]"
        lines.append(_decode(rng, lead))
        if k % 100 == 50:
            lines += ["Traceback (most recent call last):", '  File "x.py", line 1, in f']
            if k % 200 == 50:
                lines.append("  " + lines[-3])  # indented: no frame either
    path = tmp_path / "prefixed.log"
    rows = same_in_bulk(path, lines, monkeypatch, (1 << 13, 1 << 20))
    assert rows > 2900
    samples, *_ = parse(path, monkeypatch, fast=False)
    batch_lines = {no for no, line in enumerate(lines, 1) if "Decode batch" in line}
    assert {s[2] for s in samples} == batch_lines


@pytest.mark.parametrize(
    "first",
    [
        "  Draft: 1.02 ms/cyc (9.8%)",  # a frame to the traceback
        "Draft: 1.02 ms/cyc (9.8%)",  # its exception line (`_EXC_LINE`)
        "server: [2026-02-11 10:00:00 TP0] Draft (2 steps): 1.02 ms/cyc (9.8%)",
    ],
)
def test_a_phase_run_whose_first_line_an_open_traceback_takes_reads_the_same(
    first: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A traceback still waiting for its exception line takes a phase run's first line and
    the next closes it: the rest of the run is read by the reader, not skipped by the bulk
    path, which takes planned runs only from their first line (found by a reviewer)."""
    last = first.replace("Draft (2 steps)", "Target verify").replace("Draft", "Target verify")
    lines: list[str] = []
    for k in range(40):
        lines += [_STEADY.format(s=k % 60), _STEADY.format(s=k % 60).replace("TP0", "TP1")]
        if k % 10 == 5:
            lines += ["Traceback (most recent call last):", first, last.replace("1.02", "9.31")]
    path = tmp_path / "phase.log"
    path.write_text("\n".join(lines) + "\n")
    for chunk in (300, 4096, 1 << 20):
        assert_same(path, monkeypatch, chunk)


def test_an_indented_paste_of_a_prefixed_traceback_reads_its_exception_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SGLang's own form, `[ts TP0] Scheduler hit an exception: Traceback ...`, pasted with
    every line indented: the traceback's blanks are its first line's, so its exception line
    is read and the lines after it are not its frames (an access line is counted)."""
    lines = [
        "    [2026-02-11 10:00:00 TP0] Decode batch, #running-req: 3, #token: 100, token "
        "usage: 0.10, gen throughput (token/s): 10.00, #queue-req: 0, ",
        "    [2026-02-11 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent "
        "call last):",
        '      File "/sgl/python/sglang/srt/managers/scheduler.py", line 1, in run',
        "        self.event_loop_overlap()",
        "    ValueError: boom",
        '    INFO:     127.0.0.1:5000 - "POST /generate HTTP/1.1" 200 OK',
    ]
    path = tmp_path / "indented.log"
    path.write_text("\n".join(lines) + "\n")
    for chunk in (300, 1 << 20):
        assert_same(path, monkeypatch, chunk)
    _, _, counts, _, notes, _, _ = parse(path, monkeypatch, fast=False)
    assert counts.get("http-access") == 1
    assert [n for n in notes if "server-error" in n] == [
        "indented.log:2: error: Scheduler hit an exception: ValueError: boom [server-error]"
    ]


def test_a_phase_block_closed_by_a_cut_line_glued_to_the_next_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cut line glued to the next (`[ts TP0] Dec[ts TP1] Decode batch, ...`) right after
    a phase block: the reader splits it, and its cut head leaves the block incomplete (no
    totals, a warning). The phase plan leaves such a run to the reader (found by a
    reviewer: the chunk path gave the totals)."""
    lines: list[str] = []
    for k in range(40):
        lines.append(_STEADY.format(s=k))
        lines.append(f"[2026-02-11 10:00:{k:02d} TP0] Draft (2 steps):   0.71 ms/cyc  (  2.4%)")
        lines.append(f"[2026-02-11 10:00:{k:02d} TP0] Target verify:     28.78 ms/cyc  ( 96.7%)")
        if k % 10 == 5:
            glued = _STEADY.format(s=k).replace("TP0", "TP1")
            lines.append(f"[2026-02-11 10:00:{k:02d} TP0] Dec{glued}")
    path = tmp_path / "glued.log"
    path.write_text("\n".join(lines) + "\n")
    for chunk in (300, 4096, 1 << 20):
        assert_same(path, monkeypatch, chunk)
    *_, notes, _, _ = parse(path, monkeypatch, fast=True)
    assert sum("is incomplete" in n for n in notes) == 4


def test_a_phase_run_followed_by_a_benchmark_runs_own_line_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below a benchmark run's reader (`benchmark_args=...` printed into the log), a line
    of the run's own never reaches the server reader: it does not close the phase block
    before it, which the bulk path closed there (the same samples in another order; found
    by a reviewer). Such a chunk is read line by line."""
    lines = [_STEADY.format(s=k) for k in range(20)]
    lines.append("benchmark_args=Namespace(backend='sglang-oai', num_prompts=32)")
    for k in range(20, 40):
        lines.append(_STEADY.format(s=k))
        lines.append(f"  [2026-02-11 10:00:{k:02d} TP1] Draft (2 steps): 12.13 ms/cyc (62.9%)")
        if k == 30:
            lines.append("Benchmark duration (s):                  16.58     ")
    path = tmp_path / "bench.log"
    path.write_text("\n".join(lines) + "\n")
    for chunk in (300, 4096, 1 << 20):
        assert_same(path, monkeypatch, chunk)
