"""Generate a realistic SGLang server log of any size (for the benchmarks; never for tests).

What a day-long log of an 8-GPU speculative-decoding server looks like: a launch (server args,
per-rank start-up lines, CUDA-graph capture, tqdm `\\r` progress bars), then intervals of one
Decode line per tensor-parallel rank (`--enable-metrics-for-all-schedulers`; ranks in shuffled
order, a higher rank sometimes a second late), Prefill lines per rank, uvicorn access lines, a
profiler's phase-timing block now and then, rare events (retractions, an NCCL warning); at
`--restart-at` a shutdown traceback and a second launch with a newer version's layout
(0.5.5 `Decode batch, ..., #queue-req: N, ` -> 0.5.10 millisecond timestamps, no trailing
comma, Prefill `cuda graph` before `input throughput`); the last line is cut mid-number.

    python3 benchmarks/gen_sglang_log.py --size 100M --out /tmp/sglang-100M.log
"""

from __future__ import annotations

import argparse
import random
import sys
from datetime import datetime, timedelta
from pathlib import Path

GENERATOR_VERSION = 4  # bump when the output changes (cached files are keyed on it)

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    """`100M`, `1G`, `512K` or a byte count."""
    t = text.strip().upper().removesuffix("B")
    unit = t[-1:] if t[-1:] in _UNITS else ""
    return int(float(t[: len(t) - len(unit)]) * _UNITS[unit])


SERVER_ARGS_055 = (
    "server_args=ServerArgs(model_path='/models/Llama-3.3-70B-Instruct', "
    "tokenizer_path='/models/Llama-3.3-70B-Instruct', tokenizer_mode='auto', "
    "skip_tokenizer_init=False, load_format='auto', trust_remote_code=False, "
    "context_length=None, host='127.0.0.1', port=30000, dtype='auto', quantization='fp8', "
    "kv_cache_dtype='auto', mem_fraction_static=0.82, max_running_requests=64, "
    "chunked_prefill_size=8192, max_prefill_tokens=16384, schedule_policy='fcfs', page_size=1, "
    "device='cuda', tp_size=8, pp_size=1, random_seed={seed}, log_level='info', "
    "enable_metrics=True, enable_metrics_for_all_schedulers=True, decode_log_interval=40, "
    "dp_size=1, attention_backend='fa3', speculative_algorithm='EAGLE3', "
    "speculative_draft_model_path='/models/Llama-3.3-70B-EAGLE3', speculative_num_steps=3, "
    "speculative_eagle_topk=1, speculative_num_draft_tokens=4, "
    "speculative_attention_mode='{attn}', ep_size=1, disable_radix_cache=False, "
    "cuda_graph_max_bs=64, disable_cuda_graph=False, enable_dp_attention=False, "
    "enable_torch_compile=False)"
)


class Writer:
    """Buffered text output that knows how many bytes it has written."""

    def __init__(self, fh: object, seed: int) -> None:
        self.fh = fh
        self.buf: list[str] = []
        self.size = 0
        self.rng = random.Random(seed)
        self.t = datetime(2025, 11, 14, 9, 0, 0)
        self.ms = False  # SGLANG_LOG_MS=1 (the second launch)
        self.lines = 0

    def stamp(self, late: float = 0.0) -> str:
        t = self.t + timedelta(seconds=late)
        if self.ms:
            return t.strftime("%Y-%m-%d %H:%M:%S") + f".{t.microsecond // 1000:03d}"
        return t.strftime("%Y-%m-%d %H:%M:%S")

    def line(self, text: str) -> None:
        self.buf.append(text)
        self.size += len(text) + 1
        self.lines += 1
        if len(self.buf) >= 4096:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.fh.write("\n".join(self.buf) + "\n")  # type: ignore[attr-defined]
            self.buf.clear()


def launch(w: Writer, tp: int, new: bool, ansi: bool) -> None:
    rng = w.rng
    attn = "decode" if new else "prefill"
    w.line("Overlap scheduler is disabled because of using eagle speculative decoding.")
    w.line(f"[{w.stamp()}] " + SERVER_ARGS_055.format(seed=rng.randrange(1 << 30), attn=attn))
    w.t += timedelta(seconds=4)
    for r in rng.sample(range(tp), tp):
        w.line(f"[{w.stamp()} TP{r}] Init torch distributed begin.")
    for r in range(tp):
        w.line(f"[{w.stamp()} TP{r}] Load weight begin. avail mem=78.41 GB")
    # tqdm rewrites its bar with `\r`; only the last state survives cleaning
    bar = "".join(
        f"\rLoading safetensors checkpoint shards: {p:3d}% Completed | {i}/30 [00:{i:02d}<00:00]"
        for i, p in ((i, i * 100 // 30) for i in range(1, 31))
    )
    w.line(bar)
    w.t += timedelta(seconds=95)
    for r in range(tp):
        w.line(f"[{w.stamp()} TP{r}] KV Cache is allocated. #tokens: 1310720, KV size: 40.00 GB")
    w.t += timedelta(seconds=3)
    for r in range(tp):
        w.line(
            f"[{w.stamp()} TP{r}] Capture cuda graph end. Time elapsed: {27 + r * 0.13:.2f} s. "
            "mem usage=1.02 GB. avail mem=10.80 GB."
        )
    for r in range(tp):
        w.line(
            f"[{w.stamp()} TP{r}] max_total_num_tokens=1310720, chunked_prefill_size=8192, "
            "max_prefill_tokens=16384, max_running_requests=64, context_len=131072, "
            "available_gpu_mem=10.61 GB"
        )
    info = "\x1b[32mINFO\x1b[0m" if ansi else "INFO"
    for msg in (
        "Started server process [51234]",
        "Waiting for application startup.",
        "Application startup complete.",
        "Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
    ):
        w.line(f"[{w.stamp()}] {info}:     {msg}")
    w.line(f"[{w.stamp()}] The server is fired up and ready to roll!")


def shutdown(w: Writer, ansi: bool) -> None:
    info = "\x1b[32mINFO\x1b[0m" if ansi else "INFO"
    w.line(f"[{w.stamp()}] {info}:     Shutting down")
    w.line("Traceback (most recent call last):")
    w.line('  File "<frozen runpy>", line 198, in _run_module_as_main')
    w.line('  File "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", line 14')
    w.line("    launch_server(server_args)")
    w.line("KeyboardInterrupt")
    w.t += timedelta(minutes=7)


def interval(w: Writer, tp: int, new: bool, ansi: bool, state: dict[str, float]) -> None:
    """One decode-log interval (40 decode steps): prefills, access lines, Decode lines."""
    rng = w.rng
    w.t += timedelta(milliseconds=rng.randint(900, 1700))
    running = max(0, min(64, int(state["running"] + rng.randint(-3, 3))))
    state["running"] = running
    info = "\x1b[32mINFO\x1b[0m" if ansi else "INFO"
    # requests finishing in this interval
    for _ in range(rng.choice((3, 4, 5, 6, 6, 7, 8))):
        port = rng.randint(32768, 60999)
        path = rng.choice(("/v1/chat/completions", "/v1/chat/completions", "/generate"))
        w.line(f'[{w.stamp()}] {info}:     127.0.0.1:{port} - "POST {path} HTTP/1.1" 200 OK')
    # about one prefill batch every other interval, printed by every rank
    if rng.random() < 0.5:
        new_seq = rng.randint(1, 6)
        new_tok = new_seq * rng.randint(200, 1400)
        cached = rng.randint(0, new_tok // 3)
        usage = rng.random() * 0.6
        thr = rng.uniform(3000, 30000)
        queue = rng.randint(0, 4)
        for r in rng.sample(range(tp), tp):
            late = 1.0 if r and rng.random() < 0.02 else 0.0
            head = f"[{w.stamp(late)} TP{r}] Prefill batch, #new-seq: {new_seq}, "
            head += f"#new-token: {new_tok}, #cached-token: {cached}, token usage: {usage:.2f}, "
            head += f"#running-req: {running}, #queue-req: {queue}, "
            if new:
                mine = thr * (1 + rng.uniform(-0.002, 0.002))
                head += f"cuda graph: False, input throughput (token/s): {mine:.2f}"
            w.line(head)
    tokens = running * rng.randint(900, 1500)
    usage = tokens / 1310720
    accept = rng.uniform(2.2, 3.4)
    rate = (accept - 1) / 3
    gen = running * accept * rng.uniform(18.0, 26.0)
    queue = rng.randint(0, 3) if running > 60 else 0
    order = rng.sample(range(tp), tp)
    if rng.random() < 0.7:  # rank 0 often speaks first
        order.remove(0)
        order.insert(0, 0)
    for r in order:
        late = 1.0 if r and rng.random() < 0.02 else 0.0
        # every rank times the interval itself: throughputs differ in the last digits
        mine = gen * (1 + rng.uniform(-0.002, 0.002))
        body = (
            f"#running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, "
            f"accept len: {accept:.2f}, accept rate: {rate:.2f}, cuda graph: True, "
            f"gen throughput (token/s): {mine:.2f}, #queue-req: {queue}"
        )
        w.line(f"[{w.stamp(late)} TP{r}] Decode batch, {body}" + ("" if new else ", "))
    state["n"] += 1
    if state["n"] % 97 == 0:  # a profiler's phase block, rank 0 only
        verify = rng.uniform(28.5, 30.5)
        draft = rng.uniform(0.7, 0.8)
        share = draft / (verify + draft) * 100
        w.line(f"[{w.stamp()} TP0] Draft (3 steps):   {draft:.2f} ms/cyc  ({share:5.1f}%)")
        w.line(f"[{w.stamp()} TP0] Target verify:     {verify:.2f} ms/cyc  ({100 - share:5.1f}%)")
    if rng.random() < 2e-5:
        w.line(
            f"[{w.stamp()} TP0] KV cache pool is full. Retract requests. #retracted_reqs: 2, "
            "#aborted_retracted_reqs: 0, #new_token_ratio: 0.3102 -> 0.5000"
        )
    if rng.random() < 5e-6:
        w.line(
            f"[{w.stamp()} TP3] node-3:812:901 [3] NCCL WARN Cuda failure 'out of memory' "
            "(retrying)"
        )


def generate(
    out: Path,
    size: int,
    tp: int = 8,
    seed: int = 1,
    ansi: bool = False,
    restart_at: float = 0.6,
    cut: bool = True,
) -> int:
    """Write about `size` bytes to `out`; return the number of lines."""
    with out.open("w", encoding="utf-8", newline="\n") as fh:
        w = Writer(fh, seed)
        state = {"running": 32.0, "n": 0.0}
        new = False
        launch(w, tp, new, ansi)
        while w.size < size - 4096:
            if not new and restart_at < 1 and w.size >= size * restart_at:
                shutdown(w, ansi)
                new = True
                w.ms = True
                launch(w, tp, new, ansi)
            interval(w, tp, new, ansi, state)
        w.flush()
        if cut:  # a last Decode line cut mid-number, without its newline
            text = (
                f"[{w.stamp()} TP0] Decode batch, #running-req: 12, #token: 14000, "
                "token usage: 0.01, accept len: 2.7"
            )
            fh.write(text)
            w.lines += 1
    return w.lines


def cached(
    size: int,
    tp: int = 8,
    seed: int = 1,
    ansi: bool = False,
    folder: str = "/tmp",
    name: str = "sglang",
) -> Path:
    """A generated log for these parameters, reused when it already exists."""
    tag = f"{name}-{size}-tp{tp}-s{seed}{'-ansi' if ansi else ''}-v{GENERATOR_VERSION}.log"
    path = Path(folder) / tag
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        tmp = path.with_suffix(".part")
        generate(tmp, size, tp=tp, seed=seed, ansi=ansi)
        tmp.replace(path)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="100M", help="about this many bytes (100M, 1G, ...)")
    ap.add_argument("--out", type=Path, required=True, help="write here (not in the repo)")
    ap.add_argument("--tp", type=int, default=8, help="tensor-parallel ranks (default 8)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ansi", action="store_true", help="colour uvicorn's INFO like a tty")
    ap.add_argument(
        "--restart-at",
        type=float,
        default=0.6,
        help="fraction of the file where the server restarts with a newer layout",
    )
    ap.add_argument("--no-cut", action="store_true", help="end with a whole line")
    args = ap.parse_args(argv)
    n = generate(
        args.out,
        parse_size(args.size),
        args.tp,
        args.seed,
        args.ansi,
        args.restart_at,
        not args.no_cut,
    )
    sys.stderr.write(f"wrote {args.out} ({args.out.stat().st_size} bytes, {n} lines)\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
