"""Findings and the exception tree of moegen.

Every problem with a user's input becomes a :class:`Finding` (rule code, severity, file, line,
column, JSON path, message with the numbers, hint). Checks collect findings and never raise for bad
input; the CLI turns them into exit codes (docs/spec.md §3)::

    GenError                    base of everything moegen raises on purpose
    ├── SpecRejected            the spec (or an overlay) has error-level findings   -> exit 1
    ├── UsageError              bad command line, unreadable or foreign output dir  -> exit 2
    └── DriftDetected           ``render --check``: output differs from a render     -> exit 3

Anything else escaping to the CLI is a bug and exits 4 (internal error).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(str, enum.Enum):
    """How bad a finding is, by its consequence. ``error``: the engine or controller refuses,
    crashes or loses requests (rejects the input: exit 1); ``warning``: hardening, or a
    consequence moegen cannot confirm at the release it runs (rejects only with ``--strict``);
    ``notice``: what moegen did not or could not check (never rejects, not even with
    ``--strict``)."""

    ERROR = "error"
    WARNING = "warning"
    NOTICE = "notice"


@dataclass(frozen=True, order=True)
class Location:
    """Where a value came from: the file that set it and its 1-based line and column."""

    file: str = ""
    line: int = 0
    column: int = 0


@dataclass(frozen=True)
class Finding:
    """One problem found in the input.

    Attributes:
        code: stable rule code, e.g. ``EP001`` (see the rule catalogue in ``spec/rules.py``).
        severity: error or warning.
        path: JSON path of the offending field, e.g. ``$.spec.roles[1].parallel.data``.
        message: what is wrong, with the numbers involved.
        hint: how to fix it, when the fix is known ("" otherwise).
        location: file, line and column of the field (the overlay that set it, if any).
    """

    code: str
    severity: Severity
    path: str
    message: str
    hint: str = ""
    location: Location = field(default_factory=Location)

    def sort_key(self) -> tuple:
        """Findings print sorted by file, line, column, path and code (deterministic output)."""
        loc = self.location
        return (loc.file, loc.line, loc.column, self.path, self.code, self.message)

    def to_json(self) -> dict:
        """The JSON form used by ``--format json``."""
        return {
            "code": self.code,
            "severity": self.severity.value,
            "file": self.location.file,
            "line": self.location.line,
            "column": self.location.column,
            "path": self.path,
            "message": self.message,
            "hint": self.hint,
        }


class GenError(Exception):
    """Base of the errors moegen raises on purpose (each maps to an exit code)."""

    exit_code = 4


class SpecRejected(GenError):
    """The input has error-level findings; ``findings`` holds all of them (errors and warnings)."""

    exit_code = 1

    def __init__(self, findings: list[Finding]):
        super().__init__(f"{sum(f.severity is Severity.ERROR for f in findings)} error(s)")
        self.findings = sorted(findings, key=Finding.sort_key)


class UsageError(GenError):
    """Bad command line or environment (missing file, output directory not owned by moegen)."""

    exit_code = 2


class DriftDetected(GenError):
    """``gen render --check`` found that the output directory differs from a fresh render."""

    exit_code = 3

    def __init__(self, changes: list[str]):
        super().__init__(f"{len(changes)} file(s) differ")
        self.changes = changes


#: Spellings people use for a value under another name -> moegen's name (did-you-mean): DeepEP's
#: "normal" kernels are its high-throughput mode (deepseek-ai/DeepEP README: normal kernels for
#: training and inference prefilling, low-latency kernels for decoding; SGLang 0.5.23
#: python/sglang/srt/server_args.py --deepep-mode normal|low_latency; vLLM 0.33.0
#: vllm/config/parallel.py deepep_high_throughput|deepep_low_latency).
ALIASES = {"deepep_normal": "deepep_high_throughput", "deepep_ht": "deepep_high_throughput",
           "deepep": "deepep_high_throughput", "normal": "deepep_high_throughput",
           "high_throughput": "deepep_high_throughput", "deepep_ll": "deepep_low_latency",
           "low_latency": "deepep_low_latency", "mori_normal": "mori_high_throughput",
           "mori_ll": "mori_low_latency"}


def _parts(text: str) -> list:
    import re
    return [int(p) if p.isdigit() else p for p in re.findall(r"[a-z]+|\d+", text.lower())]


def _part_score(a: list, b: list) -> float:
    """Part-by-part likeness of two ids made of letter and number runs (``H300-200GB``): a
    number is as close as its relative difference, a word as its spelling."""
    import difflib
    if len(a) > len(b) or not a:
        return 0.0
    scale = 1.0 if len(a) == len(b) else 0.9   # a prefix of the id (H200 for H200-141GB)
    total = 0.0
    for x, y in zip(a, b):
        if isinstance(x, int) and isinstance(y, int):
            total += 1 - abs(x - y) / max(x, y, 1)
        elif isinstance(x, str) and isinstance(y, str):
            total += difflib.SequenceMatcher(None, x, y).ratio()
    return scale * total / len(a)


def closest(value: str, options: list[str], cutoff: float = 0.6) -> str | None:
    """The option ``value`` most likely means (did-you-mean), or None: an alias people use
    (:data:`ALIASES`), the same value in another case or separator, for ids with numbers
    (GPU ids: ``H300-200GB`` -> ``H200-141GB``, not ``H800-80GB``) the one closest part by
    part, else the closest spelling (difflib)."""
    import difflib
    norm = {o.lower().replace("-", "_"): o for o in options}
    key = str(value).lower().replace("-", "_")
    if key in norm:
        return norm[key]
    if ALIASES.get(key) in options:
        return ALIASES[key]
    parts = _parts(str(value))
    if any(isinstance(p, int) for p in parts):
        scored = sorted(((_part_score(parts, _parts(o)), o) for o in options), reverse=True)
        if scored and scored[0][0] >= cutoff:
            return scored[0][1]
    near = difflib.get_close_matches(str(value), options, n=1, cutoff=cutoff)
    return near[0] if near else None
