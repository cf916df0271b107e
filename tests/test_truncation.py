"""Cut every fixture at every line boundary and inside numbers: nothing raises, and every
sample of a cut file is a sample (metric, value) of the uncut file (DESIGN §2)."""

from __future__ import annotations

import gzip
import math
import re
from pathlib import Path

import pytest

from sessionlens.parsers import parse_text
from tests.fixture_cases import cases, parse_case

MAX_CUTS = 1500
NUMBER = re.compile(rb"\d+(?:\.\d+)?")


def _key(metric: str, value: float) -> tuple[str, float | str]:
    return (metric, "nan" if math.isnan(value) else value)


def cut_points(data: bytes) -> list[int]:
    points = set()
    for i, byte in enumerate(data):
        if byte == 0x0A:
            points.add(i)  # the line without its newline
            points.add(i + 1)  # after the newline
    for m in NUMBER.finditer(data):
        for j in range(m.start() + 1, m.end()):
            points.add(j)
    ordered = sorted(points)
    if len(ordered) > MAX_CUTS:  # deterministic spread over the file
        step = len(ordered) / MAX_CUTS
        ordered = [ordered[int(k * step)] for k in range(MAX_CUTS)]
    return ordered


@pytest.mark.parametrize("path", cases(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cut_fixture_gives_only_true_samples(path: Path) -> None:
    full = parse_case(path)
    fid = full.sources[0].format
    assert fid is not None
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    truth = {_key(m, v) for m, v in zip(full.columns.metric, full.columns.value, strict=True)}
    for cut in cut_points(raw):
        text = raw[:cut].decode("utf-8", "replace")
        result = parse_text(text, format=fid, path=path.name.removesuffix(".gz"))
        for metric, value in zip(result.columns.metric, result.columns.value, strict=True):
            assert _key(metric, value) in truth, (
                f"cut at byte {cut}: sample {metric}={value} is not in the uncut file"
            )
