"""Line reading (DESIGN §2): numbering, CR handling, gzip, UTF-8, noise cleanup."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from sessionlens import _lines


def lines_of(text: str) -> list[tuple[int, str, bool]]:
    return [(ln.no, ln.text, ln.cut) for ln in _lines.from_text(text).lines()]


def test_numbering_counts_newlines_only() -> None:
    assert lines_of("a\nb\x0bc\x0cd\u2028e\n") == [
        (1, "a", False),
        (2, "b\x0bc\x0cd\u2028e", False),
    ]


def test_crlf_and_progress_rewrites() -> None:
    assert lines_of("a\r\nbar 10%\rbar 90%\rbar 100%\r\nend\r") == [
        (1, "a", False),
        (2, "bar 100%", False),
        (3, "end", True),
    ]


def test_last_line_without_newline_is_cut() -> None:
    assert lines_of("x\ny") == [(1, "x", False), (2, "y", True)]
    assert lines_of("x\n") == [(1, "x", False)]


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("\x1b[32mINFO\x1b[0m text", "INFO text"),
        ("[1;36m(APIServer pid=1)[0;0m INFO", "(APIServer pid=1) INFO"),
        ("\x1b[2K\x1b[1Aprogress", "progress"),
        ("> Run 1/5: x", "Run 1/5: x"),
        (">Run 1/5: x", "Run 1/5: x"),
        ("> > nested", "nested"),
        ("```text", ""),
        ("~~~", ""),
        ("`accept len: 2.00`, **gen**", "accept len: 2.00, gen"),
        ("**Mean TTFT (ms):** 3.20", "Mean TTFT (ms): 3.20"),
        ("tp_size=10**10**10, x=2**3", "tp_size=10**10**10, x=2**3"),  # inside values
        ("[2025-01-01 10:00:00 TP0] Decode", "[2025-01-01 10:00:00 TP0] Decode"),
        # a bracket opening a word is no colour code that lost its ESC: vLLM prints
        # `[metrics.py:96]` on every SpecDecoding line
        (
            "INFO 11-14 09:05:28 [metrics.py:96] SpecDecoding",
            "INFO 11-14 09:05:28 [metrics.py:96] SpecDecoding",
        ),
        ("[model_runner.py:1] [main] [m]", "[model_runner.py:1] [main] [m]"),
        ("[90m[metrics.py:120][0m Spec", "[metrics.py:120] Spec"),
    ],
)
def test_clean(raw: str, clean: str) -> None:
    assert _lines.clean(raw) == clean


def test_gzip_and_sha256_of_raw_bytes(tmp_path: Path) -> None:
    import hashlib

    body = b"Run 1/1: 1 tokens in 1.00s = 1.0 tok/s (prompt: 1 toks)\n" * 3
    p = tmp_path / "x.log.gz"
    p.write_bytes(gzip.compress(body))
    src = _lines.read(p)
    got = [ln.text for ln in src.lines()]
    assert len(got) == 3
    assert src.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
    assert src.n_lines == 3
    assert "Run 1/1" in src.head


def test_non_utf8_is_replaced_with_a_diagnostic(tmp_path: Path) -> None:
    p = tmp_path / "bad.log"
    p.write_bytes(b"ok\nbad \xff\xfe here\nok\n")
    src = _lines.read(p, display="bad.log")
    texts = [ln.text for ln in src.lines()]
    assert texts[1] == "bad \ufffd\ufffd here"
    assert [str(d) for d in src.notes] == [
        "bad.log:2: warning: bytes that are not UTF-8 were replaced on line(s) 2 [non-utf8]"
    ]


def test_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "e.log"
    p.write_bytes(b"")
    src = _lines.read(p, display="e.log")
    assert list(src.lines()) == []
    assert [d.code for d in src.notes] == ["empty-file"]


def test_large_file_is_read_in_chunks(tmp_path: Path) -> None:
    p = tmp_path / "big.log"
    line = b"x" * 999 + b"\n"
    p.write_bytes(line * 3000)  # ~3 MB, several chunks; lines cross chunk borders
    src = _lines.read(p)
    n = 0
    for ln in src.lines():
        n += 1
        assert len(ln.text) == 999
    assert n == 3000 == src.n_lines


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (  # docker's json-file driver
            '{"log":"[2025-11-14 09:12:44 TP0] Decode batch, #queue-req: 0\\n",'
            '"stream":"stderr","time":"2025-11-14T09:12:44.1Z"}',
            "[2025-11-14 09:12:44 TP0] Decode batch, #queue-req: 0",
        ),
        (  # a JSON logging formatter: the time goes back in front, milliseconds with a dot
            '{"asctime": "2026-10-30 15:02:04,123", "levelname": "INFO", '
            '"message": "Decode batch, #running-req: 3"}',
            "[2026-10-30 15:02:04.123] Decode batch, #running-req: 3",
        ),
        (  # ... and a level of WARNING or above after it, as a text log says it
            '{"asctime": "2026-10-12 08:21:05,417", "levelname": "ERROR", '
            '"message": "EngineCore encountered a fatal error.\\nTraceback (most recent"}',
            "[2026-10-12 08:21:05.417] ERROR EngineCore encountered a fatal error. Traceback "
            "(most recent",
        ),
        (  # ANSI codes escaped inside the JSON string are cleaned after unwrapping
            '{"log":"\\u001b[32mINFO\\u001b[0m:     127.0.0.1:1 - \\"POST /generate HTTP/1.1\\" 200\\n"}',
            'INFO:     127.0.0.1:1 - "POST /generate HTTP/1.1" 200',
        ),
        (  # a benchmark record is data, never an envelope
            '{"completed": 64, "request_throughput": 0.94, "message": "ok"}',
            '{"completed": 64, "request_throughput": 0.94, "message": "ok"}',
        ),
        ('{"log": "cut mid-str', '{"log": "cut mid-str'),  # not JSON: as it is
        ('{"log": 42}', '{"log": 42}'),  # no text inside
    ],
)
def test_json_log_envelopes_are_unwrapped(raw: str, want: str) -> None:
    assert _lines.clean(raw) == want


def test_chunks_of_a_plain_file_end_at_line_ends(tmp_path: Path) -> None:
    """Pieces of a plain file are read to end at a line's end (so `chunks` takes them as
    they are); a line longer than the bytes looked at for that is joined across pieces.
    Either way the chunks are the file's bytes, in order, and the hash is the file's."""
    import hashlib
    import random

    rng = random.Random(7)
    lines = [b"y" * rng.randrange(0, 3000) for _ in range(2000)]
    # longer than a piece and `_ALIGN`: some piece has no newline in its last `_ALIGN` bytes
    lines[900] = b"z" * (400 << 10)
    data = b"\n".join(lines) + b"\ncut last li"
    p = tmp_path / "big.log"
    p.write_bytes(data)
    size = 256 << 10
    assert size > _lines._ALIGN
    with p.open("rb") as fh:
        piece = _lines._piece_size(fh, size)
    assert data[piece - 1 : piece] == b"\n"
    assert size - _lines._ALIGN < piece <= size
    src = _lines.read(p)
    got = list(src.chunks(size))
    *chunks, last = got
    assert all(isinstance(c, _lines.Chunk) and c.data.endswith(b"\n") for c in chunks)
    assert isinstance(last, _lines.Line)
    assert last.text == "cut last li"
    assert b"".join(c.data for c in chunks) + b"cut last li" == data
    assert src.sha256 == hashlib.sha256(data).hexdigest()
    # each chunk is one piece read (it ends at a line's end, within `_ALIGN` of the size),
    # except around the long line: the lines before it in the piece where it starts, then
    # it and the lines after it, joined across pieces
    at = next(i for i, c in enumerate(chunks) if b"z" in c.data)
    assert b"z" not in b"".join(c.data for c in chunks[at + 1 :])
    assert len(chunks[at].data) > size
    for c in chunks[: at - 1] + chunks[at + 1 : -1]:
        assert size - _lines._ALIGN < len(c.data) <= size
    assert src.n_lines == len(lines) + 1
    assert [c.first for c in chunks] == [
        1 + sum(c.data.count(b"\n") for c in chunks[:i]) for i in range(len(chunks))
    ]


LOG = (
    "[2025-11-14 09:01:42 TP0] Decode batch, #running-req: 32, #token: 37504, "
    "gen throughput (token/s): 1949.12, #queue-req: 0, \n"
)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_utf16_with_a_byte_order_mark_reads_as_its_text(tmp_path: Path, encoding: str) -> None:
    """What Windows PowerShell's `>` writes: the same lines as the UTF-8 file, over many
    read pieces (a piece may end inside a character); the raw bytes are hashed and counted."""
    import hashlib

    text = "Run 1/1: 1 tokens in 1.00s = 1.0 tok/s — ok\r\n" + LOG * 40_000 + "pro\rgress 5"
    p8, p16 = tmp_path / "a.log", tmp_path / "b.log"
    p8.write_bytes(text.encode())
    bom = b"\xfe\xff" if encoding == "utf-16-be" else b""
    p16.write_bytes(bom + text.encode(encoding))
    assert p16.read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")
    a, b = _lines.read(p8), _lines.read(p16)
    assert b.head == a.head
    assert b.binary is None
    assert list(b.lines()) == list(a.lines())  # numbers, texts, and the cut last line
    assert (b.n_lines, b.notes) == (a.n_lines, [])
    assert b.n_bytes == p16.stat().st_size > a.n_bytes
    assert b.sha256 == hashlib.sha256(p16.read_bytes()).hexdigest()


@pytest.mark.parametrize("bom", [b"\xff\xfe", b"\xfe\xff"])
def test_a_byte_order_mark_after_a_nul_run_is_no_utf16(tmp_path: Path, bom: bytes) -> None:
    """A rotated log's NUL run, then what looks like a byte-order mark (the fuzz run found
    it: the UTF-16 decoder met the NULs first and raised): read as the bytes it is."""
    from sessionlens.parsers import parse_file

    path = tmp_path / "a.log"
    path.write_bytes(b"\x00" * 27 + bom + b"\xff" * 5 + b"\x00" * 60 + LOG.encode() * 3)
    src = _lines.read(path)
    lines = list(src.lines())
    assert [ln.text for ln in lines[-3:]] == [LOG.rstrip("\n")] * 3
    result = parse_file(path)  # one line each, no exception
    assert all("\n" not in str(d) for d in result.diagnostics)


def test_a_binary_head_is_named(tmp_path: Path) -> None:
    import hashlib
    import random

    rng = random.Random(7)
    noise = bytes(rng.randrange(256) for _ in range(4096))
    assert _lines.binary_kind(noise) == "binary data"
    assert _lines.binary_kind(b"\x89PNG\r\n\x1a\n" + noise) == "a PNG image"
    assert _lines.binary_kind(b"PK\x03\x04" + noise).startswith("a zip archive")
    # text, whatever else it holds: NUL runs (a crashed writer, copy-and-truncate), terminal
    # bytes (bell, backspace, shift in/out, ESC), bytes of another encoding
    log = LOG.encode() * 50
    assert _lines.binary_kind(b"\x00" * 60_000 + log) is None
    assert _lines.binary_kind(log + b"\x00" * 60_000) is None
    assert _lines.binary_kind(b"\x1b[32m\x0fok\x07\x08\n" * 500) is None
    assert _lines.binary_kind("débit élevé\n".encode("latin-1") * 500) is None
    assert _lines.binary_kind("吞吐量\n".encode("gbk") * 500) is None
    # a few stray control bytes in a log do not make it binary
    assert _lines.binary_kind(log + b"\x01\x02\x03" * 5) is None
    p = tmp_path / "plot.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + noise * 300)
    src = _lines.read(p)
    assert src.binary == "a PNG image"
    src.count_only()  # its bytes are hashed and counted, not made lines
    assert src.notes == []  # no NUL nor non-UTF-8 notes: that is what binary data is
    assert src.n_bytes == p.stat().st_size
    assert src.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
    assert (src.n_lines, src.ends_with_newline) == (p.read_bytes().count(b"\n") + 1, False)
    # a format pinned on it reads it as lines all the same, with their notes
    src = _lines.read(p)
    assert len(list(src.lines())) == src.n_lines
    assert {d.code for d in src.notes} == {"truncated-output", "non-utf8"}


def test_bidi_controls_are_removed_and_each_line_named() -> None:
    # issue 19 case 15: U+202E reached stderr and the Markdown raw; a run line holding
    # U+2068 vanished without a diagnostic
    from sessionlens.parsers import parse_text

    text = (
        "Benchmarking http://x\n"
        "max_tokens=2048, num_runs=2, warmup=0\n"
        "Run 1/2: 2048 tokens in 33.88s = 60.4\u2068 tok/s (prompt: 32 toks)\n"
        "Run 2/2: 2048 tokens in 33.88s = 60.4 tok/s (prompt: 32 toks) \u202egnp.txt\n"
    )
    r = parse_text(text, path="b.log")
    assert r.sources[0].format == "bench-stdout"
    assert [
        v for m, v in zip(r.columns.metric, r.columns.value, strict=True) if m == "throughput_tok_s"
    ] == [
        60.4,
        60.4,
    ]
    said = [str(d) for d in r.diagnostics if d.code == "bidi-control"]
    assert said == [
        "b.log:3: warning: Unicode bidi controls (which make text show in another order) "
        "were removed from line(s) 3, 4; those lines were read without them [bidi-control]"
    ]
    assert not any(c in str(d) for d in r.diagnostics for c in "\u202e\u2068")
