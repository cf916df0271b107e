"""A Parquet file's footer without its Arrow schema.

polars writes a categorical column as dictionary pages straight from its categories (no
string is made and hashed again per row), and records in the footer's key-value metadata
(`ARROW:schema`) that the column was a categorical, so that polars gives one back. The
tidy table's strings are strings (DESIGN §3): with that one entry left out, every reader
reads the Parquet types (a dictionary-encoded UTF-8 byte array is a string), and the data
pages are as written.

The footer is Thrift's compact protocol (`FileMetaData`, field 5 `key_value_metadata`). It
is read strictly: anything this reader does not know raises ValueError, and the caller then
writes the file another way.
"""

from __future__ import annotations

import struct

_MAGIC = b"PAR1"
_ARROW_SCHEMA = b"ARROW:schema"
_KEY_VALUE_METADATA = 5  # FileMetaData's field
_LIST, _STRUCT, _BINARY = 9, 12, 8  # compact protocol types
_DEPTH = 64  # nesting a footer never needs (FileMetaData nests a few levels)


def without_arrow_schema(data: bytes) -> bytes:
    """The Parquet file `data` with no `ARROW:schema` entry in its footer's key-value
    metadata (the field left out when nothing else is in it); the rest byte for byte.
    ValueError when `data` is not a Parquet file whose footer this reader reads."""
    start, tail = footer_without_arrow_schema(data)
    return bytes(data[:start]) + tail


def footer_without_arrow_schema(data: bytes | memoryview) -> tuple[int, bytes]:
    """Where the footer of the Parquet file `data` starts, and what is to replace all from
    there on (the footer without `ARROW:schema`, its length and the closing magic): for
    mending a file in place. ValueError as `without_arrow_schema`."""
    if len(data) < 12 or data[:4] != _MAGIC or data[-4:] != _MAGIC:
        raise ValueError("not a Parquet file")
    (size,) = struct.unpack("<i", data[-8:-4])
    start = len(data) - 8 - size
    if size <= 0 or start < 4:
        raise ValueError("a Parquet footer length out of the file")
    footer = bytes(data[start:-8])
    try:
        fields, end = _fields(footer, 0, 0)
        if end != len(footer):
            raise ValueError("bytes after the Parquet footer")
        out = bytearray()
        prev = 0
        for fid, kind, value_at, value_end in fields:
            value = footer[value_at:value_end]
            if fid == _KEY_VALUE_METADATA:
                if kind != _LIST:
                    raise ValueError("key_value_metadata is not a list")
                kept = _kept_entries(footer, value_at)
                if not kept:
                    continue
                value = _list_header(len(kept), _STRUCT) + b"".join(kept)
            out += _field_header(fid, kind, prev) + value
            prev = fid
        out.append(0)  # the struct's stop byte
    except IndexError as e:
        raise ValueError("a Parquet footer cut short") from e
    return start, bytes(out) + struct.pack("<i", len(out)) + _MAGIC


def _kept_entries(b: bytes, at: int) -> list[bytes]:
    """The encoded KeyValue structs of the list at `at`, but `ARROW:schema`'s."""
    count, kind, at = _list_head(b, at)
    if kind != _STRUCT:
        raise ValueError("key_value_metadata holds no structs")
    kept = []
    for _ in range(count):
        fields, end = _fields(b, at, 1)
        key = None
        for fid, kind, value_at, _ in fields:
            if fid == 1 and kind == _BINARY:
                n, p = _varint(b, value_at)
                key = b[p : p + n]
        if key != _ARROW_SCHEMA:
            kept.append(b[at:end])
        at = end
    return kept


def _varint(b: bytes, at: int) -> tuple[int, int]:
    out = shift = 0
    while True:
        c = b[at]
        at += 1
        out |= (c & 0x7F) << shift
        if not c & 0x80:
            return out, at
        shift += 7
        if shift > 70:
            raise ValueError("a varint too long")


def _list_head(b: bytes, at: int) -> tuple[int, int, int]:
    """A list's (count, element type, first element's offset)."""
    head = b[at]
    count, kind = head >> 4, head & 0x0F
    at += 1
    if count == 15:
        count, at = _varint(b, at)
    return _counted(b, at, count), kind, at


def _counted(b: bytes, at: int, count: int) -> int:
    """A list's or map's count, when its elements can fit in the bytes left: each takes
    one byte at least (a count of 2**60 would otherwise be walked element by element)."""
    if count > len(b) - at:
        raise ValueError("a Parquet footer list longer than the footer")
    return count


def _skip(b: bytes, at: int, kind: int, depth: int) -> int:
    """The offset after a value of compact type `kind` at `at`."""
    if depth > _DEPTH:
        raise ValueError("a Parquet footer nested too deep")
    if kind in (1, 2):  # a bool field: its value is in the field header
        return at
    if kind == 3:  # byte
        return at + 1
    if kind in (4, 5, 6):  # i16, i32, i64 (zigzag varints)
        return _varint(b, at)[1]
    if kind == 7:  # double
        return at + 8
    if kind == _BINARY:
        n, at = _varint(b, at)
        return at + n
    if kind in (_LIST, 10):  # list, set
        count, elem, at = _list_head(b, at)
        for _ in range(count):
            at = at + 1 if elem in (1, 2) else _skip(b, at, elem, depth + 1)
        return at
    if kind == 11:  # map
        count, at = _varint(b, at)
        count = _counted(b, at, count)
        if count:
            kv = b[at]
            at += 1
            for _ in range(count):  # a bool key or value is a byte here, as in a list
                for elem in (kv >> 4, kv & 0x0F):
                    at = at + 1 if elem in (1, 2) else _skip(b, at, elem, depth + 1)
        return at
    if kind == _STRUCT:
        return _fields(b, at, depth + 1)[1]
    raise ValueError(f"unknown Thrift compact type {kind}")


def _fields(b: bytes, at: int, depth: int) -> tuple[list[tuple[int, int, int, int]], int]:
    """A struct's fields at `at`, each (id, type, value offset, value end), and its end."""
    fid = 0
    out: list[tuple[int, int, int, int]] = []
    while True:
        head = b[at]
        at += 1
        if head == 0:
            return out, at
        kind, delta = head & 0x0F, head >> 4
        if delta:
            fid += delta
        else:
            z, at = _varint(b, at)
            fid = (z >> 1) ^ -(z & 1)
        end = _skip(b, at, kind, depth)
        out.append((fid, kind, at, end))
        at = end


def _field_header(fid: int, kind: int, prev: int) -> bytes:
    delta = fid - prev
    if 0 < delta <= 15:
        return bytes([(delta << 4) | kind])
    return bytes([kind]) + _uvarint((fid << 1) ^ (fid >> 15))


def _list_header(count: int, kind: int) -> bytes:
    if count < 15:
        return bytes([(count << 4) | kind])
    return bytes([0xF0 | kind]) + _uvarint(count)


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        c = n & 0x7F
        n >>= 7
        if n:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)
