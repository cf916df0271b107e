"""The history renderers (DESIGN §10): Markdown, HTML, JSON; and the Parquet dataset's parts.

Each returns text (the dataset: file names and bytes) and never writes files; the CLI does.
The Markdown is `history.md.j2` over the view of `history_view.py`; the HTML page is that
Markdown rendered by markdown-it-py (raw HTML off) with each trend plot drawn as an SVG.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

from . import history_chart
from .base import environment
from .history_view import HistoryView, build
from .json import _finite
from .markdown import _tidy

if TYPE_CHECKING:
    import polars as pl
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict

    from ..history import History

FORMATS = ("md", "html", "json")


def to_markdown(view: HistoryView, html: bool = False) -> str:
    """The history in Markdown (`html`: the body of the page, which draws its own title)."""
    return _tidy(environment().get_template("history.md.j2").render(view=view, html=html))


def to_html(view: HistoryView) -> str:
    """The self-contained page: the Markdown body, each trend plot an inline SVG."""
    from markdown_it import MarkdownIt
    from markdown_it.renderer import RendererHTML

    charts = [history_chart.svg(s) for s in view.series]

    class Page(RendererHTML):
        def fence(
            self, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
        ) -> str:
            kind, _, number = tokens[idx].info.strip().partition(" trend ")
            if (
                kind == "text"
                and number.isascii()
                and number.isdigit()
                and int(number) < len(charts)
            ):
                return f'<figure class="chart trend">\n{charts[int(number)]}\n</figure>\n'
            return str(super().fence(tokens, idx, options, env))

    parser = MarkdownIt("commonmark", {"html": False}, renderer_cls=Page).enable("table")
    body = str(parser.render(to_markdown(view, html=True)))
    return environment().get_template("history.html.j2").render(view=view, body=body)


def to_json(h: History) -> str:
    """The history JSON (DESIGN §10), unrounded; non-finite floats as null."""
    doc = _finite(h.model_dump(mode="python"))
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_history(h: History, fmt: str) -> str:
    """The history in one format: md, html or json."""
    if fmt == "json":
        return to_json(h)
    renderers: dict[str, Callable[[HistoryView], str]] = {"md": to_markdown, "html": to_html}
    found = renderers.get(fmt)
    if found is None:
        raise ValueError(f"unknown history format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return found(build(h))


def summary_lines(h: History) -> list[str]:
    """The stderr summary: one line per series' newest session, regressions first."""
    return [f"{r.series} {r.words.upper()}: {r.sentence}" for r in build(h).latest]


def partition(value: str) -> str:
    """A hive partition value: percent-encoded so that `/`, `=` and `%` stay in one folder
    name (polars, DuckDB and Spark decode it)."""
    return quote(value, safe="")


def dataset_parts(
    sessions: Sequence[str], samples: Callable[[str], pl.DataFrame]
) -> Iterator[tuple[str, bytes]]:
    """The hive-partitioned dataset of the tidy samples (DESIGN §10): for each session and
    config, `session=…/config=…/part-0.parquet` and its bytes. The partition columns are in
    the paths, not in the files; text columns are plain strings (no categoricals, so every
    reader takes them)."""
    import io

    import polars as pl

    for name in sessions:
        frame = samples(name)
        frame = frame.with_columns(
            pl.col(c).cast(pl.String)
            for c, t in frame.schema.items()
            if t == pl.Categorical or isinstance(t, pl.Enum)
        )
        for (config,), part in frame.group_by("config", maintain_order=True):
            buf = io.BytesIO()
            part.drop("config").write_parquet(buf)
            path = f"session={partition(name)}/config={partition(str(config))}/part-0.parquet"
            yield path, buf.getvalue()
