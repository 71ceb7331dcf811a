"""``gen rules``: the rule catalogue as text or JSON (code, severity, summary, source, the module
that defines each entry, the field cases it covers)."""

from __future__ import annotations

import json

from ..checks import RULES
from ..checks.field_cases import FIELD_CASES, RENDERED_CASES
from ..checks.registry import raised_in


def catalogue(fmt: str) -> str:
    """The catalogue in ``fmt`` (``text`` | ``json``), ending in a newline. JSON: one object per
    entry in registration order with ``module`` (``generator/checks/network.py``), ``line`` (of
    the rule's ``@rule`` decorator; null for a code listed in ``checks/codes.py``) and
    ``raisedIn`` (for those codes: the modules whose source names the code, else [])."""
    raised = raised_in([r.code for r in RULES if r.check is None])
    if fmt == "json":
        return json.dumps([{"code": r.code, "severity": r.severity.value, "summary": r.summary,
                            "source": r.source, "module": r.defined_at()[0],
                            "line": r.defined_at()[1], "raisedIn": raised.get(r.code, []),
                            "fieldCases": FIELD_CASES.get(r.code, [])} for r in RULES],
                          indent=2) + "\n"
    out = []
    for r in sorted(RULES, key=lambda r: r.code):
        path, line = r.defined_at()
        where = f"{path}:{line}" if line else f"{path} (raised in {', '.join(raised[r.code])})"
        out.append(f"{r.code:8} {r.severity.value:7} {r.summary}\n{'':16} source: {r.source}\n"
                   f"{'':16} module: {where}")
        cases = FIELD_CASES.get(r.code)
        if cases:
            out.append(f"{'':16} field cases: " + "; ".join(
                f"{c['case']} ({', '.join(c['source'])})" for c in cases))
    out.append(f"\nprevented by what moegen renders ({len(RENDERED_CASES)} field cases, no rule "
               "needed):")
    out += [f"  {c['case']:42} {', '.join(c['source'])}" for c in RENDERED_CASES]
    return "\n".join(out) + "\n"
