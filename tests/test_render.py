"""The Markdown and HTML reports: header contract, escaping, tables, chart, notes, economics.

Reports are rendered from a real session (bench-stdout fixture copies → parse → analyze), with
hostile text from logs and the manifest: `|`, `<script>`, Markdown punctuation, `-->`.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from sessionlens import specmath
from sessionlens.analysis import Analysis, MetricSummary, analyze, economics_result
from sessionlens.render import render_report
from sessionlens.render import view as v
from sessionlens.render.chart import svg
from sessionlens.session import load_session

from .conftest import FIXTURES

SEED = FIXTURES / "formats" / "bench-stdout" / "seed-truncated.log"
SCRIPT = "<script>alert(1)</script>"
MODEL = f"/models/Kimi|K2 {SCRIPT}"
BASE_RUNS = ("82.4", "83.1", "82.0", "82.9", "82.6")
SEED_RUNS = ("60.4", "65.5", "50.9", "61.5", "59.5")
PREFILL_RUNS = ("59.8", "61.0", "60.2", "59.1", "60.7")


def _bench(values: tuple[str, ...]) -> str:
    text = SEED.read_text(encoding="utf-8")
    for old, new in zip(SEED_RUNS, values, strict=True):
        text = text.replace(f"= {old} tok/s", f"= {new} tok/s")
    return text


def make_session(root: Path) -> Path:
    """Three configs; a source path with `|` and `<script>`; hostile labels and settings."""
    (root / "base").mkdir(parents=True)
    (root / "eagle3-prefill").mkdir()
    (root / "eagle3-decode").mkdir()
    (root / "base" / "bench|<script>.log").write_text(_bench(BASE_RUNS), encoding="utf-8")
    (root / "eagle3-prefill" / "bench.log").write_text(_bench(PREFILL_RUNS), encoding="utf-8")
    (root / "eagle3-decode" / "bench.log").write_text(_bench(SEED_RUNS), encoding="utf-8")
    (root / "sessionlens.toml").write_text(
        f"""
title = "EAGLE-3 | {SCRIPT} *verify*"
target_tok_s = 150

[configs.base]
label = "no speculation | `tick` [x](y) _u_ {SCRIPT}"
settings = {{ model_path = "{MODEL}", speculative_attention_mode = "none" }}

[configs.eagle3-prefill]
settings = {{ model_path = "{MODEL}", speculative_attention_mode = "prefill" }}

[configs.eagle3-decode]
settings = {{ model_path = "/models/other|model", speculative_attention_mode = "decode" }}

[[hypotheses]]
claim = "decode mode {SCRIPT} | raises throughput --> by 35%"
metric = "throughput_tok_s"
baseline = "eagle3-prefill"
candidate = "eagle3-decode"
direction = "increase"
min_effect = 0.35
varies = ["speculative_attention_mode"]
""",
        encoding="utf-8",
    )
    return root


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    root = make_session(tmp_path_factory.mktemp("render") / "session")
    return analyze(load_session(root, hypotheses=["eagle3-prefill > base by 2%"]))


@pytest.fixture(scope="module")
def report_md(analysis: Analysis) -> str:
    return render_report(analysis, "md", "../session")


@pytest.fixture(scope="module")
def report_html(analysis: Analysis) -> str:
    return render_report(analysis, "html", "../session")


def _tables(text: str) -> list[list[list[str]]]:
    """Every table as rows of cell texts (header row first), via markdown-it-py's tokens."""
    tokens = MarkdownIt("commonmark", {"html": False}).enable("table").parse(text)
    tables: list[list[list[str]]] = []
    for tok in tokens:
        if tok.type == "table_open":
            tables.append([])
        elif tok.type == "tr_open":
            tables[-1].append([])
        elif tok.type == "inline" and tables and tables[-1] and tok.level >= 4:
            tables[-1][-1].append(tok.content)
    return tables


# ---------------------------------------------------------------- header


def test_header_comment_is_one_line_of_json_in_contract_order(
    analysis: Analysis, report_md: str
) -> None:
    first = report_md.split("\n", 1)[0]
    m = re.fullmatch(r"<!-- sessionlens: (.*) -->", first)
    assert m is not None, first
    facts = json.loads(m.group(1))
    assert list(facts) == ["sessionlens_version", "session", "args", "inputs_digest", "verdicts"]
    assert list(facts["args"]) == ["baseline", "hypotheses"]
    assert facts["session"] == "../session"
    assert facts["sessionlens_version"] == analysis.sessionlens_version
    assert facts["inputs_digest"] == analysis.inputs_digest
    assert facts["inputs_digest"].startswith("sha256:")
    assert facts["args"] == {"baseline": None, "hypotheses": ["eagle3-prefill > base by 2%"]}
    assert facts["verdicts"] == {"H1": "rejected", "H2": "rejected"}
    assert report_md.count("<!-- sessionlens:") == 1


def test_header_cannot_be_closed_by_text_inside_it(analysis: Analysis) -> None:
    ref = "odd --> <b>folder</b> & co"
    first = render_report(analysis, "md", ref).split("\n", 1)[0]
    assert first.count("-->") == 1
    assert first.endswith(" -->")
    assert "<b>" not in first
    payload = first.removeprefix("<!-- sessionlens: ").removesuffix(" -->")
    assert json.loads(payload)["session"] == ref


# ---------------------------------------------------------------- Markdown body


def test_layout_sections_in_design_order(report_md: str) -> None:
    headings = [line for line in report_md.splitlines() if line.startswith("## ")]
    assert headings == [
        "## Configs",
        "## Settings that differ",
        "## Comparisons",
        "## Noise",
        "## Hypotheses",
        # economics appear only when a config has acceptance lengths (see below)
        "## Chart",
        "## Runs",
        "## Data-quality notes",
        "## Provenance",
    ]
    lines = report_md.splitlines()
    assert lines[1].startswith("# EAGLE-3 ")
    verdicts = [line for line in lines[2:8] if line.startswith("- H")]
    assert verdicts[0].startswith("- H1 **rejected**: decode mode ")
    # each number once: the change and its interval are in the reason only
    assert verdicts[0].count("60.2 tok/s → 59.6 tok/s") == 1
    assert "even the largest increase in the interval is below" in verdicts[0]
    assert "plus launch noise assumed 2.0 % (no config was launched twice)" in verdicts[0]
    assert verdicts[1].startswith("- H2 **rejected**: eagle3-prefill \\> base by 2%")


def test_every_table_row_keeps_its_header_column_count(report_md: str) -> None:
    tables = _tables(report_md)
    # configs, settings, comparisons, noise, runs, provenance
    assert len(tables) == 6
    for table in tables:
        width = len(table[0])
        assert len(table) >= 2
        for row in table:
            assert len(row) == width, (table[0], row)


def test_log_text_with_pipes_and_script_stays_in_its_cell(report_md: str) -> None:
    configs, settings_tbl, _cmp, _noise, runs, provenance = _tables(report_md)
    paths = [row[0] for row in provenance[1:]]
    assert "base/bench|\\<script\\>.log" in paths  # splitting the row consumed the `\\`
    rendered = MarkdownIt("commonmark", {"html": False}).enable("table").render(report_md)
    assert "<td>base/bench|&lt;script&gt;.log</td>" in rendered
    assert f"<td>{html.escape(MODEL, quote=False)}</td>" in rendered
    model_row = next(r for r in settings_tbl if r[0] == "model_path")
    assert len(model_row) == 4  # setting + three configs
    assert configs[0] == [
        "Config",
        "Label",
        "Sources",
        "Launches",
        "n",
        "Level ± CI",
        "Median",
        "CV",
        "Notes",
    ]
    assert runs[0] == ["Config", "Source", "Line", "Run", "Value", "Outlier"]
    assert "<script" not in rendered.lower()


def test_no_raw_html_survives_in_markdown(report_md: str) -> None:
    body = report_md.split("\n", 1)[1]
    assert "\\<script\\>alert(1)\\</script\\>" in body
    # no unescaped `<` could start a tag, comment or declaration
    assert re.search(r"(?<!\\)<[A-Za-z/!?]", body) is None


def test_numbers_are_rounded_with_units(report_md: str) -> None:
    assert (
        "| eagle3-decode | eagle3-decode | eagle3-decode/bench.log | 1 | 5 | 59.6 ± 6.5 tok/s | "
        "60.4 tok/s | 9.0 % |" in report_md
    )
    assert (
        "| throughput_tok_s | eagle3-prefill | 5 vs 5 | 82.6 tok/s | 60.2 tok/s | -27.2 % | "
        "-31.2 % to -22.9 % | <0.001 | 0.0079 | <0.001 | -33.14 |" in report_md
    )
    assert re.search(r"\d\.\d{3,} tok/s", report_md) is None


def test_hypothesis_detail(report_md: str) -> None:
    detail = report_md.split("### H1: rejected", 1)[1].split("### H2", 1)[0]
    assert (
        "- Tests on samples: p Welch 0.82, p Mann–Whitney 0.84, p Holm 0.82, Hedges' g -0.14."
        in detail
    )
    assert "- Decided: at the 95 % level (Holm's step-down over 2 claims)." in detail
    assert "- Launch noise: 2.0 % (assumed: no config was launched twice)." in detail
    assert "- Without the flagged outliers: rejected (unchanged)." in detail
    assert "Launches needed" not in detail  # only for inconclusive verdicts
    # model_path differs too (the decode config loads another model): a confound
    assert "- Confounds (settings that also differ): model_path = " in detail
    assert "/models/other\\|model" in detail


def test_notes_are_numbered_and_every_pointer_resolves(report_md: str) -> None:
    notes_part = report_md.split("## Data-quality notes", 1)[1].split("## Provenance", 1)[0]
    numbers = [int(m) for m in re.findall(r"^(\d+)\. ", notes_part, flags=re.M)]
    assert numbers == list(range(1, len(numbers) + 1))
    assert numbers
    texts = re.findall(r"^\d+\. (.*)$", notes_part, flags=re.M)
    # DESIGN §7's order of concern: truncation first, then outliers, then confounds
    kinds = [t.split("(", 1)[1].split(")", 1)[0] for t in texts]
    assert kinds[0] == "warning, truncated-output"
    first_outlier = next(i for i, k in enumerate(kinds) if k == "info, outlier")
    first_confound = next(i for i, k in enumerate(kinds) if k == "warning, confound")
    last_truncation = max(i for i, k in enumerate(kinds) if k.endswith("truncated-output"))
    assert last_truncation < first_outlier < first_confound
    assert "50.9 tok/s (eagle3-decode/bench.log:9) is flagged as an outlier" in notes_part
    # info diagnostics of one code are grouped into one note
    grouped = [t for t in texts if "unknown-results" in t]
    assert grouped == [
        "base/bench\\|\\<script\\>.log:14, eagle3-decode/bench.log:14, "
        "eagle3-prefill/bench.log:14 (info, unknown-results): 3 times: results line not "
        "understood: 'Overall ...'"
    ]
    elsewhere = report_md.replace(notes_part, "")
    pointers = {int(n) for n in re.findall(r"\[(\d+)\]", elsewhere)}
    for a, b in re.findall(r"\[(\d+)\]–\[(\d+)\]", elsewhere):
        pointers.update(range(int(a), int(b) + 1))
    assert pointers
    assert pointers <= set(numbers)
    # the outlier run points at the outlier note
    outlier_row = next(line for line in report_md.splitlines() if "**outlier**" in line)
    n = first_outlier + 1
    assert outlier_row.endswith(f"| **outlier** [{n}] |")


def test_mermaid_chart_has_one_bar_per_config(analysis: Analysis, report_md: str) -> None:
    block = report_md.split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert block.startswith("xychart-beta\n")
    labels = re.search(r"x-axis \[(.*)\]", block)
    bars = re.search(r"bar \[(.*)\]", block)
    assert labels is not None
    assert bars is not None
    assert labels.group(1) == '"base", "eagle3-prefill", "eagle3-decode"'  # manifest order
    assert bars.group(1) == "82.6, 60.2, 59.6"  # levels (means of launch means)
    # an axis fitted to the levels and their intervals, not 0-based (DESIGN §7)
    axis = re.search(r'y-axis "tok/s" ([0-9.]+) --> ([0-9.]+)', block)
    assert axis is not None
    lo, hi = float(axis.group(1)), float(axis.group(2))
    assert 0 < lo <= 53
    assert 86 <= hi <= 100


def test_output_is_deterministic_and_has_no_absolute_paths(
    analysis: Analysis, report_md: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    assert render_report(analysis, "md", "../session") == report_md
    assert str(tmp_path_factory.getbasetemp()) not in report_md
    assert report_md.endswith("\n")
    assert not report_md.endswith("\n\n")
    assert "\n\n\n" not in report_md


# ---------------------------------------------------------------- HTML


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.meta: dict[str, str] = {}
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        if tag == "meta" and a.get("name"):
            self.meta[str(a["name"])] = str(a.get("content"))


def test_html_page_is_inert_and_carries_the_header_in_meta(
    analysis: Analysis, report_md: str, report_html: str
) -> None:
    assert "<script" not in report_html.lower()
    page = _Page()
    page.feed(report_html)
    first = report_md.split("\n", 1)[0]
    facts = json.loads(first.removeprefix("<!-- sessionlens: ").removesuffix(" -->"))
    assert json.loads(page.meta["sessionlens"]) == facts
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in report_html
    assert "<!-- sessionlens" not in report_html
    assert "xychart-beta" not in report_html
    assert page.tags.count("svg") == 2  # the decision chart first, then the runs
    assert page.tags.count("table") == 6
    assert "<style>" in report_html
    assert "<link" not in report_html
    title = re.search(r"<title>(.*)</title>", report_html)
    assert title is not None
    assert "&lt;script&gt;" in title.group(1)


def test_html_svg_chart_has_one_point_per_run(analysis: Analysis) -> None:
    chart = v.build(analysis, ".").chart
    assert chart is not None
    root = ET.fromstring(svg(chart))
    ns = "{http://www.w3.org/2000/svg}"
    points = root.findall(f"{ns}circle")  # the legend's samples sit inside a <g>
    assert len(points) == len(analysis.runs) == 15
    flagged = [p for p in points if "outlier" in p.get("class", "")]
    assert len(flagged) == sum(r.outlier for r in analysis.runs) == 1
    assert flagged[0].findtext(f"{ns}title") == (
        "eagle3-decode: 50.9 tok/s (eagle3-decode/bench.log:9), outlier"
    )
    assert len(root.findall(f"{ns}line[@class='median level']")) == 3  # each config's level
    assert len(root.findall(f"{ns}g[@class='interval']")) == 3  # and its interval
    assert root.findtext(f"{ns}text[@class='axis-label']") == "throughput_tok_s (tok/s)"
    width = float(root.get("width", "0"))
    assert all(0 < float(p.get("cx", "-1")) < width for p in points)


def test_svg_escapes_config_names(analysis: Analysis) -> None:
    chart = v.build(analysis, ".").chart
    assert chart is not None
    hostile = v.Series(SCRIPT + "&", [1.0, 2.0], [False, True], ["a|b:1", "<x>:2"], 1.5, "1.5")
    drawing = svg(v.ChartView("m", "", "t<", [hostile], "0", "5", 1))
    assert "<script" not in drawing
    ET.fromstring(drawing)  # well-formed XML after escaping


@pytest.mark.parametrize(
    ("values", "label"),
    [
        ([1.0e308, 1.7e308, 1.6e308], "e308"),  # spans and ticks beyond float range
        ([-1.7e308, 1.7e308, 0.0], "e308"),
        ([1e-320, 3e-320, 2e-320], "e-320"),  # subnormal: round ticks would all be 0
        ([1e-9, 2e-9, 1.5e-9], "e-9"),
        ([1.000000000001, 1.000000000002, 1.0000000000015], ""),  # a span of 1e-12
        ([2e-5, 2e-5 + 1e-14, 2e-5 + 2e-14], ""),  # 1e-9 of the values: ticks apart
    ],
)
def test_svg_of_values_near_the_float_limits_counts_in_a_power_of_ten(
    values: list[float], label: str
) -> None:
    """A log's absurd values still give a chart: the axis counts in a power of ten (on each
    tick label), every point lies on the plot, ticks rise."""
    median = sorted(values)[1]
    series = v.Series("cfg", values, [False] * 3, ["a:1", "a:2", "a:3"], median, "m")
    root = ET.fromstring(svg(v.ChartView("m", "", "t", [series], "0", "1", 1)))
    ns = "{http://www.w3.org/2000/svg}"
    ticks = root.findall(f"{ns}text[@class='tick']")
    assert len(ticks) >= 2
    assert all((t.text or "").endswith(label) for t in ticks)
    xs = [float(t.get("x", "nan")) for t in ticks]
    assert xs == sorted(xs)
    assert len(set(xs)) == len(xs)
    width = float(root.get("width", "0"))
    points = root.findall(f"{ns}circle")
    assert len(points) == 3
    assert all(0 < float(p.get("cx", "-1")) < width for p in points)


def test_tick_labels_print_their_step_whole() -> None:
    from sessionlens.render.chart import _places

    # 0.975 was printed 0.97 (two decimals for any step in [0.01, 0.1))
    assert [_places(s) for s in (5, 2.5, 1, 0.5, 0.25, 0.1, 0.025, 2e-13)] == [
        0,
        1,
        0,
        1,
        2,
        1,
        3,
        13,
    ]


def test_mermaid_axis_bounds_stay_finite_near_the_float_limit() -> None:
    big = 1.7976931348623157e308
    assert v._nice(big, up=True) == big  # 2e308, the round bound, is beyond it
    assert v._nice(-big, up=False) == -big
    assert v._nice(1.2e308, up=True) == 1.2e308
    assert v._nice(63.1, up=True) == 100.0
    assert v._nice(-63.1, up=False) == -100.0


# ---------------------------------------------------------------- economics


def _summary(mean: float, unit: str) -> MetricSummary:
    return MetricSummary(
        n=5,
        mean=mean,
        median=mean,
        stdev=0.01,
        cv=0.001,
        ci_low=mean,
        ci_high=mean,
        min=mean,
        max=mean,
        unit=unit,
    )


def _with_economics(
    analysis: Analysis, estimate: bool, extra: dict[str, MetricSummary] | None = None
) -> Analysis:
    if extra is None:
        extra = {} if estimate else {"verify_ms_per_cycle": _summary(29.478, "ms")}
    # DESIGN §6's worked example: c from verify time / share (29.47 ms at 97 %), L = 2.0, k = 2
    cycle = 29.47 / 0.97
    e = specmath.economics(cycle, 2.0, 2, 59.56, 82.6, 150.0)
    econ = economics_result(
        e,
        config="eagle3-decode",
        cycle_is_estimate=estimate,
        baseline_config="base",
        cycle_share=None if estimate else 0.97,
    )
    econ = econ.model_copy(update={"warnings": ["above-ceiling"] if estimate else []})
    configs = [
        c.model_copy(update={"metrics": {**c.metrics, **extra}}) if c.name == "eagle3-decode" else c
        for c in analysis.configs
    ]
    return analysis.model_copy(update={"economics": [econ], "configs": configs})


def test_economics_section_gives_the_seed_figures(analysis: Analysis) -> None:
    text = render_report(_with_economics(analysis, estimate=False), "md", ".")
    part = text.split("## Speculative-decoding economics", 1)[1].split("## Chart", 1)[0]
    assert "- Cycle time: 30.38 ms, taken from verify time / verify share" in part
    assert "(29.48 ms at 97.0 % of the cycle)." in part
    assert "- Acceptance length: 2.00 tokens per cycle with 2 draft steps (at most 3)." in part
    assert "- Ceiling: 65.8 tok/s; measured 59.6 tok/s, an efficiency of 90.5 %." in part
    assert (
        "against base (82.6 tok/s): 2.51; the current 2.00 is below it: speculation "
        "does not pay." in part
    )
    assert (
        "- Target 150 tok/s: needs an acceptance length of 4.56, unreachable with 2 "
        "draft steps (at most 3 tokens per cycle)." in part
    )
    assert "- Per-token acceptance needed for the target: 78.1 % at unbounded depth." in part
    assert (
        "- Per-token acceptance now: 61.8 % for a chain of 2 steps, 50.0 % at unbounded "
        "depth." in part
    )
    assert "estimate" not in part
    assert all(len(row) == len(t[0]) for t in _tables(text) for row in t)


def test_economics_names_the_phase_sum_when_shares_add_up(analysis: Analysis) -> None:
    phases = {
        "phase_target_verify_share": _summary(0.97, "fraction"),
        "phase_draft_share": _summary(0.03, "fraction"),
    }
    text = render_report(_with_economics(analysis, estimate=False, extra=phases), "md", ".")
    assert "- Cycle time: 30.38 ms, the sum of the timed phases per cycle." in text


def test_economics_says_estimate_wherever_the_cycle_is_estimated(analysis: Analysis) -> None:
    text = render_report(_with_economics(analysis, estimate=True), "md", ".")
    part = text.split("## Speculative-decoding economics", 1)[1].split("## Chart", 1)[0]
    for line in ("- Cycle time:", "- Ceiling:", "- Break-even", "- Target"):
        found = next(x for x in part.splitlines() if x.startswith(line))
        assert "(estimate)" in found, found
    assert "estimated from the Decode lines" in part
    note = re.search(r"^- Notes: \[(\d+)\]$", part, flags=re.M)
    assert note is not None
    assert re.search(
        rf"^{note.group(1)}\. eagle3-decode \(warning, above-ceiling\): ", text, flags=re.M
    )


# ---------------------------------------------------------------- view helpers


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("a|b", "a\\|b"),
        (SCRIPT, "\\<script\\>alert(1)\\</script\\>"),
        ("two\nlines\r\n", "two lines  "),
        ("speculative_num_steps", "speculative_num_steps"),
        ("_private __dunder__", "\\_private \\_\\_dunder\\_\\_"),
        (
            "C:\\path *x* [l](u) `c` ~s~ $m$ &amp;",
            "C:\\\\path \\*x\\* \\[l\\](u) \\`c\\` \\~s\\~ \\$m\\$ \\&amp;",
        ),
    ],
)
def test_md_escape(text: str, escaped: str) -> None:
    assert v.md(text) == escaped


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40))
def test_md_escaped_text_renders_as_itself(text: str) -> None:
    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    out = parser.render(f"x {v.md(text)} y").strip()
    assert out.startswith("<p>")
    assert out.endswith("</p>")
    assert html.unescape(out[3:-4]) == f"x {text} y".strip()
    cell = parser.render(f"| h |\n|---|\n| {v.md(text)} |\n")
    assert cell.count("<td>") == 1
    assert html.unescape(cell.split("<td>", 1)[1].split("</td>", 1)[0]) == text.strip()


def test_number_display_rules() -> None:
    assert v.fmt("throughput_tok_s", 59.56, carry=1) == "59.6 tok/s"
    assert v.fmt("output_tokens", 2046.6, carry=0) == "2047 tokens"  # counts stay whole
    # whole-looking values of a continuous unit do not cap: 82.0 reads back as `82.0`
    assert v.fmt("throughput_tok_s", 82.26, carry=0) == "82.3 tok/s"
    assert v.fmt("verify_ms_per_cycle", 29.4781, carry=2) == "29.48 ms"
    assert v.fmt("cycle_ms", 30.4, carry=1) == "30.4 ms"
    assert v.fmt("verify_share", 0.97) == "97.0 %"
    assert v.fmt("throughput_tok_s", None) == "—"
    assert v.data_places([60.4, 65.5, 2048.0]) == 1
    assert v.data_places([2048.0, 2041.0]) == 0
    assert v.data_places([float("nan")]) is None
    assert [v.fmt_p(p) for p in (None, 0.8158, 0.05, 0.00794, 0.0004, 1.0)] == [
        "—",
        "0.82",
        "0.05",
        "0.0079",
        "<0.001",
        "1.00",
    ]
    assert v.refs_text([7, 1, 3, 4, 5, 3]) == "[1] [3]–[5] [7]"
    assert v.refs_text([2, 3]) == "[2] [3]"
    assert v.level_text(0.05) == "95 %"
    assert v.level_text(0.1) == "90 %"
    assert v.fmt_setting(None) == "unset"
    assert v.fmt_setting(True) == "true"
    assert v.fmt_setting([1, "a"]) == '[1, "a"]'


def test_mermaid_labels_cannot_break_the_block() -> None:
    label = v.mermaid_text('a"b`c<d>e#f;g\nh')
    assert not set(label) & set('"`<>#;\n')


def test_unknown_format_is_refused(analysis: Analysis) -> None:
    with pytest.raises(ValueError, match="unknown report format 'pdf'; choose one of md, html"):
        render_report(analysis, "pdf", ".")


def test_json_goes_through_render_report(analysis: Analysis) -> None:
    doc = json.loads(render_report(analysis, "json", "."))
    assert doc["inputs_digest"] == analysis.inputs_digest


def test_settings_only_some_configs_record_come_in_a_second_table(analysis: Analysis) -> None:
    configs = [
        c.model_copy(update={"settings": {**c.settings, "tp_size": 8}}) if c.name == "base" else c
        for c in analysis.configs
    ]
    diff = {
        **analysis.settings_diff,
        "tp_size": {"base": 8, "eagle3-prefill": None, "eagle3-decode": None},
    }
    text = render_report(
        analysis.model_copy(update={"configs": configs, "settings_diff": diff}), "md", "."
    )
    part = text.split("## Settings that differ", 1)[1].split("## Comparisons", 1)[0]
    complete, partial = _tables(part)
    assert [row[0] for row in complete[1:]] == ["model_path", "speculative_attention_mode"]
    assert partial == [
        ["Setting", "base", "eagle3-prefill", "eagle3-decode"],
        ["tp_size", "8", "—", "—"],
    ]
    assert "Recorded by some configs only" in part


def test_long_series_are_summarised_not_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above RUNS_LISTED values a config gets no row per value (a day-long server log has
    hundreds of thousands): the report names it with its count; shorter configs keep rows."""
    import sessionlens.analysis as analysis_mod

    root = make_session(tmp_path / "session")
    full = analyze(load_session(root))
    counts = {c.name: c.metrics[full.runs[0].metric].n for c in full.configs}
    longest = max(counts, key=lambda c: counts[c])
    monkeypatch.setattr(analysis_mod, "RUNS_LISTED", counts[longest] - 1)
    a = analyze(load_session(root))
    assert a.runs_omitted == {c: n for c, n in counts.items() if n > counts[longest] - 1}
    assert longest in a.runs_omitted
    assert not [r for r in a.runs if r.config in a.runs_omitted]
    assert {r.config for r in a.runs} == set(counts) - set(a.runs_omitted)
    # the statistics still use every value
    assert a.configs == full.configs
    md = render_report(a, "md", "../session")
    runs = md.split("## Runs", 1)[1].split("\n## ", 1)[0]
    assert f"more than {counts[longest] - 1}" in runs
    for c in a.runs_omitted:
        assert f"- {c}: {counts[c]} values of" in runs
    assert json.loads(render_report(a, "json", "../session"))["runs_omitted"] == a.runs_omitted
