"""The Prometheus reader's bulk path (issue 22) gives exactly what feeding every line gives.

Every comparison parses one file twice, the bulk path off and forced on (even for tiny files,
with tiny chunks so chunk borders fall everywhere), and compares the samples in order (every
field), the other records in order (a run of scrapes gives its samples as one batch, after
any setting a scrape among them gives: the table and the settings are what they were), the
record counts and the notes. The files are the fixtures, scrapes made here with
the lines a hand, a paste or another exporter puts among them, and the benchmarks' shape.
Speed is measured in benchmarks/, never here.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionlens import _lines
from sessionlens.model import Sample
from sessionlens.parsers import prometheus as P
from sessionlens.parsers.base import ParseContext

FIXTURES = sorted(
    p
    for p in (Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "prometheus").iterdir()
    if p.is_file() and not p.name.endswith((".expected.csv", ".diag.txt"))
)


RUN_LINES = 1


class Bulk:
    """Counts the lines the bulk path read in runs of scrapes laid out alike (so a test
    proves it ran)."""

    lines = 0


@pytest.fixture(autouse=True)
def _count_bulk(monkeypatch: pytest.MonkeyPatch) -> None:
    real = P._Run.__init__

    def counting(
        self: P._Run, reader: Any, template: Any, lines: Any, start: int, m: int, stamps: Any
    ) -> None:
        Bulk.lines += m * template.n
        real(self, reader, template, lines, start, m, stamps)

    monkeypatch.setattr(P._Run, "__init__", counting)
    Bulk.lines = 0


def _key(rec: object) -> object:
    if isinstance(rec, Sample):
        v = "nan" if math.isnan(rec.value) else rec.value
        return ("sample", rec.metric, v, rec.line, rec.block, rec.run, rec.rank, rec.ts)
    return rec


def parse(path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool, chunk: int) -> tuple[Any, ...]:
    monkeypatch.setattr(P, "FAST", fast)
    monkeypatch.setattr(P, "FAST_CHUNK", chunk)
    monkeypatch.setattr(P, "FAST_MIN_BYTES", 0)
    monkeypatch.setattr(P, "_RUN_LINES", RUN_LINES)  # any run is read in bulk (unless a
    # test holds the reader's own threshold)
    src = _lines.read(path, display=path.name)
    ctx = ParseContext(file=path.name)
    records = [_key(r) for r in P.parse(src, ctx)]
    samples = [r for r in records if isinstance(r, tuple) and r[0] == "sample"]
    others = [r for r in records if not (isinstance(r, tuple) and r[0] == "sample")]
    notes = [str(d) for d in [*src.notes, *ctx.diagnostics]]
    return samples, others, dict(ctx.counts), notes, src.n_lines


def _written(tmp_path: Path, lines: list[str]) -> Path:
    """`m.prom` holding these lines."""
    path = tmp_path / "m.prom"
    path.write_text("\n".join(lines) + "\n")
    return path


def _scrape_file(tmp_path: Path, n: int, scrape: Callable[[int], list[str]]) -> Path:
    """`m.prom` holding `n` scrapes, the lines of the k-th `scrape(k)`."""
    return _written(tmp_path, [line for k in range(n) for line in scrape(k)])


def assert_same(path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> int:
    """Both paths agree on the file; how many lines the bulk path read in runs."""
    slow = parse(path, monkeypatch, fast=False, chunk=chunk)
    Bulk.lines = 0
    fast = parse(path, monkeypatch, fast=True, chunk=chunk)
    names = ("samples", "other records", "counts", "notes", "lines")
    for name, a, b in zip(names, slow, fast, strict=True):
        assert b == a, f"{path.name}, chunk {chunk}: {name} differ"
    return Bulk.lines


@pytest.mark.parametrize("chunk", [300, 1 << 20])
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_the_bulk_path_gives_what_the_line_path_gives_on_every_fixture(
    path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_runs = assert_same(path, monkeypatch, chunk)
    _, _, counts, _, _ = parse(path, monkeypatch, fast=True, chunk=chunk)
    if chunk > path.stat().st_size and counts["scrape"] >= 3:
        assert in_runs > 0  # scrapes laid out alike were read in bulk


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_chunks_split_ahead_and_chunks_read_by_line_keep_their_order(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks are split on a worker thread ahead of the one read, and a chunk too small
    for the bulk path is read line by line: the chunks split ahead are read first, in line
    order, and both paths agree (chunks of 300 bytes, ending at lines: some under 250)."""
    split = 0
    real = P._split

    def counting(chunk: _lines.Chunk) -> Any:
        nonlocal split
        split += 1
        return real(chunk)

    monkeypatch.setattr(P, "_split", counting)
    slow = parse(path, monkeypatch, fast=False, chunk=300)
    split = 0
    fast = parse(path, monkeypatch, fast=True, chunk=300)
    monkeypatch.setattr(P, "FAST_MIN_BYTES", 250)  # (after `parse` set it to 0)
    src = _lines.read(path, display=path.name)
    ctx = ParseContext(file=path.name)
    split = 0
    mixed = [_key(r) for r in P.parse(src, ctx)]
    sizes = [
        len(c.data)
        for c in _lines.read(path, display=path.name).chunks(300)
        if isinstance(c, _lines.Chunk)
    ]
    assert any(n < 250 for n in sizes)  # both kinds of chunk
    assert any(n >= 250 for n in sizes)
    assert split == sum(n >= 250 for n in sizes)  # the bulk path's chunks, each split once
    assert fast == slow
    assert [r for r in mixed if isinstance(r, tuple) and r[0] == "sample"] == slow[0]
    assert [str(d) for d in [*src.notes, *ctx.diagnostics]] == slow[3]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.from_regex(P._NUMBER_RX, fullmatch=True), min_size=1, max_size=40))
def test_a_chunks_last_numbers_are_read_as_python_reads_them(numbers: list[str]) -> None:
    """The numbers ending a chunk's lines, read as the chunk is split (`_split`, on the
    worker thread), are what Python's `float` reads of each (NaN where a line ends in
    none), and none is left unread."""
    text = "".join(f'vllm:x{{engine="0"}} {n}\n# HELP vllm:x a line without one\n' for n in numbers)
    data = text.encode() * (P.FAST_MIN_BYTES // len(text) + 1)
    split = P._split(_lines.Chunk(1, data))
    assert split is not None
    want = [float(n) for n in numbers]
    got = split.values[: 2 * len(numbers)].tolist()
    assert not split.unread.any()
    assert [math.isnan(v) for v in got[1::2]] == [True] * len(numbers)
    assert [str(v) for v in got[::2]] == [str(v) for v in want]


# Lines among scrapes: a paste, a hand, another exporter, a cut. Each either reads as a plain
# series line in bulk or goes to `feed`; the two paths must not tell them apart.
_ODD = [
    "",
    "   ",
    "# EOF",
    "# eof",
    "# HELP vllm:num_requests_running scrape this",
    "#HELP vllm:num_requests_running no space",
    "  # HELP vllm:num_requests_running indented",
    "# TYPE vllm:num_requests_running counter",  # the kind changes mid-file
    "# TYPE vllm:num_requests_running gauge",
    "# TYPE vllm:kv_cache_usage_perc counter",
    "# TYPE vllm:kv_cache_usage_perc gauge",
    "# scrape",
    "## scrape: 1772442999",
    'vllm:num_requests_running{engine="0"} NaN',
    'vllm:num_requests_running{engine="0"} +Inf',
    'vllm:num_requests_running{engine="0"} -3',
    'vllm:num_requests_running{engine="0"} 7.',
    'vllm:num_requests_running{engine="0"} .5',
    'vllm:num_requests_running{engine="0"} 1e3',
    'vllm:num_requests_running{engine="0"} \u0661\u0662',  # Arabic-Indic digits: `float` reads them
    'vllm:num_requests_running{engine="0"} 4 1772443000000',  # with a timestamp
    'vllm:num_requests_running{engine="0"}  4',
    'vllm:num_requests_running{engine="0"}\t4',
    'vllm:num_requests_running{engine="0"} 4 ',
    ' vllm:num_requests_running{engine="0"} 4',
    "vllm:num_requests_running{} 5",
    "vllm:num_requests_running 6",
    "vllm:num_requests_running{engine=0} 6",  # labels that do not parse
    'vllm:num_requests_running{engine="0",} 6',
    'vllm:num_requests_running{engine="0", model_name="m"} 6',
    'vllm:num_requests_running{model_name="a \\"}\\" b",engine="0"} 8',
    'vllm:num_requests_running{engine="0"} 4x',
    'python_gc_objects_collected_total{generation="0"} 3.0',
    "process_start_time_seconds 1772442000.5",
    'sglang:num_running_reqs{tp_rank="1",model_name="m"} 9.0',
    'sglang:num_running_reqs{tp_rank="0",model_name="m"} 8.0',
    'vllm:generation_tokens_total{engine="0"} 12',  # a counter that went down
    'vllm:kv_cache_usage_perc{engine="1"} 0.25',
]


def _scrapes(rng: random.Random, n: int, odd: float) -> str:
    """`n` scrapes of two engines' series, `# scrape` lines or none (a series seen again
    starts the next scrape), odd lines put in here and there."""
    out: list[str] = []
    gen, drafts, acc = [100.0, 200.0], [10.0, 20.0], [5.0, 9.0]
    marked = rng.random() < 0.7
    for k in range(n):
        if marked:
            out.append(f"# scrape 2026-03-02T09:{15 + k // 60:02d}:{k % 60:02d}+00:00")
        out.append("# HELP vllm:num_requests_running Requests running.")
        out.append("# TYPE vllm:num_requests_running gauge")
        for e in range(2):
            gen[e] += rng.randint(0, 500)
            drafts[e] += rng.randint(0, 50)
            acc[e] += rng.randint(0, 40)
            out.append(
                f'vllm:num_requests_running{{engine="{e}",model_name="m"}} {rng.randint(0, 9)}.0'
            )
            out.append(f'vllm:kv_cache_usage_perc{{engine="{e}",model_name="m"}} {rng.random()!r}')
            out.append(f'vllm:generation_tokens_total{{engine="{e}",model_name="m"}} {gen[e]!r}')
            out.append(
                f'vllm:spec_decode_num_drafts_total{{engine="{e}",model_name="m"}} {drafts[e]}'
            )
            out.append(
                f'vllm:spec_decode_num_accepted_tokens_total{{engine="{e}",model_name="m"}} {acc[e]:.6e}'
            )
            for le in ("0.1", "1.0", "+Inf"):
                out.append(
                    f'vllm:time_to_first_token_seconds_bucket{{engine="{e}",le="{le}",model_name="m"}} {k}'
                )
            out.append(
                f'vllm:time_to_first_token_seconds_sum{{engine="{e}",model_name="m"}} {k * 0.3!r}'
            )
            out.append(f'vllm:time_to_first_token_seconds_count{{engine="{e}",model_name="m"}} {k}')
            if rng.random() < odd:
                out.insert(rng.randrange(len(out) + 1), rng.choice(_ODD))
    text = "\n".join(out) + "\n"
    cut = rng.random()
    if cut < 0.3:
        text = text[: -rng.randint(2, 30)]  # a scrape being written: the last line cut
    elif cut < 0.4:
        text = text.rstrip("\n")
    return text


@pytest.mark.parametrize("seed", range(40))
def test_scrapes_with_odd_lines_read_the_same(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    path = tmp_path / "metrics.prom"
    odd = rng.choice([0.0, 0.05, 0.3])
    path.write_text(_scrapes(rng, rng.randint(3, 40), odd))
    assert_same(path, monkeypatch, rng.randint(64, 2048))
    in_runs = assert_same(path, monkeypatch, 1 << 20)
    if odd == 0:
        assert in_runs > 0  # scrapes laid out alike were read in bulk


def test_a_type_line_that_changes_a_kind_is_heeded_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a series read as a gauge, then declared a counter: from then on a drop is a restart
    # (what the reader keeps of a series is worked out again after the `# TYPE` line)
    lines = []
    for k, running in enumerate((5, 6, 7, 3)):
        lines.append(f"# scrape 2026-03-02T09:15:{k * 10:02d}+00:00")
        if k == 2:
            lines.append("# TYPE vllm:num_requests_running counter")
        lines.append(f'vllm:num_requests_running{{engine="0"}} {running}')
        lines.append(f'vllm:generation_tokens_total{{engine="0"}} {100 * (k + 1)}')
    path = _written(tmp_path, lines)
    assert_same(path, monkeypatch, 1 << 20)
    _, _, _, notes, _ = parse(path, monkeypatch, fast=True, chunk=1 << 20)
    assert [n for n in notes if "counter-reset" in n] == [
        "m.prom:11: info: counters went down (vllm:num_requests_running 7 -> 3): the server "
        "restarted; this scrape starts a new launch and its counters set the new baseline "
        "[counter-reset]"
    ]


def test_the_benchmarks_shape_reads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import gen_shapes

    path = tmp_path / "metrics.prom"
    gen_shapes.generate("prometheus", path, 700 << 10, seed=3, restart_at=0.5)
    lines = path.read_bytes().count(b"\n")
    for chunk, share in ((96 << 10, 0.6), (1 << 20, 0.85)):
        if chunk > 96 << 10:  # the reader's own threshold: runs of 1024 lines or more
            monkeypatch.setattr(sys.modules[__name__], "RUN_LINES", P._RUN_LINES)
        in_runs = assert_same(path, monkeypatch, chunk)
        # all but about a scrape a chunk (one is cut by the chunk's end), and those around
        # the restart (a new layout is learned from two scrapes)
        assert in_runs > share * lines


@pytest.mark.parametrize(
    ("series", "before", "after"),
    [
        ("process_start_time_seconds", "1772440000.0", "1772443000.0"),  # a later start
        ('vllm:prompt_tokens_created{engine="0"}', "1772440000.0", "1772443000.0"),
        ('vllm:generation_tokens_total{engine="0"}', "900.0", "40.0"),  # a counter went down
    ],
)
def test_a_restart_is_what_went_down_or_a_start_time_that_changed(
    series: str, before: str, after: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = []
    for k, value in enumerate((before, before, after)):
        lines.append(f"# scrape 2026-03-02T09:15:{k * 10:02d}+00:00")
        lines.append(f"{series} {value}")
        if "generation" not in series:
            lines.append(f'vllm:generation_tokens_total{{engine="0"}} {100 * (k + 1)}')
    path = _written(tmp_path, lines)
    assert_same(path, monkeypatch, 1 << 20)
    _, _, _, notes, _ = parse(path, monkeypatch, fast=True, chunk=1 << 20)
    name = series.split("{")[0]
    assert [n for n in notes if "counter-reset" in n] == [
        f"m.prom:{5 if 'generation' in series else 7}: info: counters went down ({name} "
        f"{float(before):g} -> {float(after):g}): the server restarted; this scrape starts a "
        "new launch and its counters set the new baseline [counter-reset]"
    ]


@pytest.mark.parametrize("stray", [True, False])
def test_a_run_of_scrapes_heeds_a_type_line_that_changed_a_kind_before_it(
    stray: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each scrape declares `num_requests_running` a gauge, whose value goes down every
    # other scrape; a stray `# TYPE ... counter` line between two scrapes makes it a counter
    # until the next scrape's own `# TYPE` line. Read as a counter at a scrape's end, it
    # would restart the server: the bulk path must not read a run of scrapes under a kind
    # its own `# TYPE` lines would change.
    path = _scrape_file(
        tmp_path,
        24,
        lambda k: [
            f"# scrape 2026-03-02T09:{15 + k // 6:02d}:{k % 6 * 10:02d}+00:00",
            "# TYPE vllm:num_requests_running gauge",
            f'vllm:num_requests_running{{engine="0"}} {5 - k % 2}',
            f'vllm:generation_tokens_total{{engine="0"}} {100 * (k + 1)}',
            *(["# TYPE vllm:num_requests_running counter"] if stray and k == 9 else []),
        ],
    )
    assert assert_same(path, monkeypatch, 1 << 20) > 0
    _, _, counts, notes, _ = parse(path, monkeypatch, fast=True, chunk=1 << 20)
    assert counts["scrape"] == 24
    resets = [n for n in notes if "counter-reset" in n]
    # the stray line's kind holds only for the scrape it ends (the 10th, from line 37),
    # whose value went down from the 9th's: that one restarts, no other
    assert resets == (
        [
            "m.prom:37: info: counters went down (vllm:num_requests_running 5 -> 4): the "
            "server restarted; this scrape starts a new launch and its counters set the new "
            "baseline [counter-reset]"
        ]
        if stray
        else []
    )


def _steady(rng: random.Random, n: int) -> str:
    """`n` scrapes laid out alike (what a server's `/metrics` gives scrape after scrape),
    with what varies among exporters and sessions drawn at random: `# scrape` lines (an ISO
    time, epoch seconds, none, a time that stands still) or none, `# EOF` lines, SGLang TP
    ranks, engines, per-position counters, histograms whose count stays 0, an acceptance
    gauge at 0, other exporters' series, blank lines, exemplars (with a time or not),
    timestamps after the values (`/federate`'s milliseconds, seconds, or numbers that read as
    no time, on the first series line or on all); and now and then what the reader must see
    for itself: a gauge below zero, a counter that goes down, a start time that changes, a
    series that appears."""
    marker = rng.choice(["iso", "epoch", "bare", "still", None])
    eof = rng.random() < 0.3
    blank = rng.random() < 0.3  # a blank line after each scrape
    # OpenMetrics exemplars on the buckets, their trace and time moving or not
    exemplar = rng.choice(["", "", "", "id", "time", "still"])
    # a timestamp after each series line's value: milliseconds, seconds, a number that is no
    # time (the reader holds it until a later line's reads as one), on the first line only,
    # or in some scrapes only (`/federate` and `/metrics` taken in turn)
    stamped = rng.choice([None, None, "ms", "s", "odd", "first", "some"])
    some = [rng.random() < 0.4 for _ in range(n)]
    sglang = rng.random() < 0.4
    ranks = [f'tp_rank="{r}"' for r in range(rng.randint(1, 3))] if sglang else []
    engines = [f'engine="{e}"' for e in range(rng.randint(1, 3))] if not sglang else []
    labels = ranks or engines
    counters = {lab: [0.0] * 8 for lab in labels}
    start = 1772440000.0
    extra = False
    out: list[str] = []

    def tail(k: int) -> str:
        if exemplar == "id":
            return f' # {{trace_id="{rng.getrandbits(64):016x}"}} 0.05'
        if exemplar == "time":
            return f' # {{trace_id="{rng.randint(0, 9)}"}} {rng.random()!r} {1772442000 + k}.25'
        return ' # {trace_id="7"} 0.05' if exemplar == "still" else ""

    def ts(k: int, line: str) -> str:
        ms = 1772442000000 + 5000 * k + rng.randint(0, 999)
        if (stamped == "ms" or (stamped == "first" and line.startswith("process_"))) or (
            stamped == "some" and some[k]
        ):
            return f"{line} {ms}"
        if stamped == "s":
            return f"{line} {ms / 1000!r}"
        if stamped == "odd":  # the first line's no time (too few digits), the rest are
            return f"{line} {k if line.startswith('process_') else ms}"
        return line

    for k in range(n):
        if marker == "iso":
            out.append(f"# scrape 2026-03-02T{9 + k // 3600:02d}:{k // 60 % 60:02d}:{k % 60:02d}Z")
        elif marker == "epoch":
            out.append(f"# scrape {1772442000 + 5 * k}")
        elif marker == "bare":
            out.append("# scrape")
        elif marker == "still":
            out.append(f"# scrape {1772442000 + 5 * (k // 2)}")
        if rng.random() < 0.03:
            start += 100.0  # a restart that shows only in the start time
        out.append("# HELP process_start_time_seconds Start time.")
        out.append("# TYPE process_start_time_seconds gauge")
        out.append(ts(k, f"process_start_time_seconds {start!r}"))
        out.append(f'python_gc_objects_collected_total{{generation="0"}} {rng.randint(0, 9)}.0')
        if rng.random() < 0.02:
            extra = True  # a new series from here on: another layout
        for lab in labels:
            c = counters[lab]
            if rng.random() < 0.02:
                c[:] = [0.0] * 8  # counters from zero: a restart
            for j in range(8):
                c[j] += rng.choice([0, 0, rng.randint(1, 400)])
            lab2 = lab + ',model_name="m"'
            if sglang:
                out.append(f"sglang:num_running_reqs{{{lab2}}} {rng.randint(0, 9)}.0")
                usage = -0.5 if rng.random() < 0.02 else rng.random()
                out.append(f"sglang:token_usage{{{lab2}}} {usage!r}")
                acc = rng.choice([0.0, 0.0, rng.uniform(1, 4)])
                out.append(f"sglang:spec_accept_length{{{lab2}}} {acc!r}")
                out.append(ts(k, f"sglang:generation_tokens_total{{{lab2}}} {c[0]!r}"))
                out.append(f"sglang:num_requests_total{{{lab2}}} {c[1]}")
                out.append(f"sglang:time_to_first_token_seconds_sum{{{lab2}}} {c[2] * 0.01!r}")
                out.append(f"sglang:time_to_first_token_seconds_count{{{lab2}}} {c[3]}")
                if extra:
                    out.append(f"sglang:num_queue_reqs{{{lab2}}} 1.0")
            else:
                out.append(f"vllm:num_requests_running{{{lab2}}} {rng.randint(0, 9)}.0")
                usage = -0.5 if rng.random() < 0.02 else rng.random()
                out.append(f"vllm:kv_cache_usage_perc{{{lab2}}} {usage!r}")
                out.append(ts(k, f"vllm:generation_tokens_total{{{lab2}}} {c[0]!r}"))
                out.append(ts(k, f"vllm:prompt_tokens_total{{{lab2}}} {c[1]}"))
                out.append(f"vllm:spec_decode_num_drafts_total{{{lab2}}} {c[2]}")
                out.append(f"vllm:spec_decode_num_draft_tokens_total{{{lab2}}} {c[2] * 3}")
                out.append(f"vllm:spec_decode_num_accepted_tokens_total{{{lab2}}} {c[4]}")
                for pos in range(3):
                    out.append(
                        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{lab2},position="{pos}"}} {c[4] // (pos + 1)}'
                    )
                out.append(f"vllm:prefix_cache_queries_total{{{lab2}}} {c[5] * 2}")
                out.append(f"vllm:prefix_cache_hits_total{{{lab2}}} {c[5]}")
                for base in ("inter_token_latency", "time_per_output_token"):
                    for le in ("0.1", "+Inf"):
                        out.append(
                            ts(k, f'vllm:{base}_seconds_bucket{{{lab2},le="{le}"}} {c[6]}')
                            + tail(k)
                        )
                    out.append(ts(k, f"vllm:{base}_seconds_sum{{{lab2}}} {c[6] * 0.02!r}"))
                    count = c[6] if base == "time_per_output_token" or k % 3 else 0.0
                    out.append(f"vllm:{base}_seconds_count{{{lab2}}} {count}")
                for reason, share in (("stop", 0.1), ("length", 0.3)):
                    # a sum over labels: summed in the reader's order (floats that round)
                    out.append(
                        f'vllm:request_success_total{{{lab2},finished_reason="{reason}"}} '
                        f"{c[7] * share!r}"
                    )
                if extra:
                    out.append(f"vllm:num_requests_waiting{{{lab2}}} 2.0")
        if rng.random() < 0.02:  # a series line without its number, as a scrape's other lines
            out[-1] = out[-1].rsplit(" ", 1)[0]
        if blank:
            out.append("")
        if eof:
            out.append("# EOF")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("seed", range(60))
def test_runs_of_scrapes_laid_out_alike_read_the_same(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    path = tmp_path / "metrics.prom"
    path.write_text(_steady(rng, rng.randint(8, 80)))
    # read in bulk whatever the exemplars and timestamps (a line's shape holds neither)
    assert assert_same(path, monkeypatch, 1 << 20) > 0
    assert_same(path, monkeypatch, rng.randint(2048, 16384))


@pytest.mark.parametrize(
    ("label", "value"),
    [
        ("m 5 # {x", lambda k: k % 4 + 6),  # the label's number never the value
        ("queue 0 # {x}", lambda k: 0 if k < 15 else 3),  # the value at first, then not
    ],
)
def test_a_label_that_holds_what_an_exemplar_starts_with_is_read_as_the_reader_reads_it(
    label: str, value: Callable[[int], int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ` # {` inside a label's value, a number before it: what the lines are split by (from
    # their end, an exemplar cut at the first ` # {`) finds that number, not the value; no
    # layout is learned from such a line, even where the two are equal
    path = _scrape_file(
        tmp_path,
        30,
        lambda k: [
            f"# scrape 2026-03-02T09:15:{k:02d}+00:00",
            f'vllm:num_requests_running{{engine="0",model_name="{label}"}} {value(k)}',
            f'vllm:generation_tokens_total{{engine="0",model_name="{label}"}} {100 * k}',
        ],
    )
    assert_same(path, monkeypatch, 1 << 20)
    samples, _, _, _, _ = parse(path, monkeypatch, fast=True, chunk=1 << 20)
    running = [s[2] for s in samples if s[1] == "running_req"]
    assert running == [float(value(k)) for k in range(30)]


def test_an_exporter_that_drops_a_number_in_every_scrape_is_said_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the same series without its number in every scrape: blocks laid out alike, but the
    # reader says each such line (`unparsed-line`), so no run may take them in silence
    path = _scrape_file(
        tmp_path,
        30,
        lambda k: [
            f"# scrape 2026-03-02T09:15:{k:02d}+00:00",
            f'vllm:num_requests_running{{engine="0"}} {k % 5}.0',
            'vllm:num_requests_waiting{engine="0"}',
            f'vllm:generation_tokens_total{{engine="0"}} {100 * (k + 1)}',
        ],
    )
    assert_same(path, monkeypatch, 1 << 20)
    _, _, _, notes, _ = parse(path, monkeypatch, fast=True, chunk=1 << 20)
    assert sum("unparsed-line" in n for n in notes) == 30


def test_a_histogram_count_past_the_float_range_gives_what_the_reader_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a count printed as 1e400 reads as inf; inf - inf is NaN, and the reader's
    # `count <= 0` is false for NaN: it gives a NaN mean (the bulk path must, too)
    path = _scrape_file(
        tmp_path,
        12,
        lambda k: [
            f"# scrape 2026-03-02T09:15:{k * 5:02d}Z",
            f'vllm:inter_token_latency_seconds_sum{{engine="0"}} {0.5 * k!r}',
            'vllm:inter_token_latency_seconds_count{engine="0"} 1e400',
            f'vllm:generation_tokens_total{{engine="0"}} {100 * (k + 1)}',
        ],
    )
    assert assert_same(path, monkeypatch, 1 << 20) > 0
    samples, _, _, _, _ = parse(path, monkeypatch, fast=True, chunk=1 << 20)
    assert [s[2] for s in samples if s[1] == "itl_ms_mean"] == ["nan"] * 11
