"""Time `parse` on variants of the generated shapes that no generator writes: the same log
behind a collector's prefix, trimmed by an editor, pasted with a gutter, with a newer
version's field, lines cut now and then, a request log in other scripts (issue 22: "speed is
judged on shapes you have not seen"). Each variant is made from the head of a shape
(`gen_shapes.py`) by rewriting its lines; its time is shown per GB and as a ratio to the
unchanged head's in the same run, and its rows beside the unchanged head's where the
variant leaves the samples as they were.

    python3 benchmarks/variants.py                          # every shape and variant, 64 MB
    python3 benchmarks/variants.py --shapes vllm-v1 --variants grep-n,gutter
    python3 benchmarks/variants.py --against /tmp/basetree  # and another tree, alternating

Variant files are cached in --workdir (default /tmp/sessionlens-bench/variants).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_sglang_log as gen  # noqa: E402
import gen_shapes  # noqa: E402
from run import Timing, run_once, sessionlens, sessionlens_env, summary, warm  # noqa: E402

LOGS = ["sglang-tp8", "sglang-dp", "sglang-phase", "vllm-v1", "vllm-v0"]
PROMETHEUS = ["prometheus"]


def _stamp(rng: random.Random, state: list[int]) -> str:
    """A nanosecond timestamp that advances (a collector's)."""
    state[0] += rng.randint(1000, 900_000_000)
    ns = state[0]
    return f"2025-11-14T09:{ns // 60_000_000_000 % 60:02d}:{ns // 10**9 % 60:02d}.{ns % 10**9:09d}Z"


Rewrite = Callable[[list[str], random.Random], Iterator[str]]


def _each(f: Callable[[int, str, random.Random], str]) -> Rewrite:
    def rewrite(lines: list[str], rng: random.Random) -> Iterator[str]:
        for i, line in enumerate(lines):
            yield f(i, line, rng)

    return rewrite


def _cri(lines: list[str], rng: random.Random) -> Iterator[str]:
    state = [0]
    for line in lines:  # containerd's log files: `time stream P|F text`
        yield f"{_stamp(rng, state)} stdout F {line}"


def _docker_json(lines: list[str], rng: random.Random) -> Iterator[str]:
    state = [0]
    for line in lines:  # docker's json-file driver, read from its files
        record = {"log": line + "\n", "stream": "stdout", "time": _stamp(rng, state)}
        yield json.dumps(record, separators=(",", ":"))


def _journal(lines: list[str], rng: random.Random) -> Iterator[str]:
    state = [0]
    for line in lines:
        t = _stamp(rng, state)
        yield f"Nov 14 {t[11:19]} gpu-node-7 python3[12345]: {line}"


def _new_field(i: int, line: str, rng: random.Random) -> str:
    """A newer version's field, unknown to the reader, inside the batch and engine lines."""
    line = line.replace(", #queue-req:", f", spec draft time: {rng.random():.2f}, #queue-req:", 1)
    return line.replace(", Running:", f", Waiting for KV: {i % 3} reqs, Running:", 1)


def grep_r(lines: list[str], rng: random.Random, files: int = 150) -> Iterator[str]:
    """`grep -r` over a results tree: the lines split into `files` files in turn, each
    file's lines behind its path, in a folder named by a word (a config's name)."""
    letters = "abcdefghijklmnopqrstuvwxyz-"
    names = ["".join(rng.choice(letters) for _ in range(8)) for _ in range(files)]
    per = max(len(lines) // len(names), 1)
    for i, line in enumerate(lines):
        yield f"results/{names[min(i // per, len(names) - 1)]}/server.log:{line}"


def _cut(i: int, line: str, rng: random.Random) -> str:
    """One line in a hundred cut at any place (ranks writing one stream)."""
    if rng.random() < 0.01 and len(line) > 20:
        return line[: rng.randint(10, len(line) - 1)]
    return line


_PROMPTS = [
    "你好，请介绍一下你自己。",
    "Explain speculative decoding — briefly ✓",
    "Привет! Как дела?",
    "Write a haiku about GPUs 🚀",
]


def _is_vllm(lines: list[str]) -> bool:
    """Whether a shape's head is a vLLM log (its stat loggers' lines), not SGLang's."""
    return any("metrics.py" in x or "loggers.py" in x for x in lines[:5000])


def _requests(lines: list[str], rng: random.Random) -> Iterator[str]:
    """A request log (`--enable-log-requests`, `--log-requests`): 15 % more lines, each a
    prompt in some script."""
    vllm = _is_vllm(lines)
    for line in lines:
        yield line
        if rng.random() < 0.15:
            text = rng.choice(_PROMPTS) * rng.randint(1, 20)
            rid = f"{rng.getrandbits(64):x}"
            if vllm:
                yield (
                    f"INFO 11-14 09:00:13 [logger.py:43] Received request chatcmpl-{rid}: "
                    f"prompt: '<|im_start|>user\\n{text}<|im_end|>', params: "
                    "SamplingParams(n=1, temperature=0.7, max_tokens=256), lora_request: None."
                )
            else:
                yield (
                    f"[2025-11-14 09:01:43] Receive: obj=GenerateReqInput(text='{text}', "
                    f"sampling_params={{'max_new_tokens': 256}}, rid='{rid}', stream=True)"
                )


def _tracebacks(lines: list[str], rng: random.Random) -> Iterator[str]:
    """A traceback for a failed request (a client sending prompts longer than the model's
    context: uvicorn's `Exception in ASGI application`) after about one line in 40, its
    frames naming `schedule_batch.py` and `batch = ...`, one in five chained to a second."""
    vllm = _is_vllm(lines)
    head = "(APIServer pid=1234) ERROR:    " if vllm else "[2025-11-14 09:01:43] ERROR:    "
    frames = [
        '  File "/usr/lib/python3/dist-packages/uvicorn/protocols/http/httptools_impl.py", '
        "line 409, in run_asgi",
        "    result = await app(  # type: ignore[func-returns-value]",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/schedule_batch.py", line '
        "1050, in prepare_for_decode",
        "    batch = self.get_next_batch_to_run()",
    ]
    for line in lines:
        yield line
        if rng.random() < 0.025:
            yield f"{head}Exception in ASGI application"
            yield "Traceback (most recent call last):"
            yield from frames
            tokens = rng.randint(131073, 400000)
            yield f"ValueError: The input ({tokens} tokens) is longer than the context length."
            if rng.random() < 0.2:
                yield ""
                yield "During handling of the above exception, another exception occurred:"
                yield ""
                yield "Traceback (most recent call last):"
                yield from frames[2:]
                yield "RuntimeError: the request failed"


_LABELS = re.compile(r'\{engine="(\d+)",(.*)model_name="([^"]*)"\}')


def _prom_ts(lines: list[str], rng: random.Random) -> Iterator[str]:
    """Series lines with a millisecond timestamp (Prometheus' `/federate`)."""
    ms = 1763110800000
    for line in lines:
        if line.startswith("# scrape"):
            ms += 5000
        yield line if line.startswith("#") or not line else f"{line} {ms + rng.randint(0, 999)}"


def _openmetrics(lines: list[str], rng: random.Random) -> Iterator[str]:
    """OpenMetrics: `# EOF` after each scrape, an exemplar on a tenth of the buckets."""
    started = False
    for line in lines:
        if line.startswith("# scrape"):
            if started:
                yield "# EOF"
            started = True
        if "_bucket{" in line and rng.random() < 0.1:
            line += f' # {{trace_id="{rng.getrandbits(128):032x}"}} 0.05 1763110804.1'
        yield line


VARIANTS: dict[str, tuple[str, Rewrite]] = {
    "none": ("the shape's head as generated", _each(lambda i, x, r: x)),
    "cri": ("containerd's `time stdout F ` before each line", _cri),
    "docker-json": ("docker's json-file records", _docker_json),
    "journal": ("journalctl's `Mon DD HH:MM:SS host unit[pid]: `", _journal),
    "grep": (
        "`grep` over files: `logs/run-N/server.log:`",
        _each(lambda i, x, r: f"logs/run-{i // 100000}/server.log:{x}"),
    ),
    "grep-many": ("`grep -r` over 150 files in folders named by words", grep_r),
    "grep-n": (
        "`grep -n` over two files: a line number of growing width",
        _each(lambda i, x, r: f"logs/node{i % 2}/server.log:{i + 1}:{x}"),
    ),
    "gutter": ("a viewer's `│ ` before each line", _each(lambda i, x, r: f"│ {x}")),
    "quote": ("a Markdown quote `> ` before each line", _each(lambda i, x, r: f"> {x}")),
    "ansi": ("each line dimmed in ANSI codes", _each(lambda i, x, r: f"\x1b[2m{x}\x1b[0m")),
    "crlf": ("CRLF line ends", _each(lambda i, x, r: x + "\r")),
    "trimmed": (
        "trailing blanks trimmed (an editor, a hook)",
        _each(lambda i, x, r: x.rstrip(" \t")),
    ),
    "new-field": ("a newer version's field in every batch and engine line", _each(_new_field)),
    "cut-1%": ("1 % of lines cut at any place", _each(_cut)),
    "requests": ("a request log: 15 % more lines, prompts in other scripts", _requests),
    "tracebacks": ("a failed request's traceback after one line in 40", _tracebacks),
}
PROM_VARIANTS: dict[str, tuple[str, Rewrite]] = {
    "none": VARIANTS["none"],
    "label-order": (
        "labels in another order",
        _each(
            lambda i, x, r: _LABELS.sub(
                lambda m: f'{{model_name="{m[3]}",{m[2]}engine="{m[1]}"}}', x
            )
        ),
    ),
    "timestamps": ("a timestamp on every series line (`/federate`)", _prom_ts),
    "openmetrics": ("OpenMetrics: `# EOF`, exemplars", _openmetrics),
    "crlf": VARIANTS["crlf"],
}


def table(shape: str) -> dict[str, tuple[str, Rewrite]]:
    """The variants of a shape: a log's, or a `/metrics` scrape's."""
    return PROM_VARIANTS if shape in PROMETHEUS else VARIANTS


def rewritten(shape: str, name: str, data: bytes) -> Iterator[str]:
    """The lines of variant `name` of a shape's log (its whole lines, `data`), in order."""
    text = data[: data.rfind(b"\n") + 1].decode()
    yield from table(shape)[name][1](text.split("\n")[:-1], random.Random(1))


def variant(shape: str, name: str, size: int, work: Path, shapes: Path) -> Path:
    """The variant's file, made once from the head of the shape's cached 256 MB log."""
    out = work / f"{shape}-{name}-{size}.log"
    if out.exists():
        return out
    base = gen_shapes.cached(shape, max(size, 256 << 20), str(shapes))
    with open(base, "rb") as fh:
        data = fh.read(size)
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        for line in rewritten(shape, name, data):
            fh.write(line + "\n")
    tmp.rename(out)
    return out


def timed_parse(
    path: Path, trees: list[tuple[str, dict[str, str]]], repeat: int, parquet: Path
) -> tuple[dict[str, float], dict[str, int], dict[str, str]]:
    """`parse --format parquet` of `path` by each tree, `repeat` times in turn: per tree the
    median wall time, the rows written, or why a run failed (the first word of its exit
    message: a row of the table of its own)."""
    runs: dict[str, list[Timing]] = {}
    counts: dict[str, int] = {}
    failed: dict[str, str] = {}
    for _ in range(max(repeat, 1)):
        for tree, env in trees:
            argv = ["parse", str(path), "--format", "parquet", "--out", str(parquet)]
            try:
                runs.setdefault(tree, []).append(run_once(sessionlens(*argv), env))
            except SystemExit as e:
                failed[tree] = str(e).split(":")[0]
                continue
            counts[tree] = rows(parquet)
    seconds = {tree: summary(r).seconds for tree, r in runs.items() if tree not in failed}
    return seconds, counts, failed


def rows(parquet: Path) -> int:
    import polars as pl

    return int(pl.scan_parquet(parquet).select(pl.len()).collect().item())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=",".join(LOGS + PROMETHEUS), help="comma-separated")
    ap.add_argument("--variants", default="", help="comma-separated (default: all)")
    ap.add_argument("--size", default="64M", help="bytes of each shape's head")
    ap.add_argument("--repeat", type=int, default=1, help="runs per command (median)")
    ap.add_argument("--against", default="", help="another working tree to time alongside")
    ap.add_argument("--workdir", default="/tmp/sessionlens-bench/variants")
    ap.add_argument("--shapes-dir", default="/tmp/sessionlens-bench/shapes", help="run.py's")
    args = ap.parse_args(argv)
    size = gen.parse_size(args.size)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    trees = [("this tree", sessionlens_env())]
    if args.against:
        trees.append((Path(args.against).name, sessionlens_env(Path(args.against).resolve())))
    wanted = [v for v in args.variants.split(",") if v]
    head = "| shape | variant | MB |" + "".join(
        f" {tree}: s/GB | × none | rows |" for tree, _ in trees
    )
    print(f"\n### `parse --format parquet` on variants of {args.size} heads\n")
    print(head)
    print("|---|---|---:|" + "---:|---:|---:|" * len(trees))
    for shape in [s for s in args.shapes.split(",") if s]:
        names = ["none"] + [v for v in table(shape) if v != "none" and (not wanted or v in wanted)]
        base: dict[str, float] = {}
        for name in names:
            log = variant(shape, name, size, work, Path(args.shapes_dir))
            warm(log)
            gb = log.stat().st_size / (1 << 30)
            seconds, counts, failed = timed_parse(log, trees, args.repeat, work / "samples.parquet")
            row = f"| {shape} | {name} | {log.stat().st_size / (1 << 20):.0f} |"
            for tree, _ in trees:
                if tree in failed:
                    row += f" {failed[tree]} | | |"
                    continue
                per_gb = seconds[tree] / gb
                base.setdefault(tree, per_gb)
                row += f" {per_gb:.1f} | {per_gb / base[tree]:.1f} | {counts[tree]} |"
            print(row)
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
