"""A progress bar on stderr for reading big inputs: rich (typer's), shown only once the work
has taken about a second, never when stderr is not a terminal or the caller says quiet.

Owns the bar alone: callers feed it the bytes read (`SourceText.progress`). It prints
nothing else, and imports rich only when a bar is actually shown.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

DELAY_S = 1.0  # work done sooner than this shows no bar


def _nothing(n: int) -> None:
    """The feed of a bar that is not shown."""


@contextmanager
def progress(
    total_bytes: int,
    enabled: bool = True,
    label: str = "parsing",
    *,
    stream: TextIO | None = None,
    delay: float = DELAY_S,
) -> Iterator[Callable[[int], None]]:
    """A callable to feed with bytes read (`advance(n)`); it draws a bar on `stream`
    (stderr) once `delay` seconds have passed with work left, and clears it at the end."""
    out = sys.stderr if stream is None else stream
    if not enabled or total_bytes <= 0 or not _is_terminal(out):
        yield _nothing
        return
    bar = _Bar(total_bytes, label, out, delay)
    try:
        yield bar.advance
    finally:
        bar.close()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class _Bar:
    """Counts bytes from the start; the rich bar exists only after `delay` seconds."""

    def __init__(self, total: int, label: str, stream: TextIO, delay: float) -> None:
        self.total = total
        self.label = label
        self.stream = stream
        self.delay = delay
        self.done = 0
        self.started = time.monotonic()
        self._rich: Any = None
        self._task: Any = None
        self._broken = False

    def advance(self, n: int) -> None:
        self.done += n
        if self._rich is None:
            if self._broken or time.monotonic() - self.started < self.delay:
                return
            if self.done >= self.total:
                return  # finished: a bar now would only flicker
            self._show()
            if self._rich is None:
                return
        self._rich.update(self._task, completed=min(self.done, self.total))

    def _show(self) -> None:
        try:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )
        except ImportError:  # typer without rich: no bar, the work goes on
            self._broken = True
            return
        bar = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(file=self.stream),
            transient=True,  # the bar leaves no line behind
        )
        self._task = bar.add_task(self.label, total=self.total, completed=self.done)
        bar.start()
        self._rich = bar

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()
            self._rich = None
