"""The Parquet footer without its Arrow schema (`_parquet`), and the table written that way."""

from __future__ import annotations

import contextlib
import io
import struct
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from sessionlens import _parquet
from sessionlens.model import Sample, SampleColumns

TEXT = st.one_of(st.none(), st.text(max_size=12))


def _written(frame: pl.DataFrame, **kw: object) -> bytes:
    buf = io.BytesIO()
    frame.write_parquet(buf, **kw)  # type: ignore[arg-type]
    return buf.getvalue()


def _metadata(data: bytes) -> dict[str, str]:
    return pl.read_parquet_metadata(io.BytesIO(data))


def _as_categoricals(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(pl.col(pl.String).cast(pl.Categorical))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(TEXT, TEXT, st.one_of(st.none(), st.floats()), st.integers(-9, 9))),
)
def test_categoricals_come_back_as_the_strings(rows: list[tuple[object, ...]]) -> None:
    frame = pl.DataFrame(
        rows,
        schema={"a": pl.String, "b": pl.String, "v": pl.Float64, "n": pl.Int64},
        orient="row",
    )
    raw = _written(_as_categoricals(frame))
    assert pl.read_parquet(io.BytesIO(raw)).schema["a"] == pl.Categorical  # what it fixes
    data = _parquet.without_arrow_schema(raw)
    assert "ARROW:schema" not in _metadata(data)
    assert_frame_equal(pl.read_parquet(io.BytesIO(data)), frame)
    assert _parquet.without_arrow_schema(data) == data  # nothing left to take out


@pytest.mark.parametrize("entries", [1, 14, 15, 40])
def test_other_metadata_is_kept(entries: int) -> None:
    frame = _as_categoricals(pl.DataFrame({"a": ["x", None, "y"], "v": [1.0, 2.0, 3.0]}))
    mine = {f"key-{i}": f"value {i}" for i in range(entries)}
    data = _parquet.without_arrow_schema(_written(frame, metadata=mine))
    assert _metadata(data) == mine
    assert pl.read_parquet(io.BytesIO(data))["a"].to_list() == ["x", None, "y"]


def test_only_the_footer_changes() -> None:
    frame = _as_categoricals(pl.DataFrame({"a": ["p", "q"] * 500, "v": range(1000)}))
    raw = _written(frame)
    data = _parquet.without_arrow_schema(raw)
    (size,) = struct.unpack("<i", raw[-8:-4])
    body = len(raw) - 8 - size
    assert data[:body] == raw[:body]  # the data pages, byte for byte
    assert len(data) < len(raw)


def test_a_damaged_file_is_a_value_error() -> None:
    raw = _written(_as_categoricals(pl.DataFrame({"a": ["x", "y"], "v": [1.0, 2.0]})))
    (size,) = struct.unpack("<i", raw[-8:-4])
    body = len(raw) - 8 - size
    for data in (b"", b"PAR1", raw[:-1], b"XXXX" + raw[4:], raw[:-8] + struct.pack("<i", len(raw))):
        with pytest.raises(ValueError, match="Parquet"):
            _parquet.without_arrow_schema(data)
    bad: list[bytes] = []
    # a footer cut anywhere, its length still saying the whole
    for cut in range(body + 1, len(raw) - 8):
        bad.append(raw[:body] + raw[body:cut] + raw[-8:])
    # every footer byte set to a value that changes what it says
    for at in range(body, len(raw) - 8):
        for byte in (0x00, 0x0F, 0xFF):
            bad.append(raw[:at] + bytes([byte]) + raw[at + 1 :])
    for data in bad:  # ValueError is the only failure it may have (then strings are written)
        with contextlib.suppress(ValueError):
            _parquet.without_arrow_schema(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_give_a_file_or_a_value_error(junk: bytes) -> None:
    data = b"PAR1" + junk + struct.pack("<i", len(junk)) + b"PAR1"
    with contextlib.suppress(ValueError):
        _parquet.without_arrow_schema(data)


def _table() -> SampleColumns:
    cols = SampleColumns()
    for i in range(50):
        s = Sample(
            metric=("gen_throughput_tok_s", "running_req")[i % 2],
            value=i / 3,
            line=i + 1,
            block=None if i % 4 else i,
            run=None,
            rank=None if i % 5 == 0 else f"TP{i % 3}",
            ts=f"2026-01-01 10:00:{i % 60:02d}",
        )
        cols.add("cfg", "a.log", s)
    cols.set_launches({"a.log": [(0, "a.log#1"), (25, "a.log#2")]})
    cols._pack()  # a packed part, as a parser's batches are held
    return cols


def test_the_table_reads_back_as_strings() -> None:
    cols = _table()
    buf = io.BytesIO()
    cols.write_parquet(buf)
    data = buf.getvalue()
    assert "ARROW:schema" not in _metadata(data)
    back = pl.read_parquet(io.BytesIO(data))
    assert_frame_equal(back, cols.frame())
    assert back["launch"].to_list()[23:25] == ["a.log#1", "a.log#2"]


def test_a_footer_it_cannot_read_gives_strings_still(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def unknown(data: object) -> tuple[int, bytes]:
        raise ValueError("a footer this reader does not know")

    monkeypatch.setattr(_parquet, "footer_without_arrow_schema", unknown)
    cols = _table()
    buf = io.BytesIO()
    cols.write_parquet(buf)
    data = buf.getvalue()
    assert "ARROW:schema" in _metadata(data)  # written the other way: strings, as strings
    assert_frame_equal(pl.read_parquet(io.BytesIO(data)), cols.frame())
    cols.write_parquet(tmp_path / "s.parquet")
    assert "ARROW:schema" in _metadata((tmp_path / "s.parquet").read_bytes())
    assert_frame_equal(pl.read_parquet(tmp_path / "s.parquet"), cols.frame())


def test_a_path_is_written_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A path (`~` expanded) gets the file mended where it was written; a file object takes
    every byte even when it writes a few at a time."""
    monkeypatch.setenv("HOME", str(tmp_path))
    cols = _table()
    cols.write_parquet("~/s.parquet")
    data = (tmp_path / "s.parquet").read_bytes()
    assert "ARROW:schema" not in _metadata(data)
    assert_frame_equal(pl.read_parquet(io.BytesIO(data)), cols.frame())

    class Trickle(io.RawIOBase):
        def __init__(self) -> None:
            self.got = bytearray()

        def writable(self) -> bool:
            return True

        def write(self, b: Any) -> int:
            self.got += bytes(b)[:7]
            return min(7, len(b))

    out = Trickle()
    cols.write_parquet(out)
    assert bytes(out.got) == data


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _binary(b: bytes) -> bytes:
    return _uvarint(len(b)) + b


def test_a_footer_of_every_compact_type_is_read() -> None:
    """A hand-made footer: a map of bools (a byte each), a long-form field header (a field
    id going back), a list of 15 and more, a nested struct, a double; only the
    `ARROW:schema` entry goes."""

    def kv(k: bytes, v: bytes) -> bytes:  # KeyValue {1: key, 2: value}
        return b"\x18" + _binary(k) + b"\x18" + _binary(v) + b"\x00"

    body = b"\x15\x02"  # field 1, i32: 1
    body += b"\x9b" + _uvarint(2) + b"\x81" + _binary(b"a") + b"\x01" + _binary(b"b") + b"\x02"
    body += b"\x19" + bytes([0xF5]) + _uvarint(16) + bytes(range(1, 33, 2))  # list<i32> of 16
    body += b"\x1c" + b"\x17" + b"\x00" * 8 + b"\x00"  # field 12: struct {1: double}
    keep = kv(b"mine", b"x" * 20)
    body += b"\x09" + _uvarint(5 << 1) + b"\x2c" + kv(b"ARROW:schema", b"QUJD") + keep
    body += b"\x00"
    data = b"PAR1" + body + struct.pack("<i", len(body)) + b"PAR1"
    start, tail = _parquet.footer_without_arrow_schema(data)
    assert start == 4
    out = tail[:-8]
    assert b"ARROW:schema" not in out
    assert keep in out
    assert out.startswith(body[: body.index(b"\x09" + _uvarint(5 << 1))])  # the rest as it was


def test_a_footer_list_longer_than_the_footer_is_a_value_error() -> None:
    """A list of 2**60 bools (a byte each) in a footer of a few bytes: refused at once, not
    walked element by element (hypothesis found such bytes hanging the reader)."""
    from sessionlens._parquet import _uvarint

    for kind in (1, 3, 12):  # bools, bytes, structs
        footer = bytes([0x19, 0xF0 | kind]) + _uvarint(1 << 60) + b"\x00"
        data = b"PAR1" + footer + struct.pack("<i", len(footer)) + b"PAR1"
        with pytest.raises(ValueError, match="longer than the footer"):
            _parquet.without_arrow_schema(data)
    footer = bytes([0x1B]) + _uvarint(1 << 60) + b"\x11\x00"  # a map as long
    data = b"PAR1" + footer + struct.pack("<i", len(footer)) + b"PAR1"
    with pytest.raises(ValueError, match="longer than the footer"):
        _parquet.without_arrow_schema(data)
