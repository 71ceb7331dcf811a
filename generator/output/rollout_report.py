"""``gen diff`` (and ``gen render --check`` after its file diff) for people and machines: what
a change does to the running deployment (generator/rollout/compare.py computes it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import findings as report

#: The roles that serve requests (generator/rollout/compare.py ENGINE_MODES; not imported: the
#: rollout package reads inputs, which report through this package).
ENGINE_MODES = ("prefill", "decode", "unified")
#: generator/rollout/compare.py's RolloutDiff, RoleReport and Order, which this module reads and
#: cannot import (the rollout room is below the reporters: tests/test_layout_of_code.py).
RolloutDiff = Any
RoleReport = Any
Order = Any


def _t(seconds: float) -> str:
    """``"2286 s (38.1 min)"``; minutes only from two minutes up."""
    return f"{seconds:.0f} s ({seconds / 60:.1f} min)" if seconds >= 120 else f"{seconds:.0f} s"


def _tps(cap: tuple[float, float] | None) -> str:
    if cap is None:
        return "not predicted (set spec.traffic)"
    return f"{cap[0]:,.0f} input + {cap[1]:,.0f} output tokens/s"


def text(diff: RolloutDiff, with_objects: bool = True) -> str:
    """The five answers: which objects and pods restart (and why), in which order, how long
    each role is unavailable, what happens to requests in flight, which order of prefill and
    decode costs least."""
    out = [f"gen diff: {diff.old} -> {diff.new}", ""]
    if with_objects:
        out.append("Objects a sync changes:")
        out += [f"  {_object(c)}" for c in diff.objects] or ["  none"]
        out.append("")
    out.append("Pods:")
    for r in diff.roles:
        out += _role(r)
    out.append("")
    out += _order_text(diff)
    out += _service(diff)
    out += _options(diff)
    return "\n".join(out) + "\n"


def _object(c) -> str:
    if c.op == "K":
        return (f"K ConfigMap {c.name} ({c.file}): the old env ConfigMap stays (Prune=false) "
                "for groups not rolled yet; delete it once the rollout is done")
    return c.line()


def _instances(r: RoleReport) -> str:
    n = "instance" if r.kind != "Deployment" else "pod"
    if r.plan.old == r.plan.new:
        return f"{r.plan.new} {n}{'s' * (r.plan.new != 1)}"
    return f"{r.plan.old} -> {r.plan.new} {n}s"


def _role(r: RoleReport) -> list[str]:
    head = f"  {r.role} ({r.kind} in {r.file}, {_instances(r)})"
    c = r.change
    if not c.restarts:
        what = "unchanged"
        if c.scaled:
            what = (f"scaled {c.scaled[0]} -> {c.scaled[1]}: no pod restarts; "
                    + ("the added instances start cold" if (c.scaled[1] or 0) > (c.scaled[0] or 0)
                       else "the highest-indexed instances stop"))
        lines = [f"{head}: {what}"]
        lines += [f"    also: {x}" for x in c.other]
        return lines
    p = r.plan
    lines = [f"{head}: " + ("PODS START" if p.old == 0 else "PODS STOP" if p.new == 0
                            else "PODS RESTART")]
    lines += [f"    why: {c.reasons[0]}"] + [f"         {x}" for x in c.reasons[1:]]
    lines += [f"    also: {x}" for x in c.other]
    if r.renamed:
        lines += _renamed(r)
    if p.old == 0:
        return lines + [f"    start: new, ready within {_t(p.start_s)}"
                        + (" (the old pods' grace, then its startup budget)" if r.waits_gpus
                           else " (startup budget)")]
    if p.new == 0:
        return lines
    rule = {"lws": "LeaderWorkerSet rolling update", "statefulset": "StatefulSet rolling update",
            "deployment": "Deployment rolling update",
            "disaggregatedset": "the DisaggregatedSet controller's planner"}[p.controller]
    why = f" ({r.strategy})" if r.strategy else ""
    lines.append(f"    rollout: {rule}, maxSurge {p.surge} / maxUnavailable {p.unavailable}"
                 f"{why}")
    n = min(p.old, p.new)
    each = (f"up to {p.stop_s:.0f} s to stop (terminationGracePeriodSeconds) + {p.start_s:.0f} s "
            f"to start ({'startup budget' if r.mode in ENGINE_MODES else 'first worker check'})")
    if r.down_at_once == 0:
        lines.append(f"    unavailable: never below {n} serving (new pods serve before old ones "
                     f"stop; each replacement {each})")
    elif r.down_at_once >= n:
        lines.append(f"    unavailable: all {n} instance(s) down at once for up to "
                     f"{_t(r.outage_s)}: {each}")
    else:
        lines.append(f"    unavailable: {r.down_at_once} of {n} instances at a time, fewer than "
                     f"{n} serving for {_t(r.unavailable_s)}, none for {_t(r.outage_s)} "
                     f"(each: {each})")
    lines.append(f"    in flight: {_in_flight(r)}")
    if r.cache:
        lines.append(f"    caches: {r.cache}")
    return lines


def _renamed(r: RoleReport) -> list[str]:
    """A role whose workload is another object in NEW (generator/rollout/compare.py
    ``_renamed``): what applying it does."""
    old, new, kind = r.renamed
    if r.plan.new == 0:
        return [f"    renamed: {kind} {old} -> {new}: no controller rolls {old}; Argo CD with "
                f"prune deletes it in its sync wave, every pod at once (PruneLast=true: after "
                f"the sync is healthy); kubectl apply -k leaves it running until you delete it"]
    gpus = ("the new pods wait for the GPUs the old pods hold (the pool has no room for "
            "both), then start" if r.waits_gpus else
            "the pool has room for the new pods beside the old ones")
    return [f"    renamed: {kind} {old} -> {new}: a new object, not a rolling update: its "
            f"pods start cold while the old {kind} is pruned; {gpus}"]


def _in_flight(r: RoleReport) -> str:
    """What a stopped pod does with its requests (docs/design.md §9: preStop, drain, grace)."""
    if r.drain_s is None:
        return (f"each stopped pod leaves the Service, waits {r.prestop_s} s (preStop), then "
                f"finishes its requests until {r.plan.stop_s:.0f} s "
                "(terminationGracePeriodSeconds), when the ones still running are cut")
    head = (f"each stopped pod leaves {r.front}, waits {r.prestop_s} s (preStop), then "
            f"drains {r.drain_s} s after SIGTERM; a request needing longer is cut")
    if r.mode == "prefill":
        return head + (" (prefill holds a request for one prompt: the longest prefill finishes; "
                       f"{r.kv_failure})")
    if r.longest_s is None:
        return head
    mean = f"the mean request ({r.mean_s:.1f} s) finishes" if r.mean_s is not None and \
        r.mean_s <= r.drain_s else (f"the mean request ({r.mean_s:.1f} s) may not"
                                    if r.mean_s is not None else "")
    out = head + f": {mean}, the longest predicted ({_t(r.longest_s)}) does not".replace(
        ": , ", ": ")
    if r.engine == "vllm" and r.mode in ENGINE_MODES:
        # vLLM 0.33.0 vllm/entrypoints/launchers/launcher.py: after the drain the engine stops
        # and uvicorn's shutdown waits for every open connection (no graceful-shutdown timeout)
        out += (f"; with one still open vLLM's HTTP server waits for it, so the pod stops at "
                f"its grace period ({r.plan.stop_s:.0f} s, SIGKILL), cutting it then")
    return out


def _order_text(diff: RolloutDiff) -> list[str]:
    o = diff.rendered
    out = ["Order (Argo CD sync waves; kubectl apply -k applies every object at once, the same "
           "for roles of one wave):"]
    new_cms = [c.name for c in diff.objects if c.kind == "ConfigMap" and c.op == "A"]
    if new_cms:
        out.append(f"  wave -1  ConfigMaps {', '.join(new_cms)}")
    if diff.disaggregated:
        out.append("  the DisaggregatedSet controller rolls its roles together, step by step "
                   "(kubernetes-sigs/lws v0.10.0 planner)"
                   + ("; the endpoint picker pins each request to one revision "
                      "(disaggregatedset-rollout-screener)" if diff.screener else ""))
    for wave in sorted({r.plan.wave for r in diff.roles}):
        rs = [r for r in diff.roles if r.plan.wave == wave]
        parts = []
        for r in rs:
            tl = r.timeline
            if not r.change.restarts and not r.change.scaled:
                parts.append(f"{r.role} unchanged")
            elif tl is not None:
                parts.append(f"{r.role} {tl.begin:.0f}-{tl.end:.0f} s")
        out.append(f"  wave {wave:<3} {', '.join(parts)}")
    if o is not None:
        out.append(f"  done after {_t(o.duration_s)}")
    return out + [""]


def _service(diff: RolloutDiff) -> list[str]:
    o = diff.rendered
    out = ["Service during the rollout:"]
    if o is None:
        return out + ["  nothing changes", ""]
    out.append(f"  outage: {_t(o.outage_s)} with no instance of a needed role serving"
               if o.outage_s else "  outage: none (every needed role keeps an instance)")
    out.append(f"  capacity: before {_tps(diff.before)}; after {_tps(diff.after)}")
    gone = [c.name for c in diff.objects if c.op == "D" and c.kind == "Service"]
    came = [c.name for c in diff.objects if c.op == "A" and c.kind == "Service"]
    if any(r.renamed for r in diff.roles) and gone:
        out.append(f"  renamed Services: {', '.join(gone)} -> {', '.join(came) or 'none'}: "
                   "clients of the old names lose them when they are pruned (point them at "
                   "the new ones, or keep metadata.name)")
    if o.lowest is not None:
        out.append(f"  lowest during the rollout: {_tps(o.lowest)} for {_t(o.lowest_s)} "
                   "(predicted with the instances left)")
    hs = diff.handshake
    if hs is not None:
        a, b, differ = hs
        if differ and a.checked and b.checked:
            verdict = (f"{a.what} vs {b.what} differ in {', '.join(differ)}: a prefill and a "
                       f"decode of different revisions fail the handshake and {diff.kv_failure}")
        elif differ:
            verdict = (f"{a.what} vs {b.what} differ in {', '.join(differ)}; the transfer "
                       "checks no release or layout, so a mixed pair is not verified")
        else:
            verdict = (f"{a.what} and {b.what} agree on {', '.join(k for k, _ in b.factors)}"
                       + ("" if b.checked else " (the transfer itself checks none of them)"))
        out.append(f"  KV handshake: {verdict}")
        if diff.screener:
            out.append("  mixed pairs: none (the endpoint picker pins a request to one "
                       "revision)")
        elif o.mixed_s:
            out.append(f"  mixed pairs: up to {o.mixed_share:.0%} of requests; "
                       f"{_t(o.mixed_s)} request-weighted")
        else:
            out.append("  mixed pairs: none (no time with both revisions serving)")
    return out + [""]


def _options(diff: RolloutDiff) -> list[str]:
    if not diff.options:
        if diff.disaggregated:
            return ["Which order: the DisaggregatedSet controller decides (both roles together)",
                    ""]
        if any(r.renamed for r in diff.roles):
            return ["Which order: nothing is rolled (renamed workloads start new, the old are "
                    "pruned)", ""]
        restarting = sum(1 for r in diff.roles if r.change.restarts)
        if restarting == 0:
            return ["Which order: no role restarts; nothing to order", ""]
        return ["Which order: only one role restarts; nothing to order", ""]
    out = ["Which order to roll prefill and decode:",
           f"  {'order':<34} {'outage':>18} {'mixed pairs':>16} {'done after':>18}"]
    for o in diff.options:
        mark = "  <- least cost" if o.name == diff.best else ""
        out.append(f"  {o.name:<34} {_t(o.outage_s):>18} {_t(o.mixed_s):>16} "
                   f"{_t(o.duration_s):>18}{mark}")
    if diff.best and not diff.best.startswith("prefill and decode together"):
        first = diff.best.split(" first", 1)[0]
        out.append(f"  to apply it: Argo CD: sync-wave 1 on the other role's LeaderWorkerSet "
                   f"(and 2 on the router); kubectl: apply {first}'s objects, wait for its "
                   "groups to be ready, then the rest")
    return out + [""]


def as_json(diff: RolloutDiff) -> dict:
    """The same answers as JSON (keys in camelCase; seconds; tokens/s)."""
    def order(o: Order | None) -> dict | None:
        if o is None:
            return None
        return {"name": o.name, "starts": o.starts, "outageSeconds": round(o.outage_s, 1),
                "mixedSeconds": round(o.mixed_s, 1), "mixedShare": round(o.mixed_share, 4),
                "doneAfterSeconds": round(o.duration_s, 1),
                "lowestCapacity": _cap(o.lowest), "lowestSeconds": round(o.lowest_s, 1)}
    hs = diff.handshake
    return {
        "old": diff.old, "new": diff.new,
        "objects": [c.to_json() for c in diff.objects],
        "roles": [_role_json(r) for r in diff.roles],
        "order": {"rendered": order(diff.rendered), "options": [order(o) for o in diff.options],
                  "leastCost": diff.best or None,
                  "disaggregatedSet": diff.disaggregated, "revisionPinned": diff.screener},
        "handshake": None if hs is None else {
            "old": hs[0].what, "new": hs[1].what, "checked": hs[0].checked and hs[1].checked,
            "differsIn": hs[2]},
        "capacity": {"before": _cap(diff.before), "after": _cap(diff.after)},
        "findings": [f.to_json() for f in diff.findings],
    }


def _cap(c: tuple[float, float] | None) -> dict | None:
    return None if c is None else {"inputTokensPerSec": round(c[0]),
                                   "outputTokensPerSec": round(c[1])}


def _role_json(r: RoleReport) -> dict:
    p, c = r.plan, r.change
    return {
        "role": r.role, "mode": r.mode, "kind": r.kind, "file": r.file,
        "restarts": c.restarts, "why": list(c.reasons), "other": list(c.other),
        "instances": {"old": p.old, "new": p.new},
        "rollout": {"controller": p.controller, "maxSurge": p.surge,
                    "maxUnavailable": p.unavailable, "why": r.strategy, "wave": p.wave},
        "unavailable": {"downAtOnce": r.down_at_once, "fewerSeconds": round(r.unavailable_s, 1),
                        "noneSeconds": round(r.outage_s, 1), "stopSeconds": p.stop_s,
                        "startSeconds": p.start_s},
        "inFlight": {"preStopSeconds": r.prestop_s, "drainSeconds": r.drain_s,
                     "longestRequestSeconds": None if r.longest_s is None
                     else round(r.longest_s, 1),
                     "meanRequestSeconds": None if r.mean_s is None else round(r.mean_s, 1)},
        "caches": r.cache,
        "renamed": None if not r.renamed else {
            "kind": r.renamed[2], "old": r.renamed[0], "new": r.renamed[1],
            "waitsForGpus": r.waits_gpus},
        "timeline": [{"start": s.start, "end": s.end, "old": s.old, "new": s.new}
                     for s in (r.timeline.segments if r.timeline else [])],
    }


def dumps(diff: RolloutDiff) -> str:
    return json.dumps(as_json(diff), indent=2)


def diff_output(diff, notes: list, fmt: str, colour: bool) -> tuple[str, str]:
    """``gen diff``'s (stdout, stderr): the answer in ``fmt``, findings on stderr (text)."""
    if fmt == "json":
        return dumps(diff) + "\n", ""
    found = diff.findings + list(notes)
    return text(diff), (report.text(found, colour) + "\n" if found else "")


def drift_output(outdir: Path, changes: list[str], diff, fmt: str,
                 colour: bool) -> tuple[str, str]:
    """``gen render --check``'s (stdout, stderr) on drift: the changed files (JSON ``drift``,
    GitHub annotations, or the text diff on stderr) and, when ``diff`` is given, gen diff's
    answer (JSON ``rollout``; text after the file diff, without its object list)."""
    heads = [c for c in changes if not c.startswith("    ")]
    out = ""
    if fmt == "json":
        out = json.dumps({"ok": False, "outdir": str(outdir), "drift": heads,
                          "rollout": as_json(diff) if diff is not None else None},
                         indent=2) + "\n"
    elif fmt == "github":
        out = "\n".join(f"::error file={outdir / c[2:].split(' ')[0]},title=drift::{c}"
                        for c in heads) + "\n"
    err = "\n".join(changes)
    if diff is not None and fmt != "json":
        err += "\n\n" + text(diff, with_objects=False)
        if diff.findings:
            err += report.text(diff.findings, colour)
    return out, err
