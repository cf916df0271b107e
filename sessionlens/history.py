"""`sessionlens history RESULTS`: the sessions of a results repository over time (DESIGN §10).

Owns finding the sessions (their committed reports, found and read by `check`'s functions;
a folder with a `sessionlens.toml` and no report), each session's date, the facts of each
analysed session cached per inputs digest under `RESULTS/.sessionlens-cache/`, the series per
(config, metric, load point), their change points and the newest session's verdict. The
statistics are `stats`'s; it words nothing, prints nothing and writes only its cache.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import math
import os
import re
import secrets
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import __version__, metrics, stats
from . import diagnostics as dg
from .errors import ManifestError, SessionlensError, UsageError

if TYPE_CHECKING:
    import polars as pl

    from .analysis import Analysis, MetricSummary

__all__ = ["History", "HistoryData", "history", "load_history"]

SETTINGS_FILE = "sessionlens-history.toml"
CACHE_DIR = ".sessionlens-cache"
CACHE_VERSION = 1  # bump when `Facts` or the samples kept change
# A series' metrics (DESIGN §10): its sessions' claimed metrics plus these, where present.
THROUGHPUT = ("throughput_tok_s", "output_throughput_tok_s", "gen_throughput_tok_s")
DEFAULT_MIN_EFFECT = 0.02
ALPHA = 0.05

W_UNKNOWN_DIRECTION = "unknown-direction"  # judged as if higher were better
LatestVerdict = Literal["regression", "improvement", "no-change"]
DateFrom = Literal["logs", "commit", "folder"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ---------------------------------------------------------------- the JSON contract (§10)


class HistoryPoint(_Model):
    """One session's level of a series, with its interval and launches (its report's)."""

    session: str
    date: str | None
    level: float
    ci_low: float | None
    ci_high: float | None
    launches: int


class HistoryChangePoint(_Model):
    """A shift of level: the session where the new regime starts, r = after/before − 1 of the
    regimes' means with its Fieller interval, and whether it exceeds the launch noise."""

    session: str
    change: float | None
    ci_low: float | None
    ci_high: float | None
    date: str | None = None
    index: int = 0  # the session's position in the series (0-based)
    before: float | None = None  # mean level of the regime that ends
    after: float | None = None  # mean level of the regime that starts
    sessions_before: int = 0
    sessions_after: int = 0
    p_value: float | None = None  # e-divisive's permutation p-value
    above_noise: bool | None = None  # the interval lies outside ± the launch noise


class Latest(_Model):
    """The newest session against the sessions since the last change point before it:
    r = newest/mean(regime) − 1 and its prediction interval, judged with e > 0 better."""

    verdict: LatestVerdict
    change: float | None
    ci_low: float | None
    ci_high: float | None
    session: str = ""
    since: str = ""  # the regime's first session
    sessions: int = 0  # the regime's sessions (the newest not counted)
    min_effect: float = DEFAULT_MIN_EFFECT
    df: float | None = None
    warnings: list[str] = Field(default_factory=list)


class SeriesNoise(_Model):
    """The launch noise pooled over the sessions' reports, and the session-to-session CV
    within regimes that the intervals of the history use."""

    launch_cv: float
    source: Literal["measured", "given", "assumed"]
    df: float | None  # None: given or assumed (known exactly)
    sessions: int  # sessions whose reports measured it
    session_cv: float | None
    session_df: int


class HistorySeries(_Model):
    config: str
    metric: str
    points: list[HistoryPoint]
    change_points: list[HistoryChangePoint]
    latest: Latest | None
    load: str | None = None
    unit: str = ""
    better: Literal["higher", "lower"] | None = None
    noise: SeriesNoise | None = None


class HistorySession(_Model):
    """A session of the history: its name (the folder relative to RESULTS), its date and
    where the date comes from, its committed report, and what was noted about it."""

    session: str
    date: str | None
    date_from: DateFrom
    report: str | None
    title: str = ""
    inputs_digest: str | None = None
    analysed: bool = True


class Method(_Model):
    name: Literal["e-divisive"] = "e-divisive"
    alpha: float = stats.CP_ALPHA
    permutations: int = stats.CP_PERMUTATIONS
    min_size: int = stats.CP_MIN_SIZE
    seed: int = stats.CP_SEED
    window: int = stats.CP_WINDOW


class History(_Model):
    """The history JSON (DESIGN §10, contract: `series` and its fields), extended with the
    sessions, the settings it ran with and its diagnostics."""

    sessionlens_version: str
    results: str
    series: list[HistorySeries]
    sessions: list[HistorySession] = Field(default_factory=list)
    metrics: list[str] = Field(default_factory=list)
    min_effect: float = DEFAULT_MIN_EFFECT
    alpha: float = ALPHA
    method: Method = Field(default_factory=Method)
    diagnostics: list[dg.Diagnostic] = Field(default_factory=list)


# ---------------------------------------------------------------- the cache of one session


class _Level(_Model):
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    launches: int


class _Config(_Model):
    name: str
    metrics: dict[str, _Level]
    points: dict[str, dict[str, _Level]]


class _Noise(_Model):
    launch_cv: float
    source: Literal["measured", "given", "assumed"]
    df: float | None


class Facts(_Model):
    """What history keeps of an analysed session (cached under its key)."""

    version: int
    key: str
    inputs_digest: str
    title: str
    log_date: str | None
    configs: list[_Config]
    noise: dict[str, _Noise]
    claimed: list[str]
    diagnostics: list[dg.Diagnostic]


def _level(s: MetricSummary) -> _Level:
    return _Level(mean=s.mean, ci_low=s.ci_low, ci_high=s.ci_high, launches=s.launches)


def facts_of(analysis: Analysis, key: str, log_date: str | None) -> Facts:
    """The facts of an analysis (every metric of every config: the cache does not depend on
    which metrics a history shows)."""
    return Facts(
        version=CACHE_VERSION,
        key=key,
        inputs_digest=analysis.inputs_digest,
        title=analysis.title,
        log_date=log_date,
        configs=[
            _Config(
                name=c.name,
                metrics={m: _level(s) for m, s in c.metrics.items()},
                points={
                    load: {m: _level(s) for m, s in by.items()} for load, by in c.points.items()
                },
            )
            for c in analysis.configs
        ],
        noise={
            m: _Noise(launch_cv=n.launch_cv, source=n.source, df=n.df)
            for m, n in analysis.noise.items()
        },
        claimed=list(dict.fromkeys(h.metric for h in analysis.hypotheses)),
        diagnostics=[d for d in analysis.diagnostics if d.level == "error"],
    )


# ---------------------------------------------------------------- dates

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2}))?")


def parse_date(text: str) -> datetime | None:
    """A timestamp as logs print it, where it names a day: `2026-03-10 12:58:04[.123]` (or
    with `T`). `03-10 12:58:04` (vLLM: no year) and `12:58:04` are no date."""
    m = _DATE.match(text.strip())
    if m is None:
        return None
    y, mo, d, h, mi, s = (int(g) if g else 0 for g in m.groups())
    try:
        return datetime(y, mo, d, h, mi, s)
    except ValueError:
        return None


def earliest_date(samples: pl.DataFrame) -> datetime | None:
    """The earliest timestamp the tidy `ts` column carries that is a date."""
    if "ts" not in samples.columns or samples.height == 0:
        return None
    import polars as pl

    texts = samples.select(pl.col("ts").cast(pl.String).drop_nulls().unique())["ts"].to_list()
    found = [d for t in texts if (d := parse_date(t)) is not None]
    return min(found) if found else None


def _iso(d: datetime) -> str:
    return d.strftime("%Y-%m-%dT%H:%M:%S")


def _utc(text: str) -> datetime | None:
    try:
        d = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if d.tzinfo is not None:
        d = d.astimezone(UTC).replace(tzinfo=None)
    return d


def commit_dates(root: Path, files: Sequence[Path]) -> dict[Path, datetime]:
    """The commit date (UTC) of the last commit touching each of `files`, as
    `git log -1 --format=%cI -- FILE` gives it, from one `git log` over `root` (run by
    `_git`, the one place that runs a program); {} when git is missing or `root` is in no
    repository. Keys are the files as given."""
    from . import _git

    if not files:
        return {}
    # not a commit's environment (GIT_DIR, GIT_INDEX_FILE of a hook): the repository of root
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}

    def run(*args: str) -> bytes | None:
        try:
            return _git.run(args, root, env)
        except _git.GitError:
            return None

    top = run("rev-parse", "--show-toplevel")
    if top is None:
        return {}
    top_dir = Path(os.path.realpath(os.fsdecode(top.rstrip(b"\n"))))
    wanted: dict[bytes, Path] = {}
    for f in files:
        real = Path(os.path.realpath(f))
        if real.is_relative_to(top_dir):
            wanted[os.fsencode(real.relative_to(top_dir).as_posix())] = f
    out = run("log", "-z", "--format=%x01%cI", "--name-only", "--", ".")
    if out is None:
        return {}
    dates: dict[Path, datetime] = {}
    for chunk in out.split(b"\x01")[1:]:
        head, _, names = chunk.partition(b"\x00")
        when = _utc(head.decode("ascii", "replace"))
        if when is None:
            continue
        for name in names.lstrip(b"\n").split(b"\x00"):
            got = wanted.get(name)
            if got is not None and got not in dates:
                dates[got] = when
        if len(dates) == len(wanted):
            break
    return dates


# ---------------------------------------------------------------- finding the sessions


@dataclass(frozen=True)
class _Found:
    """A session to read: its folder, its committed report (if any) and recorded args."""

    folder: Path
    report: Path | None
    baseline: str | None
    hypotheses: tuple[str, ...]


def _manifest_folders(root: Path) -> Iterator[Path]:
    """Folders under `root` that hold a `sessionlens.toml` (dot-folders and tool folders
    skipped, as `check` skips them)."""
    from .check import SKIP_DIRS

    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        if "sessionlens.toml" in files:
            yield Path(folder)


def find_sessions(root: Path, diags: list[dg.Diagnostic]) -> list[_Found]:
    """Every session under `root`: those its committed reports name (`check.find_reports`,
    the report's recorded args kept), then folders with a manifest and no report."""
    from .check import Finding, find_reports

    real_root = Path(os.path.realpath(root))
    found: dict[Path, _Found] = {}
    for rep in find_reports(root):
        if isinstance(rep, Finding):  # a report `check` refuses: named, its session not read
            code = "history-outside" if rep.code == "outside-repository" else "history-bad-report"
            diags.append(dg.make(code, rep.path, rep.line, f"{rep.message} ({rep.code})"))
            continue
        shown = rep.path.relative_to(real_root).as_posix()
        folder = Path(os.path.realpath(rep.session_dir))
        if not folder.is_relative_to(real_root):
            diags.append(
                dg.make(
                    "history-outside",
                    shown,
                    1,
                    "its header names a session outside the results folder; not read",
                )
            )
            continue
        if folder in found:
            continue  # a second report of one session (another format's twin): read once
        args = rep.header.get("args")
        args = args if isinstance(args, dict) else {}
        hyps = args.get("hypotheses") or []
        baseline = args.get("baseline")
        found[folder] = _Found(
            folder,
            rep.path,
            baseline if isinstance(baseline, str) else None,
            tuple(str(h) for h in hyps) if isinstance(hyps, list) else (),
        )
    for folder in _manifest_folders(root):
        real = Path(os.path.realpath(folder))
        if real in found or any(real.is_relative_to(f) for f in found):
            continue
        found[real] = _Found(real, None, None, ())
        diags.append(
            dg.make(
                "history-no-report",
                _name(real, real_root),
                None,
                "this session has no committed report; it was analysed with no recorded "
                "arguments (run `sessionlens report` on it and commit the report)",
            )
        )
    return list(found.values())


def _name(folder: Path, root: Path) -> str:
    rel = folder.relative_to(root).as_posix()
    return root.name if rel == "." else rel


# ---------------------------------------------------------------- reading a session, cached


class _Hashes:
    """The sha256 of input files, remembered in the cache by their stat (size, mtime, ctime,
    inode) as git's index does, so that an unchanged file is not read again. A file changed
    in the last seconds is not remembered (its next change could keep its times)."""

    FILE = "hashes.json"
    RACY_S = 2.0

    def __init__(self, cache: _Cache) -> None:
        self.cache = cache
        self.seen: dict[str, list[int | str]] = {}
        self.used: dict[str, list[int | str]] = {}
        if cache.enabled:
            with contextlib.suppress(OSError, ValueError, TypeError):
                data = json.loads((cache.folder / self.FILE).read_bytes())
                if isinstance(data, dict) and data.get("version") == CACHE_VERSION:
                    self.seen = dict(data["files"])

    def __call__(self, path: Path) -> str:
        import time

        from .session import hash_file

        st = os.stat(path)
        stamp: list[int | str] = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        name = os.path.realpath(path)
        old = self.seen.get(name)
        if old is not None and old[:4] == stamp and isinstance(old[4], str):
            self.used[name] = old
            return old[4]
        sha = hash_file(path)
        if time.time() - max(st.st_mtime_ns, st.st_ctime_ns) / 1e9 > self.RACY_S:
            self.used[name] = [*stamp, sha]
        return sha

    def save(self) -> None:
        if self.cache.enabled and self.used != self.seen and self.cache.folder.is_dir():
            with contextlib.suppress(OSError):
                doc = {"version": CACHE_VERSION, "files": self.used}
                self.cache._write(self.FILE, json.dumps(doc).encode())


def _cache_key(found: _Found, hashes: _Hashes) -> str:
    from .session import inputs_digest

    manifest = found.folder / "sessionlens.toml"
    try:
        manifest_sha = hashlib.sha256(manifest.read_bytes()).hexdigest()
    except OSError:
        manifest_sha = None
    facts = {
        "cache": CACHE_VERSION,
        "sessionlens": __version__,
        "inputs": inputs_digest(found.folder, hashes),
        "manifest": manifest_sha,
        "baseline": found.baseline,
        "hypotheses": list(found.hypotheses),
    }
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


class _Cache:
    """`RESULTS/.sessionlens-cache/`: per key a `<key>.json` of facts and a `<key>.parquet`
    of the session's tidy samples. Never an input (a dot-folder, DESIGN §2), safe to delete:
    a missing, damaged or unwritable entry is read again from the logs."""

    def __init__(self, root: Path, enabled: bool) -> None:
        self.folder = root / CACHE_DIR
        self.enabled = enabled
        self.used: set[str] = set()
        self.unwritable = False

    def get(self, key: str) -> Facts | None:
        self.used.add(key)
        if not self.enabled:
            return None
        try:
            facts = Facts.model_validate_json((self.folder / f"{key}.json").read_bytes())
        except (OSError, ValidationError, ValueError):
            return None
        if facts.version != CACHE_VERSION or facts.key != key:
            return None
        if not (self.folder / f"{key}.parquet").is_file():
            return None
        return facts

    def put(self, facts: Facts, samples: pl.DataFrame) -> None:
        if not self.enabled or self.unwritable:
            return
        import io

        buf = io.BytesIO()
        samples.write_parquet(buf)
        try:
            if not self.folder.is_dir():
                self.folder.mkdir()
                # as pytest's cache does: git never sees it, and it says what it is
                self._write(".gitignore", b"# sessionlens history's cache; safe to delete\n*\n")
            # the samples first: an entry whose facts are there has its samples too
            self._write(f"{facts.key}.parquet", buf.getvalue())
            self._write(f"{facts.key}.json", facts.model_dump_json().encode())
        except OSError:
            self.unwritable = True

    def _write(self, name: str, data: bytes) -> None:
        """Temp file and rename, without fsync: a lost entry is only read again."""
        tmp = self.folder / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            tmp.write_bytes(data)
            os.replace(tmp, self.folder / name)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    def samples(self, key: str) -> pl.DataFrame:
        import polars as pl

        return pl.read_parquet(self.folder / f"{key}.parquet")

    def prune(self) -> None:
        """Entries no session of this run uses (their inputs changed, or they are gone)."""
        if not self.enabled or not self.folder.is_dir():
            return
        for entry in os.scandir(self.folder):
            stem, _, suffix = entry.name.partition(".")
            named = suffix in ("json", "parquet") and re.fullmatch(r"[0-9a-f]{64}", stem)
            if named and stem not in self.used:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _analyse(found: _Found, key: str) -> tuple[Facts, pl.DataFrame]:
    """Load and analyse one session with its report's recorded args (as `check` does)."""
    from .analysis import analyze
    from .session import load_session

    # a session without samples is refused there (InputError), as `report` refuses it
    session = load_session(found.folder, baseline=found.baseline, hypotheses=found.hypotheses)
    samples = session.samples
    when = earliest_date(samples)
    facts = facts_of(analyze(session), key, _iso(when) if when else None)
    return facts, samples


# ---------------------------------------------------------------- settings


@dataclass(frozen=True)
class Settings:
    """`RESULTS/sessionlens-history.toml`: `min_effect` (a fraction, default 0.02) and
    `metrics` (the series' metrics, instead of claims and throughput)."""

    min_effect: float = DEFAULT_MIN_EFFECT
    metrics: tuple[str, ...] = ()


def read_settings(root: Path) -> Settings:
    """The history settings of a results folder (a malformed file is a ManifestError)."""
    path = root / SETTINGS_FILE
    shown = str(path)
    if not path.is_file():
        return Settings()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"cannot read it: {exc}", path=shown) from None
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"invalid TOML: {exc}", path=shown) from None
    unknown = sorted(set(data) - {"min_effect", "metrics"})
    if unknown:
        raise ManifestError(f"unknown key {unknown[0]!r} (keys: min_effect, metrics)", path=shown)
    min_effect = data.get("min_effect", DEFAULT_MIN_EFFECT)
    if (
        isinstance(min_effect, bool)
        or not isinstance(min_effect, int | float)
        or not 0 <= min_effect < 1
    ):
        raise ManifestError(
            "min_effect must be a fraction between 0 and 1 (0.02 is 2 %)", path=shown
        )
    names = data.get("metrics", [])
    if not isinstance(names, list) or not all(isinstance(m, str) for m in names):
        raise ManifestError("metrics must be a list of metric names", path=shown)
    return Settings(float(min_effect), tuple(names))


# ---------------------------------------------------------------- the history


class HistoryData:
    """A history and, beside it, the tidy samples of each of its sessions (read from the
    cache on demand; never a pydantic field)."""

    def __init__(
        self,
        history: History,
        samples: dict[str, tuple[_Cache, str] | pl.DataFrame],
        folders: Sequence[Path] = (),
    ) -> None:
        self.history = history
        self._samples = samples
        self.folders = list(folders)  # every session folder read (real paths)

    def samples(self, session: str) -> pl.DataFrame:
        """The tidy samples (DESIGN §3) of one session of the history."""
        got = self._samples[session]
        if isinstance(got, tuple):
            cache, key = got
            return cache.samples(key)
        return got


@dataclass
class _Read:
    found: _Found
    name: str
    facts: Facts
    date: datetime | None
    date_from: DateFrom


def load_history(
    results: str | Path, metrics: Sequence[str] | None = None, cache: bool = True
) -> HistoryData:
    """Read every session under `results` and build its history (DESIGN §10)."""
    root = Path(results)
    if not root.exists():
        raise UsageError("no such folder", path=str(results))
    if not root.is_dir():
        raise UsageError("not a folder: `history` takes a results folder", path=str(results))
    settings = read_settings(root)
    diags: list[dg.Diagnostic] = []
    real_root = Path(os.path.realpath(root))
    store = _Cache(root, cache)
    hashes = _Hashes(store)
    reads: list[_Read] = []
    samples: dict[str, tuple[_Cache, str] | pl.DataFrame] = {}
    skipped: list[HistorySession] = []
    for found in find_sessions(root, diags):
        name = _name(found.folder, real_root)
        report = found.report.relative_to(root).as_posix() if found.report else None
        key = _cache_key(found, hashes)
        facts = store.get(key)
        if facts is not None:
            samples[name] = (store, key)
        else:
            try:
                facts, frame = _analyse(found, key)
            except SessionlensError as exc:
                diags.append(
                    dg.make(
                        "history-unreadable-session",
                        name,
                        None,
                        f"cannot analyse this session: {exc.message}",
                    )
                )
                skipped.append(
                    HistorySession(
                        session=name, date=None, date_from="folder", report=report, analysed=False
                    )
                )
                continue
            store.put(facts, frame)
            samples[name] = frame if store.unwritable or not cache else (store, key)
        when = _utc(facts.log_date) if facts.log_date else None
        reads.append(_Read(found, name, facts, when, "logs" if when else "folder"))
    undated = [r.found.report for r in reads if r.date is None and r.found.report is not None]
    if undated:
        dates = commit_dates(root, undated)
        for r in reads:
            got = dates.get(r.found.report) if r.found.report is not None else None
            if r.date is None and got is not None:
                r.date, r.date_from = got, "commit"
    store.prune()
    hashes.save()
    # ordered by date; sessions without one (no log date, no commit: the one just made) last
    reads.sort(key=lambda r: (r.date is None, r.date or datetime.min, r.name))
    for r in reads:
        if r.date is None:
            diags.append(
                dg.make(
                    "history-undated",
                    r.name,
                    None,
                    "no timestamp in its logs names a day and its report is not committed; "
                    "ordered by its folder name after the dated sessions",
                )
            )
        for d in r.facts.diagnostics:
            diags.append(d.model_copy(update={"file": f"{r.name}/{d.file}" if d.file else r.name}))
    wanted = _metrics(list(metrics or settings.metrics), reads)
    sessions = [
        HistorySession(
            session=r.name,
            date=_iso(r.date) if r.date else None,
            date_from=r.date_from,
            report=r.found.report.relative_to(root).as_posix() if r.found.report else None,
            title=r.facts.title,
            inputs_digest=r.facts.inputs_digest,
        )
        for r in reads
    ]
    series = build_series(reads, wanted, settings.min_effect)
    result = History(
        sessionlens_version=__version__,
        results=real_root.name,
        series=series,
        sessions=sessions + skipped,
        metrics=wanted or [],
        min_effect=settings.min_effect,
        diagnostics=diags,
    )
    return HistoryData(result, samples, [r.found.folder for r in reads])


def history(results: str | Path, metrics: Sequence[str] | None = None) -> History:
    """The history of every session under `results` (DESIGN §10)."""
    return load_history(results, metrics).history


def _metrics(asked: list[str], reads: Sequence[_Read]) -> list[str] | None:
    """The metrics asked for (`--metric` or the settings), each checked against those the
    sessions have; None: each session's claimed metrics plus the throughput ones."""
    if not asked:
        return None
    known = sorted(
        {m for r in reads for c in r.facts.configs for m in (*c.metrics, *_point_metrics(c))}
    )
    for m in asked:
        if m not in known:
            near = difflib.get_close_matches(m, known, n=1)
            hint = f"; did you mean {near[0]}?" if near else ""
            raise UsageError(f"metric {m!r} is in no session{hint}")
    return list(dict.fromkeys(asked))


def _point_metrics(c: _Config) -> set[str]:
    return {m for by in c.points.values() for m in by}


SeriesKey = tuple[str, str, str | None]


def build_series(
    reads: Sequence[_Read], wanted: list[str] | None, min_effect: float
) -> list[HistorySeries]:
    """The series of every (config, metric, load point) that recurs (two sessions or more),
    in order of first appearance."""
    levels: dict[SeriesKey, list[tuple[_Read, _Level]]] = {}
    for r in reads:
        names = wanted if wanted is not None else [*r.facts.claimed, *THROUGHPUT]
        for c in r.facts.configs:
            for m in dict.fromkeys(names):
                by_point = [(load, by[m]) for load, by in c.points.items() if m in by]
                if by_point:
                    for load, lv in by_point:
                        if _usable(lv):
                            levels.setdefault((c.name, m, load), []).append((r, lv))
                elif m in c.metrics and _usable(c.metrics[m]):
                    levels.setdefault((c.name, m, None), []).append((r, c.metrics[m]))
    return [_series(key, found, min_effect) for key, found in levels.items() if len(found) >= 2]


def _usable(lv: _Level) -> bool:
    return lv.mean is not None and math.isfinite(lv.mean)


def _date(r: _Read) -> str | None:
    return _iso(r.date) if r.date else None


def _launch_noise(
    metric: str, found: Sequence[tuple[_Read, _Level]]
) -> tuple[float, stats.NoiseSource, float | None, int]:
    """The launch noise over the series' sessions: their measured σ_L pooled by degrees of
    freedom, else a given one (the median), else the assumed 2 %."""
    noises = [r.facts.noise[metric] for r, _ in found if metric in r.facts.noise]
    measured = [(n.launch_cv, n.df) for n in noises if n.source == "measured" and n.df]
    pooled = stats.pooled_cv(measured)
    if pooled is not None:
        return pooled[0], "measured", pooled[1], len(measured)
    given = sorted(n.launch_cv for n in noises if n.source == "given")
    if given:
        return given[len(given) // 2], "given", None, 0
    return stats.ASSUMED_LAUNCH_CV, "assumed", None, 0


def _series(
    key: SeriesKey, found: Sequence[tuple[_Read, _Level]], min_effect: float
) -> HistorySeries:
    config, metric, load = key
    meta = metrics.get(metric)
    values = [lv.mean for _, lv in found if lv.mean is not None]
    points = [
        HistoryPoint(
            session=r.name,
            date=_date(r),
            level=lv.mean,
            ci_low=lv.ci_low,
            ci_high=lv.ci_high,
            launches=lv.launches,
        )
        for r, lv in found
        if lv.mean is not None
    ]
    cv, source, df, measured = _launch_noise(metric, found)
    found_cps = stats.e_divisive(values).change_points
    cuts = [c.index for c in found_cps]
    # The newest session is judged, not measured with: the regimes' means and the
    # session-to-session noise are those of the sessions before it.
    past = len(values) - 1
    noise = stats.regime_noise(values[:past], [c for c in cuts if c < past])
    change_points = []
    edges = [0, *cuts, past]
    for i, cp in enumerate(found_cps, 1):
        before, after = values[edges[i - 1] : edges[i]], values[edges[i] : edges[i + 1]]
        r = stats.shift_ratio(before, after, noise, ALPHA)
        above = None
        if r.ci_low is not None and r.ci_high is not None:
            above = r.ci_low > cv or r.ci_high < -cv
        change_points.append(
            HistoryChangePoint(
                session=points[cp.index].session,
                change=r.change,
                ci_low=r.ci_low,
                ci_high=r.ci_high,
                date=points[cp.index].date,
                index=cp.index,
                before=stats.fmean(before),
                after=stats.fmean(after),
                sessions_before=len(before),
                sessions_after=len(after),
                p_value=cp.p_value,
                above_noise=above,
            )
        )
    latest = _latest(values, cuts, noise, [p.session for p in points], meta.better, min_effect)
    return HistorySeries(
        config=config,
        metric=metric,
        load=load,
        unit=meta.unit,
        better=meta.better,
        points=points,
        change_points=change_points,
        latest=latest,
        noise=SeriesNoise(
            launch_cv=cv,
            source=source,
            df=df,
            sessions=measured,
            session_cv=math.sqrt(noise.cv2) if noise.cv2 is not None else None,
            session_df=noise.df,
        ),
    )


def judge(
    low: float | None, high: float | None, better: str | None, min_effect: float
) -> LatestVerdict:
    """DESIGN §10's rule on r's interval, signed so that e > 0 is better: regression when
    hi < −δ, improvement when lo > δ, else no change shown."""
    if low is None or high is None:
        return "no-change"
    lo, hi = (low, high) if better != "lower" else (-high, -low)
    if hi < -min_effect:
        return "regression"
    if lo > min_effect:
        return "improvement"
    return "no-change"


def _latest(
    values: Sequence[float],
    cuts: Sequence[int],
    noise: stats.RegimeNoise,
    sessions: Sequence[str],
    better: str | None,
    min_effect: float,
) -> Latest:
    """The newest value against the regime since the last change point before it, with the
    session-to-session noise of the regimes before it."""
    n = len(values)
    before = [c for c in cuts if c <= n - 2]
    start = before[-1] if before else 0
    regime = values[start : n - 1]
    r = stats.predict_ratio(regime, values[-1], noise, ALPHA)
    warnings = [] if noise.df >= 1 else [stats.W_FEW_SESSIONS]
    if better is None:
        warnings.append(W_UNKNOWN_DIRECTION)
    return Latest(
        verdict=judge(r.ci_low, r.ci_high, better, min_effect),
        change=r.change,
        ci_low=r.ci_low,
        ci_high=r.ci_high,
        session=sessions[-1],
        since=sessions[start],
        sessions=len(regime),
        min_effect=min_effect,
        df=r.df,
        warnings=warnings,
    )
