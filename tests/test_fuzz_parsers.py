"""Property tests for every parser on hostile input (issue 8, item 1), derandomised in CI.

Each format fixture is mixed with arbitrary bytes and lines (nothing raises, every record is
well-formed), interleaved with noise between records (no sample is lost or added), and cut at
any byte, also after noise or followed by a crashed writer's garbage (only true samples).
Samples compare as (metric, value) multisets: line numbers and block indices may shift.
"""

from __future__ import annotations

import gzip
import math
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessionlens import metrics
from sessionlens.diagnostics import CODES, LEVEL_ORDER
from sessionlens.model import ParseResult
from sessionlens.parsers import PARSERS, parse_file, parse_text
from tests.conftest import ROOT
from tests.fixture_cases import cases, parse_case

Key = tuple[str, float | str]

# deadline off: a parse is milliseconds, but a cold import or a busy CI machine is not.
# SESSIONLENS_FUZZ_SCALE multiplies the examples for a longer campaign (default 1).
_SCALE = max(1, int(os.environ.get("SESSIONLENS_FUZZ_SCALE", "1")))
FAST = settings(
    max_examples=12 * _SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
WIDE = settings(
    max_examples=150 * _SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


class Fixture:
    """A fixture's raw text, its format, its sample multiset and its record structure."""

    def __init__(self, path: Path) -> None:
        raw = path.read_bytes()
        self.path = path
        self.gzipped = raw[:2] == b"\x1f\x8b"
        self.raw = gzip.decompress(raw) if self.gzipped else raw
        self.name = path.name.removesuffix(".gz")
        full = parse_case(path)
        fid = full.sources[0].format
        assert fid is not None
        self.fid = fid
        self.truth = multiset(full)
        assert self.truth, f"{path.name}: a fixture without samples proves nothing here"
        self.text = self.raw.decode("utf-8", "replace")
        self.lines = self.text.split("\n")
        self.safe_gaps = _safe_gaps(full, self.lines, self.raw.endswith(b"\n"))

    def parse(self, text: str, pinned: bool = True) -> ParseResult:
        return parse_text(text, format=self.fid if pinned else None, path=self.name)


def multiset(result: ParseResult) -> Counter[Key]:
    return Counter(
        (m, "nan" if math.isnan(v) else v)
        for m, v in zip(result.columns.metric, result.columns.value, strict=True)
    )


def _safe_gaps(full: ParseResult, lines: list[str], ends_with_newline: bool) -> list[int]:
    """Gaps between records, where noise cannot legitimately change what a block means.

    Gap k sits between line k and line k + 1 (gap 0: before the first line). A gap is NOT
    safe when it lies inside a block (from its start line to its last sample line, where a
    foreign line ends the block by the format rules), inside a Markdown table (header,
    separator and rows are one structure), or just before a cut last line (the cut record
    may belong to a structure still open, e.g. a phase block that the cut leaves incomplete).
    """
    n = len(lines)
    spans: dict[int, list[int]] = {}
    for line, block in zip(full.columns.line, full.columns.block, strict=True):
        if block is not None:
            spans.setdefault(block, []).append(line)
    starts = {b.block: b.line for b in full.sources[0].blocks}
    inside: set[int] = set()
    for block, found in spans.items():
        first = min(found + ([starts[block]] if starts.get(block) else []))
        inside.update(range(first, max(found)))
    for k in range(1, n):
        if lines[k - 1].lstrip().startswith("|") and lines[k].lstrip().startswith("|"):
            inside.add(k)
    if not ends_with_newline:
        inside.add(n - 1)
    return [k for k in range(n) if k not in inside]


def _passed_over(path: Path) -> bool:
    """A fixture its parser recognises and says it does not read (AIPerf's per-request
    records: `no-samples` at the info level, from the parser): no samples to fuzz."""
    result = parse_case(path)
    return result.samples.height == 0 and any(
        d.code == "no-samples" and d.level == "info" for d in result.diagnostics
    )


FIXTURES = [Fixture(p) for p in cases() if not _passed_over(p)]
IDS = [f"{f.path.parent.name}/{f.path.name}" for f in FIXTURES]


def check_records(result: ParseResult) -> None:
    """What every parse must give, whatever the input: well-formed records, nothing else."""
    info = result.sources[0]
    assert info.format is None or info.format in PARSERS
    for metric in set(result.columns.metric):
        assert metrics.is_known(metric), f"unregistered metric {metric!r}"
    for line in result.columns.line:
        assert 1 <= line <= max(info.lines, 1)
    for block in result.columns.block:
        assert block is None or block >= 0
    for value in result.columns.value:
        assert isinstance(value, float)
    for d in result.diagnostics:
        assert d.code in CODES, f"code {d.code!r} is not in the catalog"
        assert d.level in LEVEL_ORDER
        assert "\n" not in str(d), f"diagnostic spans lines: {d!s}"
        assert "\r" not in str(d), f"diagnostic holds a carriage return: {d!s}"


# ---------------------------------------------------------------- noise

_WORDS = st.text(
    # printable junk with no digit and no ':' — it cannot look like a field of any format
    alphabet=st.sampled_from(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .,;!?()/_'\"-=+*#<>[]{}~"
    ),
    max_size=60,
)
_ANSI = st.sampled_from(["\x1b[0m", "[0m", "\x1b[1;36m", "[0;0m", "\x1b[90m", "\x1b[2K", ""])
_PORT = st.integers(1024, 65535)


@st.composite
def noise_line(draw: st.DrawFn, vendor: bool = False) -> str:
    """One line a real log interleaves between records: access logs, bars, warnings, junk.

    `vendor` allows vLLM's `(APIServer pid=N)` prefix: true evidence of a vLLM server log,
    so it may legitimately change which format a file is detected as.
    """
    kind = draw(st.integers(0, 7))
    if kind == 0:
        body = draw(st.sampled_from(["", " ", "\t", "   "]))
    elif kind == 1:
        body = draw(_WORDS)  # no `|` in it: a Markdown table row is a record, not noise
    elif kind == 2:
        method = draw(st.sampled_from(["POST /generate", "GET /health", "POST /v1/completions"]))
        body = (
            f'INFO:     127.0.0.1:{draw(_PORT)} - "{method} HTTP/1.1" '
            f"{draw(st.sampled_from(['200 OK', '404 Not Found', '503 Service Unavailable']))}"
        )
        if vendor and draw(st.booleans()):
            body = f"(APIServer pid={draw(st.integers(1, 99999))}) {body}"
    elif kind == 3:
        done = draw(st.integers(0, 1000))
        body = f"{100 * done // 1000:3d}%|{'#' * (done // 100):<10}| {done}/1000 [00:0{done % 10}<00:10,  4.90it/s]"
    elif kind == 4:
        body = (
            f"/usr/lib/python3/dist-packages/torch/cuda/__init__.py:{draw(st.integers(1, 999))}: "
            f"UserWarning: {draw(_WORDS)}"
        )
    elif kind == 5:
        body = draw(st.sampled_from(["```", "```text", "> ", "~~~"]))
    elif kind == 6:
        body = f"{draw(_ANSI)}{draw(_WORDS)}{draw(_ANSI)}"
    else:
        body = draw(_ANSI)
    return body + draw(st.sampled_from(["", "", "\r"]))


@st.composite
def noisy(draw: st.DrawFn, fx: Fixture, vendor: bool = False) -> tuple[str, int]:
    """The fixture with 1–6 noise lines at safe gaps; also returns how many were added."""
    line = noise_line(vendor)
    inserts = draw(st.lists(st.tuples(st.sampled_from(fx.safe_gaps), line), min_size=1, max_size=6))
    lines = list(fx.lines)
    for gap, line in sorted(inserts, key=lambda t: -t[0]):
        lines.insert(gap, line)
    return "\n".join(lines), len(inserts)


# ---------------------------------------------------------------- properties


def test_every_format_has_fixtures_with_safe_gaps() -> None:
    formats = {f.fid for f in FIXTURES}
    assert formats == set(PARSERS)
    for f in FIXTURES:
        assert f.safe_gaps, f"{f.path.name}: no gap to put noise in"


@pytest.mark.parametrize("fx", FIXTURES, ids=IDS)
@FAST
@given(data=st.data())
def test_noise_between_records_keeps_every_sample(fx: Fixture, data: st.DataObject) -> None:
    vendor = data.draw(st.booleans())
    text, _ = data.draw(noisy(fx, vendor))
    # Detection is checked too, except with vendor noise (real evidence of another format)
    # and for JSONL (a JSONL file is detected by its first record: noise there is no JSONL).
    detect = not vendor and not fx.name.endswith(".jsonl")
    for pinned in (True, False) if detect else (True,):
        result = fx.parse(text, pinned=pinned)
        check_records(result)
        got = multiset(result)
        assert fx.truth - got == Counter(), f"noise removed samples: {fx.truth - got}"
        assert got - fx.truth == Counter(), f"noise added samples: {got - fx.truth}"


@st.composite
def mixed_bytes(draw: st.DrawFn, raw: bytes) -> bytes:
    """Arbitrary bytes and text lines spliced into the file at arbitrary byte offsets."""
    piece = st.one_of(
        st.binary(max_size=40),
        st.text(max_size=40).map(lambda s: s.encode("utf-8", "surrogatepass")),
        st.text(max_size=40).map(lambda s: ("\n" + s + "\n").encode("utf-8", "surrogatepass")),
        st.sampled_from([b"\x00" * 64, b"\xff\xfe", b"\r", b"\r\n", b"\x1b[", b"\x1f\x8b"]),
    )
    inserts = draw(st.lists(st.tuples(st.integers(0, len(raw)), piece), min_size=1, max_size=5))
    data = raw
    for at, chunk in sorted(inserts, key=lambda t: -t[0]):
        data = data[:at] + chunk + data[at:]
    return data


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def _parse_bytes(scratch: Path, name: str, data: bytes, fid: str | None) -> ParseResult:
    path = scratch / name
    path.write_bytes(data)
    return parse_file(path, format=fid)


@pytest.mark.parametrize("fx", FIXTURES, ids=IDS)
@settings(FAST, max_examples=8)  # each example parses three files
@given(data=st.data())
def test_arbitrary_bytes_mixed_into_a_fixture_never_raise(
    fx: Fixture, scratch: Path, data: st.DataObject
) -> None:
    blob = data.draw(mixed_bytes(fx.raw))
    for fid in (fx.fid, None):
        check_records(_parse_bytes(scratch, fx.name, blob, fid))
    gz = gzip.compress(blob, mtime=0)
    cut = data.draw(st.integers(0, len(gz)))
    check_records(_parse_bytes(scratch, fx.name + ".gz", gz[:cut], fx.fid))


# What a digit run can become that Python's `int` and `float` trip on: `int` refuses more
# than 4300 digits, `'²'.isdigit()` is true and `int('²')` raises, 5000 digits are infinity
# as a float and `int(inf)` raises; `٣` is a digit to `\d`.
_ODD_NUMBERS = ["7" * 5000, "1" * 19, "²", "٣", "1e999", "-0", "nan"]


@pytest.mark.parametrize("fx", FIXTURES, ids=IDS)
@FAST
@given(data=st.data())
def test_a_number_python_cannot_hold_never_raises(
    fx: Fixture, scratch: Path, data: st.DataObject
) -> None:
    import re

    runs = [m.span() for m in re.finditer(rb"\d+", fx.raw)]
    if not runs:
        return
    picked = data.draw(st.sets(st.sampled_from(range(len(runs))), min_size=1, max_size=3))
    blob = fx.raw
    for i in sorted(picked, reverse=True):  # right to left: the spans before stay true
        a, b = runs[i]
        blob = blob[:a] + data.draw(st.sampled_from(_ODD_NUMBERS)).encode() + blob[b:]
    for fid in (fx.fid, None):
        check_records(_parse_bytes(scratch, fx.name, blob, fid))


def _all_lines() -> list[str]:
    return [line for f in FIXTURES for line in f.lines]


ALL_LINES = _all_lines()


@WIDE
@given(
    lines=st.lists(
        st.one_of(
            st.integers(0, len(ALL_LINES) - 1).map(ALL_LINES.__getitem__),
            st.text(max_size=80),
            noise_line(vendor=True),
        ),
        max_size=40,
    ),
    name=st.sampled_from(["x.log", "x.jsonl", "x.txt", "bench.out"]),
)
def test_every_parser_survives_lines_of_every_format_shuffled(lines: list[str], name: str) -> None:
    """Lines of all formats in any order, with arbitrary text: each parser, pinned, copes."""
    text = "\n".join(lines)
    check_records(parse_text(text, path=name))
    for fid in PARSERS:
        check_records(parse_text(text, format=fid, path=name))


def _cut_multiset_is_true(fx: Fixture, text: str, where: str) -> None:
    result = fx.parse(text)
    check_records(result)
    extra = multiset(result) - fx.truth
    assert extra == Counter(), f"{where}: samples not in the uncut file: {dict(extra)}"


@pytest.mark.parametrize("fx", FIXTURES, ids=IDS)
@FAST
@given(data=st.data())
def test_cut_at_any_byte_after_noise_gives_only_true_samples(
    fx: Fixture, data: st.DataObject
) -> None:
    text, _ = data.draw(noisy(fx)) if data.draw(st.booleans()) else (fx.text, 0)
    raw = text.encode("utf-8")
    cut = data.draw(st.integers(0, len(raw)))
    _cut_multiset_is_true(fx, raw[:cut].decode("utf-8", "replace"), f"cut at byte {cut}")


_GARBAGE = st.tuples(
    st.sampled_from([b"\x00", b"\x00" * 7, b"\x00" * 4096]),
    # what a crashed writer leaves: no newline (the cut line stays the last one), no digit
    st.binary(max_size=30).map(
        lambda b: bytes(c for c in b if c != 0x0A and not 0x30 <= c <= 0x39)
    ),
).map(lambda t: t[0] + t[1])


@pytest.mark.parametrize("fx", FIXTURES, ids=IDS)
@FAST
@given(data=st.data())
def test_cut_followed_by_garbage_gives_only_true_samples(fx: Fixture, data: st.DataObject) -> None:
    """A crash leaves a cut line padded with NULs (maybe more bytes after): nothing guessed."""
    cut = data.draw(st.integers(0, len(fx.raw)))
    garbage = data.draw(_GARBAGE)
    text = (fx.raw[:cut] + garbage).decode("utf-8", "replace")
    _cut_multiset_is_true(fx, text, f"cut at byte {cut} + {garbage[:8]!r}")


def _iter_gaps() -> Iterator[tuple[Fixture, int]]:
    for f in FIXTURES:
        yield from ((f, k) for k in f.safe_gaps)


def test_a_uvicorn_line_at_every_safe_gap_keeps_every_sample() -> None:
    """Exhaustive over gaps (hypothesis samples them): one access line anywhere between records."""
    access = 'INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK'
    for fx, gap in _iter_gaps():
        text = "\n".join([*fx.lines[:gap], access, *fx.lines[gap:]])
        got = multiset(fx.parse(text))
        assert got == fx.truth, (
            f"{fx.path.name}: access line at gap {gap}: lost {fx.truth - got}, added {got - fx.truth}"
        )


def test_the_atheris_harness_accepts_every_fixture_and_garbage(scratch: Path) -> None:
    """benchmarks/fuzz.py's target, run without atheris, so the harness cannot rot."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fuzz_harness", ROOT / "benchmarks" / "fuzz.py")
    assert spec is not None
    assert spec.loader is not None
    harness = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(harness)
    for fx in FIXTURES:
        harness.one_input(fx.raw, fx.fid, scratch)
    for blob in (
        b"",
        b"\x00" * 99,
        b"\x1f\x8b\x08" + bytes(range(256)),
        "Run 1/5: \u00b9".encode(),
    ):
        for fid in PARSERS:
            harness.one_input(blob, fid, scratch)
    assert harness.seeds("bench-stdout", scratch / "corpus") >= 1


def test_nul_runs_from_rotation_and_crashes(scratch: Path) -> None:
    """copy-and-truncate leaves a file starting with NULs (here more than the sniffed head);
    a crash leaves a line cut and padded with NULs, then the restarted writer's lines."""
    seed = next(f for f in FIXTURES if f.fid == "bench-stdout" and f.name == "seed-truncated.log")
    rotated = _parse_bytes(scratch, "rotated.log", b"\x00" * (100 << 10) + seed.raw, None)
    assert rotated.sources[0].format == "bench-stdout"
    assert multiset(rotated) == seed.truth
    notes = [d for d in rotated.diagnostics if "NUL bytes" in d.message]
    assert [(d.code, d.line) for d in notes] == [("truncated-output", 1)]

    lines = seed.raw.split(b"\n")
    run = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith(b"Run 2/5"))
    cut = lines[run][: lines[run].index(b"= 65.") + 4]  # `... = 65.`: cut inside the value
    crashed = b"\n".join([*lines[:run], cut + b"\x00" * 300 + lines[run + 1], *lines[run + 2 :]])
    result = _parse_bytes(scratch, "crashed.log", crashed, "bench-stdout")
    got = multiset(result)
    assert got - seed.truth == Counter()  # nothing guessed from the cut `65.`
    assert ("throughput_tok_s", 65.5) not in got
    assert got[("throughput_tok_s", 50.9)] == 1  # the line after the NULs is read
