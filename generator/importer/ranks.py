"""The ranks a role's command asks for against its pods and their GPUs (IMP009), and a role's
counts (replicas, pods per replica) named as the manifest writes them (generator/inputs.py
reports findings on them by those names)."""

from __future__ import annotations

from ..spec.provenance import Provenance, json_path
from .build import Role, _workload_kind
from .launch import Issue
from .workloads import Workload


def counts_named(prov: Provenance, rpath: tuple, w: Workload, pool: str) -> None:
    """A role's ``replicas`` and its pool's ``nodes`` (replicas x pods per replica) named and
    located as the manifest writes them (``$.spec.replicas``, an LWS's
    ``$.spec.leaderWorkerTemplate.size``), so SCH006 on ``replicas: -2`` points there."""
    src = w.doc.provenance.locations
    # A workload's path is its object's root (a Deployment) or the mapping that holds its
    # counts (an LWS's spec, an RBG role).
    rep = next((p for p in ((*w.path, "replicas"), (*w.path, "spec", "replicas")) if p in src),
               None)
    size = next((p for p in ((*w.path, "leaderWorkerTemplate", "size"),
                             (*w.path, "spec", "leaderWorkerTemplate", "size")) if p in src),
                None)
    if rep is not None:
        prov.locations[(*rpath, "replicas")] = src[rep]
        prov.names[(*rpath, "replicas")] = json_path(rep)
    by = size if size is not None and w.size < 1 else rep
    nodes = ("spec", "nodePools", pool, "nodes")
    if by is not None and nodes not in prov.names:
        prov.locations[nodes] = src[by]
        prov.names[nodes] = json_path(by)


def _sglang_dp_copies(r: Role) -> int:
    """SGLang's ``--dp-size N`` without attention data parallelism: N engine copies of
    tp x pp GPUs each in one server (SGLang 0.5.23 python/sglang/srt/server_args.py
    compute_world_size: dp_size * tp_size * pp_size); 1 otherwise."""
    cmd = r.launch.command
    if cmd is None or cmd.engine != "sglang" or cmd.get("--attn-dp-size") is not None \
            or cmd.flag("--enable-dp-attention"):
        return 1
    o = cmd.get("--dp-size")
    try:
        return max(1, int(str(o.value))) if o is not None else 1
    except ValueError:
        return 1


def _instance_gpus(r: Role) -> int:
    """The GPUs one instance of ``r``'s command asks for (tensor x data x pipeline, x SGLang's
    engine copies)."""
    par = r.fields.role.get("parallel", {})
    return par.get("tensor", 1) * par.get("data", 1) * par.get("pipeline", 1) \
        * _sglang_dp_copies(r)


def workload_kind(r: Role) -> str:
    """The spec's ``workload`` for ``r``: ``statefulset`` where each instance is one pod of a
    Deployment or StatefulSet whose GPUs hold it (what moegen renders for single-node
    instances: spec/models.py ``Role.workload``); else as build.py reads it (moegen's own
    StatefulSets, ``pod-per-rank``, ``lws``: a LeaderWorkerSet, a platform's groups, a
    StatefulSet whose pods are one instance's nodes, or pods short of the GPUs the command asks
    for, IMP009)."""
    w, kind = r.workload, _workload_kind(r)
    if kind == "lws" and w.kind in ("Deployment", "StatefulSet") and w.platform == "kubernetes" \
            and w.size == 1 and r.pod.bad_gpus is None and r.pod.gpus \
            and _instance_gpus(r) <= r.pod.gpus:
        return "statefulset"
    return kind


def layout_issues(r: Role, name: str) -> list[Issue]:
    """Pods x GPUs per pod against the ranks the command asks for (before moegen's rules)."""
    w, role = r.workload, r.fields.role
    par = role.get("parallel", {})
    copies = _sglang_dp_copies(r)
    gpus = _instance_gpus(r)
    per_pod = r.pod.gpus
    out = []
    if r.pod.bad_gpus is not None:
        key, raw, at, path = r.pod.bad_gpus
        why = "the pod gets no GPU and the engine finds no CUDA device" \
            if str(raw).strip().lstrip("+-").isdigit() else \
            "not a Kubernetes quantity: the API server refuses the object"
        out.append(Issue("IMP009", f"role {name!r}: the engine asks for {gpus} GPUs per "
                         f"instance (tensor x data x pipeline), the container's {key} is "
                         f"{raw!r} ({why})", at, f"set {key}: N, the GPUs of one pod (a "
                         "positive integer)", error=True, path=path))
    if per_pod and gpus != w.size * per_pod and not (w.size == 1 and gpus < per_pod and
                                                     copies == 1):
        what = "tensor x data x pipeline" if copies == 1 else \
            f"--dp-size {copies} copies x tensor x pipeline: SGLang 0.5.23 " \
            "python/sglang/srt/server_args.py compute_world_size"
        out.append(Issue("IMP009", f"role {name!r}: the engine asks for {gpus} GPUs per "
                         f"instance ({what}), the workload gives {w.size} "
                         f"pod(s) x {per_pod} GPUs = {w.size * per_pod}", r.launch.loc(0),
                         "make the parallel sizes match the pods and their GPUs", error=True))
    local = r.launch.command.get("--data-parallel-size-local") if r.launch.command else None
    data = par.get("data", 1)
    try:
        n_local = int(str(local.value)) if local is not None else None
    except ValueError:
        n_local = None
    if n_local and n_local * w.size != data:
        out.append(Issue("IMP009", f"role {name!r}: --data-parallel-size-local {n_local} x "
                         f"{w.size} pod(s) = {n_local * w.size} DP ranks, but "
                         f"--data-parallel-size is {data} (vLLM waits for the missing ranks "
                         "forever: vllm/v1/engine/utils.py)", r.launch.loc(local.index),
                         "make the local sizes add up to the data-parallel size", error=True))
    return out


#: Kubernetes apps/v1 DeploymentStrategy: RollingUpdate with maxSurge and maxUnavailable 25 %
#: when unset (https://kubernetes.io/docs/concepts/workloads/controllers/deployment/); a
#: percentage is rounded up for the surge and down for the unavailable pods, and both at 0 make
#: 1 unavailable pod (kubernetes/kubernetes@v1.34.0:
#: pkg/controller/deployment/util/deployment_util.go ResolveFenceposts).
DEPLOYMENT_DEFAULT_ROLL = "25%"


def _scaled(value: object, replicas: int, up: bool) -> int | None:
    text = str(value).strip()
    try:
        if text.endswith("%"):
            share = int(text[:-1]) * replicas
            return -(-share // 100) if up else share // 100
        return int(text)
    except ValueError:
        return None


def rollout_change(r: Role) -> list[Issue]:
    """IMP029 (a notice): a Deployment imported as ``workload: statefulset`` (one pod per
    instance) no longer rolls as written. A Deployment's RollingUpdate surges (maxSurge, 25 % by
    default) and takes maxUnavailable pods down at once, Recreate stops every pod first; the
    StatefulSet moegen renders replaces one pod at a time, each stopped before its replacement
    starts (Kubernetes apps/v1 StatefulSet RollingUpdate; generator/lifecycle.py ``rollout``)."""
    w = r.workload
    if w.kind != "Deployment" or workload_kind(r) != "statefulset":
        return []
    data = w.doc.data if isinstance(w.doc.data, dict) else {}
    spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
    strategy = spec.get("strategy") if isinstance(spec.get("strategy"), dict) else {}
    prov = w.doc.provenance
    at = prov.locations.get(("spec", "strategy")) or prov.locate(("kind",))
    n = w.replicas
    after = (f"imported as workload: statefulset, whose rolling update replaces one pod at a "
             f"time without surge ({min(1, n)} of {n} pods down at a time)")
    if strategy.get("type") == "Recreate":
        return [Issue("IMP029", f"Deployment {w.name} rolls out with Recreate: every pod stops "
                      f"before the new ones start; {after}", at, _ROLL_HINT, notice=True)]
    rolling = strategy.get("rollingUpdate") if isinstance(strategy.get("rollingUpdate"),
                                                          dict) else {}
    surge = rolling.get("maxSurge", DEPLOYMENT_DEFAULT_ROLL)
    down = rolling.get("maxUnavailable", DEPLOYMENT_DEFAULT_ROLL)
    extra, gone = _scaled(surge, n, True), _scaled(down, n, False)
    if extra is None or gone is None:
        return []
    if extra == 0 and gone == 0:
        gone = 1
    stated = "" if rolling else " (the Kubernetes defaults)"
    return [Issue("IMP029", f"Deployment {w.name} rolls out with maxSurge {surge} and "
                  f"maxUnavailable {down}{stated}: {extra} extra pod{'' if extra == 1 else 's'} "
                  f"and {gone} of {n} pods down at a time; {after}", at, _ROLL_HINT,
                  notice=True)]


_ROLL_HINT = ("to keep a surge, set workload: lws with platform.lws >= 0.9.0 and room in the "
              "pool for one more instance: moegen then surges one instance (docs/design.md §9)")
