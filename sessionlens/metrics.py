"""Canonical metric names: unit, which direction is better, how DP groups combine.

Owns the registry of DESIGN §3 names (extend, never rename), the log-label aliases that
parsers map onto them, and `format_value`, the one number formatter shared by the report
and the verdict's reason sentence. It holds no values.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

Better = Literal["higher", "lower"] | None
Combine = Literal["sum", "mean"]


@dataclass(frozen=True, slots=True)
class Metric:
    """What a metric name means: its unit, its better direction and its DP-group rule."""

    name: str
    unit: str
    better: Better
    combine: Combine
    description: str = ""


_REGISTRY: dict[str, Metric] = {}


def _add(name: str, unit: str, better: Better, combine: Combine, description: str = "") -> None:
    _REGISTRY[name] = Metric(name, unit, better, combine, description)


# --- client runs (bench-stdout) ---
_add("throughput_tok_s", "tok/s", "higher", "mean", "output tokens per second of one client run")
_add("output_tokens", "tokens", None, "sum", "output tokens of one client run")
_add("prompt_tokens", "tokens", None, "sum", "prompt tokens of one client run")
_add("duration_s", "s", "lower", "mean", "wall time of one client run")

# --- SGLang Decode intervals ---
_add("accept_len", "tokens/cycle", "higher", "mean", "mean acceptance length per cycle")
_add("accept_rate", "fraction", "higher", "mean", "draft acceptance rate")
_add("gen_throughput_tok_s", "tok/s", "higher", "sum", "generation throughput of the interval")
_add("running_req", "req", None, "sum", "running requests")
_add("queue_req", "req", "lower", "sum", "queued requests")
_add("token_usage", "fraction", None, "mean", "KV-cache token usage")
_add("num_token", "tokens", None, "sum", "tokens held in the KV cache")

# --- SGLang Prefill lines ---
_add("prefill_new_seq", "req", None, "sum", "new sequences in a prefill batch")
_add("prefill_new_tokens", "tokens", None, "sum", "new tokens in a prefill batch")
_add("prefill_cached_tokens", "tokens", None, "sum", "cached tokens in a prefill batch")
_add("prefill_cache_hit_rate", "fraction", "higher", "mean", "prefix-cache hit rate")
_add("prefill_token_usage", "fraction", None, "mean", "KV-cache token usage at prefill")
_add("prefill_running_req", "req", None, "sum", "running requests at prefill")
_add("prefill_queue_req", "req", "lower", "sum", "queued requests at prefill")
_add("prefill_input_throughput_tok_s", "tok/s", "higher", "sum", "prefill input throughput")

# --- vLLM engine intervals ---
_add("prompt_throughput_tok_s", "tok/s", "higher", "sum", "prompt throughput of the interval")
_add("waiting_req", "req", "lower", "sum", "waiting requests")
_add("swapped_req", "req", "lower", "sum", "swapped requests")
_add("kv_cache_usage", "fraction", None, "mean", "GPU KV-cache usage")
_add("prefix_cache_hit_rate", "fraction", "higher", "mean", "prefix-cache hit rate")

# --- vLLM spec-decoding lines ---
_add("draft_acceptance_rate", "fraction", "higher", "mean", "draft-token acceptance rate")
_add("accepted_tokens", "tokens", "higher", "sum", "accepted draft tokens")
_add("drafted_tokens", "tokens", None, "sum", "drafted tokens")

# --- phase timings (per block) ---
_add("verify_ms_per_cycle", "ms", "lower", "mean", "verify time per speculative cycle")
_add("verify_share", "fraction", None, "mean", "share of the cycle spent in verify")
_add("draft_ms_per_cycle", "ms", "lower", "mean", "draft time per speculative cycle")
_add("cycle_ms", "ms", "lower", "mean", "time of one draft+verify cycle")

# --- vLLM V0 SpecDecodeWorker stage times ---
_add("draft_ms_per_token", "ms", "lower", "mean", "draft time per proposed token")
_add("target_forward_ms", "ms", "lower", "mean", "target-model scoring forward time")
_add("rejection_sampling_ms", "ms", "lower", "mean", "rejection-sampling time")

# --- serving blocks ---
_add("request_throughput_req_s", "req/s", "higher", "sum", "completed requests per second")
_add("input_throughput_tok_s", "tok/s", "higher", "sum", "input tokens per second")
_add("output_throughput_tok_s", "tok/s", "higher", "sum", "output tokens per second")
_add(
    "capacity_req_s",
    "req/s",
    "higher",
    "sum",
    "requests per second a swept config serves within the SLO (interpolated)",
)
_add(
    "capacity_output_tok_s",
    "tok/s",
    "higher",
    "sum",
    "output tokens per second a swept config serves within the SLO (interpolated)",
)
_add("total_throughput_tok_s", "tok/s", "higher", "sum", "input + output tokens per second")
_add("peak_output_throughput_tok_s", "tok/s", "higher", "sum", "peak output tokens per second")
_add("concurrency", "req", None, "sum", "mean concurrent requests")
# SGLang 0.5.23 `steady_state_serving`: the same figures over the window where at least a
# ratio of the concurrency limit was running (a `Steady-State Result` block or record).
_add("steady_input_throughput_tok_s", "tok/s", "higher", "sum", "steady-state input tokens/s")
_add("steady_output_throughput_tok_s", "tok/s", "higher", "sum", "steady-state output tokens/s")
_add(
    "steady_output_throughput_retokenized_tok_s",
    "tok/s",
    "higher",
    "sum",
    "steady-state output tokens/s, retokenized",
)
_add(
    "steady_peak_output_throughput_tok_s",
    "tok/s",
    "higher",
    "sum",
    "steady-state peak output tokens/s",
)
_add("steady_concurrency", "req", None, "sum", "mean concurrent requests in the steady window")
_add("peak_concurrent_requests", "req", None, "sum", "peak concurrent requests")
_add("goodput_req_s", "req/s", "higher", "sum", "requests meeting the SLOs per second")
_add("successful_requests", "req", "higher", "sum", "successful requests")
_add("benchmark_duration_s", "s", "lower", "mean", "benchmark wall time")
_add("accept_length", "tokens/cycle", "higher", "mean", "cumulative acceptance length of the block")
for _lat in ("ttft", "tpot", "itl", "e2e_latency"):
    for _stat in ("mean", "median", "std", "p90", "p95", "p99", "p999", "max"):
        _add(f"{_lat}_ms_{_stat}", "ms", "lower", "mean", f"{_lat} ({_stat})")

# --- one-batch and offline benchmarks ---
_add("prefill_latency_s", "s", "lower", "mean", "prefill latency")
_add("prefill_throughput_tok_s", "tok/s", "higher", "sum", "prefill throughput")
_add("decode_median_latency_s", "s", "lower", "mean", "median decode-step latency")
_add("decode_median_throughput_tok_s", "tok/s", "higher", "sum", "median decode throughput")
_add("total_latency_s", "s", "lower", "mean", "total latency")
_add("last_gen_throughput_tok_s", "tok/s", "higher", "sum", "last generation throughput")
# `vllm bench latency`: the latency of one batch over its timed iterations (vllm-bench-result)
_add("total_latency_s_mean", "s", "lower", "mean", "mean latency of one batch over iterations")
for _p in ("p10", "p25", "p50", "p75", "p90", "p99"):
    _add(f"total_latency_s_{_p}", "s", "lower", "mean", f"latency of one batch ({_p})")

# --- sglang-server extras (added by the SGLang server parser) ---
_add("cuda_graph", "fraction", None, "mean", "decode intervals run with CUDA (or CPU/NPU) graphs")
_add("largest_len", "tokens", None, "mean", "longest sequence in the decode batch (0.4.4)")
_add("spec_cap_len", "tokens/cycle", None, "mean", "speculative cap length (0.5.18+)")
_add("block_accept_len", "tokens/cycle", "higher", "mean", "DSpark block acceptance length")
_add("full_token_usage", "fraction", None, "mean", "full-attention KV pool usage (hybrid)")
_add("swa_token_usage", "fraction", None, "mean", "sliding-window KV pool usage (hybrid)")
_add("mamba_usage", "fraction", None, "mean", "Mamba state pool usage (hybrid)")
_add("num_swa_token", "tokens", None, "sum", "tokens held in the sliding-window pool")
_add("mamba_num", "slots", None, "sum", "Mamba state slots in use")
_add("prealloc_usage", "fraction", None, "mean", "pre-allocated KV usage (PD decode)")
_add("prealloc_req", "req", None, "sum", "pre-allocated requests (PD decode)")
_add("transfer_req", "req", None, "sum", "requests receiving KV (PD decode)")
_add("retracted_req", "req", "lower", "sum", "retracted requests (PD decode)")
_add("decode_tflops_per_gpu", "TFLOPS/s", "higher", "mean", "estimated decode TFLOPS per GPU")
_add("read_bw_gb_s", "GB/s", None, "mean", "estimated read bandwidth per GPU")
_add("write_bw_gb_s", "GB/s", None, "mean", "estimated write bandwidth per GPU")
_add("fwd_occupancy", "fraction", "higher", "mean", "share of wall time in forward passes")
_add("fwd_idle_occupancy", "fraction", None, "mean", "share of wall time in forward or idle")
_add("prefill_num_token", "tokens", None, "sum", "tokens held in the KV cache at prefill")
_add("prefill_pending_tokens", "tokens", None, "sum", "tokens waiting for prefill")
_add("prefill_cuda_graph", "fraction", None, "mean", "prefill batches run with graphs")
_add("prefill_tflops_per_gpu", "TFLOPS/s", "higher", "mean", "estimated prefill TFLOPS per GPU")
_add("prefill_fwd_occupancy", "fraction", "higher", "mean", "forward occupancy at prefill")
_add("prefill_prealloc_req", "req", None, "sum", "pre-allocated requests (PD prefill)")
_add("prefill_inflight_req", "req", None, "sum", "in-flight KV transfers (PD prefill)")
_add("prefill_bootstrap_req", "req", None, "sum", "requests waiting for bootstrap (PD prefill)")
_add("prefill_transfer_req", "req", None, "sum", "requests transferring KV (PD prefill)")
_add("cuda_graph_capture_s", "s", "lower", "mean", "target CUDA-graph capture time at start-up")
_add("cuda_graph_capture_mem_gb", "GB", "lower", "mean", "memory taken by the CUDA graphs")

# --- serving benchmark extras (sglang-bench-serving, vllm-bench-serve, sglang-bench-offline) ---
_add("failed_requests", "req", "lower", "sum", "failed requests of a serving benchmark")
_add("num_drafts", "drafts", None, "sum", "draft proposals during the benchmark (vLLM block)")
_add("slo_attainment", "fraction", "higher", "mean", "share of requests meeting every SLO")
_add("cache_hit_rate", "fraction", "higher", "mean", "prompt-cache hit rate over the benchmark")
_add("rtfx", "x", "higher", "mean", "inverse real-time factor (audio benchmarks)")
for _lat in ("ttft", "tpot", "itl", "e2e_latency"):
    _add(f"{_lat}_slo_attainment", "fraction", "higher", "mean", f"{_lat} SLO attainment")
    # percentiles vLLM's --metric-percentiles can ask for beyond DESIGN §3's set
    for _stat in ("min", "p25", "p50", "p75", "p9999"):
        _add(f"{_lat}_ms_{_stat}", "ms", "lower", "mean", f"{_lat} ({_stat})")

# --- vllm-server and sglang-bench-one-batch extras ---
_add("cpu_kv_cache_usage", "fraction", None, "mean", "CPU (swap) KV-cache usage, vLLM V0")
_add("cpu_prefix_cache_hit_rate", "fraction", "higher", "mean", "CPU prefix-cache hit rate, V0")
_add(
    "external_prefix_cache_hit_rate",
    "fraction",
    "higher",
    "mean",
    "external (connector) prefix-cache hit rate",
)
_add("mm_cache_hit_rate", "fraction", "higher", "mean", "multi-modal cache hit rate")
_add("preemptions", "req", "lower", "sum", "requests preempted in the interval")
_add("corrupted_req", "req", "lower", "sum", "corrupted requests")
_add("deferred_req", "req", None, "sum", "deferred requests")
_add("kv_fetch_waiting_req", "req", None, "sum", "KV fetches waiting to start")
_add("kv_fetch_in_progress_req", "req", None, "sum", "KV fetches in progress")
_add("kv_fetch_completed_waiting_req", "req", None, "sum", "completed KV fetches waiting")
_add("emitted_tokens", "tokens", "higher", "sum", "tokens emitted by speculative decoding")
_add(
    "system_efficiency",
    "fraction",
    "higher",
    "mean",
    "emitted / maximum possible tokens (vLLM V0, cumulative)",
)
_add("accepted_throughput_tok_s", "tok/s", "higher", "sum", "accepted draft tokens per second")
_add("drafted_throughput_tok_s", "tok/s", None, "sum", "drafted tokens per second")
_add("ttft_s", "s", "lower", "mean", "time to first token of the batch")
_add("last_ttft_s", "s", "lower", "mean", "time to first token of the batch's last request")
_add("itl_ms", "ms", "lower", "mean", "per-token latency from the output throughput")
_add("total_output_tokens", "tokens", None, "sum", "output tokens of the case")
_add("early_stopped_requests", "req", None, "sum", "requests that stopped before output_len")
_add(
    "steady_state_output_throughput_tok_s",
    "tok/s",
    "higher",
    "sum",
    "output throughput once every request is decoding",
)
_add("steady_state_itl_ms", "ms", "lower", "mean", "per-token latency once every request decodes")

# --- the 2023 benchmark_serving.py (vllm-bench-serve): latency over a request's tokens ---
_add(
    "latency_per_token_ms_mean", "ms", "lower", "mean", "request latency / (prompt + output tokens)"
)
_add("latency_per_output_token_ms_mean", "ms", "lower", "mean", "request latency / output tokens")

# --- prometheus: per-interval deltas of a server's cumulative counters ---
_add("interval_prompt_tokens", "tokens", None, "sum", "prompt tokens processed in the interval")
_add("interval_generation_tokens", "tokens", "higher", "sum", "tokens generated in the interval")
_add("finished_requests", "req", None, "sum", "requests finished in the interval")
# --- client exports (aiperf, guidellm, trtllm-bench) ---
_add(
    "output_throughput_per_user_tok_s",
    "tok/s",
    "higher",
    "mean",
    "output tokens per second of one request once it streams (1/ITL), averaged over requests",
)
_add(
    "output_throughput_per_gpu_tok_s",
    "tok/s",
    "higher",
    "mean",
    "output tokens per second per GPU (trtllm-bench)",
)


# Dynamic families: phase_<slug>_ms_per_cycle, phase_<slug>_share, position_acceptance_rate_<i>.
_PATTERNS: list[tuple[re.Pattern[str], str, Better, Combine]] = [
    (re.compile(r"phase_[a-z0-9_]+_ms_per_cycle"), "ms", "lower", "mean"),
    (re.compile(r"phase_[a-z0-9_]+_share"), "fraction", None, "mean"),
    (re.compile(r"position_acceptance_rate_\d+"), "fraction", "higher", "mean"),
    # custom percentiles (`--metric-percentiles 80,99.5` prints P80, P99.5 rows)
    (re.compile(r"(ttft|tpot|itl|e2e_latency)_ms_p\d+"), "ms", "lower", "mean"),
    # `vllm bench latency --output-json`: its `percentiles` object may hold any whole percentile
    (re.compile(r"total_latency_s_p\d{1,2}"), "s", "lower", "mean"),
    # per-request distributions of speculative decoding (AIPerf, trtllm-bench): each request's
    # own acceptance length (bonus token counted) or draft acceptance rate, summarised over
    # requests; `accept_length` / `draft_acceptance_rate` are the run's pooled values
    (
        re.compile(r"request_accept_length_(?:mean|median|std|min|max|p\d+)"),
        "tokens/cycle",
        "higher",
        "mean",
    ),
    (
        re.compile(r"request_draft_acceptance_rate_(?:mean|median|std|min|max|p\d+)"),
        "fraction",
        "higher",
        "mean",
    ),
]

# Fallback by suffix, for names a third-party parser adds without registering them.
_SUFFIXES: list[tuple[str, str, Better, Combine]] = [
    ("_tok_s", "tok/s", "higher", "sum"),
    ("_req_s", "req/s", "higher", "sum"),
    ("_ms", "ms", "lower", "mean"),
    ("_s", "s", "lower", "mean"),
    ("_rate", "fraction", None, "mean"),
    ("_share", "fraction", None, "mean"),
    ("_usage", "fraction", None, "mean"),
    ("_tokens", "tokens", None, "sum"),
    ("_req", "req", None, "sum"),
]


def register(metric: Metric) -> None:
    """Add a metric name (for third-party parsers); an existing name is never redefined."""
    if metric.name in _REGISTRY and _REGISTRY[metric.name] != metric:
        raise ValueError(f"metric {metric.name!r} is already registered differently")
    _REGISTRY[metric.name] = metric


def get(name: str) -> Metric:
    """The metric of a name: registered, a dynamic family, or guessed from its suffix."""
    found = _REGISTRY.get(name)
    if found is not None:
        return found
    for pattern, unit, better, combine in _PATTERNS:
        if pattern.fullmatch(name):
            return Metric(name, unit, better, combine)
    for suffix, unit, better, combine in _SUFFIXES:
        if name.endswith(suffix):
            return Metric(name, unit, better, combine)
    return Metric(name, "", None, "mean")


def is_known(name: str) -> bool:
    """Whether a name is registered or belongs to a dynamic family."""
    return name in _REGISTRY or any(p.fullmatch(name) for p, *_ in _PATTERNS)


def names() -> list[str]:
    """Every registered metric name, in registry order."""
    return list(_REGISTRY)


def slug(text: str) -> str:
    """snake_case of a label: `Target verify` -> `target_verify`."""
    out = re.sub(r"[^0-9a-zA-Z]+", "_", text.strip()).strip("_").lower()
    return out or "unnamed"


# ---------------------------------------------------------------- number formatting


def _decimals_for(unit: str, value: float) -> int:
    mag = abs(value)
    if unit in ("tok/s", "req/s"):
        return 1 if mag < 10000 else 0
    if unit == "ms":
        return 2 if mag < 100 else 1
    if unit == "s":
        return 2 if mag < 1000 else 1
    if unit in ("tokens", "req", "drafts", "count"):
        return 0 if float(value).is_integer() else 2
    if unit == "tokens/cycle":
        return 2
    if mag == 0 or mag >= 100:
        return 1
    if mag >= 1:
        return 2
    return 3


def format_number(value: float | None, decimals: int) -> str:
    """A number with fixed decimals; `—` for a missing value, `nan`/`inf` as such."""
    if value is None:
        return "—"
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = (
        f"{value:,.{decimals}f}".replace(",", " ")
        if abs(value) >= 10000
        else (f"{value:.{decimals}f}")
    )
    if text.startswith("-") and float(text.replace(" ", "")) == 0:
        text = text[1:]
    return text


def format_percent(fraction: float | None, decimals: int = 1, signed: bool = False) -> str:
    """A fraction as a percentage: 0.774 -> `77.4 %`; signed gives `+20.0 %`."""
    if fraction is None:
        return "—"
    text = format_number(fraction * 100, decimals)
    if signed and not text.startswith("-") and text not in ("nan", "inf"):
        text = "+" + text
    return f"{text} %"


def format_value(metric: str, value: float | None, unit: bool = True) -> str:
    """A metric value rounded for reading, with its unit: `60.4 tok/s`, `77.4 %`, `29.47 ms`."""
    m = get(metric)
    if value is None:
        return "—"
    if m.unit == "fraction":
        return format_percent(value)
    text = format_number(value, _decimals_for(m.unit, value))
    if unit and m.unit and text not in ("nan", "inf", "-inf"):
        return f"{text} {m.unit}"
    return text
