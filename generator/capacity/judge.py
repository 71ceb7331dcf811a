"""What ``gen validate`` says about a fixed layout of ``gen plan`` (docs/spec.md §5.1): the
request as the InferenceDeployment it describes, checked by the same pipeline, and the findings
of the rule families that judge a layout. The planner sits above the pipeline; the performance
model (``generator/perf``) below it never calls back up."""

from __future__ import annotations

from ..errors import Finding
from ..pipeline import check_loaded
from ..sizing import RoleSizing
from ..spec.load import LoadedSpec, Provenance
from ..spec.request import PlanRequest
from .to_spec import deployment

#: Rule families of ``gen validate`` that judge a fixed layout (layout, pools, MoE, all-to-all,
#: overlap, prefill/decode pairing, speculative decoding, quantization, GPU support, serving
#: limits, context length). Sizing is evaluated here (SIZ001-003); what a PlanRequest cannot
#: express (network, pods, names, images, volumes, routing, placement) is not judged.
LAYOUT_FAMILIES = ("LAY", "POOL", "EP", "A2A", "OVL", "PD", "SPD", "QNT", "GPU", "SRV", "LEN",
                   "MOD")


#: Codes of those families about fields a PlanRequest does not have.
NOT_JUDGED = frozenset({"POOL005", "MOD005"})


def deployment_document(req: PlanRequest) -> dict:
    """The InferenceDeployment a fixed-layout request describes (what ``gen plan --emit``
    writes: :func:`generator.capacity.to_spec.deployment`)."""
    return deployment(req)[0]


def judge(req: PlanRequest, prov: Provenance | None) -> tuple[list[Finding], list | None]:
    """What ``gen validate`` says about the layout of a fixed-layout request (the
    :data:`LAYOUT_FAMILIES`), located in the request file; and the deployment the request
    describes, per role its role input and sizing (``generator.deployment.Deployment``: what ``gen size`` of the
    emitted spec computes, and what the fixed layout is timed on), or None where a role has
    none (an impossible layout, an unsupported release: the findings say why)."""
    checked = check_loaded(LoadedSpec(deployment_document(req), prov or Provenance(),
                                      ["<plan request>"]))
    if checked.spec is None:   # the request's roles passed the same models: a moegen bug
        raise RuntimeError("fixed-layout document: " + "; ".join(map(str, checked.findings)))
    model = checked.model
    deployed = list(zip(model.roles, model.sizing))
    if not all(r is not None and not r.layout.problem and isinstance(z, RoleSizing)
               for r, z in deployed):
        deployed = None
    return _layout_findings(checked), deployed


def _layout_findings(checked) -> list[Finding]:
    out = []
    for f in checked.findings:
        family = f.code.rstrip("0123456789")
        if family in LAYOUT_FAMILIES and f.code not in NOT_JUDGED \
                and f.path.startswith(("$.spec.roles", "$.spec.nodePools", "$.spec.serving",
                                       "$.spec.model.weights", "$.spec.model.architecture")):
            out.append(f)
    return out
