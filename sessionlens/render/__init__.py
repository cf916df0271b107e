"""Renderers: an `Analysis` in, text out (Markdown, HTML, JSON). They never write files.

`render_report` builds the one `ReportView` (render/view.py decides every rounding and
wording) and hands it to the renderer of the format; `RENDERERS` lists them in one dict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..analysis import Analysis
    from .base import Renderer
    from .view import ReportView

FORMATS = ("md", "html", "json")


class _Json:
    """The JSON renderer over a view: the contract model itself, unrounded."""

    format_id = "json"

    def render(self, view: ReportView) -> str:
        from . import json as json_renderer

        return json_renderer.render(view.analysis)


def renderers() -> dict[str, Renderer]:
    """Format id → renderer (imported on demand, so `import sessionlens` stays light)."""
    from . import html, markdown

    return {"md": markdown, "html": html, "json": _Json()}


def render_report(analysis: Analysis, fmt: str = "md", session_ref: str = ".") -> str:
    """The decision report of an analysis as text, exactly as `sessionlens report` writes it.

    `fmt` is `"md"` (Markdown with its sessionlens header line), `"html"` (one self-contained
    page: no script, no network) or `"json"` (the JSON report of DESIGN §7). `session_ref` is
    the session folder as the report's header records it, relative to the folder the report
    will be saved in (`"."`: the report sits in the session folder); `check` regenerates the
    report from it. Nothing is written. Raises `ValueError` for another format.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if fmt == "json":
        # JSON needs no view: skip building one (and loading jinja2).
        from . import json as json_renderer

        return json_renderer.render(analysis)
    found = renderers().get(fmt)
    if found is None:
        raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    from .view import build

    return found.render(build(analysis, session_ref))
