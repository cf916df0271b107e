"""`sglang-server`: SGLang server logs — interval series from Decode/Prefill lines, the TP-rank
duplicate rule, `server_args=` settings, start-up and error events (DESIGN §2–§3).

Owns the sniff and `parse`, which picks the path: small files line by line through
`reader.Reader` (the reference), big ones a chunk at a time through `fast` where that gives
exactly the reader's records. `ranks` holds the TP/DP rule both paths apply. It never groups
sources and never opens files.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future

from ..._lines import Chunk, Line, SourceText
from ...model import Record
from ..base import ParseContext, read_lines
from .fast import AHEAD, ChunkRun, Fast
from .reader import FORMAT_ID, Reader

format_id = FORMAT_ID
priority = 20

_SNIFF_BATCH = re.compile(r"(?:Decode|Prefill) batch(?:[.,]| ?\[\d+\]|\(mixed)")
_SNIFF_ARGS = re.compile(r"server_args=(?:ServerArgs\(|\{)")

FAST = True  # tests switch it off to compare with the line-by-line path
FAST_MIN_BYTES = 512 << 10  # smaller files are read line by line (polars is not imported)
FAST_CHUNK = 12 << 20
CHUNK_SAMPLES = 400_000  # samples a chunk holds at most, about (`chunk_size`)


def sniff(head: str, name: str) -> float:
    """Score: batch lines or a server-args dump are decisive; start-up lines are hints.

    Never 1.0: a terminal that mixes a server log with a benchmark block belongs to the
    benchmark parser, which embeds this one.
    """
    if _SNIFF_BATCH.search(head) or _SNIFF_ARGS.search(head):
        return 0.95
    if "The server is fired up and ready to roll" in head:
        return 0.9
    if "KV Cache is allocated" in head or "Capture cuda graph" in head:
        return 0.6
    return 0.0


def line_reader(ctx: ParseContext, *, next_block: Callable[[], int] | None = None) -> Reader:
    """A reader for SGLang server lines inside another format's source (`ctx.embed`); its
    phase blocks take their numbers from `next_block`, so that they never share an index
    with the embedder's blocks."""
    return Reader(ctx, next_block=next_block)


def chunk_size(samples: int, read: int) -> int:
    """The bytes of the chunks still to be read, `samples` handed over in bulk from about
    `read` bytes: `FAST_CHUNK`, or less where a chunk would hold more than `CHUNK_SAMPLES`
    samples (a log of TP ranks' profiler lines gives 54 a KB, four times a decode log's),
    so that the chunks prepared ahead hold about as many samples whatever the log (peak RSS
    in proportion), down to a third of `FAST_CHUNK`."""
    if samples <= 0 or read <= 0:
        return FAST_CHUNK
    fits = CHUNK_SAMPLES * read // samples
    return max(FAST_CHUNK // 3, min(FAST_CHUNK, fits))


def parse(src: SourceText, ctx: ParseContext) -> Iterator[Record]:
    """Records of one SGLang server log."""
    reader = Reader(ctx)
    if not FAST:
        yield from read_lines(reader, src)
        return
    fast: Fast | None = None
    ahead: deque[tuple[Chunk, Future[ChunkRun | None]]] = deque()
    try:
        for piece in src.chunks(FAST_CHUNK):
            if fast is not None:  # the chunks still to be read: of the samples' density
                src.read_size = chunk_size(fast.handed, fast.walked)
            # once a file is big enough for the fast path, all its chunks take it
            if isinstance(piece, Chunk) and (fast is not None or len(piece.data) >= FAST_MIN_BYTES):
                if fast is None:
                    fast = Fast(reader, src, getattr(ctx, "sink", None))
                # prepare chunks ahead while the oldest one is walked
                ahead.append((piece, fast.prepare(piece)))
                if len(ahead) > AHEAD:
                    yield from fast.walk(*ahead.popleft())
                continue
            while ahead and fast is not None:
                yield from fast.walk(*ahead.popleft())
            if isinstance(piece, Line):
                yield from reader.feed(piece)
            else:
                for ln in src.chunk_lines(piece):
                    yield from reader.feed(ln)
        while ahead and fast is not None:
            yield from fast.walk(*ahead.popleft())
    finally:
        if fast is not None:
            fast.close()
    yield from reader.finish()
