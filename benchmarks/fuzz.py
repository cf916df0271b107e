"""Coverage-guided fuzzing of every parser with atheris (libFuzzer): arbitrary bytes must
never raise, and whatever is read must be well-formed (known metrics and codes, one-line
diagnostics, line numbers inside the file).

    pip install '.[fuzz]'
    python3 benchmarks/fuzz.py --seconds 60                  # each parser for 60 s in turn
    python3 benchmarks/fuzz.py --seconds 600 --parser vllm-server

Each parser runs in its own process (libFuzzer exits when its time is up), seeded with the
fixtures of its format. Inputs go through the real file path (gzip, head sniffing, non-UTF-8
bytes), parsed once pinned to the parser and once with detection. A failing input is saved
under --artifacts (default: a temp folder) and the run exits 1.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ROOT / "fixtures" / "formats"
SUFFIXES = (".expected.csv", ".diag.txt", ".got")


def check(result: Any) -> None:
    """What every parse must give, whatever the input."""
    from sessionlens import metrics
    from sessionlens.diagnostics import CODES, LEVEL_ORDER
    from sessionlens.parsers import PARSERS

    info = result.sources[0]
    assert info.format is None or info.format in PARSERS, info.format
    for metric in set(result.columns.metric):
        assert metrics.is_known(metric), f"unregistered metric {metric!r}"
    for line in result.columns.line:
        assert 1 <= line <= max(info.lines, 1), f"line {line} of {info.lines}"
    for block in result.columns.block:
        assert block is None or block >= 0, block
    for value in result.columns.value:
        assert isinstance(value, float), value
    for d in result.diagnostics:
        assert d.code in CODES, f"code {d.code!r} is not in the catalog"
        assert d.level in LEVEL_ORDER, d.level
        assert "\n" not in str(d), f"diagnostic spans lines: {d!s}"


def one_input(data: bytes, fid: str, scratch: Path) -> None:
    """Parse `data` as a file, pinned to `fid` and detected; raise on any fault."""
    from sessionlens.parsers import parse_file

    name = "input.jsonl" if data[:1] == b"{" else "input.log"
    path = scratch / name
    path.write_bytes(data)
    try:
        check(parse_file(path, format=fid))
        check(parse_file(path))
    finally:
        path.unlink()


def seeds(fid: str, into: Path) -> int:
    """Copy the fixtures of a format into a corpus folder; their count."""
    into.mkdir(parents=True, exist_ok=True)
    n = 0
    for case in sorted((FORMATS / fid).iterdir()):
        if case.is_file() and not case.name.endswith(SUFFIXES):
            shutil.copyfile(case, into / case.name)
            n += 1
    return n


def child(fid: str, seconds: int, artifacts: Path, corpus: Path) -> None:
    """Run libFuzzer on one parser (this process ends when libFuzzer does)."""
    import atheris

    sys.path.insert(0, str(ROOT))
    with atheris.instrument_imports(include=["sessionlens"]):
        import sessionlens.parsers  # noqa: F401

    scratch = Path(tempfile.mkdtemp(prefix=f"sessionlens-fuzz-{fid}-"))

    def target(data: bytes) -> None:
        one_input(data, fid, scratch)

    argv = [
        sys.argv[0],
        f"-max_total_time={seconds}",
        "-timeout=20",  # seconds for one input: a hang is a finding too
        "-rss_limit_mb=4096",
        "-max_len=65536",
        "-print_final_stats=1",
        f"-artifact_prefix={artifacts}/{fid}-",
        str(corpus),
    ]
    atheris.Setup(argv, target)
    atheris.Fuzz()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=60, help="fuzzing time per parser")
    ap.add_argument("--parser", action="append", help="a format id (repeatable; default: all)")
    ap.add_argument("--artifacts", type=Path, help="where failing inputs are saved")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        child(args.child, args.seconds, args.artifacts, args.corpus)
        return 0  # not reached: libFuzzer exits

    try:
        import atheris  # noqa: F401
    except ImportError:
        print("fuzz: atheris is not installed; run: pip install '.[fuzz]'", file=sys.stderr)
        return 2
    sys.path.insert(0, str(ROOT))
    from sessionlens.parsers import PARSERS

    chosen = args.parser or sorted(PARSERS)
    unknown = [p for p in chosen if p not in PARSERS]
    if unknown:
        print(f"fuzz: unknown parser(s) {', '.join(unknown)}; known: {', '.join(sorted(PARSERS))}")
        return 2
    artifacts = (args.artifacts or Path(tempfile.mkdtemp(prefix="sessionlens-fuzz-"))).resolve()
    artifacts.mkdir(parents=True, exist_ok=True)
    failed: list[str] = []
    for fid in chosen:
        corpus = Path(tempfile.mkdtemp(prefix=f"sessionlens-corpus-{fid}-"))
        n = seeds(fid, corpus)
        print(f"fuzz: {fid}: {args.seconds} s from {n} seed files", flush=True)
        cmd = [
            sys.executable,
            __file__,
            "--child",
            fid,
            "--seconds",
            str(args.seconds),
            "--artifacts",
            str(artifacts),
            "--corpus",
            str(corpus),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        stats = [ln for ln in proc.stderr.splitlines() if ln.startswith(("stat::", "Done "))]
        print("\n".join(f"  {ln}" for ln in stats), flush=True)
        if proc.returncode != 0:
            failed.append(fid)
            # libFuzzer reports on stderr; atheris prints the Python traceback on stdout
            tail = "\n".join(proc.stderr.splitlines()[-12:])
            trace = "\n".join(proc.stdout.splitlines()[-40:])
            print(f"fuzz: {fid} FAILED (exit {proc.returncode}):\n{trace}\n{tail}", file=sys.stderr)
            for crash in sorted(artifacts.glob(f"{fid}-*")):
                data = crash.read_bytes()
                if len(data) <= 16384:  # so that a CI log alone reproduces it
                    b64 = base64.b64encode(data).decode()
                    print(f"fuzz: {crash.name} as base64:\n{b64}", file=sys.stderr)
        shutil.rmtree(corpus, ignore_errors=True)
    if failed:
        print(f"fuzz: failing inputs are in {artifacts}: {', '.join(failed)}", file=sys.stderr)
        return 1
    if args.artifacts is None:
        shutil.rmtree(artifacts, ignore_errors=True)
    print(f"fuzz: {len(chosen)} parser(s), {args.seconds} s each: no failure")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
