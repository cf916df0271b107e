"""`sglang-bench-serving`: `python -m sglang.bench_serving` result blocks and `--output-file` JSONL.

Owns the SGLang sniff and wiring (log-formats §5.1, §9): blocks of 0.3–0.5.23 are read by the
shared `_blocks.BlockReader`, each JSONL record is one block, and server-log lines printed to
the same terminal go to sglang-server's reader (`ctx.embed`). It must not re-implement row
reading.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .._lines import SourceText
from ..model import Record
from . import _blocks
from .base import LineReader, ParseContext, read_lines

format_id = "sglang-bench-serving"
priority = 20
_SERVER = "sglang-server"  # the format of server lines in the same terminal


def sniff(head: str, name: str) -> float:
    """Score: SGLang-only rows or JSONL keys are decisive; shared rows a weak hint.

    A server log with a block in it scores 1.0 too: this parser embeds the server reader.
    """
    if _blocks.sglang_jsonl(head):
        return 1.0
    if _blocks.TITLE_OFFLINE.search(head) and not _blocks.TITLE_SERVING.search(head):
        return 0.0
    sglang = _blocks.SGLANG_MARKS.search(head) is not None
    vllm = _blocks.VLLM_MARKS.search(head) is not None
    if sglang and not vllm:
        return 1.0 if _blocks.TITLE_SERVING.search(head) else 0.9
    if sglang:
        return 0.6  # both producers' markers: SGLang's wins the tie against vLLM's 0.55
    if vllm:
        return 0.0
    return 0.5 if _blocks.GENERIC_MARKS.search(head) else 0.0


class Reader(_blocks.BlockReader):
    """Line-level reader of bench_serving output (blocks, JSONL records, server lines)."""

    def __init__(
        self,
        ctx: ParseContext,
        *,
        jsonl: bool = False,
        next_block: Callable[[], int] | None = None,
        embed_server: bool = True,
        server: LineReader | None = None,
    ) -> None:
        """`server`: the server-log reader to embed (a new one when None and
        `embed_server`), for a server log that holds a benchmark run further on."""
        # one block numbering for the result blocks and the server log's phase blocks
        next_block = next_block or _blocks.counter()
        embedded: tuple[str, LineReader] | None = None
        if server is None and embed_server:
            server = ctx.embed(_SERVER, next_block=next_block)
        if server is not None:
            embedded = (_SERVER, server)
        super().__init__(
            format_id, ctx, next_block=next_block, json_records=True, jsonl=jsonl, embedded=embedded
        )


def line_reader(ctx: ParseContext, **options: Any) -> Reader:
    """A reader for a benchmark run inside another format's source (`ctx.embed`): an
    SGLang server log passes `server` (its own lines back) and `next_block` (one block
    numbering with its phase blocks)."""
    return Reader(ctx, **options)


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one bench_serving stdout or `--output-file` JSONL, in line order."""
    reader = Reader(ctx, jsonl=_blocks.looks_like_jsonl(src.head))
    return read_lines(reader, src)
