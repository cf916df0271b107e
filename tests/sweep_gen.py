"""A generator of realistic `sglang.bench_serving` sweep output (our own numbers).

A sweep is one client run per concurrency, each printing its `Namespace(...)` and its
`Serving Benchmark Result` block, as `for c in 4 8 16 32; do python -m sglang.bench_serving
--max-concurrency $c ...; done | tee bench.log` leaves it. Throughput saturates with
concurrency (T = Tmax·c/(c + K)); per-token latency grows with it (TPOT = t0·(1 + c/K)).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_NAMESPACE = (
    "Namespace(backend='sglang-oai', base_url=None, host='localhost', port=30000, "
    "dataset_name='random', dataset_path='', model='meta-llama/Llama-3.1-8B-Instruct', "
    "served_model_name=None, tokenizer=None, num_prompts={prompts}, sharegpt_output_len=None, "
    "random_input_len={isl}, random_output_len={osl}, random_range_ratio=1.0, request_rate=inf, "
    "max_concurrency={c}, output_file=None, output_details=False, disable_tqdm=False, "
    "disable_stream=False, return_logprob=False, seed={seed}, disable_ignore_eos=False, "
    "extra_request_body=None, apply_chat_template=False, profile=False, lora_name=None, "
    "prompt_suffix='', pd_separated=False, flush_cache=False, warmup_requests=1, "
    "tokenize_prompt=False, plot_throughput=False, tag=None, header=None)"
)


@dataclass(frozen=True)
class Curve:
    """How a config serves: its saturated output throughput, the concurrency at half of it,
    and its per-token latency at low load."""

    tmax: float = 2400.0  # output tok/s at saturation
    half: float = 12.0  # concurrency at half the saturated throughput
    tpot0: float = 6.0  # ms per output token at low load


def _row(label: str, value: str) -> str:
    return f"{label + ':':<41}{value:<10}"


def block(c: int, rng: np.random.Generator, curve: Curve, scale: float, noise: float) -> str:
    """One client run at concurrency c: its arguments and its result block."""
    isl, osl, prompts = 1024, 256, 10 * c
    jitter = 1 + noise * rng.normal()
    out_tput = curve.tmax * c / (c + curve.half) * scale * jitter
    req = out_tput / osl
    duration = prompts / req
    tpot = curve.tpot0 * (1 + c / curve.half) / scale * (1 + noise * rng.normal())
    ttft = 40.0 * (1 + c / 8) / scale * (1 + 2 * noise * rng.normal())
    itl = tpot * 1.02
    e2e = ttft + tpot * (osl - 1)
    lines = [
        f">>> --max-concurrency {c}",
        "benchmark_args=" + _NAMESPACE.format(prompts=prompts, isl=isl, osl=osl, c=c, seed=1),
        "",
        f"#Input tokens: {prompts * isl}",
        f"#Output tokens: {prompts * osl}",
        "Starting warmup with 1 sequences...",
        "Warmup completed with 1 sequences. Starting main benchmark run...",
        f"100%|██████████| {prompts}/{prompts} [00:{int(duration) % 60:02d}<00:00, {req:.2f}it/s]",
        "",
        "============ Serving Benchmark Result ============",
        _row("Backend", "sglang-oai"),
        _row("Traffic request rate", "inf"),
        _row("Max request concurrency", str(c)),
        _row("Successful requests", str(prompts)),
        _row("Benchmark duration (s)", f"{duration:.2f}"),
        _row("Total input tokens", str(prompts * isl)),
        _row("Total generated tokens", str(prompts * osl)),
        _row("Request throughput (req/s)", f"{req:.2f}"),
        _row("Input token throughput (tok/s)", f"{req * isl:.2f}"),
        _row("Output token throughput (tok/s)", f"{out_tput:.2f}"),
        _row("Total token throughput (tok/s)", f"{req * (isl + osl):.2f}"),
        _row("Concurrency", f"{c * 0.97:.2f}"),
        "----------------End-to-End Latency----------------",
        _row("Mean E2E Latency (ms)", f"{e2e:.2f}"),
        _row("Median E2E Latency (ms)", f"{e2e * 0.98:.2f}"),
        "---------------Time to First Token----------------",
        _row("Mean TTFT (ms)", f"{ttft:.2f}"),
        _row("Median TTFT (ms)", f"{ttft * 0.9:.2f}"),
        _row("P99 TTFT (ms)", f"{ttft * 3.1:.2f}"),
        "-----Time per Output Token (excl. 1st token)------",
        _row("Mean TPOT (ms)", f"{tpot:.2f}"),
        _row("Median TPOT (ms)", f"{tpot * 0.99:.2f}"),
        _row("P99 TPOT (ms)", f"{tpot * 1.4:.2f}"),
        "---------------Inter-Token Latency----------------",
        _row("Mean ITL (ms)", f"{itl:.2f}"),
        _row("Median ITL (ms)", f"{itl * 0.95:.2f}"),
        _row("P99 ITL (ms)", f"{itl * 2.5:.2f}"),
        "==================================================",
        "",
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def sweep(
    concurrencies: Sequence[int],
    rng: np.random.Generator,
    curve: Curve = Curve(),
    scale: float = 1.0,
    noise: float = 0.01,
) -> str:
    """A bench.log of one launch: a client run per concurrency."""
    return "".join(block(c, rng, curve, scale, noise) for c in concurrencies)


def session(
    root: Path,
    configs: dict[str, tuple[float, Sequence[int]]],
    launches: int,
    seed: int = 1,
    launch_noise: float = 0.02,
    noise: float = 0.01,
    manifest: str = "",
) -> Path:
    """A session folder: each config `name: (scale, concurrencies)` launched `launches`
    times (`name/launch-k/bench.log`), each launch's level off by `launch_noise` (a CV)."""
    rng = np.random.default_rng(seed)
    for name, (scale, concurrencies) in configs.items():
        for k in range(1, launches + 1):
            folder = root / name / f"launch-{k}"
            folder.mkdir(parents=True, exist_ok=True)
            level = scale * math.exp(launch_noise * rng.normal())
            (folder / "bench.log").write_text(sweep(concurrencies, rng, scale=level, noise=noise))
    if manifest:
        (root / "sessionlens.toml").write_text(manifest)
    return root
