"""A session folder: discovery, configs, dispatch to parsers, provenance, the tidy table.

Owns `load_session(path)`: which files are inputs (DESIGN §2), which config takes each
(manifest globs or sub-folders, §4), parsing them, the inputs digest (§7) and the settings
of each config. It must not compute statistics.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from . import _discover, _launch, _load, _memory
from . import diagnostics as dg
from ._progress import progress as progress_bar
from ._settings import POOLING_KEYS, same_value
from .errors import InputError, ManifestError, UsageError, did_you_mean
from .manifest import ConfigSpec, HypothesisSpec, Manifest, load, parse_hypothesis
from .model import LaunchSpans, SampleColumns, SourceInfo
from .parsers import parse_path

if TYPE_CHECKING:
    import polars as pl


# Metrics a sweep under `slo` derives (DESIGN §5 "SLO capacity"): claims may name them.
CAPACITY_METRICS = ("capacity_req_s", "capacity_output_tok_s")


class Session:
    """A loaded session: configs, hypotheses, sources, diagnostics and the tidy samples."""

    def __init__(
        self,
        root: Path,
        title: str,
        alpha: float,
        target_tok_s: float | None,
        configs: list[ConfigSpec],
        hypotheses: list[HypothesisSpec],
        sources: list[SourceInfo],
        source_config: dict[str, str | None],
        diagnostics: list[dg.Diagnostic],
        columns: SampleColumns,
        inputs_digest: str,
        baseline: str | None,
        cli_hypotheses: list[str],
        has_manifest: bool,
        launch_noise: float | dict[str, float] | None = None,
        slo: dict[str, float] | None = None,
        notices: list[dg.Diagnostic] | None = None,
    ) -> None:
        self.root = root
        self.title = title
        self.alpha = alpha
        self.target_tok_s = target_tok_s
        self.configs = configs
        self.hypotheses = hypotheses
        self.sources = sources
        self.source_config = source_config
        self.diagnostics = diagnostics
        self.columns = columns
        self.inputs_digest = inputs_digest
        self.baseline = baseline
        self.cli_hypotheses = cli_hypotheses
        self.has_manifest = has_manifest
        # the manifest's launch-to-launch CV (DESIGN §5 "given"), one or per metric
        self.launch_noise = launch_noise
        # latency bounds for SLO capacity (DESIGN §5, sweeps)
        self.slo = dict(slo or {})
        # said of files that are no inputs (a pasted Markdown file): for whoever loads the
        # session to show, never part of the report, whose inputs they are not
        self.notices = list(notices or [])

    @property
    def launches(self) -> dict[str, LaunchSpans]:
        """Each source's launches (DESIGN §5): `(first line, name)` spans."""
        return self.columns.launches

    @property
    def series_sources(self) -> frozenset[str]:
        """Sources whose samples are a server's interval series (autocorrelated)."""
        return frozenset(s.path for s in self.sources if s.format in _launch.SERVER_FORMATS)

    @property
    def samples(self) -> pl.DataFrame:
        """The tidy sample table (DESIGN §3)."""
        return self.columns.frame()

    def config_settings(self, name: str) -> dict[str, Any]:
        """Settings of a config: its sources' settings (first value wins), then the manifest's."""
        merged = self._logged(name)
        merged.update(self._spec(name).settings)
        return merged

    def overridden(self, name: str) -> list[tuple[str, Any, Any]]:
        """(key, the manifest's value, the logged value) where a config's manifest settings
        replace a different value read from its logs."""
        spec = self._spec(name)
        if not spec.settings:
            return []
        logged = self._logged(name)
        return [
            (k, v, logged[k])
            for k, v in spec.settings.items()
            if k in logged and not same_value(v, logged[k])
        ]

    @property
    def loads(self) -> dict[tuple[str, int], str]:
        """The load point of each (source, block) of a serving benchmark (DESIGN §5)."""
        return self.columns.loads

    def mixed_settings(self, name: str) -> dict[str, list[Any]]:
        """Benchmark parameters (model, tag, server URL, sizes, and rate or concurrency where
        they are not a load point) that take more than one value among the runs of one
        (config, load point): those runs are pooled. Load keys never count across points."""
        seen: dict[tuple[str | None, str], list[Any]] = {}
        loads = self.loads
        for src in self.sources:
            if self.source_config.get(src.path) != name:
                continue
            own = [(None, src.settings)]
            blocks = src.blocks.with_settings()  # a block without settings adds nothing
            parts = own + [(loads.get((src.path, b.block)), b.settings) for b in blocks]
            for point, settings in parts:
                for key, value in settings.items():
                    leaf = key.rsplit(".", 1)[-1]
                    in_point = point is not None and leaf in _load.LOAD_KEYS
                    if leaf not in POOLING_KEYS or in_point:
                        continue
                    values = seen.setdefault((point, key), [])
                    if not any(same_value(value, v) for v in values):
                        values.append(value)
        spec = self._spec(name)
        out: dict[str, list[Any]] = {}
        for (_, key), values in seen.items():
            if len(values) > 1 and key not in spec.settings:
                merged = out.setdefault(key, [])
                merged.extend(v for v in values if not any(same_value(v, m) for m in merged))
        return out

    def _spec(self, name: str) -> ConfigSpec:
        return next(c for c in self.configs if c.name == name)

    def _logged_items(self, name: str) -> Iterator[tuple[str, Any]]:
        """Every setting a config's sources logged, in order: each source's own, then its
        blocks'."""
        for src in self.sources:
            if self.source_config.get(src.path) != name:
                continue
            for settings in (src.settings, *(b.settings for b in src.blocks.with_settings())):
                yield from settings.items()

    def _logged(self, name: str) -> dict[str, Any]:
        """A config's logged settings, the first value of each."""
        merged: dict[str, Any] = {}
        for key, value in self._logged_items(name):
            merged.setdefault(key, value)
        return merged

    def input_paths(self) -> list[Path]:
        """Absolute paths of every input (for refusing to overwrite one)."""
        return [self.root / s.path for s in self.sources]

    def __repr__(self) -> str:
        return (
            f"Session({self.root.name!r}, configs={[c.name for c in self.configs]}, "
            f"sources={len(self.sources)}, samples={len(self.columns)})"
        )


def digest(entries: Sequence[tuple[str, str]]) -> str:
    """`sha256:` of the lines `<posix path>\\t<sha256>\\n`, sorted by path (DESIGN §7).

    A path is its bytes as the file system has them: a name that is not UTF-8 (held as
    surrogate escapes) hashes as its own bytes, and the sort is by those bytes."""
    h = hashlib.sha256()
    for raw, sha in sorted((rel.encode("utf-8", "surrogateescape"), sha) for rel, sha in entries):
        h.update(raw + f"\t{sha}\n".encode())
    return "sha256:" + h.hexdigest()


def inputs_digest(path: Path, hash_file: Callable[[Path], str] | None = None) -> str:
    """The inputs digest of a session folder without parsing it: every input the walk finds
    (the manifest's `exclude` applied) hashed as `load_session` hashes it (or by `hash_file`,
    which must give the same sha256). An unreadable file counts as its name alone, so the
    digest still changes with it."""
    hasher = hash_file or _hash_file
    manifest_path = path / _discover.MANIFEST
    exclude: Sequence[str] = ()
    if manifest_path.is_file():
        try:
            exclude = load(manifest_path).exclude
        except ManifestError:
            exclude = ()
    files, _ = _discover.walk(path, exclude)
    entries: list[tuple[str, str]] = []
    for f in files:
        rel = PurePosixPath(f.relative_to(path).as_posix()).as_posix()
        try:
            entries.append((rel, hasher(f)))
        except OSError:
            entries.append((rel, "unreadable"))
    return digest(entries)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def hash_file(path: Path) -> str:
    """The sha256 of a file's bytes (hex), as provenance and the inputs digest take it."""
    return _hash_file(path)


def _hash_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _exclude(rel: str) -> str:
    """The `sessionlens.toml` line that leaves one input out (its glob characters escaped)."""
    glob = "".join(f"[{c}]" if c in "*?[" else c for c in rel)
    return f"exclude = [{json.dumps(glob, ensure_ascii=False)}] in sessionlens.toml"


def _settle(d: dg.Diagnostic, rel: str, config: str) -> dg.Diagnostic:
    """An input no parser recognises names both ways to settle it (DESIGN §8): it is no log,
    so leave it out; or it is one, so pin its config's format."""
    if d.code != "unknown-format" or d.file != rel:
        return d
    what, _, hint = d.message.partition("; ")
    if "`exclude`" in hint:  # a kind of file that is no log (binary, an archive, ...)
        return d.model_copy(update={"message": f"{what}; leave it out: {_exclude(rel)}"})
    table = config if re.fullmatch(r"[A-Za-z0-9_-]+", config) else json.dumps(config)
    return d.model_copy(
        update={
            "message": f"{what}; if it is not a log, leave it out: {_exclude(rel)}; if it is "
            f'one, pin its format in [configs.{table}] (format = "<format id>")'
        }
    )


def _matches(rel: str, patterns: Sequence[str]) -> bool:
    for pattern in patterns:
        p = pattern.strip("/")
        if fnmatch.fnmatchcase(rel, p):
            return True
        if "/" not in p.rstrip("*") and fnmatch.fnmatchcase(rel, p.rstrip("/") + "/*"):
            return True  # a bare folder name takes the folder's files
    return False


def _markdown_notes(root: Path, pasted: Sequence[Path]) -> Iterator[dg.Diagnostic]:
    """An info line for each skipped Markdown file that is no sessionlens report (issue 23:
    `results-pasted.md` in a config folder went unmentioned, though `parse` reads it)."""
    from .check import is_report

    for path in pasted:
        if is_report(path):  # a report saved under another name: `check` reads it
            continue
        rel = _discover.display(path.relative_to(root).as_posix())
        yield dg.make(
            "markdown-not-read",
            rel,
            None,
            "Markdown is never an input, so this file was not read; if it holds benchmark "
            f"output, rename it {PurePosixPath(rel).stem}.txt (or .log) to make it one",
        )


# Files from this size on are folded (`load_session`'s `fold`): below it the table is small
# and the fold's cost (about 0.3 µs a row) buys nothing.
FOLD_FROM = 64 << 20


def _parse_file(
    file: Path,
    config: str,
    rel: str,
    columns: SampleColumns,
    fmt: str | None,
    progress: Callable[[int], None],
    fold: bool,
) -> tuple[SourceInfo, list[dg.Diagnostic]]:
    """`parse_path` into the session's table; with `fold`, into a table of the file's own
    first, read again without folding if the fold cannot be exact (`Uncombinable`)."""
    if not fold or _size(file) < FOLD_FROM:
        return parse_path(
            file, config=config, source=rel, columns=columns, format=fmt, progress=progress
        )
    from ._rankfold import Uncombinable

    mine = SampleColumns()
    got: tuple[SourceInfo, list[dg.Diagnostic]] | None = None
    with contextlib.suppress(Uncombinable):
        got = parse_path(
            file, config=config, source=rel, columns=mine, format=fmt, progress=progress, fold=True
        )
    if got is None:
        # read again outside the handler: the exception's frames (the fold, the rows read
        # so far) are let go before it, not held through the second reading
        mine = SampleColumns()  # the bar is full for this file
        got = parse_path(file, config=config, source=rel, columns=mine, format=fmt)
    columns.extend(mine)
    return got


def load_session(
    path: str | Path,
    baseline: str | None = None,
    hypotheses: Sequence[str] = (),
    progress: bool = False,
    *,
    allow_empty: bool = False,
    fold: bool = False,
) -> Session:
    """Load a session folder: its configs (from `sessionlens.toml`, else its sub-folders, else
    the folder itself), every input parsed and its sample assigned to a launch and load point.

    `baseline` names the config the others are compared with; `hypotheses` are claims in the
    CLI's words (`"B > A on METRIC by 5%"`), judged after the manifest's; `progress` shows a bar
    on a terminal for big sessions. Files that cannot be read are diagnostics
    (`Session.diagnostics`), never exceptions.

    Raises `UsageError` (the folder does not exist, a bad `baseline` or hypothesis),
    `ManifestError` (a malformed `sessionlens.toml`, with its line) and `InputError` when no
    sample could be read at all (its `diagnostics` say why), as `sessionlens report` refuses
    them. `allow_empty=True` returns such a session instead (for `check`, which turns its
    diagnostics into findings). `fold=True` combines the ranks' rows of a timestamp as
    each source is read, as the analysis would (`_rankfold`): the same analysis from a
    table of fewer rows, for a caller that needs only the analysis (`sessionlens report`).
    """
    root = Path(path)
    if not root.exists():
        raise UsageError("no such folder", path=str(path))
    if not root.is_dir():
        raise UsageError("not a folder: `report` takes a session folder", path=str(path))
    manifest_path = root / _discover.MANIFEST
    manifest: Manifest | None = None
    if os.path.lexists(manifest_path):  # a folder or a broken link there is an error too
        manifest = load(manifest_path, shown=_discover.display(str(manifest_path)), root=root)
    where = _discover.display(str(root))
    pasted: list[Path] = []
    files, diags = _discover.walk(root, manifest.exclude if manifest else (), where, pasted)
    notices = list(_markdown_notes(root, pasted))
    # names as the file system has them (bytes-faithful, for the digest), and as text
    # outputs show them: bytes that are not UTF-8 as \xNN (DESIGN §7, issue 19)
    raw_rels = [PurePosixPath(f.relative_to(root).as_posix()).as_posix() for f in files]
    rels = [_discover.display(r) for r in raw_rels]

    assign: dict[str, str | None] = {}
    # a manifest may hold only `exclude` (DESIGN §8): then sub-folders are the configs
    named = manifest is not None and bool(manifest.configs)
    if manifest is not None and named:
        configs = list(manifest.configs)
        for rel in rels:
            assign[rel] = next((c.name for c in configs if _matches(rel, c.paths)), None)
    else:
        subfolders = sorted({r.split("/", 1)[0] for r in rels if "/" in r})
        if subfolders:
            configs = [ConfigSpec(name=s, label=s, paths=[f"{s}/*"]) for s in subfolders]
            for rel in rels:
                assign[rel] = rel.split("/", 1)[0] if "/" in rel else None
        else:
            name = _discover.display(root.resolve().name) or "session"
            configs = [ConfigSpec(name=name, label=name, paths=["*"])]
            for rel in rels:
                assign[rel] = name
            if rels:
                diags.append(
                    dg.make(
                        "single-config",
                        where,
                        None,
                        "all inputs sit in one folder, so they form one config; put each config's "
                        "files in its own sub-folder (or name configs in sessionlens.toml) to "
                        "compare them",
                    )
                )
    if not rels and not diags:
        diags.append(dg.make("empty-folder", where, None, "the folder holds no input file"))

    spec_by_name = {c.name: c for c in configs}
    columns = SampleColumns()
    sources: list[SourceInfo] = []
    digest_entries: list[tuple[str, str]] = []
    # a bar on stderr for big sessions (only on a terminal, after about a second)
    with progress_bar(sum(_size(f) for f in files), enabled=progress) as advance:
        for file, rel, raw in zip(files, rels, raw_rels, strict=True):
            config = assign[rel]
            if config is None:
                try:
                    sha = _hash_file(file)
                    advance(_size(file))
                except OSError as exc:
                    diags.append(
                        dg.make(
                            "unreadable-file",
                            rel,
                            None,
                            f"cannot read the file: {exc.strerror or exc}",
                        )
                    )
                    continue
                digest_entries.append((raw, sha))
                sources.append(SourceInfo(path=rel, format=None, sha256=sha))
                where = (
                    "no config's paths match it; add it to a config's paths"
                    if named
                    else "it sits beside the config sub-folders; move it into a config's folder"
                )
                diags.append(
                    dg.make(
                        "unassigned-input",
                        rel,
                        None,
                        f"no config takes this input: {where}, or leave it out: {_exclude(rel)}",
                    )
                )
                continue
            info, file_diags = _parse_file(
                file,
                config,
                rel,
                columns,
                spec_by_name[config].format,
                _memory.feeding(advance, _discover.display(str(file))),
                fold,
            )
            sources.append(info)
            diags.extend(_settle(d, rel, config) for d in file_diags)
            if info.sha256:
                digest_entries.append((raw, info.sha256))

    _memory.done()
    if named and rels:
        taken_by = {name for name in assign.values() if name is not None}
        for spec in configs:
            if spec.name not in taken_by:
                # its paths match nothing, or an earlier config's paths took every match
                diags.append(
                    dg.make(
                        "empty-config",
                        str(manifest_path.name),
                        None,
                        f"config {spec.name} gets no input: its paths "
                        f"({', '.join(spec.paths) or 'none'}) match no file that an earlier "
                        "config did not take",
                    )
                )

    per_file = {c.name for c in configs if c.launch_per_file}
    columns.set_launches(
        _launch.of_sources(sources, columns, {rel for rel, c in assign.items() if c in per_file})
    )
    columns.set_loads(
        _load.load_points(
            (s.path, b.block, b.settings)
            for s in sources
            if assign.get(s.path) is not None
            for b in s.blocks.with_settings()  # a block without settings has no load
        )
    )

    hyps = list(manifest.hypotheses) if manifest else []
    taken = {h.id for h in hyps}
    number = len(hyps)
    for text in hypotheses:
        number += 1
        while f"H{number}" in taken:  # after the manifest's ids, whatever they are
            number += 1
        taken.add(f"H{number}")
        hyps.append(parse_hypothesis(text, f"H{number}"))
    names = [c.name for c in configs]
    for h in hyps:
        for role, name in (("baseline", h.baseline), ("candidate", h.candidate)):
            if h.origin == "manifest" and not named and name not in names:  # folder configs
                raise ManifestError(
                    f"unknown config {name!r} in {role} (configs: {', '.join(names) or 'none'})"
                    + did_you_mean(name, names),
                    path=_discover.display(str(manifest_path)),
                    line=h.line,
                )
    if baseline is not None and baseline not in names:
        raise UsageError(
            f"--baseline {baseline!r} is not a config (configs: {', '.join(names)})"
            + did_you_mean(baseline, names)
        )
    for h in hyps:
        if h.origin != "cli":
            continue
        for role, name in (("baseline", h.baseline), ("candidate", h.candidate)):
            if name not in names:
                raise UsageError(
                    f"--hypothesis {h.claim!r}: unknown {role} config {name!r} "
                    f"(configs: {', '.join(names)})" + did_you_mean(name, names)
                )
    present = columns.metric_names()
    if manifest is not None and manifest.slo:
        present |= set(CAPACITY_METRICS)  # derived from a sweep under the SLO (DESIGN §5)
    for h in hyps:
        if h.metric not in present:
            have = ", ".join(sorted(present)) or "none"
            msg = f"metric {h.metric!r} of hypothesis {h.id} is in no config (metrics: {have})"
            msg += did_you_mean(h.metric, present)
            if h.origin == "cli":
                raise UsageError(msg)
            raise ManifestError(msg, path=_discover.display(str(manifest_path)), line=h.metric_line)

    if len(columns) == 0 and not allow_empty:
        n = len(sources)
        raise InputError(
            f"no sample could be read from {n} input{'s' if n != 1 else ''}",
            path=_discover.display(str(path)),
            diagnostics=diags,
        )
    title = (manifest.title if manifest and manifest.title else None) or _discover.display(
        root.resolve().name
    )
    return Session(
        root=root,
        title=title,
        alpha=manifest.alpha if manifest else 0.05,
        target_tok_s=manifest.target_tok_s if manifest else None,
        configs=configs,
        hypotheses=hyps,
        sources=sources,
        source_config={s.path: assign.get(s.path) for s in sources},
        diagnostics=diags,
        columns=columns,
        inputs_digest=digest(digest_entries),
        baseline=baseline,
        cli_hypotheses=list(hypotheses),
        has_manifest=manifest is not None,
        launch_noise=manifest.launch_noise if manifest else None,
        slo=manifest.slo if manifest else None,
        notices=notices,
    )
