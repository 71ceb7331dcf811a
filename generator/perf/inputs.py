"""The inputs a prediction rests on, shown beside it (``gen size``/``gen report``/``gen plan``):
each with its value, unit and ``basis``: ``stated`` (a field of the spec or request),
``derived`` (computed from stated fields: the inter-node bandwidth per GPU from the RDMA devices
and ``gpusPerNode``, generator/spec/bandwidth.py), ``assumed`` (a default the spec did not
state) or ``catalog`` (the GPU catalog's figures, generator/catalog)."""

from __future__ import annotations

from ..catalog import GPUS
from ..spec.bandwidth import InterNode, of_request
from ..spec.request import PlanRequest


def _entry(name: str, value, unit: str, basis: str, how: str) -> dict:
    return {"name": name, "value": value, "unit": unit, "basis": basis, "from": how}


def prediction_inputs(req: PlanRequest, inter: InterNode | None = None,
                      where: dict[str, str] | None = None,
                      basis: dict[str, str] | None = None) -> list[dict]:
    """The inputs of a prediction of ``req`` (the PlanRequest the prediction times), in a fixed
    order: the inter-node bandwidth per GPU (``inter``, default :func:`of_request` of ``req``),
    each pool's GPU figures (catalog), the workload (input/output tokens, concurrency or rate)
    and the speculative acceptance rate. ``where``: the spec field each workload input comes
    from (an InferenceDeployment states them as ``spec.traffic`` and ``roles[].sizing``;
    default: the request's ``spec.workload`` fields); ``basis``: the basis of a workload input
    that is not stated as such (an InferenceDeployment's concurrency is ``derived``: the
    decoding roles' replicas x ``sizing.concurrency``; default ``stated``)."""
    s = req.spec
    inter = inter or of_request(req)
    out = [inter.to_json()]
    for name, pool in sorted(s.nodePools.items()):
        g = GPUS[pool.gpu]
        out.append(_entry(f"gpu[{name}]", g.id, "", "catalog",
                          f"HBM {g.hbm_gbps:g} GB/s, NVLink {g.nvlink_gbps:g} GB/s (both "
                          f"directions), FP8 {g.fp8_tflops:g} / BF16 {g.bf16_tflops:g} dense "
                          f"TFLOPS; {pool.gpusPerNode} per node"))
    where = where or {}
    wl = s.workload
    for field, unit in (("inputTokens", "tokens"), ("outputTokens", "tokens"),
                        ("concurrency", "sequences"), ("requestsPerSecond", "requests/s")):
        value = getattr(wl, field)
        if value is not None:
            out.append(_entry(field, value, unit, (basis or {}).get(field, "stated"),
                              where.get(field, f"spec.workload.{field}")))
    if s.speculative is not None:
        stated = "acceptance" in s.speculative.model_fields_set
        out.append(_entry("acceptance", s.speculative.acceptance, "per draft token",
                          "stated" if stated else "assumed",
                          where.get("acceptance", "spec.speculative.acceptance") if stated
                          else f"the default {s.speculative.acceptance:g}"))
    return out


def inputs_text(inputs: list[dict]) -> list[str]:
    """One line per input: ``name: value unit (basis: from)``."""
    lines = []
    for i in inputs:
        value = f"{i['value']:,}" if isinstance(i["value"], int) else f"{i['value']:g}" \
            if isinstance(i["value"], float) else str(i["value"])
        unit = f" {i['unit']}" if i["unit"] else ""
        lines.append(f"{i['name']}: {value}{unit} ({i['basis']}: {i['from']})")
    return lines
