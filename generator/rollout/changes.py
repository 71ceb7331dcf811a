"""What changed between two versions of an object, as leaf paths, and why a workload's pods
restart.

A workload's pods are replaced when what its controller rolls on changes (``Workload.revision``:
a LeaderWorkerSet's leaderWorkerTemplate and networkConfig,
kubernetes-sigs/lws@v0.10.0:pkg/utils/revision/revision_utils.go ``getPatch``; a StatefulSet's
or Deployment's pod template: Kubernetes apps/v1, the controller-revision-hash /
pod-template-hash of the template). Everything else of the object (replicas, the rollout
strategy, its own labels and annotations) changes no running pod: more replicas start new
instances, fewer stop the highest-indexed ones.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from .tree import Tree, Workload

#: At most this many leaf paths are listed per object (the rest are counted).
MAX_PATHS = 6


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaf values by path: mappings by key, lists of mappings with a ``name`` by that name
    (``containers[engine]``), other lists by index."""
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        if not value:
            out[prefix] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(value, list):
        named = value and all(isinstance(v, dict) and "name" in v for v in value)
        if not value:
            out[prefix] = []
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}[{v['name'] if named else i}]"))
    else:
        out[prefix] = value
    return out


def leaf_changes(old: Any, new: Any) -> list[tuple[str, Any, Any]]:
    """``(path, old, new)`` of every leaf that differs (None: absent on that side)."""
    a, b = flatten(old), flatten(new)
    return [(p, a.get(p), b.get(p)) for p in sorted(set(a) | set(b)) if a.get(p) != b.get(p)]


@dataclass(frozen=True)
class ObjectChange:
    """One object: ``A`` added, ``D`` removed, ``M`` changed (``paths``: the leaves), with the
    file it is in."""

    op: str
    kind: str
    name: str
    file: str
    paths: tuple[str, ...] = ()

    def line(self) -> str:
        more = ""
        if self.op == "M":
            shown = ", ".join(self.paths[:MAX_PATHS])
            extra = len(self.paths) - MAX_PATHS
            more = f": {shown}" + (f" (+{extra} more)" if extra > 0 else "")
        return f"{self.op} {self.kind} {self.name} ({self.file}){more}"

    def to_json(self) -> dict:
        return {"op": self.op, "kind": self.kind, "name": self.name, "file": self.file,
                "paths": list(self.paths)}


_PREFIXES = ("spec.leaderWorkerTemplate.leaderTemplate.spec.",
             "spec.leaderWorkerTemplate.workerTemplate.spec.", "spec.leaderWorkerTemplate.",
             "spec.template.spec.", "spec.template.")


def _short(path: str) -> str:
    """A leaf path without the pod-template prefix (leader and worker templates alike)."""
    for prefix in _PREFIXES:
        if path.startswith(prefix):
            return path[len(prefix):]
    return path


def object_changes(old: Tree, new: Tree) -> list[ObjectChange]:
    """Objects added, removed and changed (their leaf paths), sorted by kind and name; the
    generated ConfigMaps as ``ConfigMap <name>-<hash>`` (a changed env file is a new ConfigMap;
    the rendered ``Prune=false`` keeps the old one for groups not rolled yet)."""
    out: list[ObjectChange] = []
    for key in sorted(set(old.objects) | set(new.objects)):
        a, b = old.objects.get(key), new.objects.get(key)
        if a is None:
            out.append(ObjectChange("A", *key, b.file))
        elif b is None:
            out.append(ObjectChange("D", *key, a.file))
        else:
            paths = tuple(dict.fromkeys(_short(p) for p, _, _ in
                                        leaf_changes(old.hashed(a.doc), new.hashed(b.doc))))
            if paths:
                out.append(ObjectChange("M", *key, b.file, paths))
    for name in sorted(set(old.generated) | set(new.generated)):
        a, b = old.generated.get(name), new.generated.get(name)
        if a is not None and b is not None and a.hashed == b.hashed:
            continue
        if b is not None:
            keys = tuple(sorted(k for k in set(a.data if a else {}) | set(b.data)
                                if (a.data if a else {}).get(k) != b.data.get(k)))
            out.append(ObjectChange("A", "ConfigMap", b.hashed, ", ".join(b.files), keys))
        if a is not None:
            out.append(ObjectChange("D" if b is None else "K", "ConfigMap", a.hashed,
                                    ", ".join(a.files)))
    return out


@dataclass(frozen=True)
class Restart:
    """Whether a workload's running pods are replaced, and why (one line per cause)."""

    restarts: bool
    reasons: tuple[str, ...] = ()
    scaled: tuple[int | None, int | None] | None = None
    other: tuple[str, ...] = field(default_factory=tuple)


def restart(old: Workload | None, new: Workload | None) -> Restart:
    """Why ``old`` -> ``new`` replaces the pods (module docstring). A new workload starts its
    pods (cold); a removed one stops them (both: every pod changes)."""
    if old is None or new is None:
        return Restart(True, ("new workload: its pods start" if new is not None
                              else "removed: its pods stop",))
    reasons: list[str] = []
    if old.revision != new.revision:
        reasons = _template_reasons(old, new)
    scaled = (old.replicas, new.replicas) if old.replicas != new.replicas else None
    other = []
    if (old.max_surge, old.max_unavailable) != (new.max_surge, new.max_unavailable):
        other.append(f"rollout maxSurge/maxUnavailable {old.max_surge}/{old.max_unavailable} "
                     f"-> {new.max_surge}/{new.max_unavailable}")
    return Restart(bool(reasons), tuple(reasons), scaled, tuple(other))


def _by_pod(old: dict[str, Any], new: dict[str, Any]) -> tuple[dict, dict, str | None]:
    """The two revisions of a LeaderWorkerSet with each group's leader template under
    ``leaderTemplate`` whatever the group size: a one-pod group has no leaderTemplate and its
    leader runs the workerTemplate (kubernetes-sigs/lws site/content/en/docs/concepts: a
    LeaderWorkerSet of one template; rollout/tree.py reads the leader pod the same way); a group
    has workers when its ``size`` is over 1. When only one side has workers, their template is left out of both and named in one line
    (they were compared leader against worker, every field a change)."""
    def split(rev: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        t = rev.get("leaderWorkerTemplate")
        if not isinstance(t, dict):
            return rev, None
        leader, workers = t.get("leaderTemplate"), t.get("workerTemplate")
        if leader is None:   # one template: the leader runs it, and so do workers if any
            leader = workers
        if int(t.get("size", 1) or 1) <= 1:
            workers = None
        rest = {k: v for k, v in t.items() if k not in ("leaderTemplate", "workerTemplate")}
        return {**rev, "leaderWorkerTemplate": {**rest, "leaderTemplate": leader}}, workers
    a, workers_a = split(old)
    b, workers_b = split(new)
    if (workers_a is None) == (workers_b is None):
        return old, new, None
    return a, b, ("worker pods removed: the group is its leader alone" if workers_b is None
                  else "worker pods added: the group's leader runs the leaderTemplate")


def _template_reasons(old: Workload, new: Workload) -> list[str]:
    """One line per kind of change of the rolled template (image, group size, env file,
    command, variables, resources, probes, grace, anything else by path); a group that gains
    or loses its workers is compared leader against leader (:func:`_by_pod`)."""
    before, after, workers = _by_pod(old.revision, new.revision)
    changes = leaf_changes(before, after)
    flat = flatten(after)
    seen: dict[str, list[str]] = {}
    if workers:
        seen["size"] = [workers]

    def add(kind: str, text: str) -> None:
        if text not in seen.setdefault(kind, []):
            seen[kind].append(text)

    for path, a, b in changes:
        leaf = path.rsplit(".", 1)[-1]
        if path.endswith(".size") and "leaderWorkerTemplate" in path.split(".")[0]:
            add("size", f"group size {a} -> {b} pods (leaderWorkerTemplate.size)")
        elif leaf == "image":
            add("image", f"image {a} -> {b}")
        elif ".envFrom[" in path or ".configMapKeyRef." in path:
            add("env", _env_reason(old, new, a, b))
        elif ".command[" in path or ".args[" in path:
            add("command", _command_reason(a, b, _flag_before(flat, path)))
        elif ".env[" in path:
            add("vars", path.split(".env[", 1)[1].split("]", 1)[0])
        elif ".resources." in path:
            add("resources", f"{path.split('.resources.', 1)[1]} {a} -> {b}")
        elif "Probe." in path:
            add("probes", f"{path.split('.')[-2]}.{leaf} {a} -> {b}")
        elif leaf == "terminationGracePeriodSeconds":
            add("grace", f"terminationGracePeriodSeconds {a} -> {b}")
        else:
            add("other", path)
    out = []
    for kind in ("image", "size", "env", "command", "vars", "resources", "probes", "grace",
                 "other"):
        items = seen.get(kind)
        if not items:
            continue
        if kind == "vars":
            out.append(f"container env {', '.join(items)}")
        elif kind == "other":
            extra = len(items) - MAX_PATHS
            out.append("pod template " + ", ".join(items[:MAX_PATHS])
                       + (f" (+{extra} more)" if extra > 0 else ""))
        else:
            out += items
    return out


def _env_reason(old: Workload, new: Workload, a: Any, b: Any) -> str:
    """The env ConfigMap's name hash changed: which variables."""
    name = next((n for n, g in new.configmaps.items() if g.hashed == b), None)
    if name is None or name not in old.configmaps:
        return f"env ConfigMap {a} -> {b}"
    x, y = old.configmaps[name].data, new.configmaps[name].data
    keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
    files = ", ".join(new.configmaps[name].files)
    shown = ", ".join(keys[:MAX_PATHS]) + (f" (+{len(keys) - MAX_PATHS} more)"
                                           if len(keys) > MAX_PATHS else "")
    return (f"env file {files}: {len(keys)} variable(s) changed ({shown}), so the "
            f"configMapGenerator's name {a} -> {b}")


def _flag_before(flat: dict[str, Any], path: str) -> str:
    """The option a changed argument belongs to: the argument before it when that is a flag
    (``--request-timeout-secs``), else ""."""
    head, _, index = path.rpartition("[")
    if not index.rstrip("]").isdigit() or int(index.rstrip("]")) == 0:
        return ""
    before = flat.get(f"{head}[{int(index.rstrip(']')) - 1}]")
    return before if isinstance(before, str) and before.startswith("-") else ""


def _command_reason(a: Any, b: Any, flag: str = "") -> str:
    """The changed lines of a command or launch script, the engine's flags first, comment
    lines last (at most three shown); ``flag``: the option a single changed argument is for."""
    if flag and "\n" not in str(a) and "\n" not in str(b):
        return f"command: {flag} {a} -> {b}"
    old = [x.strip().rstrip("\\").strip() for x in str(a or "").splitlines()]
    new = [x.strip().rstrip("\\").strip() for x in str(b or "").splitlines()]
    pairs: list[str] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        gone, came = old[i1:i2], new[j1:j2]
        pairs += [f"{x!r} -> {y!r}" for x, y in zip(gone, came)]
        pairs += [f"- {x!r}" for x in gone[len(came):]]
        pairs += [f"+ {y!r}" for y in came[len(gone):]]
    def rank(x: str) -> int:
        text = x.lstrip("+- ")
        return 0 if text.startswith("'--") or " -> '--" in x else 2 if text.startswith("'#") \
            else 1
    pairs.sort(key=rank)
    shown = "; ".join(pairs[:3]) + (f" (+{len(pairs) - 3} more lines)" if len(pairs) > 3 else "")
    return f"command: {shown}"
