"""`sglang-bench-offline`: `python -m sglang.bench_offline_throughput` result blocks.

Owns the sniff and wiring for the offline block (log-formats §5.3): preamble, several blocks
per file each with the label line above it, read by the shared `_blocks.BlockReader`. The
in-process engine's own log lines go to sglang-server's reader (`ctx.embed`). No eval, no
file access.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from .._lines import SourceText
from ..model import Record
from . import _blocks
from ._fields import strip_head
from .base import ParseContext, read_lines

format_id = "sglang-bench-offline"
priority = 20
_SERVER = "sglang-server"  # the format of the engine's own log lines


# bench_offline_throughput's backends (`engine`, `runtime`): no serving client has them.
_OFFLINE_BACKEND = re.compile(r"^\s*Backend:[ \t]+(?:engine|runtime)[ \t]*$", re.MULTILINE)


# `--result-filename` JSONL: a record per run, from the in-process backends.
_JSON_HEAD = re.compile(
    r'^[ \t]*\{[^\n]*"backend": "(?:engine|runtime)"[^\n]*"total_latency"', re.M
)


def sniff(head: str, name: str) -> float:
    """Score: the title is decisive; `Last generation throughput` or `Backend: engine` hint."""
    if _blocks.TITLE_OFFLINE.search(head):
        return 1.0
    if _JSON_HEAD.search(head):
        return 1.0
    if _blocks.TITLE_SERVING.search(head):
        return 0.0
    if _blocks.OFFLINE_ROW.search(head) or _OFFLINE_BACKEND.search(strip_head(head)):
        return 0.9
    return 0.0


class Reader(_blocks.BlockReader):
    """Line-level reader of bench_offline_throughput output (blocks, engine log lines)."""

    def __init__(
        self,
        ctx: ParseContext,
        *,
        next_block: Callable[[], int] | None = None,
        embed_server: bool = True,
        jsonl: bool = False,
    ) -> None:
        # one block numbering for the result blocks and the server log's phase blocks
        next_block = next_block or _blocks.counter()
        embedded = (_SERVER, ctx.embed(_SERVER, next_block=next_block)) if embed_server else None
        super().__init__(
            format_id, ctx, next_block=next_block, json_records=True, jsonl=jsonl, embedded=embedded
        )


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one bench_offline_throughput stdout, in line order."""
    jsonl = _JSON_HEAD.search(src.head) is not None
    reader = Reader(ctx, jsonl=jsonl)
    return read_lines(reader, src)
