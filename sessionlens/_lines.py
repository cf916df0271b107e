"""Bytes to numbered, cleaned lines; knows no log format.

Owns reading (plain or gzip, in bounded chunks, hashing the raw bytes in the same pass),
decoding (invalid UTF-8 replaced, with a diagnostic; UTF-16 with a byte-order mark read as
the text it holds; a binary head named, so the file is reported once, not line by line),
line splitting by DESIGN §2 (`\\n` only; CRLF; a `\\r` progress-bar rewrite keeps the text
after the last `\\r`), and cleanup of terminal and Markdown noise (ANSI codes with or without
ESC, fences, quote markers, backticks, bold).
A last line without `\\n` is flagged `cut`, so parsers can tell a field that may be cut.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import io
import json
import os
import re
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from . import diagnostics as dg

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import polars as pl

CHUNK = 1 << 20
_THREAD_MIN = 256 << 10  # smaller pieces are hashed inline (a thread would cost more)
HEAD_BYTES = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # what Windows PowerShell's `>` writes

# Control bytes that no text log holds (NUL aside: a crashed writer or a rotation leaves NUL
# runs in logs): not tab, newlines, form feed, backspace, bell, ESC, shift in/out, ^Z, DEL.
_BINARY_BYTES = bytes(sorted(set(range(1, 32)) - set(b"\t\n\x0b\x0c\r\x08\x07\x1b\x0e\x0f\x1a")))
_BINARY_MIN = 16  # at least this many such bytes in the head ...
_BINARY_SHARE = 0.01  # ... and this share of it (random bytes hold ~8 %)
# What a binary head is, by its first bytes (the rule above decides whether it is binary).
_MAGIC = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a zip archive (a PyTorch .pt file is one)"),
    (b"SQLite format 3", "an SQLite database"),
    (b"PAR1", "a Parquet file"),
    (b"ARROW1", "an Arrow file"),
    (b"\x93NUMPY", "a NumPy array"),
    (b"\x7fELF", "an executable"),
    (b"\xfd7zXZ", "an xz archive"),
    (b"\x28\xb5\x2f\xfd", "a zstd archive"),
    (b"BZh", "a bzip2 archive"),
)

# ANSI: full CSI sequences with ESC; without ESC only the SGR form `[..m` that pastes keep,
# with a number first (`[0m`, `[1;36m`): a bare `[m` is the start of vLLM's `[metrics.py:96]`
# on every SpecDecoding line far more often than a reset that lost its ESC. (Patterns in
# the syntax both Python's `re` and polars' Rust regex read: no look-ahead.)
ANSI_ESC_RX = r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>]"
ANSI_BARE_RX = r"\[[0-9][0-9;]{0,11}m"
_ANSI_ESC = re.compile(ANSI_ESC_RX)
_ANSI_BARE = re.compile(ANSI_BARE_RX)
# What `clean` does to a line that holds none of `CLEAN_HARD_RX` (no `\r`, quote or fence
# marker, backtick) and is no JSON log envelope: these removals, in this order (pattern, and
# whether it is literal), so that a vectorised reader can clean such lines itself.
CLEAN_STEPS: tuple[tuple[str, bool], ...] = (
    (ANSI_ESC_RX, False),
    ("\x1b", True),
    (ANSI_BARE_RX, False),
)
_ESC_STEPS = frozenset({ANSI_ESC_RX, "\x1b"})  # the steps that change only text with an ESC
# `**` is looked at in context (`_BOLD`), which a vectorised regex without look-around
# cannot do: such lines are `clean`'s own too.
CLEAN_HARD_RX = r"[`~>\r]|\*\*"
# Markdown bold a paste put around words (`**Mean TTFT (ms):** 3.2`, `**gen**`): a `**` with
# no word character on one side. Between two (`tp_size=10**10**10`) it is part of a value.
_BOLD = re.compile(r"(?<!\w)\*\*|\*\*(?!\w)")
# Unicode bidi controls (embeddings, overrides, isolates: U+202A–U+202E, U+2066–U+2069):
# they make text show in another order than it is read (`Trojan Source`), so no line keeps
# them, and every line that held one is named in a `bidi-control` diagnostic.
BIDI_RX = "[\u202a-\u202e\u2066-\u2069]"
_BIDI = re.compile(BIDI_RX)
_FENCE = re.compile(r"^\s*(?:>\s?)*(?:```|~~~)[\w+-]*\s*$")
_QUOTE = re.compile(r"^(?:\s{0,3}>\s?)+")


@dataclass(frozen=True, slots=True)
class Line:
    """One line: its 1-based number, its cleaned text, and whether it is cut.

    `cut`: a last line without `\\n`, or a line whose text ends in NUL bytes (a write that
    stopped there: the text before them may end mid-field).
    """

    no: int
    text: str
    cut: bool = False


# Keys of a benchmark's JSON record: such a line is data, never a log envelope.
_RECORD_KEYS = frozenset({"completed", "request_throughput", "mean_ttft_ms", "output_throughput"})
_LOUD_LEVELS = frozenset({"WARNING", "ERROR", "CRITICAL"})
_ASCTIME_MS = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})$")


def _unwrap_json(text: str) -> str:
    """The line a program printed, from a JSON log envelope: docker's json-file driver
    (`{"log": "...\\n", "stream": ..., "time": ...}`) or a JSON logging formatter
    (`{"asctime": ..., "message": ...}`, the time put back in front as `[...]`, then the level
    when it is WARNING or above); any other text is returned as it is."""
    body = text.strip()
    if not body.endswith("}") or ('"log"' not in body and '"message"' not in body):
        return text
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return text
    if not isinstance(obj, dict) or not _RECORD_KEYS.isdisjoint(obj):
        return text
    inner = obj.get("log", obj.get("message"))
    if not isinstance(inner, str):
        return text
    inner = inner.rstrip("\n").replace("\r\n", " ").replace("\n", " ")
    ts = obj.get("asctime")
    if "log" not in obj and isinstance(ts, str) and len(ts) < 40:
        level = obj.get("levelname")
        if level in _LOUD_LEVELS:  # an error or a warning says so, as a text log does
            inner = f"{level} {inner}"
        stamp = _ASCTIME_MS.sub(r"\1.\2", ts)  # `,123` milliseconds as `.123`
        inner = f"[{stamp}] {inner}"
    return inner


def clean(text: str) -> str:
    """Remove terminal and Markdown noise from one line (no `\\n` inside)."""
    if "\r" in text:
        text = text.rstrip("\r")
        if "\r" in text:
            text = text.rsplit("\r", 1)[1]
    if text[:2] == '{"' or (text[:1] in (" ", "\t") and text.lstrip()[:2] == '{"'):
        text = _unwrap_json(text)
    if "\x1b" in text:
        text = _ANSI_ESC.sub("", text)
        text = text.replace("\x1b", "")
    if "m" in text and "[" in text:
        text = _ANSI_BARE.sub("", text)
    if text[:1] in (">", " ", "`", "~") and (">" in text[:8] or "`" in text or "~~~" in text):
        if _FENCE.match(text):
            return ""
        text = _QUOTE.sub("", text, count=1)
    if "`" in text:
        text = text.replace("`", "")
    if "**" in text:
        text = _BOLD.sub("", text)
    return text


class Chunk:
    """Raw bytes of whole lines (each ends in `\\n`), not yet decoded nor cleaned.

    For readers that scan many lines at once; `SourceText.chunk_lines` turns one into `Line`s.
    A chunk made after another knows its first line number once the one before has been
    counted: a reader that splits chunks on worker threads (and says how many lines it
    found, `known_lines`) spares the reading thread a count of every newline.
    """

    __slots__ = ("_first", "_n", "_prev", "data")

    def __init__(self, first: int | Chunk, data: bytes, n_lines: int | None = None) -> None:
        self._first: int | None
        self._prev: Chunk | None
        if isinstance(first, Chunk):  # its first line follows the other chunk's last
            self._first, self._prev = None, first
        else:
            self._first, self._prev = first, None
        self.data = data
        self._n = n_lines

    @property
    def first(self) -> int:
        """Number of the chunk's first line."""
        if self._first is None:
            # resolve the chain of chunks not yet numbered, oldest first (no recursion)
            chain: list[Chunk] = [self]
            while chain[-1]._first is None:
                prev = chain[-1]._prev
                assert prev is not None  # a chunk has either a number or a predecessor
                chain.append(prev)
            for older, newer in zip(reversed(chain), list(reversed(chain))[1:], strict=False):
                newer._first = older.first + older.n_lines
                newer._prev = None
        assert self._first is not None
        return self._first

    @property
    def n_lines(self) -> int:
        if self._n is None:
            self._n = self.data.count(b"\n")
        return self._n

    def known_lines(self, n: int) -> None:
        """The line count, from a reader that split the chunk exactly (saves a count)."""
        self._n = n


# ------------------------------------------------------------------ chunks read by polars

# `clean` acts on a line only if it holds one of these (polars regex syntax); a `\n` (a line
# polars did not split), a NUL or a `\x1f` (which make the chunk go line by line) and the bidi
# controls are looked for in the same pass.
NOISE_RX = r"[\x1b\x1e`~>\n\x00\x1f\u202a-\u202e\u2066-\u2069]|\*\*|" + ANSI_BARE_RX
# That regex as its parts ORed (a third of its CPU time: its alternation and a class of
# multi-byte ranges defeat the regex engine's prefilters), the bidi controls looked for only
# in chunks holding their first byte (U+202A-U+202E, U+2066-U+2069: `\xe2\x80`, `\xe2\x81`).
_NOISE_PARTS = ((r"[\x1b\x1e`~>\n\x00\x1f]", False), ("**", True), (ANSI_BARE_RX, False))
# ... and a JSON log envelope (`clean` unwraps it): looked for only in chunks holding a `{`
# (an anchored alternative in `NOISE_RX` would make that regex several times slower; and
# `b'{"' in data` costs more than the regex: Python's two-byte search is not vectorised).
ENVELOPE_RX = r'^[ \t]*\{"'
_ODD_RX = r"[\n\x00\x1f]|" + BIDI_RX  # what no line polars splits exactly may hold


def polars_lines(
    chunk: Chunk, flags: dict[str, pl.Expr] | None = None
) -> tuple[pl.Series, dict[str, npt.NDArray[np.bool_]]] | None:
    """A chunk's lines split and cleaned by polars, exactly as `SourceText.chunk_lines`
    gives them (the first is line `chunk.first`), and the caller's `flags` (boolean
    expressions over column `t`) of each cleaned line, computed in the pass that looks for
    noise; None when polars' split might not be `_lines`' split (a BOM, a `\x1f`, NUL or bidi
    control, bytes that are not UTF-8): then read the chunk line by line. For fast paths that
    read whole chunks (a worker thread may call it: it touches no state but the chunk's
    line count)."""
    import numpy as np
    import polars as pl

    split = _polars_split(chunk.data)
    if split is None:
        return None
    t, parked = split
    noisy = pl.lit(False)
    for pattern, literal in _NOISE_PARTS:
        noisy = noisy | pl.col("t").str.contains(pattern, literal=literal)
    if b"\xe2" in chunk.data:
        noisy = noisy | pl.col("t").str.contains(BIDI_RX)
    if b"{" in chunk.data:
        noisy = noisy | pl.col("t").str.contains(ENVELOPE_RX)
    wanted = flags or {}
    found = t.to_frame("t").select(noise_=noisy, **wanted)  # one select: run in parallel
    noise = found["noise_"].to_numpy()
    out = {name: found[name].to_numpy().copy() for name in wanted}
    if noise.any():
        # polars splits no line at anything but `\n`, and no line holds a NUL or `\x1f`
        # (checked, not assumed: `NOISE_RX` flags such a line), nor a bidi control (which
        # `_lines` removes and names)
        if t.filter(found["noise_"]).str.contains(_ODD_RX).any():
            return None
        # clean those lines as `clean` does, then look at them again
        rows = np.flatnonzero(noise)
        fixed = clean_series(t.gather(rows), parked, esc=b"\x1b" in chunk.data)
        t = t.scatter(rows, fixed)
        if wanted:
            again = fixed.to_frame("t").select(**wanted)
            for name in wanted:
                out[name][rows] = again[name].to_numpy()
    chunk.known_lines(t.len())  # the split is exact: no count needed
    return t, out


def _polars_split(data: bytes) -> tuple[pl.Series, bool] | None:
    """Raw lines as polars splits them, and whether `\r`s were parked as `\x1e`; None when
    that split might not be `_lines`' split."""
    import polars as pl

    if data.startswith(b"\xef\xbb\xbf"):
        return None  # a BOM polars strips
    # A `\x1f` (the separator: polars raises), a NUL (`_lines` cuts the line there) or a
    # `\n` in a line is found by the noise regex, and bytes that are not UTF-8 make polars
    # raise: no pass of their own over the bytes.
    parked = b"\r" in data
    if parked:
        # polars would end lines at a `\r`: park each as `\x1e` (`clean_series` gives those
        # lines back to `clean` with their `\r`s)
        if b"\x1e" in data:
            return None
        data = data.replace(b"\r", b"\x1e")
    try:
        frame = pl.read_csv(
            data,
            has_header=False,
            separator="\x1f",
            quote_char=None,
            schema={"t": pl.String},
            raise_if_empty=False,
            infer_schema=False,
        )
    except Exception:  # polars' own errors: the line-by-line path reads anything
        return None
    if frame.width != 1:
        return None
    t = frame.to_series().fill_null("")
    # every byte accounted for (and no line holding a newline: `polars_lines` checks)
    if int(t.str.len_bytes().sum()) + t.len() != len(data):
        return None
    if parked:
        # CRLF (a log written on Windows or by some collectors): a line's trailing `\r`s
        # are the first thing `clean` drops, so they go here (every `\x1e` is a parked
        # `\r`); a chunk with no other `\r` is then read as any other (else every line
        # would be noise, cleaned one by one in Python)
        t = t.str.strip_chars_end("\x1e")
        parked = bool(t.str.contains("\x1e", literal=True).any())
    return t, parked


# docker's json-file envelope in the one shape its driver writes, the text holding no escape
# but `\"`, `\/`, `\t` and `\u00XX` of ESC, `<`, `>`, `&` and ending in at most one `\n`:
# such a line is valid JSON, and `_unwrap_json` gives its text with those unescaped
# (`clean_series` does it in polars).
DOCKER_JSON_RX = (
    r'^\{"log":"(?:[^"\\\x00-\x1f]|\\["/t]|\\u00(?:1b|3c|3e|26))*(?:\\n)?",'
    r'"stream":"(?:stdout|stderr)","time":"[0-9A-Za-z:.+-]*"\}$'
)
_DOCKER_ESCAPES = (
    ('\\"', '"'),
    ("\\/", "/"),
    ("\\t", "\t"),
    ("\\u001b", "\x1b"),
    ("\\u003c", "<"),  # Go's encoder escapes <, > and & so
    ("\\u003e", ">"),
    ("\\u0026", "&"),
)


def _docker_unwrapped(sub: pl.Series) -> pl.Series | None:
    """`sub` with each docker json-file line (`DOCKER_JSON_RX`) as `_unwrap_json` unwraps it,
    where its text holds no `{"` (`clean` then looks at it as it looks at any line: it
    unwraps no envelope twice), every other line as it is; None when there is none."""
    ok = sub.str.contains(DOCKER_JSON_RX)
    if not ok.any():
        return None
    at = ok.arg_true()
    # the text: before the first `","stream":"` (a `"` inside it is escaped), less the
    # `{"log":"` and one `\n` (no other escape ends in `\n`)
    text = (
        sub.gather(at)
        .str.split_exact('","stream":"', 1)
        .struct.field("field_0")
        .str.strip_prefix('{"log":"')
        .str.strip_suffix("\\n")
    )
    text = _unescaped(text)
    keep = ~text.str.contains('{"', literal=True)
    if not keep.any():
        return None
    return sub.clone().scatter(at.filter(keep), text.filter(keep))


# A JSON logging formatter's record (python-json-logger with `%(asctime)s %(levelname)s
# %(name)s %(message)s`, as `json.dumps` writes it), its texts escaped as `DOCKER_JSON_RX`
# allows (no `\n`): such a line is valid JSON, and `_unwrap_json` gives `[asctime] message`
# (`,123` as `.123`), the level first when it is loud.
_TEXT_RX = r'(?:[^"\\\x00-\x1f]|\\["/t]|\\u00(?:1b|3c|3e|26))*'
FORMATTER_JSON_RX = (
    r'^\{"asctime": "[0-9 :,.T+-]{1,39}", "levelname": "[A-Z]{1,20}", '
    rf'"name": "{_TEXT_RX}"'
    # other fields between (vLLM's `processName`, `process`); `_formatter_unwrapped` checks
    # that none repeats a key it reads (`json.loads` keeps a key's last value) or is one of
    # `_FORMATTER_NEVER`
    rf'(?:, "[A-Za-z_]{{1,40}}": (?:"{_TEXT_RX}"|-?(?:0|[1-9][0-9]{{0,19}})|null|true|false))*'
    rf', "message": "{_TEXT_RX}"\}}$'
)
# the keys `_formatter_unwrapped` reads once each, and those no record it unwraps may hold
# (a `log`, which `_unwrap_json` would read instead; a benchmark record's, which it leaves)
_FORMATTER_ONCE = ('"asctime": ', '"levelname": ', '"name": ', '"message": ')
_FORMATTER_NEVER = ('"log": ', *(f'"{key}": ' for key in sorted(_RECORD_KEYS)))


def _unescaped(text: pl.Series) -> pl.Series:
    """JSON string bodies `_TEXT_RX` matches, unescaped."""
    for escaped, char in _DOCKER_ESCAPES:  # each `\` starts one of them: no order matters
        text = text.str.replace_all(escaped, char, literal=True)
    return text


def _formatter_unwrapped(sub: pl.Series) -> pl.Series | None:
    """`sub` with each JSON formatter record (`FORMATTER_JSON_RX`) as `_unwrap_json` unwraps
    it; None when there is none."""
    import polars as pl

    ok = sub.str.contains(FORMATTER_JSON_RX)
    for keys, times in ((_FORMATTER_ONCE, 1), (_FORMATTER_NEVER, 0)):
        for key in keys:  # (a `"` in a text is escaped: these are keys)
            ok = ok & (sub.str.count_matches(key, literal=True) == times)
    if not ok.any():
        return None
    at = ok.arg_true()

    def cut(text: pl.Series, key: str) -> tuple[pl.Series, pl.Series]:
        parts = text.str.split_exact(f', "{key}": "', 1)  # where the regex has the key
        return parts.struct.field("field_0"), parts.struct.field("field_1")

    stamp, rest = cut(sub.gather(at), "levelname")
    level, rest = cut(rest, "name")
    _, message = cut(rest, "message")
    stamp = stamp.str.strip_suffix('"')
    level = level.str.strip_suffix('"')
    stamp = stamp.str.strip_prefix('{"asctime": "').str.replace(_ASCTIME_MS.pattern, "${1}.${2}")
    loud = pl.select(level.is_in(sorted(_LOUD_LEVELS))).to_series()
    lead = pl.select(pl.when(loud).then(level + " ").otherwise(pl.lit(""))).to_series()
    # (it starts with `[`: `clean` unwraps it no more)
    text = "[" + stamp + "] " + lead + _unescaped(message.str.strip_suffix('"}'))
    return sub.clone().scatter(at, text)


def clean_series(sub: pl.Series, parked: bool, esc: bool = True) -> pl.Series:
    """`clean` of lines with terminal noise: in polars when the noise is only ANSI codes
    (`CLEAN_STEPS`, in the same order) or a JSON envelope of docker's or a formatter's,
    else by `clean` itself (given back their `\r`s when those were `parked` as `\x1e`).
    `esc`: whether an ESC may stand in them (the steps that remove ESC sequences are skipped
    otherwise: they change nothing there)."""
    for head, unwrap in (('{"log":', _docker_unwrapped), ('{"asctime": ', _formatter_unwrapped)):
        if sub.str.starts_with(head).any():
            unwrapped = unwrap(sub)
            if unwrapped is not None:
                sub, esc = unwrapped, True  # (an `\u001b` gave an ESC)
    fixed = sub
    for pattern, literal in CLEAN_STEPS:
        if esc or pattern not in _ESC_STEPS:
            fixed = fixed.str.replace_all(pattern, "", literal=literal)
    # `clean` itself (a `\r` is parked as `\x1e`)
    hard_rx = CLEAN_HARD_RX.replace(r"\r", r"\x1e")
    # ... also where the removals brought a `**` together (`*\x1b[0m*`)
    hard = sub.str.contains(hard_rx) | fixed.str.contains(hard_rx)
    hard = hard | sub.str.contains(ENVELOPE_RX)
    if hard.any():
        at = hard.arg_true()
        raw = sub.gather(at).to_list()
        if parked:
            raw = [x.replace("\x1e", "\r") for x in raw]
        fixed = fixed.scatter(at, [clean(x) for x in raw])
    return fixed


def _some_lines(numbers: list[int], shown: int = 5) -> str:
    """`3, 7, 9` or `3, 7, 9, 12, 15 and 4 more`."""
    head = ", ".join(str(n) for n in numbers[:shown])
    return head + (f" and {len(numbers) - shown} more" if len(numbers) > shown else "")


@dataclass
class SourceText:
    """A source's lines, read lazily; byte facts are known once the lines have been read."""

    path: str
    name: str
    head: str
    _chunks: Iterator[bytes] | None = None
    _text: str | None = None
    notes: list[dg.Diagnostic] = field(default_factory=list)
    n_lines: int = 0
    n_bytes: int = 0
    sha256: str = ""
    ends_with_newline: bool = True
    # Called with the number of raw bytes of each piece read (a progress bar's feed).
    progress: Callable[[int], None] | None = None
    # The bytes of the pieces read, and of the chunks `chunks` makes: its `size`, which a
    # reader may change between chunks (those still to be read take it).
    read_size: int = CHUNK
    # What the file is when its head is binary ("a PNG image", "binary data"): its bytes
    # are hashed, not read as lines, unless a format is pinned.
    binary: str | None = None
    _bad_lines: list[int] = field(default_factory=list)
    _nul_lines: list[int] = field(default_factory=list)
    _bidi_lines: list[int] = field(default_factory=list)
    _listed: list[dg.Diagnostic] = field(default_factory=list)  # notes `_line_notes` made
    _finished: bool = False  # the pass over the bytes ended (`_finish`)

    def lines(self) -> Iterator[Line]:
        """Numbered cleaned lines, in order; may be iterated once for a file."""
        for piece in self.chunks():
            if isinstance(piece, Line):
                yield piece
            else:
                yield from self.chunk_lines(piece)

    def chunks(self, size: int = CHUNK) -> Iterator[Chunk | Line]:
        """Whole lines as raw `Chunk`s of about `size` bytes, then the cut last line (a
        `Line`), if any; `lines()` and `chunks()` share the one pass over the source."""
        self.read_size = max(size, 1)
        if self._text is not None:
            data = self._text.encode("utf-8", "surrogatepass")
            self.sha256 = hashlib.sha256(data).hexdigest()
            self.n_bytes = len(data)
            pieces: Iterator[bytes] = iter([data])
        elif self._chunks is not None:
            pieces, self._chunks = self._chunks, None
        else:
            return
        self._bad_lines = []
        self._nul_lines = []
        self._bidi_lines = []
        no = 0
        # the chunk yielded last and the one before: a chunk is numbered (its lines counted,
        # unless a reader did it meanwhile) only when the one after the next is made
        last: Chunk | None = None
        older: Chunk | None = None
        buf: list[bytes | memoryview] = []
        buf_len = 0
        for piece in pieces:
            if not piece:
                continue
            size = self.read_size  # a reader may change it as it goes (`read_size`)
            # a piece of whole lines at least half the size (`_piece_size`) is taken whole
            whole = not buf and len(piece) >= size // 2 and piece.endswith(b"\n")
            cut_at = piece.rfind(b"\n") if whole or buf_len + len(piece) >= size else -1
            if cut_at < 0:
                # a line longer than `size` is joined once, at its end: not quadratic
                buf.append(piece)
                buf_len += len(piece)
                continue
            # whole lines up to the piece's last newline, copied once (a piece that is
            # whole lines, with nothing held back, is not copied at all)
            if buf or cut_at < len(piece) - 1:
                buf.append(memoryview(piece)[: cut_at + 1])
                data = b"".join(buf)
                rest = piece[cut_at + 1 :]
                buf, buf_len = ([rest], len(rest)) if rest else ([], 0)
            else:
                data = piece
            if older is not None:
                older.first  # noqa: B018  (numbers it: the chain stays two chunks long)
            chunk = Chunk(no + 1 if last is None else last, data)
            older, last = last, chunk
            yield chunk
        data = b"".join(buf)
        cut_at = data.rfind(b"\n")
        if cut_at >= 0:
            chunk = Chunk(no + 1 if last is None else last, data[: cut_at + 1])
            older, last = last, chunk
            yield chunk
            data = data[cut_at + 1 :]
        if last is not None:
            no = last.first + last.n_lines - 1
        del last, older
        if data:
            no += 1
            text = _decode(data, no - 1, self._bad_lines)
            self.ends_with_newline = False
            if _BIDI.search(text) is not None:
                text = _BIDI.sub("", text)
                self._bidi_lines.append(no)
            yield _nul_line(no, text, True, self._nul_lines)
        self.n_lines = no
        self._finish(no)

    def chunk_lines(self, chunk: Chunk) -> list[Line]:
        """The cleaned lines of a chunk (bytes that are not UTF-8 replaced, and noted)."""
        if self._finished:  # a chunk decoded after the pass: its lines' notes are late
            before = (len(self._bad_lines), len(self._nul_lines), len(self._bidi_lines))
            lines = self._chunk_lines(chunk)
            if before != (len(self._bad_lines), len(self._nul_lines), len(self._bidi_lines)):
                self._line_notes()
            return lines
        return self._chunk_lines(chunk)

    def _chunk_lines(self, chunk: Chunk) -> list[Line]:
        text = _decode(chunk.data, chunk.first - 1, self._bad_lines)
        parts = text.split("\n")
        parts.pop()  # empty text after the final "\n"
        first = chunk.first
        if _BIDI.search(text) is not None:  # rare: checked once per chunk, not per line
            for i, part in enumerate(parts):
                if _BIDI.search(part) is not None:
                    parts[i] = _BIDI.sub("", part)
                    self._bidi_lines.append(first + i)
        if "\x00" in text:  # rare: checked once per chunk, not per line
            nul = self._nul_lines
            return [_nul_line(first + i, part, False, nul) for i, part in enumerate(parts)]
        return [Line(first + i, clean(part)) for i, part in enumerate(parts)]

    def count_only(self) -> None:
        """Read the source's bytes (hashed, counted, newlines counted) without decoding them
        into lines: for a file that is not text, whose NULs and bytes that are not UTF-8
        are no news."""
        if self._chunks is None:
            for _ in self.lines():
                pass
            return
        pieces, self._chunks = self._chunks, None
        no, last = 0, b"\n"
        for piece in pieces:
            if piece:
                no += piece.count(b"\n")
                last = piece[-1:]
        if last != b"\n":
            no += 1
            self.ends_with_newline = False
        self.n_lines = no
        self._finish(no)

    def _finish(self, no: int) -> None:
        self._finished = True
        self._line_notes()
        if self.n_bytes == 0 and no == 0:
            self.notes.append(dg.make("empty-file", self.path, None, "the file is empty"))

    def _line_notes(self) -> None:
        """The notes naming lines (NULs, bytes that are not UTF-8, bidi controls), made
        again when a reader decodes a chunk after the pass ended (a fast path walks the
        last chunks after it)."""
        self.notes[:] = [d for d in self.notes if all(d is not x for x in self._listed)]
        said = (
            (
                "truncated-output",
                self._nul_lines,
                "NUL bytes on line(s) {} (a write stopped there, or the log was rotated by "
                "copy-and-truncate): text before a NUL run was dropped, and a line ending in "
                "NULs was read as cut",
            ),
            (
                "bidi-control",
                self._bidi_lines,
                "Unicode bidi controls (which make text show in another order) were removed "
                "from line(s) {}; those lines were read without them",
            ),
            ("non-utf8", self._bad_lines, "bytes that are not UTF-8 were replaced on line(s) {}"),
        )
        listed = [
            dg.make(code, self.path, lines[0], message.format(_some_lines(lines)))
            for code, lines, message in said
            if lines
        ]
        self._listed = listed
        self.notes.extend(listed)


def _nul_line(no: int, raw: str, cut: bool, nul_lines: list[int]) -> Line:
    """A line that may hold NUL bytes, which are never text.

    A crashed writer leaves NULs past its last write, and a log rotated by copy-and-truncate
    starts with them: text after the last NUL run is a fresh start (like a `\\r` rewrite),
    and NULs that end a line mean it was cut there (so its last field is not guessed).
    """
    if "\x00" not in raw:
        return Line(no, clean(raw), cut)
    nul_lines.append(no)
    text = raw[:-1] if raw.endswith("\r") else raw
    ends_in_nul = text.endswith("\x00")
    text = text.rstrip("\x00")
    if "\x00" in text:
        text = text.rsplit("\x00", 1)[1]
    return Line(no, clean(text), cut or ends_in_nul)


def _decode(body: bytes, first_line_before: int, bad_lines: list[int]) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    for i, raw in enumerate(body.split(b"\n")):
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            out.append(raw.decode("utf-8", "replace"))
            bad_lines.append(first_line_before + i + 1)
    return "\n".join(out)


class _Hasher:
    """sha256 of the raw bytes, fed in order; large pieces are hashed on a worker thread
    (hashlib lets go of the GIL), so hashing overlaps with parsing on another core."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()
        self._pool: ThreadPoolExecutor | None = None
        self._last: Future[None] | None = None

    def update(self, data: bytes) -> None:
        if len(data) < _THREAD_MIN:
            self._wait()
            self._h.update(data)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="sessionlens-sha256")
        self._wait()  # one piece in flight: memory stays bounded and order is kept
        self._last = self._pool.submit(self._h.update, data)

    def _wait(self) -> None:
        if self._last is not None:
            self._last.result()
            self._last = None

    def hexdigest(self) -> str:
        self.close()
        return self._h.hexdigest()

    def close(self) -> None:
        try:
            self._wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None


_ALIGN = 64 << 10  # the last bytes of a piece looked at to make it end at a line's end


def _piece_size(fh: BinaryIO, size: int) -> int:
    """How much of a plain file to read next so that the piece ends at a line's end (then
    `chunks` takes it as it is, no copy): `size`, shortened to the last newline among its
    last `_ALIGN` bytes (looked at with a small read of their own); `size` when there is
    none, or the file is not a plain one."""
    if size <= _ALIGN or not hasattr(os, "pread"):  # pread: POSIX only
        return size
    try:
        tail = os.pread(fh.fileno(), _ALIGN, fh.tell() + size - _ALIGN)
    except (OSError, ValueError, io.UnsupportedOperation):
        return size
    if len(tail) < _ALIGN:
        return size  # the file ends within the piece
    nl = tail.rfind(b"\n")
    return size if nl < 0 else size - _ALIGN + nl + 1


def _raw_chunks(
    fh: BinaryIO, hasher: _Hasher, src: SourceText, align: bool = False
) -> Iterator[bytes]:
    try:
        with fh:
            while chunk := fh.read(_piece_size(fh, src.read_size) if align else src.read_size):
                hasher.update(chunk)
                src.n_bytes += len(chunk)
                if src.progress is not None:
                    src.progress(len(chunk))
                yield chunk
        src.sha256 = hasher.hexdigest()
    finally:
        hasher.close()


def _gunzip_chunks(raw: Iterator[bytes]) -> Iterator[bytes]:
    inflater = zlib.decompressobj(wbits=31)
    for chunk in raw:
        data = chunk
        while data:
            yield inflater.decompress(data, CHUNK)
            data = inflater.unconsumed_tail
            if inflater.eof and inflater.unused_data:
                # a concatenated gzip member follows
                data = inflater.unused_data + data
                inflater = zlib.decompressobj(wbits=31)
    yield inflater.flush()


def read(path: Path, display: str | None = None) -> SourceText:
    """Open a file (gzip recognised by its magic bytes) for reading its lines once.

    Raises OSError when the file cannot be opened; callers turn that into `unreadable-file`.
    """
    # unbuffered: pieces are read straight into their bytes objects, and a buffer reads
    # nothing ahead of a piece that `_piece_size` ends at a line's end
    fh: BinaryIO = path.open("rb", buffering=0)
    try:
        if not fh.seekable():
            # a pipe (`parse <(zcat run.log.gz)`) cannot be read twice: hold it whole
            with fh:
                fh = io.BytesIO(fh.read())
        magic = fh.read(2)
        fh.seek(0)
        is_gzip = magic == GZIP_MAGIC
        head_bytes = b""
        nul_first = False  # a NUL run before the head sniffed (its bytes are still read)
        size = 2 * HEAD_BYTES  # the head of UTF-16 text takes twice the bytes
        if is_gzip:
            try:
                with gzip.GzipFile(fileobj=fh, mode="rb") as gz:
                    head_bytes = gz.read(size)
            except (OSError, EOFError, zlib.error):
                head_bytes = b""
        else:
            head_bytes = fh.read(size)
            if head_bytes[:1] == b"\x00":
                # copy-and-truncate rotation leaves a NUL run first: sniff what follows it
                nul_first = True
                rest = head_bytes.lstrip(b"\x00")
                while not rest and (more := fh.read(CHUNK)):
                    rest = more.lstrip(b"\x00")
                head_bytes = rest + fh.read(size)
        fh.seek(0)
    except BaseException:
        fh.close()
        raise
    # UTF-16 has its byte-order mark first: one after a NUL run is no mark (the text is read
    # from the file's first byte, and the decoder would find none there)
    utf16 = not nul_first and head_bytes.startswith(_UTF16_BOMS)
    if utf16:  # read as UTF-8 (the raw bytes are still what is hashed and counted)
        head_bytes = codecs.getincrementaldecoder("utf-16")("replace").decode(head_bytes).encode()
    head_bytes = head_bytes[:HEAD_BYTES]
    src = SourceText(path=display or str(path), name=path.name, head=_head(head_bytes))
    src.binary = binary_kind(head_bytes)
    raw = _raw_chunks(fh, _Hasher(), src, align=not (is_gzip or utf16))
    chunks = _safe_gunzip(raw, src) if is_gzip else raw
    src._chunks = _from_utf16(chunks) if utf16 else chunks
    return src


def binary_kind(head: bytes) -> str | None:
    """What a file is when its first bytes are not text ("a PNG image", "binary data"), or
    None for text: control bytes no log prints make up at least 1 % of the head (NUL runs,
    which crashed writers and log rotation leave, are not counted)."""
    odd = len(head) - len(head.translate(None, _BINARY_BYTES))
    size = len(head) - head.count(0)
    if odd < _BINARY_MIN or odd < size * _BINARY_SHARE:
        return None
    return next((what for magic, what in _MAGIC if head.startswith(magic)), "binary data")


def _from_utf16(pieces: Iterator[bytes]) -> Iterator[bytes]:
    """UTF-16 text (its byte-order mark first) as UTF-8; a unit that is not text is
    replaced."""
    decoder = codecs.getincrementaldecoder("utf-16")("replace")
    for piece in pieces:
        if text := decoder.decode(piece):
            yield text.encode()
    yield decoder.decode(b"", final=True).encode()


def _safe_gunzip(raw: Iterator[bytes], src: SourceText) -> Iterator[bytes]:
    try:
        yield from _gunzip_chunks(raw)
    except zlib.error as exc:
        # a cut or corrupt gzip stream: keep what decompressed, say where it stopped
        for _ in raw:  # finish hashing the raw bytes
            pass
        src.notes.append(
            dg.make(
                "truncated-output", src.path, None, f"the gzip stream is cut or corrupt ({exc})"
            )
        )


def from_text(text: str, path: str = "<text>") -> SourceText:
    """A source from a string (for `parse_text`)."""
    return SourceText(path=path, name=path, head=_head(text[:HEAD_BYTES].encode()), _text=text)


def _head(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    if _BIDI.search(text) is not None:
        text = _BIDI.sub("", text)
    if "\x00" in text:
        return "\n".join(_nul_line(0, part, False, []).text for part in text.split("\n"))
    return "\n".join(clean(part) for part in text.split("\n"))
