"""The field layer under every format: numbers, percentages, units, timestamps, rank tags,
outer prefixes and `label: value` items, read by DESIGN §2's rules ("never guess a number").

It knows no format: no format's name, line shape or metric is here, and nothing here yields
records. Format modules (and `_blocks`) call these; they never copy them.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeGuard

from .._lines import Line

# ------------------------------------------------------------------ numbers

NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_SPECIAL = {
    "nan": float("nan"),
    "inf": float("inf"),
    "-inf": float("-inf"),
    "infinity": float("inf"),
    "-infinity": float("-inf"),
}


def decimals_of(text: str) -> int:
    """Digits after the decimal point in a printed number."""
    body = text.split("e")[0].split("E")[0]
    return len(body.split(".", 1)[1]) if "." in body else 0


@dataclass(frozen=True, slots=True)
class Num:
    """A number read from a field, or why none could be read."""

    value: float | None
    cut: bool = False  # the field was cut mid-value: no sample, a `truncated-value`


# Digits grouped by thousands (`1,238.36`: trtllm-bench, console tables, pasted sheets):
# groups of exactly three after the first, so `1,23` (a list, or a cut) is no such number.
_GROUPED = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d*)?")
_GROUP_CUT = re.compile(r"[-+]?\d{1,3}(?:,\d{3})*,\d{0,2}")


def ungroup(text: str) -> str:
    """A number printed with thousands separators, without them (`1,238.36` -> `1238.36`);
    any other text as it is."""
    t = text.strip()
    return t.replace(",", "") if _GROUPED.fullmatch(t) else text


def is_count(text: str) -> bool:
    """Whether `text` is a plain decimal count `int` reads: ASCII digits only (`'²'.isdigit()`
    is true and `int('²')` raises) and at most 18 of them (`int` refuses 4300)."""
    return text.isascii() and text.isdigit() and len(text) <= 18


def _json_number(raw: str) -> float | int:
    """A JSON number's value: an integer as `int`, unless it is too long for one (Python
    refuses `int` on more than 4300 digits; 300 digits are past any double anyway)."""
    if len(raw) > 300 or any(c in raw for c in ".eE"):
        return float(raw)
    return int(raw)


def read_number(
    text: str,
    *,
    at_end: bool,
    line_cut: bool,
    decimals: int | None = None,
    grouped: bool = False,
) -> Num:
    """Read a field's number by the rule of DESIGN §2.

    `text` is the field value with its terminator removed; `at_end` says that nothing (no
    delimiter, no unit) followed it on the line; `line_cut` that the line is a last line
    without `\\n`; `decimals` the fixed decimals of the format, if it has them. A value at
    the end of a cut line is complete only when its fixed decimals are all there; a value
    with fewer decimals than its format prints is cut wherever it stands.
    """
    t = text.strip()
    if grouped and "," in t:
        if at_end and line_cut and _GROUP_CUT.fullmatch(t):
            return Num(None, cut=True)  # `1,23` at the end of a cut line: `1,234` cut
        t = ungroup(t)
    low = t.lower().rstrip("%")
    if low in _SPECIAL:
        return Num(_SPECIAL[low])
    m = NUMBER.fullmatch(t)
    if m is None:
        if at_end and line_cut and (t == "" or (NUMBER.match(t) is None and t in "-+.")):
            return Num(None, cut=True)
        return Num(None)
    if decimals is not None and decimals > 0 and decimals_of(t) < decimals:
        return Num(None, cut=True)
    if at_end and line_cut and not (decimals is not None and decimals > 0):
        return Num(None, cut=True)
    if t.endswith(".") or t.endswith("e") or t.endswith("E"):
        return Num(None, cut=True)
    return Num(float(t))


def value_problem(value: float) -> str | None:
    """Why a read number can be no sample: `non-finite-value` (nan, an infinity, a number
    too big for a float), `impossible-value` (below zero: no metric of DESIGN §3 is), or
    None. Formats call it where they word the diagnostic, so the rule is one."""
    if not math.isfinite(value):
        return "non-finite-value"
    if value < 0:
        return "impossible-value"
    return None


def shown(raw: str, width: int = 40) -> str:
    """A raw value for a message: `1111…` (500 digits) shortened to `width` characters."""
    raw = raw.strip()
    return raw if len(raw) <= width else raw[: width - 1] + "\u2026"


# Arithmetic in a settings dump (`10**10**10`, `4*2`): no dump prints one (a repr prints
# values), so a paste or a hand changed it; `_literal` keeps it as its text, never a number.
_EXPRESSION = re.compile(r"[-+]?\d+(?:\.\d+)?(?:\s*(?:\*\*|[-+*/%])\s*[-+]?\d+(?:\.\d+)?)+")


def is_expression(value: object) -> bool:
    """Whether a setting read as text is arithmetic on numbers, not a value."""
    return isinstance(value, str) and _EXPRESSION.fullmatch(value.strip()) is not None


# ------------------------------------------------------------------ percent


def percent(text: str, value: float) -> float:
    """A printed percentage as a fraction: `89.6` -> 0.896 (not 0.8959999999999999)."""
    try:
        return float(text.strip() + "e-2")
    except ValueError:  # nan, inf and the like
        return value / 100


# ------------------------------------------------------------------ units

# Time units as printed -> (numerator, denominator) of their size in milliseconds; integer
# factors, so that `123456 ns` is 0.123456 ms and not 0.12345599999999999.
_TIME_UNITS: dict[str, tuple[int, int]] = {
    "ns": (1, 1_000_000),
    "us": (1, 1_000),
    "\u00b5s": (1, 1_000),  # micro sign
    "\u03bcs": (1, 1_000),  # Greek mu
    "ms": (1, 1),
    "s": (1_000, 1),
    "sec": (1_000, 1),
    "min": (60_000, 1),
}


def time_unit(unit: str) -> bool:
    """Whether a printed unit is a unit of time `convert_time` knows."""
    return unit.strip().lower() in _TIME_UNITS or unit.strip() in _TIME_UNITS


def convert_time(value: float, unit: str, to: str = "ms") -> float:
    """A time in `unit` as `to` (DESIGN §2: metric names say their unit, values follow it)."""
    fn, fd = _TIME_UNITS.get(unit.strip(), _TIME_UNITS.get(unit.strip().lower(), (0, 1)))
    tn, td = _TIME_UNITS[to]
    if fn == 0:
        raise ValueError(f"not a unit of time: {unit!r}")
    num, den = fn * td, fd * tn
    return value * num / den if num >= den else value / (den / num)


# ------------------------------------------------------------------ timestamps

# SGLang `[2025-01-02 03:04:05(.mmm)`, 0.3.0 `HH:MM:SS`, vLLM `MM-DD HH:MM:SS`, docker
# RFC 3339 and custom logging configs (`2026-03-18 11:22:05.874`, `,874`).
TIMESTAMP = re.compile(
    r"(?:\d{4}-\d{2}-\d{2}[ T]|\d{2}-\d{2} )?\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
    r"(?:Z|[+-]\d{2}:?\d{2}\b)?"
)


_EPOCH = re.compile(r"\d{9,13}(?:\.\d+)?")


def epoch_seconds(text: str) -> float | None:
    """A timestamp as seconds since the epoch, for a rate between two of them: ISO 8601
    (`2026-03-01T10:00:00Z`, `+00:00`, a space for the `T`; no zone: as UTC) or a Unix time
    in seconds or, with 13 digits, milliseconds; None for anything else."""
    t = text.strip()
    if _EPOCH.fullmatch(t):
        value = float(t)
        return value / 1000 if len(t.split(".")[0]) == 13 else value
    if not re.fullmatch(
        r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?", t
    ):
        return None
    t = t.replace(",", ".")
    frac = re.search(r"\.(\d+)", t)
    if frac is not None and len(frac.group(1)) > 6:  # nanoseconds (docker): to microseconds
        t = t.replace(frac.group(0), "." + frac.group(1)[:6])
    try:
        stamp = datetime.fromisoformat(t)
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


def last_timestamp(prefix: str) -> str | None:
    """The last timestamp in a line prefix, as printed (the innermost logger's own one)."""
    found = None
    for m in TIMESTAMP.finditer(prefix):
        found = m.group()
    return found


# ------------------------------------------------------------------ rank tags

# Rank tags as SGLang, Megatron-style launchers and DP-attention servers print them (`TP3`,
# `DP1 TP3`, `ATTN_CP0`): a tag is a name and a number, never inside a word.
RANK_TAG = re.compile(r"(?<![A-Za-z0-9_])(ATTN_CP|MOE_DP|DP|PP|TP|EP)(\d{1,9})(?![A-Za-z0-9_])")


def rank_of(prefix: str) -> tuple[str | None, dict[str, int]]:
    """Rank tags as printed (`DP3 TP3`) and their numbers, from a line prefix."""
    if "P" not in prefix:  # every tag holds a P (DP, PP, TP, EP, ATTN_CP, MOE_DP)
        return None, {}
    tags = RANK_TAG.findall(prefix)
    if not tags:
        return None, {}
    return " ".join(t + n for t, n in tags), {t: int(n) for t, n in tags}


# ------------------------------------------------------------------ outer prefixes

# Outer prefixes a terminal, collector or paste puts before every line (log-formats §9):
# docker `-t` RFC 3339 timestamps, docker-compose `svc-1  | `, mpirun `[1,0]<stdout>:`,
# Ray/vLLM `(Name pid=N) `, pytest's captured log, a `# ` comment marker, grep over several
# files (`path.ext:` on matches, `path.ext-` on context lines, with `-n` also the line
# number). A grep path needs an extension that starts with a letter, so `127.0.0.1:80` or
# `P99.9 TTFT` never count as one.
_OUTER = re.compile(
    r"^(?:[ \t]*(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?[ \t]"
    r"|\[\d+,\d+\]<std(?:out|err)>:"
    r"|[A-Za-z][\w.-]*[ \t]+\|(?:[ \t]|$)"
    r"|\((?:[\w.\-]+\s)?pid=\d+(?:,\s*ip=[\d.]+)?\)[ \t]"
    r"|\[pod/[\w.-]+/[\w.-]+\][ \t]"  # kubectl logs --prefix
    # moreutils `ts` (`Nov 29 10:00:00 `) and journalctl (then `host python3[1234]: `)
    r"|[A-Z][a-z]{2}[ \t]+\d{1,2}[ \t]+\d\d:\d\d:\d\d(?:\.\d+)?[ \t]"
    r"(?:[\w.-]+[ \t][\w./@-]+\[\d+\]:[ \t])?"
    r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? - [\w.]+ - [A-Z]+ - "  # python logging
    r"|\d{1,9}[:-](?![\d:-])"  # grep -n without a file name (`7:`, context `7-`)
    # pytest's log capture (`%(levelname)-8s %(name)s:%(filename)s:%(lineno)d `)
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)[ \t]+[\w.<>-]+:[\w.-]+\.py:\d+(?:[ \t]|$)"
    r"|\#(?:[ \t]|$)"  # a commented-out paste (`# ` before every line); never `#queue-req`
    r"|(?:[\w.~+-]*/)*[\w~+-][\w.~+-]*\.[A-Za-z]\w{0,7}(?:\.\d+)?(?:[:-]\d+)?[:-]))+"
)
# A Markdown list bullet or number before a pasted line (`- Run 1/5: ...`, `1. Run ...`);
# never `---`, `-1` or `1.5`.
_BULLET = re.compile(r"^[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+(?=\S)")  # or `1. `


# A tqdm bar (`desc: 50%|█████     | 500/1000 [01:23<00:00, 11.92it/s]`) that another
# stream's line was glued to: the text after the last bar is that line.
_TQDM = re.compile(r"^.*\d%\|[^|]*\|[^\[|]*\[[^\]]*\][ \t]*(?=\S)")


def strip_outer(text: str) -> str:
    """A line without the outer prefixes and the list bullet a paste or collector added."""
    m = _OUTER.match(text)
    if m is not None:
        text = text[m.end() :]
    if "%|" in text:
        t = _TQDM.match(text)
        if t is not None:
            text = text[t.end() :]
    b = _BULLET.match(text)
    if b is not None:
        text = text[b.end() :]
    return text


@functools.lru_cache(maxsize=4)
def strip_head(head: str) -> str:
    """A sniff head with `strip_outer` applied to every line (anchored sniffs need it)."""
    return "\n".join(strip_outer(line) for line in head.split("\n"))


# ------------------------------------------------------------------ `label: value` items

# A number at the start of a value: digits, or nan/inf as Python prints them.
VALUE_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)", re.I)


@dataclass(frozen=True, slots=True)
class Field:
    key: str  # normalised label: lower case, single spaces, V0's "tokens tokens" typo fixed
    label: str  # the label as printed
    value: str  # the raw value text (number, unit, `%`, or a list)
    start: int  # offset of the value in the line


def norm_key(raw: str) -> str:
    key = " ".join(raw.lower().split())
    return key.replace("tokens tokens", "tokens")  # vLLM 0.4.1–0.5.2 typo


def keyed_fields(text: str, start: int) -> list[Field]:
    """Fields `label: value` of a `, `-joined line, in any order and any subset.

    A part without `: ` continues the part before it (per-position lists, `KV fetch: a, b,
    c`); the key is the text before the part's last `: `. Parts before the first keyed one
    and empty parts (trailing `, `) are dropped.
    """
    spans: list[list[int]] = []
    pos = start
    while pos <= len(text):
        cut = text.find(", ", pos)
        end = len(text) if cut < 0 else cut
        if ": " in text[pos:end] or text[pos:end].rstrip().endswith(":"):
            spans.append([pos, end])
        elif spans and text[pos:end].strip():
            spans[-1][1] = end
        if cut < 0:
            break
        pos = cut + 2
    out: list[Field] = []
    for a, b in spans:
        part = text[a:b]
        colon = part.rfind(": ")
        if colon < 0:  # `label:` at the very end of a cut line
            colon = part.rstrip().rfind(":")
            value_at = a + colon + 1
        else:
            value_at = a + colon + 2
        out.append(Field(norm_key(part[:colon]), part[:colon].strip(), text[value_at:b], value_at))
    return out


def lookup_field(key: str, table: dict[str, tuple[str, str, int]]) -> tuple[str, str, int] | None:
    """The catalog entry of a label; a label with leftover prefix text matches by suffix."""
    found = table.get(key)
    if found is not None:
        return found
    best: str | None = None
    for label in table:
        fits = key.endswith(label) and not key[-len(label) - 1].isalnum()
        if fits and (best is None or len(label) > len(best)):
            best = label
    return table[best] if best is not None else None


@dataclass(frozen=True, slots=True)
class Read:
    value: float | None
    cut: bool
    pct: bool  # a `%` followed the number
    raw: str = ""

    @property
    def fraction(self) -> float | None:
        """A percentage as a fraction: the double nearest to the printed decimal / 100."""
        if self.value is None:
            return None
        if not math.isfinite(self.value) or "e" in self.raw.lower():
            return self.value / 100
        return float(f"{self.raw}e-2")  # 56.6 -> 0.566, where 56.6 / 100 -> 0.5660000000000001


def read_value(text: str, start: int, end: int, ln: Line, decimals: int | None) -> tuple[Read, int]:
    """The number at `text[start:end]` (after blanks) and the offset just after it.

    A number followed by anything on the line is complete; one at the end of a cut line is
    complete only with all its fixed decimals (DESIGN §2).
    """
    pos = start
    while pos < end and text[pos] == " ":
        pos += 1
    m = VALUE_NUMBER.match(text, pos, end)
    if m is None:
        rest = text[pos:end].strip().lower()
        cut = (
            ln.cut
            and end >= len(text)
            and (rest == "" or "nan".startswith(rest) or "inf".startswith(rest))
        )
        return Read(None, cut, False), pos
    raw, stop = m.group(), m.end()
    if raw.endswith(".") and (stop < len(text) or not ln.cut) and not decimals:
        # a sentence's full stop (V0 lines end with one), not a decimal point: the number
        # is complete, unless a cut line ends right there (`6.` may have been `6.2`); a
        # field printed with decimals never ends in its point (`Draft acceptance rate: 0.`
        # is a line broken there)
        raw, stop = raw[:-1], stop - 1
        at_end = False
    else:
        at_end = stop >= len(text)
    num = read_number(raw, at_end=at_end, line_cut=ln.cut, decimals=decimals if at_end else None)
    pct = text.startswith("%", stop)
    return Read(num.value, num.cut, pct, raw), stop


def is_number(value: object) -> TypeGuard[int | float]:
    """Whether a JSON or YAML scalar is a number (`true` is no 1)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


# ------------------------------------------------------------------ JSON with line numbers

# Exports of benchmark clients (AIPerf, GenAI-Perf, guidellm, trtllm-bench) are pretty-printed
# JSON: one scalar per line, objects and arrays opened and closed on lines of their own. A
# sample needs the line its value stands on and a cut file must keep every value before the
# cut, so the document is read as events, line by line, never with one `json.loads`.
JsonPath = tuple[str | int, ...]
JsonScalar = str | int | float | bool | None
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
# Python's json writes NaN and Infinity (GenAI-Perf, trtllm-bench); they are read, and the
# formats say why such a value is no sample.
_JSON_LITERALS: dict[str, JsonScalar] = {
    "true": True,
    "false": False,
    "null": None,
    "NaN": math.nan,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
}
# (the loop unrolled, `[^…]*` runs between escapes: a kilobyte's prompt in one step, not one
# alternation a character)
_JSON_STRING = re.compile(
    r'"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"'
)
_JSON_DELIM = frozenset(",}] \t")
_JSON_BLANKS = re.compile(r"[ \t]+")  # (an indented document's lines start with dozens)
# The lines an indented document is mostly made of, each read by one match (`JsonLines.
# _line`): a member (`"key": value,`), an element (`value,`), a closing bracket (`},`); a
# value a scalar as `_json_scalar` reads one, or an opening bracket (no comma after it).
_J_VALUE = (
    rf"(?:({_JSON_STRING.pattern})|({_JSON_NUMBER.pattern})"
    rf"|({'|'.join(re.escape(w) for w in _JSON_LITERALS)})|([{{\[]))[ \t]*(,?)[ \t]*\Z"
)
_JSON_MEMBER = re.compile(rf"[ \t]*({_JSON_STRING.pattern})[ \t]*:[ \t]*{_J_VALUE}")
_JSON_ELEMENT = re.compile(rf"[ \t]*{_J_VALUE}")
_JSON_CLOSER = re.compile(r"[ \t]*([}\]])[ \t]*(,?)[ \t]*\Z")


def _json_text(quoted: str) -> str:
    """A JSON string as `_JSON_STRING` matched it, decoded: without an escape, its text
    between the quotes is the string (the pattern admits no control character and no bare
    quote), which `json.loads` would give after a pass of its own."""
    return quoted[1:-1] if "\\" not in quoted else str(json.loads(quoted))


@dataclass(frozen=True, slots=True)
class JsonEvent:
    """One thing the JSON reader saw: a scalar (`value`), a container opened (`open`) or
    closed (`close`), a scalar cut by the end of the file (`cut`), or a line that is not
    JSON where the document stands and was skipped (`skip`, `path` empty)."""

    kind: str  # "value" | "open" | "close" | "cut" | "skip"
    path: JsonPath
    line: int
    value: JsonScalar = None
    raw: str = ""  # a number as printed (its decimals), a skipped line's reason


class JsonLines:
    """Reads JSON documents line by line and says where each value stands.

    Lines before a document (a shell prompt, a title) and lines a paste or a log put inside
    one (noise between two objects) are skipped: a line that does not continue the document
    leaves the reader as it was before the line. Several documents may follow one another
    (JSON Lines, or one export after another). Nothing is evaluated; strings stay strings.
    """

    def __init__(self) -> None:
        # One frame per open container: [kind, state, member], `member` the key (object) or
        # index (array) of the value being read. States of an object: "key" (a key or `}`),
        # "colon", "value", "next" (`,` or `}`); of an array: "first" (a value or `]`),
        # "value", "next".
        self._stack: list[list[Any]] = []
        self.documents = 0  # documents opened so far

    @property
    def open(self) -> bool:
        """Whether a document is open (a line now continues it or is skipped)."""
        return bool(self._stack)

    def feed(self, text: str, no: int, cut: bool = False) -> list[JsonEvent]:
        """Events of one line; `cut`: the file ends inside this line."""
        if self._stack and not cut:
            done = self._line(text, no)
            if done is not None:
                return done
        saved = [list(f) for f in self._stack]
        documents = self.documents
        events: list[JsonEvent] = []
        error = self._scan(text, no, cut, events)
        if error is None:
            return events
        self._stack, self.documents = saved, documents
        return [JsonEvent("skip", (), no, raw=error)] if saved else []

    def _here(self) -> JsonPath:
        return tuple([f[2] for f in self._stack])

    def _line(self, text: str, no: int) -> list[JsonEvent] | None:
        """The events of a line that is one member, element or closing bracket continuing
        the open document, read by one match, as `_scan` reads it; None for any other line
        (then `_scan` reads it)."""
        top = self._stack[-1]
        kind, state = top[0], top[1]
        if kind == "{" and state == "key":
            m = _JSON_MEMBER.match(text)
            if m is not None:
                return self._value(m, 2, top, _json_text(m.group(1)), "key", no)
        elif kind == "[" and state in ("first", "value"):
            m = _JSON_ELEMENT.match(text)
            if m is not None:
                member = 0 if state == "first" else top[2] + 1
                return self._value(m, 1, top, member, "value", no)
        m = _JSON_CLOSER.match(text)
        if m is None or not (
            state == "next" or (state == "key" if kind == "{" else state == "first")
        ):
            return None
        if m.group(1) != ("}" if kind == "{" else "]") or (m.group(2) and len(self._stack) < 2):
            return None
        self._stack.pop()
        events = [JsonEvent("close", self._here(), no)]
        if m.group(2):  # (the container just closed was its parent's value: state "next")
            parent = self._stack[-1]
            parent[1] = "key" if parent[0] == "{" else "value"
        return events

    def _value(
        self, m: re.Match[str], at: int, top: list[Any], member: Any, after_comma: str, no: int
    ) -> list[JsonEvent] | None:
        """The value of a member or element line matched at group `at` on (a string, a
        number, a word, an opening bracket, then the comma), `member` its key or index;
        None, nothing changed, for an opening bracket with a comma after it."""
        quoted, raw, word, opener, comma = m.group(at, at + 1, at + 2, at + 3, at + 4)
        if opener is not None and comma:
            return None  # (`{,`: `_scan` says what is wrong)
        top[2] = member
        if opener is not None:
            top[1] = "next"
            events: list[JsonEvent] = []
            self._push(opener, self._here(), no, events)
            return events
        path = self._here()
        if quoted is not None:
            event = JsonEvent("value", path, no, _json_text(quoted))
        elif raw is not None:
            event = JsonEvent("value", path, no, _json_number(raw), raw)
        else:
            event = JsonEvent("value", path, no, _JSON_LITERALS[word], word)
        top[1] = after_comma if comma else "next"
        return [event]

    def _scan(self, text: str, no: int, cut: bool, events: list[JsonEvent]) -> str | None:
        i, n = 0, len(text)
        while i < n:
            ch = text[i]
            if ch == " " or ch == "\t":
                m = _JSON_BLANKS.match(text, i)
                i = m.end() if m is not None else i + 1
                continue
            if not self._stack:
                if ch not in "{[":
                    return "not JSON"
                self._push(ch, (), no, events)
                i += 1
                continue
            top = self._stack[-1]
            kind, state = top[0], top[1]
            closer = "}" if kind == "{" else "]"
            if state == "next":
                if ch == ",":
                    top[1] = "key" if kind == "{" else "value"
                    i += 1
                elif ch == closer:
                    i = self._close(no, events, i)
                else:
                    return "expected ',' or a closing bracket"
                continue
            if state == "key":
                if ch == "}":
                    i = self._close(no, events, i)
                    continue
                m = _JSON_STRING.match(text, i) if ch == '"' else None
                if m is None:
                    return "expected a key"
                top[2], top[1] = _json_text(m.group()), "colon"
                i = m.end()
                continue
            if state == "colon":
                if ch != ":":
                    return "expected ':'"
                top[1] = "value"
                i += 1
                continue
            if state == "first" and ch == "]":
                i = self._close(no, events, i)
                continue
            if kind == "[":
                top[2] = 0 if state == "first" else top[2] + 1
            top[1] = "next"
            path = self._here()
            if ch in "{[":
                self._push(ch, path, no, events)
                i += 1
                continue
            i, event = _json_scalar(text, i, no, cut, path)
            if event is None:
                return "unreadable value"
            events.append(event)
        return None

    def _push(self, ch: str, path: JsonPath, no: int, events: list[JsonEvent]) -> None:
        if not self._stack:
            self.documents += 1
        self._stack.append([ch, "key" if ch == "{" else "first", None])
        events.append(JsonEvent("open", path, no))

    def _close(self, no: int, events: list[JsonEvent], i: int) -> int:
        self._stack.pop()
        events.append(JsonEvent("close", self._here(), no))
        return i + 1


def _json_scalar(
    text: str, i: int, no: int, cut: bool, path: JsonPath
) -> tuple[int, JsonEvent | None]:
    """The scalar at `text[i]`: a value, a cut one (the file ends in it), or None."""
    ch = text[i]
    if ch == '"':
        m = _JSON_STRING.match(text, i)
        if m is None:
            return (len(text), JsonEvent("cut", path, no)) if cut else (i, None)
        return m.end(), JsonEvent("value", path, no, _json_text(m.group()))
    m = _JSON_NUMBER.match(text, i)
    if m is not None:
        end, raw = m.end(), m.group()
        if end >= len(text) and cut:  # `12` may have been `1234`
            return end, JsonEvent("cut", path, no, raw=raw)
        if end < len(text) and text[end] not in _JSON_DELIM:
            return i, None
        value = _json_number(raw)
        return end, JsonEvent("value", path, no, value, raw)
    rest = text[i:].rstrip()
    for word, val in _JSON_LITERALS.items():
        if text.startswith(word, i):
            end = i + len(word)
            if end < len(text) and text[end] not in _JSON_DELIM:
                return i, None
            return end, JsonEvent("value", path, no, val, word)
        if cut and rest and word.startswith(rest):
            return len(text), JsonEvent("cut", path, no)
    if cut and rest in ("-", ""):
        return len(text), JsonEvent("cut", path, no)
    return i, None


# ------------------------------------------------------------------ box-drawn tables

# Tables drawn with box characters (rich's `┏━┳━┓ ┃ ┡━╇━┩ │ └─┴─┘`, its ASCII box `+--+`,
# guidellm's `|===|`) or bars: a row is its cells between vertical borders.
_BOX_BAR = re.compile("[\u2502\u2503\u2551|]")
_BOX_RULE = re.compile(
    "^[ \t]*[\u250c\u250f\u2514\u2517\u251c\u2521\u2522\u2523\u255e\u2552\u2558\u256d\u2570+|]"
    "[\u2500\u2501\u2550\u252c\u2533\u2534\u253b\u253c\u2547\u254b\u2564\u256a\u2567=+|:\\- ]*"
    "[\u2510\u2513\u2518\u251b\u2524\u2529\u252a\u252b\u2561\u2555\u255b\u256e\u256f+|=\\-]"
    "[ \t]*$"
)


def is_box_rule(text: str) -> bool:
    """Whether a line is a table's horizontal rule (top, header separator, bottom)."""
    return (
        _BOX_RULE.match(text) is not None
        and sum(text.count(c) for c in "\u2501\u2500\u2550=-") >= 3
    )


@dataclass(frozen=True, slots=True)
class BoxRow:
    """The cells of one table line, as printed (unstripped: their widths tell merged cells),
    and whether its right border is there (a line cut or wrapped before it is not whole)."""

    cells: list[str]
    closed: bool


def box_row(text: str) -> BoxRow | None:
    """The cells between a line's vertical borders, or None when it is no table row."""
    body = text.strip()
    if not body or _BOX_BAR.match(body) is None or is_box_rule(body):
        return None
    parts = _BOX_BAR.split(body)[1:]
    closed = parts[-1] == "" if parts else False
    if closed:
        parts = parts[:-1]
    return BoxRow(parts, closed) if parts else None


# ------------------------------------------------------------------ block YAML with line numbers

_YAML_KEY = re.compile(
    r"(?P<k>[^\s:#'\"][^:#]*?|'[^']*'|\"[^\"]*\"):(?:[ \t]+(?P<v>\S.*?))?[ \t]*$"
)
_YAML_WORDS: dict[str, JsonScalar] = {
    "null": None,
    "~": None,
    "true": True,
    "false": False,
    ".nan": math.nan,
    ".inf": math.inf,
    "-.inf": -math.inf,
}


def _under_scalar(scalar_at: tuple[int, bool], indent: int, item: bool) -> bool:
    """Whether a YAML line at `indent` cannot follow a line that ended with a scalar at
    `scalar_at` (its indent, and whether it was a `- ` item): it stands deeper, or it is an
    indentless item where only a key without a value may open one."""
    at, is_item = scalar_at
    return indent > at or (indent == at and item and not is_item)


class YamlLines:
    """Reads the block YAML that `yaml.dump` writes (mappings, `- ` sequences, plain and
    quoted scalars) line by line, as `JsonLines` events with the same paths. No tags, no
    anchors, no flow collections beyond `[]`/`{}`: what it does not know it skips.

    A line that closes open collections with a scalar (`key: value` left of the open ones,
    `- value`) is held until a later line shows whether it belongs to the document. Nothing
    stands deeper than a scalar, and an indentless `- ` item needs a key without a value at
    its indent: a line that is either was preceded by a foreign line (a log's
    `INFO:     127.0.0.1:...` looks like a key at indent 0), so the held lines' events are
    dropped and the collections they closed are open again. A line that opens a collection,
    or the end of the input (`finish`), lets the held lines' events through.
    """

    def __init__(self) -> None:
        # [indent, name, is_item, next index]
        self._frames: list[list[Any]] = []
        self._closed = 0  # frames closed so far (a line closes some when this grows)
        # Held lines, oldest first: the frames before each, its events, where its scalar is.
        self._held: list[tuple[list[list[Any]], list[JsonEvent], tuple[int, bool]]] = []
        # (indent, is an item) of the scalar the line being read ends with, if it does
        # (set by `_line`, taken by `feed`).
        self._scalar_at: tuple[int, bool] | None = None

    def feed(self, text: str, no: int, cut: bool = False) -> list[JsonEvent]:
        body = text.strip()
        if not body or body.startswith("#") or body in ("---", "..."):
            return []
        indent = len(text) - len(text.lstrip(" "))
        item = body == "-" or body.startswith("- ")
        if not item and _YAML_KEY.match(body) is None:  # no structure: no evidence either way
            return [JsonEvent("skip", (), no, raw="not a YAML key")] if self._frames else []
        while self._held and _under_scalar(self._held[-1][2], indent, item):
            self._frames = self._held.pop()[0]  # that held line was foreign
        before, closed = [list(f) for f in self._frames], self._closed
        events = self._line(body, indent, item, no, cut)
        scalar_at, self._scalar_at = self._scalar_at, None
        if scalar_at is not None and (self._held or self._closed > closed):
            self._held.append((before, events, scalar_at))
            return []
        held, self._held = [ev for h in self._held for ev in h[1]], []
        return held + events

    def finish(self) -> list[JsonEvent]:
        """The held lines' events: nothing came after them to show they were foreign."""
        held, self._held = [ev for h in self._held for ev in h[1]], []
        return held

    def _pop(self) -> None:
        self._frames.pop()
        self._closed += 1

    def _line(self, body: str, indent: int, item: bool, no: int, cut: bool) -> list[JsonEvent]:
        if not item:
            m = _YAML_KEY.match(body)
            assert m is not None  # `feed` skips other lines
            return self._key(m, indent, no, cut)
        frames = self._frames
        while frames and (frames[-1][0] > indent or (frames[-1][0] == indent and frames[-1][2])):
            self._pop()
        if not frames:
            return [JsonEvent("skip", (), no, raw="a list item outside any key")]
        index = frames[-1][3]
        frames[-1][3] += 1
        frames.append([indent, index, True, 0])
        events = [JsonEvent("open", self._path(), no)]
        body = body[1:].lstrip()
        if not body:
            return events
        m = _YAML_KEY.match(body)
        if m is None:
            self._scalar_at = (indent, True)
            events.append(self._scalar(self._path(), body, no, cut))
            return events
        events.extend(self._key(m, indent + 2, no, cut))
        return events

    def _path(self) -> JsonPath:
        return tuple(f[1] for f in self._frames)

    def _key(self, m: re.Match[str], indent: int, no: int, cut: bool) -> list[JsonEvent]:
        while self._frames and self._frames[-1][0] >= indent:
            self._pop()
        key = m["k"].strip("'\"")
        value = m["v"]
        if value is not None and value.startswith("&") and " " not in value:
            value = None  # an anchor before a mapping
        if value is None or value in ("|", ">", "|-", ">-"):
            if value is None and cut:
                return [JsonEvent("cut", (*self._path(), key), no)]
            self._frames.append([indent, key, False, 0])
            return [JsonEvent("open", self._path(), no)]
        self._scalar_at = (indent, False)
        return [self._scalar((*self._path(), key), value, no, cut)]

    @staticmethod
    def _scalar(path: JsonPath, raw: str, no: int, cut: bool) -> JsonEvent:
        raw = raw.strip()
        if raw[:1] in "'\"":
            if len(raw) < 2 or raw[-1] != raw[0]:
                return JsonEvent("cut" if cut else "value", path, no, raw.strip("'\""))
            return JsonEvent("value", path, no, raw[1:-1])
        if raw.lower() in _YAML_WORDS:
            return JsonEvent("value", path, no, _YAML_WORDS[raw.lower()], raw)
        m = _JSON_NUMBER.fullmatch(raw) or re.fullmatch(r"[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?", raw)
        if m is not None:
            if cut:  # the line ends the file: `12.5` may have been `12.55`
                return JsonEvent("cut", path, no, raw=raw)
            value = _json_number(raw)
            return JsonEvent("value", path, no, value, raw)
        if raw in ("[]", "{}"):
            return JsonEvent("value", path, no, None, raw)
        return JsonEvent("value", path, no, raw)


# ------------------------------------------------------------------ learned layouts' regexes

_RX_META = frozenset("\\.+*?()|[]{}^$#&-~")


def regex_literal(text: str) -> str:
    """`text` as a literal in both Python's and polars' (Rust) regex syntax (the fast paths
    learn a layout's regex in Python and run it in polars)."""
    return "".join("\\" + c if c in _RX_META else c for c in text)


def pinned_digits(text: str) -> str:
    """`text` as a regex literal, each run of digits as that many digits (a prefix's shape:
    a docker timestamp, a pid). `TIMESTAMP` and `RANK_TAG` see only digits and the text, so
    they stand at the same places on every line that differs from `text` only in digits."""
    return re.sub(r"[0-9]+", lambda d: f"[0-9]{{{len(d.group())}}}", regex_literal(text))
