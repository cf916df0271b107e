"""Codes (integers standing for layouts, launches, rank tags, strings) as numpy arrays:
their distinct values and places, which the fast paths and the analysis share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_TABLE = 1 << 16  # codes spanning up to this many values are numbered by a lookup table


def numbered(
    codes: npt.NDArray[np.integer[Any]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The distinct values of integer codes, ascending, and each code's place among them
    (what `np.unique(codes, return_inverse=True)` gives): by a lookup table when they span
    at most `_TABLE` values (a log's few rank tags lie close together, a window holds
    few kinds, layouts and tags), by a sort otherwise (categorical codes are global to the
    process and may lie far apart)."""
    import numpy as np

    if len(codes) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    low, rel, span = _relative(codes)
    if span > _TABLE:
        uniq, inverse = np.unique(rel, return_inverse=True)
    else:
        uniq = _present(rel, span)
        lut = np.empty(span, np.int64)
        lut[uniq] = np.arange(len(uniq))
        inverse = lut[rel]
    return uniq + low, inverse


def present_codes(codes: npt.NDArray[np.integer[Any]]) -> list[int]:
    """The distinct codes of `codes`, ascending: what `np.unique(codes).tolist()` gives,
    without a sort where the codes lie close together (`numbered`'s first part, with no
    place made for each code)."""
    import numpy as np

    if len(codes) == 0:
        return []
    low, rel, span = _relative(codes)
    uniq = np.unique(rel) if span > _TABLE else _present(rel, span)
    return (uniq + low).tolist()  # type: ignore[no-any-return]


def _relative(
    codes: npt.NDArray[np.integer[Any]],
) -> tuple[int, npt.NDArray[np.int64], int]:
    """Non-empty codes as offsets from their lowest: the lowest, the offsets, their span."""
    import numpy as np

    low = int(codes.min())
    rel = codes.astype(np.int64) - low
    return low, rel, int(rel.max()) + 1


def _present(rel: npt.NDArray[np.int64], span: int) -> npt.NDArray[np.int64]:
    """The distinct offsets (all in [0, span)), ascending, marked in a table of the span."""
    import numpy as np

    present = np.zeros(span, np.bool_)
    present[rel] = True
    return np.flatnonzero(present)
