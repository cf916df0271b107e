"""The JSON report (DESIGN §7): the `Analysis` model, unrounded; non-finite floats as null.

The text is `json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)` of the model
with every non-finite float made null, byte for byte. Python's encoder writes indented JSON
in Python, item by item: a day-long log's report names hundreds of thousands of outliers
(a list of flat records each), and writing them took most of `report --format json`. Such a
list (`_BIG` records or more, each a dict of the same keys in the same order, each value a
string, an int, a float, a bool or None) is written here instead, column by column with the
encoder's own C functions for its strings and numbers, and set in the text where the
encoder wrote a placeholder for it; every other value is the encoder's.
"""

from __future__ import annotations

import functools
import json
import math
import uuid
from json.encoder import encode_basestring  # the encoder's own, in C where it can be
from typing import Any

from ..analysis import Analysis

_BIG = 256  # records in a list written column by column (fewer: by the encoder)
_INDENT = "  "
_SCALARS = (str, int, float, bool, type(None))
_dumps = functools.partial(json.dumps, indent=len(_INDENT), ensure_ascii=False, allow_nan=False)


def _finite(value: Any) -> Any:
    """The value with every non-finite float made None."""
    return _lifted(value, None, "")


def render(analysis: Analysis) -> str:
    """The report as strict JSON text, keys in contract order."""
    return dumps(analysis.model_dump(mode="python"))


def dumps(doc: Any) -> str:
    """`json.dumps(_finite(doc), indent=2, ensure_ascii=False, allow_nan=False) + "\n"`,
    the same text, its big lists of flat records written column by column."""
    lifted: list[list[dict[str, Any]]] = []
    tag = f"\x00sessionlens-{uuid.uuid4().hex}-"
    text = _dumps(_lifted(doc, lifted, tag))
    if not lifted:
        return text + "\n"
    # the placeholders, in the text's order, found in one pass
    prefix = encode_basestring(tag)[:-1]
    out: list[str] = []
    met: list[int] = []
    done = 0
    at = text.find(prefix)
    while at >= 0:
        end = text.find('"', at + len(prefix))
        k = int(text[at + len(prefix) : end])
        start = text.rfind("\n", 0, at) + 1  # the list opens on this line, at its indent
        level = (at - start - len(text[start:at].lstrip(" "))) // len(_INDENT)
        out += [text[done:at], _records(lifted[k], level)]
        met.append(k)
        done = end + 1
        at = text.find(prefix, done)
    if sorted(met) != list(range(len(lifted))):  # never, with a fresh tag: be sure
        return _dumps(_finite(doc)) + "\n"
    out += [text[done:], "\n"]
    return "".join(out)


def _lifted(value: Any, lifted: list[list[dict[str, Any]]] | None, tag: str) -> Any:
    """The value with every non-finite float made None and, where `lifted` is given, each
    big list of flat records replaced by a placeholder string (the tag and its place in
    `lifted`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _lifted(v, lifted, tag) for k, v in value.items()}
    if isinstance(value, list):
        if lifted is not None and len(value) >= _BIG and _flat(value):
            lifted.append(value)
            return f"{tag}{len(lifted) - 1}"
        return [_lifted(v, lifted, tag) for v in value]
    return value


def _flat(records: list[Any]) -> bool:
    """Whether every item is a non-empty dict of the first's string keys, in its order,
    with values of the exact types `_column` writes."""
    first = records[0]
    if not isinstance(first, dict) or not first:
        return False
    keys = list(first)
    if not all(type(k) is str for k in keys):
        return False
    if not all(type(r) is dict and list(r) == keys for r in records):
        return False
    return all(type(v) in _SCALARS for r in records for v in r.values())


def _records(records: list[dict[str, Any]], level: int) -> str:
    """The list as `json.dumps(_finite(records), indent=2, ...)` writes it when it opens
    at indent `level`: each record `{`, its items a level deeper, `}`."""
    keys = list(records[0])
    item = "\n" + _INDENT * (level + 1)
    field = "\n" + _INDENT * (level + 2)
    columns = [_column([r[k] for r in records]) for k in keys]
    # one record: "{" + field + '"k1": ' + v1 + "," + field + '"k2": ' + v2 + item + "}"
    heads = [("," if i else "{") + field + encode_basestring(k) + ": " for i, k in enumerate(keys)]
    close = item + "}"
    body = ("," + item).join(
        "".join(map(str.__add__, heads, values)) + close for values in zip(*columns, strict=True)
    )
    return "[" + item + body + "\n" + _INDENT * level + "]"


def _column(values: list[Any]) -> list[str]:
    """A key's values as the encoder writes them (non-finite floats as null)."""
    kinds = {type(v) for v in values}
    if kinds == {str}:
        return list(map(encode_basestring, values))
    if kinds == {int}:
        return list(map(int.__repr__, values))
    if kinds == {float} and all(map(math.isfinite, values)):
        return list(map(float.__repr__, values))
    return [_scalar(v) for v in values]


def _scalar(v: Any) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if type(v) is int:
        return int.__repr__(v)
    if type(v) is float:
        return float.__repr__(v) if math.isfinite(v) else "null"
    return encode_basestring(v)
