"""`vllm-bench-serve`: `vllm bench serve` and the older `benchmark_serving.py` result blocks.

Owns the vLLM sniff and wiring (log-formats §6.1, §9): every layout, forks' rows, `P{p}` rows
and the `Speculative Decoding` section are read by the shared `_block.BlockReader`; vLLM
server lines in the same terminal go to `vllm_server.Reader`. It must not read rows itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .._lines import SourceText
from ..model import Record
from . import _block, vllm_server
from .base import ParseContext, read_lines

format_id = "vllm-bench-serve"
priority = 15


def sniff(head: str, name: str) -> float:
    """Score: vLLM-only rows are decisive; rows both producers print are a weak hint."""
    if _block.sglang_jsonl(head):
        return 0.0
    if _block.vllm_json(head):
        return 1.0
    if _block.TITLE_OFFLINE.search(head) and not _block.TITLE_SERVING.search(head):
        return 0.0
    sglang = _block.SGLANG_MARKS.search(head) is not None
    vllm = _block.VLLM_MARKS.search(head) is not None
    if vllm and not sglang:
        return 1.0 if _block.TITLE_SERVING.search(head) else 0.9
    if vllm:
        return 0.55
    if sglang:
        return 0.0
    return 0.45 if _block.GENERIC_MARKS.search(head) else 0.0


class Reader(_block.BlockReader):
    """Line-level reader of vLLM bench serve output (blocks, vLLM server lines)."""

    def __init__(
        self,
        ctx: ParseContext,
        *,
        next_block: Callable[[], int] | None = None,
        embed_server: bool = True,
        server: vllm_server.Reader | None = None,
        jsonl: bool = False,
    ) -> None:
        # `server`: a reader that already read the start of the log (see vllm_server.parse)
        if server is None and embed_server:
            server = vllm_server.Reader(ctx)
        embedded = (vllm_server.format_id, server) if server is not None else None
        super().__init__(
            format_id, ctx, next_block=next_block, json_records=True, jsonl=jsonl, embedded=embedded
        )


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one vLLM bench serve stdout or `--save-result` JSON, in line order."""
    reader = Reader(ctx, jsonl=_block.vllm_json(src.head) and _block.looks_like_jsonl(src.head))
    return read_lines(reader, src)
