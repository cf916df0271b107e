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


def render_report(analysis: Analysis, fmt: str, session_ref: str) -> str:
    """The report in one format; `session_ref` is LOGDIR relative to the report's folder."""
    if fmt == "json":
        # JSON needs no view: skip building one (and loading jinja2).
        from . import json as json_renderer

        return json_renderer.render(analysis)
    found = renderers().get(fmt)
    if found is None:
        raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    from .view import build

    return found.render(build(analysis, session_ref))
