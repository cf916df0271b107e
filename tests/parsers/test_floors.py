"""The parser floors (STYLE "Parser floors"): no format module imports another format; the
floors (`base`, `_fields`, `_blocks`) import no format; a format embeds another by id."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sessionlens.parsers import PARSERS, embedded_reader
from sessionlens.parsers.base import ParseContext

PARSERS_DIR = Path(__file__).resolve().parents[2] / "sessionlens" / "parsers"
PACKAGE = "sessionlens.parsers"
FLOORS = {"base", "_fields", "_blocks"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PARSERS_DIR).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def _format_of(module: str) -> str | None:
    """The format a module of the parsers package belongs to (its first name below the
    package: `sglang_server.fast` is sglang_server's), or None for the registry and floors."""
    rest = module.removeprefix(PACKAGE).lstrip(".")
    first = rest.split(".", 1)[0]
    if not first or first in FLOORS:
        return None
    if not (PARSERS_DIR / f"{first}.py").exists() and not (PARSERS_DIR / first).is_dir():
        return None  # a name the package defines (`from . import embedded_reader`)
    return first


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement in the file names (deferred and type-only ones
    included), absolute, with its line; `from . import x` names the module `x`."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            target = node.module or ""
            if node.level:
                target = f"{base}.{target}" if target else base
            out.append((node.lineno, target))
            out += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return out


def _sources() -> list[Path]:
    return sorted(PARSERS_DIR.rglob("*.py"))


def test_the_walk_sees_every_format_module() -> None:
    formats = {_format_of(_module_name(p)) for p in _sources()} - {None}
    assert formats == {fid.replace("-", "_") for fid in PARSERS}


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(PARSERS_DIR)))
def test_no_format_imports_another_and_no_floor_imports_a_format(path: Path) -> None:
    module = _module_name(path)
    mine = _format_of(module)
    bad = []
    for line, target in _imports(path):
        if not target.startswith(PACKAGE + "."):
            continue
        theirs = _format_of(target)
        if theirs is None or theirs == mine:
            continue
        if mine is None and module == PACKAGE:
            continue  # the registry lists every format
        bad.append(f"{path.name}:{line}: imports {target}")
    assert bad == []


def test_an_embedded_format_is_found_by_id() -> None:
    ctx = ParseContext(file="x")
    reader = ctx.embed("vllm-server")
    assert type(reader).__module__ == "sessionlens.parsers.vllm_server"
    phases = ctx.embed_inline("phase-timing", next_block=lambda: 7)
    assert phases.idle
    assert "ms/cyc" in phases.words
    with pytest.raises(LookupError, match="format 'bench-stdout' has no line reader to embed"):
        embedded_reader("bench-stdout", ctx, {})
