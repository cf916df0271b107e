"""Codes (small non-negative integers standing for layouts, launches, strings) as numpy
arrays: helpers the fast paths and the analysis share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def present_codes(codes: npt.NDArray[np.integer[Any]]) -> list[int]:
    """The distinct codes (small integers, none negative) of `codes`, ascending: what
    `np.unique(codes).tolist()` gives, counted in one pass rather than sorted."""
    import numpy as np

    return np.flatnonzero(np.bincount(codes)).tolist() if len(codes) else []
