"""Format registry, detection and the per-source parse driver.

The pipeline for one file:
1. `_lines.read(path)` gives a `SourceText`: a cleaned head for sniffing, lines on demand.
2. `detect(src)` picks a format: a pinned one, else the best `sniff` score (1.0 wins at
   once; below `THRESHOLD` nothing matches and the file gets `unknown-format`).
3. `parse_source` runs that parser over the lines and sorts the record stream: samples go
   to the tidy columns, settings to the source or its block, summary items to the summary,
   diagnostics to the list. Provenance (lines, bytes, sha256) is known once lines are read.
4. A recognised file that yields no sample gets `no-samples`, so no file is dropped silently.
5. A parser that meets another format inside its source (a server log in a benchmark's
   terminal, phase lines in a server log) asks `ctx.embed(format_id)`; `embedded_reader`
   finds that format here, in `PARSERS`, so no format module imports another.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _launch, _lines
from .. import diagnostics as dg
from ..errors import ParseError, UsageError, did_you_mean
from ..model import (
    BlockInfo,
    Blocks,
    BlockStart,
    BlockStarts,
    ParseResult,
    Sample,
    SampleBatch,
    SampleColumns,
    Setting,
    SourceInfo,
    SummaryItem,
)

if TYPE_CHECKING:
    from .._rankfold import RankFold
from . import (
    aiperf,
    bench_stdout,
    guidellm,
    phase_timing,
    prometheus,
    sglang_bench_offline,
    sglang_bench_one_batch,
    sglang_bench_serving,
    sglang_server,
    trtllm_bench,
    vllm_bench_result,
    vllm_bench_serve,
    vllm_server,
)
from .base import ParseContext, Parser

PARSERS: dict[str, Parser] = {
    bench_stdout.format_id: bench_stdout,
    sglang_bench_serving.format_id: sglang_bench_serving,
    vllm_bench_serve.format_id: vllm_bench_serve,
    vllm_bench_result.format_id: vllm_bench_result,
    sglang_bench_offline.format_id: sglang_bench_offline,
    vllm_server.format_id: vllm_server,
    sglang_bench_one_batch.format_id: sglang_bench_one_batch,
    sglang_server.format_id: sglang_server,
    phase_timing.format_id: phase_timing,
    prometheus.format_id: prometheus,
    aiperf.format_id: aiperf,
    trtllm_bench.format_id: trtllm_bench,
    guidellm.format_id: guidellm,
}

THRESHOLD = 0.3
# A profiler's Chrome-trace JSON (PyTorch's `*.pt.trace.json`, which SGLang's and vLLM's
# `--profile` write): often hundreds of MB on one line, never a log.
_TRACE = re.compile(
    r'^\s*\{\s*"(?:schemaVersion|traceEvents|deviceProperties|displayTimeUnit)"\s*:'
)


def register(parser: Parser) -> None:
    """Add a third-party parser; its `format_id` must be new."""
    if parser.format_id in PARSERS:
        raise ValueError(f"format {parser.format_id!r} is already registered")
    PARSERS[parser.format_id] = parser


def embedded_reader(format_id: str, ctx: ParseContext, options: dict[str, Any]) -> object:
    """The line reader of a registered format, for a parser that embeds it (`ctx.embed`)."""
    make = getattr(PARSERS.get(format_id), "line_reader", None)
    if make is None:
        raise LookupError(f"format {format_id!r} has no line reader to embed")
    return make(ctx, **options)


def detect(head: str, name: str) -> str | None:
    """The format id whose `sniff` scores the head best, or None below the threshold."""
    best: tuple[float, int, str] | None = None
    for fid, parser in PARSERS.items():
        score = parser.sniff(head, name)
        if score >= 1.0:
            return fid
        if score >= THRESHOLD and (best is None or (score, parser.priority) > best[:2]):
            best = (score, parser.priority, fid)
    return best[2] if best else None


def parse_source(
    src: _lines.SourceText,
    *,
    config: str,
    source: str,
    columns: SampleColumns,
    format: str | None = None,
    fold: bool = False,
) -> tuple[SourceInfo, list[dg.Diagnostic]]:
    """Parse one source into `columns`; return its provenance and its diagnostics.

    With `fold`, the ranks' rows of a timestamp are combined as they are read, as the
    analysis would combine them (`_rankfold`; for `report`, whose table then holds one row
    a group): raises `_rankfold.Uncombinable` when that cannot be done exactly (read the
    source again without)."""
    if format is not None and format not in PARSERS:
        known = ", ".join(sorted(PARSERS))
        hint = did_you_mean(format, PARSERS)
        raise UsageError(f"unknown format {format!r} (known: {known}){hint}")
    # a binary file or a trace is not sniffed (unless its format is pinned)
    kind = src.binary or ("a profiler trace (JSON)" if _TRACE.match(src.head) else None)
    fid = format or (None if kind else detect(src.head, src.name))
    ctx = ParseContext(file=source)
    batched = 0
    folding: RankFold | None = None
    if fold:
        from .._rankfold import RankFold

        folding = RankFold(columns, config, source)

    def take(batch: SampleBatch) -> None:
        nonlocal batched
        if folding is not None:
            folding.add_batch(batch)
        else:
            columns.add_batch(config, source, batch)
        batched += len(batch)

    ctx.sink = take
    settings: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    plain: list[BlockStarts] = []  # blocks started in bulk (a fast path's phase blocks)
    n_samples = 0
    if fid is None:
        # read anyway, for provenance (sha256, lines), but not as lines: a file no parser
        # reads may be one line of hundreds of MB, or binary
        src.count_only()
    else:
        parser = PARSERS[fid]
        for rec in parser.parse(src, ctx):
            if isinstance(rec, Sample):
                if folding is not None:
                    folding.add(rec)
                else:
                    columns.add(config, source, rec)
                n_samples += 1
            elif isinstance(rec, Setting):
                if rec.block is None:
                    settings[rec.key] = rec.value
                else:
                    blocks.setdefault(rec.block, {"line": rec.line or 0, "format": fid})
                    blocks[rec.block].setdefault("settings", {})[rec.key] = rec.value
            elif isinstance(rec, BlockStart):
                entry = blocks.setdefault(rec.block, {})
                entry["line"] = rec.line
                entry["format"] = rec.format
            elif isinstance(rec, BlockStarts):
                plain.append(rec)
            elif isinstance(rec, SummaryItem):
                summary[rec.key] = rec.value
            else:
                ctx.diagnostics.append(rec)
        n_samples += batched
        if folding is not None:
            folding.finish()
    diags = list(src.notes) + ctx.diagnostics
    is_empty = any(d.code == "empty-file" for d in src.notes)
    if fid is None and kind:
        what = f"{kind}, not a text log" if src.binary else f"{kind}, not a log"
        diags.append(
            dg.make(
                "unknown-format",
                source,
                None,
                f"{what}; leave it out with `exclude` in sessionlens.toml",
            )
        )
    elif fid is None and not is_empty:
        lines = "1 line" if src.n_lines == 1 else f"{src.n_lines} lines"
        diags.append(
            dg.make(
                "unknown-format",
                source,
                None,
                f"no parser recognises this file ({lines}); "
                "pin one with `format` in sessionlens.toml",
            )
        )
    elif (
        fid is not None
        and n_samples == 0
        and not is_empty
        and not any(d.code == "no-samples" for d in ctx.diagnostics)  # said by the parser
    ):
        diags.append(
            dg.make("no-samples", source, None, f"recognised as {fid} but no sample was read")
        )
    info = SourceInfo(
        path=source,
        format=fid,
        embedded_formats=sorted(ctx.embedded),
        lines=src.n_lines,
        bytes=src.n_bytes,
        sha256=src.sha256,
        settings=settings,
        summary=summary,
        blocks=_source_blocks(blocks, plain, fid),
        record_counts=dict(sorted(ctx.counts.items())),
        samples=n_samples,
    )
    return info, diags


def _source_blocks(
    blocks: dict[int, dict[str, Any]], plain: list[BlockStarts], fid: str | None
) -> Blocks:
    """A source's blocks: those met one by one, and those started in bulk (held as arrays
    while no record of their own names them; one that is named is met as a `BlockStart`)."""
    if plain and blocks:
        import numpy as np

        named = np.array(sorted(blocks), np.int64)  # (sorted: searched, never sorted again)

        def met(bulk: BlockStarts) -> bool:
            at = np.minimum(np.searchsorted(named, bulk.blocks), len(named) - 1)
            return bool((named[at] == bulk.blocks).any())

        if any(met(p) for p in plain):
            for p in plain:  # rare: the same as a `BlockStart` each, in order
                for b, line in zip(p.blocks.tolist(), p.lines.tolist(), strict=True):
                    entry = blocks.setdefault(b, {})
                    entry["line"], entry["format"] = line, p.format
            plain = []
    given = [
        BlockInfo(
            block=b,
            line=v.get("line", 0),
            format=v.get("format", fid or ""),
            settings=v.get("settings", {}),
        )
        for b, v in sorted(blocks.items())
    ]
    return Blocks(given, plain)


def parse_path(
    path: Path,
    *,
    config: str,
    source: str,
    columns: SampleColumns,
    format: str | None = None,
    progress: Callable[[int], None] | None = None,
    fold: bool = False,
) -> tuple[SourceInfo, list[dg.Diagnostic]]:
    """Read and parse one file; an unreadable file is a diagnostic, not an exception.
    `fold` as `parse_source`'s."""
    try:
        src = _lines.read(path, display=source)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return SourceInfo(path=source, format=None), [
            dg.make("unreadable-file", source, None, f"cannot read the file: {reason}")
        ]
    src.progress = progress  # fed the bytes read, as they are read
    try:
        return parse_source(
            src, config=config, source=source, columns=columns, format=format, fold=fold
        )
    except OSError as exc:  # failed mid-read
        reason = exc.strerror or str(exc)
        return SourceInfo(path=source, format=None), [
            dg.make("unreadable-file", source, None, f"reading failed: {reason}")
        ]


def _strict(result: ParseResult) -> ParseResult:
    for d in result.diagnostics:
        if d.level == "error":
            raise ParseError(d.message, path=d.file, line=d.line)
    return result


def parse_file(path: str | Path, format: str | None = None, strict: bool = False) -> ParseResult:
    """Parse one file (plain or gzip) into a `ParseResult`: `.samples`, a polars DataFrame of
    tidy samples (DESIGN §3), `.sources` (format, settings, blocks, digest) and
    `.diagnostics` (every problem met, with its line; bad lines are never exceptions).

    `format` pins a format id instead of detecting one: bench-stdout, sglang-server,
    phase-timing, sglang-bench-serving, sglang-bench-one-batch, sglang-bench-offline,
    vllm-bench-serve, vllm-server, vllm-bench-result, aiperf, guidellm, trtllm-bench,
    prometheus (DESIGN §2). A file no format recognises gives no samples and an
    `unknown-format` diagnostic. The samples' `config` is the file's parent folder's name,
    `source` the path as given.

    Raises `UsageError` when the file does not exist or `format` is no known id, and with
    `strict=True` `ParseError` at the first error-level diagnostic.
    """
    p = Path(path)
    if not p.exists():
        raise UsageError("no such file", path=str(path))
    columns = SampleColumns()
    config = p.resolve().parent.name
    info, diags = parse_path(p, config=config, source=str(path), columns=columns, format=format)
    columns.set_launches(_launch.of_sources([info], columns))
    result = ParseResult([info], diags, columns)
    return _strict(result) if strict else result


def parse_text(
    text: str, format: str | None = None, *, path: str = "<text>", strict: bool = False
) -> ParseResult:
    """Parse a string as if it were a file named `path` (the name the samples' `source` and
    the diagnostics show), into a `ParseResult` as `parse_file` gives, with `config` empty.
    `format` pins a format id (see `parse_file`).

    Raises `UsageError` when `format` is no known id, and with `strict=True` `ParseError` at
    the first error-level diagnostic.
    """
    columns = SampleColumns()
    src = _lines.from_text(text, path)
    info, diags = parse_source(src, config="", source=path, columns=columns, format=format)
    columns.set_launches(_launch.of_sources([info], columns))
    result = ParseResult([info], diags, columns)
    return _strict(result) if strict else result
