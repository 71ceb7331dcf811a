"""One group of imported roles -> the InferenceDeployment document and its provenance: the
model, engine, node pools, network and roles, with the checks the importer makes itself
(pods x GPUs against the ranks asked for, the KV role, the engine release) and the environment
each role keeps (what moegen would not derive).
"""

from __future__ import annotations

import re
from typing import Any

from ..catalog import ARCHITECTURES
from ..checks.network import ENGINE_ENV
from ..engines import sglang as sg
from ..engines import vllm as vl
from ..durations import KEEPALIVE_ENV, SGLANG_KV_TIMEOUT_ENV
from ..engines.caches import CACHE_ENV_KEYS, CACHE_MOUNT
from ..engines.registry import LABELS
from ..facts import images
from ..errors import Location
from ..facts.versions import default_image
from ..spec.models import ENGINE_DEFAULT, GPU_UNKNOWN, MODEL_UNKNOWN
from ..spec.provenance import Provenance
from .platforms import KSERVE_COMMAND_ENV
from .build import (
    stated_not_release,
    MANAGED,
    Imported,
    Options,
    Role,
    _base_name,
    _common_labels,
    checkpoint_format,
    _located,
    _merge_statefulsets,
    _mode,
    _role_name,
    _role_order,
    _workload_kind,
    architecture_of,
    engine_image,
    release_of,
)
from .launch import Issue, runs_ray
from .prefill_cp import prefill_cp
from .ranks import counts_named, layout_issues, rollout_change, workload_kind
from .. import security
from .pods import DEFAULT_HF_HOME, token_secret
from .shell import is_runtime


def _model(group: list[Role], opts: Options, prov: Provenance,
           issues: list[Issue], imported_suppress: set[str]) -> dict:
    first = next((r for r in group if r.fields.model.get("path") or r.fields.model.get("name")),
                 group[0])
    m = first.fields.model
    path, name = m.get("path"), m.get("name") or m.get("path")
    model: dict[str, Any] = {"name": str(name or "model")}
    loc = first.fields.model_locs
    at = first.launch.loc(0)
    if isinstance(path, str) and path.startswith("/"):
        model["path"] = path
    elif isinstance(path, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9._-]+",
                                                path):
        model["hub"] = _hub(group, path, model["name"])
    else:
        model["path"] = "/models/" + str(path or name or "model").rsplit("/", 1)[-1]
        imported_suppress.add("MOD005")   # the volume moegen needs: this IMP010 says it
        what = f"loads {path!r}, which is" if path is not None else \
            "command names no model, and the default is"
        issues.append(Issue("IMP010", f"the engine {what} neither a weights "
                            "directory nor a Hugging Face repository id; moegen serves weights "
                            f"from a volume (model.path {model['path']} and model.volume)",
                            loc.get("path", at), "give the weights a volume, and set model.path"))
    if opts.model_config:
        model["config"] = opts.model_config
        # Its findings (LOAD011, MOD002) are about the file the command line names.
        prov.locations[("spec", "model", "config")] = Location(opts.model_config, 1, 1)
        prov.names[("spec", "model", "config")] = "--model-config"
    else:
        arch = opts.model or architecture_of(model["name"], path)
        # Weights in a volume with no config.json and no Hub id: the model is not stated, and
        # not guessed from a path (docs/spec.md §2: model.architecture: unknown, MOD008).
        unstated = arch is None and "path" in model and "hub" not in model \
            and _kserve_hub(group) is None
        if arch is not None:
            model["architecture"] = arch
        elif unstated:
            model["architecture"] = MODEL_UNKNOWN
        if arch is None:
            wrote = "gen import writes model.architecture: unknown; " if unstated else ""
            issues.append(Issue("IMP011", f"model {model['name']!r} is not in moegen's catalog "
                                f"({', '.join(sorted(ARCHITECTURES))}): {wrote}the "
                                "model-dependent checks (HBM sizing, layout divisibility, MoE) "
                                "did not run", loc.get("name", at),
                                "give its config.json with --model-config" + (
                                    ", or a catalog id with --model (e.g. --model deepseek-r1)"
                                    if unstated else ""), error=False))
    # --quantization names the loader; compressed-tensors loads FP8, INT4, NVFP4 and INT8
    # schemes alike, so the format comes from the name or the catalog's config instead.
    quant = {"fp8": "fp8", "mxfp4": "mxfp4", "modelopt_fp4": "nvfp4"}.get(
        str(m.get("quantization", "")))
    model["weights"] = quant or checkpoint_format(model.get("architecture"), model["name"], path)
    volume = next((r.pod.volume for r in group if r.pod.volume), None) or _storage_uri(group)
    hub = _kserve_hub(group)
    if hub is not None and "hub" not in model:
        model.pop("path", None)
        model["hub"] = hub if hub.get("repo") != model["name"] else {}
    elif volume is not None:
        model["volume"] = volume
    token = next((t for t in (token_secret(r.launch)[0] for r in group) if t), None)
    if token is not None:
        model["tokenSecret"] = token
    where = {(k,): v for k, v in loc.items()}
    if "hub" in model:   # the Hub download is the model argument (MOD006 and its waivers)
        where[("hub",)] = loc.get("path", loc.get("name", at))
    _located(prov, ("spec", "model"), where)
    return model


def _hub(group: list[Role], repo: str, name: str) -> dict:
    """``model.hub``: the Hub repository the engine downloads, the cache volume and its mount
    (importer/pods.py ``hub_cache_dir``), and HF_HUB_OFFLINE (huggingface_hub constants.py
    ``_is_true``: 1, ON, YES, TRUE)."""
    first = next((r for r in group if r.pod.hub), group[0])
    hub: dict[str, Any] = {} if repo == name else {"repo": repo}
    if first.pod.hub:
        hub["cache"] = first.pod.hub["cache"]
        if first.pod.hub["mountPath"] != DEFAULT_HF_HOME:
            hub["mountPath"] = first.pod.hub["mountPath"]
    offline = str(first.launch.env.get("HF_HUB_OFFLINE", "")).upper()
    if offline in ("1", "ON", "YES", "TRUE"):
        hub["offline"] = True
    return hub


def _kserve_hub(group: list[Role]) -> dict | None:
    """KServe's ``spec.model.uri: hf://ORG/NAME``: the storage initializer downloads it into an
    emptyDir at /mnt/models in every pod before the engine starts (kserve/kserve@v0.20.0
    pkg/controller/v1alpha2/llmisvc/workload_storage.go: case HfURIPrefix, attachStorageInitializer),
    as ``model.hub`` without a cache volume (MOD006: re-downloaded whenever a pod is created)."""
    for r in group:
        uri = str((r.workload.extra.get("model") or {}).get("uri", ""))
        if r.workload.platform == "kserve" and uri.startswith("hf://"):
            repo = uri[len("hf://"):].strip("/")
            return {"repo": repo} if re.fullmatch(r"[\w.-]+/[\w.-]+", repo) else None
    return None


def _storage_uri(group: list[Role]) -> dict | None:
    """KServe's ``spec.model.uri``: ``pvc://NAME[/path]`` is mounted at /mnt/models by the
    controller (kserve@v0.20.0 pkg/controller/v1alpha2/llmisvc: the storage initializer)."""
    for r in group:
        uri = str((r.workload.extra.get("model") or {}).get("uri", ""))
        if uri.startswith("pvc://"):
            claim = uri[len("pvc://"):].split("/", 1)[0]
            return {"persistentVolumeClaim": {"claimName": claim, "readOnly": True}} \
                if claim else None
    return None


def _dynamo_engine_image(first: Role, engine: dict) -> None:
    """A DynamoGraphDeployment's containers run a Dynamo runtime image (the release's, or a
    custom build named ``...-vllm0.33.0``), whose tag is Dynamo's, not the engine's: the spec
    names the engine release's own image instead, so ENG002 holds it to ``engine.version``
    (the version read from the runtime image through facts/images.py). The Dynamo target itself
    is not written: its checks are the platform's, not the manifest's."""
    if first.workload.platform == "dynamo" and engine.get("version") \
            and images.read(engine["image"], engine["name"]).release is not None:
        engine["image"] = default_image(engine["name"], engine["version"])


def _engine(group: list[Role], opts: Options, issues: list[Issue]) -> tuple[dict, str | None]:
    """``spec.engine`` and the release judged at when it is not the one the image runs (None:
    moegen read or was told the release). An image whose release moegen cannot read is
    judged at the newest release whose parser has every option used (IMP008 says how to state
    the release); a release moegen has no facts for, at the nearest it has (IMP008 again)."""
    first = group[0]
    cmd = first.launch.command
    image = engine_image(first.workload, first.launch)
    release, how, stated = release_of(first.workload, first.launch, opts)
    label = LABELS[cmd.engine]
    at = first.workload.doc.provenance.locate((*first.launch.cpath, "image")) \
        if first.launch.image else first.launch.loc(-1)   # the image line
    state = (f"state it with --engine-version, or the annotation {images.ANNOTATION}: "
             "\"X.Y.Z\" on the workload")
    bad = stated_not_release(first.workload)
    if bad is not None:   # moegen.dev/engine-version: banana
        judged = "the image's release" if release is not None else "an assumed release " \
            "(IMP008)"
        issues.append(Issue("IMP025", f"the annotation {images.ANNOTATION} says {bad[0]!r}, "
                            f"which is not a release (MAJOR.MINOR.PATCH, e.g. 0.33.0): ignored; "
                            f"the engine is judged at {judged}", bad[1],
                            f"state the {label} release the image runs: {images.ANNOTATION}: "
                            "\"X.Y.Z\"", error=True))
    if release is None:
        version, why = _newest_with(cmd.engine, [r.launch.command for r in group])
        issues.append(Issue("IMP008", f"{how}: moegen cannot read which {label} release it "
                            f"runs; judged at {version}, {why} (a finding that depends on the "
                            "release is a warning)", at, state))
        return {"name": cmd.engine, "version": version,
                "image": image or f"{cmd.engine}:{version}"}, version
    nearest = _nearest_known(cmd.engine, release)
    if nearest is None:
        return {"name": cmd.engine, "version": release,
                "image": image or default_image(cmd.engine, release)}, None
    own = default_image(cmd.engine, nearest)
    issues.append(Issue("IMP008", f"{how if not stated else 'stated by ' + how}: {label} "
                        f"{release}, a release moegen has no per-release facts for; judged at "
                        f"{nearest}, the nearest it knows, and the spec names {own} (a finding "
                        "that depends on the release is a warning)", at,
                        f"moegen reads {label} {_ranges(cmd.engine)}"))
    return {"name": cmd.engine, "version": nearest, "image": own}, nearest


def _nearest_known(engine: str, release: str) -> str | None:
    """None when moegen has the facts of ``release`` (a known release or a patch release of
    one), else the known release nearest to it (the oldest for an older one, the newest for a
    newer one, the one below for a release between them)."""
    from ..engines.options import known_releases
    from ..engines.registry import ENGINES
    from ..facts.versions import UnsupportedVersion, parse_version
    try:
        ENGINES[engine].dialect(release)
        return None
    except UnsupportedVersion:
        pass
    except ValueError:
        return known_releases(engine)[-1]
    known = known_releases(engine)
    try:
        v = parse_version(release)
    except ValueError:
        return known[-1]
    below = [k for k in known if parse_version(k) <= v]
    return below[-1] if below else known[0]


def _ranges(engine: str) -> str:
    from ..engines.options import known_releases
    known = known_releases(engine)
    return f"{known[0]} to {known[-1]}"


def _newest_with(engine: str, commands: list) -> tuple[str, str]:
    """The newest known release whose parser has every option ``commands`` use (options no
    release has are left out: ENG004 reports them), and why it was chosen."""
    from ..engines.options import known_releases
    from .argv import resolve
    releases = known_releases(engine)
    used = sorted({o.name for c in commands if c is not None for o in c.options
                   if not o.wrapper})
    anywhere = [n for n in used if any(resolve(engine, v, n) for v in releases)]
    for v in reversed(releases):
        missing = [n for n in anywhere if resolve(engine, v, n) is None]
        if not missing:
            if v == releases[-1]:
                return v, "the newest release moegen knows"
            gone = [n for n in anywhere if resolve(engine, releases[-1], n) is None]
            return v, (f"the newest release whose parser has every option the command uses "
                       f"({', '.join(gone)}: not in {releases[-1]})")
    return releases[-1], "the newest release moegen knows (no release has every option used)"


def _pools(group: list[Role], names: list[str], issues: list[Issue]) -> tuple[dict, list[str]]:
    pools: dict[str, dict] = {}
    keys: dict[str, str] = {}
    chosen = []
    for r, name in zip(group, names):
        gpu = r.pod.gpu
        if gpu is None:
            issues.append(Issue("IMP012", f"role {name!r}: the GPU is not stated (no GPU product "
                                "in the node selector or node affinity): the deployment checks "
                                "(HBM sizing, GPU family, parallel layout, engine flags) were "
                                "not run, only how the manifest reads; gen import writes "
                                "gpu: unknown", r.launch.loc(-1),
                                "pass --gpu (e.g. --gpu H200-141GB) to run them", notice=True))
            gpu = GPU_UNKNOWN
        per_pod = r.pod.gpus or 1
        nodes = r.workload.replicas * r.workload.size
        if _workload_kind(r) == "pod-per-rank":
            # One pod per DP rank: the node holds several (GB200/GB300 trays have 4 GPUs,
            # HGX boards 8: catalog scaleup_gpus).
            per_node = 4 if gpu.startswith("GB") else 8   # unknown: an HGX board
            nodes = -(-nodes * per_pod // per_node)
            per_pod = per_node
        key = repr((gpu, per_pod, r.pod.pool))
        pool = keys.get(key)
        if pool is None:
            pool = name if name not in pools else f"{name}-pool"
            keys[key] = pool
            pools[pool] = {"gpu": gpu, "gpusPerNode": min(per_pod, 16), "nodes": 0,
                           **r.pod.pool}
        pools[pool]["nodes"] = min(4096, pools[pool]["nodes"] + nodes)
        chosen.append(pool)
    return pools, chosen


def assemble(group: list[Role], opts: Options, files: list[str]) -> Imported:
    """The InferenceDeployment of one group of roles."""
    issues: list[Issue] = []
    group = sorted(_merge_statefulsets(group), key=_role_order)
    base = _base_name(group)
    prov = Provenance()
    first = group[0].workload
    prov.locations[()] = first.doc.provenance.locate(first.path) \
        if first.path else first.doc.provenance.locate(())
    names: list[str] = []
    for r in group:
        names.append(_role_name(r, names, base))
    meta: dict[str, Any] = {"name": base}
    if first.namespace and not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", first.namespace):
        issues.append(Issue("IMP013", f"metadata.namespace {first.namespace!r} is not a "
                            "namespace name (an RFC 1123 label): the API server refuses the "
                            "object", first.doc.provenance.locate(("metadata", "namespace")),
                            "substitute the placeholder", error=True))
        first.namespace = None
    labels = _common_labels(group)
    if labels:
        meta["labels"] = labels
    if first.namespace:
        meta["namespace"] = first.namespace
        prov.locations[("metadata", "namespace")] = first.doc.provenance.locate(
            ("metadata", "namespace"))
    suppress: set[str] = set()
    spec: dict[str, Any] = {"model": _model(group, opts, prov, issues, suppress),
                            "engine": None}
    spec["engine"], assumed = _engine(group, opts, issues)
    _dynamo_engine_image(group[0], spec["engine"])
    lead = group[0]
    if lead.launch.image:   # engine findings (VER001, ENG002) at the image line
        at = lead.workload.doc.provenance.locate((*lead.launch.cpath, "image"))
        prov.locations[("spec", "engine", "image")] = at
        if not opts.engine_version:
            prov.locations[("spec", "engine", "version")] = at
    pools, pool_of = _pools(group, names, issues)
    spec["nodePools"] = pools
    netted = next((r for r in group if r.pod.network), None)
    net = netted.pod.network if netted else None
    if netted:
        spec["network"] = net
        _located(prov, ("spec", "network"), netted.pod.network_locs)
    roles = []
    for i, (r, name, pool) in enumerate(zip(group, names, pool_of)):
        r.name, r.mode = name, _group_mode(r, group)
        issues += _kv_role_issues(r, spec["engine"]["version"], assumed) \
            + _kv_config_issues(r, net) + rollout_change(r)
        role: dict[str, Any] = {"name": name, "mode": r.mode, "nodePool": pool,
                                "replicas": r.workload.replicas,
                                "workload": workload_kind(r), **r.fields.role}
        port = r.pod.sidecar_port or r.fields.port
        if port not in (None, 8000):
            role.setdefault("serving", {})["port"] = port
        if spec["engine"]["name"] == "vllm" and runs_ray(r.launch.container):
            role.setdefault("parallel", {})["executor"] = "ray"
            prov.locations[("spec", "roles", i, "parallel", "executor")] = r.launch.loc(-1)
        if r.pod.pod:
            role["pod"] = r.pod.pod
        _engine_default(r, role, prov, ("spec", "roles", i))
        issues += prefill_cp(r, role, spec["model"].get("architecture"), prov,
                             ("spec", "roles", i))
        env = _role_env(r, net, pools[pool])
        if env:
            role["env"] = env
        roles.append(role)
        rpath = ("spec", "roles", i)
        prov.locations[rpath] = r.workload.doc.provenance.locate(r.workload.path) \
            if r.workload.path else r.workload.doc.provenance.locate(())
        _located(prov, rpath, r.fields.locs)
        _located(prov, rpath, {("env", k): r.launch.env_locations[k] for k in env
                               if k in r.launch.env_locations})
        counts_named(prov, rpath, r.workload, pool)
        issues += r.fields.issues + r.pod.issues + layout_issues(r, name)
        if any(i.code == "IMP005" and "load balancing" in i.message for i in r.fields.issues):
            suppress.add("POD004")   # its process count assumes moegen's load balancing
        if any(i.code == "IMP005" and i.message.startswith("KV connector")
               for i in r.fields.issues):
            suppress.add("PD002")   # a connector moegen does not model (TPUConnector): IMP005
        if r.fields.auto_len:
            suppress.add("SIZ002")   # vLLM auto-fits the length instead of refusing (RoleFields)
        if r.pod.bad_gpus is not None:
            suppress.add("POOL002")   # the pool's size from an unreadable GPU count: IMP009
    spec["roles"] = roles
    _inherited_speculative(roles, prov)
    data = {"apiVersion": "moegen.dev/v1alpha1", "kind": "InferenceDeployment",
            "metadata": meta, "spec": spec}
    imported = Imported(data, prov, files, issues, group, suppress)
    if assumed is not None:
        imported.assumed = f"{LABELS[spec['engine']['name']]} {assumed}"
    return imported


def _engine_default(r, role: dict, prov, rpath: tuple) -> None:
    """``sizing.concurrency: engine-default`` on a decoding SGLang role whose command leaves
    ``--max-running-requests`` unset and sets no ``serving.maxNumSeqs``: SGLang admits its own
    default, which moegen computes from the KV pool (deployment.py ``engine_defaults``)."""
    at = r.fields.default_admission
    if at is None or r.mode == "prefill" or "concurrency" in role.get("sizing", {}) \
            or "maxNumSeqs" in role.get("serving", {}):
        return
    role.setdefault("sizing", {})["concurrency"] = ENGINE_DEFAULT
    prov.locations[(*rpath, "sizing", "concurrency")] = at


#: The first vLLM release whose NixlConnector logs that kv_role kv_both is deprecated: vLLM
#: 0.23.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl/connector.py:98 (the warning is
#: absent from 0.22.0's connector.py; proposed in vllm-project/vllm#43807, 2026-05-27, and
#: llm-d/llm-d#1715, 2026-06-08, said it was not yet in the current release, 0.22).
KV_BOTH_DEPRECATED = (0, 23, 0)


def _group_mode(r: Role, group: list[Role]) -> str:
    """The role's mode in its deployment: a role labelled decode (llm-d labels every server
    that is not a prefill one ``llm-d.ai/role: decode``, aggregated ones too) with no prefill
    role beside it and no KV transfer to a prefill is a unified server, not a decode without
    its prefill (PD001/PD002 would be false)."""
    mode = _mode(r)
    if mode == "decode" and r.fields.mode != "decode" and "kvTransfer" not in r.fields.role \
            and r.fields.kv_role != "kv_consumer" \
            and not any(_mode(x) == "prefill" for x in group):
        return "unified"
    return mode


def _kv_role_issues(r: Role, version: str, assumed: str | None) -> list[Issue]:
    """vLLM's kv_role against the role's mode: the spec renders kv_producer on prefill and
    kv_consumer on decode (engines/vllm.py KV_ROLES); kv_both with NixlConnector, at a release
    that deprecates it (:data:`KV_BOTH_DEPRECATED`)."""
    from ..facts.versions import parse_version
    kv_role, cmd = r.fields.kv_role, r.launch.command
    nixl = r.fields.role.get("kvTransfer", {}).get("connector") == "nixl"
    inside = ""
    if r.fields.kv_nixl_role is not None:   # the NixlConnector of a MultiConnector
        kv_role, nixl, inside = r.fields.kv_nixl_role, True, " (inside MultiConnector)"
    o = cmd.get("--kv-transfer-config") if cmd is not None else None
    if o is None or kv_role is None or r.mode not in ("prefill", "decode"):
        return []
    want = vl.KV_ROLES[r.mode]
    loc = r.launch.loc(o.index)
    if kv_role == "kv_both":
        if not nixl or parse_version(version) < KV_BOTH_DEPRECATED:
            return []
        at = f"vLLM {version}" + (", assumed (IMP008)" if assumed else "")
        return [Issue("IMP015", f"role {r.name!r} ({r.mode}) runs NixlConnector{inside} with kv_role "
                      f"kv_both, which {at} logs as deprecated (vLLM 0.23.0 vllm/distributed/"
                      f"kv_transfer/kv_connector/v1/nixl/connector.py:98); the spec renders "
                      f"{want}", loc, f"set kv_role {want}")]
    if kv_role != want:
        return [Issue("IMP015", f"role {r.name!r} is a {r.mode} role but its KV connector's"
                      f"{inside} kv_role is {kv_role}: the KV would flow the wrong way", loc,
                      f"set kv_role {want}", error=True)]
    return []


def _kv_config_issues(r: Role, network: dict | None) -> list[Issue]:
    """vLLM's ``--kv-transfer-config`` keys the spec does not hold: all but kv_connector and
    kv_role, except a ``kv_connector_extra_config`` equal to what moegen derives from the
    connector and ``network.rdma`` (engines/vllm.py kv_connector_extra)."""
    keys = list(r.fields.kv_unmodelled)
    connector = r.fields.role.get("kvTransfer", {}).get("connector")
    if "kv_connector_extra_config" in keys and connector is not None:
        from ..spec.models import Network
        try:
            rdma = Network.model_validate(network or {}).rdma
        except ValueError:
            rdma = None
        if r.fields.kv_extra == vl.kv_connector_extra(connector, rdma):
            keys.remove("kv_connector_extra_config")
    if not keys:
        return []
    o = r.launch.command.get("--kv-transfer-config")
    return [Issue("IMP005", f"{o.name} keys {', '.join(keys)} are not modelled by moegen (the "
                  "spec renders kv_connector, kv_role and the extra config network.rdma "
                  "implies)", r.launch.loc(o.index))]


def _inherited_speculative(roles: list[dict], prov: Provenance) -> None:
    """A prefill role runs its decode role's speculative config (moegen copies it there:
    engines/vllm.py and engines/sglang.py notes; the NIXL handshake compares it): the copy is
    left to moegen."""
    decode = [r.get("speculative") for r in roles if r["mode"] == "decode"]
    for i, r in enumerate(roles):
        if r["mode"] == "prefill" and r.get("speculative") is not None \
                and decode and all(d == r["speculative"] for d in decode):
            del r["speculative"]
            prov.locations.pop(("spec", "roles", i, "speculative"), None)


def _role_env(r: Role, network: dict | None, pool: dict) -> dict[str, str]:
    """The environment the role keeps: what the pod sets that moegen does not derive (a
    derived variable with another value is kept: it overrides moegen's, as in the manifest)."""
    derived = _derived_env(r, network, pool)
    managed = r.workload.labels.get(MANAGED[0]) == MANAGED[1]
    env = {}
    for k, v in r.launch.env.items():
        src = r.launch.env_sources.get(k)
        if src is None or k.startswith(("MOEGEN_", "LWS_")) or not isinstance(v, str):
            continue
        if src in ("fieldRef",) or src.startswith("secret:") or is_runtime(v) \
                or derived.get(k) == v:
            continue
        if managed and (k in ENGINE_ENV or k in KEEPALIVE_ENV.values() or k == SGLANG_KV_TIMEOUT_ENV
                        or (k in CACHE_ENV_KEYS and v.startswith(CACHE_MOUNT))
                        or (k == "HOME" and v == security.HOME)):
            continue   # moegen's startup budget, keep-alive, ports, cache directories, HOME
        if k == "VLLM_ALL2ALL_BACKEND" and r.fields.all2all_env:
            continue   # read into moe.all2all
        if r.workload.platform == "kserve" and k in KSERVE_COMMAND_ENV:
            continue   # read with the preset's command line
        if _hub_env(r, k, v):
            continue   # read into model.hub
        env[k] = v
    return env


def _hub_env(r: Role, key: str, value: str) -> bool:
    """``key=value`` is what moegen renders for model.hub (manifests/pods.py ``hub_env``):
    HF_HUB_OFFLINE (read into ``offline``), HF_HOME at the cache mount when HF_HUB_CACHE is
    not set."""
    if r.pod.hub is None:
        return False
    if key == "HF_HUB_OFFLINE":
        return value.upper() in ("1", "ON", "YES", "TRUE")
    return key == "HF_HOME" and "HF_HUB_CACHE" not in r.launch.env \
        and value.rstrip("/") == r.pod.hub.get("mountPath", DEFAULT_HF_HOME)


def _derived_env(r: Role, network: dict | None, pool: dict) -> dict[str, str]:
    """The network variables moegen derives for the role (engines/network.py; ``pool``: its
    node pool, for multi-node NVLink) and its fixed engine variables (engines/vllm.py,
    engines/sglang.py)."""
    from ..catalog import GPUS
    from ..engines.network import network_env
    from ..roles import uses_mnnvl
    from ..spec.models import KvTransfer, Moe, Network
    role = r.fields.role
    try:
        net = Network.model_validate(network or {})
        moe = Moe.model_validate(role["moe"]) if "moe" in role else None
        kvt = KvTransfer.model_validate(role["kvTransfer"]) if "kvTransfer" in role else None
    except ValueError:
        return {}
    mnnvl = pool["gpu"] in GPUS and uses_mnnvl(net, GPUS[pool["gpu"]], pool["gpusPerNode"])
    out = dict(network_env(net, moe, kvt, mnnvl))
    out.update({"VLLM_NIXL_SIDE_CHANNEL_PORT": str(vl.NIXL_SIDE_CHANNEL_PORT),
                "VLLM_MOONCAKE_BOOTSTRAP_PORT": str(vl.MOONCAKE_BOOTSTRAP_PORT),
                "SGLANG_HEALTH_CHECK_TIMEOUT": str(sg.HEALTH_CHECK_TIMEOUT_S)})
    if net.rdma is not None and net.rdma.gidIndex is not None:
        out["MC_GID_INDEX"] = str(net.rdma.gidIndex)
    return out
