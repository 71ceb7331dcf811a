"""The cross-field checks of a PlanRequest (its models: :mod:`generator.spec.request`)."""

from __future__ import annotations

from ..catalog import builtin_arch
from ..engines.registry import dialect_for
from ..errors import Finding, Severity
from ..facts.versions import UnsupportedVersion, parse_version
from ..spec.load import Provenance, json_path
from ..spec.request import PlanRequest


def request_findings(req: PlanRequest, prov: Provenance) -> list[Finding]:
    """Cross-field checks of a PlanRequest: a supported engine version (VER001); one load
    measure (PLN001); fixed roles (docs/spec.md §5.1) on known pools (POOL001), one prefill and
    one decode role or one unified role (PLN002); DSpark drafting only where it exists (PLN004);
    requests within the model's context (PLN005)."""
    out = []
    eng = req.spec.engine
    try:
        dialect_for(eng.name, eng.version)
    except UnsupportedVersion as exc:
        path = ("spec", "engine", "version")
        out.append(Finding("VER001", Severity.ERROR, json_path(path), str(exc), exc.hint,
                           prov.locate(path)))
    for i, role in enumerate(req.spec.roles or []):
        if role.nodePool not in req.spec.nodePools:
            path = ("spec", "roles", i, "nodePool")
            out.append(Finding("POOL001", Severity.ERROR, json_path(path),
                               f"role {role.name!r} names pool {role.nodePool!r}, which "
                               "spec.nodePools does not have",
                               f"pools: {', '.join(req.spec.nodePools)}", prov.locate(path)))
    modes = sorted(r.mode for r in req.spec.roles or [])
    if req.spec.roles and modes not in (["decode", "prefill"], ["unified"]):
        path = ("spec", "roles")
        out.append(Finding("PLN002", Severity.ERROR, json_path(path),
                           f"gen plan evaluates one prefill and one decode role, or one unified "
                           f"role; these roles are {', '.join(modes)}",
                           "evaluate each prefill/decode pair as its own request",
                           prov.locate(path)))
    spec = req.spec.speculative
    if spec is not None and spec.method == "dspark" and (
            eng.name != "sglang" or parse_version(eng.version) < (0, 5, 16)
            or builtin_arch(req.spec.model.architecture).engine_class
            != "DeepseekV4ForCausalLM"):
        path = ("spec", "speculative", "method")
        out.append(Finding("PLN004", Severity.ERROR, json_path(path),
                           f"DSpark drafting needs SGLang 0.5.16+ and a DeepSeek-V4 model; this "
                           f"request is {eng.name} {eng.version}, "
                           f"{req.spec.model.architecture}",
                           "method: mtp (every engine), or engine sglang >= 0.5.16 with "
                           "deepseek-v4-*", prov.locate(path)))
    wl = req.spec.workload
    context = builtin_arch(req.spec.model.architecture) \
        .max_position_embeddings
    if wl.inputTokens + wl.outputTokens > context:
        path = ("spec", "workload")
        out.append(Finding("PLN005", Severity.ERROR, json_path(path),
                           f"requests of {wl.inputTokens:,} + {wl.outputTokens:,} tokens exceed "
                           f"{req.spec.model.architecture}'s context of {context:,} tokens: the "
                           "engine refuses them", f"inputTokens + outputTokens <= {context:,}",
                           prov.locate(path)))
    if wl.concurrency is not None and wl.requestsPerSecond is not None:
        path = ("spec", "workload")
        out.append(Finding("PLN001", Severity.ERROR, json_path(path),
                           "give concurrency or requestsPerSecond, not both",
                           "concurrency: sequences in flight; requestsPerSecond: offered load",
                           prov.locate(path)))
    return out
