"""The HTML page (DESIGN §7): the Markdown body rendered by markdown-it-py, one file.

Raw HTML is off (the commonmark preset turns it on), tables are on; the Mermaid fence is
replaced by the SVG of `chart.py`; the header facts go into `<meta name="sessionlens">`.
Returns text and never writes files; log text reaches the page only escaped.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML

from . import chart, markdown
from .base import environment
from .view import ReportView

if TYPE_CHECKING:
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict

format_id = "html"

TEMPLATE = "page.html.j2"


class _PageRenderer(RendererHTML):
    """markdown-it's HTML renderer, with the Mermaid fence drawn as sessionlens's SVG."""

    def fence(self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
        drawing = env.get("sessionlens_chart") if isinstance(env, dict) else None
        info = tokens[idx].info.strip()
        if info == "mermaid" and drawing:
            return f'<figure class="chart">\n{drawing}\n</figure>\n'
        curves = env.get("sessionlens_curves") if isinstance(env, dict) else None
        if info == "text sweep" and curves:
            return f'<figure class="chart curves">\n{curves}\n</figure>\n'
        decision = env.get("sessionlens_decision") if isinstance(env, dict) else None
        if info == "text decision" and decision:
            return f'<figure class="chart decision">\n{decision}\n</figure>\n'
        return super().fence(tokens, idx, options, env)


def body_html(view: ReportView) -> str:
    """The report body as HTML, the Mermaid block swapped for an inline SVG chart."""
    parser = MarkdownIt("commonmark", {"html": False}, renderer_cls=_PageRenderer).enable("table")
    drawing = chart.svg(view.chart) if view.chart is not None else ""
    curves = chart.curves_svg(view.sweep) if view.sweep is not None else ""
    decision = chart.decision_svg(view.decision, view.level) if view.decision else ""
    env = {
        "sessionlens_chart": drawing,
        "sessionlens_curves": curves,
        "sessionlens_decision": decision,
    }
    return str(parser.render(markdown.render_body(view, html=True), env))


def render(view: ReportView) -> str:
    """The self-contained page."""
    meta = json.dumps(view.header, ensure_ascii=False, separators=(",", ":"))
    page = environment().get_template(TEMPLATE)
    return page.render(view=view, body=body_html(view), meta=meta)
