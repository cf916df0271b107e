"""`sessionlens check`: are the committed reports still what their sessions give? (DESIGN §8)

Owns finding committed reports (every `report.md`, and every other `*.md` whose first kilobyte
holds the sessionlens header), validating their headers, choosing those a set of paths (or a
commit's staged diff) touches, re-running the analysis with the recorded arguments, and
comparing. The gate fails closed: a damaged, unreadable, linked or oversized report, a header
whose session leaves the repository, and an input that cannot be read are findings, never a
silent pass. It returns `CheckResult`s, each with the advice that settles it; it must not print
or exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _discover, _git
from .errors import ManifestError, SessionlensError, UsageError

HEADER_PREFIX = "<!-- sessionlens: "
HEADER_SUFFIX = " -->"
HEADER = re.compile(r"^<!-- sessionlens: (?P<json>\{.*\}) -->$")
MARK = b"<!-- sessionlens:"
REPORT_NAME = "report.md"
HEAD_BYTES = 1024  # a `*.md` other than report.md is a report when this much holds MARK
MAX_REPORT_BYTES = 16 << 20  # reading limits hold for reports too (DESIGN §8)
MAX_LINE_BYTES = 1 << 20
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
# Regenerating the report cannot settle them; the finding's message says what does.
BLOCKING_CODES = frozenset(
    {
        "unreadable-file",
        "unknown-format",
        "unassigned-input",
        "symlink-loop",
        "non-utf8",
        "outside-session",
    }
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
    """The outcome for one committed report (or for the gate itself, `report="sessionlens"`)."""

    report: str
    session: str | None
    fix: str | None  # the command that regenerates the report, when it can be told
    findings: list[Finding] = field(default_factory=list)
    advice: str | None = None  # the closing line after `report: `

    @property
    def ok(self) -> bool:
        return not self.findings


@dataclass(frozen=True)
class Committed:
    """A committed report whose header is sound, and the session folder it names."""

    path: Path
    header: dict[str, Any]
    session_dir: Path


class _Refused(Exception):
    """A report that is not read (a link, too big, unreadable): one finding."""

    def __init__(self, message: str, code: str = "unreadable-report", line: int | None = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.line = line


def in_commit() -> bool:
    """Whether `check` runs inside a commit (pre-commit's `PRE_COMMIT=1`, or git's
    `GIT_INDEX_FILE` for a hook script): then it reads the staged versions."""
    return os.environ.get("PRE_COMMIT") == "1" or bool(os.environ.get("GIT_INDEX_FILE"))


# ---------------------------------------------------------------- reading, bounded


def _mb(n: int) -> str:
    return f"{n >> 20} MB"


def _open_file(path: Path) -> int:
    """A descriptor of a regular file that is no link; `_Refused` otherwise. Never blocks:
    a FIFO named report.md is refused from its lstat, before any open."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise _Refused(f"cannot read it: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        try:
            target = _discover.display(os.readlink(path))
        except OSError:
            target = "an unreadable target"
        raise _Refused(
            f"it is a symbolic link (to {target}); a committed report must be the file itself, "
            "so the link is not followed",
            "report-is-link",
        )
    if not stat.S_ISREG(st.st_mode):
        raise _Refused(f"it is not a regular file ({_discover.kind(st.st_mode)}); not read")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _Refused(f"cannot read it: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the lstat
            raise _Refused("it is not a regular file; not read")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_bounded(path: Path, limit: int = MAX_REPORT_BYTES) -> bytes:
    """A report's bytes, at most `limit` of them (more is a `_Refused`)."""
    fd = _open_file(path)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise _Refused(
                f"it is over {_mb(limit)} ({size:,} bytes), too big for a report; not read"
            )
        parts: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            parts.append(chunk)
            total += len(chunk)
            if total > limit:
                raise _Refused(f"it is over {_mb(limit)}, too big for a report; not read")
    except OSError as exc:
        raise _Refused(f"reading it failed: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return b"".join(parts)


def _read_head(path: Path) -> bytes:
    """A report's first line and at least its first kilobyte (less if the file is shorter)."""
    fd = _open_file(path)
    try:
        data = b""
        while len(data) <= MAX_LINE_BYTES:
            chunk = os.read(fd, 64 << 10)
            if not chunk:
                break
            data += chunk
            if len(data) >= HEAD_BYTES and b"\n" in data:
                break
    except OSError as exc:
        raise _Refused(f"reading it failed: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return data


def _text(raw: bytes) -> str:
    """A report's text: UTF-8, no line over 1 MB (else `_Refused` naming the line)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise _Refused(
            f"it is not UTF-8 text (byte 0x{raw[exc.start]:02x}); a sessionlens report is "
            "UTF-8 Markdown",
            line=line,
        ) from None
    start = 0
    line = 1
    while start < len(raw):
        end = raw.find(b"\n", start)
        end = len(raw) if end < 0 else end
        if end - start > MAX_LINE_BYTES:
            raise _Refused(
                f"this line is over {_mb(MAX_LINE_BYTES)}, too long for a report; not read",
                line=line,
            )
        start = end + 1
        line += 1
    return text


def is_report(path: Path) -> bool:
    """`report.md` by name (whatever it is: a link or a FIFO is a finding, not a skip); any
    other regular `*.md` file when its first kilobyte holds the header mark."""
    name = path.name
    if name == REPORT_NAME:
        return True
    if not name.lower().endswith(".md"):
        return False
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False  # a link or a special file is never followed to find out
        fd = _open_file(path)
    except (OSError, _Refused):
        return False
    try:
        head = os.read(fd, HEAD_BYTES)
    except OSError:
        return False
    finally:
        os.close(fd)
    return MARK in head


# ---------------------------------------------------------------- the header


def _short_json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:39] + "…"


def _type_problem(data: dict[str, Any]) -> str | None:
    """What is wrong with the header's fields, if anything (None: sound)."""

    def wrong(key: str, value: Any, what: str) -> str:
        return f'the header\'s "{key}" must be {what}, not {_short_json(value)}'

    for key in ("session", "inputs_digest", "verdicts"):
        if key not in data:
            return f'the header has no "{key}"'
    for key in ("session", "inputs_digest"):
        if not isinstance(data[key], str) or not data[key]:
            return wrong(key, data[key], "a non-empty string")
    if "sessionlens_version" in data and not isinstance(data["sessionlens_version"], str):
        return wrong("sessionlens_version", data["sessionlens_version"], "a string")
    verdicts = data["verdicts"]
    if not isinstance(verdicts, dict) or not all(isinstance(v, str) for v in verdicts.values()):
        return wrong("verdicts", verdicts, "an object of hypothesis ids and verdicts")
    args = data.get("args", {})
    if not isinstance(args, dict):
        return wrong("args", args, "an object")
    baseline = args.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        return wrong("args.baseline", baseline, "a config name or null")
    hyps = args.get("hypotheses", [])
    if not isinstance(hyps, list) or not all(isinstance(h, str) for h in hyps):
        return wrong("args.hypotheses", hyps, "a list of strings")
    return None


def _header_of(head: bytes) -> dict[str, Any] | str:
    """The header of a report from its first bytes, or what is wrong with it."""
    nl = head.find(b"\n")
    if nl < 0 and len(head) > MAX_LINE_BYTES:
        return f"its first line is over {_mb(MAX_LINE_BYTES)}, too long for a sessionlens header"
    raw_first = head if nl < 0 else head[:nl]
    try:
        first = raw_first.decode("utf-8")
    except UnicodeDecodeError:
        return "its first line is not UTF-8 text, so it holds no sessionlens header"
    if first.startswith(HEADER_PREFIX):
        if not first.endswith(HEADER_SUFFIX):
            if HEADER_SUFFIX in first:
                return "text follows the sessionlens header's `-->` on the first line"
            return "the sessionlens header on the first line does not end with ` -->`"
        body = first[len(HEADER_PREFIX) : -len(HEADER_SUFFIX)]
    else:
        pos = head[:HEAD_BYTES].find(MARK)
        if pos < 0:
            return (
                "it has no sessionlens header: its first line must be `<!-- sessionlens: {…} -->`"
            )
        line = head[:pos].count(b"\n") + 1
        if line > 1:
            return f"the sessionlens header is on line {line}; it must be the first line"
        if pos == 0:
            return "the sessionlens header must start `<!-- sessionlens: ` (one space, then JSON)"
        if head.startswith(b"\xef\xbb\xbf") and pos == 3:
            return "a byte order mark comes before the sessionlens header; it must start the file"
        return "text comes before the sessionlens header; it must start the first line"
    try:
        data = json.loads(body)
    except RecursionError:
        return "the sessionlens header is not valid JSON: nested too deeply"
    except json.JSONDecodeError as exc:  # the column counted on the report's line
        column = len(HEADER_PREFIX) + exc.colno
        return f"the sessionlens header is not valid JSON: {exc.msg} (column {column})"
    except ValueError as exc:
        return f"the sessionlens header is not valid JSON: {exc}"
    if not isinstance(data, dict):
        return "the sessionlens header must be a JSON object"
    return _type_problem(data) or data


def read_header(path: Path) -> dict[str, Any] | None:
    """The header of a report, or None when it has none or a damaged one."""
    try:
        got = _header_of(_read_head(path))
    except _Refused:
        return None
    return got if isinstance(got, dict) else None


# ---------------------------------------------------------------- where reports are


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
    except ValueError:
        return False
    return True


def _in_folder(folder: Path) -> list[Path]:
    """The reports of one folder (not below it), in name order."""
    try:
        names = sorted(e.name for e in os.scandir(folder))
    except OSError:
        return []
    return [folder / n for n in names if is_report(folder / n)]


def _under(root: Path) -> Iterator[Path]:
    """Every report under `root`, depth first in name order, links to folders not followed.
    No recursion (any depth is walked); skipped: dot-folders and tool folders (SKIP_DIRS)."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            path = folder / entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if entry.name not in SKIP_DIRS and not entry.name.startswith("."):
                    subdirs.append(path)
            elif is_report(path):
                yield path
        stack.extend(reversed(subdirs))


def _twin(path: Path) -> Path | None:
    """The JSON twin of a report: `report.json` beside `report.md`; `X.json` beside `X.md`
    when it is a sessionlens JSON report (it has an `inputs_digest`)."""
    twin = path.with_suffix(".json")
    if path.name == REPORT_NAME:
        return twin if os.path.lexists(twin) else None
    try:
        data = json.loads(_read_bounded(twin))
    except (_Refused, ValueError, RecursionError):
        return None
    return twin if isinstance(data, dict) and "inputs_digest" in data else None


class _Staged:
    """The staged versions of a commit (DESIGN §8), checked out on demand into a temporary
    folder that stands for the repository: the report candidates and links at once, a
    session's files when its report is checked."""

    def __init__(self, cwd: Path) -> None:
        self.env = _git.absolute_env(cwd)
        top = _git.run(["rev-parse", "--show-toplevel"], cwd, self.env).rstrip(b"\n")
        self.top = Path(os.path.realpath(os.fsdecode(top)))
        self.entries: dict[str, str] = {}  # path -> mode, stage 0 only
        listing = _git.run(["ls-files", "--stage", "-z"], self.top, self.env)
        for rec in listing.split(b"\0"):
            meta, tab, name = rec.partition(b"\t")
            fields = meta.split(b" ")
            if not tab or len(fields) != 3 or fields[2] != b"0":
                continue
            self.entries[os.fsdecode(name)] = fields[0].decode("ascii", "replace")
        diff = _git.run(
            ["diff", "--cached", "--name-status", "--no-renames", "-z"], self.top, self.env
        ).split(b"\0")
        self.touched: list[str] = []
        i = 0
        while i < len(diff) and diff[i]:
            status = diff[i]
            n = 2 if status[:1] in (b"R", b"C") else 1
            self.touched.extend(os.fsdecode(p) for p in diff[i + 1 : i + 1 + n])
            i += 1 + n
        self.root = Path(os.path.realpath(tempfile.mkdtemp(prefix="sessionlens-staged-")))
        self._done: set[str] = set()
        first = [
            name
            for name, mode in self.entries.items()
            if mode == "120000"
            or name.lower().endswith(".md")
            or (name.lower().endswith(".json") and name[:-5] + ".md" in self.entries)
        ]
        self.checkout(first)

    def checkout(self, names: Iterable[str]) -> None:
        todo = [
            n
            for n in names
            if n not in self._done and self.entries.get(n, "160000") != "160000"  # no gitlinks
        ]
        if not todo:
            return
        data = b"".join(os.fsencode(n) + b"\0" for n in todo)
        _git.run(
            ["checkout-index", "--force", f"--prefix={self.root}/", "-z", "--stdin"],
            self.top,
            self.env,
            stdin=data,
        )
        self._done.update(todo)

    def checkout_folder(self, folder: Path) -> None:
        """Every staged file under `folder` (a path inside `root`)."""
        if not _inside(folder, self.root):
            return
        rel = folder.relative_to(self.root).as_posix()
        prefix = "" if rel == "." else rel + "/"
        self.checkout(n for n in self.entries if n.startswith(prefix))

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class _Scope:
    """Where `check` reads (the working tree, or the staged versions) and how it names paths:
    relative to the working directory, as the repository's own paths."""

    def __init__(self, cwd: Path, staged: _Staged | None = None) -> None:
        self.cwd = cwd
        self.staged = staged
        self._tops: dict[Path, Path | None] = {}

    def real(self, path: Path) -> Path:
        """A path in the tree being read."""
        p = Path(os.path.realpath(self.cwd / path))
        if self.staged is not None:
            if not _inside(p, self.staged.top):
                raise UsageError(
                    "is outside the repository being committed", path=_discover.display(str(path))
                )
            p = self.staged.root / p.relative_to(self.staged.top)
        return p

    def show(self, path: Path) -> str:
        """A path as the user sees it: relative to the working directory, escaped."""
        if self.staged is not None and _inside(path, self.staged.root):
            path = self.staged.top / path.relative_to(self.staged.root)
        return _discover.display(Path(os.path.relpath(path, self.cwd)).as_posix())

    def _top(self, folder: Path) -> Path | None:
        """The repository (a folder holding `.git`, a file in worktrees and submodules)
        that holds `folder`, found without running git."""
        seen: list[Path] = []
        here: Path | None = folder
        found: Path | None = None
        while here is not None:
            if here in self._tops:
                found = self._tops[here]
                break
            seen.append(here)
            if os.path.lexists(here / ".git"):
                found = here
                break
            here = here.parent if here.parent != here else None
        for p in seen:
            self._tops[p] = found
        return found

    def boundary(self, path: Path) -> tuple[Path, str]:
        """The folder no session may leave, and its name in messages."""
        if self.staged is not None:
            return self.staged.root, "the repository"
        folder = path if path.is_dir() else path.parent
        top = self._top(folder)
        if top is not None:
            return top, "the repository"
        if _inside(folder, self.cwd):
            return self.cwd, "the current folder (no git repository holds it)"
        return folder, "the folder checked (no git repository holds it)"

    def prepare(self, session_dir: Path) -> None:
        if self.staged is not None:
            self.staged.checkout_folder(session_dir)


def _session_of(path: Path, header: dict[str, Any], scope: _Scope) -> Path | Finding:
    """The session folder a sound header names, or the finding that refuses it: absolute,
    a NUL, or a path that leaves the repository (lexically, or through a link). Nothing
    outside is opened: the lexical test comes first, the links' test only stats them."""
    shown = scope.show(path)
    ref = header["session"]
    if "\x00" in ref:
        return Finding(shown, "the header's session holds a NUL character", "bad-header", 1)
    quoted = _short_json(ref)
    if os.path.isabs(ref) or ref.startswith("\\") or re.match(r"^[A-Za-z]:", ref):
        return Finding(
            shown,
            f"the header's session {quoted} is an absolute path; it must name the session "
            "relative to the report's folder",
            "bad-header",
            1,
        )
    boundary, where = scope.boundary(path)
    lexical = Path(os.path.normpath(path.parent / ref))
    if "\\x" in ref and not os.path.lexists(lexical):
        # `report` writes a name's bytes that are not UTF-8 as \xNN: read them back
        raw = re.sub(r"\\x([89a-f][0-9a-f])", lambda m: chr(0xDC00 + int(m[1], 16)), ref)
        lexical = Path(os.path.normpath(path.parent / raw))
    if not _inside(lexical, boundary):
        return Finding(
            shown,
            f"the header's session {quoted} is outside {where}; not read",
            "outside-repository",
            1,
        )
    real = Path(os.path.realpath(lexical))
    if not _inside(real, Path(os.path.realpath(boundary))):
        return Finding(
            shown,
            f"the header's session {quoted} leads outside {where} through a symbolic link; "
            "not read",
            "outside-repository",
            1,
        )
    return real


def fix_command(rep: Committed, scope: _Scope) -> str:
    """The exact command that regenerates a report, from the working directory."""
    args = rep.header.get("args") or {}
    parts = ["sessionlens", "report", scope.show(rep.session_dir), "--out", scope.show(rep.path)]
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
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _input_advice(fix: str) -> str:
    return f"settle the inputs named above, then regenerate it: {fix}"


def check_report(rep: Committed, scope: _Scope) -> CheckResult:
    """Re-analyse one report's session with its recorded arguments and compare."""
    from .analysis import analyze
    from .render import render_report
    from .session import load_session

    shown = scope.show(rep.path)
    session_shown = scope.show(rep.session_dir)
    fix = fix_command(rep, scope)
    result = CheckResult(
        report=shown, session=session_shown, fix=fix, advice=f"to regenerate it, run: {fix}"
    )
    args = rep.header.get("args") or {}
    scope.prepare(rep.session_dir)
    if not rep.session_dir.is_dir():
        result.findings.append(
            Finding(
                shown, f"its session folder {session_shown} does not exist", "missing-session", 1
            )
        )
        return result
    try:
        raw = _read_bounded(rep.path)
        committed_md = _text(raw)
    except _Refused as exc:
        result.findings.append(Finding(shown, exc.message, exc.code, exc.line))
        return result
    try:
        session = load_session(
            rep.session_dir,
            baseline=args.get("baseline"),
            hypotheses=list(args.get("hypotheses") or []),
            allow_empty=True,  # an empty session's diagnostics are the findings below
        )
    except ManifestError as exc:
        where = scope.show(Path(exc.path)) if exc.path else session_shown
        result.findings.append(Finding(where, exc.message, "bad-manifest", exc.line))
        return result
    except SessionlensError as exc:
        result.findings.append(
            Finding(shown, f"cannot analyse its session: {exc.message}", "unreadable-session", None)
        )
        return result
    manifest = scope.show(rep.session_dir / _discover.MANIFEST)
    for d in session.diagnostics:
        if d.code in BLOCKING_CODES:
            where = scope.show(rep.session_dir / d.file) if d.file else session_shown
            # the fix a message names is in the session's manifest, wherever check runs
            message = d.message.replace(f" in {_discover.MANIFEST}", f" in {manifest}")
            result.findings.append(Finding(where, message, d.code, d.line))
            result.advice = _input_advice(fix)
    if len(session.columns) == 0:
        result.findings.append(
            Finding(shown, "no sample can be read from its session anymore", "unreadable-session")
        )
        return result
    analysis = analyze(session, consume=True)  # its samples are not used again
    ref = Path(os.path.relpath(rep.session_dir, rep.path.parent)).as_posix()
    fresh_md = render_report(analysis, "md", ref)
    result.findings.extend(_compare_md(shown, committed_md, fresh_md))
    twin = _twin(rep.path)
    if twin is not None:
        twin_shown = scope.show(twin)
        try:
            old_json = _text(_read_bounded(twin))
        except _Refused as exc:
            result.findings.append(Finding(twin_shown, exc.message, exc.code, exc.line))
            return result
        fresh_json = render_report(analysis, "json", ref)
        result.findings.extend(_compare_json(twin_shown, old_json, fresh_json))
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


def _compare_json(shown: str, text: str, fresh: str) -> list[Finding]:
    try:
        old = json.loads(text)
    except RecursionError:
        return [Finding(shown, "cannot read it as JSON: nested too deeply", "unreadable-report")]
    except ValueError as exc:
        return [Finding(shown, f"cannot read it as JSON: {exc}", "unreadable-report")]
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


class _Checker:
    """Chooses the reports to check and checks each once."""

    def __init__(self, scope: _Scope) -> None:
        self.scope = scope
        self.results: dict[Path, CheckResult] = {}
        self._seen: dict[Path, Committed | Finding] = {}
        self._scans: dict[Path, list[Path]] = {}

    def inspect(self, path: Path) -> Committed | Finding:
        """A report's header, validated (read once per run)."""
        got = self._seen.get(path)
        if got is None:
            got = self._inspect(path)
            self._seen[path] = got
        return got

    def _inspect(self, path: Path) -> Committed | Finding:
        shown = self.scope.show(path)
        try:
            header = _header_of(_read_head(path))
        except _Refused as exc:
            return Finding(shown, exc.message, exc.code, exc.line)
        if isinstance(header, str):
            return Finding(shown, header, "bad-header", 1)
        session = _session_of(path, header, self.scope)
        if isinstance(session, Finding):
            return session
        return Committed(path, header, session)

    def full(self, path: Path) -> None:
        """Check a report whatever it claims."""
        if path in self.results:
            return
        got = self.inspect(path)
        if isinstance(got, Finding):
            self.results[path] = self._refused(path, got)
        else:
            self.results[path] = check_report(got, self.scope)

    def _refused(self, path: Path, finding: Finding) -> CheckResult:
        shown = self.scope.show(path)
        command = f"sessionlens report SESSION --out {shlex.quote(shown)}"
        advice = f"regenerate it from its session: {command}"
        if finding.code == "report-is-link":
            advice = f"replace the link with the report itself: {command}"
        return CheckResult(report=shown, session=None, fix=None, findings=[finding], advice=advice)

    def claims(self, rep: Committed, target: Path) -> bool:
        twin = rep.path.with_suffix(".json")
        return target in (rep.path, twin) or _inside(target, rep.session_dir)

    def every(self, root: Path) -> None:
        for path in _under(root):
            self.full(path)

    def touching(self, target: Path) -> None:
        """The reports a path concerns: every report under it (a folder); each report met
        walking up from it to the repository root, validated, and checked when it claims the
        path; every report of the repository whose session holds it."""
        boundary, _ = self.scope.boundary(target)
        if target.is_dir():
            self.every(target)
        start = target
        while not start.is_dir() and start != start.parent:
            start = start.parent  # a deleted file: its nearest folder still there
        here = start
        while True:
            for path in _in_folder(here):
                got = self.inspect(path)
                if isinstance(got, Finding):
                    self.results.setdefault(path, self._refused(path, got))
                elif self.claims(got, target):
                    self.full(path)
            if here == boundary or not _inside(here, boundary) or here == here.parent:
                break
            here = here.parent
        if boundary not in self._scans:
            self._scans[boundary] = list(_under(boundary))
        for path in self._scans[boundary]:
            got = self.inspect(path)
            if isinstance(got, Committed) and self.claims(got, target):
                self.full(path)


def find_reports(root: Path) -> Iterator[Committed | Finding]:
    """Every report under `root` (by name and first line, DESIGN §8) as `check` reads it from
    the working tree: a `Committed` with the session folder its header names, or the
    `Finding` that refuses it (a damaged header, a session outside the repository, a link).
    `history` finds its sessions by it (DESIGN §10)."""
    root = Path(os.path.realpath(root))
    checker = _Checker(_Scope(root))
    for path in _under(root):
        yield checker.inspect(path)


def _git_failed(exc: Exception) -> list[CheckResult]:
    finding = Finding("sessionlens", f"cannot read the staged changes: {exc}", "git-failed")
    return [CheckResult(report="sessionlens", session=None, fix=None, findings=[finding])]


def run_check(paths: Sequence[Path], cwd: Path, staged: bool | None = None) -> list[CheckResult]:
    """Check the reports the paths touch; without paths, inside a commit the reports its
    staged diff touches (every staged report when it touches nothing), else every report
    under `cwd`. Inside a commit the staged versions are read, else the working tree."""
    cwd = Path(os.path.realpath(cwd))
    if staged is None:
        staged = in_commit()
    if not staged:
        checker = _Checker(_Scope(cwd))
        if paths:
            for p in paths:
                checker.touching(checker.scope.real(p))
        else:
            checker.every(cwd)
        return list(checker.results.values())
    try:
        tree = _Staged(cwd)
    except _git.GitError as exc:
        return _git_failed(exc)
    try:
        checker = _Checker(_Scope(cwd, tree))
        if paths:
            targets = [checker.scope.real(p) for p in paths]
        else:
            targets = [tree.root / name for name in tree.touched]
        if targets:
            for target in targets:
                checker.touching(target)
        else:
            checker.every(checker.scope.real(Path(".")))
        return list(checker.results.values())
    except _git.GitError as exc:
        return _git_failed(exc)
    finally:
        with contextlib.suppress(OSError):
            tree.close()
