"""Discovery of format fixtures and their expected tidy rows and diagnostics."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from sessionlens.model import ParseResult
from sessionlens.parsers import parse_file

FORMATS = Path(__file__).resolve().parent.parent / "fixtures" / "formats"
SUFFIXES = (".expected.csv", ".diag.txt", ".got")
ROW_COLUMNS = ("line", "block", "run", "rank", "ts", "metric", "value")


def cases() -> list[Path]:
    """Every fixture input under fixtures/formats/<format-id>/, sorted."""
    out = []
    for path in sorted(FORMATS.glob("*/*")):
        if path.is_file() and not path.name.endswith(SUFFIXES) and path.name != "README.md":
            out.append(path)
    return out


def parse_case(path: Path) -> ParseResult:
    """Parse a fixture with its path shown relative to its format folder."""
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        return parse_file(path.name)
    finally:
        os.chdir(cwd)


def _cell(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v)


def rows_csv(result: ParseResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(ROW_COLUMNS)
    for row in result.columns.rows():
        w.writerow([_cell(row[c]) for c in ROW_COLUMNS])
    return buf.getvalue()


def diag_text(result: ParseResult) -> str:
    return "".join(f"{d}\n" for d in result.diagnostics)


def values(result: ParseResult, metric: str) -> list[float]:
    """The values of one metric, in file order (the parser tests' usual question)."""
    c = result.columns
    return [v for m, v in zip(c.metric, c.value, strict=True) if m == metric]
