"""Safe reading of logged reprs (`ServerArgs(...)`, `{...}`, `SpeculativeConfig(...)`) as settings.

Owns a whitelist walker over `ast.parse(..., mode="eval")` trees, a bracket/quote-aware item
splitter for reprs the parser rejects or that were cut, and the flattening to dotted keys. It
must never evaluate, execute or compile code: anything outside the whitelist is kept as text.
"""

from __future__ import annotations

import ast
import json
import math
import re
import warnings

__all__ = ["parse_call_or_dict", "parse_keyword_text", "parse_server_args"]

# Bare names a repr (or a JSON text embedded in a hand-built repr, as vLLM's
# `compilation_config={"level":3,"use_cudagraph":true}`) may hold. Any other name, e.g.
# `cuda` or `torch.bfloat16`, is kept as its source text.
_NAMES: dict[str, object] = {
    "inf": math.inf,
    "nan": math.nan,
    "Infinity": math.inf,
    "NaN": math.nan,
    "true": True,
    "false": False,
    "null": None,
}
_SCALARS = (str, int, float, bool, type(None))

# One scanner token: a complete quoted string (skipped whole, so commas and brackets inside
# it never count), a `<` that opens a `<function f at 0x..>`-style repr, a bracket or comma,
# or a lone quote, which means a string runs to the end of the text (a cut).
_TOKEN = re.compile(
    r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|<(?=[A-Za-z_])|[()\[\]{}>,:]|['"]"""
)
_CLOSER = {"(": ")", "[": "]", "{": "}", "<": ">"}
_OPENING = re.compile(r"\s*(?:(?P<name>[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*\(|\{)")
_NAME_PREFIX = re.compile(r"\s*[A-Za-z_][\w.]*\s*")
_KEYWORD = re.compile(r"\s*(?P<key>[A-Za-z_]\w*)\s*=(?!=)")


class _Source:
    """The parsed text with its UTF-8 line offsets, so a node's exact text is a slice."""

    __slots__ = ("data", "starts")

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8", "surrogatepass")
        self.starts = [0]
        pos = self.data.find(b"\n")
        while pos >= 0:
            self.starts.append(pos + 1)
            pos = self.data.find(b"\n", pos + 1)

    def text(self, node: ast.expr) -> str:
        # ast column offsets count UTF-8 bytes; ast.get_source_segment would re-split the
        # whole 25 KB text for every node, this is one slice.
        end_line = node.end_lineno if node.end_lineno is not None else node.lineno
        end_col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        start = self.starts[node.lineno - 1] + node.col_offset
        end = self.starts[end_line - 1] + end_col
        return self.data[start:end].decode("utf-8", "surrogatepass")


def _parse(text: str) -> ast.expr | None:
    """The expression tree of `text`, or None when it is not a Python expression."""
    try:
        # `1if`, `0x1for`: Python warns on stderr (SyntaxWarning) and parses; a log's text
        # must not print on the user's terminal, and the tree is the same without the warning
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            return ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # ValueError: NUL bytes (3.11); RecursionError/MemoryError: absurd nesting.
        return None


def _call_name(func: ast.expr) -> str | None:
    """`Name` or `a.b.Name` as text; None for any other callee (a call, a subscript...)."""
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    parts.append(func.id)
    return ".".join(reversed(parts))


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _set_items(items: list[object]) -> object:
    """A set as a list in a stable order (a set's repr order changes between runs)."""
    if all(isinstance(v, _SCALARS) for v in items):
        rank = {type(None): 0, bool: 1, int: 2, float: 2, str: 3}
        return sorted(items, key=lambda v: (rank[type(v)], v if v is not None else 0))
    return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))


def _walk(node: ast.expr, src: _Source) -> object:
    """The value of a whitelisted node: scalar, list, or dict (records are dicts too).

    Any node outside the whitelist becomes its exact source text, at the smallest node
    that fails, so `[1, foo(2)]` keeps `1`.
    """
    if isinstance(node, ast.Constant):
        if isinstance(node.value, _SCALARS):
            return node.value
        return src.text(node)  # bytes, complex, Ellipsis: not JSON
    if isinstance(node, ast.Name):
        return _NAMES[node.id] if node.id in _NAMES else src.text(node)
    if isinstance(node, ast.List | ast.Tuple):
        return [_walk(e, src) for e in node.elts]
    if isinstance(node, ast.Set):
        return _set_items([_walk(e, src) for e in node.elts])
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):  # `{**x}`
            return src.text(node)
        return {
            _key(k, src): _walk(v, src)
            for k, v in zip(node.keys, node.values, strict=True)
            if k is not None
        }
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _walk(node.operand, src)
        if _is_number(operand):
            assert isinstance(operand, int | float)
            return -operand if isinstance(node.op, ast.USub) else operand
        return src.text(node)
    if isinstance(node, ast.Call):
        return _walk_call(node, src)
    return src.text(node)


def _walk_call(node: ast.Call, src: _Source) -> object:
    name = _call_name(node.func)
    if name is None:
        return src.text(node)
    if name in ("set", "frozenset") and not node.keywords and len(node.args) <= 1:
        # `set()` is an empty set, not an empty record; `frozenset({...})` a set.
        if not node.args:
            return []
        inner = node.args[0]
        if isinstance(inner, ast.Set | ast.List | ast.Tuple):
            return _set_items([_walk(e, src) for e in inner.elts])
        return src.text(node)
    if node.args or any(k.arg is None for k in node.keywords):
        # Positional or `**` arguments have no setting name: keep the whole call as text.
        return src.text(node)
    return {k.arg: _walk(k.value, src) for k in node.keywords if k.arg is not None}


def _key(node: ast.expr, src: _Source) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return src.text(node)


def _value(text: str) -> object:
    """One item's value text: walked when it parses, else its stripped source text."""
    stripped = text.strip()
    tree = _parse(stripped)
    if tree is None:
        return stripped
    return _walk(tree, _Source(stripped))


def _flatten(key: str, value: object, out: dict[str, object]) -> None:
    """Put `value` into `out` under `key`: records and dicts as dotted keys, lists kept."""
    if isinstance(value, dict):
        if not value:
            # DESIGN §3 wants JSON scalars or lists; an empty mapping keeps its key (a
            # setting that exists but is empty) with the text `{}`, the same in the
            # `ServerArgs(...)` and the dict form.
            out[key] = "{}"
        for k, v in value.items():
            _flatten(f"{key}.{k}", v, out)
    elif isinstance(value, list):
        if all(isinstance(v, _SCALARS) for v in value):
            out[key] = value
        else:
            # Lists of records or of lists have no flat form: keep them as one JSON text.
            out[key] = json.dumps(value, ensure_ascii=False)
    else:
        out[key] = value


def _items(
    text: str, pos: int, closer: str, end_closes: bool = False
) -> tuple[list[tuple[int, int]], int | None]:
    """Top-level item spans of a container whose inside starts at `pos`.

    Returns the spans of the complete items and the index just after the container's
    `closer`, or None when the text ends first. A span that the text ends inside is dropped,
    never shortened. With `end_closes` (a bare `k=v, k=v` text on a complete line) the end
    of the text closes the last item.
    """
    stack: list[str] = [closer]
    spans: list[tuple[int, int]] = []
    start = pos
    for m in _TOKEN.finditer(text, pos):
        tok = m.group()
        first = tok[0]
        if first in "'\"":
            if len(tok) > 1:
                continue  # a complete string
            # A string the text ends inside: the item is cut. (Not skipping the quote even
            # inside `<...>`: retrying from the next quote would make `\'\'\'...` quadratic.)
            return spans, None
        if first in _CLOSER:
            stack.append(_CLOSER[first])
        elif first in ")]}>":
            if first == stack[-1] and len(stack) > 1:
                stack.pop()
            elif first == stack[0]:
                # The container closes (popping any bracket left open inside, which a
                # well-formed repr never has).
                spans.append((start, m.start()))
                return spans, m.end()
            elif first in stack:
                while stack[-1] != first:
                    stack.pop()  # an unbalanced `<` (or worse) inside is dropped
                stack.pop()
            # else: a closer that closes nothing (e.g. the `>` of `a->b`): ignored
        elif first == "," and len(stack) == 1:
            spans.append((start, m.start()))
            start = m.end()
    if end_closes and len(stack) == 1:
        spans.append((start, len(text)))
        return spans, len(text)
    return spans, None


def _split_item(text: str, is_dict: bool) -> tuple[str, object] | None:
    """`key=value` or `'key': value` as (key, walked value); None for an unnamed item."""
    if not is_dict:
        m = _KEYWORD.match(text)
        if m is None:
            return None
        return m.group("key"), _value(text[m.end() :])
    colon = _colon(text)
    if colon is None:
        return None
    key_text = text[:colon].strip()
    tree = _parse(key_text)
    key = key_text if tree is None else _key(tree, _Source(key_text))
    return key, _value(text[colon + 1 :])


def _colon(text: str) -> int | None:
    """Index of the first `:` outside strings and brackets (a dict item's separator)."""
    depth = 0
    for m in _TOKEN.finditer(text):
        tok = m.group()
        if tok[0] in "'\"":
            if len(tok) == 1:
                return None
        elif tok in "([{":
            depth += 1
        elif tok in ")]}":
            depth -= 1
        elif tok == ":" and depth == 0:
            return m.start()
    return None


def _record(text: str, spans: list[tuple[int, int]], is_dict: bool) -> dict[str, object]:
    """Settings from the items the splitter found (the slow path: `<...>` reprs, cuts)."""
    out: dict[str, object] = {}
    for a, b in spans:
        item = _split_item(text[a:b], is_dict)
        if item is not None:
            _flatten(item[0], item[1], out)
    return out


def parse_call_or_dict(text: str) -> tuple[dict[str, object], bool]:
    """Settings from a `Name(k=v, ...)` or `{...}` repr: (flat dotted settings, cut).

    `cut` is True when the text ends before the repr closes; the complete items before the
    cut are returned, the cut one is dropped. Text after the closing bracket is ignored. A
    text that does not open a call or a dict gives ({}, False), or ({}, True) when it may
    be the start of one (empty, or a bare name).
    """
    opening = _OPENING.match(text)
    if opening is None:
        return {}, _NAME_PREFIX.fullmatch(text) is not None or not text.strip()
    is_dict = opening.group("name") is None
    spans, end = _items(text, opening.end(), "}" if is_dict else ")")
    if end is None:
        return _record(text, spans, is_dict), True
    # Fast path: the whole repr parses as one expression (no `<...>` in it).
    whole = text[opening.start() : end].strip()
    tree = _parse(whole)
    src = _Source(whole)
    out: dict[str, object] = {}
    if isinstance(tree, ast.Call) and _call_name(tree.func) is not None:
        for kw in tree.keywords:
            if kw.arg is not None:
                _flatten(kw.arg, _walk(kw.value, src), out)
        return out, False
    if isinstance(tree, ast.Dict):
        for k, v in zip(tree.keys, tree.values, strict=True):
            if k is not None:
                _flatten(_key(k, src), _walk(v, src), out)
        return out, False
    # `<function f at 0x..>` and the like: item by item, each value walked on its own.
    return _record(text, spans, is_dict), False


def parse_server_args(text: str) -> tuple[dict[str, object], bool]:
    """Settings from the text after `server_args=` (a `ServerArgs(...)` or a dict repr).

    Returns (flat dotted settings, cut); see `parse_call_or_dict`. A leading
    `server_args=` is tolerated.
    """
    stripped = text.lstrip()
    if stripped.startswith("server_args="):
        stripped = stripped[len("server_args=") :]
    return parse_call_or_dict(stripped)


def parse_keyword_text(text: str, line_cut: bool) -> tuple[dict[str, object], bool]:
    """Settings from a bare `k=v, k=v` text, e.g. vLLM's `... with config: model='m', ...`.

    The end of the text closes the last item unless `line_cut` (the line has no newline):
    then the last item is dropped and cut is True. Items that are not `k=v` are skipped.
    """
    spans, end = _items(text, 0, "", end_closes=not line_cut)
    return _record(text, spans, is_dict=False), end is None
