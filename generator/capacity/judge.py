"""What ``gen validate`` says about a fixed layout of ``gen plan`` (docs/spec.md §5.1): the
request as the InferenceDeployment it describes, checked by the same pipeline, and the findings
of the rule families that judge a layout. The planner sits above the pipeline; the performance
model (``generator/perf``) below it never calls back up."""

from __future__ import annotations

from ..catalog import arch_from_config, builtin_config
from ..errors import Finding
from ..perf.decode import workload_max_len
from ..pipeline import check_loaded
from ..spec.load import LoadedSpec, Provenance
from ..spec.request import PlanRequest
from .to_spec import default_image

#: Rule families of ``gen validate`` that judge a fixed layout (layout, pools, MoE, all-to-all,
#: overlap, prefill/decode pairing, speculative decoding, quantization, GPU support, serving
#: limits, context length). Sizing is evaluated here (SIZ001-003); what a PlanRequest cannot
#: express (network, pods, names, images, volumes, routing, placement) is not judged.
LAYOUT_FAMILIES = ("LAY", "POOL", "EP", "A2A", "OVL", "PD", "SPD", "QNT", "GPU", "SRV", "LEN",
                   "MOD")


#: Codes of those families about fields a PlanRequest does not have.
NOT_JUDGED = frozenset({"POOL005", "MOD005"})


def deployment_document(req: PlanRequest) -> dict:
    """The InferenceDeployment a fixed-layout request describes: its pools, model, engine,
    serving and roles as given; placeholders (a model volume, an RDMA NIC, a socket interface)
    where an InferenceDeployment needs cluster facts the request does not carry. Role ``i`` of
    the request is role ``i`` of the document, so findings keep their paths."""
    s = req.spec
    wl = s.workload
    arch = arch_from_config(builtin_config(s.model.architecture))
    serving = {"maxModelLen": workload_max_len(arch, wl),
               "kvCacheDtype": s.constraints.kvCacheDtype}
    if s.serving is not None:
        serving |= s.serving.model_dump(exclude_none=True)
    ranks = sum(r.replicas * r.parallel.data for r in s.roles or () if r.mode != "prefill") or 1
    roles = []
    for r in s.roles or ():
        doc = r.model_dump(exclude_none=True, exclude_defaults=False)
        if r.mode != "prefill" and (r.sizing is None or r.sizing.concurrency is None):
            # The sequences an instance holds: the workload's share (one without concurrency).
            per_rank = -(-wl.concurrency // ranks) if wl.concurrency else 1
            doc["sizing"] = doc.get("sizing", {}) | {"concurrency": per_rank * r.parallel.data}
        if r.mode != "prefill" and r.speculative is None and s.speculative and arch.mtp_layers:
            doc["speculative"] = {"method": "mtp",
                                  "numSpeculativeTokens": s.speculative.numSpeculativeTokens}
        roles.append(doc)
    return {
        "apiVersion": "moegen.dev/v1alpha1", "kind": "InferenceDeployment",
        "metadata": {"name": req.metadata.name},
        "spec": {
            "model": {"name": s.model.name or s.model.architecture,
                      "architecture": s.model.architecture, "weights": s.model.weights,
                      "path": "/models/model",
                      "volume": {"persistentVolumeClaim": {"claimName": "weights"}}},
            "engine": {"name": s.engine.name, "version": s.engine.version,
                       "image": default_image(s.engine.name, s.engine.version)},
            "nodePools": {n: {"gpu": p.gpu, "gpusPerNode": p.gpusPerNode, "nodes": p.nodes}
                          for n, p in s.nodePools.items()},
            "network": {"socketInterface": "eth0",
                        "rdma": {"resourceName": "rdma/hca", "devices": ["mlx5_0"]}},
            "serving": serving,
            "roles": roles,
        },
    }


def validator_findings(req: PlanRequest, prov: Provenance | None) -> list[Finding]:
    """What ``gen validate`` says about the layout of a fixed-layout request (the
    :data:`LAYOUT_FAMILIES`), located in the request file."""
    checked = check_loaded(LoadedSpec(deployment_document(req), prov or Provenance(),
                                      ["<plan request>"]))
    if checked.spec is None:   # the request's roles passed the same models: a moegen bug
        raise RuntimeError("fixed-layout document: " + "; ".join(map(str, checked.findings)))
    out = []
    for f in checked.findings:
        family = f.code.rstrip("0123456789")
        if family in LAYOUT_FAMILIES and f.code not in NOT_JUDGED \
                and f.path.startswith(("$.spec.roles", "$.spec.nodePools", "$.spec.serving",
                                       "$.spec.model.weights", "$.spec.model.architecture")):
            out.append(f)
    return out
