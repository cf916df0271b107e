# ruff: noqa: E501  (log lines are written whole, as servers print them)
"""Generate server logs of every shape sessionlens reads (for the benchmarks; never for tests).

`gen_sglang_log.py` writes one shape, a busy 8-GPU EAGLE-3 SGLang server. Real logs come in
others, and a reader tuned to one falls off a cliff on the rest (issue 22). Each shape here is
what a long-running server of that version writes: a launch, then its steady part with the
timestamps advancing, and at `--restart-at` a restart with the next version's layout (a new
field, another order, another prefix). Values vary line by line; every shape is
deterministic for a seed.

| shape | what |
|---|---|
| `sglang-tp8` | `gen_sglang_log.py`: EAGLE-3 TP8, every rank prints (throughputs differ per rank) |
| `sglang-tp1` | the same, only rank 0 prints: every batch line is a sample |
| `sglang-jitter` | TP8, every rank prints with its own millisecond timestamp and values, ranks a second late now and then, a few byte-identical copies (0.5.10 -> 0.5.23) |
| `sglang-phase` | 0.5.3 EAGLE-3 TP8: rank 0's Decode lines and a profiler's phase-timing block on every rank after every interval, sometimes interleaved (-> 0.5.5) |
| `sglang-swa` | 0.4.9 SWA hybrid: `#token: full=N, swa=M, token usage: full=X, swa=Y` in Decode and Prefill lines (-> 0.5.23 `#full token: N, full token usage: X, #swa token: ...`) |
| `sglang-dp` | 0.5.4 DP attention TP4: `Decode batch [N]`, every TP rank its own DP group (-> 0.5.6 `DPn TPn` tags behind a docker-compose prefix) |
| `sglang-040` | 0.4.0 TP1: short lines, `cache hit rate: N%` in Prefill lines (-> 0.4.4) |
| `vllm-v1` | vLLM 0.12 V1, DP2: engine and SpecDecoding lines every second, access lines (-> 0.13 with `Preemptions` and a field moved) |
| `vllm-mfu` | vLLM 0.33, DP2: engine, SpecDecoding, MFU and iteration-detail lines (-> a docker prefix and `/GPU` units) |
| `vllm-v0` | vLLM 0.6.3 V0 with an MLP speculator and prefix caching, TP4: every 5 s an engine line, `Prefix cache hit rate: GPU: .., CPU: ..`, cumulative `Speculative metrics` and `SpecDecodeWorker stage times`, access lines, idle stretches (-> 0.6.4: counters from zero, 5 speculative tokens) |
| `prometheus` | vLLM 0.11 `/metrics` of two DP engines scraped every 5 s into one file (`# scrape <time>` lines; gauges, counters, per-position and per-reason counters, three histograms) (-> a restart: counters from zero, three engines) |

    python3 benchmarks/gen_shapes.py --shape sglang-phase --size 256M --out /tmp/phase.log
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import gen_sglang_log as base

GENERATOR_VERSION = 1  # bump when any shape's output changes (cached files are keyed on it)


class Out:
    """Buffered text output that knows its size, with a clock that advances."""

    def __init__(self, fh: object, seed: int, start: datetime) -> None:
        self.fh = fh
        self.buf: list[str] = []
        self.size = 0
        self.lines = 0
        self.rng = random.Random(seed)
        self.t = start

    def tick(self, lo_ms: int, hi_ms: int) -> None:
        self.t += timedelta(milliseconds=self.rng.randint(lo_ms, hi_ms))

    def sg(self, late: float = 0.0, ms: bool = False) -> str:
        """SGLang's `2025-11-14 09:00:00(.123)`."""
        t = self.t + timedelta(seconds=late)
        s = t.strftime("%Y-%m-%d %H:%M:%S")
        return s + f".{t.microsecond // 1000:03d}" if ms else s

    def vl(self) -> str:
        """vLLM's `11-03 16:40:10`."""
        return self.t.strftime("%m-%d %H:%M:%S")

    def line(self, text: str) -> None:
        self.buf.append(text)
        self.size += len(text.encode()) + 1
        self.lines += 1
        if len(self.buf) >= 4096:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.fh.write("\n".join(self.buf) + "\n")  # type: ignore[attr-defined]
            self.buf.clear()


def _access(o: Out, prefix: str, n: int) -> None:
    for _ in range(n):
        port = o.rng.randint(32768, 60999)
        path = o.rng.choice(("/v1/chat/completions", "/v1/completions", "/generate"))
        o.line(f'{prefix}INFO:     127.0.0.1:{port} - "POST {path} HTTP/1.1" 200 OK')


def _sglang_launch(o: Out, args: str, tp: int, lead: str = "", ms: bool = False) -> None:
    o.line(
        f"{lead}[{o.sg(ms=ms)}] server_args=ServerArgs({args}, random_seed={o.rng.randrange(1 << 30)})"
    )
    o.tick(3000, 5000)
    for r in range(tp):
        o.line(f"{lead}[{o.sg(ms=ms)} TP{r}] Init torch distributed begin.")
    o.tick(60000, 90000)
    for r in range(tp):
        o.line(
            f"{lead}[{o.sg(ms=ms)} TP{r}] KV Cache is allocated. #tokens: 1310720, KV size: 40.00 GB"
        )
    for r in range(tp):
        o.line(
            f"{lead}[{o.sg(ms=ms)} TP{r}] Capture cuda graph end. Time elapsed: {27 + r * 0.13:.2f} s. "
            "mem usage=1.02 GB. avail mem=10.80 GB."
        )
    o.line(
        f"{lead}[{o.sg(ms=ms)} TP0] max_total_num_tokens=1310720, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=64, context_len=131072"
    )
    for msg in ("Started server process [51234]", "Application startup complete."):
        o.line(f"{lead}[{o.sg(ms=ms)}] INFO:     {msg}")
    o.line(f"{lead}[{o.sg(ms=ms)}] The server is fired up and ready to roll!")


def _sglang_stop(o: Out, lead: str = "") -> None:
    o.line(f"{lead}[{o.sg()}] INFO:     Shutting down")
    o.line("Traceback (most recent call last):")
    o.line('  File "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", line 14')
    o.line("KeyboardInterrupt")
    o.t += timedelta(minutes=5)


def _steady(state: dict[str, float], rng: random.Random) -> dict[str, float]:
    running = max(1, min(64, int(state.get("running", 24) + rng.randint(-3, 3))))
    state["running"] = running
    accept = rng.uniform(1.8, 3.4)
    return {
        "running": running,
        "tokens": running * rng.randint(600, 1500),
        "usage": rng.random() * 0.9,
        "accept": accept,
        "rate": (accept - 1) / 3,
        "gen": running * accept * rng.uniform(15.0, 26.0),
        "queue": rng.randint(0, 3) if running > 50 else 0,
    }


# ---------------------------------------------------------------------- SGLang shapes


def sglang_jitter(o: Out, size: int, restart_at: float) -> None:
    """TP8, every rank with its own millisecond timestamp and throughput."""
    rng, tp = o.rng, 8
    args = "model_path='/models/Llama-3.3-70B', tp_size=8, speculative_algorithm='EAGLE3', enable_metrics_for_all_schedulers=True"
    _sglang_launch(o, args, tp, ms=True)
    state: dict[str, float] = {}
    new = False
    while o.size < size:
        if not new and o.size >= size * restart_at:
            _sglang_stop(o)
            new = True
            _sglang_launch(o, args + ", enable_metrics=True", tp, ms=True)
        o.tick(800, 1400)
        v = _steady(state, rng)
        _access(o, f"[{o.sg(ms=True)}] ", rng.randint(2, 6))
        same = rng.random() < 0.05  # now and then every rank prints the same bytes
        order = rng.sample(range(tp), tp)
        for r in order:
            late = 1.0 if r and rng.random() < 0.05 else rng.randint(0, 40) / 1000
            ts = o.sg(0 if same else late, ms=True)
            gen = v["gen"] * (1 if same or r == 0 else 1 + rng.uniform(-0.003, 0.003))
            body = (
                f"#running-req: {v['running']}, #token: {v['tokens']}, token usage: {v['usage']:.2f}, "
                f"accept len: {v['accept']:.2f}, accept rate: {v['rate']:.2f}, cuda graph: True, "
                f"gen throughput (token/s): {gen:.2f}, #queue-req: {v['queue']}"
            )
            if new:
                body += f", fwd occupancy: {rng.uniform(80, 99):.2f}%"
            o.line(f"[{ts} TP{r}] Decode batch, {body}")
        if rng.random() < 0.3:
            new_tok = rng.randint(200, 8000)
            for r in rng.sample(range(tp), tp):
                o.line(
                    f"[{o.sg(rng.randint(0, 30) / 1000, ms=True)} TP{r}] Prefill batch, #new-seq: {rng.randint(1, 6)}, "
                    f"#new-token: {new_tok}, #cached-token: {rng.randint(0, 99)}, token usage: {v['usage']:.2f}, "
                    f"#running-req: {v['running']}, #queue-req: {v['queue']}, cuda graph: False, "
                    f"input throughput (token/s): {rng.uniform(3000, 30000):.2f}"
                )


def sglang_phase(o: Out, size: int, restart_at: float) -> None:
    """0.5.3 EAGLE-3 TP8: rank 0's batch lines, a phase block on every rank."""
    rng, tp = o.rng, 8
    args = "model_path='/models/Kimi-K2-Instruct', tp_size=8, speculative_algorithm='EAGLE3', speculative_num_steps=2"
    _sglang_launch(o, args, tp)
    state: dict[str, float] = {}
    new = False
    while o.size < size:
        if not new and o.size >= size * restart_at:
            _sglang_stop(o)
            new = True
            _sglang_launch(o, args.replace("steps=2", "steps=3"), tp)
        o.tick(700, 1300)
        v = _steady(state, rng)
        tail = ", " if not new else ""
        sep = "." if not new else ","
        o.line(
            f"[{o.sg()} TP0] Decode batch{sep} #running-req: {v['running']}, #token: {v['tokens']}, "
            f"token usage: {v['usage']:.2f}, accept len: {v['accept']:.2f}, accept rate: {v['rate']:.2f}, "
            f"cuda graph: True, gen throughput (token/s): {v['gen']:.2f}, #queue-req: {v['queue']}{tail}"
        )
        if rng.random() < 0.2:
            _access(o, f"[{o.sg()}] ", rng.randint(1, 4))
        steps = 3 if new else 2
        blocks = []
        for r in range(tp):
            verify = rng.uniform(28.5, 31.5)
            draft = rng.uniform(0.7, 0.9)
            extra = rng.uniform(0.1, 0.3)
            total = verify + draft + extra
            lines = [
                f"[{o.sg()} TP{r}] Draft ({steps} steps):   {draft:.2f} ms/cyc  ({draft / total * 100:5.1f}%)",
                f"[{o.sg()} TP{r}] Target verify:     {verify:.2f} ms/cyc  ({verify / total * 100:5.1f}%)",
            ]
            if new:
                lines.append(
                    f"[{o.sg()} TP{r}] Draft extend:      {extra:.2f} ms/cyc  ({extra / total * 100:5.1f}%)"
                )
            blocks.append(lines)
        if rng.random() < 0.05:  # two ranks print at once: their lines interleave
            a, b = blocks[0], blocks[1]
            blocks[:2] = [[x for pair in zip(a, b, strict=True) for x in pair]]
        for lines in blocks:
            for text in lines:
                o.line(text)


def sglang_swa(o: Out, size: int, restart_at: float) -> None:
    """0.4.9 SWA hybrid pool fields (-> 0.5.23's named pools)."""
    rng = o.rng
    args = "model_path='/models/gemma-3-27b-it', tp_size=2, disable_hybrid_swa_memory=False"
    _sglang_launch(o, args, 2)
    state: dict[str, float] = {}
    new = False
    while o.size < size:
        if not new and o.size >= size * restart_at:
            _sglang_stop(o)
            new = True
            _sglang_launch(o, args + ", page_size=1", 2)
        o.tick(300, 900)
        v = _steady(state, rng)
        full, swa = v["tokens"], int(v["tokens"] * rng.uniform(0.5, 1.0))
        fu, su = v["usage"], v["usage"] * rng.uniform(0.8, 1.2)
        if rng.random() < 0.4:
            _access(o, f"[{o.sg()}] ", rng.randint(1, 3))
        if rng.random() < 0.5:
            new_tok = rng.randint(7, 8000)
            head = (
                f"[{o.sg()} TP0] Prefill batch. #new-seq: {rng.randint(1, 4)}, #new-token: {new_tok}, "
                f"#cached-token: {rng.randint(0, 200)}, "
            )
            if new:
                o.line(
                    head.replace("batch.", "batch,")
                    + f"#full token: {full}, full token usage: {fu:.2f}, #swa token: {swa}, swa token usage: {su:.2f}, "
                    f"#running-req: {v['running']}, #queue-req: {v['queue']}, cuda graph: False, "
                    f"input throughput (token/s): {rng.uniform(2000, 9000):.2f}"
                )
            else:
                o.line(
                    head
                    + f"#token: full={full}, swa={swa}, token usage: full={fu:.2f}, swa={su:.2f}, "
                    f"#running-req: {v['running']}, #queue-req: {v['queue']}"
                )
        for _ in range(rng.randint(1, 3)):
            if new:
                o.line(
                    f"[{o.sg()} TP0] Decode batch, #running-req: {v['running']}, #full token: {full}, "
                    f"full token usage: {fu:.2f}, #swa token: {swa}, swa token usage: {su:.2f}, cuda graph: True, "
                    f"gen throughput (token/s): {v['gen']:.2f}, #queue-req: {v['queue']}"
                )
            else:
                o.line(
                    f"[{o.sg()} TP0] Decode batch. #running-req: {v['running']}, #token: full={full}, swa={swa}, "
                    f"token usage: full={fu:.2f}, swa={su:.2f}, cuda graph: True, "
                    f"gen throughput (token/s): {v['gen']:.2f}, #queue-req: {v['queue']}"
                )
            full += v["running"] * 40
            swa = min(swa + v["running"] * 40, full)


def sglang_dp(o: Out, size: int, restart_at: float) -> None:
    """0.5.4 DP attention TP4: each TP rank its own DP group (-> 0.5.6 `DPn TPn`, compose)."""
    rng, tp = o.rng, 4
    args = "model_path='/models/DeepSeek-V3', tp_size=4, dp_size=4, enable_dp_attention=True, speculative_algorithm='NEXTN'"
    _sglang_launch(o, args, tp)
    it = 1
    new = False
    lead = ""
    while o.size < size:
        if not new and o.size >= size * restart_at:
            _sglang_stop(o)
            new = True
            lead = "sglang-1  | "
            _sglang_launch(o, args + ", enable_metrics=True", tp, lead=lead)
        o.tick(800, 1200)
        it += 40
        if rng.random() < 0.3:
            _access(o, f"{lead}[{o.sg()}] ", rng.randint(1, 4))
        for r in rng.sample(range(tp), tp):
            tags = f"DP{r} TP{r}" if new else f"TP{r}"
            running = rng.randint(0, 12)
            if rng.random() < 0.3:
                o.line(
                    f"{lead}[{o.sg()} {tags}] Prefill batch [{it}], #new-seq: {rng.randint(1, 4)}, "
                    f"#new-token: {rng.randint(10, 2048)}, #cached-token: {rng.randint(0, 50)}, "
                    f"token usage: {rng.random() * 0.1:.2f}, #running-req: {running}, #queue-req: 0, "
                )
            accept = rng.uniform(1.0, 3.2)
            o.line(
                f"{lead}[{o.sg()} {tags}] Decode batch [{it}], #running-req: {running}, "
                f"#token: {running * rng.randint(500, 900)}, token usage: {rng.random() * 0.1:.2f}, "
                f"accept len: {accept:.2f}, accept rate: {(accept - 1) / 3:.2f}, cuda graph: True, "
                f"gen throughput (token/s): {running * accept * rng.uniform(30, 45):.2f}, #queue-req: 0, "
            )


def sglang_040(o: Out, size: int, restart_at: float) -> None:
    """0.4.0 TP1: short batch lines (-> 0.4.4 without `cache hit rate`)."""
    rng = o.rng
    args = "model_path='/models/Llama-3.1-8B-Instruct', tp_size=1"
    _sglang_launch(o, args, 1)
    state: dict[str, float] = {}
    new = False
    while o.size < size:
        if not new and o.size >= size * restart_at:
            _sglang_stop(o)
            new = True
            _sglang_launch(o, args + ", enable_metrics=True", 1)
        o.tick(200, 700)
        v = _steady(state, rng)
        if rng.random() < 0.5:
            _access(o, f"[{o.sg()}] ", rng.randint(1, 3))
        if rng.random() < 0.4:
            new_tok = rng.randint(7, 5000)
            cached = rng.randint(0, new_tok // 10)
            hit = f"cache hit rate: {rng.uniform(0, 30):.2f}%, " if not new else ""
            o.line(
                f"[{o.sg()} TP0] Prefill batch. #new-seq: {rng.randint(1, 18)}, #new-token: {new_tok}, "
                f"#cached-token: {cached}, {hit}token usage: {v['usage']:.2f}, "
                f"#running-req: {v['running']}, #queue-req: {v['queue']}"
            )
        for _ in range(rng.randint(1, 4)):
            o.line(
                f"[{o.sg()} TP0] Decode batch. #running-req: {v['running']}, #token: {v['tokens']}, "
                f"token usage: {v['usage']:.2f}, gen throughput (token/s): {v['gen']:.2f}, #queue-req: {v['queue']}"
            )
            v["tokens"] += v["running"] * 40


# ---------------------------------------------------------------------- vLLM shapes


def _vllm_launch(o: Out, version: str, lead: str, dp: int, spec: str) -> None:
    api = f"{lead}(APIServer pid=1) "
    o.line(f"{api}INFO {o.vl()} [api_server.py:1772] vLLM API server version {version}")
    o.line(
        f"{api}INFO {o.vl()} [utils.py:253] non-default args: {{'model': 'Qwen/Qwen3-30B-A3B', "
        f"'data_parallel_size': {dp}, 'speculative_config': {spec}}}"
    )
    o.tick(10000, 20000)
    for d in range(dp):
        o.line(
            f"{lead}(EngineCore_DP{d} pid={200 + d}) INFO {o.vl()} [core.py:93] Initializing a V1 LLM engine "
            f"(v{version}) with config: model='Qwen/Qwen3-30B-A3B', speculative_config=SpeculativeConfig("
            "method='eagle3', model='Tengyunw/qwen3_30b_moe_eagle3', num_spec_tokens=3), "
            "tokenizer='Qwen/Qwen3-30B-A3B', dtype=torch.bfloat16, max_seq_len=40960, seed=0"
        )
    o.line(
        f"{api}INFO {o.vl()} [api_server.py:1900] Starting vLLM API server 0 on http://0.0.0.0:8000"
    )


def _vllm_interval(
    o: Out, lead: str, engine: int, fields: list[str], mfu: str | None, iters: bool
) -> None:
    rng = o.rng
    api = f"{lead}(APIServer pid=1) "
    running = rng.randint(0, 64)
    prompt = rng.choice((0.0, rng.uniform(100, 9000)))
    gen = running * rng.uniform(10, 40)
    values = {
        "prompt": f"Avg prompt throughput: {prompt:.1f} tokens/s",
        "gen": f"Avg generation throughput: {gen:.1f} tokens/s",
        "running": f"Running: {running} reqs",
        "waiting": f"Waiting: {rng.randint(0, 3) if running > 50 else 0} reqs",
        "preempt": f"Preemptions: {rng.randint(0, 2)}",
        "kv": f"GPU KV cache usage: {rng.uniform(0, 99):.1f}%",
        "prefix": f"Prefix cache hit rate: {rng.uniform(0, 60):.1f}%",
    }
    if iters:
        for k in range(rng.randint(1, 3)):
            o.line(
                f"{api}INFO {o.vl()} [loggers.py:183] Engine {engine:03d}: Iteration({rng.randint(1, 99999)}): "
                f"{k} context requests, {k * 1024} context tokens, {running} generation requests, {running} "
                f"generation tokens, iteration elapsed time: {rng.uniform(10, 40):.2f} ms, "
                f"GPU KV cache usage: {rng.uniform(0, 9):.1f}%"
            )
    body = ", ".join(values[f] for f in fields)
    o.line(f"{api}INFO {o.vl()} [loggers.py:236] Engine {engine:03d}: {body}")
    if running:
        drafted = running * rng.randint(20, 60) * 3
        pos = sorted((rng.uniform(0.2, 0.95) for _ in range(3)), reverse=True)
        accepted = round(sum(round(p, 3) for p in pos) * drafted / 3)  # as vLLM counts them
        o.line(
            f"{api}INFO {o.vl()} [metrics.py:96] SpecDecoding metrics: Mean acceptance length: "
            f"{1 + accepted / (drafted / 3):.2f}, Accepted throughput: {accepted / 10:.2f} tokens/s, "
            f"Drafted throughput: {drafted / 10:.2f} tokens/s, Accepted: {accepted} tokens, Drafted: "
            f"{drafted} tokens, Per-position acceptance rate: {pos[0]:.3f}, {pos[1]:.3f}, {pos[2]:.3f}, "
            f"Avg Draft acceptance rate: {accepted / drafted * 100:.1f}%"
        )
    if mfu is not None:
        o.line(
            f"{api}INFO {o.vl()} [perf.py:1725] Engine {engine:03d}: MFU: {rng.uniform(90, 140):.1f} "
            f"TF/s/{mfu} {rng.uniform(1200, 1700):.1f} GB/s/{mfu}"
        )


def vllm_v1(o: Out, size: int, restart_at: float) -> None:
    """vLLM 0.12 V1 DP2 at a 1 s stats interval (-> 0.13: Preemptions, fields moved)."""
    rng = o.rng
    spec = "{'method': 'eagle3', 'model': 'Tengyunw/qwen3_30b_moe_eagle3', 'num_speculative_tokens': 3}"
    _vllm_launch(o, "0.12.0", "", 2, spec)
    fields = ["prompt", "gen", "running", "waiting", "kv", "prefix"]
    new = False
    while o.size < size:
        if not new and o.size >= size * restart_at:
            new = True
            o.t += timedelta(minutes=3)
            _vllm_launch(o, "0.13.0", "", 2, spec)
            fields = ["prompt", "gen", "running", "waiting", "preempt", "prefix", "kv"]
        o.tick(950, 1050)
        _access(o, "(APIServer pid=1) ", rng.randint(0, 4))
        for engine in range(2):
            _vllm_interval(o, "", engine, fields, None, False)


def _vllm_v0_launch(o: Out, version: str, k: int) -> None:
    o.line(f"INFO {o.vl()} api_server.py:528] vLLM API server version {version}")
    o.line(
        f"INFO {o.vl()} api_server.py:529] args: Namespace(host=None, port=8000, model='meta-llama/Meta-Llama-3.1-70B-Instruct', "
        f"tensor_parallel_size=4, speculative_model='ibm-fms/llama3-70b-accelerator', num_speculative_tokens={k}, "
        "enable_prefix_caching=True, max_num_seqs=64)"
    )
    o.tick(5000, 9000)
    o.line(
        f"INFO {o.vl()} llm_engine.py:237] Initializing an LLM engine (v{version}) with config: "
        "model='meta-llama/Meta-Llama-3.1-70B-Instruct', speculative_config=SpeculativeConfig("
        f"draft_model='ibm-fms/llama3-70b-accelerator', num_spec_tokens={k}), "
        "tokenizer='meta-llama/Meta-Llama-3.1-70B-Instruct', tensor_parallel_size=4, seed=0"
    )
    for pid in range(2237, 2240):
        o.line(
            f"\x1b[1;36m(VllmWorkerProcess pid={pid})\x1b[0;0m INFO {o.vl()} multiproc_worker_utils.py:215] "
            "Worker ready; awaiting tasks"
        )
    o.tick(40000, 60000)
    o.line(f"INFO {o.vl()} model_runner.py:1523] Graph capturing finished in 14 secs.")
    o.line("INFO:     Started server process [2236]")
    o.line("INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)")


def vllm_v0(o: Out, size: int, restart_at: float) -> None:
    """vLLM 0.6.3 V0 with speculative decoding and prefix caching, a stats line set every 5 s
    (-> 0.6.4: the counters start again, 5 speculative tokens)."""
    rng = o.rng
    k = 3
    _vllm_v0_launch(o, "0.6.3", k)
    accepted = drafted = emitted = 0
    hits = 0.0
    busy = True
    new = False
    while o.size < size:
        if not new and o.size >= size * restart_at:
            new, k = True, 5
            o.t += timedelta(minutes=3)
            _vllm_v0_launch(o, "0.6.4", k)
            accepted = drafted = emitted = 0
        o.tick(4990, 5010)
        if rng.random() < 0.02:
            busy = not busy  # stretches of idle intervals between benchmark runs
        running = rng.randint(1, 64) if busy else 0
        for _ in range(rng.randint(0, 6) if busy else 0):
            _access(o, "", 1)
        prompt = rng.uniform(0, 900) if busy and rng.random() < 0.5 else 0.0
        gen = running * rng.uniform(8, 30)
        o.line(
            f"INFO {o.vl()} metrics.py:349] Avg prompt throughput: {prompt:.1f} tokens/s, Avg generation "
            f"throughput: {gen:.1f} tokens/s, Running: {running} reqs, Swapped: 0 reqs, Pending: "
            f"{rng.randint(0, 4) if running > 48 else 0} reqs, GPU KV cache usage: {running * 1.3:.1f}%, "
            "CPU KV cache usage: 0.0%."
        )
        hits = min(99.0, hits + rng.uniform(0, 0.5)) if busy else hits
        o.line(f"INFO {o.vl()} metrics.py:365] Prefix cache hit rate: GPU: {hits:.2f}%, CPU: 0.00%")
        if running:
            cycles = running * rng.randint(10, 40)
            a = round(cycles * k * rng.uniform(0.3, 0.7))
            accepted, drafted, emitted = accepted + a, drafted + cycles * k, emitted + a + cycles
        o.line(
            f"INFO {o.vl()} metrics.py:367] Speculative metrics: Draft acceptance rate: "
            f"{accepted / max(drafted, 1):.3f}, System efficiency: {emitted / max(drafted + drafted // k, 1):.3f}, "
            f"Number of speculative tokens: {k}, Number of accepted tokens: {accepted}, Number of draft "
            f"tokens: {drafted}, Number of emitted tokens: {emitted}."
        )
        if running:
            o.line(
                f"INFO {o.vl()} spec_decode_worker.py:1071] SpecDecodeWorker stage times: "
                f"average_time_per_proposal_tok_ms={rng.uniform(0.9, 1.4):.2f} "
                f"scoring_time_ms={rng.uniform(30, 45):.2f} verification_time_ms={rng.uniform(0.4, 0.8):.2f}"
            )


def vllm_mfu(o: Out, size: int, restart_at: float) -> None:
    """vLLM 0.33 DP2 with MFU and iteration-detail lines (-> behind a compose prefix, `/GPU`)."""
    rng = o.rng
    spec = "{'method': 'mtp', 'num_speculative_tokens': 3}"
    _vllm_launch(o, "0.33.0", "", 2, spec)
    fields = ["prompt", "gen", "running", "waiting", "kv", "prefix"]
    lead, unit = "", "device"
    new = False
    while o.size < size:
        if not new and o.size >= size * restart_at:
            new = True
            o.t += timedelta(minutes=3)
            lead, unit = "vllm-1  | ", "GPU"
            _vllm_launch(o, "0.33.1", lead, 2, spec)
        o.tick(950, 1050)
        _access(o, f"{lead}(APIServer pid=1) ", rng.randint(0, 3))
        for engine in range(2):
            _vllm_interval(o, lead, engine, fields, unit, True)


# ---------------------------------------------------------------------- /metrics scrapes

_MODEL = 'model_name="Qwen/Qwen3-30B-A3B"'
_TTFT_LE = (
    "0.001",
    "0.005",
    "0.01",
    "0.02",
    "0.04",
    "0.06",
    "0.08",
    "0.1",
    "0.25",
    "0.5",
    "0.75",
    "1.0",
    "2.5",
    "5.0",
    "7.5",
    "10.0",
    "20.0",
    "40.0",
    "80.0",
    "160.0",
    "640.0",
    "2560.0",
    "+Inf",
)
_ITL_LE = (
    "0.01",
    "0.025",
    "0.05",
    "0.075",
    "0.1",
    "0.15",
    "0.2",
    "0.3",
    "0.4",
    "0.5",
    "0.75",
    "1.0",
    "2.5",
    "5.0",
    "7.5",
    "10.0",
    "20.0",
    "40.0",
    "80.0",
    "+Inf",
)
_E2E_LE = (
    "0.3",
    "0.5",
    "0.8",
    "1.0",
    "1.5",
    "2.0",
    "2.5",
    "5.0",
    "10.0",
    "15.0",
    "20.0",
    "30.0",
    "40.0",
    "50.0",
    "60.0",
    "120.0",
    "240.0",
    "480.0",
    "960.0",
    "1920.0",
    "7680.0",
    "+Inf",
)
_GAUGE_HELP = (
    ("vllm:num_requests_running", "Number of requests in model execution batches.", 64),
    ("vllm:num_requests_waiting", "Number of requests waiting to be processed.", 3),
)
_COUNTER_HELP = (
    ("vllm:prompt_tokens_total", "Number of prefill tokens processed.", 9000),
    ("vllm:generation_tokens_total", "Number of generation tokens processed.", 4000),
    ("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", 1),
    (
        "vllm:prefix_cache_queries_total",
        "Prefix cache queries, in terms of number of queried tokens.",
        9000,
    ),
    (
        "vllm:prefix_cache_hits_total",
        "Prefix cache hits, in terms of number of cached tokens.",
        3000,
    ),
    ("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", 400),
    ("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", 1200),
    ("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", 800),
)
_HISTOGRAM_HELP = (
    (
        "vllm:time_to_first_token_seconds",
        "Histogram of time to first token in seconds.",
        _TTFT_LE,
        0.2,
    ),
    (
        "vllm:inter_token_latency_seconds",
        "Histogram of inter-token latency in seconds.",
        _ITL_LE,
        0.03,
    ),
    (
        "vllm:e2e_request_latency_seconds",
        "Histogram of e2e request latency in seconds.",
        _E2E_LE,
        8.0,
    ),
)


def _scrape(o: Out, c: dict[str, float], started: float, engines: int) -> None:
    """One vLLM 0.11 `/metrics` scrape of `engines` DP engines (the counters in `c` advance)."""
    rng = o.rng
    o.line(f"# scrape {o.t.strftime('%Y-%m-%dT%H:%M:%S')}+00:00")
    o.line(
        "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds."
    )
    o.line("# TYPE process_start_time_seconds gauge")
    o.line(f"process_start_time_seconds {started!r}")
    for name, help_, top in _GAUGE_HELP:
        o.line(f"# HELP {name} {help_}")
        o.line(f"# TYPE {name} gauge")
        for e in range(engines):
            o.line(f'{name}{{engine="{e}",{_MODEL}}} {float(rng.randint(0, top))!r}')
    o.line("# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.")
    o.line("# TYPE vllm:kv_cache_usage_perc gauge")
    for e in range(engines):
        o.line(f'vllm:kv_cache_usage_perc{{engine="{e}",{_MODEL}}} {round(rng.random(), 4)!r}')
    for name, help_, step in _COUNTER_HELP:
        o.line(f"# HELP {name} {help_}")
        o.line(f"# TYPE {name} counter")
        for e in range(engines):
            key = f"{name}{e}"
            c[key] = c.get(key, 0.0) + float(rng.randint(0, step))
            o.line(f'{name}{{engine="{e}",{_MODEL}}} {c[key]!r}')
    name = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    o.line(f"# HELP {name} Accepted tokens per draft position.")
    o.line(f"# TYPE {name} counter")
    for e in range(engines):
        for pos in range(3):
            key = f"{name}{e}{pos}"
            c[key] = c.get(key, 0.0) + float(rng.randint(0, 300 - pos * 80))
            o.line(f'{name}{{engine="{e}",{_MODEL},position="{pos}"}} {c[key]!r}')
    name = "vllm:request_success_total"
    o.line(f"# HELP {name} Count of successfully processed requests.")
    o.line(f"# TYPE {name} counter")
    for e in range(engines):
        for reason in ("abort", "length", "stop"):
            key = f"{name}{e}{reason}"
            c[key] = c.get(key, 0.0) + float(rng.randint(0, 1 if reason == "abort" else 20))
            o.line(f'{name}{{engine="{e}",finished_reason="{reason}",{_MODEL}}} {c[key]!r}')
    for name, help_, les, scale in _HISTOGRAM_HELP:
        o.line(f"# HELP {name} {help_}")
        o.line(f"# TYPE {name} histogram")
        for e in range(engines):
            n = rng.randint(0, 40)
            key = f"{name}{e}"
            c[key + "count"] = c.get(key + "count", 0.0) + n
            c[key + "sum"] = c.get(key + "sum", 0.0) + n * rng.uniform(0.5, 1.5) * scale
            for k, le in enumerate(les):  # cumulative: each bucket holds those below it
                below = n if le == "+Inf" else min(n, round(n * (k + 1) / len(les) * 1.3))
                c[key + le] = c.get(key + le, 0.0) + below
                o.line(f'{name}_bucket{{engine="{e}",le="{le}",{_MODEL}}} {c[key + le]!r}')
            o.line(f'{name}_count{{engine="{e}",{_MODEL}}} {c[key + "count"]!r}')
            o.line(f'{name}_sum{{engine="{e}",{_MODEL}}} {c[key + "sum"]!r}')
    o.line("# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig")
    o.line("# TYPE vllm:cache_config_info gauge")
    for e in range(engines):
        o.line(
            f'vllm:cache_config_info{{block_size="16",cache_dtype="auto",engine="{e}",num_gpu_blocks="28672"}} 1.0'
        )


def prometheus(o: Out, size: int, restart_at: float) -> None:
    """vLLM 0.11 `/metrics` of two DP engines scraped every 5 s into one file, each scrape
    after a `# scrape <time>` line, histograms of 20-odd buckets (-> a restart: counters
    from zero again, three engines)."""
    counters: dict[str, float] = {}
    started = o.t.timestamp()
    engines = 2
    new = False
    while o.size < size:
        if not new and o.size >= size * restart_at:
            new = True
            o.t += timedelta(minutes=3)
            counters.clear()
            started = o.t.timestamp()
            engines = 3
        o.tick(4990, 5010)
        _scrape(o, counters, started, engines)


# ---------------------------------------------------------------------- the registry


Writer = Callable[[Out, int, float], None]
SHAPES: dict[str, tuple[str, Writer | None]] = {
    "sglang-tp8": ("SGLang EAGLE-3 TP8, every rank prints (gen_sglang_log.py)", None),
    "sglang-tp1": ("the same, only rank 0 prints", None),
    "sglang-jitter": ("SGLang TP8, ranks with their own ms timestamps and values", sglang_jitter),
    "sglang-phase": ("SGLang 0.5.3 EAGLE-3 TP8, phase lines on every rank", sglang_phase),
    "sglang-swa": ("SGLang 0.4.9 SWA hybrid pools", sglang_swa),
    "sglang-dp": ("SGLang 0.5.4 DP attention TP4", sglang_dp),
    "sglang-040": ("SGLang 0.4.0 TP1", sglang_040),
    "vllm-v1": ("vLLM 0.12 V1 engine + spec lines at 1 s", vllm_v1),
    "vllm-mfu": ("vLLM 0.33 engine, spec, MFU, iteration lines", vllm_mfu),
    "vllm-v0": ("vLLM 0.6.3 V0: engine, prefix-cache, cumulative spec, stage lines", vllm_v0),
    "prometheus": ("vLLM 0.11 /metrics scrapes every 5 s, DP2 (-> a restart, DP3)", prometheus),
}
_START = datetime(2025, 11, 14, 9, 0, 0)


def generate(shape: str, out: Path, size: int, seed: int = 1, restart_at: float = 0.6) -> int:
    """Write about `size` bytes of a shape to `out` (the last line cut mid-number, as a
    log being written is); return the number of lines."""
    if shape in ("sglang-tp8", "sglang-tp1"):
        return base.generate(out, size, tp=8 if shape == "sglang-tp8" else 1, seed=seed)
    writer = SHAPES[shape][1]
    assert writer is not None
    with out.open("w", encoding="utf-8", newline="\n") as fh:
        o = Out(fh, seed, _START)
        writer(o, size - 4096, restart_at)
        o.flush()
        last = "[2025-11-14 23:59:59 TP0] Decode batch, #running-req: 12, #token: 14000, token usage: 0.0"
        if shape == "vllm-v0":
            last = "INFO 11-14 23:59:59 metrics.py:367] Speculative metrics: Draft acceptance rate: 0.5"
        elif shape.startswith("vllm"):
            last = "(APIServer pid=1) INFO 11-14 23:59:59 [loggers.py:236] Engine 000: Avg prompt throughput: 12"
        elif shape == "prometheus":
            last = 'vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-30B-A3B"} 1'
        fh.write(last)
    return o.lines + 1


def cached(shape: str, size: int, folder: str, seed: int = 1) -> Path:
    """A generated log of a shape, reused when it already exists."""
    version = base.GENERATOR_VERSION if shape in ("sglang-tp8", "sglang-tp1") else GENERATOR_VERSION
    path = Path(folder) / f"{shape}-{size}-s{seed}-v{version}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        tmp = path.with_suffix(".part")
        generate(shape, tmp, size, seed=seed)
        tmp.replace(path)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), required=True)
    ap.add_argument("--size", default="256M", help="about this many bytes (256M, 1G, ...)")
    ap.add_argument("--out", type=Path, required=True, help="write here (not in the repo)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--restart-at", type=float, default=0.6, help="where the version changes")
    args = ap.parse_args(argv)
    n = generate(args.shape, args.out, base.parse_size(args.size), args.seed, args.restart_at)
    sys.stderr.write(f"wrote {args.out} ({args.out.stat().st_size} bytes, {n} lines)\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
