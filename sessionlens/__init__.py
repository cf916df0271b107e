"""sessionlens: benchmark sessions of LLM inference servers in, decision reports out.

The public surface is `__all__`; everything else may change. Importing the package is cheap:
polars and scipy load only when a function needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Analysis",
    "Diagnostic",
    "InputError",
    "ManifestError",
    "ParseError",
    "ParseResult",
    "RenderError",
    "Session",
    "SessionlensError",
    "SourceInfo",
    "UsageError",
    "__version__",
    "analyze",
    "load_session",
    "parse_file",
    "parse_text",
    "render_report",
]

if TYPE_CHECKING:
    from .analysis import Analysis, analyze
    from .diagnostics import Diagnostic
    from .errors import (
        InputError,
        ManifestError,
        ParseError,
        RenderError,
        SessionlensError,
        UsageError,
    )
    from .model import ParseResult, SourceInfo
    from .parsers import parse_file, parse_text
    from .render import render_report
    from .session import Session, load_session

_LAZY = {
    "Diagnostic": "diagnostics",
    "InputError": "errors",
    "ManifestError": "errors",
    "ParseError": "errors",
    "RenderError": "errors",
    "SessionlensError": "errors",
    "UsageError": "errors",
    "ParseResult": "model",
    "SourceInfo": "model",
    "parse_file": "parsers",
    "parse_text": "parsers",
    "Analysis": "analysis",
    "analyze": "analysis",
    "Session": "session",
    "load_session": "session",
    "render_report": "render",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sessionlens' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
