"""Precision and recall of moegen's findings on the hand-audited corpus (issue #31, item 8).

Every file ``tests/corpus/audit/<set>/<name>.yaml`` is a hand audit of one third-party manifest,
``../shared/reference/<set>/<name>.yaml`` (the format: ``tests/corpus/README.md``): the defects found
by hand in engine and controller source at the release that runs, and a verdict on each finding
``gen validate`` gave at the audited commit. This script validates every audited manifest in process
(as ``gen validate <file>`` does, no options), matches today's findings to the audit's verdicts and
prints, per rule code:

* findings, and among them true / false / debatable / unverifiable / info (not a defect claim);
* precision = true / (true + false + debatable) over the findings that claim a defect
  (verdict info is left out; unverifiable is counted apart, in neither term);
* recall = audited defects (severity error or warning) that a finding of this code names /
  audited defects whose ``code`` is this rule; overall recall = defects named by any finding /
  all defects (a defect with ``code: null`` is a miss no rule covers);
* "findings not yet audited": a finding today with no verdict in the audit (a new finding, or one
  that moved): it must be audited before it lands.

Matching, when the rules or their locations change: a finding today matches an audited finding of
the same code and severity on the same line first; what is left matches the nearest audited finding
of the same code within ``NEAR`` lines (a finding that moved a few lines, e.g. to the container
instead of the flag). Anything else is "not yet audited" (today's side) or "vanished" (the audit's
side). A vanished finding whose verdict was true is a lost true positive, and its defect is then
a miss.

    python bench/corpus_precision.py            # table
    python bench/corpus_precision.py --json     # the same, for machines

Works with any number of audit files (none is an empty table). The manifests live beside the
checkout in ``../shared/reference``: a manifest that is not there is listed as missing.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
AUDITS = ROOT / "tests" / "corpus" / "audit"
REFERENCE = ROOT.parent / "shared" / "reference"
#: A finding that moved at most this many lines still matches its audited verdict (same code).
NEAR = 5
VERDICTS = ("true", "false", "debatable", "unverifiable", "info")
#: Verdicts that count in precision's denominator (a defect claimed and judged).
JUDGED = ("true", "false", "debatable")


@dataclass(frozen=True)
class Seen:
    """One finding of moegen on a manifest today: rule code, severity (error/warning/notice),
    1-based line in the manifest (0 when the finding has no line in that file)."""

    code: str
    severity: str
    line: int


@dataclass
class FileResult:
    """One audited manifest: the audit, today's findings and how they matched.

    ``matched``: (today's finding, audited finding dict, how: "exact" or "near"); ``new``: today's
    findings with no verdict; ``vanished``: audited findings moegen no longer gives.
    """

    audit_path: Path
    manifest: Path
    audit: dict
    seen: list[Seen] = field(default_factory=list)
    matched: list[tuple[Seen, dict, str]] = field(default_factory=list)
    new: list[Seen] = field(default_factory=list)
    vanished: list[dict] = field(default_factory=list)
    missing: bool = False


def audit_files(root: Path = AUDITS) -> list[Path]:
    """Every audit file under ``root`` (``<set>/<name>.yaml``), sorted."""
    return sorted(root.glob("*/*.yaml"))


class AuditError(ValueError):
    """An audit file that is not valid YAML or lacks the ``manifest`` / ``moegen`` keys."""


def load_audit(path: Path) -> dict:
    """One audit file as a dict (``manifest``, ``defects``, ``moegen.findings`` ...).

    Raises:
        AuditError: the file is not YAML, or not a mapping with ``manifest`` and ``moegen``.
    """
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise AuditError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or "manifest" not in doc or "moegen" not in doc:
        raise AuditError(f"{path}: an audit is a mapping with manifest: and moegen: keys")
    return doc


def manifest_path(audit: dict, reference: Path = REFERENCE) -> Path:
    """The audited manifest: ``audit['manifest']`` relative to ``../shared/reference``."""
    return reference / audit["manifest"]


def findings_of(manifest: Path) -> list[Seen]:
    """moegen's findings on one manifest, as ``gen validate <manifest>`` gives them (in process,
    no options): only findings located in that file keep their line (others get line 0)."""
    from generator.importer import Options
    from generator.inputs import read_inputs
    batch = read_inputs([manifest], [], Options(None, None, None), True, None)
    out = []
    for f in batch.all_findings():
        line = f.location.line if f.location.file and Path(f.location.file).resolve() == \
            manifest.resolve() else 0
        out.append(Seen(f.code, f.severity.value, line or 0))
    return sorted(out, key=lambda s: (s.line, s.code, s.severity))


def match(seen: list[Seen], audited: list[dict]) -> tuple[list, list[Seen], list[dict]]:
    """Pair today's findings with audited ones: exact (code, severity, line) first, then the
    nearest audited finding of the same code within ``NEAR`` lines. Returns (matched, new,
    vanished) as in ``FileResult``."""
    left = list(audited)
    matched, rest = [], []
    for s in seen:
        hit = next((a for a in left if a["code"] == s.code and a["severity"] == s.severity
                    and int(a["line"]) == s.line), None)
        if hit is None:
            rest.append(s)
            continue
        left.remove(hit)
        matched.append((s, hit, "exact"))
    new = []
    for s in rest:
        near = sorted((abs(int(a["line"]) - s.line), i) for i, a in enumerate(left)
                      if a["code"] == s.code and abs(int(a["line"]) - s.line) <= NEAR)
        if not near:
            new.append(s)
            continue
        hit = left.pop(near[0][1])
        matched.append((s, hit, "near"))
    return matched, new, left


def evaluate(paths: list[Path] | None = None, reference: Path = REFERENCE) -> list[FileResult]:
    """Validate every audited manifest and match its findings (one validate per file)."""
    out = []
    for path in audit_files() if paths is None else paths:
        audit = load_audit(path)
        res = FileResult(path, manifest_path(audit, reference), audit)
        if not res.manifest.exists():
            res.missing = True
            out.append(res)
            continue
        res.seen = findings_of(res.manifest)
        audited = (audit.get("moegen") or {}).get("findings") or []
        res.matched, res.new, res.vanished = match(res.seen, audited)
        out.append(res)
    return out


def _claims(defect: dict) -> bool:
    return defect.get("severity") in ("error", "warning")


def table(results: list[FileResult]) -> dict:
    """Per rule code: findings, verdict counts, precision; recall per code and overall; the
    findings not yet audited and the vanished ones. Precision/recall are None where undefined."""
    per: dict[str, Counter] = defaultdict(Counter)
    named_by: dict[str, set] = defaultdict(set)      # code -> {(file, defect id)} it names today
    owned: dict[str, set] = defaultdict(set)         # code -> {(file, defect id)} audited to it
    all_defects, named = set(), set()
    not_audited, vanished, missing = [], [], []
    for res in results:
        name = res.audit["manifest"]
        if res.missing:
            missing.append(name)
            continue
        defects = {d["id"]: d for d in res.audit.get("defects") or [] if _claims(d)}
        all_defects |= {(name, i) for i in defects}
        for i, d in defects.items():
            if d.get("code"):
                owned[d["code"]].add((name, i))
        for s, a, _how in res.matched:
            verdict = str(a.get("verdict")).lower()
            per[s.code]["findings"] += 1
            per[s.code][verdict if verdict in VERDICTS else "unaudited"] += 1
            if verdict == "true" and a.get("defect") in defects:
                named_by[s.code].add((name, a["defect"]))
                named.add((name, a["defect"]))
        for s in res.new:
            per[s.code]["findings"] += 1
            per[s.code]["unaudited"] += 1
            not_audited.append({"manifest": name, "code": s.code, "severity": s.severity,
                                "line": s.line})
        for a in res.vanished:
            vanished.append({"manifest": name, "code": a["code"], "severity": a["severity"],
                             "line": a["line"], "verdict": a.get("verdict")})
    rows = {}
    for code in sorted(set(per) | set(owned)):
        c = per[code]
        judged = sum(c[v] for v in JUDGED)
        own = owned.get(code, set())
        rows[code] = {**{k: c[k] for k in ("findings", *VERDICTS, "unaudited")},
                      "precision": round(c["true"] / judged, 3) if judged else None,
                      "defects": len(own), "named": len(own & named_by.get(code, set())),
                      "recall": round(len(own & named_by[code]) / len(own), 3) if own else None}
    judged = sum(r[v] for r in rows.values() for v in JUDGED)
    true = sum(r["true"] for r in rows.values())
    misses: dict[str, list] = defaultdict(list)
    for res in results:
        if res.missing:
            continue
        name = res.audit["manifest"]
        for d in res.audit.get("defects") or []:
            if _claims(d) and (name, d["id"]) not in named:
                misses[d.get("class") or d.get("code") or "?"].append(
                    {"manifest": name, "id": d["id"], "severity": d["severity"],
                     "line": d.get("line"), "code": d.get("code"),
                     "source": d.get("source")})
    return {"files": len(results) - len(missing), "missing": missing, "rules": rows,
            "misses": {k: misses[k] for k in sorted(misses, key=lambda k: (-len(misses[k]), k))},
            "overall": {"findings": sum(r["findings"] for r in rows.values()),
                        "claims": judged, "true": true,
                        "precision": round(true / judged, 3) if judged else None,
                        "defects": len(all_defects), "named": len(named),
                        "recall": round(len(named) / len(all_defects), 3) if all_defects else None,
                        "misses_without_rule": sum(
                            1 for res in results if not res.missing
                            for d in res.audit.get("defects") or []
                            if _claims(d) and not d.get("code"))},
            "not_audited": not_audited, "vanished": vanished}


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def text(t: dict) -> str:
    """The table as text (one line per rule code, then the overall line and the lists)."""
    head = ("code", "findings", "true", "false", "debat.", "unverif.", "info", "unaud.",
            "precision", "defects", "named", "recall")
    lines = [f"{t['files']} audited files" + (f" ({len(t['missing'])} manifests missing)"
                                              if t["missing"] else ""),
             "  ".join(f"{h:>9}" for h in head)]
    for code, r in t["rules"].items():
        cells = (code, r["findings"], r["true"], r["false"], r["debatable"], r["unverifiable"],
                 r["info"], r["unaudited"], _pct(r["precision"]), r["defects"], r["named"],
                 _pct(r["recall"]))
        lines.append("  ".join(f"{c!s:>9}" for c in cells))
    o = t["overall"]
    lines.append(f"overall: {o['findings']} findings, {o['true']}/{o['claims']} defect claims true "
                 f"(precision {_pct(o['precision'])}); {o['named']}/{o['defects']} audited defects "
                 f"named (recall {_pct(o['recall'])}); {o['misses_without_rule']} defects no rule "
                 "covers")
    lines.append("audited defects no finding names, by class (count: errors/warnings):")
    for cls, items in t["misses"].items():
        errors = sum(1 for x in items if x["severity"] == "error")
        codes = sorted({x["code"] for x in items if x["code"]})
        lines.append(f"  {len(items):3d} ({errors}/{len(items) - errors})  {cls}"
                     + (f"  [rule exists: {', '.join(codes)}]" if codes else ""))
    lines.append(f"findings not yet audited: {len(t['not_audited'])}")
    lines += [f"  {x['manifest']}:{x['line']} {x['code']} {x['severity']}" for x in t["not_audited"]]
    lines.append(f"audited findings vanished: {len(t['vanished'])}")
    lines += [f"  {x['manifest']}:{x['line']} {x['code']} {x['severity']} (was {x['verdict']})"
              for x in t["vanished"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print JSON")
    args = ap.parse_args(argv)
    try:
        t = table(evaluate())
    except AuditError as exc:
        print(f"corpus_precision: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(t, indent=2, sort_keys=True) if args.json else text(t))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
