"""Diagnostics: the records that carry every problem found in the inputs.

Owns `Diagnostic` and the `CODES` catalog (stable kebab-case codes, default level, meaning).
Its only formatting is `Diagnostic.__str__`, the one-line `path:line: level: message [code]`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Level = Literal["info", "warning", "error"]

LEVEL_ORDER: dict[str, int] = {"info": 0, "warning": 1, "error": 2}

# code -> (default level, one-line meaning). Extend, never rename (DESIGN §3).
CODES: dict[str, tuple[Level, str]] = {
    # core codes of the contract
    "truncated-value": ("warning", "a value was cut mid-way; no sample was taken from it"),
    "truncated-output": ("warning", "the output ends early; a missing summary was recomputed"),
    "missing-runs": ("warning", "fewer runs than the header announced"),
    "inconsistent-value": ("warning", "a printed value disagrees with its own inputs"),
    "unknown-format": ("error", "no parser recognises this file"),
    "empty-file": ("warning", "the file is empty"),
    "non-utf8": ("warning", "bytes that are not UTF-8 were replaced"),
    "unreadable-file": ("error", "the file cannot be read"),
    "symlink-loop": ("error", "a symbolic link loops back on its own folder"),
    "outside-session": ("warning", "a symbolic link leads outside the session; it is not read"),
    "unassigned-input": ("warning", "no config takes this input"),
    "server-error": ("error", "the server log records an error"),
    "confound": ("warning", "compared configs differ in more than the hypothesis names"),
    "few-samples": ("warning", "too few samples for a reliable comparison"),
    # reading and parsing
    "empty-folder": ("warning", "the folder holds no input"),
    "no-samples": ("warning", "the file was recognised but yielded no sample"),
    "unparsed-line": ("info", "a line looks like a known record but could not be read"),
    "unknown-results": ("info", "a results line was not understood"),
    "duplicate-run": ("warning", "the same run number appears twice"),
    "single-config": ("info", "the session has one config; nothing to compare"),
    "markdown-not-read": ("info", "a Markdown file in the session is never an input"),
    "single-launch": (
        "info",
        "samples come from one server launch; between-launch noise is not captured",
    ),
    "truncated-settings": ("warning", "a settings dump was cut; settings before the cut are kept"),
    "server-warning": ("warning", "the server log records a warning"),
    "server-event": ("info", "a server start-up or health event"),
    "outlier": ("info", "a value is flagged as an outlier (kept)"),
    "mixed-accept-len": ("warning", "acceptance lengths count the bonus token differently"),
    "zero-variance": ("info", "all values are equal"),
    # --- sglang-server / phase-timing / server args codes ---
    "server-restart": ("warning", "a server log holds several launches (each a launch of its own)"),
    # --- serving benchmark codes ---
    "unknown-row": ("info", "rows of a benchmark block that no alias maps were skipped"),
    "bad-record": ("warning", "a JSONL line is not a JSON benchmark record; it was skipped"),
    "client-error": ("warning", "the benchmark client stopped on an exception"),
    # --- vllm-server / one-batch codes ---
    "unknown-field": ("info", "a field of a known line is not known; it was skipped"),
    "idle-interval": ("info", "idle engine intervals (nothing running, 0 tokens/s) aren't samples"),
    "cumulative-baseline": (
        "info",
        "a cumulative counter's first value has no start before it; it only sets the baseline",
    ),
    "counter-reset": ("info", "a cumulative counter went down (a restart); deltas restart at zero"),
    "accept-len-bonus-unknown": (
        "warning",
        "whether the acceptance length counts the bonus token cannot be told",
    ),
    "warmup-excluded": ("info", "warm-up results are not samples"),
    "skipped-case": ("info", "the benchmark skipped a case"),
    "incomplete-case": ("warning", "a benchmark case ends before its summary lines"),
    "empty-config": ("warning", "a config of the manifest gets no input file"),
    "settings-override": ("warning", "a manifest setting replaces a different logged value"),
    "mixed-settings": (
        "warning",
        "a config pools runs made with different benchmark settings (rate, concurrency, ...)",
    ),
    # --- statistics codes ---
    "non-finite-value": ("warning", "a nan or infinite value was left out of the statistics"),
    "bidi-control": (
        "warning",
        "Unicode bidi controls were removed from lines (they reorder how text shows)",
    ),
    "unreadable-setting": (
        "warning",
        "a logged setting's value is no value (an expression); it is kept as its text",
    ),
    "impossible-value": (
        "warning",
        "a value its quantity cannot take (a negative rate, count or time) was left out",
    ),
    "undefined-change": ("warning", "the baseline mean is zero or negative; no relative change"),
    "outlier-sensitive": ("warning", "the verdict changes when flagged outliers are left out"),
    "assumed-launch-noise": (
        "info",
        "no config was launched twice: the launch-to-launch noise is assumed (2 % CV)",
    ),
    "unbounded-ratio": (
        "warning",
        "the baseline level is not clearly above zero: the ratio's interval is unbounded",
    ),
    "holm-changed": (
        "info",
        "decided at the raw level but not at the family's (Holm): inconclusive",
    ),
    "accept-len-below-one": (
        "warning",
        "acceptance length below 1: the source likely does not count the bonus token",
    ),
    "accept-len-above-steps": (
        "warning",
        "acceptance length above draft steps + 1: steps or bonus-token counting is off",
    ),
    "above-ceiling": (
        "warning",
        "measured throughput exceeds the ceiling: cycle time, acceptance length or the "
        "throughput kind does not fit",
    ),
    # --- history (DESIGN §10) ---
    "history-no-report": ("info", "a session with a manifest and no committed report"),
    "history-outside": ("warning", "a report names a session outside the results folder"),
    "history-unreadable-session": ("warning", "a session of the history cannot be analysed"),
    "history-bad-report": ("warning", "a report `check` refuses: its session is not read"),
    "history-undated": ("info", "no date for a session: ordered by its folder name"),
    "few-sessions": ("info", "too few sessions in the regimes to judge the newest one"),
    "unknown-direction": ("info", "a metric whose better direction is unknown: higher is taken"),
    # --- `check` findings (DESIGN §8; always errors: the gate fails closed) ---
    "stale-inputs": ("error", "the session's inputs changed since the report was written"),
    "changed-verdict": ("error", "a verdict of the committed report differs from the data's"),
    "changed-number": ("error", "a number of the committed report differs from a fresh one"),
    "changed-text": ("error", "the committed report's text differs from a fresh one"),
    "missing-session": ("error", "the session folder a report names does not exist"),
    "bad-manifest": ("error", "the session's sessionlens.toml is malformed"),
    "unreadable-session": ("error", "the session a report names cannot be analysed"),
    "bad-header": ("error", "a report's sessionlens header is damaged, missing or misplaced"),
    "outside-repository": ("error", "a report's header names a session outside the repository"),
    "report-is-link": ("error", "a committed report is a symbolic link; it is not followed"),
    "unreadable-report": ("error", "a committed report cannot be read (or is too big)"),
    "git-failed": ("error", "the staged changes of a commit cannot be read"),
}


class Diagnostic(BaseModel):
    """One problem in the inputs: where it is, how bad, and a stable code."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: Level
    code: str
    file: str
    line: int | None = None
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.level}: {self.message} [{self.code}]"


def make(
    code: str, file: str, line: int | None, message: str, level: Level | None = None
) -> Diagnostic:
    """A diagnostic with the catalog's default level unless one is given."""
    if level is None:
        level = CODES[code][0] if code in CODES else "warning"
    return Diagnostic(level=level, code=code, file=file, line=line, message=message)
