"""``gen diff``: what applying NEW over a running OLD does, computed from the two rendered trees
and the two deployment models (docs/design.md §11).

Per role: whether its pods restart and why (:mod:`.changes`), its controller's rollout
(:mod:`.timeline`) with the bounds rendered in NEW (generator/lifecycle.py ``rollout``) and the
times moegen renders (the old pods' terminationGracePeriodSeconds, the new pods' startup
budget), how long it is unavailable, what happens to the requests in flight on a stopped pod
(its drain against the longest and the mean predicted request: generator/durations.py), and its
caches (:mod:`.compat`). Per deployment: the order of the Argo CD sync waves, the service's
outage, the mixed prefill/decode pairs and their handshake, the predicted capacity with the
instances left (generator/perf/predict.py), and which order of prefill and decode costs least.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..checks.registry import RULES
from ..checks.restarts import CRASH_RULE, pd_crashes
from ..deployment import Deployment, at_spec
from ..errors import Finding, Severity
from ..lifecycle import rollout as lifecycle_rollout
from ..spec.provenance import json_path
from .changes import ObjectChange, Restart, object_changes, restart
from .compat import Handshake, cache_note, front, handshake, kv_failure, mismatch
from .timeline import RolePlan, Timeline, boundaries, role_timeline, set_timelines
from .tree import Tree, Workload, read_tree

#: Roles whose instances serve requests in a prefill/decode or unified deployment.
ENGINE_MODES = ("prefill", "decode", "unified")
#: The front of the service: at least one pod of each must serve.
FRONT_ROLES = ("router", "endpoint-picker")
#: How long a new router pod takes to serve once its engines do, s: its first check of the
#: workers (vllm-router 0.1.17 py_src/vllm_router/router_args.py
#: ``worker_startup_check_interval`` = 30); its rendered startup budget covers the engines'
#: cold start, which a rollout of the router alone does not wait for.
FRONT_START_S = 30


@dataclass(frozen=True)
class Side:
    """One side of a diff: a label for people, the rendered files, the deployment model (None
    when it could not be built)."""

    label: str
    files: dict[str, str]
    model: Deployment | None


@dataclass
class RoleReport:
    """One role of the diff (module docstring)."""

    role: str
    mode: str
    kind: str
    file: str
    change: Restart
    plan: RolePlan
    strategy: str = ""
    timeline: Timeline | None = None
    drain_s: int | None = None
    longest_s: float | None = None
    mean_s: float | None = None
    cache: str = ""
    gpus: tuple[int, int] | None = None
    prestop_s: int = 0
    engine: str = ""
    #: (old object, new object, their kind) when the role's workload was renamed (a
    #: metadata.name change): two workloads, the old one deleted, the new one created.
    renamed: tuple[str, str, str] | None = None
    #: The role in the specs (``role`` is the old object's name for a renamed role's old one).
    spec_role: str = ""
    #: Where a stopped pod stops getting requests from (:func:`.compat.front`).
    front: str = "the Service"
    #: What decode does with a request whose KV it could not pull (:func:`.compat.kv_failure`).
    kv_failure: str = ""
    #: A renamed role's new pods need the GPUs the old pods hold (the pool lacks room for both).
    waits_gpus: bool = False

    @property
    def down_at_once(self) -> int:
        """Most instances not serving at once (of the fewer of old and new)."""
        if self.timeline is None:
            return 0
        return max(0, min(self.plan.old, self.plan.new) - self.timeline.fewest)

    @property
    def outage_s(self) -> float:
        return self.timeline.below(1) if self.timeline else 0.0

    @property
    def unavailable_s(self) -> float:
        floor = min(self.plan.old, self.plan.new)
        return self.timeline.below(floor) if self.timeline and floor else 0.0


@dataclass
class Order:
    """One order of rolling the roles: when each starts (s), the service's outage (no instance
    of a needed role), the mixed pairs, the duration, the capacity at its lowest."""

    name: str
    starts: dict[str, float]
    timelines: list[Timeline]
    outage_s: float = 0.0
    mixed_s: float = 0.0
    mixed_share: float = 0.0
    duration_s: float = 0.0
    lowest: tuple[float, float] | None = None
    lowest_s: float = 0.0

    def key(self) -> tuple:
        """Least outage, then least mixed pairs, then shortest."""
        return (round(self.outage_s), round(self.mixed_s), round(self.duration_s))


@dataclass
class RolloutDiff:
    """The whole answer of ``gen diff`` (rendered by generator/output/rollout_report.py)."""

    old: str
    new: str
    objects: list[ObjectChange]
    roles: list[RoleReport]
    rendered: Order | None
    options: list[Order] = field(default_factory=list)
    best: str = ""
    handshake: tuple[Handshake | None, Handshake | None, list[str]] | None = None
    #: Per (role, "old" | "new"): what its revision's engines compare in the KV handshake.
    keys: dict[tuple[str, str], Handshake | None] = field(default_factory=dict)
    before: tuple[float, float] | None = None
    after: tuple[float, float] | None = None
    disaggregated: bool = False
    screener: bool = False
    #: NEW's decode on a request whose KV it could not pull (:func:`.compat.kv_failure`).
    kv_failure: str = ""
    findings: list[Finding] = field(default_factory=list)
    #: The model whose prediction times the instances left (OLD's: what runs; else NEW's).
    model: Deployment | None = field(default=None, repr=False)

    @property
    def restarts(self) -> list[RoleReport]:
        return [r for r in self.roles if r.change.restarts]


def compare(old: Side, new: Side) -> RolloutDiff:
    """The diff of ``old`` -> ``new`` (module docstring)."""
    ta, tb = read_tree(old.files), read_tree(new.files)
    wa = {w.role: w for w in ta.workloads()}
    wb = {w.role: w for w in tb.workloads()}
    spec_order = [r.name for r in new.model.spec.spec.roles] if new.model else []
    names = sorted([r for r in wb] + [r for r in wa if r not in wb],
                   key=lambda r: (spec_order.index(r) if r in spec_order else len(spec_order),))
    roles = []
    for r in names:
        a, b = wa.get(r), wb.get(r)
        if a is not None and b is not None and (a.kind, a.name) != (b.kind, b.name):
            roles += _renamed(r, a, b, old.model, new.model)
        else:
            roles.append(_role(r, a, b, old.model, new.model))
    roles.sort(key=lambda x: x.plan.new == 0)     # the removed workloads last
    out = RolloutDiff(old.label, new.label, object_changes(ta, tb), roles, None,
                      model=old.model or new.model)
    out.disaggregated = any(w.kind == "DisaggregatedSet" for w in wb.values())
    out.screener = _screened(tb)
    out.handshake = _handshakes(old.model, new.model)
    out.kv_failure = kv_failure(new.model or old.model)
    out.keys = {(r.role, side): handshake(m, i) for r in roles
                for side, m in (("old", old.model), ("new", new.model))
                if m is not None and (i := _index(m, r.role)) is not None}
    out.rendered = _order("as rendered", roles, _wave_starts, out)
    engines = {r.mode: r for r in roles if r.mode in ("prefill", "decode") and r.change.restarts
               and r.renamed is None}
    if len(engines) == 2 and not out.disaggregated:
        p, d = engines["prefill"].role, engines["decode"].role
        out.options = [
            _order("prefill and decode together", roles, lambda rs: {p: 0.0, d: 0.0}, out),
            _order(f"{p} first, then {d}", roles, lambda rs: _after(rs, p, d), out),
            _order(f"{d} first, then {p}", roles, lambda rs: _after(rs, d, p), out)]
        out.best = min(out.options, key=Order.key).name
    before: dict[str, int] = {}
    after: dict[str, int] = {}
    for r in roles:
        before[r.spec_role] = before.get(r.spec_role, 0) + r.plan.old
        after[r.spec_role] = after.get(r.spec_role, 0) + r.plan.new
    out.before, out.after = _capacity(old.model, before), _capacity(new.model, after)
    out.findings = _findings(out, old.model, new.model)
    return out


def _renamed(name: str, a: Workload, b: Workload, old_model: Deployment | None,
             new_model: Deployment | None) -> list[RoleReport]:
    """Role ``name`` whose workload is another object in NEW (kind or name differ, e.g. a
    metadata.name change): a controller rolls only its own object, so nothing is rolled: the
    new workload is created and starts cold, the old one is deleted (Argo CD prunes it in its
    sync wave, deletion and creation in the same sync: argo-cd docs "Sync Phases and Waves";
    ``PruneLast=true`` prunes after every wave is healthy: argoproj/argo-cd#5199; ``kubectl
    apply -k`` deletes nothing). Pruned at once, its pods stop together; when the pool has no
    room for the new pods beside them, the new pods wait for their GPUs (their stop), then
    start. The old workload's report is labelled by its object's name."""
    wait = not _room(old_model, new_model, name)
    new = _role(name, None, b, old_model, new_model, wait_s=float(a.grace_s) if wait else 0.0)
    gone = _role(name, a, None, old_model, new_model, label=a.name)
    for rep in (new, gone):
        rep.renamed, rep.waits_gpus = (a.name, b.name, a.kind), wait
    return [new, gone]


def _room(old: Deployment | None, new: Deployment | None, role: str) -> bool:
    """Whether role ``role``'s new instances fit beside every old one in its pool, counted in
    GPUs (instances of a whole node and more count whole nodes); True when unknown."""
    i, j = _index(new, role), _index(old, role)
    if old is None or new is None or i is None or j is None:
        return True
    spec = new.spec.spec
    pool = spec.nodePools[spec.roles[i].nodePool]

    def gpus(model: Deployment, k: int) -> int:
        g = _gpus(model, k)
        return -(-g // pool.gpusPerNode) * pool.gpusPerNode if g >= pool.gpusPerNode else g
    used = sum(r.replicas * gpus(old, k) for k, r in enumerate(old.spec.spec.roles)
               if r.nodePool == spec.roles[i].nodePool)
    return used + spec.roles[i].replicas * gpus(new, i) <= pool.nodes * pool.gpusPerNode


def _role(name: str, a: Workload | None, b: Workload | None, old_model: Deployment | None,
          new_model: Deployment | None, label: str = "", wait_s: float = 0.0) -> RoleReport:
    """Role ``name``'s report (``label``: its name in the report and the timelines; ``wait_s``:
    before its new pods can start, s)."""
    w = b or a
    change = restart(a, b)
    controller = {"LeaderWorkerSet": "lws", "StatefulSet": "statefulset",
                  "Deployment": "deployment", "DisaggregatedSet": "disaggregatedset"}[w.kind]
    n_old = (a.replicas if a.replicas is not None else 1) if a else 0
    n_new = (b.replicas if b.replicas is not None else n_old) if b else 0
    start = float(b.startup_s if b else 0)
    if name in FRONT_ROLES:
        start = float(min(start, FRONT_START_S))
    start += wait_s
    plan = RolePlan(label or name, w.mode, controller, n_old, n_new, change.restarts,
                    b.max_surge if b else 0, b.max_unavailable if b else 1,
                    float(a.grace_s if a else 0), start, w.wave)
    rep = RoleReport(label or name, w.mode, w.kind, w.file, change, plan,
                     prestop_s=a.prestop_s if a else 0, spec_role=name,
                     engine=(old_model or new_model).engine if (old_model or new_model) else "")
    i_new = _index(new_model, name)
    i_old = _index(old_model, name)
    if new_model is not None and i_new is not None and controller == "lws" \
            and new_model.roles[i_new] is not None:
        rep.strategy = lifecycle_rollout(new_model.spec, list(new_model.roles), i_new).reason
    running = old_model or new_model       # the stopped pods are OLD's
    rep.front = front(running, name, w.mode)
    rep.kv_failure = kv_failure(running)
    if old_model is not None and (i_old is not None or name in FRONT_ROLES):
        d = old_model.durations
        rep.drain_s, rep.longest_s, rep.mean_s = d.drain_s, d.longest_request_s, d.mean_request_s
    if new_model is not None and i_new is not None and b is not None and w.mode in ENGINE_MODES:
        rep.cache = cache_note(old_model, new_model, i_old, i_new)
    rep.gpus = (_gpus(old_model, i_old), _gpus(new_model, i_new))
    return rep


def _index(model: Deployment | None, role: str) -> int | None:
    if model is None:
        return None
    return next((i for i, r in enumerate(model.spec.spec.roles) if r.name == role), None)


def _gpus(model: Deployment | None, i: int | None) -> int:
    if model is None or i is None or model.roles[i] is None:
        return 0
    lay = model.roles[i].layout
    return lay.tensor * lay.data * lay.pipeline


def _screened(tree: Tree) -> bool:
    """The endpoint picker's configuration pins each request to one DisaggregatedSet revision
    (llm-d-router ``disaggregatedset-rollout-screener``)."""
    return any("disaggregatedset-rollout-screener" in text for path, text in tree.files.items()
               if path.endswith(".yaml") and "EndpointPickerConfig" in text)


def _handshakes(old: Deployment | None, new: Deployment | None):
    """(old prefill-side, new side, the factors a mixed pair differs in) over the prefill and
    decode roles (the first of each mode)."""
    def first(model, mode):
        if model is None:
            return None
        i = next((j for j, r in enumerate(model.spec.spec.roles) if r.mode == mode), None)
        return handshake(model, i) if i is not None else None
    if old is None or new is None:
        return None
    a, b = first(old, "prefill") or first(old, "decode"), first(new, "prefill") or \
        first(new, "decode")
    if a is None or b is None:
        return None
    return a, b, mismatch(a, b)


def _wave_starts(roles: list[RoleReport]) -> dict[str, float]:
    """Argo CD's order: each wave once every lower wave's roles are done."""
    starts: dict[str, float] = {}
    t = 0.0
    for wave in sorted({r.plan.wave for r in roles}):
        group = [r for r in roles if r.plan.wave == wave]
        ends = []
        for r in group:
            starts[r.role] = t
            ends.append(t + _alone(r).end - _alone(r).begin)
        t = max(ends, default=t)
    return starts


def _alone(r: RoleReport) -> Timeline:
    return role_timeline(r.plan, 0.0)


def _after(roles: list[RoleReport], first: str, second: str) -> dict[str, float]:
    one = next(r for r in roles if r.role == first)
    return {first: 0.0, second: _alone(one).end}


def _order(name: str, roles: list[RoleReport], starts_of, diff: RolloutDiff) -> Order:
    """Roll the roles from ``starts_of(roles)`` (role -> start, s; others: 0) and measure."""
    starts = starts_of(roles)
    if diff.disaggregated:
        in_set = [r for r in roles if r.kind == "DisaggregatedSet"]
        t0 = min((starts.get(r.role, 0.0) for r in in_set), default=0.0)
        tls = set_timelines([r.plan for r in in_set], t0) if in_set else []
        tls += [role_timeline(r.plan, starts.get(r.role, 0.0)) for r in roles
                if r.kind != "DisaggregatedSet"]
    else:
        tls = [role_timeline(r.plan, starts.get(r.role, 0.0)) for r in roles]
    order = Order(name, starts, tls)
    by_role = {tl.plan.role: tl for tl in tls}
    for r in roles:
        if name == "as rendered":
            r.timeline = by_role[r.role]
    _measure(order, diff)
    return order


def _measure(order: Order, diff: RolloutDiff) -> None:
    """Outage, mixed pairs (share of requests x time), duration and lowest capacity."""
    tls = order.timelines
    times = boundaries(tls)
    order.duration_s = max((tl.end for tl in tls), default=0.0)
    modes = {tl.plan.mode for tl in tls if tl.plan.mode in ENGINE_MODES}
    for t0, t1 in zip(times, times[1:]):
        mid = (t0 + t1) / 2
        counts = {tl.plan.role: tl.at(mid) for tl in tls}
        serving = {m: sum(sum(counts[tl.plan.role]) for tl in tls if tl.plan.mode == m)
                   for m in modes}
        fronts = [sum(counts[tl.plan.role]) for tl in tls if tl.plan.role in FRONT_ROLES]
        if any(v == 0 for v in serving.values()) or any(v == 0 for v in fronts):
            order.outage_s += t1 - t0
            continue
        share = 0.0 if diff.screener else _mixed(tls, counts, diff.keys)
        order.mixed_s += share * (t1 - t0)
        order.mixed_share = max(order.mixed_share, share)
    if order.duration_s <= 0:
        return
    lows = []
    for t0, t1 in zip(times, times[1:]):
        if t1 > order.duration_s:
            break
        mid = (t0 + t1) / 2
        counts = {tl.plan.role: sum(tl.at(mid)) for tl in tls}
        cap = _capacity(diff.model, counts)
        if cap is not None:
            lows.append((cap, t1 - t0))
    if lows:
        low = min(c[0][0] + c[0][1] for c in lows)
        order.lowest = next(c for c, _ in lows if c[0] + c[1] == low)
        order.lowest_s = sum(dt for c, dt in lows if c[0] + c[1] == low)


def _mixed(tls: list[Timeline], counts: dict[str, tuple[int, int]],
           keys: dict[tuple[str, str], Handshake | None]) -> float:
    """The share of requests whose prefill and decode instances are of revisions that differ in
    a KV-handshake factor (the router picks each independently, evenly over the instances
    serving; ``keys``: per role and revision, :func:`.compat.handshake`)."""
    def of(mode: str) -> list[tuple[Handshake | None, int]]:
        out = []
        for tl in tls:
            if tl.plan.mode == mode:
                old, new = counts[tl.plan.role]
                old_key = keys.get((tl.plan.role, "old" if tl.plan.restarts else "new"))
                out += [(old_key, old), (keys.get((tl.plan.role, "new")), new)]
        return [(k, n) for k, n in out if n]
    prefill, decode = of("prefill"), of("decode")
    total = sum(n for _, n in prefill) * sum(n for _, n in decode)
    if not total:
        return 0.0
    return sum(a * b for ka, a in prefill for kb, b in decode if mismatch(ka, kb)) / total


def _capacity(model: Deployment | None, counts: dict[str, int]) -> tuple[float, float] | None:
    """Predicted (input, output) tokens/s with ``counts`` instances per role (0 when a needed
    role has none); None without a prediction (no ``spec.traffic``)."""
    if model is None:
        return None
    roles = model.spec.spec.roles
    engine = [r for r in roles if r.mode in ENGINE_MODES]
    if any(counts.get(r.name, r.replicas) == 0 for r in engine):
        return (0.0, 0.0)
    new_roles = [r.model_copy(update={"replicas": counts.get(r.name, r.replicas)})
                 if r.mode in ENGINE_MODES else r for r in roles]
    doc = model.spec.model_copy(update={"spec": model.spec.spec.model_copy(
        update={"roles": new_roles})})
    cache = model._cache.setdefault("rollout-capacity", {})   # per model: shared by its copies
    key = tuple((r.name, r.replicas) for r in new_roles)
    if key not in cache:
        # the same deployment model at the scaled replica counts (one model of the deployment:
        # role inputs, sizing and engine facts recomputed, never a second builder)
        p = at_spec(model, doc).prediction if model.prediction.reason is None else None
        cache[key] = None if p is None or p.reason else (p.total_tps - p.output_tps, p.output_tps)
    return cache[key]


def _findings(diff: RolloutDiff, old: Deployment | None, new: Deployment | None) -> list[Finding]:
    """ROL001 (a role's every instance down at once), ROL002 (GPUs per instance scaled with
    sizing.concurrency unchanged), ROL003 (mixed pairs fail their KV handshake), ROL004 (mixed
    pairs whose handshake is not checked), ROL005 (:func:`_peer_crashes`)."""
    if new is None:
        return []
    out = []
    spec = new.spec.spec

    def at(code: str, sev: Severity, path: tuple, message: str, hint: str) -> None:
        out.append(Finding(code, sev, json_path(path), message, hint, new.provenance.locate(path)))

    for r in diff.roles:
        i = _index(new, r.role)
        if i is None:
            continue
        if r.change.restarts and r.plan.old > 0 and r.plan.new > 0 and r.timeline is not None \
                and r.timeline.fewest == 0 and r.mode in ENGINE_MODES:
            at("ROL001", Severity.WARNING, ("spec", "roles", i, "replicas"),
               f"role {r.role!r}: the rollout takes all {min(r.plan.old, r.plan.new)} of its "
               f"instances down at once ({r.plan.surge} surge, {r.plan.unavailable} "
               f"unavailable: {r.strategy or r.kind}) for up to {_mins(r.outage_s)}",
               _surge_hint(new, i))
        role = spec.roles[i]
        if r.gpus and r.gpus[0] and r.gpus[1] and r.gpus[0] != r.gpus[1] and old is not None:
            j = _index(old, r.role)
            before = old.spec.spec.roles[j].sizing.concurrency if j is not None else None
            if isinstance(before, int) and before == role.sizing.concurrency:
                ranks = (old.roles[j].layout.data, new.roles[i].layout.data)
                per_rank = "" if ranks[0] == ranks[1] else (
                    f" (spread over {ranks[1]} instead of {ranks[0]} data-parallel ranks: "
                    f"{-(-before // ranks[0])} -> {-(-before // ranks[1])} sequences per rank)")
                what = ("the added GPUs serve no more sequences" if r.gpus[1] > r.gpus[0] else
                        "the fewer GPUs must hold the old load (each rank more sequences)")
                at("ROL002", Severity.WARNING, ("spec", "roles", i, "sizing", "concurrency"),
                   f"role {r.role!r}: {r.gpus[0]} -> {r.gpus[1]} GPUs per instance, "
                   f"sizing.concurrency stays {before}{per_rank}: the rendered admission and "
                   f"the prediction stay at the old load, so {what}",
                   "set sizing.concurrency to the sequences the new layout should hold "
                   "(gen size shows the KV capacity)")
    _peer_crashes(diff, old, new, at)
    rendered = diff.rendered
    if rendered is not None and rendered.mixed_s > 0 and diff.handshake:
        a, b, differ = diff.handshake
        path = ("spec", "engine", "version")
        window = _mins(_mixed_window(rendered, diff.keys))
        if a.checked and b.checked:
            at("ROL003", Severity.WARNING, path,
               f"for {window} of the rollout prefill and decode of different revisions pair "
               f"(up to {rendered.mixed_share:.0%} of requests); their {b.what} handshake "
               f"differs in {', '.join(differ)}, so {diff.kv_failure}",
               f"roll in the order gen diff finds cheapest ({diff.best or 'together'}), or pin "
               "requests to one revision (platform.lws.disaggregatedSet with router kind "
               "inference-gateway)")
        else:
            at("ROL004", Severity.NOTICE, path,
               f"for {window} of the rollout prefill and decode of different revisions pair "
               f"(up to {rendered.mixed_share:.0%} of requests, differing in "
               f"{', '.join(differ)}); the {b.what} transfer checks no release or layout, so "
               "whether they interoperate is not known",
               "roll both roles together, or test the mixed pair before the rollout")
    return out


def _peer_crashes(diff: RolloutDiff, old: Deployment | None, new: Deployment, at) -> None:
    """ROL005: a role this change restarts whose peer crashes when it restarts, by the restart
    model (generator/facts/restarts.py; the row gen validate reports as RST010/RST011, at that
    rule's severity): the survivor's instances cold-start again, an outage the rollout's
    timeline (which rolls only the changed templates) does not include. A survivor exists
    where the survivor role is not rolled, or where it is and the rendered order pairs
    revisions (``mixed_s`` > 0: a survivor exchanged KV with an instance replaced after it);
    rolled together with no mixed pair, no instance outlives its peer. A survivor is an
    instance of the old revision (its template unchanged, or replaced after its peer), so the
    rows are the old side's (its engine release and the NIXL in its image: an upgrade onto a
    fixed NIXL still crashes the old survivors). ``at`` appends a finding."""
    by_mode = {r.mode: r for r in diff.roles if r.mode in ENGINE_MODES and r.plan.new > 0}
    for _, role, row in pd_crashes(old if old is not None else new):
        i = _index(new, role.name)
        if i is None:
            continue
        rolled = by_mode.get(row.restarted)
        if rolled is None or not rolled.change.restarts or rolled.plan.old == 0:
            continue
        code = CRASH_RULE[new.spec.spec.engine.name]
        severity = next(r.severity for r in RULES if r.code == code)
        survivor = by_mode.get(row.survivor)
        rendered = diff.rendered
        if survivor is not None and survivor.change.restarts and rendered is not None \
                and rendered.mixed_s == 0:
            continue        # both sides replaced, never paired across revisions: no survivor
        start = f" (a cold start of {_mins(survivor.plan.start_s)} each)" \
            if survivor is not None and survivor.plan.start_s else ""
        also = " although their own template does not change" \
            if survivor is not None and not survivor.change.restarts else ""
        at("ROL005", severity, ("spec", "roles", i, "kvTransfer", "connector"),
           f"this change restarts every {row.restarted} instance ({rolled.role!r}); by the "
           f"restart model ({code}: {row.transport}), {row.behaviour}: the {role.name!r} "
           f"instances that exchanged KV with a replaced {row.restarted} may crash and "
           f"restart{also}{start}, which the rollout's timeline does not count",
           row.remedy)


def _surge_hint(model: Deployment, i: int) -> str:
    """How role ``i`` gets a surge instance: its pool's free nodes vs one instance's, and the
    LWS release that surges (generator/lifecycle.py rollout)."""
    spec = model.spec.spec
    role = spec.roles[i]
    pool = spec.nodePools[role.nodePool]
    lay = model.roles[i].layout if model.roles[i] is not None else None
    if lay is None:
        return "run more replicas"
    per = -(-lay.tensor * lay.data * lay.pipeline // pool.gpusPerNode)
    used = sum(r.replicas * -(-_gpus(model, j) // pool.gpusPerNode)
               for j, r in enumerate(spec.roles) if r.nodePool == role.nodePool)
    more = max(0, per - (pool.nodes - used))
    lws = "" if spec.platform is not None and spec.platform.lws is not None else \
        "declare platform.lws.version (>= 0.9.0 surges) and "
    room = f"give pool {role.nodePool!r} {more} more node(s) (nodes: {pool.nodes + more}; one " \
        f"instance takes {per})" if more else f"pool {role.nodePool!r} has room for one"
    return f"{lws}{room}, so a new instance starts before an old one stops; or run more replicas"


def _mixed_window(order: Order, keys: dict) -> float:
    times = boundaries(order.timelines)
    total = 0.0
    for t0, t1 in zip(times, times[1:]):
        counts = {tl.plan.role: tl.at((t0 + t1) / 2) for tl in order.timelines}
        if _mixed(order.timelines, counts, keys) > 0:
            total += t1 - t0
    return total


def _mins(seconds: float) -> str:
    """``"2266 s (37.8 min)"``."""
    return f"{seconds:.0f} s ({seconds / 60:.1f} min)"

