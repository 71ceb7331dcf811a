"""Serving workloads -> roles: the engine command and pod of each workload read, and the
roles grouped into deployments (:mod:`.assemble` writes each as an InferenceDeployment).

Workloads group into deployments by the object that holds them (a platform CR, a
DisaggregatedSet), by moegen's instance label, or else by namespace and served model (the
prefill and decode workloads of one model are one deployment). Each role is one workload; its
fields come from the engine command (:mod:`.engine`), the pod template (:mod:`.pods`) and the
workload (replicas, pods per instance). Every field is located at the manifest text it came
from; what cannot be read is an :class:`~.launch.Issue`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..catalog import ARCHITECTURES, HF_IDS
from ..errors import Location
from ..facts import images
from ..facts.versions import UnsupportedVersion, parse_version
from ..spec.provenance import Provenance
from .engine import RoleFields, sglang_fields, vllm_fields
from .launch import Context, Issue, Launch, engine_containers, resolve, runs_ray
from .options import Options
from .pods import PodFields, read_pod
from .workloads import Workload

#: Repository-name suffixes of the quantized releases of a catalog model, and their format
#: (zai-org/GLM-5.2-FP8, Qwen/Qwen3-235B-A22B-FP8, meta-llama/Llama-4-Maverick-17B-128E-
#: Instruct-FP8; nvidia/DeepSeek-R1-0528-NVFP4, nvidia/DeepSeek-R1-FP4; NVIDIA's -v2 layout
#: nvidia/DeepSeek-R1-NVFP4-v2, matched before -nvfp4: catalog RELEASES).
QUANTIZED_SUFFIXES = (("-nvfp4-v2", "nvfp4-v2"), ("-nvfp4", "nvfp4"), ("-fp4", "nvfp4"),
                      ("-fp8", "fp8"))


def checkpoint_format(arch: str | None, *names: str | None) -> str:
    """The checkpoint format a served model is: its release's suffix in a name or path
    (:data:`QUANTIZED_SUFFIXES`), else the catalog config's own (its ``quantization_config``:
    ``catalog.capabilities.Checkpoint``), else ``fp8``."""
    for name in names:
        base = str(name or "").lower().rstrip("/").rsplit("/", 1)[-1]
        for suffix, fmt in QUANTIZED_SUFFIXES:
            if base.endswith(suffix) or f"{suffix}-" in base:
                return fmt
    if arch in ARCHITECTURES:
        from ..catalog import builtin_arch
        return builtin_arch(arch).checkpoint.format
    return "fp8"
MANAGED = ("app.kubernetes.io/managed-by", "moegen")


@dataclass
class Role:
    """One imported role before it becomes spec data."""

    workload: Workload
    launch: Launch
    fields: RoleFields
    pod: PodFields
    name: str = ""
    mode: str = "unified"


@dataclass
class Imported:
    """One deployment read from manifests: the spec document, its provenance, what could not be
    read, and the files it came from."""

    data: dict
    provenance: Provenance
    files: list[str]
    issues: list[Issue] = field(default_factory=list)
    #: Codes the pipeline reports for this deployment that an IMP finding already explains.
    roles: list[Role] = field(default_factory=list)
    suppress: set[str] = field(default_factory=set)
    #: The engine release judged at when it is not the one the image runs (``"vLLM 0.26.0"``:
    #: moegen could not read it, or has no facts for it): release-dependent errors are warnings.
    assumed: str | None = None


def release_of(w: Workload, launch: Launch, opts: Options) -> tuple[str | None, str, bool]:
    """The engine release the role runs, how moegen knows it, and whether the user stated it:
    ``--engine-version``, else the annotation ``moegen.dev/engine-version`` on the workload or
    its pod template (facts/images.py ``ANNOTATION``), else the image read through the table
    (facts/images.py ``read``); (None, why, False) when the image's release is unknown."""
    engine = launch.command.engine if launch.command is not None else None
    if opts.engine_version:
        return opts.engine_version, "--engine-version", True
    for where, notes in (("the workload", w.annotations), ("the pod template",
                                                           w.leader.annotations)):
        stated = notes.get(images.ANNOTATION) if isinstance(notes, dict) else None
        if isinstance(stated, str) and stated.strip():
            if not is_release(stated.strip().removeprefix("v")):
                continue   # not a release: IMP025 (stated_not_release), and the image read
            return stated.strip().removeprefix("v"), f"the annotation {images.ANNOTATION} " \
                f"on {where}", True
    read = images.read(engine_image(w, launch), engine)
    return read.release, read.how, False


def is_release(text: str) -> bool:
    """``0.33.0`` (a suffix such as ``rc1`` allowed: facts/versions.py ``parse_version``)."""
    try:
        parse_version(text)
    except ValueError:
        return False
    return True


def stated_not_release(w: Workload) -> tuple[str, Location] | None:
    """The ``moegen.dev/engine-version`` annotation of the workload or its pod template that is
    not a release (``banana``), and where it is; None if there is none."""
    for path, notes in ((w.path, w.annotations), (w.leader.path[:-1], w.leader.annotations)):
        stated = notes.get(images.ANNOTATION) if isinstance(notes, dict) else None
        if stated is not None and not (isinstance(stated, str) and stated.strip()
                                       and is_release(stated.strip().removeprefix("v"))):
            return str(stated), w.doc.provenance.locate(
                (*path, "metadata", "annotations", images.ANNOTATION))
    return None


def engine_image(w: Workload, launch: Launch) -> str:
    """The image the engine container runs: its own, or (a KServe LLMInferenceService that
    names none) the image of the newest KServe presets moegen read (facts/images.py
    ``preset_image``)."""
    if launch.image or w.platform != "kserve":
        return launch.image or ""
    preset = images.preset_image("kserve")
    return preset[0] if preset else ""


def architecture_of(*names: str | None) -> str | None:
    """The catalog model a served name, HF id or weights path names (longest catalog id that
    the last path component starts with, ``DeepSeek-R1-0528`` -> ``deepseek-r1``)."""
    by_hf = {v.lower(): k for k, v in HF_IDS.items()}
    for name in names:
        if not name:
            continue
        low = name.lower().rstrip("/")
        if low in by_hf:
            return by_hf[low]
        base = low.rsplit("/", 1)[-1]
        for arch in sorted(ARCHITECTURES, key=len, reverse=True):
            if base == arch or base.startswith(arch + "-") or base.startswith(arch + "_"):
                if arch == "kimi-k2" and "thinking" in base:
                    return "kimi-k2-thinking"
                return arch
    return None


def _dns(text: str, limit: int) -> str:
    out = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return (out[:limit].rstrip("-")) or "x"


def read_roles(workloads: list[Workload], ctx: Context, opts: Options) -> tuple[list[Role],
                                                                                list[Issue]]:
    """The engine roles of ``workloads`` (workloads without an engine are not roles)."""
    roles: list[Role] = []
    issues: list[Issue] = []
    for w in workloads:
        launches = engine_containers(w, w.leader, ctx, None)
        launches = [x for x in launches if x.command is not None] or launches
        if not launches:
            continue
        launch = launches[0]
        issues += launch.issues + _other_engines(w, launches)
        if launch.command is None and any(i.code in ("IMP002", "INP002")
                                          for i in launch.issues):
            continue   # the script could not be read (IMP002, INP002 say why)
        if launch.command is None:
            issues.append(Issue("IMP001", f"{w.kind} {w.name}: the engine command could not be "
                                "found (no vllm serve / sglang launch_server in the container's "
                                "command)", launch.loc(-1), error=True))
            continue
        managed = w.labels.get(MANAGED[0]) == MANAGED[1]
        version = release_of(w, launch, opts)[0]
        cmd = launch.command
        _multi_node_statefulset(w, cmd)
        if cmd.engine == "vllm":
            fields_ = vllm_fields(cmd, launch, _reads_env(version), managed, version)
        else:
            fields_ = sglang_fields(cmd, launch, managed, version)
        model_path = fields_.model.get("path")
        pod = read_pod(w, w.leader, launch, opts.gpu, model_path, frozenset(ctx.channels))
        if w.worker is not None:
            workers = [x for x in engine_containers(w, w.worker, ctx, None) if x.command] \
                or _ray_nodes(w, ctx)
            if workers:
                other = read_pod(w, w.worker, workers[0], opts.gpu, model_path,
                                 frozenset(ctx.channels))
                for key in ("cpu", "memory", "ephemeralStorage", "limits"):
                    if pod.pod.get(key) != other.pod.get(key):
                        pod.pod.pop(key, None)   # leader and workers differ: moegen derives
        roles.append(Role(w, launch, fields_, pod))
    return roles, issues


def _ray_nodes(w: Workload, ctx: Context) -> list[Launch]:
    """The worker containers that only join the leader's Ray cluster (no engine command: the
    leader's engine runs on their GPUs), to compare their resources with the leader's."""
    spec = w.worker.spec
    containers = spec.get("containers") if isinstance(spec.get("containers"), list) else []
    return [resolve(w, w.worker, c, (*w.worker.path, "containers", i), ctx, None)
            for i, c in enumerate(containers) if isinstance(c, dict) and runs_ray(c)]


def _other_engines(w: Workload, launches: list[Launch]) -> list[Issue]:
    """INP002 (a notice) for each engine container of a pod after the first: moegen checks one
    engine per pod (the first container that starts one) and says the others were not."""
    from .launch import NOT_READ
    engines = [x for x in launches if x.command is not None]
    return [Issue("INP002", f"{w.kind} {w.name}: container {x.container.get('name')!r} also "
                  f"starts {x.command.engine} ({len(engines)} engine containers in one pod); "
                  f"moegen checked only {engines[0].container.get('name')!r}: {NOT_READ} for "
                  "this one", x.loc(-1), "run one engine per pod, or check the other as its "
                  "own workload", notice=True) for x in engines[1:]]


def _multi_node_statefulset(w: Workload, cmd) -> None:
    """A StatefulSet whose pods are the nodes of one engine instance (``--nnodes N``, the node
    rank from the pod-index label: sgl-project/sglang docker/k8s-sglang-distributed-sts.yaml):
    ``replicas / N`` instances of N pods, not ``replicas`` single-pod instances."""
    if w.kind != "StatefulSet" or w.size != 1:
        return
    try:
        nodes = int(str(cmd.value("--nnodes") or 1))
    except ValueError:
        return
    if nodes > 1:
        w.size, w.replicas = nodes, max(1, w.replicas // nodes)
        w.worker = type(w.leader)(w.leader.spec, w.leader.path, w.leader.labels,
                                  w.leader.annotations, 1, w.leader.main)


def _reads_env(version: str | None) -> bool:
    """The vLLM release reads VLLM_ALL2ALL_BACKEND (0.11.x-0.15.x; vllm/envs.py)."""
    from ..facts.versions import parse_version
    if version is None:
        return False
    try:
        return parse_version(version) < (0, 16, 0)
    except (UnsupportedVersion, ValueError):
        return False


def group_roles(roles: list[Role], input_of=None) -> list[list[Role]]:
    """Roles of one deployment together (see the module docstring), in input order.

    ``input_of``: the command-line input of a role (a file, a directory, the stream; None: one
    input). Roles that repeat an object (the same API group, kind, namespace and name, or the
    same role of a platform object) are alternatives, not one deployment; workloads grouped
    only by namespace and model are so too when they repeat a mode. An input that repeats
    itself splits by directory (a tree of renders: out/s1, out/igw), a directory that does by
    file (a directory of variants); then the parts combine again wherever they repeat nothing,
    parts of one directory first: a deployment's prefill and decode in two files stay one, a
    copy of a rendered tree or two renders of one spec are two deployments."""
    input_of = input_of or (lambda r: "")
    groups: dict[tuple, list[Role]] = {}
    for r in roles:
        w = r.workload
        if w.group:
            key: tuple = ("cr", w.kind, w.group)
        elif w.labels.get(MANAGED[0]) == MANAGED[1] and w.labels.get("app.kubernetes.io/instance"):
            key = ("moegen", w.labels["app.kubernetes.io/instance"])
        else:
            key = ("model", w.namespace, r.fields.model.get("name") or r.fields.model.get("path"))
        groups.setdefault(key, []).append(r)
    out: list[list[Role]] = []
    for key, group in groups.items():
        parts = _split(key, group, [input_of, _dir, lambda r: r.workload.doc.file])
        merged: list[list[Role]] = []
        for part in parts:   # into a deployment of the same directory first
            fits = [m for m in merged if not _repeats(key, m + part)]
            into = next((m for m in fits if _dirs(m) & _dirs(part)), fits[0] if fits else None)
            if into is None:
                merged.append(part)
            else:
                into += part
        out += merged
    return out


def _split(key: tuple, group: list[Role], by: list) -> list[list[Role]]:
    """``group`` split by ``by[0]`` (then each part that still repeats itself by ``by[1:]``)."""
    if not by:
        return [group]
    parts: dict[str, list[Role]] = {}
    for r in group:
        parts.setdefault(by[0](r), []).append(r)
    if len(parts) == 1 and not _repeats(key, group):
        return [group]
    return [q for p in parts.values()
            for q in (_split(key, p, by[1:]) if _repeats(key, p) else [p])]


def _dir(r: Role) -> str:
    return r.workload.doc.file.rsplit("/", 1)[0] if "/" in r.workload.doc.file else ""


def _dirs(group: list[Role]) -> set[str]:
    return {_dir(r) for r in group}


def _repeats(key: tuple, group: list[Role]) -> bool:
    """``group`` holds one object twice, or (grouped by model only) one mode twice."""
    names = [(r.workload.api.split("/")[0] if "/" in r.workload.api else "", r.workload.kind,
              r.workload.namespace or "", r.workload.name, r.workload.role) for r in group]
    if len(set(names)) < len(names):
        return True
    modes = [(_mode(r), r.workload.leader.labels.get("llm-d.ai/role")) for r in group]
    return key[0] == "model" and len(set(modes)) < len(modes)


def _role_name(r: Role, names: list[str], base: str) -> str:
    w = r.workload
    label = w.labels.get("moegen.dev/role") or w.labels.get("llm-d.ai/role") \
        or r.workload.leader.labels.get("llm-d.ai/role")
    words = re.split(r"[^a-z]+", re.sub(r"([a-z])([A-Z])", r"\1-\2", w.role or "").lower())
    if label:
        name = label
    elif w.role and ({"prefill", "decode"} & set(words)):
        name = "prefill" if "prefill" in words else "decode"
    elif w.role:
        name = w.role
    else:
        name = w.name[len(base):].strip("-") if base and w.name.startswith(base) else w.name
        for mode in ("prefill", "decode"):
            if mode in w.name.split("-"):
                name = mode
        name = name or (_mode(r) if _mode(r) != "unified" else "serve")
    name = _dns(name, 15)
    while name in names:
        name = _dns(name[:12] + f"-{len(names)}", 15)
    return name


def _mode(r: Role) -> str:
    if r.fields.mode in ("prefill", "decode"):
        return r.fields.mode
    w = r.workload
    if w.mode in ("prefill", "decode"):
        return w.mode
    for label in (w.labels.get("moegen.dev/mode"), w.labels.get("llm-d.ai/role"),
                  w.leader.labels.get("llm-d.ai/role")):
        if label in ("prefill", "decode", "unified"):
            return label
    kv_role = r.fields.kv_role
    if kv_role == "kv_producer":
        return "prefill"
    if kv_role == "kv_consumer":
        return "decode"
    return "unified"


def _base_name(group: list[Role]) -> str:
    w = group[0].workload
    if w.group:
        return _dns(w.group, 40)
    inst = w.labels.get("app.kubernetes.io/instance")
    if inst:
        return _dns(inst, 40)
    names = [r.workload.name for r in group]
    prefix = names[0]
    for n in names[1:]:
        while not n.startswith(prefix):
            prefix = prefix[:-1]
    prefix = prefix.rstrip("-")
    if len(group) > 1 and len(prefix) >= 3:
        return _dns(prefix, 40)
    if len(group) == 1:
        return _dns(names[0], 40)
    model = group[0].fields.model.get("name") or "deployment"
    return _dns(str(model).rsplit("/", 1)[-1], 40)


_ORDER = {"prefill": 0, "decode": 1, "unified": 2}


def _role_order(r: Role) -> int:
    """Prefill roles first, then decode, then unified (moegen's examples' order); stable."""
    return _ORDER.get(_mode(r), 3)


#: Labels controllers, moegen and kustomize put on objects (not the deployment's own).
_SYSTEM_LABEL = re.compile(r"^(app\.kubernetes\.io/(name|instance|component|managed-by)|"
                           r"moegen\.dev/|leaderworkerset\.sigs\.k8s\.io/|kueue\.x-k8s\.io/)")


def _common_labels(group: list[Role]) -> dict[str, str]:
    """The workloads' labels every role shares (metadata.labels)."""
    sets = [{k: str(v) for k, v in r.workload.labels.items() if not _SYSTEM_LABEL.match(str(k))}
            for r in group]
    common = dict(sets[0]) if sets else {}
    for other in sets[1:]:
        common = {k: v for k, v in common.items() if other.get(k) == v}
    return common


def _located(prov: Provenance, base: tuple, locs: dict) -> None:
    for path, loc in locs.items():
        if loc is not None and loc.line:
            prov.locations[(*base, *path)] = loc


def _workload_kind(r: Role) -> str:
    w = r.workload
    if w.kind == "StatefulSet" and w.labels.get(MANAGED[0]) == MANAGED[1]:
        return "statefulset"
    if r.launch.command is not None and r.launch.command.get("--data-parallel-rank"):
        return "pod-per-rank"
    return "lws"


def _merge_statefulsets(roles: list[Role]) -> list[Role]:
    """moegen renders one StatefulSet per instance of a ``statefulset`` role: one role again."""
    out: list[Role] = []
    seen: dict[str, Role] = {}
    for r in roles:
        w = r.workload
        key = w.labels.get("moegen.dev/role") if w.kind == "StatefulSet" \
            and w.labels.get(MANAGED[0]) == MANAGED[1] else None
        if key and key in seen:
            seen[key].workload.replicas += w.replicas
            continue
        if key:
            seen[key] = r
        out.append(r)
    return out
