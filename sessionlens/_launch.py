"""Launches (DESIGN §5): which server start each sample of a session belongs to.

Owns the rule that names launches: the folder holding a source (relative to the session),
with `#k` for the k-th server start among that folder's server logs (files in order of their
first timestamp, then name), client files joining the folder's last launch; with
`launch_per_file`, a launch per source path. It knows no format and computes no statistics:
it is handed each source's server starts (the parsers' `launch_lines`) and returns line spans.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from .model import LaunchSpans, SampleColumns, SourceInfo

__all__ = ["SERVER_FORMATS", "LaunchSource", "assign", "folder_of", "of_sources"]

# Formats whose samples are a server's own intervals (its starts begin launches; DESIGN §5:
# an autocorrelated series within a launch, not repeated client runs).
SERVER_FORMATS = frozenset({"sglang-server", "vllm-server", "phase-timing", "prometheus"})


@dataclass(frozen=True, slots=True)
class LaunchSource:
    """What the launch rule needs of one source."""

    path: str  # posix, relative to the session (for `parse`: as given)
    server: bool  # a server log (its starts begin launches), else a client file
    starts: tuple[int, ...] = ()  # the lines where a server start is logged
    first_ts: str | None = None  # the earliest timestamp it prints, for ordering


def folder_of(path: str) -> str:
    """The folder holding a source, as a launch name: `.` for the session folder itself."""
    parent = PurePosixPath(path).parent.as_posix()
    return parent if parent not in ("", ".") else "."


def assign(
    sources: Sequence[LaunchSource], per_file: Collection[str] = ()
) -> dict[str, LaunchSpans]:
    """The launches of every source: `(first line, name)` spans in line order.

    Sources in `per_file` (paths) are each a launch of their own, named by their path (and
    `#k` where the file holds several server starts). The others share their folder's
    launches: one (`folder`) when the folder's server logs log one start or none, else
    `folder#1` … `folder#K` in start order, samples before a file's first start belonging
    to the launch before it, client files to the last.
    """
    out: dict[str, LaunchSpans] = {}
    folders: dict[str, list[LaunchSource]] = {}
    for src in sources:
        if src.path in per_file:
            out[src.path] = _own(src)
        else:
            folders.setdefault(folder_of(src.path), []).append(src)
    for folder, members in folders.items():
        servers = sorted(
            (s for s in members if s.server), key=lambda s: (s.first_ts is None, s.first_ts, s.path)
        )
        total = sum(len(s.starts) for s in servers)
        if total <= 1:
            for s in members:
                out[s.path] = [(0, folder)]
            continue
        k = 0
        for s in servers:
            spans: LaunchSpans = []
            if not s.starts or s.starts[0] > 1:  # lines before its first start
                spans.append((0, f"{folder}#{max(k, 1)}"))
            for line in s.starts:
                k += 1
                spans.append((line if spans else 0, f"{folder}#{k}"))
            out[s.path] = _merged(spans)
        for s in members:
            if not s.server:
                out[s.path] = [(0, f"{folder}#{total}")]
    return out


def _own(src: LaunchSource) -> LaunchSpans:
    """The launches of one file that is its own launch."""
    if len(src.starts) <= 1:
        return [(0, src.path)]
    spans: LaunchSpans = [(0, f"{src.path}#1")]
    spans.extend((line, f"{src.path}#{k}") for k, line in enumerate(src.starts[1:], 2))
    return spans


def _merged(spans: LaunchSpans) -> LaunchSpans:
    """Spans with a name equal to the one before it folded into it."""
    out: LaunchSpans = []
    for line, name in spans:
        if out and out[-1][1] == name:
            continue
        out.append((line, name))
    return out


def of_sources(
    sources: Sequence[SourceInfo], columns: SampleColumns, per_file: Collection[str] = ()
) -> dict[str, LaunchSpans]:
    """The launches of parsed sources (DESIGN §5), from their server starts and, where a
    folder holds several server logs with starts, the first timestamp each prints."""
    parsed = [s for s in sources if s.format is not None]
    starts = {s.path: _starts(s) for s in parsed}
    server = {s.path: s.format in SERVER_FORMATS for s in parsed}
    # timestamps only order a folder's server logs when two of them log starts
    logging = [p for p in starts if server[p] and starts[p]]
    by_folder: dict[str, list[str]] = {}
    for p in logging:
        by_folder.setdefault(folder_of(p), []).append(p)
    ordered = [p for ps in by_folder.values() if len(ps) > 1 for p in ps]
    first = columns.first_ts(ordered) if ordered else {}
    return assign(
        [LaunchSource(s.path, server[s.path], starts[s.path], first.get(s.path)) for s in parsed],
        per_file,
    )


def _starts(info: SourceInfo) -> tuple[int, ...]:
    lines = info.summary.get("launch_lines")
    if not isinstance(lines, list):
        return ()
    return tuple(x for x in lines if isinstance(x, int) and not isinstance(x, bool))
