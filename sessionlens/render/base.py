"""The `Renderer` protocol and the one Jinja2 environment the text renderers share.

A renderer turns a `ReportView` into a `str`; it never writes files (the CLI does). The
environment is strict (`StrictUndefined`), keeps trailing newlines, autoescapes only `.html`
templates, and offers the Markdown escape as the `md` filter (`mermaid` for chart labels).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import jinja2

    from .view import ReportView


class Renderer(Protocol):
    """One output format: a module (or object) with a format id and `render(view) -> str`."""

    format_id: str

    def render(self, view: ReportView) -> str: ...


def templates_dir() -> Path:
    """The report templates: shipped in the wheel as `sessionlens/templates`, else the checkout's.

    `templates/` sits at the repository root by contract; the wheel maps it into the package
    (pyproject's force-include), so an installed copy never looks outside the package.
    """
    package = Path(__file__).resolve().parent.parent
    shipped = package / "templates"
    if shipped.is_dir():
        return shipped
    return package.parent / "templates"


@cache
def environment() -> jinja2.Environment:
    """The shared Jinja2 environment (built once; templates are compiled on first use)."""
    import jinja2

    from .view import md, mermaid_text

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        # Markdown is escaped by the `md` filter, never by HTML rules; only pages autoescape.
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "html.j2"), default=False),
    )
    env.filters["md"] = md
    env.filters["mermaid"] = mermaid_text
    env.globals["html"] = False  # the Markdown as the HTML page embeds it (no title, verdicts)
    return env
