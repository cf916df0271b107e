"""Time `parse` on the lines other versions and other clients write, which neither the
generator (`gen_shapes.py`) nor its variants (`variants.py`) make: every SGLang Decode and
Prefill line of `formats/log-formats.md` §2 (D1–D10, the pools, PD servers, P1–P11, the
glued fields of 0.4.6–0.4.8's PD prefill server), vLLM's engine and spec lines from 0.6.3 to
0.33, and the large files a client run leaves beside its summary (AIPerf's per-request
records, guidellm's `benchmarks.json` with its requests). Issue 22: "speed is judged on
shapes you have not seen". Each case's time is shown per GB and as a ratio to its family's
plain case in the same run (SGLang D10, vLLM 0.12), with the rows it gave.

    python3 benchmarks/versions.py                          # every case, 32 MB each
    python3 benchmarks/versions.py --cases pd-prefill-047,vllm-nan-busy
    python3 benchmarks/versions.py --against /tmp/basetree  # and another tree, alternating

Files are cached in --workdir (default /tmp/sessionlens-bench/versions).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_sglang_log as gen  # noqa: E402
from run import sessionlens_env, warm  # noqa: E402
from variants import timed_parse  # noqa: E402

Lines = Callable[[random.Random], str]


def _f2(rng: random.Random) -> str:
    return f"{rng.random():.2f}"


def _g2(rng: random.Random) -> str:
    return f"{rng.uniform(1, 3000):.2f}"


def _n(rng: random.Random) -> int:
    return rng.randint(0, 999)


def _s4(rng: random.Random) -> str:  # the spec fragment up to 0.5.3
    return f"accept len: {rng.uniform(1, 4):.2f}, "


def _s5(rng: random.Random) -> str:  # from 0.5.4
    return f"accept len: {rng.uniform(1, 4):.2f}, accept rate: {rng.random():.2f}, "


def _pct(rng: random.Random) -> str:
    return f"{rng.uniform(0, 100):.2f}%"


# SGLang batch lines after the prefix, one template a version (log-formats.md §2)
SGLANG: dict[str, tuple[str, Lines]] = {
    "D1": (
        "0.3.0–0.4.1 Decode",
        lambda r: (
            f"Decode batch. #running-req: {_n(r)}, #token: {_n(r)}, token usage: "
            f"{_f2(r)}, gen throughput (token/s): {_g2(r)}, #queue-req: {_n(r)}"
        ),
    ),
    "D3": (
        "0.4.4 Decode, largest-len, trailing `, `",
        lambda r: (
            f"Decode batch. #running-req: {_n(r)}, #token: {_n(r)}, token usage: "
            f"{_f2(r)}, {_s4(r)}gen throughput (token/s): {_g2(r)}, largest-len: {_n(r)}, "
            f"#queue-req: {_n(r)}, "
        ),
    ),
    "D6": (
        "0.4.7–0.4.9 Decode, cuda graph",
        lambda r: (
            f"Decode batch. #running-req: {_n(r)}, #token: {_n(r)}, token usage: "
            f"{_f2(r)}, {_s4(r)}cuda graph: {r.choice(['True', 'False'])}, gen throughput "
            f"(token/s): {_g2(r)}, #queue-req: {_n(r)}"
        ),
    ),
    "D8": (
        "0.5.4 Decode [N]",
        lambda r: (
            f"Decode batch [{r.randint(1, 99999)}], #running-req: {_n(r)}, #token: "
            f"{_n(r)}, token usage: {_f2(r)}, {_s5(r)}cuda graph: True, gen throughput "
            f"(token/s): {_g2(r)}, #queue-req: {_n(r)}, "
        ),
    ),
    "D10": (
        "0.5.9+ Decode (the family's plain case)",
        lambda r: (
            f"Decode batch, #running-req: {_n(r)}, #token: {_n(r)}, token usage: "
            f"{_f2(r)}, {_s5(r)}cuda graph: True, gen throughput (token/s): {_g2(r)}, "
            f"#queue-req: {_n(r)}"
        ),
    ),
    "D10-mfu": (
        "0.5.23 Decode, MFU and occupancy",
        lambda r: (
            f"Decode batch, #running-req: {_n(r)}, #token: {_n(r)}, token usage: "
            f"{_f2(r)}, cuda graph: True, gen throughput (token/s): {_g2(r)}, #queue-req: "
            f"{_n(r)}, est. decode TFLOPS/s (per GPU): {_g2(r)}, est. read BW (GB/s per GPU): "
            f"{_g2(r)}, est. write BW (GB/s per GPU): {_g2(r)}, fwd occupancy: {_pct(r)}, "
            f"fwd+idle occupancy: {_pct(r)}"
        ),
    ),
    "swa-0.4.9": (
        "0.4.9 SWA `full=N, swa=M`",
        lambda r: (
            f"Decode batch. #running-req: {_n(r)}, #token: full={_n(r)}, swa={_n(r)}, "
            f"token usage: full={_f2(r)}, swa={_f2(r)}, cuda graph: True, gen throughput "
            f"(token/s): {_g2(r)}, #queue-req: {_n(r)}"
        ),
    ),
    "mamba": (
        "0.5.5+ Mamba hybrid",
        lambda r: (
            f"Decode batch, #running-req: {_n(r)}, #full token: {_n(r)}, full token "
            f"usage: {_f2(r)}, mamba num: {_n(r)}, mamba usage: {_f2(r)}, {_s5(r)}cuda graph: "
            f"True, gen throughput (token/s): {_g2(r)}, #queue-req: {_n(r)}"
        ),
    ),
    "hisparse": (
        "0.5.23 HiSparse pools",
        lambda r: (
            f"Decode batch, #running-req: {_n(r)}, #gpu token: {_n(r)}, gpu token "
            f"usage: {_f2(r)}, #cpu token: {_n(r)}, cpu token usage: {_f2(r)}, cuda graph: True, "
            f"gen throughput (token/s): {_g2(r)}, #queue-req: {_n(r)}"
        ),
    ),
    "pd-decode": (
        "PD decode server",
        lambda r: (
            f"Decode batch, #running-req: {_n(r)}, #token: {_n(r)}, token usage: "
            f"{_f2(r)}, {_s5(r)}pre-allocated usage: {_f2(r)}, #prealloc-req: {_n(r)}, "
            f"#transfer-req: {_n(r)}, #retracted-req: {_n(r)}, cuda graph: True, gen throughput "
            f"(token/s): {_g2(r)}, #queue-req: {_n(r)}"
        ),
    ),
    "dspark": (
        "0.5.18+ cap len, DSpark's estimate with its range",
        lambda r: (
            f"Decode batch, #running-req: {_n(r)}, #token: {_n(r)}, token usage: "
            f"{_f2(r)}, {_s5(r)}cap len: {r.uniform(1, 4):.2f}, block accept len: "
            f"{r.uniform(1, 4):.2f}, est uncap acc len: {r.uniform(1, 6):.2f} "
            f"[{r.uniform(1, 3):.2f}, {r.uniform(3, 6):.2f}], cuda graph: True, gen throughput "
            f"(token/s): {_g2(r)}, #queue-req: {_n(r)}"
        ),
    ),
    "P1-mixed": (
        "0.3.0 Prefill batch(mixed …)",
        lambda r: (
            f"Prefill batch(mixed #running-req: {_n(r)}). #new-seq: {_n(r)}, #new-token: "
            f"{_n(r)}, #cached-token: {_n(r)}, cache hit rate: {_pct(r)}, #queue-req: {_n(r)}"
        ),
    ),
    "P2": (
        "0.3.6–0.4.3 Prefill, cache hit rate",
        lambda r: (
            f"Prefill batch. #new-seq: {_n(r)}, #new-token: {_n(r)}, #cached-token: "
            f"{_n(r)}, cache hit rate: {_pct(r)}, token usage: {_f2(r)}, #running-req: {_n(r)}, "
            f"#queue-req: {_n(r)}"
        ),
    ),
    "P11": (
        "0.5.12+ Prefill, pending and replay tokens, MFU",
        lambda r: (
            f"Prefill batch, #new-seq: {_n(r)}, #new-token: {_n(r)}, #cached-token: "
            f"{_n(r)}, token usage: {_f2(r)}, #running-req: {_n(r)}, #queue-req: {_n(r)}, "
            f"#pending-token: {_n(r)}, #replay-token: {_n(r)}, cuda graph: True, input "
            f"throughput (token/s): {_g2(r)}, est. prefill TFLOPS/s (per GPU): {_g2(r)}, fwd "
            f"occupancy: {_pct(r)}"
        ),
    ),
    "pd-prefill-047": (
        "0.4.7 PD prefill, `#transferring-req: N time: X ` glued",
        lambda r: (
            f"Prefill batch. #new-seq: {_n(r)}, #new-token: {_n(r)}, #cached-token: "
            f"{_n(r)}, token usage: {_f2(r)}, #unbootstrapped-req: {_n(r)}, #queue-req: {_n(r)}, "
            f"#transferring-req: {_n(r)} time: {_f2(r)} "
        ),
    ),
    "pd-prefill-048": (
        "0.4.8 PD prefill, `… input throughput (token/s): X ` glued",
        lambda r: (
            f"Prefill batch. #new-seq: {_n(r)}, #new-token: {_n(r)}, #cached-token: "
            f"{_n(r)}, token usage: {_f2(r)}, #unbootstrapped-req: {_n(r)}, #queue-req: {_n(r)}, "
            f"#transferring-req: {_n(r)} input throughput (token/s): {_g2(r)} "
        ),
    ),
    "pd-prefill-0.5.1": (
        "0.4.10–0.5.1 PD prefill",
        lambda r: (
            f"Prefill batch. #new-seq: {_n(r)}, #new-token: {_n(r)}, #cached-token: "
            f"{_n(r)}, token usage: {_f2(r)}, #unbootstrapped-req: {_n(r)}, #queue-req: {_n(r)}, "
            f"#transferring-req: {_n(r)}, input throughput (token/s): {_g2(r)}, "
        ),
    ),
}


def _sglang(template: Lines) -> Callable[[Path, int, random.Random], None]:
    def write(path: Path, size: int, rng: random.Random) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("[2025-06-20 10:00:00] server_args=ServerArgs(model_path='m', tp_size=2)\n")
            s = 0
            while fh.tell() < size:
                s += 1
                ts = f"2025-06-{20 + s // 86400 % 9:02d} {s // 3600 % 24:02d}:{s // 60 % 60:02d}:"
                for rank in range(2):
                    fh.write(f"[{ts}{s % 60:02d} TP{rank}] {template(rng)}\n")

    return write


def _p1(rng: random.Random) -> str:
    return f"{rng.uniform(0, 9999):.1f}"


def _engine(rng: random.Random, running: int | None = None) -> str:
    running = rng.randint(1, 99) if running is None else running
    return (
        f"Avg prompt throughput: {_p1(rng)} tokens/s, Avg generation throughput: {_p1(rng)} "
        f"tokens/s, Running: {running} reqs, Waiting: {rng.randint(0, 9)} reqs, GPU KV cache "
        f"usage: {rng.uniform(0, 100):.1f}%, Prefix cache hit rate: {rng.uniform(0, 100):.1f}%"
    )


def _spec_012(rng: random.Random) -> str:
    """0.10.2+'s spec line: the mean acceptance length is 1 + the per-position rates' sum
    (what the reader checks to tell whether it counts the bonus token)."""
    rates = sorted((rng.uniform(0.1, 0.9) for _ in range(3)), reverse=True)
    drafted = rng.randint(100, 199)
    return (
        f"SpecDecoding metrics: Mean acceptance length: {1 + sum(rates):.2f}, Accepted "
        f"throughput: {rng.uniform(0, 999):.2f} tokens/s, Drafted throughput: "
        f"{rng.uniform(0, 999):.2f} tokens/s, Accepted: {round(sum(rates) * drafted / 3)} "
        f"tokens, Drafted: {drafted} tokens, Per-position acceptance rate: "
        + ", ".join(f"{r:.3f}" for r in rates)
        + f", Avg Draft acceptance rate: {100 * sum(rates) / 3:.1f}%"
    )


_NAN_SPEC = (
    "SpecDecoding metrics: Mean acceptance length: nan, Accepted throughput: 0.00 tokens/s, "
    "Drafted throughput: 0.00 tokens/s, Accepted: 0 tokens, Drafted: 0 tokens, Per-position "
    "acceptance rate: nan, nan, nan, Avg Draft acceptance rate: nan%"
)


def _v0(rng: random.Random, state: list[int]) -> list[str]:
    """V0 0.6.3: the engine line, the cumulative spec line, the stage times line."""
    a = rng.randint(0, 300)
    state[0] += a
    state[1] += 300
    state[2] += a + 100
    return [
        f"Avg prompt throughput: {_p1(rng)} tokens/s, Avg generation throughput: {_p1(rng)} "
        f"tokens/s, Running: {rng.randint(1, 30)} reqs, Swapped: 0 reqs, Pending: "
        f"{rng.randint(0, 9)} reqs, GPU KV cache usage: {rng.uniform(0, 99):.1f}%, CPU KV "
        "cache usage: 0.0%.",
        f"Speculative metrics: Draft acceptance rate: {state[0] / state[1]:.3f}, System "
        f"efficiency: {rng.random():.3f}, Number of speculative tokens: 3, Number of accepted "
        f"tokens: {state[0]}, Number of draft tokens: {state[1]}, Number of emitted tokens: "
        f"{state[2]}.",
        f"SpecDecodeWorker stage times: average_time_per_proposal_tok_ms="
        f"{rng.uniform(0, 9):.2f} scoring_time_ms={rng.uniform(0, 60):.2f} "
        f"verification_time_ms={rng.uniform(0, 3):.2f}",
    ]


def _nan_idle(rng: random.Random) -> list[str]:
    """0.8.5's nan spec line after an idle engine line, busy intervals between."""
    if rng.random() < 0.5:  # (an idle interval: nothing running, nothing generated)
        return [
            "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0 "
            "tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix "
            "cache hit rate: 0.0%",
            _NAN_SPEC,
        ]
    return ["Engine 000: " + _engine(rng), _spec_012(rng)]


# vLLM: (what, the line prefix with {d} {t}, the lines of one interval)
VLLM: dict[str, tuple[str, str, Callable[[random.Random, list[int]], list[str]]]] = {
    "vllm-0.12": (
        "0.12 engine and spec lines (the family's plain case)",
        "(APIServer pid=1) INFO {d} {t} [loggers.py:236] ",
        lambda r, s: ["Engine 000: " + _engine(r), _spec_012(r)],
    ),
    "vllm-v0-0.6.3": (
        "V0 0.6.3: no bracket, cumulative spec counters, stage times",
        "INFO {d} {t} metrics.py:367] ",
        _v0,
    ),
    "vllm-0.7.3": (
        "V1 0.7.3: no `Engine 000:`",
        "INFO {d} {t} [loggers.py:80] ",
        lambda r, s: [_engine(r)],
    ),
    "vllm-0.8.5": (
        "0.8.5 behind ANSI cyan, per-position rates",
        "\x1b[36m(APIServer pid=2236552)\x1b[0m INFO {d} {t} [loggers.py:111] ",
        lambda r, s: [
            "Engine 000: " + _engine(r),
            f"SpecDecoding metrics: Draft acceptance rate: {r.uniform(0, 100):.1f}%, Mean "
            f"acceptance length: {r.uniform(1, 4):.2f}, Accepted: {r.randint(0, 99)} tokens, "
            f"Drafted: {r.randint(100, 199)} tokens, Per-position acceptance rate: "
            + ", ".join(f"{r.random():.3f}" for _ in range(3)),
        ],
    ),
    "vllm-0.33": (
        "0.33: Deferred, KV fetch",
        "(EngineCore_DP0 pid=77) INFO {d} {t} [v1/metrics/loggers.py:236] ",
        lambda r, s: [
            f"Engine 000: Avg prompt throughput: {_p1(r)} tokens/s, Avg generation throughput: "
            f"{_p1(r)} tokens/s, Running: {r.randint(1, 99)} reqs, Waiting: 0 reqs, Deferred: "
            f"{r.randint(0, 9)} reqs, KV fetch: {r.randint(0, 9)} waiting to start, "
            f"{r.randint(0, 9)} in progress, {r.randint(0, 9)} completed waiting, GPU KV cache "
            f"usage: {r.uniform(0, 100):.1f}%, Prefix cache hit rate: {r.uniform(0, 100):.1f}%"
        ],
    ),
    "vllm-aggregated": (
        "`4 Engines Aggregated:`",
        "(APIServer pid=1) INFO {d} {t} [loggers.py:236] ",
        lambda r, s: ["4 Engines Aggregated: " + _engine(r)],
    ),
    "vllm-nan-idle": (
        "0.8.5 `nan` spec lines of idle intervals, half the intervals",
        "(APIServer pid=1) INFO {d} {t} [loggers.py:111] ",
        lambda r, s: _nan_idle(r),
    ),
    "vllm-nan-busy": (
        "`nan` spec lines after busy engine lines (each fed: its notes)",
        "(APIServer pid=1) INFO {d} {t} [loggers.py:236] ",
        lambda r, s: ["Engine 000: " + _engine(r), _NAN_SPEC],
    ),
}


def _vllm(
    prefix: str, lines: Callable[[random.Random, list[int]], list[str]]
) -> Callable[[Path, int, random.Random], None]:
    def write(path: Path, size: int, rng: random.Random) -> None:
        state = [0, 0, 0]
        with open(path, "w", encoding="utf-8") as fh:
            s = 0
            while fh.tell() < size:
                s += 1
                d = f"{5 + s // 86400 % 6:02d}-{s // 3600 % 24 + 1:02d}"
                t = f"{s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}"
                head = prefix.format(d=d, t=t)
                for line in lines(rng, state):
                    fh.write(head + line + "\n")

    return write


def _aiperf_records(path: Path, size: int, rng: random.Random) -> None:
    """A run's folder as AIPerf leaves it: `profile_export.jsonl`, one record a request
    (`MetricRecordInfo`), beside the run's statistics (a fixture's)."""
    path.mkdir()
    summary_ = HERE.parent / "fixtures" / "formats" / "aiperf" / "v0.1-profile_export_aiperf.json"
    (path / "profile_export_aiperf.json").write_bytes(summary_.read_bytes())
    with open(path / "profile_export.jsonl", "w", encoding="utf-8") as fh:
        i = 0
        while fh.tell() < size:
            i += 1
            start = 1765000000000000000 + i * 10_000_000
            metrics = {
                "input_sequence_length": {"value": 2048, "unit": "tokens"},
                "time_to_first_token": {"value": rng.uniform(50, 400), "unit": "ms"},
                "request_latency": {"value": rng.uniform(1000, 5000), "unit": "ms"},
                "inter_token_latency": {"value": rng.uniform(5, 30), "unit": "ms"},
                "output_sequence_length": {"value": 256, "unit": "tokens"},
                "inter_chunk_latency": {
                    "value": [rng.uniform(5, 30) for _ in range(40)],
                    "unit": "ms",
                },
            }
            meta = {
                "session_num": i,
                "x_request_id": f"{rng.getrandbits(128):032x}",
                "request_start_ns": start,
                "request_end_ns": start + 2_000_000_000,
                "worker_id": f"worker_{i % 8}",
                "benchmark_phase": "profiling",
                "was_cancelled": False,
            }
            fh.write(json.dumps({"metadata": meta, "metrics": metrics, "error": None}) + "\n")


def _guidellm(path: Path, size: int, rng: random.Random) -> None:
    """guidellm's `benchmarks.json` with every request (its prompt and output) kept."""
    fixture = HERE.parent / "fixtures" / "formats" / "guidellm" / "v0.8-benchmarks.json"
    doc = json.loads(fixture.read_text())
    per = max(1, size // (len(doc["benchmarks"]) * 2900))
    words = ["the", "speculative", "decoding", "verify", "draft", "token", "GPU"]
    for b in doc["benchmarks"]:
        reqs = []
        for i in range(per):
            t0 = 1.76e9 + i
            reqs.append(
                {
                    "type_": "generative_text_response",
                    "request_id": f"{rng.getrandbits(64):016x}",
                    "scheduler_info": {"worker": {"id": i % 8}, "request_start": t0},
                    "prompt": " ".join(rng.choice(words) for _ in range(150)),
                    "output": " ".join(rng.choice(words) for _ in range(120)),
                    "prompt_tokens": 150,
                    "output_tokens": 120,
                    "start_time": t0,
                    "end_time": t0 + 2.5,
                    "first_token_time": t0 + 0.2,
                    "request_latency": 2.5,
                    "time_to_first_token_ms": 200.0,
                }
            )
        b["requests"] = {"successful": reqs, "incomplete": [], "errored": []}
    path.write_text(json.dumps(doc, indent=2))


def cases() -> dict[str, tuple[str, str, Callable[[Path, int, random.Random], None]]]:
    """Every case: its family (the plain case its ratio is to), what it is, its writer."""
    out: dict[str, tuple[str, str, Callable[[Path, int, random.Random], None]]] = {}
    for name, (what, template) in SGLANG.items():
        out[f"sglang-{name}"] = ("sglang-D10", what, _sglang(template))
    for name, (what, prefix, lines) in VLLM.items():
        out[name] = ("vllm-0.12", what, _vllm(prefix, lines))
    out["aiperf-records"] = ("", "AIPerf `profile_export.jsonl`", _aiperf_records)
    out["guidellm-requests"] = ("", "guidellm `benchmarks.json` with its requests", _guidellm)
    return out


def written(name: str, size: int, work: Path) -> Path:
    """The case's file, written once."""
    ext = {"aiperf-records": "", "guidellm-requests": ".json"}.get(name, ".log")
    out = work / f"{name}-{size}{ext}"
    if not out.exists():
        tmp = work / f"{out.name}.tmp"
        cases()[name][2](tmp, size, random.Random(7))
        tmp.rename(out)
    return out


def _families(names: list[str]) -> Iterator[str]:
    """The names in the order timed: each family's plain case first."""
    table = cases()
    firsts = [table[n][0] for n in names if table[n][0]]
    seen: set[str] = set()
    for name in [*dict.fromkeys(firsts), *names]:
        if name and name not in seen:
            seen.add(name)
            yield name


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="", help="comma-separated (default: all)")
    ap.add_argument("--size", default="32M", help="bytes of each case's file")
    ap.add_argument("--repeat", type=int, default=1, help="runs per command (median)")
    ap.add_argument("--against", default="", help="another working tree to time alongside")
    ap.add_argument("--workdir", default="/tmp/sessionlens-bench/versions")
    args = ap.parse_args(argv)
    size = gen.parse_size(args.size)
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    table = cases()
    names = [c for c in args.cases.split(",") if c] or list(table)
    trees = [("this tree", sessionlens_env())]
    if args.against:
        trees.append((Path(args.against).name, sessionlens_env(Path(args.against).resolve())))
    print(f"\n### `parse --format parquet` on other versions' lines, {args.size} each\n")
    print("| case | what | MB |" + "".join(f" {t}: s/GB | × plain | rows |" for t, _ in trees))
    print("|---|---|---:|" + "---:|---:|---:|" * len(trees))
    plain: dict[tuple[str, str], float] = {}
    for name in _families(names):
        family, what, _ = table[name]
        path = written(name, size, work)
        files = sorted(path.iterdir()) if path.is_dir() else [path]
        for f in files:
            warm(f)
        mb = sum(f.stat().st_size for f in files) / (1 << 20)
        gb = mb / 1024
        seconds, counts, failed = timed_parse(path, trees, args.repeat, work / "samples.parquet")
        row = f"| {name} | {what} | {mb:.0f} |"
        for tree, _ in trees:
            if tree in failed:
                row += f" {failed[tree]} | | |"
                continue
            per_gb = seconds[tree] / gb
            if name == family or not family:
                plain[(tree, name)] = per_gb
            base = plain.get((tree, family))
            ratio = f"{per_gb / base:.1f}" if base else ""
            row += f" {per_gb:.1f} | {ratio} | {counts[tree]} |"
        print(row)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
