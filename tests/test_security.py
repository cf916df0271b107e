"""Log content is data, never code (issue 8, item 4).

- No `eval`, `exec`, code `compile`, `pickle`, `marshal` or YAML load in the package (AST
  scan), and none is reached while parsing and reporting hostile logs (runtime traps; the
  payloads would create a marker file if anything executed them, templates included).
- Markdown: text from logs (paths, settings, results lines) cannot open a table cell, a code
  span, a link, an image or raw HTML, even for a renderer that allows HTML (as GitHub does).
- HTML: headless Chromium opens the report of a session whose logs, paths and settings carry
  `<script>` and `onerror` payloads: no payload ran, the verdicts and tables are on the page.
  A control page with the same payloads unescaped proves the browser would have run them.
"""

from __future__ import annotations

import ast
import builtins
import os
import pickle
import subprocess
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from sessionlens.analysis import analyze
from sessionlens.parsers import parse_file
from sessionlens.render import render_report
from sessionlens.session import load_session

from .conftest import FIXTURES, ROOT, chromium
from .fixture_cases import cases

SEED = FIXTURES / "formats" / "bench-stdout" / "seed-truncated.log"
SERVER = FIXTURES / "formats" / "sglang-server" / "d04-p03-0.4.5-eagle3.log"
PACKAGE = ROOT / "sessionlens"

# What runs if the page executes it: a mark on <html> and in the title, which --dump-dom shows.
JS = "document.title='PWNED';document.documentElement.setAttribute('data-pwned','{}')"
SCRIPT = f"<script>{JS.format('script')}</script>"
ONERROR = f'<img src=x onerror="{JS.format("img")}">'
SVG = f'<svg onload="{JS.format("svg")}">'
MD_TRAPS = (
    "a|b `tick` [link](javascript:alert(1)) ![img](http://127.0.0.1/x.png) <http://127.0.0.1/>"
)


# ---------------------------------------------------------------- no code from data


FORBIDDEN_CALLS = {"eval", "exec", "__import__", "breakpoint"}
FORBIDDEN_MODULES = {
    "pickle",
    "cPickle",
    "marshal",
    "shelve",
    "yaml",
    "dill",
    "cloudpickle",
    "subprocess",
}


def _package_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_package_has_no_eval_exec_pickle_or_yaml() -> None:
    """An AST scan: nothing in sessionlens can turn text into code or objects."""
    found: list[str] = []
    for path in _package_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                name = node.func.id
                if name in FORBIDDEN_CALLS:
                    found.append(f"{where}:{node.lineno}: {name}()")
                if name == "compile" and not _ast_only(node):
                    found.append(f"{where}:{node.lineno}: compile() of code")
            if isinstance(node, ast.Attribute) and node.attr in {"literal_eval", "system", "popen"}:
                found.append(f"{where}:{node.lineno}: .{node.attr}")
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                )
                for mod in names:
                    if mod.split(".")[0] in FORBIDDEN_MODULES and not (
                        mod == "subprocess" and where == GIT_RUNNER
                    ):
                        found.append(f"{where}:{node.lineno}: import {mod}")
    assert found == []
    assert len(_package_files()) > 20  # the scan saw the package


# The one exception: `history` reads the commit dates of reports with git (DESIGN §10;
# the gate's `check` inside a commit reads the staged versions with it, DESIGN §8).
GIT_RUNNER = Path("sessionlens") / "_git.py"


def test_the_only_program_run_is_git_without_a_shell() -> None:
    """`_git.py` runs one program, found as `git`, with an argument list and no shell."""
    tree = ast.parse((ROOT / GIT_RUNNER).read_text(encoding="utf-8"))
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in ("subprocess", "shutil", "os")
    ]
    described = sorted(f"{c.func.value.id}.{c.func.attr}" for c in calls)  # type: ignore[attr-defined]
    assert described == ["shutil.which", "subprocess.run"]  # no os.system, no Popen
    which = next(c for c in calls if c.func.attr == "which")  # type: ignore[attr-defined]
    assert ast.literal_eval(which.args[0]) == "git"
    run = next(c for c in calls if c.func.attr == "run")  # type: ignore[attr-defined]
    assert isinstance(run.args[0], ast.List)
    assert ast.unparse(run.args[0].elts[0]) == "exe"  # the `shutil.which("git")` result
    keywords = {k.arg: ast.unparse(k.value) for k in run.keywords}
    assert keywords["shell"] == "False"


def _ast_only(call: ast.Call) -> bool:
    return any(
        kw.arg == "flags" and "PyCF_ONLY_AST" in ast.unparse(kw.value) for kw in call.keywords
    )


class Tripped(AssertionError):
    pass


@pytest.fixture
def traps(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """eval/exec/code compile/pickle (and yaml, if installed) raise when reached.

    (Not marshal: the import system loads every .pyc with it; the AST scan covers it.)
    """
    hits: list[str] = []

    def trap(name: str) -> Any:
        def tripped(*args: Any, **kwargs: Any) -> Any:
            hits.append(name)
            raise Tripped(f"{name} was called while handling log content")

        return tripped

    try:  # imported before the traps are set: importing runs the module's code
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        yaml = None
    real_compile = builtins.compile

    def compile_ast_only(
        source: Any, filename: Any, mode: str, flags: int = 0, *a: Any, **k: Any
    ) -> Any:
        if not flags & ast.PyCF_ONLY_AST:  # ast.parse is fine: it builds a tree, runs nothing
            hits.append("compile")
            raise Tripped("compile() of code while handling log content")
        return real_compile(source, filename, mode, flags, *a, **k)

    monkeypatch.setattr(builtins, "eval", trap("eval"))
    monkeypatch.setattr(builtins, "exec", trap("exec"))
    monkeypatch.setattr(builtins, "compile", compile_ast_only)
    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, trap(f"pickle.{name}"))
    if yaml is not None:
        for name in ("load", "unsafe_load", "full_load", "load_all"):
            monkeypatch.setattr(yaml, name, trap(f"yaml.{name}"), raising=False)
    return hits


def _code_payloads(mark: Path) -> dict[str, str]:
    """Each file would create `mark` if any reader evaluated what it holds."""
    cmd = f"__import__('os').system('touch {mark}')"
    jinja = "{{ cycler.__init__.__globals__.os.system('touch " + str(mark) + "') }}"
    server = SERVER.read_text(encoding="utf-8").replace(
        "model_path='meta-llama/Llama-3.1-8B-Instruct'", f"model_path={cmd}, served={jinja!r}"
    )
    assert cmd in server
    return {
        "server.log": server,
        "vllm.log": (
            f"INFO 10-21 14:00:02 api_server.py:529] args: Namespace(model={cmd}, tp=1)\n"
            f"INFO 10-21 14:00:03 arg_utils.py:1] non-default args: {{'model': {cmd}}}\n"
            "INFO 10-21 14:00:12 metrics.py:351] Avg prompt throughput: 1.0 tokens/s, Avg "
            "generation throughput: 50.0 tokens/s, Running: 1 reqs, Swapped: 0 reqs, Pending: "
            "0 reqs, GPU KV cache usage: 1.0%, CPU KV cache usage: 0.0%.\n"
        ),
        "bench.jsonl": (
            '{"backend": "sglang", "duration": 1.0, "completed": 1, "request_throughput": 1.0, '
            f'"server_info": {{"model_path": "{cmd}", "tag": "!!python/object/apply:os.system"}}}}\n'
        ),
        "notes.log": f"!!python/object/apply:os.system ['touch {mark}']\n{jinja}\n",
        "blob.log": pickle.dumps(os.system).hex() + "\n",
    }


def _report_all(session: Path) -> None:
    loaded = load_session(session, hypotheses=["cand > base by 5%"])
    assert {"sglang-server", "vllm-server", "sglang-bench-serving"} <= {
        s.format for s in loaded.sources
    }
    analysis = analyze(loaded)
    for fmt in ("json", "md", "html"):
        render_report(analysis, fmt, "s")


def test_hostile_logs_are_parsed_and_reported_without_running_anything(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    mark = tmp_path / "PWNED"
    session = tmp_path / "s"
    for config in ("base", "cand"):
        (session / config).mkdir(parents=True)
        (session / config / "bench.log").write_bytes(SEED.read_bytes())
        for name, text in _code_payloads(mark).items():
            (session / config / name).write_text(text, encoding="utf-8")
    # once without traps: lazy imports (scipy, polars) and the compiled templates are code
    # of our own, loaded on first use; with them loaded, what is left handles log content
    _report_all(session)
    traps: list[str] = request.getfixturevalue("traps")
    for path in cases():  # every real fixture, under the traps
        parse_file(path)
    _report_all(session)
    assert traps == []
    assert not mark.exists()


# ---------------------------------------------------------------- hostile session


def hostile_session(root: Path) -> Path:
    """Payloads in a log's text, in file names (paths) and in logged settings."""
    lines = SEED.read_text(encoding="utf-8").splitlines()
    results = [
        f"Overall: {SCRIPT} {MD_TRAPS} tok/s",
        f"Best run: {ONERROR} | `x` tok/s",
    ]
    runs = {
        "base": ("60.4", "65.5", "50.9", "61.5", "59.5"),
        "cand": ("80.4", "81.5", "79.9", "80.5", "81.0"),
    }
    for config, values in runs.items():
        folder = root / config
        folder.mkdir(parents=True)
        text = "\n".join(lines) + "\n" + "\n".join(results) + "\n"
        for old, new in zip(runs["base"], values, strict=True):
            text = text.replace(f"= {old} tok/s", f"= {new} tok/s")
        name = (
            "bench.log" if config == "base" else f"bench {ONERROR} {MD_TRAPS.replace('/', '_')}.log"
        )
        (folder / name).write_text(text, encoding="utf-8")
        model = f"/models/{config}{SCRIPT}{SVG}{MD_TRAPS}".replace("'", '"')
        server = SERVER.read_text(encoding="utf-8").replace(
            "model_path='meta-llama/Llama-3.1-8B-Instruct'", f"model_path='{model}'"
        )
        (folder / "server.log").write_text(server, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return hostile_session(tmp_path_factory.mktemp("hostile") / "session")


@pytest.fixture(scope="module")
def hostile_md(hostile: Path) -> str:
    analysis = analyze(load_session(hostile, hypotheses=["cand > base on throughput_tok_s by 10%"]))
    assert analysis.hypotheses[0].verdict == "supported"
    return render_report(analysis, "md", "session")


def test_hostile_text_reaches_the_report(hostile_md: str) -> None:
    """The payloads are in the report (escaped), so the escaping tests below test something."""
    assert "data-pwned" in hostile_md
    assert hostile_md.count("onerror") >= 2  # a path and a results line
    assert "javascript:alert(1)" in hostile_md
    assert "model_path" in hostile_md  # the differing setting carries a payload


def test_markdown_cells_keep_log_text_inert_even_where_html_is_allowed(hostile_md: str) -> None:
    """GitHub renders raw HTML: parse as it would (html on, tables on) and look at the tokens."""
    body = hostile_md.split("\n", 1)[1]  # the header comment is sessionlens's own
    tokens = MarkdownIt("commonmark", {"html": True}).enable("table").parse(body)
    width = 0
    for tok in tokens:
        kinds = [tok, *(tok.children or [])]
        for t in kinds:
            assert t.type not in {"html_inline", "html_block"}, t.content
            assert t.type not in {"link_open", "image", "autolink"}, t.attrs
            if t.type == "code_inline":
                assert "pwned" not in t.content.lower()
                assert "tick" not in t.content
                assert t.content != "x"
        if tok.type == "thead_open":
            width = -1
        if tok.type == "tr_open":
            row = 0
        if tok.type in {"th_open", "td_open"}:
            row += 1
        if tok.type == "tr_close":
            if width == -1:
                width = row
            assert row == width, "a `|` from a log split a cell"


def test_markdown_shows_log_text_as_itself(hostile_md: str) -> None:
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(hostile_md)
    text = _Text()
    text.feed(rendered)
    shown = "".join(text.parts)
    assert SCRIPT.replace("'", '"') in shown  # the logged setting, displayed as it was
    assert f"{ONERROR} {MD_TRAPS.replace('/', '_')}.log" in shown  # the path, likewise


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False

    def handle_data(self, data: str) -> None:
        self.parts.append(data)
        if self._in_title:
            self.title += data


# ---------------------------------------------------------------- the page in a browser


def _dump(page: Path, profile: Path) -> _Text:
    proc = chromium(page, profile, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "<html" in proc.stdout, proc.stderr[-2000:]
    dom = _Text()
    dom.feed(proc.stdout)
    return dom


def _ran(dom: _Text) -> list[str]:
    return [str(a["data-pwned"]) for _, a in dom.tags if "data-pwned" in a] + (
        ["title"] if dom.title == "PWNED" else []
    )


def test_chromium_runs_no_payload_and_shows_the_verdicts(hostile: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    proc = subprocess.run(
        [
            "python3",
            "-m",
            "sessionlens",
            "report",
            str(hostile),
            "--out",
            str(page),
            "--hypothesis",
            "cand > base on throughput_tok_s by 10%",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    html = page.read_text(encoding="utf-8")
    assert "&lt;script&gt;" in html
    assert "onerror" in html

    # control: the same payloads unescaped in a bare page do run in this browser
    control = tmp_path / "control.html"
    control.write_text(
        f"<!DOCTYPE html><html><head><title>t</title></head><body>{SCRIPT}{ONERROR}{SVG}</body></html>"
    )
    assert _ran(_dump(control, tmp_path / "profile-control")), "the browser runs no script at all"

    dom = _dump(page, tmp_path / "profile")
    assert _ran(dom) == []
    tags = [t for t, _ in dom.tags]
    assert not {"script", "img", "iframe", "object", "embed"} & set(tags)
    # only our charts: the decision chart and the runs
    assert [a.get("onload") for t, a in dom.tags if t == "svg"] == [None, None]
    assert not [a for _, a in dom.tags if any(k.startswith("on") for k in a)]
    shown = " ".join("".join(dom.parts).split())
    assert "SUPPORTED H1" in shown  # the verdict banner
    assert "H1 supported" in shown  # the decision chart's row
    assert tags.count("table") >= 4  # configs, settings, comparisons, runs, provenance
    assert "Comparisons" in shown
    assert "cand" in shown
    assert SCRIPT.replace("'", '"') in shown  # the log's text, shown as text
    assert ONERROR in shown

    shot = tmp_path / "report.png"
    proc = chromium(
        page, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1280,2000"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert shot.stat().st_size > 10_000  # a rendered page, not a blank one
