"""Leave to moegen what it would derive anyway: an imported value equal to the one moegen
computes for the role when the field is unset is removed again, so the imported spec says what
the manifest chose, not what any render contains (``gen import`` of moegen's own output gives
back the fields its spec set).

Candidates, per role, and the derivation each is compared with (the deployment model of the
spec without them, :func:`generator.deployment.build`): ``serving.maxNumBatchedTokens`` (vLLM:
the memory plan's ``batched_tokens``, engines/vllm.py), ``serving.memFractionStatic`` (SGLang:
the plan's ``utilization``, engines/sglang.py), ``serving.gpuMemoryUtilization`` (the release's
default), ``serving.maxModelLen`` (the model's ``max_position_embeddings``),
``serving.kvCacheDtype: auto``, ``pod.cpu``/``memory``/``ephemeralStorage`` (the host plan of
the role's first pod, sizing/host.py) and ``pod.shmSizeGiB`` (pods.py ``SHM_DEFAULT_GIB``);
``engineArgs`` the model needs (facts/requirements.py, rendered by both dialects).
"""

from __future__ import annotations

import copy

from ..pods import SHM_DEFAULT_GIB
from ..sizing import RoleSizing
from ..spec.load import LoadedSpec
from .build import Imported

_SERVING = ("maxNumBatchedTokens", "memFractionStatic", "gpuMemoryUtilization", "maxModelLen")
_POD = ("cpu", "memory", "ephemeralStorage")


def refine(imported: Imported) -> None:
    """Remove the candidates whose value moegen would derive (in place). Does nothing when the
    spec without them does not build (the pipeline then reports why)."""
    from ..deployment import build
    from ..spec.validate import stand_in_gpu, validate_structure
    data = copy.deepcopy(imported.data)
    removed: dict[tuple, object] = {}
    for i, role in enumerate(data["spec"]["roles"]):
        for key in _SERVING:
            if key in role.get("serving", {}):
                removed[(i, "serving", key)] = role["serving"].pop(key)
        for key in _POD:
            if key in role.get("pod", {}):
                removed[(i, "pod", key)] = role["pod"].pop(key)
    if not removed and not any("engineArgs" in r for r in data["spec"]["roles"]):
        _defaults(imported.data)
        return
    spec, findings = validate_structure(LoadedSpec(data, imported.provenance, imported.files))
    if spec is None:
        _defaults(imported.data)
        return
    spec, unknown = stand_in_gpu(spec)
    model = build(spec, imported.provenance, None)
    for (i, where, key), value in removed.items():
        # What moegen derives depends on the GPU: with gpu: unknown the manifest's values stay.
        if not unknown and _derived(model, i, where, key) == value:
            imported.data["spec"]["roles"][i][where].pop(key, None)
            imported.provenance.locations.pop(("spec", "roles", i, where, key), None)
    _required_flags(imported.data, model)
    _defaults(imported.data)


def _required_flags(data: dict, model) -> None:
    """engineArgs that are a row of facts/requirements.py for the role's model (the flags the
    dialects render for it: ``--trust-remote-code`` for Kimi-K2, ``--tokenizer-mode
    deepseek_v32``) are left to moegen."""
    from ..facts.requirements import REQUIREMENTS
    version = model.spec.spec.engine.version
    for i, role in enumerate(data["spec"]["roles"]):
        args = role.get("engineArgs")
        r = model.roles[i] if i < len(model.roles) else None
        if not args or r is None:
            continue
        for req in REQUIREMENTS:
            if req.refuse or not req.flags \
                    or not req.applies(model.engine, version, r.arch):
                continue
            n = len(req.flags)
            at = next((j for j in range(len(args) - n + 1)
                       if tuple(args[j:j + n]) == req.flags), None)
            if at is not None:
                del args[at:at + n]
        if not args:
            del role["engineArgs"]


def _derived(model, i: int, where: str, key: str):
    role = model.roles[i] if i < len(model.roles) else None
    sizing = model.sizing[i] if i < len(model.sizing) else None
    if role is None or model.dialect is None:
        return None
    if where == "pod":
        host = model.host[i] if i < len(model.host) else None
        if host is None:
            return None
        values = set()
        templates = [host.pods[:1], host.pods[1:]]   # the leader's and the workers' template
        for pods in filter(None, templates):
            pod = max(pods, key=lambda p: (p.memory_gib, p.cpu))
            values.add({"cpu": str(pod.cpu), "memory": f"{pod.memory_gib}Gi",
                        "ephemeralStorage": f"{pod.ephemeral_gib}Gi"}[key])
        return values.pop() if len(values) == 1 else None
    if key == "maxModelLen":
        return role.arch.max_position_embeddings
    if key == "gpuMemoryUtilization":
        return getattr(model.dialect, "gpu_memory_utilization_default", None)
    if not isinstance(sizing, RoleSizing):
        return None
    if key == "maxNumBatchedTokens":
        return sizing.batched_tokens if model.engine == "vllm" else None
    if key == "memFractionStatic":
        return round(sizing.utilization, 3) if model.engine == "sglang" else None
    return None


def _defaults(data: dict) -> None:
    """Values equal to the spec format's own defaults (docs/spec.md §2) are left out."""
    for role in data["spec"]["roles"]:
        serving, pod = role.get("serving", {}), role.get("pod", {})
        if serving.get("kvCacheDtype") == "auto":
            serving.pop("kvCacheDtype")
        if pod.get("shmSizeGiB") == SHM_DEFAULT_GIB:
            pod.pop("shmSizeGiB")
        par = role.get("parallel", {})
        for key in ("tensor", "data", "pipeline"):
            if par.get(key) == 1:
                par.pop(key)
        if par.get("expert") is False:
            par.pop("expert")
        for key in ("serving", "pod", "parallel"):
            if key in role and not role[key]:
                del role[key]
