"""The HTML report as a person sees it (DESIGN §7 "What a reader sees first"), in headless
Chromium at 1280 px: the first screen holds every verdict and the decision chart, no table
cell wraps a number, and a screenshot is kept as an artefact (`artifacts/`, CI keeps it).

The report itself has no script; the test measures a copy of it with one appended, which
writes what the browser laid out into the page, read back with `--dump-dom`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from sessionlens.cli import main
from tests.conftest import FIXTURES, ROOT, chromium

WIDTH, HEIGHT = 1280, 900  # the first screen of a laptop browser window
ARTIFACTS = Path(os.environ.get("SESSIONLENS_ARTIFACTS", ROOT / "artifacts"))

MEASURE = """
<script>
(function () {
  const screen = window.innerHeight;
  const out = {screen: screen, width: window.innerWidth, verdicts: [], wrapped: []};
  for (const el of document.querySelectorAll(".verdict")) {
    const r = el.getBoundingClientRect();
    out.verdicts.push({cls: el.className, bottom: r.bottom, text: el.innerText.slice(0, 40)});
  }
  const svgs = document.querySelectorAll("svg");
  out.first_svg = svgs.length ? svgs[0].getAttribute("class") : null;
  const d = document.querySelector("svg.sessionlens-decision");
  out.decision_bottom = d ? d.getBoundingClientRect().bottom : null;
  for (const td of document.querySelectorAll("td, th")) {
    if (!/[0-9]/.test(td.textContent)) continue;
    const range = document.createRange();
    range.selectNodeContents(td);
    const tops = new Set();
    for (const rect of range.getClientRects()) {
      if (rect.width > 0) tops.add(Math.round(rect.top));
    }
    if (tops.size > 1) out.wrapped.push(td.textContent.trim().slice(0, 60));
  }
  const pre = document.createElement("pre");
  pre.id = "sessionlens-measured";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def _browser(page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Chromium at the page size the tests measure, scroll bars hidden (screenshots)."""
    return chromium(page, profile, "--hide-scrollbars", f"--window-size={WIDTH},{HEIGHT}", *extra)


def _page(session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["report", str(session), "--format", "html", "-q"]) == 0
    html = capsys.readouterr().out
    assert "<script" not in html  # the report runs nothing
    page = tmp_path / f"{session.name}.html"
    page.write_text(html)
    return page


def _measure(page: Path, tmp_path: Path) -> dict:
    probe = tmp_path / f"{page.stem}-measured.html"
    probe.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    proc = _browser(probe, tmp_path / "profile-m", "--virtual-time-budget=3000", "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r'<pre id="sessionlens-measured">(.*?)</pre>', proc.stdout, re.S)
    assert found is not None, proc.stdout[-2000:]
    text = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    return json.loads(text.replace("&amp;", "&"))


def _screenshot(page: Path, tmp_path: Path, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"{name}-{WIDTH}.png"
    proc = _browser(page, tmp_path / "profile-s", f"--screenshot={shot}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.stat().st_size > 10_000  # a page was drawn, not a blank
    return shot


@pytest.mark.parametrize(
    "name", ["eagle3-attention-mode", "sweep-attention-backends"], ids=lambda n: n
)
def test_first_screen_holds_the_verdicts_and_the_decision_chart(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = _page(FIXTURES / "sessions" / name, tmp_path, capsys)
    got = _measure(page, tmp_path)
    assert got["width"] == WIDTH
    verdicts = got["verdicts"]
    assert verdicts, "no verdict banner"
    for v in verdicts:
        # a banner says its verdict by class (colour) and in words
        kind = v["cls"].split()
        assert kind[0] == "verdict"
        assert kind[1] in ("supported", "rejected", "inconclusive")
        assert v["text"].startswith(kind[1].upper())
        assert v["bottom"] <= got["screen"], v
    assert got["first_svg"] == "sessionlens-decision"  # the decision chart comes first
    if name == "eagle3-attention-mode":
        # three claims: their chart fits on the first screen with them
        assert got["decision_bottom"] <= got["screen"]
    assert got["wrapped"] == []  # no table cell breaks a number, an interval or a path
    _screenshot(page, tmp_path, name)
