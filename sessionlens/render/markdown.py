"""The Markdown report (DESIGN §7): `report.md.j2` and its per-section partials.

Returns text and never writes files. Every string from a log passes the templates' `md`
filter, so a `|` in a model path cannot break a table and `<script>` stays text.
"""

from __future__ import annotations

from .base import environment
from .view import ReportView

format_id = "md"

HEADER_PREFIX = "<!-- sessionlens: "
TEMPLATE = "report.md.j2"


def render(view: ReportView, html: bool = False) -> str:
    """The whole report: the header comment line, then the body. `html`: for the page,
    which draws the title and the verdicts itself."""
    text = environment().get_template(TEMPLATE).render(view=view, html=html)
    return _tidy(text)


def render_body(view: ReportView, html: bool = False) -> str:
    """The report without its first line (the machine-readable header comment)."""
    text = render(view, html)
    first, _, rest = text.partition("\n")
    if not first.startswith(HEADER_PREFIX):  # pragma: no cover - template contract
        raise AssertionError("report.md.j2 must start with the sessionlens header line")
    return rest.lstrip("\n")


def _tidy(text: str) -> str:
    """At most one blank line between blocks, and exactly one newline at the end.

    Lets the partials be written for readability (blank lines around `{% if %}` blocks)
    without the output depending on which sections are present.
    """
    lines = text.split("\n")
    out: list[str] = []
    for line in lines:
        line = line.rstrip(" ")
        if line == "" and (not out or out[-1] == ""):
            continue
        out.append(line)
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"
