"""The ``kubernetes`` target: the plan as LeaderWorkerSets (or StatefulSets), Services, the router
or the inference gateway, monitoring objects and a kustomize base (``{relative path: text}``).
No I/O, no computation: templates only.

Files of an output directory (one object per file, named ``<role>-<kind>.yaml``):

* ``<role>-lws.yaml`` or ``<role>-<replica>-statefulset.yaml`` (+ ``-headless-service.yaml``),
  or with ``platform.lws.disaggregatedSet`` one ``disaggregatedset.yaml`` for every role,
* ``<role>-service.yaml`` (client Service), ``<role>-pdb.yaml`` (PodDisruptionBudget),
  ``router-deployment.yaml``, ``router-service.yaml`` (+ ``router-role.yaml``,
  ``router-rolebinding.yaml``, ``router-serviceaccount.yaml`` when it discovers its engines),
* ``podmonitor.yaml``, ``router-servicemonitor.yaml``, ``prometheusrule.yaml`` (monitoring),
  ``grafana-dashboard.yaml`` (``monitoring.dashboard``), ``<role>-scaledobject.yaml`` (KEDA,
  ``roles[].autoscaling``),
* router kind inference-gateway: ``inferencepool.yaml``, ``httproute.yaml``,
  ``epp-deployment.yaml``, ``epp-service.yaml``, ``epp-configmap.yaml``, ``epp-role.yaml``,
  ``epp-rolebinding.yaml`` (+ ``epp-serviceaccount.yaml`` unless spec.pod names one),
* ``networkpolicy-engines.yaml``, ``networkpolicy-router.yaml``, ``networkpolicy-epp.yaml``
  (``network.networkPolicy``, default on: generator/manifests/netpol.py),
* ``env/<role>.env`` (engine environment), ``kustomization.yaml``, ``kustomizeconfig.yaml``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..deployment import Deployment
from ..errors import Finding

if TYPE_CHECKING:   # the render path's types: gen validate asks this target for findings only
    from ..manifests.plan import DeploymentPlan
    from ..manifests.pods import PodSpecPlan


#: Where a pod template names another object, under a pod spec (kustomize fieldSpec paths; a
#: list on the way is traversed): what kustomize's nameReference transformer must rewrite when a
#: generator hashes the name (configMapGenerator/secretGenerator) or a namePrefix/nameSuffix
#: renames it. Kustomize knows these paths in built-in workloads (Deployment, StatefulSet), not
#: inside LeaderWorkerSets or DisaggregatedSets (sigs.k8s.io/kustomize api/konfig/builtinpluginconsts
#: namereference.go lists the built-in kinds only).
POD_REFERENCES = (
    ("ConfigMap", "v1", "containers/envFrom/configMapRef/name"),
    ("ConfigMap", "v1", "containers/env/valueFrom/configMapKeyRef/name"),
    ("ConfigMap", "v1", "initContainers/envFrom/configMapRef/name"),
    ("ConfigMap", "v1", "volumes/configMap/name"),
    ("Secret", "v1", "imagePullSecrets/name"),
    ("Secret", "v1", "containers/envFrom/secretRef/name"),
    ("Secret", "v1", "containers/env/valueFrom/secretKeyRef/name"),
    ("Secret", "v1", "volumes/secret/secretName"),
    ("ServiceAccount", "v1", "serviceAccountName"),
    ("PersistentVolumeClaim", "v1", "volumes/persistentVolumeClaim/claimName"),
)
#: The pod specs of the custom workloads moegen renders, as kustomize paths.
LWS_TEMPLATES = ("spec/leaderWorkerTemplate/leaderTemplate/spec",
                 "spec/leaderWorkerTemplate/workerTemplate/spec")


def name_references(plan: DeploymentPlan) -> list[dict]:
    """kustomizeconfig.yaml's ``nameReference`` entries for the pod templates of the
    LeaderWorkerSets (and the DisaggregatedSet): per referenced kind, the fieldSpecs that name
    it (:data:`POD_REFERENCES` under each template)."""
    holders = [("LeaderWorkerSet", t) for t in LWS_TEMPLATES]
    if plan.disaggregated is not None:
        holders += [("DisaggregatedSet", f"spec/roles/{t}") for t in LWS_TEMPLATES]
    out: dict[tuple[str, str], list[dict]] = {}
    for kind, version, path in POD_REFERENCES:
        specs = out.setdefault((kind, version), [])
        specs += [{"kind": holder, "path": f"{template}/{path}"} for holder, template in holders]
    return [{"kind": k, "version": v, "fieldSpecs": specs} for (k, v), specs in out.items()]


def render_files(plan: DeploymentPlan) -> dict[str, str]:
    """Render every file of the output directory for ``plan``; keys are POSIX relative paths.

    Each pod spec is rendered once, however many workloads share it (the single-pod
    StatefulSets of a role), and substituted into every workload that uses it.
    """
    from .templates import macro, render
    files: dict[str, str] = {}
    pod_spec = macro("_pod.yaml.j2", "pod_spec")
    specs: dict[PodSpecPlan, str] = {}
    for w in plan.workloads:
        for pod in (w.leader, w.worker):
            if pod is not None and pod.spec not in specs:
                specs[pod.spec] = str(pod_spec(pod.spec))
        if w.kind == "LeaderWorkerSet" and plan.disaggregated is not None:
            continue   # a role of the DisaggregatedSet below
        template = "lws.yaml.j2" if w.kind == "LeaderWorkerSet" else "statefulset.yaml.j2"
        files[w.file] = render(template, plan=plan, w=w, specs=specs)
    if plan.disaggregated is not None:
        d = plan.disaggregated
        files[d.file] = render("disaggregatedset.yaml.j2", plan=plan, d=d, specs=specs)
    for s in plan.services:
        files[s.file] = render("service.yaml.j2", plan=plan, s=s)
    for b in plan.pdbs:
        files[b.file] = render("pdb.yaml.j2", plan=plan, b=b)
    if plan.monitoring is not None:
        m = plan.monitoring
        files["podmonitor.yaml"] = render("podmonitor.yaml.j2", plan=plan, m=m)
        files["prometheusrule.yaml"] = render("prometheusrule.yaml.j2", plan=plan, m=m)
        if m.service_monitor is not None:
            files["router-servicemonitor.yaml"] = render("servicemonitor.yaml.j2", plan=plan,
                                                         m=m)
    if plan.monitoring is not None and plan.monitoring.epp_monitor is not None:
        files["epp-servicemonitor.yaml"] = render("epp-servicemonitor.yaml.j2", plan=plan,
                                                  m=plan.monitoring)
    for so in plan.scaled_objects:
        files[so.file] = render("scaledobject.yaml.j2", plan=plan, so=so)
    if plan.dashboard is not None:
        files["grafana-dashboard.yaml"] = render("grafana-dashboard.yaml.j2", plan=plan,
                                                 d=plan.dashboard)
    if plan.router is not None:
        files["router-deployment.yaml"] = render("router-deployment.yaml.j2", plan=plan, r=plan.router)
        files["router-service.yaml"] = render("router-service.yaml.j2", plan=plan, r=plan.router)
        if plan.router.discovery:
            files["router-role.yaml"] = render("router-role.yaml.j2", plan=plan, r=plan.router)
            files["router-rolebinding.yaml"] = render("router-rolebinding.yaml.j2", plan=plan,
                                                      r=plan.router)
        if plan.router.own_service_account:
            files["router-serviceaccount.yaml"] = render("router-serviceaccount.yaml.j2",
                                                         plan=plan, r=plan.router)
    if plan.gateway is not None:
        g = plan.gateway
        for file, template in (("inferencepool.yaml", "inferencepool.yaml.j2"),
                               ("httproute.yaml", "httproute.yaml.j2"),
                               ("epp-deployment.yaml", "epp-deployment.yaml.j2"),
                               ("epp-service.yaml", "epp-service.yaml.j2"),
                               ("epp-configmap.yaml", "epp-configmap.yaml.j2"),
                               ("epp-role.yaml", "epp-role.yaml.j2"),
                               ("epp-rolebinding.yaml", "epp-rolebinding.yaml.j2")):
            files[file] = render(template, plan=plan, g=g)
        if g.own_service_account:
            files["epp-serviceaccount.yaml"] = render("epp-serviceaccount.yaml.j2", plan=plan,
                                                      g=g)
    for n in plan.network_policies:
        files[n.file] = render("networkpolicy.yaml.j2", plan=plan, n=n)
    for e in plan.env_files:
        files[e.path] = render("env.j2", plan=plan, e=e)
    resources = sorted(f for f in files if f.endswith(".yaml"))
    files["kustomizeconfig.yaml"] = render("kustomizeconfig.yaml.j2", plan=plan,
                                           references=name_references(plan))
    files["kustomization.yaml"] = render("kustomization.yaml.j2", plan=plan, resources=resources)
    return dict(sorted(files.items()))


class KubernetesTarget:
    """Plain Kubernetes objects and a kustomize base: expresses every spec moegen accepts."""

    name = "kubernetes"

    def findings(self, deployment: Deployment) -> list[Finding]:
        """Every checked spec renders for plain Kubernetes; only the ``spec.target`` options of
        the platform targets are refused here (TGT003: they name a controller it has none of)."""
        from ..errors import Severity
        from ..spec.load import json_path
        out = []
        target = deployment.spec.spec.target
        for key in ("version", "image", "clusterTopology", "packDomain"):
            if getattr(target, key) is not None:
                path = ("spec", "target", key)
                out.append(Finding(
                    "TGT003", Severity.ERROR, json_path(path),
                    f"spec.target.{key} names something of a platform controller; the "
                    "kubernetes target has none (platform.lws.version names the "
                    "LeaderWorkerSet release)", f"remove spec.target.{key}",
                    deployment.provenance.locate(path)))
        return out

    def render(self, plan: DeploymentPlan, deployment: Deployment) -> dict[str, str]:
        """:func:`render_files` (``deployment`` unused: the plan holds everything)."""
        return render_files(plan)


TARGET = KubernetesTarget()
