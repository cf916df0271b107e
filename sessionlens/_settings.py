"""Setting values compared across sources: which run parameters a config's runs should share
and when two logged values are the same. Imports nothing from sessionlens, so `session`
(which merges settings) and `group` (which diffs them) both use it without an import circle.
"""

from __future__ import annotations

from typing import Any

# Run parameters a config's runs should share: pooled, different values mix different
# experiments (a request-rate sweep in one folder); `num_runs` and `warmup` do not.
POOLING_KEYS: frozenset[str] = frozenset(
    {
        "request_rate",
        "max_concurrency",
        "batch_size",
        "input_len",
        "output_len",
        "random_input_len",
        "random_output_len",
        "dataset_name",
        "max_tokens",
        "model",
        "model_path",
        "model_id",
        "served_model_name",
        "tag",
        "url",
    }
)


def same_value(a: Any, b: Any) -> bool:
    """Whether two setting values are the same (as `settings_diff` compares them)."""
    return bool(norm_value(a) == norm_value(b))


def norm_value(value: Any) -> Any:
    """A setting value in a comparable form (lists and dicts as tuples)."""
    if isinstance(value, list):
        return tuple(norm_value(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, norm_value(v)) for k, v in value.items()))
    return value
