"""Run a rendered output directory as local "pods", the way the kubelet and the controllers would.

moegen renders LeaderWorkerSets, StatefulSets, Deployments and (gen bench) a Job; this module turns each pod of them
into a process group on this machine, and nothing in the rendered pod is changed except the
listed CPU substitutions of ``tests/execution/cpu.py`` (that module is the only place that changes
anything). What it emulates, with the upstream behaviour it follows:

* **Pods** of each workload: a Deployment's ``replicas`` pods, a Job's one pod ``<name>-0``, run
  to completion (``Cluster.add_job``, ``run_to_completion``), a StatefulSet's ``<name>-<i>``, a
  LeaderWorkerSet's groups: leader ``<lws>-<g>`` from ``leaderTemplate`` (else
  ``workerTemplate``), workers ``<lws>-<g>-<i>``, labelled ``leaderworkerset.sigs.k8s.io/name``,
  ``group-index``, ``worker-index`` (kubernetes-sigs/lws@v0.9.0:
  api/leaderworkerset/v1/leaderworkerset_types.go:37-49; pkg/controllers/pod_controller.go).
* **Environment**, as the kubelet builds it (kubernetes/kubernetes@v1.33.0:
  pkg/kubelet/kubelet_pods.go, ``makeEnvironmentVariables``): LWS's variables first
  (``LWS_LEADER_ADDRESS=<lws>-<g>.<lws>.<namespace>``, ``LWS_GROUP_SIZE``, ``LWS_WORKER_INDEX``,
  prepended to the container's env: kubernetes-sigs/lws@v0.9.0:pkg/utils/pod/pod_utils.go:132),
  then ``envFrom`` (the ConfigMaps of the kustomize ``configMapGenerator``: the rendered
  ``env/<role>.env`` files), then ``env`` in order, each value with ``$(VAR)`` expanded against
  what is defined so far (``$$`` is a literal ``$``, an undefined reference stays as written:
  third_party/forked/golang/expansion/expand.go) and the downward API (``status.podIP``,
  ``metadata.name``/``namespace``/``labels[...]``/``annotations[...]``); service links for every
  Service of the namespace (``<NAME>_SERVICE_HOST`` ... : pkg/kubelet/envvars/envvars.go; each
  Service gets an unused address of the cluster's range as its ClusterIP; the ``kubernetes``
  Service's own variables are not set, there is no API server); then
  ``command`` + ``args`` with ``$(VAR)`` expanded against the final env.
* **Isolation** per pod: its own loopback address (``status.podIP``; all pods share this
  machine's network namespace), a PID namespace (the pod's processes die with it), a mount
  namespace with a fresh tmpfs on ``/dev/shm`` (the rendered ``dshm`` emptyDir, its sizeLimit)
  and an ``/etc/hosts`` naming every pod (``<pod>.<subdomain>.<namespace>[.svc.cluster.local]``,
  what the LWS headless Service gives), a UTS namespace with the pod's hostname.
* **Probes**: the startup probe, then the readiness probe (``httpGet`` or ``tcpSocket`` on the
  named container port), polled every second against the rendered startup budget
  (``initialDelaySeconds + failureThreshold x periodSeconds``); a pod without probes is ready
  once its process runs. Liveness probes are not acted on.
* **The API server**: the pods of the cluster as the API reports them (``apiserver.py``: list and
  watch of a namespace's pods with ``status.podIP``, the ``Ready`` condition the readiness probe
  sets, the deletion timestamp of a pod being terminated), for what reads it: the router's
  Kubernetes service discovery (its kubeconfig: cpu.py S9). A prober publishes each running pod's
  readiness every second, as the kubelet's readiness probe does.
* **Termination** (``delete``), as the kubelet runs it (Kubernetes "Termination of Pods":
  https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination): the pod
  object gets its deletion timestamp (the router's watcher drops it), the container's
  ``preStop`` hook runs (an ``exec`` in the pod's namespaces, or a ``sleep`` action), then the
  container's main process gets SIGTERM; whatever still runs when
  ``terminationGracePeriodSeconds`` (counted from the deletion) is over gets SIGKILL; then the
  object is gone. ``kill`` stays the SIGKILL of a node losing the pod.
* **Restarts**: ``recreate_group`` is what a LeaderWorkerSet with ``RecreateGroupOnPodRestart``
  does when one of its pods restarts: every pod of the group deleted (as above) and created
  anew with fresh emptyDirs and a NEW address, as a new pod gets from the network plugin (the
  hosts file, the pod's ``status.podIP`` and what is derived from it follow);
  ``start(fresh=False)`` would be a container restart in place (emptyDirs kept). A rollout of a
  changed template is ``tests/execution/controllers.py``.

Every pod's process tree is bounded in time (``timeout -s KILL``) and killed by its own process
group. A pod's processes are the process tree the harness started for it (every descendant of its
``unshare``, each known by PID *and* start time, so a reused PID is never taken for it), and any
process whose environment carries the pod's own marker ``MOEGEN_EXEC_POD=<run>/<pod>/<start>``
(a random token per cluster: two runs on one machine never match each other's). Never a PID
namespace inode: the kernel reuses those. ``close()`` checks that none of them is left.

The harness's own failures are not the pod's: when the pod's namespace set-up (``unshare``,
the ``/dev/shm`` and ``/etc/hosts`` mounts) fails, which happens on a loaded machine, the start is
retried (nothing of the pod ran yet) and, if it keeps failing, reported as ``HarnessError``.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.execution import cpu
from tests.execution.apiserver import ApiServer

LWS = "leaderworkerset.sigs.k8s.io/"
_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class PodFailed(AssertionError):
    """A pod did not become ready (exited, or ran out of its startup budget)."""


class HarnessError(RuntimeError):
    """The harness could not run a pod (its namespace set-up failed): not the pod's failure."""


#: Where the harness takes its loopback /24s: one lock file per prefix, held while a cluster runs.
IP_LOCK_DIR = Path(os.environ.get("MOEGEN_EXEC_LOCK_DIR", "/tmp/moegen-execution-ips"))
#: How many times a pod's start is retried when its namespace set-up fails (HarnessError after).
SETUP_ATTEMPTS = 4
#: The marker every pod process carries in its environment (see the module docstring).
MARKER_VAR = "MOEGEN_EXEC_POD"
#: The API server's address in the cluster's /24 (pods from .10, re-created pods from
#: NEW_ADDRESS_FROM, Services from .200) and its port.
API_HOST, API_PORT, NEW_ADDRESS_FROM = 250, 6443, 100


def expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: defined names are replaced, ``$$`` becomes ``$``, an
    undefined ``$(NAME)`` is left as written."""
    def one(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return _REF.sub(one, value)


def read_env_file(text: str) -> dict[str, str]:
    """A kustomize ``configMapGenerator`` env file: ``KEY=VALUE`` lines (split at the first
    ``=``, the value kept as written), ``#`` comments and blank lines skipped."""
    out = {}
    for line in text.splitlines():
        line = line.lstrip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"env file line without '=': {line!r}")
        out[key] = value
    return out


@dataclass
class Pod:
    """One pod of the rendered output, before and after the CPU substitutions."""

    name: str
    namespace: str
    workload: str                 # owning LeaderWorkerSet/StatefulSet/Deployment
    group: str                    # LWS group (<lws>-<g>), else the pod name
    ip: str
    labels: dict[str, str]
    annotations: dict[str, str]
    subdomain: str | None
    container: dict               # the first container, as rendered
    volumes: dict[str, dict]      # volume name -> volume
    core: int = 0                 # the CPU core this pod's engine is bound to ("its node")
    spec: dict = field(default_factory=dict)   # the pod-level fields (grace period, ...)
    rendered_argv: list[str] = field(default_factory=list)
    rendered_env: dict[str, str] = field(default_factory=dict)
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    mounts: dict[str, str] = field(default_factory=dict)   # mountPath -> host path ("" = tmpfs)
    shm_size: str | None = None
    changes: list[str] = field(default_factory=list)

    def port(self, name_or_number) -> int:
        for p in self.container.get("ports", []):
            if p.get("name") == name_or_number:
                return int(p["containerPort"])
        return int(name_or_number)

    @property
    def probes(self) -> list[dict]:
        return [self.container[k] for k in ("startupProbe", "readinessProbe") if k in self.container]

    @property
    def startup_budget_s(self) -> float:
        """What the kubelet allows before it gives up on the container's start (k8s defaults:
        failureThreshold 3, periodSeconds 10)."""
        sp = self.container.get("startupProbe") or self.container.get("readinessProbe")
        if not sp:
            return 0.0
        return sp.get("initialDelaySeconds", 0) + sp.get("failureThreshold", 3) * sp.get("periodSeconds", 10)


def load_objects(out_dir: Path) -> tuple[list[dict], dict[str, dict[str, str]]]:
    """The Kubernetes objects of a rendered output directory, and its generated ConfigMaps."""
    docs, configmaps = [], {}
    for path in sorted(out_dir.rglob("*.yaml")):
        for d in yaml.safe_load_all(path.read_text()):
            if not d:
                continue
            if d.get("kind") == "Kustomization":
                for gen in d.get("configMapGenerator", []):
                    data = {}
                    for env_file in gen.get("envs", []):
                        data.update(read_env_file((path.parent / env_file).read_text()))
                    data.update(dict(x.split("=", 1) for x in gen.get("literals", [])))
                    configmaps[gen["name"]] = data
            elif "kind" in d and "apiVersion" in d:
                docs.append(d)
    return docs, configmaps


def plan_pods(out_dir: Path, ip_prefix: str) -> tuple[list[Pod], list[dict]]:
    """Every pod of the rendered workloads, each with an address ``<ip_prefix>.<n>`` (n from 10)."""
    docs, _ = load_objects(out_dir)
    pods: list[Pod] = []

    def add(workload, template, name, group, extra_labels, annotations, subdomain, ns):
        meta = template.get("metadata", {})
        spec = template["spec"]
        pods.append(Pod(
            name=name, namespace=ns, workload=workload, group=group,
            ip=f"{ip_prefix}.{10 + len(pods)}",
            labels={**meta.get("labels", {}), **extra_labels},
            annotations={**meta.get("annotations", {}), **annotations},
            subdomain=subdomain, container=spec["containers"][0],
            volumes={v["name"]: v for v in spec.get("volumes", [])},
            spec={k: v for k, v in spec.items() if k not in ("containers", "volumes")}))

    for d in docs:
        kind, meta, spec = d["kind"], d["metadata"], d.get("spec", {})
        ns, name = meta.get("namespace", "default"), meta["name"]
        if kind == "LeaderWorkerSet":
            t = spec["leaderWorkerTemplate"]
            size = int(t.get("size", 1))
            for g in range(int(spec.get("replicas", 1))):
                for i in range(size):
                    tpl = t.get("leaderTemplate", t["workerTemplate"]) if i == 0 else t["workerTemplate"]
                    lws = {LWS + "name": name, LWS + "group-index": str(g), LWS + "worker-index": str(i)}
                    add(name, tpl, f"{name}-{g}" if i == 0 else f"{name}-{g}-{i}", f"{name}-{g}",
                        lws, {LWS + "size": str(size)}, name, ns)
        elif kind == "StatefulSet":
            for i in range(int(spec.get("replicas", 1))):
                add(name, spec["template"], f"{name}-{i}", f"{name}-{i}", {}, {},
                    spec.get("serviceName"), ns)
        elif kind == "Deployment":
            for i in range(int(spec.get("replicas", 1))):
                add(name, spec["template"], f"{name}-{i}", f"{name}-{i}", {}, {}, None, ns)
        elif kind == "Job":   # one pod that runs to completion (parallelism 1, the default)
            add(name, spec["template"], f"{name}-0", f"{name}-0", {"job-name": name}, {}, None, ns)
    return pods, docs


def lws_env(pod: Pod) -> dict[str, str]:
    """What the LWS pod webhook prepends to every container's env."""
    if LWS + "name" not in pod.labels:
        return {}
    lws, g = pod.labels[LWS + "name"], pod.labels[LWS + "group-index"]
    return {"LWS_LEADER_ADDRESS": f"{lws}-{g}.{pod.subdomain}.{pod.namespace}",
            "LWS_GROUP_SIZE": pod.annotations[LWS + "size"],
            "LWS_WORKER_INDEX": pod.labels[LWS + "worker-index"]}


def service_links(docs: list[dict], namespace: str, cluster_ips: dict[str, str]) -> dict[str, str]:
    """The docker-links style variables the kubelet sets for every Service of the namespace
    (enableServiceLinks defaults to true): ``<NAME>_SERVICE_HOST``, ``_SERVICE_PORT[_<PORT>]``,
    ``_PORT``, ``_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR]``."""
    out = {}
    for d in docs:
        if d["kind"] != "Service" or d["metadata"].get("namespace", "default") != namespace:
            continue
        if d["spec"].get("clusterIP") == "None":
            continue
        name = d["metadata"]["name"]
        ip, prefix = cluster_ips[name], name.upper().replace("-", "_")
        ports = d["spec"].get("ports", [])
        out[f"{prefix}_SERVICE_HOST"] = ip
        for j, p in enumerate(ports):
            proto = p.get("protocol", "TCP")
            if j == 0:
                out[f"{prefix}_SERVICE_PORT"] = str(p["port"])
                out[f"{prefix}_PORT"] = f"{proto.lower()}://{ip}:{p['port']}"
            if p.get("name"):
                out[f"{prefix}_SERVICE_PORT_{p['name'].upper().replace('-', '_')}"] = str(p["port"])
            base = f"{prefix}_PORT_{p['port']}_{proto}"
            out.update({base: f"{proto.lower()}://{ip}:{p['port']}", base + "_PROTO": proto.lower(),
                        base + "_PORT": str(p["port"]), base + "_ADDR": ip})
    return out


def field_ref(pod: Pod, path: str) -> str:
    """The downward API (the fieldRef paths a pod spec may use for env)."""
    if path == "status.podIP":
        return pod.ip
    if path == "metadata.name":
        return pod.name
    if path == "metadata.namespace":
        return pod.namespace
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if m:
        return (pod.labels if m.group(1) == "labels" else pod.annotations).get(m.group(2), "")
    raise NotImplementedError(f"{pod.name}: downward API field {path!r} is not emulated")


def container_env(pod: Pod, configmaps: dict[str, dict[str, str]], links: dict[str, str]) -> dict[str, str]:
    """The container's environment as the kubelet builds it (see the module docstring)."""
    c = pod.container
    env = dict(lws_env(pod))
    for src in c.get("envFrom", []):
        if "configMapRef" not in src:
            raise NotImplementedError(f"{pod.name}: envFrom {src} is not emulated")
        data = configmaps[src["configMapRef"]["name"]]
        env.update({src.get("prefix", "") + k: v for k, v in data.items()})
    for e in c.get("env", []):
        if "value" in e or "valueFrom" not in e:
            env[e["name"]] = expand(e.get("value", ""), {**links, **env})
        elif "fieldRef" in e["valueFrom"]:
            env[e["name"]] = field_ref(pod, e["valueFrom"]["fieldRef"]["fieldPath"])
        elif "configMapKeyRef" in e["valueFrom"]:
            ref = e["valueFrom"]["configMapKeyRef"]
            env[e["name"]] = configmaps[ref["name"]][ref["key"]]
        else:
            raise NotImplementedError(f"{pod.name}: env {e['name']} valueFrom {e['valueFrom']}")
    return {**links, **env}


def selector_matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent PID, start time in clock ticks since boot) of a live (not zombie) process, from
    ``/proc/PID/stat`` (proc(5): fields 4 and 22); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[1]), int(fields[19])


def _proc_table() -> dict[int, tuple[int, int]]:
    """Every live process of this machine: PID -> (parent PID, start time)."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = _stat(int(d))
            if st:
                out[int(d)] = st
    return out


def _descendants(root: int, table: dict[int, tuple[int, int]]) -> dict[int, int]:
    """``root`` and every process below it in ``table``: PID -> start time."""
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in table and pid not in out:
            out[pid] = table[pid][1]
            todo += kids.get(pid, [])
    return out


def _with_marker(marker: str) -> dict[int, int]:
    """Live processes whose environment holds ``MOEGEN_EXEC_POD=<marker>``: PID -> start time.
    (A process that rewrote its environment block, as setproctitle does, is found by the tree.)"""
    needle = f"{MARKER_VAR}={marker}".encode() + b"\0"
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                hit = needle in f.read()
        except OSError:
            continue
        st = _stat(int(d)) if hit else None
        if st:
            out[int(d)] = st[1]
    return out


def _still_alive(procs: dict[int, int]) -> list[int]:
    """The PIDs of ``procs`` (PID -> start time) that still run the same process."""
    return sorted(pid for pid, start in procs.items() if (_stat(pid) or (0, -1))[1] == start)


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the harness process dies (prctl PR_SET_PDEATHSIG).
    The kernel sends it when the *thread* that started the child exits, so pods are started
    from the main thread only (``Cluster.start`` refuses any other)."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def _cpu_ticks(pid: int) -> int:
    """utime + stime of a process, in clock ticks (proc(5))."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


def _mem_kib(pid: int) -> tuple[int, int]:
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


@dataclass
class Running:
    """One start of a pod: its ``unshare`` process, its marker, every process seen in its tree."""

    popen: subprocess.Popen
    started: float
    marker: str
    log: Path | None = None
    ready_after_s: float | None = None
    seen: dict[int, int] = field(default_factory=dict)    # PID -> start time, ever in its tree


def allocate_ip_prefix(first: int = 100) -> tuple[str, object]:
    """A loopback /24 ``127.<a>.<b>`` no other cluster on this machine holds, and the open lock
    file that holds it (keep it open while the cluster runs; closing it frees the prefix).

    Held with ``flock`` on ``IP_LOCK_DIR/<a>.<b>.lock``, so two test runs on one machine (two
    clones running ``.ci/run`` at once) never plan pods on the same addresses; a lock of a run
    that died is released by the kernel."""
    IP_LOCK_DIR.mkdir(parents=True, exist_ok=True)
    for a in range(first, 256):
        for b in range(1, 255):
            fh = open(IP_LOCK_DIR / f"{a}.{b}.lock", "w")
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                fh.close()
                continue
            fh.write(f"{os.getpid()}\n")
            fh.flush()
            return f"127.{a}.{b}", fh
    raise HarnessError(f"no free loopback /24 under {IP_LOCK_DIR}")


class Cluster:
    """The pods of one rendered output directory, run on this machine.

    ``Cluster(out_dir, work_dir, runtime, model_dir)`` plans every pod and applies the CPU
    substitutions (recorded in ``work_dir/substitutions.txt`` and ``self.substitutions()``);
    nothing runs until ``start``. Use as a context manager: leaving it kills every pod.

    Time bounds: a pod's wait for readiness is bounded by its rendered startup budget (what is
    under test), and by nothing smaller; a pod without probes, and every wait of a test that is
    not a rendered budget, by ``allowance()``: a multiple of the starts measured in this run, so
    the bounds stretch with the load of the machine instead of failing on it. ``lifetime_s``
    bounds each pod's process tree (``timeout -s KILL``), a safety net far above any test.
    """

    def __init__(self, out_dir: Path, work_dir: Path, runtime: "cpu.Runtime", model_dir: Path,
                 ip_prefix: str, lifetime_s: float = 4 * 3600, root: "Cluster | None" = None):
        self.out_dir, self.work = Path(out_dir), Path(work_dir)
        self.runtime, self.lifetime_s = runtime, lifetime_s
        self.model_dir, self.ip_prefix = Path(model_dir), ip_prefix
        self.run_id = uuid.uuid4().hex[:16]
        #: the cluster whose API server and address range a variant shares
        self.root = root or self
        #: the longest measured start to ready of each pod in this run, seconds
        self.measured: dict[str, float] = {}
        self._variants = 0
        self._children: list[Cluster] = []
        self.work.mkdir(parents=True, exist_ok=True)
        if root is None:
            self.api: ApiServer | None = None
            self.api_address = (f"{ip_prefix}.{API_HOST}", API_PORT)
            self._next_address = NEW_ADDRESS_FROM
            self.kubeconfig = self.work / "kubeconfig"
            ApiServer.write_kubeconfig(self.kubeconfig, "http://%s:%d" % self.api_address)
        pods, self.docs = plan_pods(self.out_dir, ip_prefix)
        _, self.configmaps = load_objects(self.out_dir)
        self.svc_ips = {d["metadata"]["name"]: f"{ip_prefix}.{200 + i}"
                        for i, d in enumerate(x for x in self.docs if x["kind"] == "Service")}
        for i, p in enumerate(pods):
            p.core = i % max(1, len(os.sched_getaffinity(0)))
        self.pods = {p.name: p for p in pods}
        for p in pods:
            self._prepare(p)
        self.hosts = self.work / "hosts"
        self._write_hosts()
        (self.work / "substitutions.txt").write_text(self.substitutions())
        self.running: dict[str, Running] = {}
        self.generation: dict[str, int] = {p.name: 0 for p in pods}
        self.peak_kib: dict[str, tuple[int, int]] = {}
        self._gone: list[Running] = []            # starts that were killed: checked by close()
        self._ticks: dict[tuple[int, int], tuple[str, int]] = {}   # (PID, start) -> (pod, CPU ticks)
        self._ready: dict[str, bool] = {}         # what the API server was told
        self._prober: threading.Thread | None = None
        self._closing = threading.Event()
        self._lock = threading.RLock()             # running pods: tests, prober, terminations
        #: per terminated pod: how its termination went (``delete``)
        self.terminations: dict[str, dict] = {}

    def _prepare(self, p: Pod) -> None:
        """The pod's environment and command as the kubelet builds them, then the CPU
        substitutions (cpu.py), for its current address and template."""
        links = service_links(self.docs, p.namespace, self.svc_ips)
        p.rendered_env = container_env(p, self.configmaps, links)
        p.rendered_argv = [expand(a, p.rendered_env)
                           for a in [*p.container.get("command", []), *p.container.get("args", [])]]
        p.changes = []
        p.mounts = {}
        cpu.substitute(p, self, self.model_dir)

    def _write_hosts(self) -> None:
        """The hosts file every pod mounts: rewritten in place (same file, so the running pods
        see a re-created pod's new address, as they would in the cluster's DNS)."""
        base = Path("/etc/hosts").read_text() if Path("/etc/hosts").exists() else "127.0.0.1 localhost\n"
        lines = [base.rstrip("\n"), "# pods of the rendered output (tests/execution/kubelet.py)"]
        for p in self.pods.values():
            names = [p.name]
            if p.subdomain:
                fq = f"{p.name}.{p.subdomain}.{p.namespace}"
                names = [fq, fq + ".svc.cluster.local", p.name]
            lines.append(f"{p.ip} {' '.join(names)}")
        with open(self.hosts, "w") as fh:           # truncate in place: bind mounts follow
            fh.write("\n".join(lines) + "\n")

    def readdress(self, *names: str) -> None:
        """New pods get new addresses (the next of the cluster's range from .NEW_ADDRESS_FROM)."""
        for n in names:
            if n in self.running:
                raise RuntimeError(f"{n} is running: only a new pod gets a new address")
            p = self.pods[n]
            p.ip = f"{self.ip_prefix}.{self.root._next_address}"
            self.root._next_address += 1
            self._prepare(p)
        self._write_hosts()
        (self.work / "substitutions.txt").write_text(self.substitutions())

    def variant(self, file: str, old: str, new: str) -> "Cluster":
        """The same rendered output with ONE edit (``old`` -> ``new`` wherever it occurs in the
        rendered ``file``), planned on the same addresses: start one of its pods in place of this
        cluster's pod of the same name (kill that first) to see what the edit breaks."""
        self._variants += 1
        work = self.work / f"variant-{self._variants}"
        shutil.copytree(self.out_dir, work / "out")
        path = work / "out" / file
        text = path.read_text()
        if old not in text:
            raise AssertionError(f"{file}: {old!r} does not occur")
        path.write_text(text.replace(old, new))
        v = Cluster(work / "out", work, self.runtime, self.model_dir, self.ip_prefix, self.lifetime_s,
                    root=self.root)
        v.measured = self.measured                  # one run: the variant's bounds are this run's
        self._children.append(v)
        return v

    def add_job(self, path: Path) -> str:
        """Plan the pod of the Job rendered in ``path`` (e.g. ``gen bench``'s bench-job.yaml) on
        the next free address of this cluster, with the CPU substitutions against this
        cluster's pods (its Services resolve to them); returns the pod's name. Start it with
        ``start`` and wait for its end with ``run_to_completion``."""
        pods, docs = plan_pods(Path(path).parent, self.ip_prefix)
        [pod] = [q for q in pods if q.workload in {d["metadata"]["name"] for d in docs
                                                   if d["kind"] == "Job"}]
        pod.ip = f"{self.ip_prefix}.{10 + len(self.pods)}"
        pod.core = len(self.pods) % max(1, len(os.sched_getaffinity(0)))
        pod.rendered_env = container_env(pod, self.configmaps, {})
        pod.rendered_argv = [expand(a, pod.rendered_env)
                             for a in [*pod.container.get("command", []), *pod.container.get("args", [])]]
        self.pods[pod.name] = pod
        self.generation[pod.name] = 0
        cpu.substitute(pod, self, self.model_dir)
        (self.work / "substitutions.txt").write_text(self.substitutions())
        return pod.name

    def run_to_completion(self, name: str, timeout_s: float) -> int:
        """Wait for the running pod ``name`` (a Job's) to exit; its exit code (a Job pod with
        ``restartPolicy: Never`` is not restarted). Fails after ``timeout_s``."""
        r = self.running[name]
        deadline = time.monotonic() + timeout_s
        while r.popen.poll() is None:      # sampled while it runs: its peak memory and CPU time
            if time.monotonic() > deadline:
                raise PodFailed(f"{name}: still running after {timeout_s:.0f}s\n" + tail(self.log(name)))
            self.sample_memory()
            time.sleep(1)
        rc = r.popen.returncode
        self.running.pop(name)
        self._gone.append(r)
        return rc

    # ------------------------------------------------------------------ views
    def substitutions(self) -> str:
        """Every change made to every pod, one line each (the CPU substitutions)."""
        out = []
        for p in self.pods.values():
            out.append(f"{p.name} ({p.ip}, core {p.core}):")
            out += [f"  - {c}" for c in p.changes] or ["  (none)"]
        return "\n".join(out) + "\n"

    def select(self, **labels) -> list[Pod]:
        return [p for p in self.pods.values() if selector_matches(labels, p.labels)]

    def group_of(self, name: str) -> list[str]:
        g = self.pods[name].group
        return [n for n, p in self.pods.items() if p.group == g]

    def url(self, name: str, port="http", path="") -> str:
        p = self.pods[name]
        return f"http://{p.ip}:{p.port(port)}{path}"

    def service_url(self, service: str, port: str | None = None) -> tuple[str, str]:
        """Where a rendered Service sends traffic: (pod name, ``http://<podIP>:<targetPort>``)
        of the first running pod its selector matches. ``port``: the Service port's name."""
        [svc] = [d for d in self.docs if d["kind"] == "Service" and d["metadata"]["name"] == service]
        ports = svc["spec"]["ports"]
        sp = next(p for p in ports if port is None or p.get("name") == port)
        for p in self.select(**svc["spec"]["selector"]):
            if p.name in self.running:
                return p.name, f"http://{p.ip}:{p.port(sp.get('targetPort', sp['port']))}"
        raise AssertionError(f"Service {service}: no running pod matches {svc['spec']['selector']}")

    def log(self, name: str) -> str:
        r = self.running.get(name)
        path = r.log if r else max(self.work.glob(f"pods/{name}/log.*"), default=None)
        return path.read_text(errors="replace") if path and path.exists() else ""

    # ------------------------------------------------------------------ process control
    def _pod_dir(self, name: str) -> Path:
        return self.work / "pods" / name

    def start(self, *names: str, fresh: bool = True) -> None:
        """Start the pods' containers. ``fresh``: new pod (emptyDirs emptied), else a container
        restart in the same pod (emptyDirs kept). Returns once each pod's namespace is set up
        (the pod's own program then runs); a set-up that fails is retried (``SETUP_ATTEMPTS``),
        then raised as ``HarnessError``."""
        if threading.current_thread() is not threading.main_thread():
            raise HarnessError("pods start from the main thread: a pod dies with the thread "
                               "that started it (PR_SET_PDEATHSIG)")
        for n in names:
            if n in self.running:
                raise RuntimeError(f"{n} is already running")
            p, pd = self.pods[n], self._pod_dir(n)
            for mount, host in p.mounts.items():
                if host.startswith(str(pd)):
                    if fresh:
                        subprocess.run(["rm", "-rf", host], check=True)
                    Path(host).mkdir(parents=True, exist_ok=True)
            pd.mkdir(parents=True, exist_ok=True)
            failures = []
            for attempt in range(SETUP_ATTEMPTS):
                self.generation[n] += 1
                r = self._spawn(p, pd, self.generation[n])
                why = self._await_setup(r, pd / f"setup-ok.{self.generation[n]}")
                if why is None:
                    self.running[n] = r
                    self._publish(n, ready=False)
                    break
                failures.append(f"attempt {attempt + 1}: {why}")
                time.sleep(2 * (attempt + 1))
            else:
                raise HarnessError(f"{n}: the pod's namespace could not be set up "
                                   f"({SETUP_ATTEMPTS} attempts; not the pod's failure):\n"
                                   + "\n".join(failures))

    # ------------------------------------------------------------------ the API server's view
    def _api(self) -> ApiServer:
        root = self.root
        if root.api is None:
            root.api = ApiServer(*root.api_address)
        if self._prober is None:
            self._prober = threading.Thread(target=self._probe_loop, daemon=True)
            self._prober.start()
        return root.api

    def _pod_object(self, p: Pod, ready: bool, deleting: bool = False) -> dict:
        meta = {"name": p.name, "namespace": p.namespace, "labels": dict(p.labels),
                "annotations": dict(p.annotations),
                "uid": f"{self.run_id}-{p.name}-{self.generation[p.name]}"}
        if deleting:
            meta["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "status": {"phase": "Running", "podIP": p.ip,
                           "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}

    def _publish(self, name: str, ready: bool, deleting: bool = False) -> None:
        with self._lock:
            self._ready[name] = ready
            self._api().upsert(name, self._pod_object(self.pods[name], ready, deleting))

    def _probe_loop(self) -> None:
        """The kubelet's readiness probing, every second: a running pod turns Ready on its first
        passing round of probes and NotReady after its readinessProbe's failureThreshold
        (default 3) failing rounds in a row (Kubernetes probe semantics); a pod being deleted is
        left to ``delete``. The only writer of the Ready condition besides creation and
        deletion."""
        failures: dict[str, int] = {}
        while not self._closing.wait(1.0):
            for n in list(self.running):
                r = self.running.get(n)
                if r is None:
                    continue
                try:
                    ok = r.popen.poll() is None and self.probe(n)
                except Exception:          # a probe that breaks is a failing probe
                    ok = False
                failures[n] = 0 if ok else failures.get(n, 0) + 1
                threshold = (self.pods[n].container.get("readinessProbe") or {}).get(
                    "failureThreshold", 3)
                with self._lock:
                    if self.running.get(n) is not r or self.terminations.get(n, {}).get("deleting"):
                        continue
                    if ok and not self._ready.get(n):
                        self._publish(n, True)
                    elif not ok and self._ready.get(n) and failures[n] >= threshold:
                        self._publish(n, False)

    def _spawn(self, p: Pod, pd: Path, gen: int) -> Running:
        log = pd / f"log.{gen}"
        marker = f"{self.run_id}/{p.name}/{gen}"
        sentinel = pd / f"setup-ok.{gen}"
        setup = " && ".join([
            f"mount -t tmpfs -o size={shlex.quote(p.shm_size or '64m')} tmpfs /dev/shm",
            f"mount --bind {shlex.quote(str(self.hosts))} /etc/hosts",
            f"hostname {shlex.quote(p.name)}",
            f": > {shlex.quote(str(sentinel))}",
            'exec "$@"'])
        # unshare's child (PID 1 of the pod's namespace) is `timeout`: the pod's lifetime
        # bound; unshare dies with this process (PR_SET_PDEATHSIG) and takes the namespace,
        # every process in it, along (--kill-child).
        cmd = ["unshare", "--pid", "--kill-child", "--mount-proc", "--uts", "--propagation", "private",
               "timeout", "-s", "KILL", str(int(self.lifetime_s)),
               "/bin/sh", "-c", setup, "pod-setup", *p.argv]
        (pd / f"argv.{gen}.json").write_text(json.dumps({"argv": p.argv, "env": p.env}, indent=1))
        with open(log, "wb") as fh:
            popen = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env={**p.env, MARKER_VAR: marker}, cwd=pd, start_new_session=True,
                                     preexec_fn=_die_with_parent)
        return Running(popen, time.monotonic(), marker, log=log)

    def _await_setup(self, r: Running, sentinel: Path) -> str | None:
        """None once the pod's set-up wrote its sentinel; else why it did not (the start exited
        first, or the set-up took longer than any set-up should: 120 s)."""
        deadline = time.monotonic() + 120
        while not sentinel.exists():
            if r.popen.poll() is not None and not sentinel.exists():
                return f"exited {r.popen.returncode} during set-up: " + tail(r.log.read_text(errors="replace"), 5)
            if time.monotonic() > deadline:
                self._end(r)
                return "set-up still not done after 120 s"
            time.sleep(0.05)
        return None

    def pids(self, name: str) -> list[int]:
        """The processes of the running pod ``name``: its process tree and its marker."""
        r = self.running.get(name)
        return sorted(self._members(r)) if r else []

    def _members(self, r: Running) -> dict[int, int]:
        """The start's processes now (PID -> start time), remembered in ``r.seen``."""
        now = {**_descendants(r.popen.pid, _proc_table()), **_with_marker(r.marker)}
        r.seen.update(now)
        return now

    def sample_memory(self) -> None:
        """Record each running pod's peak RSS/PSS (sum over its processes) and the CPU time its
        processes have used (``cpu_s``: core-seconds over all its starts)."""
        with self._lock:
            running = list(self.running.items())
        for n, r in running:
            tot = [0, 0]
            for pid, start in self._members(r).items():
                rss, pss = _mem_kib(pid)
                tot[0] += rss
                tot[1] += pss
                self._ticks[(pid, start)] = (n, _cpu_ticks(pid))
            old = self.peak_kib.get(n, (0, 0))
            self.peak_kib[n] = (max(old[0], tot[0]), max(old[1], tot[1]))

    @property
    def cpu_s(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for n, ticks in self._ticks.values():
            out[n] = out.get(n, 0.0) + ticks / os.sysconf("SC_CLK_TCK")
        return out

    def alive(self, name: str) -> bool:
        r = self.running.get(name)
        return bool(r) and r.popen.poll() is None

    def _end(self, r: Running) -> None:
        """SIGKILL one start's process group and wait for all of its processes to be gone."""
        self._members(r)
        try:
            os.killpg(r.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        r.popen.wait(timeout=self.allowance(floor=60))
        self._gone.append(r)
        deadline = time.monotonic() + self.allowance(floor=60)
        while self._left(r) and time.monotonic() < deadline:
            time.sleep(0.2)

    @staticmethod
    def _left(r: Running) -> list[int]:
        return sorted(set(_still_alive(r.seen)) | set(_with_marker(r.marker)))

    def kill(self, *names: str) -> None:
        """SIGKILL the pods' process groups (a node losing the pod, or ``kubectl delete --force``)."""
        for n in names:
            with self._lock:
                if n in self.running:
                    self.sample_memory()
                r = self.running.pop(n, None)
            if r is not None:
                self._end(r)

    def recreate_group(self, name: str) -> list[str]:
        """LWS ``RecreateGroupOnPodRestart``: every pod of ``name``'s group deleted (``delete``)
        and created anew, with new addresses."""
        members = self.group_of(name)
        self.delete(*members)
        self.readdress(*members)
        self.start(*members, fresh=True)
        return members

    def delete(self, *names: str) -> dict[str, dict]:
        """Delete the pods as the kubelet terminates them (module docstring), all at once;
        returns per pod: ``preStop_s`` (the hook's run), ``exited_s`` (deletion to the main
        process's exit after SIGTERM, None when it was killed), ``killed`` (SIGKILL at the
        grace period)."""
        threads = [threading.Thread(target=self._terminate, args=(n,)) for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return {n: self.terminations[n] for n in names}

    def _terminate(self, name: str) -> None:
        p, r = self.pods[name], self.running.get(name)
        t0 = time.monotonic()
        with self._lock:
            out = self.terminations[name] = {"deleting": True, "preStop_s": 0.0,
                                             "exited_s": None, "killed": False}
        if r is None:                                 # nothing runs (killed earlier)
            if self.root.api is not None:
                self.root.api.remove(name)
            out["deleting"] = False
            return
        self._publish(name, ready=False, deleting=True)
        grace = float(p.spec.get("terminationGracePeriodSeconds", 30))   # Kubernetes default
        main = self._main_process(r)
        hook = (p.container.get("lifecycle") or {}).get("preStop") or {}
        if "sleep" in hook:
            time.sleep(min(grace, float(hook["sleep"].get("seconds", 0))))
        elif "exec" in hook and main is not None:
            cmd = ["nsenter", "-t", str(main), "-p", "-m", "-u", "--", *hook["exec"]["command"]]
            try:
                subprocess.run(cmd, env=p.env, timeout=grace, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                pass
        out["preStop_s"] = round(time.monotonic() - t0, 1)
        if main is not None:
            try:
                os.kill(main, signal.SIGTERM)
            except ProcessLookupError:
                pass
        while time.monotonic() - t0 < grace:
            if main is None or _stat(main) is None:
                out["exited_s"] = round(time.monotonic() - t0, 1)
                break
            time.sleep(0.2)
        out["killed"] = out["exited_s"] is None
        self.kill(name)
        self.root.api.remove(name)
        self._ready.pop(name, None)
        out["deleting"] = False

    def _main_process(self, r: Running) -> int | None:
        """The container's main process: the child of the pod's PID 1 (``timeout``), which is
        the child of ``unshare``."""
        table = _proc_table()
        kids = lambda parent: [pid for pid, (pp, _) in table.items() if pp == parent]   # noqa: E731
        for t in kids(r.popen.pid):
            for c in kids(t):
                return c
        return None

    # ------------------------------------------------------------------ probes
    def probe(self, name: str) -> bool:
        """One round of the pod's startup and readiness probes (True: all pass, or none)."""
        p = self.pods[name]
        for pr in p.probes:
            timeout = pr.get("timeoutSeconds", 1)
            try:
                if "httpGet" in pr:
                    h = pr["httpGet"]
                    url = f"http://{p.ip}:{p.port(h['port'])}{h.get('path', '/')}"
                    with urllib.request.urlopen(url, timeout=timeout) as resp:
                        if not 200 <= resp.status < 400:
                            return False
                elif "tcpSocket" in pr:
                    socket.create_connection((p.ip, p.port(pr["tcpSocket"]["port"])), timeout).close()
                else:
                    raise NotImplementedError(f"{name}: probe {pr} is not emulated")
            except (OSError, ValueError):
                return False
        return True

    def allowance(self, *names: str, factor: float = 5, floor: float = 30) -> float:
        """A harness bound, seconds, that stretches with the machine's load: ``factor`` times the
        longest start to ready measured in this run (of ``names``, else of any pod), never below
        ``floor``. For waits that are not a rendered budget (a mutant's start, a process's exit,
        a router's recovery slack, a pod without probes)."""
        seen = [self.measured[n] for n in (names or self.measured) if n in self.measured]
        return max(floor, factor * max(seen, default=0.0))

    def wait_ready(self, *names: str) -> dict[str, float]:
        """Poll the pods' probes until all pass; returns seconds from start to ready per pod
        (the prober publishes the Ready condition within its next second).
        Fails (PodFailed) when a pod's process exits, or when its rendered startup budget runs
        out (a pod without probes is ready once it runs: see ``probe``)."""
        pending, out = set(names), {}
        while pending:
            self.sample_memory()
            for n in sorted(pending):
                r = self.running.get(n)
                if r is None or r.popen.poll() is not None:
                    raise PodFailed(f"{n}: exited before it was ready (rc {r and r.popen.returncode})\n"
                                    + tail(self.log(n)))
                waited = time.monotonic() - r.started
                if self.probe(n):
                    r.ready_after_s = out[n] = round(waited, 1)
                    self.measured[n] = max(self.measured.get(n, 0.0), waited)
                    pending.discard(n)
                    continue
                budget = self.pods[n].startup_budget_s
                if waited > budget:
                    raise PodFailed(f"{n}: not ready after {waited:.0f}s (rendered startup budget "
                                    f"{budget:.0f}s)\n" + tail(self.log(n)))
            if pending:
                time.sleep(1)
        return out

    # ------------------------------------------------------------------ teardown
    def leftovers(self) -> list[int]:
        """PIDs still alive of any start of a pod this cluster killed: a process seen in its tree
        (same PID, same start time) or carrying its marker."""
        return sorted({pid for r in self._gone for pid in self._left(r)})

    def close(self) -> None:
        """Kill every pod (this cluster's and its variants'), then check that nothing is left."""
        errors = []
        self._closing.set()
        self.kill(*list(self.running))
        for v in self._children:
            try:
                v.close()
            except AssertionError as e:
                errors.append(str(e))
        left = self.leftovers()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if left:
            errors.append(f"{self.work}: processes left after the pods were killed: {left}")
        if self.root is self and self.api is not None:
            self.api.close()
            self.api = None
        if errors:
            raise AssertionError("\n".join(errors))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])
