"""Grouping: config × metric value lists, DP-group combination, settings diff, confounds.

Owns the grouping keys (config, metric; DP groups combined per timestamp with each metric's
`sum`/`mean` rule, DESIGN §3), the settings that differ between configs, and the confound
rule of DESIGN §4 (with the launch-noise constant). It must not run statistical tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import metrics

if TYPE_CHECKING:
    from .session import Session

# Settings that change with every launch and never explain a difference (DESIGN §4).
LAUNCH_NOISE: frozenset[str] = frozenset(
    {
        "random_seed",
        "seed",
        "port",
        "host",
        "url",
        "dist_init_addr",
        "nccl_port",
        "metrics_port",
        "api_key",
        "timestamp",
        "date",
        "start_time",
        "tag",
        "run_name",
        "log_dir",
        "log_file",
        "crash_dump_folder",
        "dump_dir",
        "download_dir",
        "file_storage_path",
        "cache_dir",
        "output_file",
        "result_filename",
        "label",
        "vllm_version",
        "sglang_version",
    }
)
_NOISE_PATTERN = re.compile(
    r"(^|[._])(log|logs|dump|dumps|cache_dir|tmp_dir|profile_dir|trace_dir|output_dir)"
    r"(_dir|_path|_file|_folder)?$|(_port|_host|_url|_addr|_timestamp|_time|_date)$|"
    r"(^|[._])(log|dump|trace)_[a-z_]*(path|dir|file|folder)$"
)

# How many times a benchmark ran changes the sample size, not the thing measured (DESIGN §4).
# Facts about how a log counts (not how the server ran) never explain a difference either.
NOT_CONFOUNDS: frozenset[str] = frozenset(
    {
        "num_runs",
        "accept_len_counts_bonus",
        "accept_length_scope",
        "accept_len_derived",
    }
)

# Benchmark parameters: a difference is a confound unless the hypothesis names it (not num_runs).
BENCH_PARAMS: frozenset[str] = frozenset(
    {
        "max_tokens",
        "warmup",
        "request_rate",
        "max_concurrency",
        "dataset_name",
        "dataset",
        "input_len",
        "output_len",
        "random_input_len",
        "random_output_len",
        "random_range_ratio",
        "sharegpt_output_len",
        "num_prompts",
        "batch_size",
        "burstiness",
    }
)


def is_noise(key: str) -> bool:
    """Whether a setting is launch noise (ports, hosts, seeds, log/dump/cache paths, times)."""
    leaf = key.rsplit(".", 1)[-1]
    return key in LAUNCH_NOISE or leaf in LAUNCH_NOISE or bool(_NOISE_PATTERN.search(key))


@dataclass(frozen=True, slots=True)
class Point:
    """One value of a config's metric, with where it was read."""

    value: float
    source: str
    line: int
    run: int | None
    block: int | None


def values_by_config(session: Session) -> dict[tuple[str, str], list[Point]]:
    """Values per (config, metric) in file order, DP groups combined per timestamp."""
    import polars as pl

    df = session.samples
    if df.height == 0:
        return {}
    rules = {m: metrics.get(m).combine for m in df["metric"].unique().to_list()}
    df = df.with_row_index("_order").with_columns(
        pl.col("metric").replace_strict(rules, default="mean").alias("_rule")
    )
    keyed = df.filter(pl.col("ts").is_not_null() & pl.col("rank").is_not_null())
    plain = df.filter(~(pl.col("ts").is_not_null() & pl.col("rank").is_not_null()))
    if keyed.height:
        # The k-th line of each rank at a timestamp pairs with the k-th line of the others:
        # two intervals of one rank within the same printed second are never summed.
        keyed = keyed.with_columns(
            pl.int_range(pl.len()).over(["config", "source", "metric", "ts", "rank"]).alias("_k")
        )
        keys = ["config", "source", "metric", "ts", "_k"]
        combined = keyed.group_by(keys, maintain_order=True).agg(
            pl.col("_order").min(),
            pl.col("line").min(),
            pl.col("block").first(),
            pl.col("run").first(),
            pl.when(pl.col("_rule").first() == "sum")
            .then(pl.col("value").sum())
            .otherwise(pl.col("value").mean())
            .alias("value"),
        )
        plain = plain.select(
            "_order", "config", "source", "metric", "line", "block", "run", "value"
        )
        combined = combined.select(
            "_order", "config", "source", "metric", "line", "block", "run", "value"
        )
        df = pl.concat([plain, combined]).sort("_order")
    out: dict[tuple[str, str], list[Point]] = {}
    for config, source, metric, line, block, run, value in df.select(
        "config", "source", "metric", "line", "block", "run", "value"
    ).iter_rows():
        out.setdefault((config, metric), []).append(Point(value, source, line, run, block))
    return out


def settings_diff(settings: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Settings whose values differ between configs (launch noise left out), in key order."""
    names = list(settings)
    if len(names) < 2:
        return {}
    keys: list[str] = []
    for name in names:
        for key in settings[name]:
            if key not in keys:
                keys.append(key)
    diff: dict[str, dict[str, Any]] = {}
    for key in keys:
        if is_noise(key):
            continue
        vals = {name: settings[name].get(key) for name in names}
        present = [v for n, v in vals.items() if key in settings[n]]
        if len(present) < len(names) or any(_norm(v) != _norm(present[0]) for v in present):
            diff[key] = vals
    return diff


def _norm(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_norm(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _norm(v)) for k, v in value.items()))
    return value


def confounds(
    baseline: dict[str, Any], candidate: dict[str, Any], varies: list[str] | None
) -> list[tuple[str, Any, Any]]:
    """Settings (present on both sides) that differ beyond what the hypothesis varies.

    With `varies`, every differing setting not named is a confound; without it, differing
    settings are confounds only when more than one differs. A differing benchmark parameter
    is a confound unless `varies` names it. Launch noise never counts.
    """
    named = set(varies or [])
    differing = [
        k
        for k in baseline
        if k in candidate
        and not is_noise(k)
        and k.rsplit(".", 1)[-1] not in NOT_CONFOUNDS
        and _norm(baseline[k]) != _norm(candidate[k])
    ]
    found: list[str] = []
    for key in differing:
        leaf = key.rsplit(".", 1)[-1]
        if key in named or leaf in named:
            continue
        if key in BENCH_PARAMS or leaf in BENCH_PARAMS or varies is not None:
            found.append(key)
    if varies is None:
        others = [
            k
            for k in differing
            if k not in BENCH_PARAMS and k.rsplit(".", 1)[-1] not in BENCH_PARAMS
        ]
        if len(others) > 1:
            found.extend(others)
    ordered = [k for k in differing if k in found]
    return [(k, baseline[k], candidate[k]) for k in ordered]
