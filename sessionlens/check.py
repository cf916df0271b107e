"""`sessionlens check`: are the committed reports still what their sessions give? (DESIGN §8)

Owns finding committed reports (`report.md` files whose first line is the sessionlens
header), choosing those a set of paths touches, re-running the analysis with the recorded
arguments, and comparing. It returns `Finding`s, each with the command that regenerates the
report; it must not print or exit.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ManifestError, SessionlensError

HEADER = re.compile(r"^<!-- sessionlens: (?P<json>\{.*\}) -->\s*$")
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".tox",
        "build",
        "dist",
    }
)
# Input problems that make a committed report untrustworthy: the gate fails closed on them.
BLOCKING_CODES = frozenset(
    {"unreadable-file", "unknown-format", "unassigned-input", "symlink-loop", "non-utf8"}
)


@dataclass(frozen=True)
class Finding:
    """One reason a committed report is not fresh, with where it is."""

    path: str
    message: str
    code: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: error: {self.message} [{self.code}]"


@dataclass
class CheckResult:
    """The outcome for one committed report."""

    report: str
    session: str
    fix: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


@dataclass(frozen=True)
class Committed:
    """A committed report and what its header records."""

    path: Path
    header: dict[str, Any]
    session_dir: Path


def read_header(path: Path) -> dict[str, Any] | None:
    """The header JSON of a report, or None if its first line is not a sessionlens header."""
    try:
        with path.open("r", encoding="utf-8", errors="replace") as fh:
            first = fh.readline()
    except OSError:
        return None
    m = HEADER.match(first)
    if m is None:
        return None
    try:
        data = json.loads(m.group("json"))
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None


def find_reports(root: Path) -> Iterator[Committed]:
    """Every `report.md` under `root` whose first line is a sessionlens header."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        if "report.md" not in files:
            continue
        path = Path(folder) / "report.md"
        header = read_header(path)
        if header is None or not isinstance(header.get("session"), str):
            continue
        yield Committed(path, header, (path.parent / header["session"]).resolve())


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def select(reports: Sequence[Committed], paths: Sequence[Path]) -> list[Committed]:
    """The reports whose session holds one of `paths`, or that are one of them (or a twin)."""
    wanted = [p.resolve() for p in paths]
    chosen = []
    for rep in reports:
        twins = {rep.path.resolve(), rep.path.with_name("report.json").resolve()}
        if any(p in twins or p == rep.session_dir or _inside(p, rep.session_dir) for p in wanted):
            chosen.append(rep)
    return chosen


def fix_command(rep: Committed, cwd: Path) -> str:
    """The exact command that regenerates a report, from `cwd`."""
    args = rep.header.get("args") or {}
    session = os.path.relpath(rep.session_dir, cwd)
    out = os.path.relpath(rep.path.resolve(), cwd)
    parts = ["sessionlens", "report", Path(session).as_posix(), "--out", Path(out).as_posix()]
    if args.get("baseline"):
        parts += ["--baseline", str(args["baseline"])]
    for h in args.get("hypotheses") or []:
        parts += ["--hypothesis", str(h)]
    return " ".join(shlex.quote(p) for p in parts)


def _strip_header(text: str) -> tuple[str, str]:
    first, _, rest = text.partition("\n")
    return first, rest


def _header_json(line: str) -> dict[str, Any]:
    m = HEADER.match(line)
    if m is None:
        return {}
    try:
        data = json.loads(m.group("json"))
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def check_report(rep: Committed, cwd: Path) -> CheckResult:
    """Re-analyse one report's session with its recorded arguments and compare."""
    from .analysis import analyze
    from .render import render_report
    from .session import load_session

    shown = os.path.relpath(rep.path, cwd)
    session_shown = os.path.relpath(rep.session_dir, cwd)
    result = CheckResult(report=shown, session=session_shown, fix=fix_command(rep, cwd))
    args = rep.header.get("args") or {}
    if not rep.session_dir.is_dir():
        result.findings.append(
            Finding(
                shown, f"its session folder {session_shown} does not exist", "missing-session", 1
            )
        )
        return result
    try:
        session = load_session(
            rep.session_dir,
            baseline=args.get("baseline"),
            hypotheses=list(args.get("hypotheses") or []),
        )
    except ManifestError as exc:
        where = os.path.relpath(exc.path, cwd) if exc.path else session_shown
        result.findings.append(Finding(where, exc.message, "bad-manifest", exc.line))
        return result
    except SessionlensError as exc:
        result.findings.append(
            Finding(shown, f"cannot analyse its session: {exc.message}", "unreadable-session", None)
        )
        return result
    for d in session.diagnostics:
        if d.code in BLOCKING_CODES:
            where = os.path.relpath(rep.session_dir / d.file, cwd) if d.file else session_shown
            result.findings.append(Finding(where, d.message, d.code, d.line))
    if len(session.columns) == 0:
        result.findings.append(
            Finding(shown, "no sample can be read from its session anymore", "unreadable-session")
        )
        return result
    analysis = analyze(session)
    ref = Path(os.path.relpath(rep.session_dir, rep.path.parent.resolve())).as_posix()
    fresh_md = render_report(analysis, "md", ref)
    try:
        committed_md = rep.path.read_text(encoding="utf-8")
    except OSError as exc:
        result.findings.append(Finding(shown, f"cannot read it: {exc.strerror}", "unreadable-file"))
        return result
    result.findings.extend(_compare_md(shown, committed_md, fresh_md))
    twin = rep.path.with_name("report.json")
    if twin.is_file():
        twin_shown = os.path.relpath(twin, cwd)
        fresh_json = render_report(analysis, "json", ref)
        result.findings.extend(_compare_json(twin_shown, twin, fresh_json))
    return result


def _compare_md(shown: str, committed: str, fresh: str) -> list[Finding]:
    old_head, old_body = _strip_header(committed)
    new_head, new_body = _strip_header(fresh)
    old, new = _header_json(old_head), _header_json(new_head)
    findings: list[Finding] = []
    if old.get("inputs_digest") != new.get("inputs_digest"):
        findings.append(
            Finding(
                shown,
                f"its session's inputs changed ({_short(old.get('inputs_digest'))} in the "
                f"report, {_short(new.get('inputs_digest'))} now)",
                "stale-inputs",
                1,
            )
        )
    old_v, new_v = old.get("verdicts") or {}, new.get("verdicts") or {}
    for hid in sorted(set(old_v) | set(new_v)):
        if old_v.get(hid) != new_v.get(hid):
            findings.append(
                Finding(
                    shown,
                    f"{hid}: the report says {old_v.get(hid) or 'nothing'}, the data now give "
                    f"{new_v.get(hid) or 'nothing'}",
                    "changed-verdict",
                    1,
                )
            )
    if old_body != new_body:
        line, was, now = _first_difference(old_body, new_body)
        what = "a number changed" if _numbers(was) != _numbers(now) else "the text changed"
        findings.append(
            Finding(
                shown,
                f"{what}: {_clip(was, _start(was, now))!r} in the report, "
                f"{_clip(now, _start(was, now))!r} now",
                "changed-number" if what.startswith("a number") else "changed-text",
                line + 1,
            )
        )
    return findings


def _compare_json(shown: str, path: Path, fresh: str) -> list[Finding]:
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        return [Finding(shown, f"cannot read it as JSON: {exc}", "unreadable-file")]
    new = json.loads(fresh)
    if isinstance(old, dict):
        old.pop("sessionlens_version", None)
    new.pop("sessionlens_version", None)
    if old == new:
        return []
    where = _first_json_difference(old, new, "")
    return [
        Finding(
            shown, f"differs from a fresh analysis at {where or 'the top level'}", "changed-number"
        )
    ]


def _first_json_difference(old: Any, new: Any, at: str) -> str:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            if old.get(key) != new.get(key):
                return _first_json_difference(old.get(key), new.get(key), f"{at}.{key}")
        return at
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                return _first_json_difference(a, b, f"{at}[{i}]")
    return at.lstrip(".")


def _first_difference(old: str, new: str) -> tuple[int, str, str]:
    a, b = old.split("\n"), new.split("\n")
    for i in range(max(len(a), len(b))):
        la = a[i] if i < len(a) else ""
        lb = b[i] if i < len(b) else ""
        if la != lb:
            return i + 1, la, lb
    return len(a), "", ""


_NUM = re.compile(r"-?\d+(?:\.\d+)?")


def _numbers(text: str) -> list[str]:
    return _NUM.findall(text)


def _start(was: str, now: str) -> int:
    """Where to start showing two lines so that their first difference is in view."""
    was, now = was.strip(), now.strip()
    same = 0
    while same < min(len(was), len(now)) and was[same] == now[same]:
        same += 1
    return max(0, same - 30)


def _clip(text: str, start: int = 0, width: int = 70) -> str:
    """The line from `start` (marked `…` when it does not begin there), at most `width` long."""
    text = text.strip()
    head = "…" if start > 0 else ""
    text = text[start:]
    return head + (text if len(text) <= width else text[: width - 1] + "…")


def _short(digest: Any) -> str:
    return str(digest)[:19] + "…" if isinstance(digest, str) and len(digest) > 20 else str(digest)


def run_check(paths: Sequence[Path], cwd: Path) -> list[CheckResult]:
    """Check the reports the paths touch (every report under `cwd` when there are none)."""
    reports = list(find_reports(cwd))
    for p in paths:
        if p.is_dir() and not _inside(p.resolve(), cwd.resolve()):
            reports.extend(find_reports(p))
    chosen = select(reports, paths) if paths else reports
    seen: set[Path] = set()
    results = []
    for rep in chosen:
        if rep.path.resolve() in seen:
            continue
        seen.add(rep.path.resolve())
        results.append(check_report(rep, cwd))
    return results
