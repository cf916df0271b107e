"""The JSON report's text is `json.dumps(..., indent=2)` of the model, byte for byte, also
where its big lists of flat records (a day-long log's outliers) are written column by
column (`render.json.dumps`)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessionlens.render import json as rjson
from tests.conftest import FIXTURES


def _plain(doc: Any) -> str:
    return json.dumps(rjson._finite(doc), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _same(got: str, want: str) -> None:
    """Equal texts; else where they part, shown briefly (no diff of megabytes)."""
    if got == want:
        return
    pairs = enumerate(zip(got, want, strict=False))
    at = next((i for i, (a, b) in pairs if a != b), min(len(got), len(want)))
    raise AssertionError(f"at {at}: {got[at - 60 : at + 60]!r} != {want[at - 60 : at + 60]!r}")


_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6
) | st.sampled_from(["server.log", 'a "quoted"\\ path', "é\u2028\x00\x1b[0m", "\x00sessionlens-"])
_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    _TEXT,
)


@st.composite
def _records(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A list of flat records as the report's outliers are (the same keys in the same
    order), some of one type a key, some mixed, now and then one record that differs."""
    keys = draw(st.lists(_TEXT, min_size=1, max_size=4, unique=True))
    n = draw(st.sampled_from([1, 3, rjson._BIG - 1, rjson._BIG, rjson._BIG + 7]))
    kinds = [draw(st.sampled_from(["str", "int", "float", "finite", "mixed"])) for _ in keys]
    out = []
    for i in range(n):
        rec: dict[str, Any] = {}
        for k, kind in zip(keys, kinds, strict=True):
            if kind == "str":
                rec[k] = f"src{i % 7}.log"
            elif kind == "int":
                rec[k] = i * 1_000_003 - 5
            elif kind == "float":
                rec[k] = [0.1 * i, -0.0, 1e300, 5e-324, math.inf, -math.nan, 2.0][i % 7]
            elif kind == "finite":
                rec[k] = i / 3
            else:
                rec[k] = draw(_SCALAR) if i < 5 else [None, True, 1, 2.5, "x"][i % 5]
        out.append(rec)
    odd = draw(st.sampled_from(["none", "order", "nested", "empty", "sub"]))
    if odd == "order" and len(keys) > 1:
        out[-1] = dict(reversed(list(out[-1].items())))
    elif odd == "nested":
        out[0][keys[0]] = [1, {"a": 2.5}]
    elif odd == "empty":
        out.append({})
    elif odd == "sub":
        out[-1][keys[0]] = _Sub(7)
    return out


class _Sub(int):
    """An int subclass: the encoder's own (`int.__repr__`); the list is not lifted."""


@st.composite
def _docs(draw: st.DrawFn) -> Any:
    """Reports' shapes: nested dicts and lists, big lists of records at several depths, in
    a dict or in a list, and empty lists."""
    leaf = st.one_of(_SCALAR, _records(), st.just([]), st.just({}))
    tree = st.recursive(
        leaf,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
        max_leaves=6,
    )
    return draw(st.dictionaries(_TEXT, tree, min_size=1, max_size=4))


@settings(max_examples=150, deadline=None)
@given(_docs())
def test_the_text_is_the_encoders_byte_for_byte(doc: Any) -> None:
    _same(rjson.dumps(doc), _plain(doc))


def test_big_lists_are_written_here_and_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """A report's outliers: lifted (the writer runs) and the same text."""
    records = [
        {
            "source": f'logs/run{i % 3}/séfor "x"\u2028.log',
            "line": 900 + i,
            "value": [i * 0.25, -0.0, math.inf, math.nan, 1e300, 5e-324][i % 6],
            "mixed": [None, True, False, 3, 2.5, "x", -math.inf][i % 7],
            "flag": [1, True, 0, False][i % 4],  # bools are no ints to the encoder
        }
        for i in range(5000)
    ]
    reordered = [*records[:-1], dict(reversed(list(records[-1].items())))]
    doc = {
        "configs": [{"metrics": {"queue_req": {"n": 3, "outliers": records}}}],
        "x": [records],
        "not lifted": [
            reordered,
            [*records, {"line": _Sub(1)}],
            [*records[:-1], {**records[-1], "line": _Sub(1)}],
            [*records[:-1], {**records[-1], "mixed": [1, {"a": math.nan}]}],
            records[:3],
        ],
    }
    made: list[int] = []
    real = rjson._records

    def counted(rs: list[dict[str, Any]], level: int) -> str:
        made.append(level)
        return real(rs, level)

    monkeypatch.setattr(rjson, "_records", counted)
    _same(rjson.dumps(doc), _plain(doc))
    assert sorted(made) == [2, 5]  # "x": [ [records] ] at level 2; outliers at level 5


@pytest.mark.parametrize("session", ["eagle3-attention-mode", "sweep-attention-backends"])
def test_the_example_reports_json_is_the_encoders(tmp_path: Path, session: str) -> None:
    """The example sessions' reports, as the CLI writes them."""
    from sessionlens.cli import main

    out = tmp_path / "r.json"
    where = str(FIXTURES / "sessions" / session)
    code = main(["report", where, "--format", "json", "--out", str(out), "-q"])
    assert code == 0
    text = out.read_text()
    _same(text, _plain(json.loads(text)))
