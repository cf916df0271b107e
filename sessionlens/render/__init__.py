"""Renderers: an `Analysis` in, text out (Markdown, HTML, JSON). They never write files."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..analysis import Analysis

FORMATS = ("md", "html", "json")


def render_report(analysis: Analysis, fmt: str, session_ref: str) -> str:
    """The report in one format; `session_ref` is LOGDIR relative to the report's folder."""
    if fmt == "json":
        from . import json as json_renderer

        return json_renderer.render(analysis)
    raise NotImplementedError(f"the {fmt} report is not available yet")
