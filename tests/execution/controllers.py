"""A rollout of a changed rendered output, as the controllers run it (``kubectl apply -k`` of
the new output over the running one).

The LeaderWorkerSet controller replaces the groups of a LeaderWorkerSet whose
leaderWorkerTemplate changed from the highest group index down, ``maxUnavailable`` groups at a
time, each deleted and re-created with the new template once the previous ones are ready
(kubernetes-sigs/lws@v0.10.0:pkg/controllers/leaderworkerset_controller.go
``rollingUpdateParameters``, ``rollingUpdatePartition``); LeaderWorkerSets in one sync wave
roll at the same time. Only the bounds the tier renders are emulated (``maxSurge`` 0: the
development pool has no room for a surge group); any other raises NotImplementedError.

Deleted pods terminate as the kubelet does (kubelet.py ``delete``: preStop, SIGTERM, SIGKILL at
the grace period), new pods get new addresses (``readdress``) and the new template's
environment (the generated ConfigMaps of the new output: kustomize gives a changed env file a
new name, so the old groups keep reading the old one until they are replaced).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.execution.kubelet import Cluster, Pod, load_objects, plan_pods


@dataclass
class Replaced:
    """One group replaced: when its deletion started and its new pods were ready (s since the
    rollout began), its old and new addresses, and how its pods terminated."""

    group: str
    pods: list[str]
    deleted_at: float = 0.0
    gone_at: float = 0.0
    ready_at: float = 0.0
    old_ips: dict[str, str] = field(default_factory=dict)
    new_ips: dict[str, str] = field(default_factory=dict)
    terminations: dict[str, dict] = field(default_factory=dict)


def _template(p: Pod, configmaps: dict[str, dict[str, str]]) -> tuple:
    """A pod's template as the cluster receives it: kustomize names a generated ConfigMap after
    its content, so the data of the ConfigMaps a container reads is part of it."""
    refs = [src["configMapRef"]["name"] for src in p.container.get("envFrom", [])
            if "configMapRef" in src]
    return (p.container, p.volumes, p.labels, p.annotations, p.spec,
            [configmaps.get(r) for r in refs])


def changed_workloads(cluster: Cluster, new_out: Path) -> dict[str, dict[str, Pod]]:
    """Per workload whose pod template differs in ``new_out``: its pods as the new output plans
    them (by name)."""
    planned, _ = plan_pods(new_out, cluster.ip_prefix)
    _, configmaps = load_objects(new_out)
    out: dict[str, dict[str, Pod]] = {}
    for p in planned:
        old = cluster.pods.get(p.name)
        if old is None or _template(old, cluster.configmaps) != _template(p, configmaps):
            out.setdefault(p.workload, {})[p.name] = p
    return out


def apply(cluster: Cluster, new_out: Path) -> list[Replaced]:
    """Roll every changed LeaderWorkerSet of ``new_out`` over the running ``cluster`` at once
    (one sync wave) and return the groups replaced, in the order they were ready.

    Each LeaderWorkerSet progresses on its own (a group deleted while another LeaderWorkerSet's
    group still drains). Deletions run in threads; pods are started from this thread only: a
    pod process dies with the thread that started it (kubelet.py ``_die_with_parent``:
    PR_SET_PDEATHSIG follows the parent thread)."""
    docs, configmaps = load_objects(new_out)
    lws = {d["metadata"]["name"]: d for d in docs if d["kind"] == "LeaderWorkerSet"}
    changed = changed_workloads(cluster, new_out)
    batches: dict[str, list[list[str]]] = {}
    for name, new_pods in changed.items():
        if name not in lws:
            raise NotImplementedError(f"{name}: only LeaderWorkerSet rollouts are emulated")
        cfg = lws[name]["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]
        if int(cfg.get("maxSurge", 0)) != 0:
            raise NotImplementedError(f"{name}: maxSurge {cfg['maxSurge']} is not emulated")
        step = max(1, int(cfg.get("maxUnavailable", 1)))
        groups = sorted({p.group for p in new_pods.values()},
                        key=lambda g: int(g.rsplit("-", 1)[1]), reverse=True)
        batches[name] = [groups[i:i + step] for i in range(0, len(groups), step)]
    cluster.docs, cluster.configmaps = docs, configmaps
    t0 = time.monotonic()
    done: list[Replaced] = []
    active: dict[str, tuple[Replaced, threading.Thread | None]] = {}
    errors: list[BaseException] = []

    def delete(rec: Replaced) -> None:
        try:
            rec.terminations = cluster.delete(*rec.pods)
            rec.gone_at = time.monotonic() - t0
        except BaseException as e:   # re-raised below, in this thread
            errors.append(e)

    while batches or active:
        if errors:
            raise errors[0]
        for name in list(batches):
            if name not in active:
                batch = batches[name].pop(0)
                if not batches[name]:
                    del batches[name]
                members = [n for g in batch for n in cluster.group_of(g)]
                rec = Replaced(", ".join(batch), members, deleted_at=time.monotonic() - t0,
                               old_ips={n: cluster.pods[n].ip for n in members})
                t = threading.Thread(target=delete, args=(rec,), daemon=True)
                t.start()
                active[name] = (rec, t)
        for name, (rec, t) in list(active.items()):
            if t is not None and not t.is_alive():          # gone: create the new pods
                for n in rec.pods:
                    old, new = cluster.pods[n], changed[name][n]
                    old.container, old.volumes, old.labels = new.container, new.volumes, new.labels
                    old.annotations, old.spec = new.annotations, new.spec
                cluster.readdress(*rec.pods)
                rec.new_ips = {n: cluster.pods[n].ip for n in rec.pods}
                cluster.start(*rec.pods, fresh=True)
                active[name] = (rec, None)
            elif t is None and _ready(cluster, rec.pods):
                rec.ready_at = time.monotonic() - t0
                done.append(rec)
                del active[name]
        time.sleep(0.5)
    return done


def _ready(cluster: Cluster, pods: list[str]) -> bool:
    """The new pods pass their probes (kubelet.py ``wait_ready``'s checks, one round)."""
    for n in pods:
        if not cluster.alive(n):
            raise AssertionError(f"{n}: exited before it was ready\n{cluster.log(n)[-3000:]}")
        waited = time.monotonic() - cluster.running[n].started
        if waited > cluster.pods[n].startup_budget_s:
            raise AssertionError(f"{n}: not ready within its startup budget")
    if all(cluster.probe(n) for n in pods):
        cluster.wait_ready(*pods)          # records the measured start, as wait_ready does
        return True
    return False
