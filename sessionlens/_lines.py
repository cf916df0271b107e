"""Bytes to numbered, cleaned lines; knows no log format.

Owns reading (plain or gzip, in bounded chunks, hashing the raw bytes in the same pass),
decoding (invalid UTF-8 replaced, with a diagnostic), line splitting by DESIGN §2 (`\\n` only;
CRLF; a `\\r` progress-bar rewrite keeps the text after the last `\\r`), and cleanup of terminal
and Markdown noise (ANSI codes with or without ESC, fences, quote markers, backticks, bold).
A last line without `\\n` is flagged `cut`, so parsers can tell a field that may be cut.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from . import diagnostics as dg

CHUNK = 1 << 20
HEAD_BYTES = 64 * 1024
GZIP_MAGIC = b"\x1f\x8b"

# ANSI: full CSI sequences with ESC; without ESC only the SGR form `[..m` that pastes keep.
_ANSI_ESC = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>]")
_ANSI_BARE = re.compile(r"\[[0-9;]{0,12}m")
_FENCE = re.compile(r"^\s*(?:>\s?)*(?:```|~~~)[\w+-]*\s*$")
_QUOTE = re.compile(r"^(?:\s{0,3}>\s?)+")


@dataclass(frozen=True, slots=True)
class Line:
    """One line: its 1-based number, its cleaned text, and whether it is a cut last line."""

    no: int
    text: str
    cut: bool = False


def clean(text: str) -> str:
    """Remove terminal and Markdown noise from one line (no `\\n` inside)."""
    if "\r" in text:
        text = text.rstrip("\r")
        if "\r" in text:
            text = text.rsplit("\r", 1)[1]
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
        text = text.replace("**", "")
    return text


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

    def lines(self) -> Iterator[Line]:
        """Numbered cleaned lines, in order; may be iterated once for a file."""
        if self._text is not None:
            data = self._text.encode("utf-8", "surrogatepass")
            self.sha256 = hashlib.sha256(data).hexdigest()
            self.n_bytes = len(data)
            yield from self._split(iter([data]), hashed=True)
        elif self._chunks is not None:
            chunks, self._chunks = self._chunks, None
            yield from self._split(chunks, hashed=True)

    def _split(self, chunks: Iterator[bytes], hashed: bool) -> Iterator[Line]:
        no = 0
        rest = b""
        bad_lines: list[int] = []
        for chunk in chunks:
            if not chunk:
                continue
            data = rest + chunk
            cut_at = data.rfind(b"\n")
            if cut_at < 0:
                rest = data
                continue
            body, rest = data[: cut_at + 1], data[cut_at + 1 :]
            text = _decode(body, no, bad_lines)
            parts = text.split("\n")
            parts.pop()  # empty text after the final "\n"
            for part in parts:
                no += 1
                yield Line(no, clean(part))
        if rest:
            no += 1
            text = _decode(rest, no - 1, bad_lines)
            self.ends_with_newline = False
            yield Line(no, clean(text), cut=True)
        self.n_lines = no
        if bad_lines:
            shown = ", ".join(str(n) for n in bad_lines[:5])
            more = f" and {len(bad_lines) - 5} more" if len(bad_lines) > 5 else ""
            self.notes.append(
                dg.make(
                    "non-utf8",
                    self.path,
                    bad_lines[0],
                    f"bytes that are not UTF-8 were replaced on line(s) {shown}{more}",
                )
            )
        if self.n_bytes == 0 and no == 0:
            self.notes.append(dg.make("empty-file", self.path, None, "the file is empty"))


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


def _raw_chunks(fh: BinaryIO, hasher: hashlib._Hash, src: SourceText) -> Iterator[bytes]:
    with fh:
        while chunk := fh.read(CHUNK):
            hasher.update(chunk)
            src.n_bytes += len(chunk)
            yield chunk
    src.sha256 = hasher.hexdigest()


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
    fh = path.open("rb")
    magic = fh.read(2)
    fh.seek(0)
    is_gzip = magic == GZIP_MAGIC
    head_bytes = b""
    if is_gzip:
        try:
            with gzip.open(path, "rb") as gz:
                head_bytes = gz.read(HEAD_BYTES)
        except (OSError, EOFError, zlib.error):
            head_bytes = b""
    else:
        head_bytes = fh.read(HEAD_BYTES)
        fh.seek(0)
    src = SourceText(path=display or str(path), name=path.name, head=_head(head_bytes))
    hasher = hashlib.sha256()
    raw = _raw_chunks(fh, hasher, src)
    src._chunks = _safe_gunzip(raw, src) if is_gzip else raw
    return src


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
    return "\n".join(clean(part) for part in text.split("\n"))
