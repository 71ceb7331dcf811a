"""A container's engine command as the running pod sees it: the environment (literal values,
``$(VAR)`` references, the downward API, ConfigMaps, what the workload's controller injects),
``command`` + ``args`` with Kubernetes' ``$(VAR)`` expansion, and a shell script run through
:mod:`.shell`; then the engine's options read with its release's table (:mod:`.argv`),
including SGLang's ``--config`` YAML file from a mounted ConfigMap.

Kubernetes semantics (kubernetes/kubernetes@v1.32.0 third_party/forked/golang/expansion/
expand.go; "Define dependent environment variables" in the Kubernetes docs): in ``command``,
``args`` and env ``value`` a ``$(NAME)`` names a variable the container defines (env entries
before it, and the ones its controller adds), ``$$`` escapes ``$``, and an undefined reference
is left as written. ``${NAME}`` is not expanded by Kubernetes (only a shell does that).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..engines.options import TAKES_NONE as FLAG
from ..engines.options import option_arity
from ..errors import Location
from ..facts import images
from ..spec.load import Document, parse_embedded
from ..spec.provenance import json_path
from .argv import EngineCommand, find_engine, parse_engine_args
from .shell import ShellError, is_runtime, run_script, runtime
from .workloads import LWS_ENV, Pods, Workload

_SHELLS = re.compile(r"^(.*/)?(sh|bash|dash|ash|zsh)$")
_KUBE_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
#: Text that names an engine entry point (a script that cannot be read is reported when it does).
_ENGINE_TEXT = re.compile(r"vllm\s+serve|vllm\.entrypoints|sglang\.launch_server|sglang\s+serve|"
                          r"dynamo\.(vllm|sglang)")
_INDEX_LABELS = ("leaderworkerset.sigs.k8s.io/worker-index", "apps.kubernetes.io/pod-index")
#: Images whose entrypoint is ``vllm serve`` (vllm-project/vllm docker/Dockerfile of each
#: release: ``ENTRYPOINT ["vllm", "serve"]``).
_VLLM_ENTRYPOINT = re.compile(r"(^|/)vllm-openai(:|@|$)")


@dataclass
class Issue:
    """Something the importer could not read or found suspicious (becomes an IMP finding)."""

    code: str
    message: str
    location: Location
    hint: str = ""
    error: bool = False
    notice: bool = False   # says what was not checked; not a defect claim
    #: The manifest's field path the finding names (``$``: the object as a whole).
    path: str = "$"


@dataclass
class Launch:
    """The engine one container of a pod runs.

    Attributes:
        container: the container (mapping); cpath: its path in the document.
        command: the engine and its options (None: no engine found).
        locations: the Location of each argv token (index -> where it was written).
        env: the container's environment, name -> value (runtime values marked, ``None`` for a
            Secret's keys that cannot be read); env_locations: where each was set.
        image: the container image.
        issues: what could not be read.
    """

    container: dict
    cpath: tuple
    command: EngineCommand | None = None
    locations: dict[int, Location] = field(default_factory=dict)
    env: dict[str, Any] = field(default_factory=dict)
    env_locations: dict[str, Location] = field(default_factory=dict)
    env_sources: dict[str, str] = field(default_factory=dict)
    image: str = ""
    issues: list[Issue] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)

    def loc(self, index: int) -> Location:
        """Where argv token ``index`` was written (the container's location when unknown)."""
        return self.locations.get(index, self.locations.get(-1, Location()))


def kube_expand(text: str, env: dict[str, Any]) -> str:
    """Kubernetes' ``$(NAME)`` expansion of ``text`` over ``env`` (``$$`` -> ``$``; undefined
    references stay as written)."""
    def sub(m: re.Match) -> str:
        if m.group(0) == "$$":
            return "$"
        value = env.get(m.group(1))
        return m.group(0) if value is None else str(value)
    return _KUBE_REF.sub(sub, text)


#: The device class of a ComputeDomain's IMEX channel (NVIDIA DRA driver for GPUs).
CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"


def _get(data: Any, *keys: str) -> Any:
    for k in keys:
        data = data.get(k) if isinstance(data, dict) else None
    return data


class Context:
    """The documents of one input that pods refer to: ConfigMaps by name, and the names of the
    ResourceClaimTemplates that are a ComputeDomain's IMEX channel (the NVIDIA DRA driver's
    ComputeDomain ``spec.channel.resourceClaimTemplate.name``, or a template requesting the
    ``compute-domain-default-channel.nvidia.com`` device class: NVIDIA/k8s-dra-driver-gpu
    api/nvidia.com/resource/v1beta1/computedomain.go)."""

    def __init__(self, docs: list[Document], fallback: "Context | None" = None) -> None:
        self.configmaps: dict[str, Document] = dict(fallback.configmaps) if fallback else {}
        self.channels: set[str] = set(fallback.channels) if fallback else set()
        mine: set[str] = set()   # own ConfigMaps first, then another input's (``fallback``)
        for d in docs:
            if not isinstance(d.data, dict):
                continue
            kind, api = d.data.get("kind"), str(d.data.get("apiVersion", ""))
            meta = d.data.get("metadata") if isinstance(d.data.get("metadata"), dict) else {}
            name = meta.get("name")
            if kind == "ConfigMap" and api == "v1" and isinstance(name, str) \
                    and name not in mine:
                self.configmaps[name] = d
                mine.add(name)
            elif kind == "ComputeDomain" and api.startswith("resource.nvidia.com/"):
                tpl = _get(d.data, "spec", "channel", "resourceClaimTemplate", "name")
                if isinstance(tpl, str):
                    self.channels.add(tpl)
            elif kind == "ResourceClaimTemplate" and isinstance(name, str) \
                    and CHANNEL_CLASS in str(d.data.get("spec")):
                self.channels.add(name)

    def configmap(self, name: Any) -> tuple[dict, Document | None]:
        doc = self.configmaps.get(name) if isinstance(name, str) else None
        data = (doc.data.get("data") if doc else None) or {}
        return (data if isinstance(data, dict) else {}), doc


def _field_ref(ref: dict, index: int) -> str:
    path = str(ref.get("fieldPath", ""))
    if any(label in path for label in _INDEX_LABELS):
        return str(index)
    return runtime(path)


def _environment(w: Workload, pods: Pods, container: dict, cpath: tuple, ctx: Context,
                 launch: Launch) -> None:
    """Fill ``launch.env`` (in the order Kubernetes resolves it) and its locations."""
    prov = w.doc.provenance
    env = launch.env
    # A RoleBasedGroup's leader/worker role is a LeaderWorkerSet the controller creates
    # (sgl-project/rbg@v0.8.0-alpha.5 pkg/reconciler/lws_reconciler.go): LWS sets its variables.
    if w.kind in ("LeaderWorkerSet", "DisaggregatedSet") or w.platform in ("lws", "kserve") \
            or (w.platform == "rbg" and w.size > 1):
        env.update({LWS_ENV[0]: runtime("LWS_LEADER_ADDRESS"), LWS_ENV[1]: str(w.size),
                    LWS_ENV[2]: str(pods.index)})
    if w.platform == "rbg":
        # sgl-project/rbg@v0.8.0-alpha.5 api/workloads/constants/env.go, pkg/discovery/
        # env_builder.go (leaderWorkerPattern: the RBG_LWP_* variables).
        env.update({"RBG_GROUP_NAME": str(w.group), "RBG_ROLE_NAME": str(w.role),
                    "RBG_ROLE_INDEX": runtime("RBG_ROLE_INDEX"),
                    "RBG_LWP_LEADER_ADDRESS": runtime("RBG_LWP_LEADER_ADDRESS"),
                    "RBG_LWP_WORKER_INDEX": str(pods.index), "RBG_LWP_GROUP_SIZE": str(w.size)})
    if w.platform == "aibrix":
        # vllm-project/aibrix@v0.7.0 pkg/controller/constants/stormservice.go.
        env.update({"STORM_SERVICE_NAME": str(w.group), "ROLE_NAME": str(w.role),
                    "ROLESET_NAME": runtime("ROLESET_NAME"), "ROLESET_INDEX": runtime("ROLESET_INDEX"),
                    "ROLE_REPLICA_INDEX": runtime("ROLE_REPLICA_INDEX"),
                    "POD_GROUP_INDEX": str(pods.index), "POD_GROUP_SIZE": str(w.size)})
    env["HOSTNAME"] = runtime("pod name")
    for k, src in enumerate(container.get("envFrom") or []):
        src = src if isinstance(src, dict) else {}
        ref = src.get("configMapRef")
        if isinstance(ref, dict):
            data, doc = ctx.configmap(ref.get("name"))
            prefix = str(src.get("prefix") or "")
            for key, value in data.items():
                env[prefix + str(key)] = str(value)
                launch.env_sources[prefix + str(key)] = "configmap"
                if doc is not None:
                    launch.env_locations[prefix + str(key)] = doc.provenance.locate(("data", key))
    extra = []
    if w.platform == "dynamo":
        extra = [(("spec", "envs"), e) for e in w.extra.get("env") or []] + \
                [((*w.path, "envs"), e) for e in w.extra.get("component_env") or []]
    items = [((*p, i), e) for i, (p, e) in enumerate(extra)] + \
            [((*cpath, "env", i), e) for i, e in enumerate(container.get("env") or [])]
    for path, item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        name = item["name"]
        launch.env_locations[name] = prov.locate(path)
        launch.env_sources[name] = "env"
        vf = item.get("valueFrom")
        if isinstance(vf, dict):
            if isinstance(vf.get("fieldRef"), dict):
                env[name] = _field_ref(vf["fieldRef"], pods.index)
                launch.env_sources[name] = "fieldRef"
            elif isinstance(vf.get("configMapKeyRef"), dict):
                data, _ = ctx.configmap(vf["configMapKeyRef"].get("name"))
                key = vf["configMapKeyRef"].get("key")
                env[name] = str(data[key]) if key in data else runtime(f"configmap {key}")
            elif isinstance(vf.get("secretKeyRef"), dict):
                ref = vf["secretKeyRef"]
                env[name] = runtime(f"secret {ref.get('name')}/{ref.get('key')}")
                launch.env_sources[name] = f"secret:{ref.get('name')}:{ref.get('key')}"
            else:
                env[name] = runtime(name)
        else:
            text = "" if item.get("value") is None else str(item["value"])
            env[name] = kube_expand(text, env)
            shell_ref = re.search(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}", text)
            if shell_ref:
                launch.issues.append(Issue(
                    "IMP014", f"{name}: {shell_ref.group(0)} is not expanded by Kubernetes (it "
                    "expands $(NAME) only): the variable holds the text as written",
                    prov.locate(path), f"write $({shell_ref.group(0)[2:-1]}) to refer to a "
                    "variable the container defines, or set the value in the launch script"))


#: What a found, unread engine leaves unchecked (importer/unread.py says it of other kinds).
NOT_READ = ("its engine flags, parallel layout, HBM sizing, pods, network and probes were not "
            "checked")


def _structure(container: dict, cpath: tuple, prov, platform: bool) -> list[Issue]:
    """IMP026 (an error) for each way ``container`` is not a Kubernetes Container (``args: "vllm
    serve ..."`` where a list of strings goes): the API server refuses the object
    (generator/spec/k8s.py ``container_errors``, the Kubernetes OpenAPI schema). Under a
    platform's resource (``platform``: Dynamo's mainContainer, KServe's, RBG's) a missing
    required field is not one: the controller fills it in (Dynamo names the main container)."""
    from ..spec.k8s import container_errors, k8s_schemas
    out = []
    for path, message in container_errors(container):
        if platform and message.endswith("is a required property"):
            continue
        where = (*cpath, *path)
        out.append(Issue("IMP026", f"container {container.get('name')!r} is not a valid "
                         f"Kubernetes Container: {message} (Kubernetes {k8s_schemas()['kubernetes']} API schema: "
                         "the API server refuses the object)", prov.locate(where),
                         "write the field as the Container schema has it (command and args "
                         "are lists of strings)", error=True, path=json_path(where)))
    return out


def _argv(w: Workload, container: dict, cpath: tuple, launch: Launch) -> tuple[list, list]:
    """argv tokens and their (path, is-script) origins: ``command`` (or the image's
    entrypoint) + ``args``, ``$(VAR)``-expanded."""
    toks: list[str] = []
    origin: list[tuple] = []
    command = container.get("command")
    if isinstance(command, list) and command:
        for i, c in enumerate(command):
            toks.append(kube_expand(str(c), launch.env))
            origin.append((*cpath, "command", i))
    elif _VLLM_ENTRYPOINT.search(launch.image):
        toks += ["vllm", "serve"]
        origin += [(*cpath, "image"), (*cpath, "image")]
    args = container.get("args")
    for i, a in enumerate(args if isinstance(args, list) else []):
        toks.append(kube_expand(str(a), launch.env))
        origin.append((*cpath, "args", i))
    return toks, origin


def _one_string(toks: list[str], origin: list, launch: Launch, prov) -> tuple[list, list]:
    """``command: ["python3 -m sglang.launch_server --tp 16 ..."]``: the kubelet executes the
    first element as the program's file name, spaces included, and no such file exists: the
    container never starts (no shell splits it:
    https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/).
    IMP018 (an error) when that string starts an engine; its words are read as the command
    meant, so the other checks still run (located at the string)."""
    if not toks or not _ENGINE_TEXT.search(toks[0]) or len(toks[0].split()) < 2:
        return toks, origin
    words = toks[0].split()
    launch.issues.append(Issue(
        "IMP018", f"command[0] is one string of {len(words)} words ({' '.join(words[:3])} ...) "
        "and no shell: the kubelet executes a program of that whole name, which does not exist, "
        "and the container fails to start", prov.locate(origin[0]),
        "give each word its own list item, or run it with [sh, -c, \"...\"]", error=True))
    return words + toks[1:], [origin[0]] * len(words) + origin[1:]


def _one_argument(toks: list[str], origin: list, launch: Launch, prov) -> tuple[list, list]:
    """``args: ["vllm serve /models/x --tp 8"]`` under the image's ``vllm serve``, or ``args:
    ["--tensor-parallel-size 8"]``: with no shell each list item is one argument, spaces
    included, so the engine reads a model named by the whole string, or an option it does not
    have (https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/).
    IMP018 (an error) at the item; its words are read as the arguments meant (an engine entry
    point it repeats dropped), so the other checks still run."""
    for i, tok in enumerate(toks[1:], 1):
        words = tok.split()
        option = tok.startswith("--") and len(words) > 1 and "=" not in words[0]
        engine = len(words) > 1 and _ENGINE_TEXT.match(tok) is not None
        if not (option or engine):
            continue
        where = f"{origin[i][-2]}[{origin[i][-1]}]" if isinstance(origin[i], tuple) else ""
        launch.issues.append(Issue(
            "IMP018", f"{where or 'an argument'} is one string of {len(words)} words "
            f"({' '.join(words[:3])} ...) and no shell: the engine receives it as one argument "
            f"({'a model named by the whole string' if engine else 'an option it does not have'})"
            ", and it fails to start", prov.locate(origin[i]),
            "give each word its own list item, or run it with [sh, -c, \"...\"]", error=True))
        head = toks[:i]
        if engine and find_engine(head) is not None:   # the entry point is the image's already
            start = find_engine(words)
            words = words[start[3]:] if start else words
        return head + words + toks[i + 1:], origin[:i] + [origin[i]] * len(words) + origin[i + 1:]
    return toks, origin


def _shell(toks: list[str]) -> tuple[int, int] | None:
    """(index of the script token, index of $0) when ``toks`` is ``sh -c SCRIPT [ARG0 ...]``."""
    if not toks or not _SHELLS.match(toks[0]):
        return None
    for j, t in enumerate(toks[1:], 1):
        if t.startswith("-") and not t.startswith("--") and "c" in t[1:]:
            return (j + 1, j + 2) if j + 1 < len(toks) else None
        if not t.startswith("-"):
            return None
    return None


def resolve(w: Workload, pods: Pods, container: dict, cpath: tuple, ctx: Context,
            version: str | None) -> Launch:
    """The engine ``container`` (at ``cpath`` in the workload's document) runs."""
    prov = w.doc.provenance
    launch = Launch(container, cpath, image=str(container.get("image") or ""))
    launch.locations[-1] = prov.locate(cpath)
    launch.issues += _structure(container, cpath, prov, bool(w.platform))
    _environment(w, pods, container, cpath, ctx, launch)
    toks, origin = _argv(w, container, cpath, launch)
    if w.platform == "kserve" and not container.get("command"):
        from .platforms import kserve_argv
        toks, origin = kserve_argv(w, launch, toks, origin)
    sh = _shell(toks)
    argv: list[str] = []
    if sh is None and isinstance(container.get("command"), list):
        toks, origin = _one_string(toks, origin, launch, prov)
    if sh is None:
        toks, origin = _one_argument(toks, origin, launch, prov)
    if sh is None:
        argv = toks
        for i, o in enumerate(origin):
            launch.locations[i] = o if isinstance(o, Location) else prov.locate(o)
    else:
        script_at, zero = sh
        try:
            cmds = run_script(toks[script_at], launch.env, toks[zero + 1:])
        except ShellError as exc:
            if _ENGINE_TEXT.search(toks[script_at]):   # an engine's script: say why it is lost
                launch.issues.append(Issue("IMP002", f"cannot read the launch script: {exc}",
                                           prov.locate(origin[script_at]), error=True))
            return launch
        engine_cmds = [c for c in cmds if find_engine(list(c.argv))]
        if not engine_cmds:
            m = _ENGINE_TEXT.search(toks[script_at])
            if m:   # the script names an engine the reader does not reach (piped to a shell)
                launch.issues.append(Issue(
                    "INP002", f"{w.kind} {w.name}: container {container.get('name')!r}: its "
                    "script names "
                    f"{m.group(0)!r}, but moegen found no command that starts it (a pipe into a "
                    f"shell, a command built at run time): {NOT_READ}",
                    prov.locate(origin[script_at]), "start the engine as a command of the "
                    "script (exec vllm serve ...), or describe the deployment as an "
                    "InferenceDeployment", notice=True))
            return launch
        c = engine_cmds[-1]
        argv = list(c.argv)
        for i, (line, col) in enumerate(c.positions):
            launch.locations[i] = prov.locate_in_text(origin[script_at], line, col)
        launch.env = {**launch.env, **{k: v for k, v in c.env.items()
                                       if k not in launch.env}}
        for name in sorted(c.unset - {"@", "*"}):
            launch.issues.append(Issue(
                "IMP006", f"the engine command uses ${name}, which nothing in the pod sets "
                "(the shell substitutes an empty string)", launch.loc(0),
                "define it in the container's env"))
    found = find_engine(argv)
    if found is None:
        return launch
    engine, wrapper, first, start = found
    launch.argv = argv
    launch.command = parse_engine_args(engine, wrapper, version, argv, start, start,
                                       images.dynamo_release(launch.image or ""))
    launch.command.program = argv[first:start]
    if engine == "sglang":
        _sglang_config(w, pods, launch, ctx, version)
    return launch


def _sglang_config(w: Workload, pods: Pods, launch: Launch, ctx: Context,
                   version: str | None) -> None:
    """``--config FILE``: SGLang merges the YAML file's keys before the other arguments
    (sgl-project/sglang@v0.5.23 python/sglang/srt/server_args.py prepare_server_args,
    python/sglang/srt/utils/server_args_config_parser.py ConfigArgumentMerger: a true boolean
    becomes ``--key``, false is dropped, a list gives ``--key v1 v2``, a mapping its JSON).
    The file is read from the ConfigMap mounted at its directory."""
    cmd = launch.command
    opt = cmd.get("--config")
    if opt is None or not isinstance(opt.value, str):
        return
    found = _mounted(pods, launch.container, opt.value, ctx)
    if found is None:
        launch.issues.append(Issue("IMP002", f"--config {opt.value}: no ConfigMap in the input is "
                                   "mounted there, so its options cannot be read",
                                   launch.loc(opt.index), "include the ConfigMap in the input"))
        return
    text, doc, key = found
    at = doc.provenance.locate(("data", key))
    data, prov, findings = parse_embedded(text, at.file, doc.provenance.blocks.get(("data", key)),
                                          at)
    launch.issues += [Issue(f.code, f.message, f.location, f.hint, error=True) for f in findings]
    if not isinstance(data, dict):
        launch.issues.append(Issue("IMP002", f"--config {opt.value} is not a YAML mapping",
                                   at, error=True))
        return
    argv: list[str] = []
    locs: list[Location] = []
    for k, v in data.items():
        flag = f"--{k}"
        if isinstance(v, bool):
            vals = ([flag] if v else []) if option_arity("sglang", flag) == FLAG \
                else [flag, str(v).lower()]
        elif isinstance(v, list):
            vals = [flag, *(str(x) for x in v)] if v else []
        elif isinstance(v, dict):
            vals = [flag, json.dumps(v)]
        else:
            vals = [flag, str(v)]
        argv += vals
        locs += [prov.locate((k,))] * len(vals)
    old = launch.argv
    at_config = opt.index
    keep = [j for j in range(cmd.start, len(old)) if j not in (at_config, at_config + 1)]
    new_locs = [launch.loc(j) for j in range(cmd.start)] + locs + [launch.loc(j) for j in keep]
    launch.argv = old[:cmd.start] + argv + [old[j] for j in keep]
    launch.locations = {**dict(enumerate(new_locs)), -1: launch.loc(-1)}
    program = cmd.program
    launch.command = parse_engine_args("sglang", cmd.wrapper, version, launch.argv, cmd.start,
                                       cmd.start, images.dynamo_release(launch.image or ""))
    launch.command.program = program


def _mounted(pods: Pods, container: dict, path: str, ctx: Context):
    """(text, ConfigMap document, key) of the file at ``path`` in ``container`` when a
    ConfigMap volume is mounted over it."""
    volumes = {v.get("name"): v for v in pods.spec.get("volumes") or [] if isinstance(v, dict)}
    for m in container.get("volumeMounts") or []:
        if not isinstance(m, dict) or not isinstance(m.get("mountPath"), str):
            continue
        mount = m["mountPath"].rstrip("/")
        vol = volumes.get(m.get("name")) or {}
        cm = vol.get("configMap") if isinstance(vol.get("configMap"), dict) else None
        if cm is None:
            continue
        if m.get("subPath") and path == mount:
            key = m["subPath"]
        elif path.startswith(mount + "/"):
            key = path[len(mount) + 1:]
        else:
            continue
        for item in cm.get("items") or []:
            if isinstance(item, dict) and item.get("path") == key:
                key = item.get("key", key)
        data, doc = ctx.configmap(cm.get("name"))
        if doc is not None and isinstance(data.get(key), str):
            return data[key], doc, key
    return None


#: A container that starts or joins a Ray cluster, or names the Ray executor. vLLM spans pods
#: over Ray at every release: before 0.11.1 (no --nnodes) it picks Ray by itself when the
#: node's GPUs are fewer than the world size (vllm-project/vllm@v0.8.5:vllm/config.py
#: ParallelConfig.__post_init__; the cluster started by
#: vllm-project/vllm@v0.8.5:examples/online_serving/multi-node-serving.sh), later with
#: ``--distributed-executor-backend ray`` (vLLM 0.33.0 vllm/config/parallel.py). The role is
#: imported with ``parallel.executor: ray`` (LAY005 judges the --nnodes path, >= 0.11.1, only).
RAY = re.compile(r"\bray\s+start\b|multi-node-serving\.sh|--distributed-executor-backend[=\s]+"
                 r"[\"']?ray\b")


def runs_ray(container: dict) -> bool:
    """The container's command or args start or join a Ray cluster (:data:`RAY`)."""
    lists = [container.get(k) for k in ("command", "args")] if isinstance(container, dict) else []
    words = [str(w) for v in lists if isinstance(v, list) for w in v if isinstance(w, (str, int))]
    return bool(RAY.search(" ".join(words)))


def engine_containers(w: Workload, pods: Pods, ctx: Context,
                      version: str | None) -> list[Launch]:
    """Every container of ``pods`` that runs an engine (init containers included: a sidecar
    never is one)."""
    out = []
    spec = pods.spec
    containers = spec.get("containers") if isinstance(spec.get("containers"), list) else []
    if pods.main == "mainContainer":   # Dynamo v1alpha1: extraPodSpec.mainContainer
        main = spec.get("mainContainer")
        if isinstance(main, dict):
            out.append(resolve(w, pods, main, (*pods.path, "mainContainer"), ctx, version))
    for i, c in enumerate(containers):
        if isinstance(c, dict):
            launch = resolve(w, pods, c, (*pods.path, "containers", i), ctx, version)
            if launch.command is not None or (pods.main and c.get("name") == pods.main) \
                    or any(x.code in ("IMP002", "INP002") for x in launch.issues):
                out.append(launch)
    # A platform's engine container (Dynamo's main container, KServe's "main") stays even when
    # no engine is found in it: the caller reports it (IMP001).
    return [x for x in out if x.command is not None or pods.main
            or any(i.code in ("IMP002", "INP002") for i in x.issues)]


def is_unknown(value: Any) -> bool:
    """A value only the pod knows at run time."""
    return isinstance(value, str) and is_runtime(value)
