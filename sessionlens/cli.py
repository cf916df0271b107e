"""The command line: argv in, exit code out (DESIGN §1).

Owns argv parsing (typer, run with standalone_mode=False so usage errors are one line too),
stdout/stderr, atomic output files (through `_output`), refusing to overwrite inputs, and
the exit codes. It holds no analysis logic: every command calls functions that return values.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from . import __version__
from .errors import SessionlensError, UsageError

if TYPE_CHECKING:
    from .diagnostics import Diagnostic
    from .model import ParseResult

ISSUES_URL = "https://github.com/sessionlens/sessionlens/issues"

app = typer.Typer(
    name="sessionlens",
    help="Turn LLM-inference benchmark sessions (SGLang, vLLM logs) into decision reports.",
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    rich_markup_mode=None,
)


class ParseFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"
    parquet = "parquet"


SUFFIX_FORMATS = {
    ".md": "md",
    ".html": "html",
    ".htm": "html",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".txt": "table",
}


def _click_classes(name: str) -> tuple[type[BaseException], ...]:
    """Click's exception classes: typer >= 0.29 vendors click, older typer uses click itself."""
    import importlib

    found: list[type[BaseException]] = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            cls = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        if cls not in found:
            found.append(cls)
    return tuple(found)


# Control characters from file names or log text must not reach the terminal: a newline
# would break the one-line rule, an escape sequence would drive the terminal.
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0)) if c != 0x09}
_CONTROL.update({0x0A: "\\n", 0x0D: "\\r"})


def _err(line: str) -> None:
    sys.stderr.write(line.rstrip("\n").translate(_CONTROL) + "\n")


def resolve_format(
    given: str | None, out: Path | None, allowed: Sequence[str], default: str
) -> str:
    """`--format`, else the `--out` suffix, else the default; a conflict is a usage error."""
    from_suffix = SUFFIX_FORMATS.get(out.suffix.lower()) if out is not None else None
    if from_suffix is not None and from_suffix not in allowed:
        from_suffix = None
    if given is not None and from_suffix is not None and given != from_suffix:
        raise UsageError(f"--format {given} conflicts with the suffix of --out {out}")
    fmt = given or from_suffix or default
    if fmt not in allowed:
        raise UsageError(f"unknown format {fmt!r} (choose from {', '.join(allowed)})")
    return fmt


def out_path(given: str | None) -> Path | None:
    """`--out` as given: `-` is stdout (None); a path ending in `/` names a folder, which a
    report or table cannot be (`Path` would drop the slash and write a file of that name)."""
    if given is None or given == "-":
        return None
    if given.endswith(("/", os.sep)):
        raise UsageError(
            "--out ends in /, so it names a folder; give the file to write", path=given
        )
    if os.path.basename(given) in (".", ".."):
        raise UsageError("--out names a folder; give the file to write", path=given)
    return Path(given)


def _version_callback(value: bool) -> None:
    if value:
        sys.stdout.write(f"sessionlens {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version_callback,
            is_eager=True,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    """sessionlens: benchmark sessions in, decisions out."""


@app.command("parse")
def parse_cmd(
    files: Annotated[list[Path], typer.Argument(help="Log files or folders to parse.")],
    fmt: Annotated[
        ParseFormat | None,
        typer.Option("--format", "-f", help="table (default), json, csv or parquet."),
    ] = None,
    out_arg: Annotated[
        str | None, typer.Option("--out", "-o", metavar="FILE", help="Write here (atomically).")
    ] = None,
    pin: Annotated[
        str | None, typer.Option("--input-format", help="Parse every file as this format id.")
    ] = None,
) -> int:
    """Parse log files into the tidy sample table and print a summary, JSON, CSV or Parquet."""
    out = out_path(out_arg)
    from . import _discover, _launch, _memory, _output
    from ._progress import progress as progress_bar
    from .errors import InputError
    from .model import ParseResult, SampleColumns
    from .parsers import parse_path
    from .render import parsed

    kind = resolve_format(
        fmt.value if fmt else None, out, ("table", "json", "csv", "parquet"), "table"
    )
    _memory.can_start(_discover.display(str(files[0])) if len(files) == 1 else "the files")
    if kind == "parquet" and out is None:
        raise UsageError("--format parquet needs --out FILE")
    paths: list[tuple[Path, str]] = []
    diags: list[Diagnostic] = []
    for given in files:
        if not given.exists() and not given.is_symlink():
            raise UsageError("no such file or folder", path=str(given))
        if given.is_dir():
            found, walk_diags = _discover.walk(given)
            diags.extend(
                d.model_copy(update={"file": _discover.display(str(given)) + "/" + d.file})
                for d in walk_diags
            )
            if not found and not walk_diags:
                diags.append(_empty_folder(_discover.display(str(given))))
            paths.extend((p, _discover.display(str(p))) for p in found)
        else:
            paths.append((given, _discover.display(str(given))))
    if out is not None:
        _output.refuse_inputs(out, [p for p, _ in paths])
    columns = SampleColumns()
    sources = []
    total = sum(p.stat().st_size for p, _ in paths if p.is_file())
    with progress_bar(total) as advance:  # stderr, a terminal, work of over a second only
        for path, shown in paths:
            config = _discover.display(path.resolve().parent.name)
            info, file_diags = parse_path(
                path,
                config=config,
                source=shown,
                columns=columns,
                format=pin,
                progress=_memory.feeding(advance, shown),
            )
            sources.append(info)
            diags.extend(file_diags)
    _memory.done()
    columns.set_launches(_launch.of_sources(sources, columns))
    result = ParseResult(sources, diags, columns)
    for d in result.diagnostics:
        _err(str(d))
    if len(columns) == 0:
        n = len(paths)
        raise InputError(f"no sample could be read from {n} file{'s' if n != 1 else ''}")
    if kind == "parquet":
        assert out is not None
        import io

        # into memory first: polars reports a full disk as its own ComputeError, while our
        # own writes turn every OSError into one exit-2 line
        buf = io.BytesIO()
        result.columns.write_parquet(buf)  # streamed: no full string columns
        _output.write_atomic(out, buf.getvalue())
        return 0
    if kind == "csv":  # part by part: a CSV of millions of samples is never one string
        if out is not None:

            def write_parts(fh: Any) -> None:
                for text in _csv(result):
                    fh.write(text.encode())

            _output.write_atomic(out, write_parts)
        else:
            for text in _csv(result):
                _output.write_stdout(text)
        return 0
    text = {"table": parsed.to_table, "json": parsed.to_json}[kind](result)
    if out is not None:
        _output.write_atomic(out, text)
    else:
        _output.write_stdout(text)
    return 0


def _csv(result: ParseResult) -> Iterator[str]:
    """`parse --format csv` (the tidy rows, `render.parsed.to_csv`'s text) one part of the
    table at a time. Each part is made into text here and written by this (the main) thread:
    polars writing into a Python file would call it from its own threads, where SIGINT is
    not seen until polars returns."""
    first = True
    for part in result.columns.frames():
        yield part.write_csv(include_header=first)
        first = False
    if first:  # no part at all: the header alone, as an empty table writes it
        yield result.samples.write_csv()


class ReportFormat(StrEnum):
    md = "md"
    html = "html"
    json = "json"


class MathFormat(StrEnum):
    text = "text"
    json = "json"


def session_ref(logdir: Path, out: Path | None) -> str:
    """LOGDIR relative to the report's folder (DESIGN §7 header), as a posix path."""
    from ._discover import display

    base = out.resolve().parent if out is not None else Path.cwd().resolve()
    try:
        rel = os.path.relpath(logdir.resolve(), base)
    except ValueError:  # another drive
        rel = str(logdir.resolve())
    return display(Path(rel).as_posix())  # `check` reads a `\xNN` back as that byte


def _import_meanwhile(*modules: str) -> None:
    """Import modules the command needs later on a thread while the logs are read (reading
    mostly waits in polars and hashlib, which let go of the GIL). Not a daemon thread: the
    interpreter never exits in the middle of an import."""
    import importlib
    import threading

    def run() -> None:
        for name in modules:
            with contextlib.suppress(Exception):  # the real import reports any problem
                importlib.import_module(name)

    threading.Thread(target=run, name="sessionlens-import").start()


@app.command("report")
def report_cmd(
    logdir: Annotated[Path, typer.Argument(help="The session folder.")],
    out_arg: Annotated[
        str | None, typer.Option("--out", "-o", metavar="FILE", help="Write the report here.")
    ] = None,
    fmt: Annotated[
        ReportFormat | None, typer.Option("--format", "-f", help="md (default), html or json.")
    ] = None,
    baseline: Annotated[
        str | None, typer.Option("--baseline", help="Config every other config is compared with.")
    ] = None,
    hypothesis: Annotated[
        list[str] | None,
        typer.Option("--hypothesis", help='Add a claim: "B > A on METRIC by 20%". Repeatable.'),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No verdict summary.")] = False,
) -> int:
    """Analyse a session folder and write the decision report."""
    out = out_path(out_arg)
    from . import _output
    from ._discover import MANIFEST, display
    from ._memory import can_start
    from .analysis import analyze
    from .render import render_report
    from .session import load_session

    kind = resolve_format(fmt.value if fmt else None, out, ("md", "html", "json"), "md")
    can_start(display(str(logdir)))
    _import_meanwhile("scipy.special", "jinja2")
    session = load_session(
        logdir, baseline=baseline, hypotheses=hypothesis or [], progress=not quiet
    )
    if out is not None:
        _output.refuse_inputs(out, session.input_paths())
        # the non-input the session reads (DESIGN §1, §2): its manifest
        manifest = session.root / MANIFEST
        _output.refuse_inputs(out, [manifest], "the session's sessionlens.toml")
    analysis = analyze(session)
    text = render_report(analysis, kind, session_ref(logdir, out))
    if out is not None:
        _output.write_atomic(out, text)
    else:
        _output.write_stdout(text)
    for d in analysis.diagnostics:
        if d.level != "info" or not quiet:
            _err(str(d))
    if not quiet:
        for h in analysis.hypotheses:
            _err(f"{h.id} {h.verdict.upper()}: {h.reason}")
        if out is not None:
            _err(f"wrote {out}")
    return 0


class HistoryFormat(StrEnum):
    md = "md"
    html = "html"
    json = "json"
    parquet = "parquet"


@app.command("history")
def history_cmd(
    results: Annotated[Path, typer.Argument(help="The results folder (sessions over time).")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write here (a folder for parquet).")
    ] = None,
    fmt: Annotated[
        HistoryFormat | None,
        typer.Option("--format", "-f", help="md (default), html, json or parquet."),
    ] = None,
    metric: Annotated[
        list[str] | None, typer.Option("--metric", help="A metric to trend. Repeatable.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No verdict summary.")] = False,
) -> int:
    """Trend every session under a results folder: change points, the newest judged."""
    from . import _output
    from .errors import InputError
    from .history import load_history
    from .render import history as render

    kind = resolve_format(fmt.value if fmt else None, out, ("md", "html", "json", "parquet"), "md")
    if kind == "parquet" and out is None:
        raise UsageError("--format parquet needs --out DIR")
    data = load_history(results, metric or [])
    if out is not None:  # a file inside a session would become one of its inputs
        inside = [f for f in data.folders if f == out.resolve() or f in out.resolve().parents]
        if inside:
            raise UsageError("refusing to write inside a session of the history", path=str(out))
    h = data.history
    for d in h.diagnostics:
        if d.level != "info" or not quiet:
            _err(str(d))
    if not h.sessions:
        raise InputError(
            "no session found: no committed report, no sessionlens.toml", path=str(results)
        )
    if kind == "parquet":
        assert out is not None
        names = [s.session for s in h.sessions if s.analysed]
        _output.write_dataset(out, render.dataset_parts(names, data.samples))
    else:
        text = render.render_history(h, kind)
        if out is not None:
            _output.write_atomic(out, text)
        else:
            sys.stdout.write(text)
    if not quiet:
        for line in render.summary_lines(h):
            _err(line)
        if out is not None:
            _err(f"wrote {out}")
    return 0


@app.command("check")
def check_cmd(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Files or folders; only reports whose session holds them are checked."),
    ] = None,
) -> int:
    """Check that committed reports still match their sessions (a pre-commit gate)."""
    from ._memory import can_start
    from .check import run_check

    can_start("the reports' sessions")
    given = list(paths or [])
    for p in given:
        if not p.exists() and not p.is_symlink():
            raise UsageError("no such file or folder", path=str(p))
    results = run_check(given, Path.cwd())
    bad = [r for r in results if not r.ok]
    for r in bad:
        for f in r.findings:
            _err(str(f))
        if r.advice:
            _err(f"{r.report}: {r.advice}")
    if bad:
        return 1
    n = len(results)
    if n:
        sys.stdout.write(f"sessionlens check: {n} report{'s' if n != 1 else ''} fresh\n")
    return 0


@app.command("spec-math")
def spec_math_cmd(
    cycle_ms: Annotated[float, typer.Option("--cycle-ms", help="Time of one draft+verify cycle.")],
    accept_len: Annotated[
        float, typer.Option("--accept-len", help="Mean acceptance length, bonus token counted.")
    ],
    baseline_tok_s: Annotated[
        float | None, typer.Option("--baseline-tok-s", help="Non-speculative throughput.")
    ] = None,
    target_tok_s: Annotated[
        float | None, typer.Option("--target-tok-s", help="A throughput goal.")
    ] = None,
    steps: Annotated[int | None, typer.Option("--steps", help="Draft steps k.")] = None,
    measured_tok_s: Annotated[
        float | None, typer.Option("--measured-tok-s", help="Measured speculative throughput.")
    ] = None,
    fmt: Annotated[
        MathFormat, typer.Option("--format", "-f", help="text or json.")
    ] = MathFormat.text,
) -> int:
    """Speculative-decoding economics: ceiling, break-even and needed acceptance."""
    import math

    from .render.specmath_text import economics_json, economics_text
    from .specmath import economics

    for flag, number in (
        ("--cycle-ms", cycle_ms),
        ("--accept-len", accept_len),
        ("--measured-tok-s", measured_tok_s),
        ("--baseline-tok-s", baseline_tok_s),
        ("--target-tok-s", target_tok_s),
    ):
        if number is not None and not math.isfinite(number):
            raise UsageError(f"{flag} must be a finite number, not {number}")
    if cycle_ms <= 0 or accept_len <= 0:
        raise UsageError("--cycle-ms and --accept-len must be positive")
    if steps is not None and steps < 1:
        raise UsageError("--steps must be at least 1")
    e = economics(cycle_ms, accept_len, steps, measured_tok_s, baseline_tok_s, target_tok_s)
    sys.stdout.write(economics_json(e) if fmt is MathFormat.json else economics_text(e))
    return 0


def _empty_folder(path: str) -> Diagnostic:
    from . import diagnostics as dg

    return dg.make("empty-folder", path, None, "the folder holds no input file")


class Interrupted(BaseException):
    """SIGINT or SIGTERM. Not a KeyboardInterrupt: typer turns that into a silent exit 130,
    and not an Exception, so no `except Exception` on the way can swallow it."""


INTERRUPTED = "sessionlens: error: interrupted [interrupted]"


def _on_signal(signum: int, frame: FrameType | None) -> NoReturn:
    raise Interrupted(signum)


def _install_handlers() -> dict[int, Any]:
    """Our handler for SIGINT and SIGTERM (unless ignored, e.g. under nohup); old ones."""
    previous: dict[int, Any] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            old = signal.getsignal(signum)
            if old is signal.SIG_IGN:
                continue
            signal.signal(signum, _on_signal)
            previous[signum] = old
        except ValueError:  # not the main thread (tests)
            break
    return previous


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code of DESIGN §1 (never raises)."""
    args = list(sys.argv[1:] if argv is None else argv)
    from ._memory import frugal

    frugal()  # under `ulimit -v`: native libraries that reserve less (before they load)
    previous = _install_handlers()
    try:
        return _main(args)
    except (Interrupted, KeyboardInterrupt):  # raised while an error was being reported
        _err(INTERRUPTED)
        return 130
    finally:
        for signum, old in previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signum, old)


def _main(args: list[str]) -> int:
    exit_cls = _click_classes("Exit")
    abort_cls = _click_classes("Abort")
    help_cls = _click_classes("NoArgsIsHelpError")
    click_cls = _click_classes("ClickException")
    try:
        rv = app(args=args, prog_name="sessionlens", standalone_mode=False)
        if rv == 130:  # typer >= 0.29 turns a KeyboardInterrupt into a silent Exit(130)
            _err(INTERRUPTED)
        return rv if isinstance(rv, int) else 0
    except exit_cls as exc:
        code = int(getattr(exc, "exit_code", 0))
        if code == 130:
            _err(INTERRUPTED)
        return code
    except abort_cls:
        _err(INTERRUPTED)
        return 130
    except Interrupted:
        _err(INTERRUPTED)
        return 130
    except help_cls as exc:
        sys.stderr.write(exc.format_message().rstrip("\n") + "\n")  # type: ignore[attr-defined]
        return 2
    except click_cls as exc:
        msg = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
        _err(f"sessionlens: error: {msg} [usage]")
        return 2
    except SessionlensError as exc:
        for d in getattr(exc, "diagnostics", ()):  # why nothing could be read (InputError)
            _err(str(d))
        _err(exc.cli_line())
        return exc.exit_code
    except MemoryError:  # Python's own allocation failed (the guard of _memory came too late)
        return _out_of_memory()
    except ImportError as exc:  # a library could not map its code: no memory left either
        if "cannot allocate memory" not in str(exc).lower() and "failed to map" not in str(exc):
            return _internal(exc)
        return _out_of_memory()
    except KeyboardInterrupt:
        _err(INTERRUPTED)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line, where to report it, a short traceback
        return _internal(exc)


def _internal(exc: BaseException) -> int:
    _err(
        f"sessionlens: internal error: {type(exc).__name__}: {exc} "
        f"(this is a bug; please report it at {ISSUES_URL}) [internal]"
    )
    tb = traceback.format_exception(exc, limit=-4)
    sys.stderr.write("".join(tb))
    return 3


def _out_of_memory() -> int:
    from ._memory import reading

    what = reading()
    _err(
        f"sessionlens: error: not enough memory to {'read ' + what if what else 'finish'}: "
        "an allocation failed; raise the limit (ulimit -v) or read fewer or smaller files "
        "[memory]"
    )
    return 2
