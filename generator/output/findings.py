"""Findings for people (text), machines (JSON, SARIF) and CI annotations (GitHub).

Text goes to stderr, grouped by file and sorted by line, coloured only when stderr is a TTY;
JSON and SARIF go to stdout. The GitHub format prints workflow commands (``::error file=..::``)
that GitHub Actions turns into pull-request annotations.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

import click

from ..errors import Finding, Location, Severity

if TYPE_CHECKING:
    from ..checks.registry import Rule
    from ..waivers import Suppressed

_COLOURS = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.NOTICE: "cyan"}
#: GitHub workflow command and SARIF result level per severity (SARIF 2.1.0 §3.27.10: "note")
_GITHUB = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTICE: "notice"}
_SARIF = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTICE: "note"}


def summary(findings: list[Finding], suppressed: int = 0) -> str:
    """``"2 errors, 1 warning"`` (``", 3 notices"`` appended when there are notices,
    ``", 2 suppressed"`` when skips suppressed findings: generator/waivers.py)."""
    counts = Counter(f.severity for f in findings)
    e, w, n = counts[Severity.ERROR], counts[Severity.WARNING], counts[Severity.NOTICE]
    out = f"{e} error{'s' * (e != 1)}, {w} warning{'s' * (w != 1)}"
    out += f", {n} notice{'s' * (n != 1)}" if n else ""
    return out + (f", {suppressed} suppressed" if suppressed else "")


def text(findings: list[Finding], colour: bool, with_summary: bool = True,
         suppressed: int = 0) -> str:
    """Human-readable report (one block per finding, then a summary line unless
    ``with_summary`` is false; ``suppressed``: how many findings skips suppressed)."""
    lines = []
    for f in findings:
        loc = f.location
        where = f"{loc.file}:{loc.line}:{loc.column}" if loc.line else (loc.file or "<spec>")
        sev = click.style(f.severity.value, fg=_COLOURS[f.severity], bold=True) if colour \
            else f.severity.value
        code = click.style(f.code, bold=True) if colour else f.code
        lines.append(f"{where}: {sev} {code} {f.path}: {f.message}")
        if f.hint:
            lines.append(f"    hint: {f.hint}")
    if with_summary:
        lines.append(summary(findings, suppressed))
    return "\n".join(lines)


def as_json(findings: list[Finding], ok: bool, extra: dict | None = None) -> str:
    """``{"ok": bool, "findings": [...]}`` (stable key order), plus ``extra`` keys (``gen
    validate`` of many inputs: ``inputs``, ``skipped``, ``planRequests``)."""
    return json.dumps({"ok": ok, "findings": [f.to_json() for f in findings], **(extra or {})},
                      indent=2)


def _escape(value: str, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def github(findings: list[Finding]) -> str:
    """GitHub Actions workflow commands, one per finding."""
    out = []
    for f in findings:
        level = _GITHUB[f.severity]
        loc = f.location
        props = [f"file={_escape(loc.file, True)}"]
        if loc.line:
            props += [f"line={loc.line}", f"col={loc.column}"]
        props.append(f"title={_escape(f.code + ' ' + f.path, True)}")
        msg = f.message + (f" (hint: {f.hint})" if f.hint else "")
        out.append(f"::{level} {','.join(props)}::{_escape(msg)}")
    return "\n".join(out)


def _physical(loc: Location) -> dict:
    region = {"startLine": loc.line, "startColumn": max(loc.column, 1)} if loc.line else {}
    return {"physicalLocation": {"artifactLocation": {"uri": loc.file},
                                 **({"region": region} if region else {})}}


def sarif(findings: list[Finding], rules: Iterable[Rule],
          suppressed: Iterable[Suppressed] = ()) -> str:
    """SARIF 2.1.0 (for code-scanning UIs such as GitHub's ``upload-sarif``). ``suppressed``
    (:class:`generator.waivers.Suppressed`) are results too, each with a ``suppressions`` entry
    (SARIF 2.1.0 §3.27.23 and its suppression object: kind ``inSource``, the skip's reason as
    ``justification``, its place as ``location``), which code-scanning UIs show as dismissed."""
    pairs = [(f, None) for f in findings] + [(s.finding, s.skip) for s in suppressed]
    used = sorted({f.code for f, _ in pairs})
    by_code = {r.code: r for r in rules}
    driver_rules = []
    for code in used:
        r = by_code.get(code)
        driver_rules.append({"id": code, "shortDescription": {"text": r.summary if r else code},
                             "helpUri": "https://moegen.dev/rules#" + code,
                             **({"properties": {"source": r.source}} if r else {})})
    results = []
    for f, skip in pairs:
        results.append({
            "ruleId": f.code,
            "level": _SARIF[f.severity],
            "message": {"text": f"{f.path}: {f.message}" + (f" (hint: {f.hint})" if f.hint else "")},
            "locations": [_physical(f.location)],
            **({"suppressions": [{"kind": "inSource", "justification": skip.reason,
                                  "location": _physical(skip.at)}]} if skip else {}),
        })
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
           "runs": [{"tool": {"driver": {"name": "moegen", "informationUri": "https://moegen.dev",
                                         "rules": driver_rules}},
                     "results": results}]}
    return json.dumps(doc, indent=2)
