"""A straightforward hand-written SGLang Decode-line parser: the yardstick of benchmarks/run.py.

What a careful person writes in ten minutes: read line by line, keep `Decode batch` lines of
TP rank 0 (the other ranks print duplicates), split the rest of the line on ", " and each
item on its last ": ", keep a dict per line. No cleaning, no cut-line or layout rules.

    python3 benchmarks/reference_parser.py server.log
"""

from __future__ import annotations

import re
import sys
from typing import Any

_TP = re.compile(r"\bTP(\d+)\b")


def parse(path: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            at = line.find("Decode batch")
            if at < 0:
                continue
            prefix = line[:at]
            rank = _TP.search(prefix)
            if rank is not None and rank.group(1) != "0":
                continue  # a duplicate of rank 0's line
            row: dict[str, Any] = {"ts": prefix[prefix.find("[") + 1 : prefix.find("]")]}
            for item in line[at:].rstrip("\n").split(", ")[1:]:
                key, _, value = item.rpartition(": ")
                if not key:
                    continue
                try:
                    row[key] = float(value.rstrip("%"))
                except ValueError:
                    row[key] = value
            rows.append(row)
    return rows


def main(argv: list[str]) -> int:
    rows = parse(argv[0])
    values = sum(len(r) - 1 for r in rows)
    sys.stdout.write(f"{len(rows)} decode lines, {values} values\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
