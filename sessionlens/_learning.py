"""How the chunk paths keep, try and learn the layouts of their lines (the SGLang and vLLM
server logs' batch and engine lines, phase-timing lines): one policy for the three.

A log of many prefixes (`grep -r` over a results tree: each file's path before its lines)
has a layout or two for each prefix, so many are kept (`MAX_LAYOUTS`). A chunk tries first
the layouts that read lines in the chunk before, then at most `STALE_TRIES` others, the most
used first (`tried`); it learns again any other it meets. It learns from its lines until
`LEARN_TRIES` of them teach nothing new, or until it has learned layouts of fewer than
`FEW_LINES` lines each for one in `TRY_SHARE` of its lines (`Budget`): learning costs a
millisecond or two a line, so a chunk whose every line has a prefix of its own costs at most
about twice its reading.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MAX_LAYOUTS = 4096
STALE_TRIES = 8
LEARN_TRIES = 8
FEW_LINES = 8
TRY_SHARE = 64


def tried(
    layouts: Iterable[int], recent: Sequence[int], hits: Sequence[int] | None = None
) -> list[int]:
    """The layouts a chunk tries, in order: those that read lines in the chunk before (the
    most first), then at most `STALE_TRIES` others (the most used first, with `hits`);
    `recent` and `hits` are per layout."""
    order = sorted(layouts, key=lambda li: (-recent[li], -hits[li] if hits is not None else 0))
    fresh = sum(1 for li in order if recent[li] > 0)
    return order[: fresh + STALE_TRIES]


def recent_counts(codes: npt.NDArray[np.integer[Any]], n: int) -> list[int]:
    """Per layout (of `n`), the lines a chunk's layout codes (-1: none) gave it."""
    import numpy as np

    return np.bincount(codes[codes >= 0], minlength=n)[:n].tolist()  # type: ignore[no-any-return]


class Budget:
    """A chunk's learning, over its `lines` candidates: true while it may learn from one
    more line."""

    def __init__(self, lines: int) -> None:
        self.tries = LEARN_TRIES  # lines that taught nothing new
        self.small = max(LEARN_TRIES, lines // TRY_SHARE)  # layouts of few lines learned

    def __bool__(self) -> bool:
        return self.tries > 0 and self.small > 0

    def failed(self) -> None:
        """A line that taught no layout (or one that does not read it)."""
        self.tries -= 1

    def learned(self, read: int) -> None:
        """A layout learned, which read `read` of the chunk's lines."""
        if read < FEW_LINES:
            self.small -= 1
