"""The JSON report (DESIGN §7): the `Analysis` model, unrounded; non-finite floats as null."""

from __future__ import annotations

import json
import math
from typing import Any

from ..analysis import Analysis


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def render(analysis: Analysis) -> str:
    """The report as strict JSON text, keys in contract order."""
    doc = _finite(analysis.model_dump(mode="python"))
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
