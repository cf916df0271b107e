"""Load points (DESIGN §5 "Load points and sweeps"): the load a serving block ran at.

Owns which settings make a load point (request rate, concurrency, the dataset shape; for
one-batch benchmarks the batch size and lengths), how one is written (sorted `key=value`
pairs joined by ", ", the tidy `load` column), and which blocks of a session share one. It
knows no format and computes no statistics.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["LOAD_KEYS", "load_of", "load_points", "order_key", "parse_load"]

# The settings of a load point, in the order a sweep is read by (DESIGN §5); `num_prompts`
# and seeds are not part of it.
LOAD_KEYS: tuple[str, ...] = (
    "max_concurrency",
    "request_rate",
    "batch_size",
    "dataset_name",
    "input_len",
    "output_len",
    "random_input_len",
    "random_output_len",
)


def _text(value: Any) -> str | None:
    """A load setting's value as written in a load point (None: not set)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float):
        if math.isinf(value):
            return "inf"
        if math.isnan(value):
            return None
        return f"{value:g}"
    if isinstance(value, int):
        return str(value)
    text = str(value).strip()
    if text.lower() in ("", "none", "null"):
        return None
    if text.lower() in ("inf", "infinity"):
        return "inf"
    return text


def load_of(settings: Mapping[str, Any]) -> dict[str, str]:
    """The load settings a block's settings hold, as text."""
    out: dict[str, str] = {}
    for key in LOAD_KEYS:
        text = _text(settings.get(key))
        if text is not None:
            out[key] = text
    return out


def load_points(blocks: Iterable[tuple[str, int, Mapping[str, Any]]]) -> dict[tuple[str, int], str]:
    """The load point of every (source, block) whose settings hold load settings.

    A point is written with the load keys whose values differ between the session's blocks,
    so the same load reads the same whether or not a client also printed the keys that never
    change; where nothing differs, with every key the blocks share.
    """
    found = {(src, block): load_of(settings) for src, block, settings in blocks}
    found = {k: v for k, v in found.items() if v}
    if not found:
        return {}
    values: dict[str, set[str]] = {}
    for load in found.values():
        for key, text in load.items():
            values.setdefault(key, set()).add(text)
    varying = [k for k in LOAD_KEYS if len(values.get(k, ())) > 1]
    if not varying:
        shared = set.intersection(*(set(load.items()) for load in found.values()))
        keys = sorted(k for k, _ in shared) or sorted(values)
    else:
        keys = sorted(varying)
    return {
        where: ", ".join(f"{k}={load[k]}" for k in keys if k in load)
        for where, load in found.items()
    }


def parse_load(text: str) -> dict[str, str]:
    """A load point's pairs (`max_concurrency=16, request_rate=inf` → dict)."""
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def order_key(text: str | None) -> tuple[tuple[int, float, str], ...]:
    """How load points are ordered in a sweep: by the numbers of the keys in `LOAD_KEYS`
    order (`inf` last), then by text."""
    if text is None:
        return ()
    pairs = parse_load(text)
    out: list[tuple[int, float, str]] = []
    for key in LOAD_KEYS:
        if key not in pairs:
            out.append((0, -math.inf, ""))
            continue
        value = pairs[key]
        try:
            number = float(value)
        except ValueError:
            out.append((1, 0.0, value))
        else:
            out.append((0, number, ""))
    return tuple(out)
