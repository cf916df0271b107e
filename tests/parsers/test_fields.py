"""_fields: the format-free field layer (numbers, percent, units, timestamps, rank tags,
outer prefixes, `label: value` items)."""

from __future__ import annotations

import json
import math
import random

import pytest

from sessionlens._lines import Line
from sessionlens.parsers import _fields as F


@pytest.mark.parametrize(
    ("text", "at_end", "cut", "value", "is_cut"),
    [
        ("1,238.36", False, False, 1238.36, False),
        ("12,345,678", True, False, 12345678.0, False),
        ("-1,000.5", False, False, -1000.5, False),
        ("1,23", True, True, None, True),  # `1,234` cut after two digits of a group
        ("1,2", False, False, None, False),  # no grouping: not a number
        ("1238.36", False, False, 1238.36, False),
    ],
)
def test_thousands_separators(
    text: str, at_end: bool, cut: bool, value: float | None, is_cut: bool
) -> None:
    assert F.read_number(text, at_end=at_end, line_cut=cut, grouped=True) == F.Num(value, is_cut)


def test_grouped_numbers_are_read_only_when_asked() -> None:
    assert F.read_number("1,238.36", at_end=False, line_cut=False) == F.Num(None)
    assert F.ungroup(" 1,238.36 ") == "1238.36"
    assert F.ungroup("1,2,3") == "1,2,3"


def test_a_value_cut_at_the_end_of_a_cut_line() -> None:
    assert F.read_number("12", at_end=True, line_cut=True) == F.Num(None, cut=True)
    assert F.read_number("12.34", at_end=True, line_cut=True, decimals=2) == F.Num(12.34)
    assert F.read_number("12.3", at_end=False, line_cut=False, decimals=2) == F.Num(None, cut=True)
    assert F.decimals_of("1.250e3") == 3


@pytest.mark.parametrize(
    ("value", "unit", "to", "want"),
    [
        (123456, "ns", "ms", 0.123456),
        (1.5, "s", "ms", 1500.0),
        (250, "us", "ms", 0.25),
        (250, "\u00b5s", "ms", 0.25),
        (2, "min", "s", 120.0),
        (1234, "ms", "s", 1.234),
    ],
)
def test_time_units(value: float, unit: str, to: str, want: float) -> None:
    assert F.time_unit(unit)
    assert F.convert_time(value, unit, to) == want


def test_an_unknown_unit_is_an_error_not_a_guess() -> None:
    assert not F.time_unit("tok/s")
    with pytest.raises(ValueError, match="not a unit of time: 'tok/s'"):
        F.convert_time(1.0, "tok/s")


def test_percent_timestamps_and_rank_tags() -> None:
    assert F.percent("89.6", 89.6) == 0.896
    assert F.last_timestamp("[2025-11-14 09:12:44 TP0] x 09:12:45") == "09:12:45"
    assert F.rank_of("[2025-11-14 09:12:44 DP1 TP3] ") == ("DP1 TP3", {"DP": 1, "TP": 3})
    assert F.rank_of("[2025-11-14 09:12:44] ") == (None, {})
    # a tag of 5000 digits is no rank (`int` refuses more than 4300 digits)
    assert F.rank_of(f"[2025-11-14 09:12:44 TP{'1' * 5000}] ") == (None, {})
    assert F.rank_of("[2025-11-14 09:12:44 TP123456789] ") == ("TP123456789", {"TP": 123456789})


@pytest.mark.parametrize(
    ("line", "bare"),
    [
        ("2025-11-14T09:12:44.123Z Successful requests: 1", "Successful requests: 1"),
        ("[pod/sgl-0/main] Mean TTFT (ms): 3.2", "Mean TTFT (ms): 3.2"),
        ("7:Run 1/5: x", "Run 1/5: x"),  # grep -n
    ],
)
def test_outer_prefixes(line: str, bare: str) -> None:
    assert F.strip_outer(line) == bare


def test_key_value_items() -> None:
    text = "Avg prompt throughput: 1.5 tokens/s, Running: 3 reqs, KV fetch: 1, 2, 3"
    fields = F.keyed_fields(text, 0)
    assert [(f.key, f.value) for f in fields] == [
        ("avg prompt throughput", "1.5 tokens/s"),
        ("running", "3 reqs"),
        ("kv fetch", "1, 2, 3"),
    ]
    read, stop = F.read_value(text, fields[0].start, len(text), Line(1, text), 1)
    assert (read.value, text[stop:].startswith(" tokens/s")) == (1.5, True)
    table = {"running": ("running_req", "num", 0)}
    assert F.lookup_field("info ] running", table) == ("running_req", "num", 0)


def test_strip_outer_pytest_log_capture_and_comment_markers() -> None:
    from sessionlens.parsers._fields import strip_outer

    assert (
        strip_outer("INFO     root:vllm_bench.py:126 Mean TTFT (ms): 1.0") == "Mean TTFT (ms): 1.0"
    )
    assert strip_outer("WARNING  perf.serve:test_x.py:9 x") == "x"
    assert strip_outer("# Successful requests:   1000") == "Successful requests:   1000"
    assert strip_outer("#") == ""
    assert strip_outer("#queue-req: 3") == "#queue-req: 3"  # a field, not a marker
    assert strip_outer("## Results") == "## Results"  # a heading: the block's label


def _yaml_values(text: str) -> list[tuple[tuple[str | int, ...], object, int]]:
    reader = F.YamlLines()
    events = [ev for no, line in enumerate(text.split("\n"), 1) for ev in reader.feed(line, no)]
    events += reader.finish()
    return [(ev.path, ev.value, ev.line) for ev in events if ev.kind == "value"]


YAML = """benchmarks:
- config:
    strategy:
      type_: synchronous
  metrics:
    ttft:
      p99: 53.5
    std_dev: 4.2
  run_index: 0
- config:
    type_: concurrent
  run_index: 1
metadata:
  version: 0.8.1
"""


def test_yaml_paths_and_lines() -> None:
    assert _yaml_values(YAML) == [
        (("benchmarks", 0, "config", "strategy", "type_"), "synchronous", 4),
        (("benchmarks", 0, "metrics", "ttft", "p99"), 53.5, 7),
        (("benchmarks", 0, "metrics", "std_dev"), 4.2, 8),
        (("benchmarks", 0, "run_index"), 0, 9),
        (("benchmarks", 1, "config", "type_"), "concurrent", 11),
        (("benchmarks", 1, "run_index"), 1, 12),
        (("metadata", "version"), "0.8.1", 14),
    ]


@pytest.mark.parametrize(
    ("noise", "after"),
    [
        *[
            (noise, after)
            for noise in (
                'INFO:     127.0.0.1:51234 - "POST /generate HTTP/1.1" 200 OK',
                "WARNING: Retrying after connection broken by ReadTimeoutError",
            )
            for after in (1, 8, 9, 12)
        ],
        # Where the sequence may go on (after `benchmarks:`, between items) a `- text` line
        # is an item like any other: only a line deeper than its scalar shows it foreign.
        ("- a list item of nothing", 8),
    ],
)
def test_a_foreign_line_that_closes_the_open_mappings_is_dropped(noise: str, after: int) -> None:
    """A log line at indent 0 that reads as a key (or an item) would close every open
    mapping; the line after it, deeper than its scalar, shows that it was foreign."""
    lines = YAML.split("\n")
    noisy = "\n".join([*lines[:after], noise, noise, *lines[after:]])
    want = [(p, v, n + 2 if n > after else n) for p, v, n in _yaml_values(YAML)]
    got = _yaml_values(noisy)
    if after == 12:  # before `metadata:`, a sibling of `benchmarks`: a key like any other
        got = [g for g in got if g[0][0] in ("benchmarks", "metadata")]
    assert got == want


def test_a_top_level_scalar_after_the_list_is_kept() -> None:
    text = "benchmarks:\n- run_index: 0\n  id_: a\nversion: 2\nname: x\n"
    assert _yaml_values(text) == [
        (("benchmarks", 0, "run_index"), 0, 2),
        (("benchmarks", 0, "id_"), "a", 3),
        (("version",), 2, 4),
        (("name",), "x", 5),
    ]


def _json_text_of(rng: random.Random, depth: int = 0) -> object:
    """A random JSON value: nested objects and arrays (some empty), strings with escapes and
    characters beyond ASCII, numbers of every form, the words Python's json writes."""
    pick = rng.random()
    if depth < 4 and pick < 0.3:
        return {
            rng.choice(["a", "b k", 'q"t', "é", "x\\y", "requests", "0"]) + str(k): _json_text_of(
                rng, depth + 1
            )
            for k in range(rng.randint(0, 4))
        }
    if depth < 4 and pick < 0.45:
        return [_json_text_of(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return rng.choice(
        [
            "plain",
            "tab\there",
            'quote " and \\ back',
            "snow ☃ \u2028",
            "",
            0,
            -12,
            3.25,
            1e-7,
            -0.0,
            10**30,
            True,
            False,
            None,
            math.nan,
            math.inf,
            -math.inf,
            "x" * rng.randint(0, 300),
        ]
    )


_NOISE = [
    "2026-03-02 09:15:00 INFO a log line pasted in",
    "$ cat benchmarks.json",
    "}",
    "],",
    '"key": 1',
    "12,",
    '"k": {,',
    "  ",
    "```",
    '  "late": 01,',
    '  "s": "unterminated',
]


@pytest.mark.parametrize("seed", range(300))
def test_json_lines_read_one_line_at_a_time_as_token_by_token(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`JsonLines` reads a line that is one member, element or closing bracket with one
    match (`_line`); every line of random documents (indented by spaces or tabs, or
    compact, one after another, with noise among their lines, cut at the end) gives the
    same events, and leaves the same state, as reading it token by token."""
    rng = random.Random(seed)
    docs = []
    for _ in range(rng.randint(1, 3)):
        indent = rng.choice([None, 1, 2, 4, "\t"])
        doc = {"benchmarks": [_json_text_of(rng) for _ in range(rng.randint(1, 3))]}
        docs.extend(json.dumps(doc, indent=indent, ensure_ascii=rng.random() < 0.5).split("\n"))
    lines = list(docs)
    for _ in range(rng.randint(0, 6)):
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(_NOISE))
    cut = rng.random() < 0.5 and lines[-1]
    if cut:
        lines[-1] = lines[-1][: rng.randrange(len(lines[-1]))]

    def read(fast: bool) -> list[object]:
        if not fast:
            monkeypatch.setattr(F.JsonLines, "_line", lambda self, text, no: None)
        reader = F.JsonLines()
        out: list[object] = []
        for no, text in enumerate(lines, 1):
            events = reader.feed(text, no, cut=bool(cut) and no == len(lines))
            out.append([(e.kind, e.path, e.line, repr(e.value), e.raw) for e in events])
            out.append((reader.documents, repr(reader._stack)))
        monkeypatch.undo()
        return out

    assert read(fast=True) == read(fast=False)


def test_a_line_ending_in_a_newline_is_no_member_read_in_one_match() -> None:
    # (`$` would match before it; token by token, a newline is no blank of JSON's here)
    reader = F.JsonLines()
    reader.feed("{", 1)
    assert [e.kind for e in reader.feed('  "a": 1\n', 2)] == ["skip"]
    assert [e.kind for e in reader.feed('  "a": 1', 3)] == ["value"]
