"""Reporters: findings for people (text), machines (JSON) and CI annotations (GitHub).

Text goes to stderr, grouped by file and sorted by line, coloured only when stderr is a TTY;
JSON goes to stdout. The GitHub format prints workflow commands (``::error file=..,line=..::``)
that GitHub Actions turns into pull-request annotations.
"""

from __future__ import annotations

import json
from collections import Counter

import click

from .errors import Finding, Severity

_COLOURS = {Severity.ERROR: "red", Severity.WARNING: "yellow"}


def summary(findings: list[Finding]) -> str:
    """``"2 errors, 1 warning"``."""
    counts = Counter(f.severity for f in findings)
    e, w = counts[Severity.ERROR], counts[Severity.WARNING]
    return f"{e} error{'s' * (e != 1)}, {w} warning{'s' * (w != 1)}"


def text(findings: list[Finding], colour: bool) -> str:
    """Human-readable report (one block per finding, then a summary line)."""
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
    lines.append(summary(findings))
    return "\n".join(lines)


def as_json(findings: list[Finding], ok: bool) -> str:
    """``{"ok": bool, "findings": [...]}`` (stable key order)."""
    return json.dumps({"ok": ok, "findings": [f.to_json() for f in findings]}, indent=2)


def _escape(value: str, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def github(findings: list[Finding]) -> str:
    """GitHub Actions workflow commands, one per finding."""
    out = []
    for f in findings:
        level = "error" if f.severity is Severity.ERROR else "warning"
        loc = f.location
        props = [f"file={_escape(loc.file, True)}"]
        if loc.line:
            props += [f"line={loc.line}", f"col={loc.column}"]
        props.append(f"title={_escape(f.code + ' ' + f.path, True)}")
        msg = f.message + (f" (hint: {f.hint})" if f.hint else "")
        out.append(f"::{level} {','.join(props)}::{_escape(msg)}")
    return "\n".join(out)


def sizing_json(checked) -> dict:
    """SPEC.md §4: ``{"roles": [...]}`` with each role's findings attached. Every role of the spec
    is listed; a role that could not be sized has ``"sized": false`` and the reason."""
    from .sizing import RoleSizing
    roles = []
    spec = checked.spec
    names = [r.name for r in spec.spec.roles] if spec else []
    sizing = checked.sizing or [None] * len(names)
    for i, name in enumerate(names):
        z = sizing[i] if i < len(sizing) else None
        prefix = f"$.spec.roles[{i}]"
        own = [f for f in checked.findings if f.path == prefix or f.path.startswith(prefix + ".")
               or f.path.startswith(prefix + "[")
               or (f.code.startswith("SIZ") and f.message.startswith(f"role {name!r}"))]
        if isinstance(z, RoleSizing):
            z.findings = own
            roles.append(z.to_json())
        else:
            reason = z if isinstance(z, str) else \
                "not sized: the spec has errors that make sizing meaningless (see findings)"
            roles.append({"name": name, "sized": False, "reason": reason, "fits": False,
                          "findings": [f.to_json() for f in own]})
    return {"roles": roles, "ok": checked.ok, "spec": spec.metadata.name if spec else None,
            "findings": [f.to_json() for f in checked.findings]}


def sizing_text(checked) -> str:
    """A table per role: memory of the most loaded GPU and KV capacity."""
    from .sizing import RoleSizing
    out = []
    for z in checked.sizing or []:
        if not isinstance(z, RoleSizing):
            continue
        comps = ", ".join(f"{k} {v:.2f}" for k, v in
                          sorted(z.weights_by_component.items(), key=lambda kv: -kv[1]) if v >= 0.005)
        rows = [
            ("GPU", f"{z.gpu}: {z.gpu_memory:.2f} GiB, budget {z.utilization:g} x = {z.budget:.2f} GiB"),
            ("weights", f"{z.weights:.2f} GiB  ({comps})"),
            ("activation", f"{z.activation:.2f} GiB  (profile batch {z.batched_tokens} tokens)"),
            ("overhead", f"{z.overhead:.2f} GiB  (non-torch, CUDA graphs, all-to-all {z.comm:.2f})"),
            ("KV cache", (f"{z.kv_cache:.2f} GiB = {z.kv_tokens_per_rank:,} tokens per DP rank "
                          f"({z.kv_bytes_per_token:,} B/token)") if z.kv_cache > 0 else
             f"none: the rest exceeds the budget by {-z.kv_cache:.2f} GiB"),
            ("concurrency", f"{z.max_concurrency:.1f} x {z.max_model_len} tokens per rank; needs "
                            f"{z.per_rank_required} ({z.required_concurrency} over {z.data} ranks)"),
            ("fits", "yes" if z.fits else "NO"),
        ]
        out.append(f"role {z.name} ({z.engine})")
        out += [f"  {k:<12} {v}" for k, v in rows]
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def explain(loaded, prefix: str = "$") -> str:
    """``$.path = value    file:line`` for every leaf of the merged spec under ``prefix``."""
    from .spec.load import json_path
    lines = []

    def walk(node, path):
        if isinstance(node, dict) and node:
            for key, value in node.items():
                walk(value, (*path, key))
        elif isinstance(node, list) and node and all(isinstance(v, (dict, list)) for v in node):
            for i, value in enumerate(node):
                walk(value, (*path, i))
        else:
            jp = json_path(path)
            if jp.startswith(prefix):
                loc = loaded.provenance.locate(path)
                lines.append((jp, json.dumps(node), f"{loc.file}:{loc.line}"))

    walk(loaded.data, ())
    width = max((len(a) + len(b) for a, b, _ in lines), default=0) + 3
    return "".join(f"{a} = {b}".ljust(width) + f"  {c}\n" for a, b, c in lines)


def sarif(findings: list[Finding], rules) -> str:
    """SARIF 2.1.0 (for code-scanning UIs such as GitHub's ``upload-sarif``)."""
    used = sorted({f.code for f in findings})
    by_code = {r.code: r for r in rules}
    driver_rules = []
    for code in used:
        r = by_code.get(code)
        driver_rules.append({"id": code, "shortDescription": {"text": r.summary if r else code},
                             "helpUri": "https://moegen.dev/rules#" + code,
                             **({"properties": {"source": r.source}} if r else {})})
    results = []
    for f in findings:
        loc = f.location
        region = {"startLine": loc.line, "startColumn": max(loc.column, 1)} if loc.line else {}
        results.append({
            "ruleId": f.code,
            "level": "error" if f.severity is Severity.ERROR else "warning",
            "message": {"text": f"{f.path}: {f.message}" + (f" (hint: {f.hint})" if f.hint else "")},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": loc.file},
                                                **({"region": region} if region else {})}}],
        })
    doc = {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
           "runs": [{"tool": {"driver": {"name": "moegen", "informationUri": "https://moegen.dev",
                                         "rules": driver_rules}},
                     "results": results}]}
    return json.dumps(doc, indent=2)


def plan_text(result) -> str:
    """The planner's ranked table and its assumptions."""
    lines = ["assumptions:"] + [f"  - {a}" for a in result.assumptions]
    lines.append(f"reachable: {'yes' if result.reachable else 'NO'}; binding: {result.bound}")
    for alt in result.alternatives:
        lines.append(f"  with {alt['change']}: {alt['totalTokensPerSec']:,} tokens/s"
                     f" ({'reachable' if alt['reachable'] else 'still not reachable'}; {alt['bound']})")
    head = f"{'#':>2} {'layout':<44} {'GPUs':>4} {'KV tok/rank':>11} {'TTFT ms':>8} " \
           f"{'TPOT ms':>7} {'out tok/s':>9} {'tot tok/s':>9} {'out/GPU':>7}  bound"
    lines += ["", head]
    for c in result.candidates[:10]:
        layout = " + ".join(
            f"{r['mode'][0].upper()}x{r['replicas']} "
            f"TP{r['parallel']['tensor']}DP{r['parallel']['data']}PP{r['parallel']['pipeline']}"
            f"{'EP' if r['parallel']['expert'] else ''}@{r['nodePool']}" for r in c.roles)
        mark = "" if c.meets_slo else " (misses SLO)"
        lines.append(f"{c.rank:>2} {layout:<44} {c.gpus:>4} {c.kv_tokens_per_rank:>11,} "
                     f"{c.ttft_ms:>8.0f} {c.tpot_ms:>7.1f} {c.output_tps:>9,.0f} {c.total_tps:>9,.0f} "
                     f"{c.output_tps / c.gpus:>7.0f}  {c.bound}{mark}")
    return "\n".join(lines) + "\n"
