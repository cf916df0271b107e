"""`vllm-bench-serve`: `vllm bench serve` and the older `benchmark_serving.py` result blocks.

Owns the vLLM sniff and wiring (log-formats §6.1, §9): every layout, forks' rows, `P{p}` rows
and the `Speculative Decoding` section are read by the shared `_blocks.BlockReader`; vLLM
server lines in the same terminal go to vllm-server's reader (`ctx.embed`). It must not read
rows itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from .._lines import SourceText
from ..model import Record
from . import _blocks
from ._fields import strip_head
from .base import LineReader, ParseContext, read_lines

format_id = "vllm-bench-serve"
priority = 15
_SERVER = "vllm-server"  # the format of server lines in the same terminal


# The 2023 benchmark_serving.py printed no block: `Total time: {t:.2f} s`, `Throughput:
# {r:.2f} requests/s` (no other rate after it: that is `vllm bench throughput`), then the
# average latencies in seconds.
_OLD_SCRIPT = re.compile(
    r"^[ \t]*Throughput:[ \t]+[\d.]+ requests/s[ \t]*\n(?:[^\n]*\n)?[ \t]*Average latency:", re.M
)


def sniff(head: str, name: str) -> float:
    """Score: vLLM-only rows are decisive; rows both producers print are a weak hint."""
    if _blocks.sglang_jsonl(head):
        return 0.0
    if _OLD_SCRIPT.search(strip_head(head)):
        return 1.0
    if _blocks.vllm_json(head):
        return 1.0
    if _blocks.TITLE_OFFLINE.search(head) and not _blocks.TITLE_SERVING.search(head):
        return 0.0
    sglang = _blocks.SGLANG_MARKS.search(head) is not None
    vllm = _blocks.VLLM_MARKS.search(head) is not None
    if vllm and not sglang:
        return 1.0 if _blocks.TITLE_SERVING.search(head) else 0.9
    if vllm:
        return 0.55
    if sglang:
        return 0.0
    return 0.45 if _blocks.GENERIC_MARKS.search(head) else 0.0


class Reader(_blocks.BlockReader):
    """Line-level reader of vLLM bench serve output (blocks, vLLM server lines)."""

    def __init__(
        self,
        ctx: ParseContext,
        *,
        next_block: Callable[[], int] | None = None,
        embed_server: bool = True,
        server: LineReader | None = None,
        jsonl: bool = False,
    ) -> None:
        # `server`: a reader that already read the start of the log (see vllm_server.parse)
        if server is None and embed_server:
            server = ctx.embed(_SERVER)
        embedded = (_SERVER, server) if server is not None else None
        super().__init__(
            format_id, ctx, next_block=next_block, json_records=True, jsonl=jsonl, embedded=embedded
        )


def line_reader(ctx: ParseContext, **options: Any) -> Reader:
    """A reader for a benchmark run inside another format's source (`ctx.embed`): a vLLM
    server log passes itself as `server`, to get back the lines that are not the block's."""
    return Reader(ctx, **options)


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one vLLM bench serve stdout or `--save-result` JSON, in line order."""
    reader = Reader(ctx, jsonl=_blocks.vllm_json(src.head) and _blocks.looks_like_jsonl(src.head))
    return read_lines(reader, src)
