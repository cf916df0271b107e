"""`sessionlens.toml` and the `--hypothesis` mini-language (DESIGN §4).

Owns reading and validating the manifest (every error names `sessionlens.toml:line:`) and
turning "B > A on METRIC by 20%" into a `HypothesisSpec`. It must not read logs: checks
that need the data (a metric no config has) happen in `session`.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .errors import ManifestError, UsageError, did_you_mean

Direction = Literal["increase", "decrease"]

DEFAULT_MIN_EFFECT = 0.02
DEFAULT_ALPHA = 0.05
DEFAULT_METRIC = "throughput_tok_s"
# Bounds that keep every later step finite and exact (issue 19, case 9): below MIN_ALPHA the
# Holm levels round to 1 - 0; a larger effect or target prints as "inf"; deeper values blow
# Python's recursion limit in the TOML parser.
MIN_ALPHA = 1e-6
MAX_MIN_EFFECT = 1000.0  # 100 000 %
MAX_TARGET_TOK_S = 1e9
MAX_DEPTH = 32
MAX_MANIFEST_BYTES = 16 << 20

TOP_KEYS = {
    "title",
    "alpha",
    "target_tok_s",
    "exclude",
    "launch_noise",
    "slo",
    "configs",
    "hypotheses",
}
CONFIG_KEYS = {"paths", "label", "format", "settings", "launch_per_file"}
HYPOTHESIS_KEYS = {
    "id",
    "claim",
    "metric",
    "baseline",
    "candidate",
    "direction",
    "min_effect",
    "varies",
    "at",
}


class ConfigSpec(BaseModel):
    """One config of the session: its name, the globs that give its inputs, its settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    label: str
    paths: list[str]
    format: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    launch_per_file: bool = False
    line: int | None = None


class HypothesisSpec(BaseModel):
    """A claim to judge: candidate vs baseline on a metric, a direction, a smallest effect."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    claim: str
    metric: str = DEFAULT_METRIC
    baseline: str
    candidate: str
    direction: Direction = "increase"
    min_effect: float = DEFAULT_MIN_EFFECT
    varies: list[str] | None = None
    at: dict[str, str] | None = None  # v0.2: one load point of a sweep (`max_concurrency=16`)
    line: int | None = None
    metric_line: int | None = None
    origin: Literal["manifest", "cli"] = "manifest"


class Manifest(BaseModel):
    """The parsed `sessionlens.toml`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    title: str | None = None
    alpha: float = DEFAULT_ALPHA
    target_tok_s: float | None = None
    exclude: list[str] = Field(default_factory=list)
    launch_noise: float | dict[str, float] | None = None
    slo: dict[str, float] = Field(default_factory=dict)
    configs: list[ConfigSpec] = Field(default_factory=list)
    hypotheses: list[HypothesisSpec] = Field(default_factory=list)


_HEADER_LINE = re.compile(r"^\s*\[\[?\s*(?P<name>[^\[\]]*?)\s*\]\]?\s*(#.*)?$")


class _Locator:
    """Line numbers for keys and tables, found in the raw text (tomllib gives none).

    The table headers are indexed once: looking up the i-th `[[hypotheses]]` by scanning
    from the top made a manifest of 10,000 hypotheses take 33 s to load."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.headers: dict[str, list[int]] = {}
        for i, line in enumerate(self.lines, 1):
            if line.lstrip().startswith("["):
                m = _HEADER_LINE.match(line)
                if m is not None:
                    name = re.sub(r"\s*\.\s*", ".", m.group("name"))
                    self.headers.setdefault(name, []).append(i)

    def table(self, header: str, nth: int = 0) -> int | None:
        found = self.headers.get(header, [])
        return found[nth] if nth < len(found) else None

    def key(self, key: str, start: int | None = None) -> int | None:
        pattern = re.compile(r"^\s*(" + re.escape(key) + r"|\"" + re.escape(key) + r"\")\s*=")
        begin = start or 1
        for i in range(begin, len(self.lines) + 1):
            line = self.lines[i - 1]
            if i > begin and start is not None and re.match(r"^\s*\[", line):
                break
            if pattern.match(line):
                return i
        return None

    def inline_key(self, key: str, start: int | None) -> int | None:
        """The line of `key` inside an inline table such as `configs.x = {...}`."""
        pattern = re.compile(r"(^|[{,\s])" + re.escape(key) + r"\s*=")
        for i in range(start or 1, len(self.lines) + 1):
            if pattern.search(self.lines[i - 1]):
                return i
        return start


def _err(path: str, line: int | None, message: str) -> ManifestError:
    return ManifestError(message, path=path, line=line)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _read(path: Path, shown: str, root: Path | None) -> str:
    """The manifest's text. It must be a regular file (a link to one inside the session);
    a folder, a device, a broken link or one leading out of the session is an error, never
    a manifest silently ignored, and nothing but a regular file is opened."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise _err(shown, None, f"cannot read the manifest: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        real = os.path.realpath(path)
        base = os.path.realpath(root if root is not None else path.parent)
        if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
            raise _err(shown, None, "the manifest is a link that leads outside the session")
        try:
            st = os.stat(path)
        except OSError:
            raise _err(shown, None, "the manifest is a broken symbolic link") from None
    if stat.S_ISDIR(st.st_mode):
        raise _err(shown, None, "the manifest is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise _err(shown, None, "the manifest is not a regular file (a device, pipe or socket)")
    if st.st_size > MAX_MANIFEST_BYTES:
        raise _err(shown, None, f"the manifest is over 16 MB ({st.st_size:,} bytes)")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        try:
            raw = os.read(fd, MAX_MANIFEST_BYTES + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _err(shown, None, f"cannot read the manifest: {exc.strerror or exc}") from None
    if len(raw) > MAX_MANIFEST_BYTES:
        raise _err(shown, None, "the manifest is over 16 MB")
    try:
        return raw.decode("utf-8-sig")  # an editor's BOM is no TOML error
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        bad = raw[exc.start]
        raise _err(shown, line, f"the manifest is not UTF-8 text (byte 0x{bad:02x})") from None


_NESTING = re.compile(r"""[\[\]{}\n#"'\\]""")


def _too_deep(text: str) -> int | None:
    """The line where arrays and inline tables nest deeper than MAX_DEPTH, if any (strings
    and comments skipped, roughly: this only has to find the place tomllib would recurse)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None
    depth, line, quote, escaped, comment = 0, 1, "", False, False
    for m in _NESTING.finditer(text):
        ch = m.group()
        if ch == "\n":
            line += 1
            comment = False
            if quote == "'":
                quote = ""
            continue
        if comment:
            continue
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch == "#":
            comment = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return line
        elif ch in "]}":
            depth = max(0, depth - 1)
    return None


def load(path: Path, shown: str = "sessionlens.toml", root: Path | None = None) -> Manifest:
    """Read and validate a manifest; any problem is a `ManifestError` naming the line."""
    text = _read(path, shown, root)
    deep = _too_deep(text)
    if deep is not None:
        raise _err(shown, deep, f"values nest deeper than {MAX_DEPTH} arrays or tables")
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise _err(shown, None, f"values nest deeper than {MAX_DEPTH} arrays or tables") from None
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column \d+\)", msg)
        line = int(m.group(1)) if m else None
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", msg)
        raise _err(shown, line, f"invalid TOML: {msg}") from None
    loc = _Locator(text)
    for key in data:
        if key not in TOP_KEYS:
            raise _err(
                shown,
                loc.key(key) or loc.table(key),
                f"unknown key {key!r} (known: {', '.join(sorted(TOP_KEYS))})"
                + did_you_mean(key, TOP_KEYS),
            )
    title = data.get("title")
    if title is not None and not isinstance(title, str):
        raise _err(shown, loc.key("title"), "title must be a string")
    alpha = data.get("alpha", DEFAULT_ALPHA)
    if not _number(alpha) or not MIN_ALPHA <= alpha < 0.5:
        raise _err(
            shown,
            loc.key("alpha"),
            f"alpha must be a number from {MIN_ALPHA:.6f} to below 0.5, not {alpha!r}",
        )
    target = data.get("target_tok_s")
    if target is not None and (not _number(target) or not 0 < target <= MAX_TARGET_TOK_S):
        raise _err(
            shown,
            loc.key("target_tok_s"),
            f"target_tok_s must be a positive number of tok/s up to {MAX_TARGET_TOK_S:.0e}, "
            f"not {target!r}",
        )
    exclude = data.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(x, str) for x in exclude):
        raise _err(shown, loc.key("exclude"), "exclude must be a list of glob strings")

    launch_noise = _launch_noise(data.get("launch_noise"), shown, loc)
    slo = _slo(data.get("slo"), shown, loc)

    configs: list[ConfigSpec] = []
    raw_configs = data.get("configs", {})
    if not isinstance(raw_configs, dict):
        raise _err(shown, loc.key("configs"), "configs must be a table of tables ([configs.NAME])")
    for name, body in raw_configs.items():
        line = loc.table(f"configs.{name}") or loc.key(name) or loc.key("configs")
        if not isinstance(body, dict):
            raise _err(shown, line, f"config {name!r} must be a table")
        for key in body:
            if key not in CONFIG_KEYS:
                raise _err(
                    shown,
                    loc.key(key, line) or loc.inline_key(key, line),
                    f"unknown key {key!r} in config {name!r} "
                    f"(known: {', '.join(sorted(CONFIG_KEYS))})" + did_you_mean(key, CONFIG_KEYS),
                )
        paths = body.get("paths", [f"{name}/*"])
        if isinstance(paths, str):
            paths = [paths]
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths) or not paths:
            raise _err(
                shown,
                loc.key("paths", line) or line,
                f"paths of config {name!r} must be a list of globs",
            )
        label = body.get("label", name)
        fmt = body.get("format")
        if not isinstance(label, str):
            raise _err(shown, loc.key("label", line) or line, "label must be a string")
        if fmt is not None:
            from .parsers import PARSERS

            if fmt not in PARSERS:
                raise _err(
                    shown,
                    loc.key("format", line) or line,
                    f"unknown format {fmt!r} (known: {', '.join(sorted(PARSERS))})"
                    + did_you_mean(fmt, PARSERS),
                )
        settings = body.get("settings", {})
        if not isinstance(settings, dict):
            raise _err(shown, loc.key("settings", line) or line, "settings must be a table")
        per_file = body.get("launch_per_file", False)
        if not isinstance(per_file, bool):
            raise _err(
                shown,
                loc.key("launch_per_file", line) or line,
                f"launch_per_file must be true or false, not {per_file!r}",
            )
        configs.append(
            ConfigSpec(
                name=name,
                label=label,
                paths=paths,
                format=fmt,
                settings=_flatten(settings),
                launch_per_file=per_file,
                line=line,
            )
        )
    names = [c.name for c in configs]

    hyps: list[HypothesisSpec] = []
    raw_h = data.get("hypotheses", [])
    if not isinstance(raw_h, list):
        raise _err(
            shown, loc.key("hypotheses"), "hypotheses must be an array of tables ([[hypotheses]])"
        )
    for i, body in enumerate(raw_h):
        line = loc.table("hypotheses", i)
        if not isinstance(body, dict):
            raise _err(shown, line, "each hypothesis must be a table")
        for key in body:
            if key not in HYPOTHESIS_KEYS:
                raise _err(
                    shown,
                    loc.key(key, line) or line,
                    f"unknown key {key!r} in a hypothesis "
                    f"(known: {', '.join(sorted(HYPOTHESIS_KEYS))})"
                    + did_you_mean(key, HYPOTHESIS_KEYS),
                )
        for key in ("baseline", "candidate"):
            if key not in body:
                raise _err(shown, line, f"hypothesis {i + 1} needs {key!r}")
            if not isinstance(body[key], str) or (names and body[key] not in names):
                raise _err(
                    shown,
                    loc.key(key, line) or line,
                    f"unknown config {body[key]!r} in {key} "
                    f"(configs: {', '.join(names) or 'none'})"
                    + (did_you_mean(body[key], names) if isinstance(body[key], str) else ""),
                )
        if body["baseline"] == body["candidate"]:
            raise _err(shown, line, f"hypothesis {i + 1} compares {body['baseline']!r} with itself")
        direction = body.get("direction", "increase")
        if direction not in ("increase", "decrease"):
            raise _err(
                shown,
                loc.key("direction", line) or line,
                f'direction must be "increase" or "decrease", not {direction!r}',
            )
        min_effect = body.get("min_effect", DEFAULT_MIN_EFFECT)
        if not _number(min_effect) or not 0 <= min_effect <= MAX_MIN_EFFECT:  # nan, inf, 1e308
            raise _err(
                shown,
                loc.key("min_effect", line) or line,
                f"min_effect must be a fraction from 0 to {MAX_MIN_EFFECT:g} (0.20 for 20 %), "
                f"not {min_effect!r}",
            )
        metric = body.get("metric", DEFAULT_METRIC)
        if not isinstance(metric, str) or not metric:
            raise _err(shown, loc.key("metric", line) or line, "metric must be a metric name")
        varies = body.get("varies")
        if varies is not None and (
            not isinstance(varies, list) or not all(isinstance(v, str) for v in varies)
        ):
            raise _err(
                shown, loc.key("varies", line) or line, "varies must be a list of setting names"
            )
        at = _at(body.get("at"), shown, loc.key("at", line) or line)
        hid = body.get("id", f"H{i + 1}")
        claim = body.get("claim") or (
            f"{body['candidate']} {'>' if direction == 'increase' else '<'} {body['baseline']} "
            f"on {metric} by {min_effect * 100:g}%"
        )
        hyps.append(
            HypothesisSpec(
                id=str(hid),
                claim=str(claim),
                metric=metric,
                baseline=body["baseline"],
                candidate=body["candidate"],
                direction=direction,
                min_effect=float(min_effect),
                varies=varies,
                at=at,
                line=line,
                metric_line=loc.key("metric", line) or line,
                origin="manifest",
            )
        )
    seen: set[str] = set()
    for h in hyps:
        if h.id in seen:
            raise _err(shown, h.line, f"duplicate hypothesis id {h.id!r}")
        seen.add(h.id)
    return Manifest(
        path=shown,
        title=title,
        alpha=float(alpha),
        target_tok_s=float(target) if target is not None else None,
        exclude=exclude,
        launch_noise=launch_noise,
        slo=slo,
        configs=configs,
        hypotheses=hyps,
    )


def _launch_noise(value: Any, shown: str, loc: _Locator) -> float | dict[str, float] | None:
    """`launch_noise = 0.03` or `{ throughput_tok_s = 0.03, ... }`: a CV (fraction) >= 0."""
    if value is None:
        return None

    def cv(x: Any, where: str) -> float:
        if not _number(x) or not 0 <= x < math.inf:
            raise _err(
                shown,
                loc.key("launch_noise") or loc.table("launch_noise"),
                f"{where} must be a launch-to-launch CV, a fraction >= 0 (0.03 for 3 %), not {x!r}",
            )
        return float(x)

    if isinstance(value, dict):
        return {str(k): cv(v, f"launch_noise.{k}") for k, v in value.items()}
    return cv(value, "launch_noise")


def _slo(value: Any, shown: str, loc: _Locator) -> dict[str, float]:
    """`slo = { tpot_ms_p99 = 50, ttft_ms_p99 = 2000 }`: upper bounds on latency metrics."""
    if value is None:
        return {}
    where = loc.key("slo") or loc.table("slo")
    if not isinstance(value, dict) or not value:
        raise _err(shown, where, "slo must be a table of latency bounds ({ tpot_ms_p99 = 50 })")
    out: dict[str, float] = {}
    for key, bound in value.items():
        if not _number(bound) or not 0 < bound < math.inf:
            raise _err(shown, where, f"slo.{key} must be a positive number, not {bound!r}")
        out[str(key)] = float(bound)
    return out


def _at(value: Any, shown: str, line: int | None) -> dict[str, str] | None:
    """`at = { max_concurrency = 16 }`: the load point a hypothesis is judged at."""
    if value is None:
        return None
    if not isinstance(value, dict) or not value:
        raise _err(shown, line, "at must be a table naming a load point ({ max_concurrency = 16 })")
    out: dict[str, str] = {}
    for key, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise _err(shown, line, f"at.{key} must be a number or a string, not {v!r}")
        out[str(key)] = _load_text(v)
    return out


def _load_text(value: int | float | str) -> str:
    """A load value as load points write it (16, 2.5, inf)."""
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:g}"
    return str(value).strip()


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = _scalar(v)
    return out


def _scalar(value: Any) -> Any:
    """A setting as a JSON value (DESIGN §3): a TOML date, time or datetime as its text."""
    if isinstance(value, dt.date | dt.time):  # datetime is a date
        return value.isoformat()
    if isinstance(value, list):
        return [_scalar(v) for v in value]
    if isinstance(value, dict):
        return {k: _scalar(v) for k, v in value.items()}
    return value


# A config name as a word, or quoted when it holds spaces (`"eagle3 decode" > base`).
_NAME = r"""(?:"[^"<>]+"|'[^'<>]+'|[^\s<>"']+)"""
_HYP = re.compile(
    rf"^\s*(?P<cand>{_NAME})\s*(?P<op>[<>])\s*(?P<base>{_NAME})"
    r"(?:\s+on\s+(?P<metric>[A-Za-z0-9_]+))?"
    r"(?:\s+by\s+(?P<num>[0-9]*\.?[0-9]+)\s*(?P<pct>%)?)?"
    r"(?P<at>(?:\s+at\s+[A-Za-z0-9_.]+=[^\s,]+(?:\s*,\s*[A-Za-z0-9_.]+=[^\s,]+)*))?\s*$"
)


def _unquote(name: str) -> str:
    return name[1:-1] if name[:1] in "\"'" and name[-1:] == name[:1] else name


def parse_hypothesis(text: str, hid: str) -> HypothesisSpec:
    """`"B > A on METRIC by 20%"` (`<` for decrease; metric defaults to throughput_tok_s,
    effect to 2 %). The threshold carries its unit: a bare number after `by` (`by 5`,
    `by 0.05`) is a usage error saying which was meant (DESIGN §1)."""
    m = _HYP.match(text)
    if m is None:
        raise UsageError(
            f'cannot read --hypothesis {text!r}: expected "CANDIDATE > BASELINE '
            f"[on METRIC] [by N%]\" (quote a config name with spaces: 'my config' > base)"
        )
    cand, base = _unquote(m.group("cand")), _unquote(m.group("base"))
    if cand == base:
        raise UsageError(f"--hypothesis {text!r} compares a config with itself")
    num = m.group("num")
    if num is not None and m.group("pct") is None:
        # a bare number is ambiguous: 5 % or 500 %? 0.05 as a fraction (5 %) or 0.05 %?
        x = float(num)
        meant = (
            f'"by {x * 100:g}%" (the fraction {num}) or "by {num}%"' if x < 1 else f'"by {num}%"'
        )
        raise UsageError(
            f"--hypothesis {text!r}: write the threshold with its unit: {meant} "
            "(`min_effect` in sessionlens.toml is the fraction)"
        )
    min_effect = float(num) / 100 if num is not None else DEFAULT_MIN_EFFECT
    if not math.isfinite(min_effect) or min_effect > MAX_MIN_EFFECT:  # hundreds of digits
        raise UsageError(
            f"--hypothesis {text!r}: the effect after `by` is too large to use "
            f"(at most {MAX_MIN_EFFECT * 100:g}%)"
        )
    at = None
    if m.group("at"):
        pairs = m.group("at").strip()[2:].split(",")
        at = {}
        for pair in pairs:
            key, _, value = pair.strip().partition("=")
            at[key.strip()] = value.strip()
    return HypothesisSpec(
        id=hid,
        claim=text.strip(),
        at=at,
        metric=m.group("metric") or DEFAULT_METRIC,
        baseline=base,
        candidate=cand,
        direction="increase" if m.group("op") == ">" else "decrease",
        min_effect=min_effect,
        origin="cli",
    )
