"""A rendered output directory as the cluster receives it: its objects, the ConfigMaps the
kustomize ``configMapGenerator`` makes of the env files (with the name hash that puts a changed
env file into every pod template that reads it), and each workload's pod template as applied.

Read from the files moegen writes (``gen render``; a directory on disk or the files a render
would write), never from a cluster. What kustomize does to them, as its source says:

* env files (``configMapGenerator[].envs``): one ``KEY=VALUE`` per line, leading white space
  trimmed, ``#`` comments and blank lines skipped, split at the first ``=``, a line without
  one is a key with an empty value (kubernetes-sigs/kustomize@kustomize/v5.8.1:api/kv/kv.go
  ``keyValuesFromLine``);
* the generated name is ``<name>-<hash>``, the hash the first ten hex digits of the SHA-256 of
  the JSON ``{"data": ..., "kind": "ConfigMap", "name": ...}`` (Go's json.Marshal: sorted keys,
  no spaces, ``<``, ``>``, ``&`` escaped) with ``0 1 3 a e`` mapped to ``g h k m t``
  (kubernetes-sigs/kustomize@kustomize/v5.8.1:api/hasher/hasher.go ``encodeConfigMap``,
  ``encode``); every reference to the ConfigMap in a pod template gets the new name (the
  nameReference transformer, taught LeaderWorkerSet paths by the rendered kustomizeconfig.yaml).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..naming import L_MODE, L_ROLE

#: Argo CD sync-wave annotation (argo-cd docs "Sync Phases and Waves"; no annotation: wave 0).
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
#: The kinds whose pod templates this module reads (and the DisaggregatedSet's roles).
WORKLOAD_KINDS = ("LeaderWorkerSet", "StatefulSet", "Deployment", "DisaggregatedSet")
#: Kubernetes Deployment defaults (apps/v1 DeploymentStrategy: RollingUpdate, maxSurge 25 %
#: rounded up, maxUnavailable 25 % rounded down:
#: https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#rolling-update-deployment).
DEPLOYMENT_DEFAULT_PERCENT = 25
_HASH_MAP = str.maketrans({"0": "g", "1": "h", "3": "k", "a": "m", "e": "t"})


def kustomize_hash(name: str, data: dict[str, Any]) -> str:
    """The 10-character suffix kustomize gives a generated ConfigMap ``name`` holding ``data``
    (module docstring; the hasher's own test vectors are in tests/test_diff.py)."""
    text = json.dumps({"data": data, "kind": "ConfigMap", "name": name}, sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)
    for raw, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                     ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, esc)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10].translate(_HASH_MAP)


def read_env_file(text: str) -> dict[str, str]:
    """An env file as kustomize reads it (module docstring)."""
    out: dict[str, str] = {}
    for i, line in enumerate(text.splitlines()):
        if i == 0:
            line = line.removeprefix("\ufeff")
        line = line.lstrip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        out[key] = value
    return out


@dataclass(frozen=True)
class Generated:
    """A ConfigMap of the ``configMapGenerator``: its name, data, files and hashed name."""

    name: str
    data: dict[str, str]
    files: tuple[str, ...]
    annotations: dict[str, str]

    @property
    def hashed(self) -> str:
        return f"{self.name}-{kustomize_hash(self.name, self.data)}"


@dataclass(frozen=True)
class Obj:
    """One object of the tree: kind, name, the file it is in, the document."""

    kind: str
    name: str
    file: str
    doc: dict[str, Any]

    @property
    def key(self) -> tuple[str, str]:
        return self.kind, self.name

    @property
    def wave(self) -> int:
        """Its Argo CD sync wave (0 without the annotation)."""
        raw = (self.doc.get("metadata", {}).get("annotations") or {}).get(SYNC_WAVE, "0")
        try:
            return int(raw)
        except ValueError:
            return 0


@dataclass(frozen=True)
class Workload:
    """The pods of one role as a controller runs them.

    Attributes:
        role: the role (``moegen.dev/role``), ``router``, ``endpoint-picker``, or the name.
        mode: ``moegen.dev/mode`` (prefill, decode, unified) or "".
        kind, name, file, wave: the object (a DisaggregatedSet role: kind DisaggregatedSet).
        replicas: instances (groups of a LeaderWorkerSet, pods otherwise); None when an
            autoscaler owns it.
        size: pods per instance (LeaderWorkerSet size, else 1).
        revision: what the controller rolls on when it changes, with generated ConfigMap names
            hashed (a LeaderWorkerSet's leaderWorkerTemplate and networkConfig:
            kubernetes-sigs/lws@v0.10.0:pkg/utils/revision/revision_utils.go ``getPatch``; a
            StatefulSet's or Deployment's ``spec.template``).
        max_surge, max_unavailable: the rolling update, in instances.
        pod: the first pod template (leader's), for grace, preStop, probes.
        configmaps: generated ConfigMaps its templates read (unhashed name -> Generated).
    """

    role: str
    mode: str
    kind: str
    name: str
    file: str
    wave: int
    replicas: int | None
    size: int
    revision: dict[str, Any]
    max_surge: int
    max_unavailable: int
    pod: dict[str, Any]
    configmaps: dict[str, Generated] = field(default_factory=dict)

    @property
    def grace_s(self) -> int:
        """terminationGracePeriodSeconds (Kubernetes default 30)."""
        return int(self.pod.get("spec", {}).get("terminationGracePeriodSeconds", 30))

    @property
    def prestop_s(self) -> int:
        """The preStop pause of its first container (``sleep N`` or a sleep action), s."""
        hook = (_container(self.pod).get("lifecycle") or {}).get("preStop") or {}
        if "sleep" in hook:
            return int(hook["sleep"].get("seconds", 0))
        cmd = " ".join((hook.get("exec") or {}).get("command", []))
        words = cmd.replace(";", " ").split()
        return next((int(w) for a, w in zip(words, words[1:]) if a == "sleep" and w.isdigit()), 0)

    @property
    def startup_s(self) -> int:
        """The startup budget the kubelet allows (startupProbe, else readiness: initialDelay +
        failureThreshold x period; Kubernetes defaults 3 x 10 s); 0 without probes."""
        c = _container(self.pod)
        probe = c.get("startupProbe") or c.get("readinessProbe")
        if not probe:
            return 0
        return int(probe.get("initialDelaySeconds", 0)
                   + probe.get("failureThreshold", 3) * probe.get("periodSeconds", 10))

    @property
    def image(self) -> str:
        return str(_container(self.pod).get("image", ""))


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    containers = pod.get("spec", {}).get("containers") or [{}]
    return containers[0]


@dataclass(frozen=True)
class Tree:
    """A rendered output: objects by (kind, name), generated ConfigMaps by name, env files."""

    objects: dict[tuple[str, str], Obj]
    generated: dict[str, Generated]
    files: dict[str, str]

    def workloads(self) -> list[Workload]:
        """Every workload, in file order (a DisaggregatedSet: one per role)."""
        out: list[Workload] = []
        for obj in self.objects.values():
            if obj.kind == "DisaggregatedSet":
                for role in obj.doc.get("spec", {}).get("roles", []):
                    out.append(self._lws(obj, role.get("spec", {}), role.get("metadata", {}),
                                         role.get("name", obj.name)))
            elif obj.kind == "LeaderWorkerSet":
                out.append(self._lws(obj, obj.doc.get("spec", {}), obj.doc.get("metadata", {})))
            elif obj.kind in ("StatefulSet", "Deployment"):
                out.append(self._plain(obj))
        return out

    def hashed(self, value: Any) -> Any:
        """``value`` as applied: generated ConfigMap names replaced by their hashed names."""
        return self._hashed(value)[0]

    def _hashed(self, value: Any) -> tuple[Any, dict[str, Generated]]:
        """``value`` with every generated ConfigMap name in a configMapRef / configMap volume /
        configMapKeyRef replaced by its hashed name (kustomize's nameReference), and the
        ConfigMaps found."""
        found: dict[str, Generated] = {}

        def walk(v: Any, key: str = "") -> Any:
            if isinstance(v, dict):
                out = {}
                for k, x in v.items():
                    if k == "name" and key in ("configMapRef", "configMap", "configMapKeyRef") \
                            and isinstance(x, str) and x in self.generated:
                        found[x] = self.generated[x]
                        out[k] = self.generated[x].hashed
                    else:
                        out[k] = walk(x, k)
                return out
            if isinstance(v, list):
                return [walk(x, key) for x in v]
            return v
        return walk(value), found

    def _lws(self, obj: Obj, spec: dict, meta: dict, role: str | None = None) -> Workload:
        template, found = self._hashed(spec.get("leaderWorkerTemplate", {}))
        network = spec.get("networkConfig") or {"subdomainPolicy": "Shared"}
        cfg = (spec.get("rolloutStrategy") or {}).get("rollingUpdateConfiguration") or {}
        replicas = spec.get("replicas")     # left out: an autoscaler owns it
        labels = meta.get("labels") or {}
        pod = template.get("leaderTemplate") or template.get("workerTemplate") or {}
        n = replicas or 1
        return Workload(role or labels.get(L_ROLE, obj.name), labels.get(L_MODE, ""), obj.kind,
                        obj.name if role is None else f"{obj.name}/{role}", obj.file, obj.wave,
                        replicas, int(template.get("size", 1)),
                        {"leaderWorkerTemplate": template, "networkConfig": network},
                        _scaled(cfg.get("maxSurge", 0), n, up=True),
                        _scaled(cfg.get("maxUnavailable", 1), n, up=False), pod, found)

    def _plain(self, obj: Obj) -> Workload:
        spec = obj.doc.get("spec", {})
        template, found = self._hashed(spec.get("template", {}))
        labels = obj.doc.get("metadata", {}).get("labels") or {}
        replicas = spec.get("replicas")
        n = replicas or 1
        if obj.kind == "StatefulSet":
            # RollingUpdate: one pod at a time, highest ordinal first, no surge (Kubernetes
            # apps/v1 StatefulSetUpdateStrategy; maxUnavailable is alpha/beta and not rendered).
            surge, unavailable = 0, 1
        else:
            ru = (spec.get("strategy") or {}).get("rollingUpdate") or {}
            pct = f"{DEPLOYMENT_DEFAULT_PERCENT}%"
            surge = _scaled(ru.get("maxSurge", pct), n, up=True)
            unavailable = _scaled(ru.get("maxUnavailable", pct), n, up=False)
            if surge == 0 and unavailable == 0:
                unavailable = 1
        return Workload(labels.get(L_ROLE, obj.name), labels.get(L_MODE, ""), obj.kind,
                        obj.name, obj.file, obj.wave, replicas, 1, {"template": template},
                        surge, unavailable, template, found)


def _scaled(value: Any, replicas: int, up: bool) -> int:
    """An int-or-percent rolling-update bound in instances (Kubernetes
    intstr.GetScaledValueFromIntOrPercent: a percent of replicas, rounded up for surge and
    down for unavailable)."""
    if isinstance(value, str) and value.endswith("%"):
        share = int(value[:-1]) * replicas
        return -(-share // 100) if up else share // 100
    return int(value)


def read_tree(files: dict[str, str]) -> Tree:
    """The tree of a rendered output (``files``: relative path -> text, as ``gen render``
    writes them). YAML that does not parse is skipped (``gen render --check`` reports it as a
    changed file)."""
    objects: dict[tuple[str, str], Obj] = {}
    generated: dict[str, Generated] = {}
    for path in sorted(files):
        if not path.endswith((".yaml", ".yml")):
            continue
        try:
            docs = [d for d in yaml.safe_load_all(files[path]) if isinstance(d, dict)]
        except yaml.YAMLError:
            continue
        for d in docs:
            if d.get("kind") == "Kustomization":
                generated.update(_generators(d, path, files))
            elif d.get("kind") and isinstance(d.get("metadata"), dict) and "name" in d["metadata"]:
                o = Obj(str(d["kind"]), str(d["metadata"]["name"]), path, d)
                objects[o.key] = o
    return Tree(objects, generated, dict(files))


def _generators(kustomization: dict, path: str, files: dict[str, str]) -> dict[str, Generated]:
    base = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
    out = {}
    for gen in kustomization.get("configMapGenerator") or []:
        data: dict[str, str] = {}
        envs = tuple(base + e for e in gen.get("envs") or [])
        for env in envs:
            data.update(read_env_file(files.get(env, "")))
        for lit in gen.get("literals") or []:
            k, _, v = str(lit).partition("=")
            data[k] = v
        opts = gen.get("options") or {}
        out[gen["name"]] = Generated(gen["name"], data, envs, dict(opts.get("annotations") or {}))
    return out
