"""Where `sessionlens parse --format parquet` spends its CPU on one log, stage by stage (issue
22: "if a target cannot be met, measure why: per-stage CPU-seconds").

    POLARS_MAX_THREADS=1 python3 benchmarks/stages.py /tmp/sessionlens-bench/shapes/X.log

Chunks are prepared in turn on the main thread (not `AHEAD` at once on worker threads), so
that each stage's process CPU time is its own; with `POLARS_MAX_THREADS=1` polars adds no
thread of its own either. Stages nest (a chunk's preparation holds its matching and value
reading): each row is the CPU time spent inside that function, its callees included. The
total is the whole command's, start-up and the sha256 thread included. Prints a Markdown
table for benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import collections
import functools
import inspect
import runpy
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sessionlens import _lines, model  # noqa: E402
from sessionlens.parsers import phase_timing  # noqa: E402
from sessionlens.parsers.sglang_server import fast as sglang_fast  # noqa: E402
from sessionlens.parsers.vllm_server import fast as vllm_fast  # noqa: E402

SPENT: collections.defaultdict[str, float] = collections.defaultdict(float)

# (object, function, what the row says)
STAGES: list[tuple[Any, str, str]] = [
    (_lines, "polars_lines", "split lines, look for noise (`_lines.polars_lines`)"),
    (sglang_fast.ChunkRun, "__init__", "SGLang: a chunk's preparation (all below)"),
    (sglang_fast.ChunkRun, "_match", "SGLang batch lines: match layouts"),
    (sglang_fast.ChunkRun, "_read_ahead", "SGLang batch lines: read values (read-ahead)"),
    (phase_timing, "_match", "phase lines: match layouts"),
    (phase_timing, "_plan", "phase lines: blocks, values, ranks (`phase_timing._plan`)"),
    (sglang_fast.ChunkRun, "run", "SGLang: the walk and hand-over of samples"),
    (vllm_fast.ChunkRun, "__init__", "vLLM: a chunk's preparation (all below)"),
    (vllm_fast.ChunkRun, "_match", "vLLM lines: match layouts"),
    (vllm_fast.ChunkRun, "_read", "vLLM lines: read values"),
    (vllm_fast.ChunkRun, "run", "vLLM: the walk and hand-over of samples"),
    (model.SampleColumns, "add_batch", "hold a batch of samples (`SampleColumns.add_batch`)"),
    (model.SampleColumns, "write_parquet", "write the Parquet file (`sink_parquet`)"),
]


def _timed(f: Callable[..., Any], label: str) -> Callable[..., Any]:
    if inspect.isgeneratorfunction(f):

        @functools.wraps(f)
        def gen(*args: Any, **kwargs: Any) -> Iterator[Any]:
            it = f(*args, **kwargs)
            while True:
                t = time.process_time()
                try:
                    item = next(it)
                except StopIteration:
                    SPENT[label] += time.process_time() - t
                    return
                SPENT[label] += time.process_time() - t
                yield item

        return gen

    @functools.wraps(f)
    def call(*args: Any, **kwargs: Any) -> Any:
        t = time.process_time()
        try:
            return f(*args, **kwargs)
        finally:
            SPENT[label] += time.process_time() - t

    return call


def _in_turn(prepare: Callable[..., Any]) -> Callable[..., Future[Any]]:
    """A `Fast.prepare` that prepares the chunk now, on the calling thread."""

    def now(self: Any, chunk: Any) -> Future[Any]:
        done: Future[Any] = Future()
        done.set_result(prepare(self, chunk))
        return done

    return now


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--out", type=Path, default=Path("/tmp/sessionlens-stages.parquet"))
    args = ap.parse_args()
    for obj, name, label in STAGES:
        setattr(obj, name, _timed(getattr(obj, name), label))
    sglang_fast.Fast.prepare = _in_turn(  # type: ignore[method-assign]
        lambda self, chunk: self._prepare(chunk, list(self.layouts))
    )
    vllm_fast.Fast.prepare = _in_turn(  # type: ignore[method-assign]
        lambda self, chunk: self._prepare(chunk)
    )
    sys.argv = ["sessionlens", "parse", "--format", "parquet", "--out", str(args.out)]
    sys.argv += [str(args.log), "-q"]
    cpu, wall = time.process_time(), time.monotonic()
    try:
        runpy.run_module("sessionlens", run_name="__main__")
    except SystemExit as exc:
        if exc.code:
            raise
    cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    print(f"`{args.log.name}`: {cpu:.2f} CPU-s in all, {wall:.2f} s wall\n")
    print("| stage | CPU-s |\n|---|---:|")
    for _, _, label in STAGES:
        if label in SPENT:
            print(f"| {label} | {SPENT[label]:.2f} |")


if __name__ == "__main__":
    main()
