"""Every log shape the benchmarks time (`benchmarks/gen_shapes.py`: duplicate ranks with their
own times and values, phase blocks on every rank, SWA pools, DP attention, 0.4.0 lines, vLLM
engine, spec, MFU and iteration lines, `/metrics` scrapes, each with a mid-file restart into
another version's layout) reads the same through the chunk path as line by line: samples,
other records, counts, embedded formats and notes (issue 22). The shapes are generated small here; speed is
measured in benchmarks/, never here."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.parsers import test_prometheus_fast as prometheus
from tests.parsers import test_sglang_server_fast as sglang
from tests.parsers import test_vllm_server_fast as vllm

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import gen_shapes


@pytest.mark.parametrize("shape", sorted(gen_shapes.SHAPES))
def test_every_shape_reads_the_same_in_chunks(
    shape: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"{shape}.log"
    gen_shapes.generate(shape, path, 700 << 10, seed=3, restart_at=0.5)
    same: Callable[[Path, pytest.MonkeyPatch, int], object] = sglang.assert_same
    if shape.startswith("vllm"):
        same = vllm.assert_same
    elif shape == "prometheus":  # `/metrics` scrapes: the Prometheus reader's bulk path
        same = prometheus.assert_same
    for chunk in (96 << 10, 1 << 20):
        same(path, monkeypatch, chunk)
