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
    """How bad a finding is. Errors reject the spec; warnings do not (unless ``--strict``)."""

    ERROR = "error"
    WARNING = "warning"


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
