"""`sglang-bench-serving`: `python -m sglang.bench_serving` result blocks and `--output-file` JSONL.

Owns the SGLang sniff and wiring (log-formats §5.1, §9): blocks of 0.3–0.5.23 are read by the
shared `_block.BlockReader`, each JSONL record is one block, and server-log lines printed to
the same terminal go to `sglang_server.Reader`. It must not re-implement row reading.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .._lines import SourceText
from ..model import Record
from . import _block, sglang_server
from .base import ParseContext, read_lines

format_id = "sglang-bench-serving"
priority = 20


def sniff(head: str, name: str) -> float:
    """Score: SGLang-only rows or JSONL keys are decisive; shared rows a weak hint.

    A server log with a block in it scores 1.0 too: this parser embeds the server reader.
    """
    if _block.sglang_jsonl(head):
        return 1.0
    if _block.TITLE_OFFLINE.search(head) and not _block.TITLE_SERVING.search(head):
        return 0.0
    sglang = _block.SGLANG_MARKS.search(head) is not None
    vllm = _block.VLLM_MARKS.search(head) is not None
    if sglang and not vllm:
        return 1.0 if _block.TITLE_SERVING.search(head) else 0.9
    if sglang:
        return 0.6  # both producers' markers: SGLang's wins the tie against vLLM's 0.55
    if vllm:
        return 0.0
    return 0.5 if _block.GENERIC_MARKS.search(head) else 0.0


class Reader(_block.BlockReader):
    """Line-level reader of bench_serving output (blocks, JSONL records, server lines)."""

    def __init__(
        self,
        ctx: ParseContext,
        *,
        jsonl: bool = False,
        next_block: Callable[[], int] | None = None,
        embed_server: bool = True,
        server: _block.LineReader | None = None,
    ) -> None:
        """`server`: the server-log reader to embed (a new one when None and
        `embed_server`), for a server log that holds a benchmark run further on."""
        # one block numbering for the result blocks and the server log's phase blocks
        next_block = next_block or _block.counter()
        embedded: tuple[str, _block.LineReader] | None = None
        if server is not None:
            embedded = (sglang_server.format_id, server)
        elif embed_server:
            embedded = (sglang_server.format_id, _block.sglang_log_reader(ctx, next_block))
        super().__init__(
            format_id, ctx, next_block=next_block, json_records=True, jsonl=jsonl, embedded=embedded
        )


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one bench_serving stdout or `--output-file` JSONL, in line order."""
    reader = Reader(ctx, jsonl=_block.looks_like_jsonl(src.head))
    return read_lines(reader, src)
