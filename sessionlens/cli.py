"""The command line: argv in, exit code out (DESIGN §1).

Owns argv parsing (typer, run with standalone_mode=False so usage errors are one line too),
stdout/stderr, atomic output files (through `_output`), refusing to overwrite inputs, and
the exit codes. It holds no analysis logic: every command calls functions that return values.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import traceback
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
import typer.core

from . import __version__
from .errors import SessionlensError, UsageError, did_you_mean

if TYPE_CHECKING:
    from .diagnostics import Diagnostic
    from .model import ParseResult

ISSUES_URL = "https://github.com/sessionlens/sessionlens/issues"

app = typer.Typer(
    name="sessionlens",
    help="Turn LLM-inference benchmark sessions (SGLang, vLLM logs) into decision reports.",
    add_completion=True,  # --install-completion, --show-completion (DESIGN §1)
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


PARSE_FORMATS = ("table", "json", "csv", "parquet")
REPORT_FORMATS = ("md", "html", "json")
HISTORY_FORMATS = ("md", "html", "json", "parquet")
MATH_FORMATS = ("text", "json")


def _choices(values: Sequence[str]) -> Any:
    """Shell completion of a fixed set of values."""

    def complete(incomplete: str) -> list[str]:
        return [v for v in values if v.startswith(incomplete)]

    return complete


def _format_option(help_text: str, choices: Sequence[str]) -> Any:
    """`-f/--format FORMAT` with its choices in the help and in shell completion."""
    return typer.Option(
        "--format", "-f", metavar="FORMAT", help=help_text, autocompletion=_choices(choices)
    )


def _format_ids(incomplete: str) -> list[str]:
    from .parsers import PARSERS

    return [f for f in sorted(PARSERS) if f.startswith(incomplete)]


QUIET_HELP = "No progress bar, summary or warnings; errors still print."


SUFFIX_FORMATS = {
    ".md": "md",
    ".html": "html",
    ".htm": "html",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
    ".txt": "table",
}


class _PlainCommand(typer.core.TyperCommand):
    """A command whose help shows plain metavars (DESIGN §1): `LOGDIR`, `FILE...`, never
    `{logdir}` or `LOGDIR <path>` (typer's own rendering of arguments)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.param_type_name == "argument":  # the metavar says it all
                param.display_type_rich = lambda ctx: None  # type: ignore[attr-defined]

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = ["[OPTIONS]"] if any(p.param_type_name == "option" for p in self.params) else []
        for param in self.params:
            if param.param_type_name == "argument":
                name = param.metavar or (param.name or "ARG").upper()
                optional = not param.required and not name.startswith("[")
                pieces.append(f"[{name}]" if optional else name)
        return pieces


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


# The lines printed of one file's same warning or error (an error storm repeats one line
# every batch); the others are counted in one line after the rest.
SAID_TIMES = 3


def said_once(diags: Iterable[Diagnostic]) -> Iterator[str]:
    """The diagnostics' lines, in order, each file's same diagnostic (level, code and
    message) printed `SAID_TIMES` times at most; then, for each one said more often, one
    line at its last place that counts the lines not printed (the JSON outputs and the
    report keep every one)."""
    times: dict[tuple[str, str, str, str], int] = {}
    last: dict[tuple[str, str, str, str], Diagnostic] = {}
    for d in diags:
        key: tuple[str, str, str, str] = (d.file, d.level, d.code, d.message)
        times[key] = times.get(key, 0) + 1
        last[key] = d
        if times[key] <= SAID_TIMES:
            yield str(d)
    for key, said in times.items():
        if said > SAID_TIMES:
            more = said - SAID_TIMES
            yield str(
                last[key].model_copy(
                    update={
                        "message": f"{last[key].message} ({more} more time"
                        f"{'s' if more != 1 else ''} up to this line, not printed)"
                    }
                )
            )


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
        raise UsageError(
            f"--format {fmt!r} is not one of {', '.join(allowed)}{did_you_mean(fmt, allowed)}"
        )
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


# `\b`: click keeps the lines as they are (no wrapping inside a format id)
FORMAT_IDS_EPILOG = """\b
Format ids (--input-format):
  aiperf, bench-stdout, guidellm, phase-timing, prometheus,
  sglang-bench-offline, sglang-bench-one-batch, sglang-bench-serving,
  sglang-server, trtllm-bench, vllm-bench-result, vllm-bench-serve,
  vllm-server"""


@app.command("parse", cls=_PlainCommand, epilog=FORMAT_IDS_EPILOG)
def parse_cmd(
    files: Annotated[
        list[Path], typer.Argument(metavar="FILE...", help="Log files or folders to parse.")
    ],
    fmt: Annotated[
        str | None,
        _format_option(
            "table (default), json, csv or parquet (parquet needs --out).", PARSE_FORMATS
        ),
    ] = None,
    out_arg: Annotated[
        str | None,
        typer.Option("--out", "-o", metavar="FILE", help="Write here (atomically); - is stdout."),
    ] = None,
    pin: Annotated[
        str | None,
        typer.Option(
            "--input-format",
            metavar="ID",
            help="Parse every file as this format id (the ids are listed below).",
            autocompletion=_format_ids,
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)] = False,
) -> int:
    """Parse log files into the tidy sample table and print a summary, JSON, CSV or Parquet."""
    out = out_path(out_arg)
    from . import _discover, _launch, _memory, _output
    from ._progress import progress as progress_bar
    from .errors import InputError
    from .model import ParseResult, SampleColumns
    from .parsers import parse_path
    from .render import parsed

    kind = resolve_format(fmt, out, PARSE_FORMATS, "table")
    if pin is not None:
        from .parsers import PARSERS

        if pin not in PARSERS:
            raise UsageError(
                f"--input-format {pin!r} is no format id (known: {', '.join(sorted(PARSERS))})"
                + did_you_mean(pin, PARSERS)
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
    # stderr, a terminal, work of over a second only
    with progress_bar(total, enabled=not quiet) as advance:
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
    for line in said_once(
        d for d in result.diagnostics if d.level == "error" or not quiet or len(columns) == 0
    ):
        _err(line)
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
        with buf.getbuffer() as view:
            _output.write_atomic(out, lambda fh: fh.write(view))  # not copied again
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


@app.command("report", cls=_PlainCommand)
def report_cmd(
    logdir: Annotated[Path, typer.Argument(metavar="LOGDIR", help="The session folder.")],
    out_arg: Annotated[
        str | None,
        typer.Option(
            "--out", "-o", metavar="FILE", help="Write the report here (atomically); - is stdout."
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        _format_option("md (default), html or json; else from the --out suffix.", REPORT_FORMATS),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline", metavar="CONFIG", help="Config every other config is compared with."
        ),
    ] = None,
    hypothesis: Annotated[
        list[str] | None,
        typer.Option(
            "--hypothesis",
            metavar="CLAIM",
            help='A claim: "B > A on METRIC by 20%" (< for a decrease; METRIC defaults to '
            "throughput_tok_s, the threshold to 2%; the % is required; "
            '"at KEY=VALUE" names a load point). Repeatable.',
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)] = False,
) -> int:
    """Analyse a session folder and write the decision report."""
    out = out_path(out_arg)
    from . import _output
    from ._discover import MANIFEST, display
    from ._memory import can_start
    from .analysis import analyze
    from .render import render_report
    from .session import load_session

    kind = resolve_format(fmt, out, REPORT_FORMATS, "md")
    can_start(display(str(logdir)))
    _import_meanwhile("scipy.special", "jinja2")
    session = load_session(
        logdir, baseline=baseline, hypotheses=hypothesis or [], progress=not quiet, fold=True
    )
    if out is not None:
        _output.refuse_inputs(out, session.input_paths())
        # the non-input the session reads (DESIGN §1, §2): its manifest
        manifest = session.root / MANIFEST
        _output.refuse_inputs(out, [manifest], "the session's sessionlens.toml")
    if not quiet:
        for d in session.notices:  # files that are no inputs, named (not in the report)
            _err(str(d))
    analysis = analyze(session, consume=True)  # the samples are not used again
    text = render_report(analysis, kind, session_ref(logdir, out))
    if out is not None:
        _output.write_atomic(out, text)
    else:
        _output.write_stdout(text)
    for line in said_once(d for d in analysis.diagnostics if d.level == "error" or not quiet):
        _err(line)
    if not quiet:
        for h in analysis.hypotheses:
            _err(f"{h.id} {h.verdict.upper()}: {h.reason}")
        if out is not None:
            _err(f"wrote {out}")
    return 0


@app.command("history", cls=_PlainCommand)
def history_cmd(
    results: Annotated[
        Path,
        typer.Argument(metavar="RESULTS", help="The results folder (sessions over time)."),
    ],
    out_arg: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            metavar="FILE",
            help="Write here (atomically; a folder DIR/ for parquet); - is stdout.",
        ),
    ] = None,
    fmt: Annotated[
        str | None,
        _format_option(
            "md (default), html, json or parquet (a dataset folder, needs --out DIR/).",
            HISTORY_FORMATS,
        ),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option("--metric", metavar="METRIC", help="A metric to trend. Repeatable."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help=QUIET_HELP)] = False,
) -> int:
    """Trend every session under a results folder: change points, the newest judged."""
    from . import _output
    from .errors import InputError
    from .history import load_history
    from .render import history as render

    if out_arg is not None and out_arg != "-" and out_arg.endswith(("/", os.sep)):
        out: Path | None = Path(out_arg)  # a dataset folder
        kind = resolve_format(fmt, None, HISTORY_FORMATS, "md")
        if kind != "parquet":
            out = out_path(out_arg)  # a report is a file: the usage error
    else:
        out = out_path(out_arg)
        kind = resolve_format(fmt, out, HISTORY_FORMATS, "md")
    if kind == "parquet" and out is None:
        raise UsageError("--format parquet needs --out DIR (a dataset folder, not stdout)")
    data = load_history(results, metric or [])
    if out is not None:  # a file inside a session would become one of its inputs
        inside = [f for f in data.folders if f == out.resolve() or f in out.resolve().parents]
        if inside:
            raise UsageError("refusing to write inside a session of the history", path=str(out))
    h = data.history
    for d in h.diagnostics:
        if d.level == "error" or not quiet:
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
            _output.write_stdout(text)
    if not quiet:
        for line in render.summary_lines(h):
            _err(line)
        if out is not None:
            _err(f"wrote {out}")
    return 0


@app.command("check", cls=_PlainCommand)
def check_cmd(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[PATH]...",
            help="Files or folders: the reports under them and those whose session holds them "
            "are checked (default: inside a commit, what it stages; else every report here).",
        ),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="No summary line; findings still print.")
    ] = False,
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
    if n and not quiet:
        sys.stdout.write(f"sessionlens check: {n} report{'s' if n != 1 else ''} fresh\n")
    return 0


@app.command("spec-math", cls=_PlainCommand)
def spec_math_cmd(
    cycle_ms: Annotated[
        float,
        typer.Option("--cycle-ms", metavar="MS", help="Time of one draft+verify cycle, in ms."),
    ],
    accept_len: Annotated[
        float,
        typer.Option(
            "--accept-len",
            metavar="TOKENS",
            help="Mean acceptance length per cycle, bonus token counted (so at least 1).",
        ),
    ],
    baseline_tok_s: Annotated[
        float | None,
        typer.Option("--baseline-tok-s", metavar="TOK/S", help="Non-speculative throughput."),
    ] = None,
    target_tok_s: Annotated[
        float | None, typer.Option("--target-tok-s", metavar="TOK/S", help="A throughput goal.")
    ] = None,
    steps: Annotated[
        int | None, typer.Option("--steps", metavar="K", help="Draft steps k.")
    ] = None,
    measured_tok_s: Annotated[
        float | None,
        typer.Option("--measured-tok-s", metavar="TOK/S", help="Measured speculative throughput."),
    ] = None,
    fmt: Annotated[
        str,
        _format_option("text (default) or json.", MATH_FORMATS),
    ] = "text",
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Accepted for symmetry: the result is the output."),
    ] = False,
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
    kind = resolve_format(fmt, None, MATH_FORMATS, "text")
    if cycle_ms <= 0:
        raise UsageError(f"--cycle-ms must be positive, not {cycle_ms:g}")
    if accept_len < 1:
        raise UsageError(
            f"--accept-len counts the bonus token, so it is at least 1, not {accept_len:g} "
            "(an acceptance rate is no length: length = 1 + rate × steps)"
        )
    if steps is not None and steps < 1:
        raise UsageError("--steps must be at least 1")
    e = economics(cycle_ms, accept_len, steps, measured_tok_s, baseline_tok_s, target_tok_s)
    sys.stdout.write(economics_json(e) if kind == "json" else economics_text(e))
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


# Allocations between two collections of the cycle collector's youngest generation, while
# the CLI runs (Python's default: 700). Each collection of the oldest one walks every live
# object, and a log of many diagnostics holds hundreds of thousands: an error storm of
# 170,000 errors spent 2.3 s of 7.8 s collecting. Cycles wait a little longer; nothing big
# lives in one (numpy's and polars' buffers are freed by their counts). Restored after.
GC_FIRST = 10_000


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code of DESIGN §1 (never raises)."""
    args = list(sys.argv[1:] if argv is None else argv)
    from ._memory import frugal

    frugal()  # under `ulimit -v`: native libraries that reserve less (before they load)
    previous = _install_handlers()
    collect_every = gc.get_threshold()
    gc.set_threshold(GC_FIRST, *collect_every[1:])
    try:
        return _main(args)
    except (Interrupted, KeyboardInterrupt):  # raised while an error was being reported
        _err(INTERRUPTED)
        return 130
    finally:
        gc.set_threshold(*collect_every)
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
