"""What the platform targets (KServe, RBG, Dynamo, AIBrix) share: the controller release a spec
names, findings located in the spec, pod templates as Kubernetes objects built from the plan's
(the launcher and every derived number unchanged), the env files inlined into containers, the
plain Kubernetes objects a platform leaves to moegen, and the one YAML form of every file.

No I/O: every function returns data or text; :mod:`generator.emit` writes.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Iterable

from ..errors import Finding, Severity
from ..facts import controllers
from ..manifests.pods import PodPlan, PodSpecPlan
from ..naming import L_API, LWS_WORKER_INDEX_LABEL
from ..spec.load import json_path

if TYPE_CHECKING:
    from ..deployment import Deployment
    from ..manifests.plan import DeploymentPlan

E, W = Severity.ERROR, Severity.WARNING
TARGET_PATH = ("spec", "target")


def release(deployment: Deployment) -> str | None:
    """The known controller release ``spec.target`` names (its newest by default), or None
    when moegen does not know the one named (rule TGT001 then reports it)."""
    t = deployment.spec.spec.target
    return controllers.normalise(t.name, t.version)


class Findings:
    """Collects a target's findings, each located where the spec (or overlay) set the field."""

    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.out: list[Finding] = []

    def add(self, code: str, severity: Severity, path: tuple, message: str,
            hint: str = "") -> None:
        """Record one finding on the field at ``path`` (a tuple of keys and indexes)."""
        self.out.append(Finding(code, severity, json_path(path), message, hint,
                                self.deployment.provenance.locate(path)))


def common_findings(deployment: Deployment, found: Findings, engines_fact: tuple[str, ...],
                    dynamo: bool = False) -> str | None:
    """TGT001 (an unknown release), TGT002 (an engine the platform does not run) and TGT003
    (a ``spec.target`` option of another target); returns the release (None when unknown)."""
    target = deployment.spec.spec.target
    rel = release(deployment)
    if rel is None:
        known = ", ".join(controllers.releases(target.name))
        found.add("TGT001", E, (*TARGET_PATH, "version"),
                  f"{target.name} release {target.version} is not one moegen knows (known: "
                  f"{known}); what its controller injects is read from each release's source",
                  f"name one of {known}, or add the release to tools/extract_controllers.py")
        return None
    engines = controllers.value(target.name, rel, *engines_fact)
    engine = deployment.spec.spec.engine.name
    if engine not in engines:
        found.add("TGT002", E, ("spec", "engine", "name"),
                  f"{target.name} {rel} runs {', '.join(engines)} only, not {engine} "
                  f"({controllers.source(target.name, rel, *engines_fact)})",
                  f"use target {'kubernetes'} or another platform for {engine}")
    for i, role in enumerate(deployment.spec.spec.roles):
        if role.parallel.executor == "ray":
            found.add("TGT004", E, ("spec", "roles", i, "parallel", "executor"),
                      f"role {role.name!r}: parallel.executor ray is rendered by target "
                      f"kubernetes only (its launcher starts the Ray cluster); {target.name} "
                      "pods run the controller's command",
                      "use target kubernetes, or remove parallel.executor (--nnodes)")
    if not dynamo:
        for key in ("image", "clusterTopology", "packDomain"):
            if getattr(target, key) is not None:
                found.add("TGT003", E, (*TARGET_PATH, key),
                          f"spec.target.{key} applies to target dynamo only, not "
                          f"{target.name}", f"remove spec.target.{key}")
    return rel


def roles_by_mode(deployment: Deployment) -> dict[str, list[int]]:
    """Role indexes per mode (prefill, decode, unified)."""
    out: dict[str, list[int]] = {"prefill": [], "decode": [], "unified": []}
    for i, role in enumerate(deployment.spec.spec.roles):
        out[role.mode].append(i)
    return out


# --- YAML -------------------------------------------------------------------------------------

def header(plan: DeploymentPlan, what: str = "") -> str:
    """The first line of every file: what generated it."""
    extra = f", {what}" if what else ""
    return (f"# Source: moegen InferenceDeployment {plan.name}{extra}. Generated; edit the spec "
            "and re-render.\n")


def document(plan: DeploymentPlan, obj: dict[str, Any], what: str = "") -> str:
    """One object as a YAML file (block style, sorted keys, the header first)."""
    from .templates import toyaml
    return header(plan, what) + toyaml(obj) + "\n"


def kustomization(plan: DeploymentPlan, files: Iterable[str]) -> str:
    """A kustomization over ``files`` (no generators: every env is inline), so the directory
    stays a base for ``kubectl apply -k`` and GitOps tools."""
    return document(plan, {"apiVersion": "kustomize.config.k8s.io/v1beta1",
                           "kind": "Kustomization", "namespace": plan.namespace,
                           "resources": sorted(files)})


# --- pod templates ----------------------------------------------------------------------------

def pod_spec_dict(spec: PodSpecPlan) -> dict[str, Any]:
    """A plan's pod spec as the Kubernetes PodSpec the kubernetes target renders (the
    ``_pod.yaml.j2`` macro, read back), so every target runs the same pods."""
    import yaml

    from .templates import macro
    return yaml.safe_load(str(macro("_pod.yaml.j2", "pod_spec")(spec)))


def with_launcher(spec: PodSpecPlan, **launcher: str) -> PodSpecPlan:
    """``spec`` whose launcher reads other environment variables (``index_env``: the pod's
    index in its instance; ``leader_env``: the leader's DNS name)."""
    return dataclasses.replace(spec, launcher={**spec.launcher, **launcher})


def without_env(spec: PodSpecPlan, *names: str) -> PodSpecPlan:
    """``spec`` without the pod env entries ``names`` (the platform injects them)."""
    return dataclasses.replace(spec, env=[e for e in spec.env if e["name"] not in names])


def merged_env(own: list[dict[str, Any]], items: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The env file's entries, then the container's own (``env`` wins over ``envFrom`` in
    Kubernetes, so an entry of the file that the container also sets is dropped; the file's
    come first, so the container's may reference them)."""
    names = {e["name"] for e in own}
    return [*({"name": k, "value": v} for k, v in items if k not in names), *own]


def inline_env(pod: dict[str, Any], items: list[tuple[str, str]], container: str = "engine"
               ) -> dict[str, Any]:
    """Replace the engine container's ``envFrom`` (the env file's ConfigMap, which only the
    kubernetes target's kustomize base generates) by the env file's entries
    (:func:`merged_env`)."""
    for c in pod["containers"]:
        if c["name"] == container:
            c.pop("envFrom", None)
            c["env"] = merged_env(c.get("env", []), items)
    return pod


def template(pod: PodPlan, spec: dict[str, Any]) -> dict[str, Any]:
    """A PodTemplateSpec: the plan pod's labels and annotations over ``spec``."""
    meta: dict[str, Any] = {"labels": dict(pod.labels)}
    if pod.annotations:
        meta["annotations"] = dict(pod.annotations)
    return {"metadata": meta, "spec": spec}


def sized_load(work) -> dict[str, str]:
    """The kubernetes target's ``moegen.dev/sized-load`` annotation of a workload (the load its
    role was sized for: manifests/workloads.py ``sized_load``), which ``gen import`` reads back
    (importer/objects.py ``_sized_load``), or ``{}``."""
    from ..naming import SIZED_LOAD
    value = work.annotations.get(SIZED_LOAD)
    return {SIZED_LOAD: value} if value else {}


def annotate(tpl: dict[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    """``tpl`` (a PodTemplateSpec) with ``annotations`` added to its metadata."""
    if annotations:
        meta = tpl.setdefault("metadata", {})
        meta["annotations"] = {**meta.get("annotations", {}), **annotations}
    return tpl


def resource_size(resources: dict[str, Any]) -> tuple[float, float]:
    """(memory GiB, CPU) of a container's requests (else limits), to pick the larger of two
    pods' resources for a template they share."""
    req = resources.get("requests") or resources.get("limits") or {}
    mem = str(req.get("memory", "0Gi"))
    return (float(mem[:-2]) if mem.endswith("Gi") else 0.0, float(req.get("cpu", 0)))


#: The env var vLLM's NIXL side channel reads its base port from: DP rank r binds base + r
#: (x the TP step; generator/engines/vllm.py nixl_base). The kubernetes target's launcher
#: exports a per-pod base so every pod binds the same ports.
NIXL_PORT_ENV = "VLLM_NIXL_SIDE_CHANNEL_PORT"


def pod_base(launch, pod: int, default: str | None) -> str | None:
    """The NIXL base port pod ``pod`` of an instance runs with in the kubernetes target (its
    per-pod env, else ``default``: the env file's)."""
    env = dict(launch.pod_env[pod]) if pod < len(launch.pod_env) else {}
    return env.get(NIXL_PORT_ENV, default)


def bound_ports(launch, pods: Iterable[int], base: str | None, default: str | None,
                nixl_name: str = "nixl") -> list[dict[str, Any]]:
    """The container ports of ``pods`` as they bind when every pod runs with the NIXL base
    ``base`` (one template's env for all of them): each pod's NIXL side-channel ports shifted
    from its own base to ``base``, named ``<nixl_name>-<k>`` in order; the others unchanged."""
    out: list[dict[str, Any]] = []
    nixl: list[int] = []
    for i in pods:
        own = pod_base(launch, i, default)
        for p in launch.ports_of(i):
            if p.name.startswith("nixl") and base is not None and own is not None:
                port = p.port - int(own) + int(base)
                if port not in nixl:
                    nixl.append(port)
                continue
            entry = {"name": p.name, "containerPort": p.port, "protocol": "TCP"}
            if entry not in out:
                out.append(entry)
    names = [nixl_name] if len(nixl) == 1 else [f"{nixl_name}-{k}" for k in range(len(nixl))]
    return out + [{"name": n, "containerPort": p, "protocol": "TCP"}
                  for n, p in zip(names, sorted(nixl))]


def env_items(plan: DeploymentPlan, role: str) -> list[tuple[str, str]]:
    """The env file entries of ``role``."""
    return next(list(e.items) for e in plan.env_files if e.role == role)


# --- plain objects ----------------------------------------------------------------------------

#: Files of the kubernetes target a platform target replaces: the workloads and what only the
#: kustomize base needs (env files, their generator, the name-reference configuration).
def _replaced(path: str) -> bool:
    return (path.endswith(("-lws.yaml", "-statefulset.yaml", "-headless-service.yaml"))
            or path in ("disaggregatedset.yaml", "kustomization.yaml", "kustomizeconfig.yaml")
            or path.startswith("env/"))


def plain_objects(plan: DeploymentPlan, drop: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """The kubernetes target's objects a platform leaves to moegen (Services, the PDBs, the
    router and its RBAC, the inference gateway, monitoring), by file, parsed; without the
    workloads, the env files and ``drop``. The client Services select the API pods by moegen's
    ``serves-api`` label instead of the LeaderWorkerSet worker index (the platform's pods carry
    no LWS labels)."""
    import yaml

    from .kubernetes import render_files
    drop = set(drop)
    out = {}
    for path, text in render_files(plan).items():
        if _replaced(path) or path in drop:
            continue
        obj = yaml.safe_load(text)
        if obj.get("kind") == "Service":
            sel = obj["spec"]["selector"]
            if sel.pop(LWS_WORKER_INDEX_LABEL, None) is not None:
                sel[L_API] = "true"
        out[path] = obj
    return out


# --- findings the group platforms (RBG, AIBrix) share -----------------------------------------

def group_findings(d: Deployment, found: Findings, error: str, warning: str, platform: str,
                   workload_source: str) -> None:
    """What RBG and AIBrix (roles of pod templates moegen fills) cannot express: moegen's
    LeaderWorkerSet-only features (error code ``error``) and what they ignore (``warning``)."""
    from ..engines.routers import discovery_supported, rendered_router
    spec = d.spec.spec
    for i, role in d.role_items():
        rs = spec.roles[i]
        if rs.placement is not None and rs.placement.topologyKey is not None:
            found.add(error, E, ("spec", "roles", i, "placement", "topologyKey"),
                      f"{platform} places its instances itself ({workload_source}); the "
                      "LeaderWorkerSet exclusive-topology annotation has no equivalent here",
                      "remove placement.topologyKey, or use target kubernetes")
        if rs.autoscaling is not None:
            found.add(warning, W, ("spec", "roles", i, "autoscaling"),
                      f"moegen's KEDA ScaledObject scales a LeaderWorkerSet; {platform}'s "
                      f"roles scale through its own adapter ({workload_source}): not rendered",
                      "scale the role with the platform's autoscaling")
    platform_cfg = spec.platform
    if platform_cfg is not None:
        if platform_cfg.topology is not None:
            found.add(error, E, ("spec", "platform", "topology"),
                      f"moegen keeps a group in one domain through the LeaderWorkerSet group "
                      f"label; {platform}'s pods carry none ({workload_source})",
                      "remove platform.topology, or use target kubernetes")
        if platform_cfg.scheduler is not None and platform_cfg.scheduler.kind != "default":
            found.add(error, E, ("spec", "platform", "scheduler", "kind"),
                      f"moegen's gang scheduling labels the LeaderWorkerSets; {platform} "
                      f"creates its own pod groups ({workload_source})",
                      "remove platform.scheduler, or use target kubernetes")
        if platform_cfg.lws is not None:
            if platform_cfg.lws.disaggregatedSet:
                found.add(error, E, ("spec", "platform", "lws", "disaggregatedSet"),
                          f"a DisaggregatedSet is the kubernetes target's; {platform} groups "
                          "the roles itself", "remove platform.lws.disaggregatedSet")
            else:
                found.add(warning, W, ("spec", "platform", "lws"),
                          f"{platform} runs no LeaderWorkerSet: platform.lws is not applied",
                          "remove platform.lws")
    if rendered_router(spec) == "deployment":
        connector = next((r.kv_transfer.connector for _, r in d.role_items()
                          if r.mode == "prefill" and r.kv_transfer is not None), "")
        ports = {r.serving.port for _, r in d.role_items() if r.mode in ("prefill", "decode")}
        if not (spec.router.discovery and len(ports) == 1
                and discovery_supported(spec.engine.name, connector)):
            found.add(error, E, ("spec", "router", "discovery"),
                      f"the router's static engine URLs name LeaderWorkerSet pods; {platform} "
                      f"names its pods itself ({workload_source}), so the router must find "
                      "them by label", "router.discovery: true (vllm-router needs NIXL for it)")
    if spec.monitoring is not None and spec.monitoring.enabled:
        found.add(warning, W, ("spec", "monitoring", "enabled"),
                  f"the EngineGroupRestarts alert excludes StatefulSet rollouts; {platform}'s "
                  "rollouts re-create pods it counts as restarts",
                  "expect the alert during rollouts")
