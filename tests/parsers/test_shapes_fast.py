"""Every log shape the benchmarks time (`benchmarks/gen_shapes.py`: duplicate ranks with their
own times and values, phase blocks on every rank, SWA pools, DP attention, 0.4.0 lines, vLLM
engine, spec, MFU and iteration lines, `/metrics` scrapes, each with a mid-file restart into
another version's layout) reads the same through the chunk path as line by line: samples,
other records, counts, embedded formats and notes (issue 22). So does every variant of each
(`benchmarks/variants.py`: a collector's prefix, `grep -n`, a gutter, trimmed blanks, a
newer version's field, cut lines, request logs, `/federate` timestamps ...). The shapes are
generated small here; speed is measured in benchmarks/, never here."""

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
import variants


def _same(shape: str) -> Callable[[Path, pytest.MonkeyPatch, int], object]:
    if shape.startswith("vllm"):
        return vllm.assert_same
    if shape == "prometheus":  # `/metrics` scrapes: the Prometheus reader's bulk path
        return prometheus.assert_same
    return sglang.assert_same


@pytest.mark.parametrize("shape", sorted(gen_shapes.SHAPES))
def test_every_shape_reads_the_same_in_chunks(
    shape: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / f"{shape}.log"
    gen_shapes.generate(shape, path, 700 << 10, seed=3, restart_at=0.5)
    for chunk in (96 << 10, 1 << 20):
        _same(shape)(path, monkeypatch, chunk)


@pytest.mark.parametrize(
    ("shape", "variant"),
    [(s, v) for s in sorted(gen_shapes.SHAPES) for v in variants.table(s) if v != "none"],
)
def test_every_variant_of_every_shape_reads_the_same_in_chunks(
    shape: str, variant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path / f"{shape}.log"
    gen_shapes.generate(shape, base, 400 << 10, seed=5, restart_at=0.5)
    path = tmp_path / f"{shape}-{variant}.log"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        for line in variants.rewritten(shape, variant, base.read_bytes()):
            fh.write(line + "\n")
    _same(shape)(path, monkeypatch, 64 << 10)
