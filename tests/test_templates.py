"""The report templates: each renders from a full (and an empty) view under StrictUndefined.

A template that names a field the view lacks fails here rather than in a user's report;
autoescaping applies to the HTML page only, where Markdown escaping would be wrong.
"""

from __future__ import annotations

import jinja2
import pytest

from sessionlens import specmath
from sessionlens.analysis import (
    Analysis,
    Confound,
    EconomicsResult,
    HypothesisResult,
    analyze,
    economics_result,
)
from sessionlens.render import view as v
from sessionlens.render.base import environment, templates_dir
from sessionlens.session import load_session

from .conftest import ROOT
from .test_render import make_session

SECTIONS = {
    "_verdicts.md.j2",
    "_configs.md.j2",
    "_settings.md.j2",
    "_comparisons.md.j2",
    "_sweep.md.j2",
    "_noise.md.j2",
    "_hypotheses.md.j2",
    "_economics.md.j2",
    "_chart.md.j2",
    "_runs.md.j2",
    "_quality.md.j2",
    "_provenance.md.j2",
}


def _econ(config: str, estimate: bool, target: float) -> EconomicsResult:
    e = specmath.economics(30.38, 2.0, 3, 59.6, 82.6, target)
    econ = economics_result(
        e,
        config=config,
        cycle_is_estimate=estimate,
        baseline_config="base",
        cycle_share=None if estimate else 0.97,
    )
    return econ.model_copy(update={"warnings": ["accept-len-above-steps"]})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    """Every optional part present: an inconclusive hypothesis, confounds, economics."""
    root = make_session(tmp_path_factory.mktemp("templates") / "session")
    a = analyze(load_session(root, hypotheses=["eagle3-prefill > base by 2%"]))
    open_question = HypothesisResult(
        **{
            **a.hypotheses[0].model_dump(),
            "id": "H3",
            "verdict": "inconclusive",
            "runs_needed": 12,
            "verdict_without_outliers": "supported",
            "confounds": [Confound(setting="tp_size", baseline=8, candidate=None)],
            "warnings": ["outlier-sensitive"],
        }
    )
    # a sweep too (its points, capacities, curves), on this session's first two configs
    swept = analyze(load_session(ROOT / "fixtures" / "sessions" / "sweep-attention-backends"))
    rename = dict(zip([c.name for c in swept.configs], [c.name for c in a.configs], strict=False))
    configs = [
        c.model_copy(update={"points": s.points})
        for c, s in zip(a.configs, [*swept.configs, *a.configs[2:]], strict=True)
    ]
    a = a.model_copy(
        update={
            "configs": configs,
            "slo": swept.slo,
            "capacity": {rename[k]: v for k, v in swept.capacity.items()},
            "pareto": [p.model_copy(update={"config": rename[p.config]}) for p in swept.pareto],
            "dominance": [
                d.model_copy(update={"better": rename[d.better], "worse": rename[d.worse]})
                for d in swept.dominance
            ],
            "unpaired": [u.model_copy(update={"config": rename[u.config]}) for u in swept.unpaired],
        }
    )
    return a.model_copy(
        update={
            "hypotheses": [*a.hypotheses, open_question],
            "economics": [
                _econ("eagle3-decode", estimate=False, target=150.0),
                _econ("eagle3-prefill", estimate=True, target=90.0),
            ],
        }
    )


@pytest.fixture(scope="module")
def empty(full: Analysis) -> Analysis:
    """Nothing optional: one config, no hypotheses, comparisons, runs, notes or sources."""
    return full.model_copy(
        update={
            "configs": full.configs[:1],
            "settings_diff": {},
            "hypotheses": [],
            "economics": [],
            "comparisons": [],
            "runs": [],
            "diagnostics": [],
            "sources": [],
            "noise": {},
        }
    )


# The history's templates render a history view (tests/test_history.py renders them).
HISTORY = {"history.md.j2", "history.html.j2"}


def _all_templates() -> list[str]:
    return sorted(p.name for p in templates_dir().glob("*.j2"))


def _report_templates() -> list[str]:
    return [n for n in _all_templates() if n not in HISTORY]


def test_templates_ship_from_the_repository_root() -> None:
    assert templates_dir() == ROOT / "templates"
    names = set(_all_templates())
    assert {"report.md.j2", "page.html.j2"} | SECTIONS | HISTORY == names


@pytest.mark.parametrize("name", _report_templates())
@pytest.mark.parametrize("which", ["full", "empty"])
def test_every_template_renders_under_strict_undefined(
    name: str, which: str, request: pytest.FixtureRequest
) -> None:
    analysis: Analysis = request.getfixturevalue(which)
    view = v.build(analysis, "../session")
    text = environment().get_template(name).render(view=view, body="<p>body</p>", meta="{}")
    assert isinstance(text, str)
    if which == "full":
        assert text.strip(), name


def test_full_view_fills_every_optional_part(full: Analysis) -> None:
    view = v.build(full, ".")
    text = environment().get_template("report.md.j2").render(view=view)
    assert "- Launches needed to decide: 12 a side, for the expected interval" in text
    assert "- Without the flagged outliers: supported (the verdict changes)." in text
    assert "tp_size = 8 vs unset" in text
    assert "reachable with 3 draft steps" in text  # 90 tok/s needs 2.73 ≤ 4
    assert "unreachable with 3 draft steps" in text  # 150 tok/s needs 4.56 > 4
    assert "for a chain of 3 steps" in text
    assert "(estimate)" in text
    assert "(warning, outlier-sensitive)" in text
    # one note per config and economics warning, pointed to from the section
    assert text.count("(warning, accept-len-above-steps)") == 2
    assert text.count("\n- Notes: [") == 2


def test_empty_view_says_what_is_missing(empty: Analysis) -> None:
    view = v.build(empty, ".")
    text = environment().get_template("report.md.j2").render(view=view)
    assert "No hypotheses were given" in text
    assert "No setting differs between the configs (there is only one)." in text
    assert "Nothing to compare" in text
    assert "No data-quality issue was found." in text
    assert "## Chart" not in text
    assert "## Runs" not in text
    assert "## Hypotheses" not in text


def test_undefined_names_fail_loudly(full: Analysis) -> None:
    view = v.build(full, ".")
    with pytest.raises(jinja2.UndefinedError):
        environment().from_string("{{ view.no_such_field }}").render(view=view)


def test_only_the_html_page_autoescapes(full: Analysis) -> None:
    view = v.build(full, ".")
    env = environment()
    page = env.get_template("page.html.j2").render(view=view, body="", meta='{"a": "<b>"}')
    assert "<title>EAGLE-3 | &lt;script&gt;alert(1)&lt;/script&gt; *verify*</title>" in page
    assert 'content="{&#34;a&#34;: &#34;&lt;b&gt;&#34;}"' in page
    report = env.get_template("report.md.j2").render(view=view)
    assert "&lt;" not in report
    assert "&#34;" not in report
    assert report.split("\n")[1] == "# EAGLE-3 \\| \\<script\\>alert(1)\\</script\\> \\*verify\\*"


def test_templates_are_text_files_with_a_final_newline() -> None:
    for name in _all_templates():
        text = (templates_dir() / name).read_text(encoding="utf-8")
        assert text.endswith("\n"), name
        assert not text.endswith("\n\n"), name
        assert "\t" not in text, name
