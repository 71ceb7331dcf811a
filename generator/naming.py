"""Names and labels of the objects moegen generates (one scheme for the checks and the plan).

Names (``B`` = metadata.name, ``R`` = role name, ``r`` = replica index):

* LeaderWorkerSet ``B-R`` (``lws`` and ``pod-per-rank`` workloads); its pods are ``B-R-<group>``
  (leaders) and ``B-R-<group>-<index>`` (workers), in the subdomain of the headless Service
  ``B-R`` that the LWS controller creates (lws pkg/utils/pod/pod_utils.go).
* StatefulSet ``B-R`` per role (single-node instances, ``replicas`` = instances) with headless
  Service ``B-R``; its pods are ``B-R-r`` (ordinal r = instance).
* client Service ``B-R-api``, router Deployment/Service ``B-router``, env ConfigMap ``B-R-env``,
  PodDisruptionBudget ``B-R``.
* ``router.kind: inference-gateway``: InferencePool ``B-pool``, endpoint picker
  Deployment/Service/ServiceAccount/Role/RoleBinding/ConfigMap ``B-epp``, HTTPRoute ``B``.
"""

from __future__ import annotations

from collections.abc import Iterable

#: Kubernetes recommended labels moegen sets on every object, and moegen's own.
L_NAME, L_INSTANCE, L_COMPONENT, L_MANAGED = (
    "app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/component",
    "app.kubernetes.io/managed-by")
L_ROLE, L_MODE = "moegen.dev/role", "moegen.dev/mode"
#: On the pods that serve the engine's HTTP API (the routers discover them by it).
L_API = "moegen.dev/serves-api"
#: On the engine pods that serve ``/metrics`` on their ``http`` port (the PodMonitor selects
#: them; with ``spec.monitoring.enabled``): the API pods, and SGLang's nodes with
#: ``node_rank >= 1``, which export their own schedulers' metrics.
L_METRICS = "moegen.dev/metrics"
#: Label keys a user's metadata.labels may not set (moegen would overwrite them).
OWN_LABELS = (L_NAME, L_INSTANCE, L_COMPONENT, L_MANAGED)
OWN_PREFIX = "moegen.dev/"
#: Pod-index labels set by the controllers: LWS (lws pkg/utils/pod/pod_utils.go) and the
#: StatefulSet controller (Kubernetes >= 1.28, ``apps.kubernetes.io/pod-index``).
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
#: Unique per LWS group, on every pod of the group (lws pkg/utils/pod/pod_utils.go).
LWS_GROUP_KEY_LABEL = "leaderworkerset.sigs.k8s.io/group-key"
STS_POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
#: Annotation on each role's workload: the load it was sized and timed for
#: (``sizing.concurrency``, ``spec.traffic``), which the rendered admission limits, CUDA graphs
#: and durations (generator/durations.py) follow from but do not show; ``gen import`` reads it
#: back (generator/importer/objects.py).
SIZED_LOAD = "moegen.dev/sized-load"

#: Longest hostname a pod may have (RFC 1123 label; pod hostnames come from pod names).
MAX_LABEL = 63
#: Longest controller (StatefulSet) name: pods get the label
#: ``controller-revision-hash: <name>-<10-char hash>``, a label value of at most 63 characters.
MAX_CONTROLLER = MAX_LABEL - 11


def lws_name(base: str, role: str) -> str:
    """The LeaderWorkerSet (and its headless Service) of a role."""
    return f"{base}-{role}"


def lws_pod(base: str, role: str, group: int, index: int) -> str:
    """Pod ``index`` of LWS group ``group`` (the leader is index 0)."""
    name = lws_name(base, role)
    return f"{name}-{group}" if index == 0 else f"{name}-{group}-{index}"


def statefulset_name(base: str, role: str) -> str:
    """The StatefulSet (and headless Service) of a role of single-node instances."""
    return f"{base}-{role}"


def statefulset_pod(base: str, role: str, replica: int) -> str:
    """Pod (= instance) ``replica`` of a role's StatefulSet."""
    return f"{statefulset_name(base, role)}-{replica}"


def client_service(base: str, role: str) -> str:
    """The client Service of a role (its API pods)."""
    return f"{base}-{role}-api"


def env_configmap(base: str, role: str) -> str:
    """The ConfigMap generated from a role's env file."""
    return f"{base}-{role}-env"


def router_name(base: str) -> str:
    """The router Deployment and its Service."""
    return f"{base}-router"


def pool_name(base: str) -> str:
    """The InferencePool (router kind inference-gateway)."""
    return f"{base}-pool"


def epp_name(base: str) -> str:
    """The endpoint picker's Deployment, Service, ServiceAccount, Role, RoleBinding, ConfigMap."""
    return f"{base}-epp"


def route_name(base: str) -> str:
    """The HTTPRoute from the user's Gateway to the InferencePool."""
    return base


def object_names(base: str, roles: Iterable[tuple[str, str, int]], router: bool,
                 gateway: bool = False
                 ) -> list[tuple[str, str, str]]:
    """(kind, name, what) of every named object a deployment creates, the Services the LWS
    controller creates included. ``roles``: (name, workload, replicas) per role; ``router``:
    the router Deployment is rendered; ``gateway``: the inference-gateway objects are."""
    out = []
    for name, workload, replicas in roles:
        if workload == "statefulset":
            n = statefulset_name(base, name)
            out += [("StatefulSet", n, f"role {name!r}"),
                    ("Service", n, f"role {name!r} (headless)")]
        else:
            n = lws_name(base, name)
            out += [("LeaderWorkerSet", n, f"role {name!r}"),
                    ("Service", n, f"role {name!r} (the LWS headless Service)")]
        out += [("Service", client_service(base, name), f"role {name!r} (client)"),
                ("ConfigMap", env_configmap(base, name), f"role {name!r} (env)"),
                ("PodDisruptionBudget", f"{base}-{name}", f"role {name!r}")]
    if router:
        out += [("Deployment", router_name(base), "the router"),
                ("Service", router_name(base), "the router"),
                ("ServiceAccount", router_name(base), "the router"),
                ("Role", router_name(base), "the router"),
                ("RoleBinding", router_name(base), "the router")]
    if gateway:
        out += [("InferencePool", pool_name(base), "the inference gateway"),
                ("HTTPRoute", route_name(base), "the inference gateway"),
                *((kind, epp_name(base), "the endpoint picker")
                  for kind in ("Deployment", "Service", "ServiceAccount", "Role", "RoleBinding",
                               "ConfigMap"))]
    return out
