"""The command line: argv in, exit code out (DESIGN §1).

Owns argv parsing (typer, run with standalone_mode=False so usage errors are one line too),
stdout/stderr, atomic output files (through `_output`), refusing to overwrite inputs, and
the exit codes. It holds no analysis logic: every command calls functions that return values.
"""

from __future__ import annotations

import signal
import sys
import traceback
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from . import __version__
from .errors import SessionlensError, UsageError

if TYPE_CHECKING:
    from .diagnostics import Diagnostic

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


def _err(line: str) -> None:
    sys.stderr.write(line.rstrip("\n") + "\n")


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
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write here (atomically).")
    ] = None,
    pin: Annotated[
        str | None, typer.Option("--input-format", help="Parse every file as this format id.")
    ] = None,
) -> int:
    """Parse log files into the tidy sample table and print a summary, JSON, CSV or Parquet."""
    from . import _discover, _output
    from .errors import InputError
    from .model import ParseResult, SampleColumns
    from .parsers import parse_path
    from .render import parsed

    kind = resolve_format(
        fmt.value if fmt else None, out, ("table", "json", "csv", "parquet"), "table"
    )
    if kind == "parquet" and out is None:
        raise UsageError("--format parquet needs --out FILE")
    paths: list[tuple[Path, str]] = []
    diags: list[Diagnostic] = []
    for given in files:
        if not given.exists() and not given.is_symlink():
            raise UsageError("no such file or folder", path=str(given))
        if given.is_dir():
            found, walk_diags = _discover.walk(given)
            diags.extend(d.model_copy(update={"file": str(given / d.file)}) for d in walk_diags)
            if not found and not walk_diags:
                diags.append(_empty_folder(str(given)))
            paths.extend((p, str(p)) for p in found)
        else:
            paths.append((given, str(given)))
    if out is not None:
        _output.refuse_inputs(out, [p for p, _ in paths])
    columns = SampleColumns()
    sources = []
    for path, shown in paths:
        config = path.resolve().parent.name
        info, file_diags = parse_path(
            path, config=config, source=shown, columns=columns, format=pin
        )
        sources.append(info)
        diags.extend(file_diags)
    result = ParseResult(sources, diags, columns)
    for d in result.diagnostics:
        _err(str(d))
    if len(columns) == 0:
        n = len(paths)
        raise InputError(f"no sample could be read from {n} file{'s' if n != 1 else ''}")
    if kind == "parquet":
        assert out is not None
        frame = result.samples
        _output.write_atomic(out, lambda tmp: frame.write_parquet(tmp))
        return 0
    text = {"table": parsed.to_table, "json": parsed.to_json, "csv": parsed.to_csv}[kind](result)
    if out is not None:
        _output.write_atomic(out, text)
    else:
        sys.stdout.write(text)
    return 0


def _empty_folder(path: str) -> Diagnostic:
    from . import diagnostics as dg

    return dg.make("empty-folder", path, None, "the folder holds no input file")


def _on_sigterm(signum: int, frame: FrameType | None) -> NoReturn:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code of DESIGN §1 (never raises)."""
    args = list(sys.argv[1:] if argv is None else argv)
    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (tests)
        previous = None
    exit_cls = _click_classes("Exit")
    abort_cls = _click_classes("Abort")
    help_cls = _click_classes("NoArgsIsHelpError")
    click_cls = _click_classes("ClickException")
    try:
        rv = app(args=args, prog_name="sessionlens", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except exit_cls as exc:
        return int(getattr(exc, "exit_code", 0))
    except abort_cls:
        _err("sessionlens: error: interrupted [interrupted]")
        return 130
    except help_cls as exc:
        _err(exc.format_message())  # type: ignore[attr-defined]
        return 2
    except click_cls as exc:
        msg = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
        _err(f"sessionlens: error: {msg} [usage]")
        return 2
    except SessionlensError as exc:
        _err(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        _err("sessionlens: error: interrupted [interrupted]")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug: one line, where to report it, a short traceback
        _err(
            f"sessionlens: internal error: {type(exc).__name__}: {exc} "
            f"(this is a bug; please report it at {ISSUES_URL}) [internal]"
        )
        tb = traceback.format_exception(exc, limit=-4)
        sys.stderr.write("".join(tb))
        return 3
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
