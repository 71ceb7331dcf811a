"""The inter-node RDMA bandwidth per GPU a performance estimate rests on, and where it comes
from: stated (``network.interNodeGbps``), derived from the RDMA devices the spec lists and the
pool's ``gpusPerNode`` (each device at ``network.rdma.deviceGbps``, or at
:data:`DEVICE_GBPS_ASSUMED` when the spec does not say), or assumed (:data:`DEFAULT_GBPS`) when
the spec gives neither. Used by the InferenceDeployment's prediction (perf/predict.py), its
durations and ``gen plan`` (capacity/search.py) alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

#: RDMA bandwidth per GPU (Gbit/s) when the spec states neither ``network.interNodeGbps`` nor
#: ``network.rdma``: one ConnectX-7 NDR port (400 Gb/s,
#: https://docs.nvidia.com/networking/display/ConnectX7VPI/Introduction) per GPU, as in the HGX
#: H100/H20 reference designs.
DEFAULT_GBPS = 400.0
#: Line rate of one RDMA device (Gbit/s) when ``network.rdma.deviceGbps`` is unset: a
#: ConnectX-7 single-port OSFP card at NDR 400 Gb/s (same page).
DEVICE_GBPS_ASSUMED = 400.0
#: The most a PlanRequest's ``network.interNodeGbps`` takes (generator/spec/request.py).
MAX_GBPS = 3200.0


@dataclass(frozen=True)
class InterNode:
    """The inter-node bandwidth per GPU, Gbit/s (``gbps``), how it was obtained (``basis``:
    ``stated``, ``derived`` or ``assumed``), the arithmetic or field it comes from (``how``) and
    which of its inputs were assumed (``assumed``: field paths)."""

    gbps: float
    basis: str
    how: str
    assumed: tuple[str, ...] = ()

    def to_json(self) -> dict:
        """``{"name", "value", "unit", "basis", "from"[, "assumed"]}`` (the prediction's
        ``inputs`` entry)."""
        out = {"name": "interNodeGbpsPerGpu", "value": round(self.gbps, 3), "unit": "Gbit/s",
               "basis": self.basis, "from": self.how}
        if self.assumed:
            out["assumed"] = list(self.assumed)
        return out

    def describe(self) -> str:
        """One line: ``200 Gbit/s per GPU (25 GB/s; derived: ...)``."""
        return (f"inter-node RDMA {self.gbps:g} Gbit/s per GPU ({self.gbps / 8:g} GB/s; "
                f"{self.basis}: {self.how})")


def inter_node(network, gpus_per_node: Iterable[int], stated: bool | None = None) -> InterNode:
    """The inter-node RDMA bandwidth per GPU of ``network`` (an InferenceDeployment's or a
    PlanRequest's ``spec.network``) on pools of ``gpus_per_node`` GPUs per node.

    ``stated``: whether ``network.interNodeGbps`` was given (default: it is not None; a
    PlanRequest's field has a default, so its caller passes whether the field was set). A
    stated value wins. Otherwise, with ``network.rdma``: len(devices) x device Gbit/s /
    gpusPerNode, the least over the pools (the slowest per GPU binds), each device at
    ``rdma.deviceGbps`` or :data:`DEVICE_GBPS_ASSUMED` (then listed in ``assumed``), at most
    :data:`MAX_GBPS`. Without either: :data:`DEFAULT_GBPS`, ``assumed``. Example: 4 devices of
    400 Gbit/s on 8 GPUs per node = 200 Gbit/s per GPU = 25 GB/s."""
    if stated is None:
        stated = network.interNodeGbps is not None
    if stated:
        return InterNode(float(network.interNodeGbps), "stated", "network.interNodeGbps")
    rdma = network.rdma
    pools = sorted(set(gpus_per_node)) or [1]
    if rdma is None:
        return InterNode(DEFAULT_GBPS, "assumed",
                         "neither network.interNodeGbps nor network.rdma is set: one "
                         f"{DEFAULT_GBPS:g} Gbit/s ConnectX-7 port per GPU",
                         ("network.interNodeGbps",))
    speed = rdma.deviceGbps or DEVICE_GBPS_ASSUMED
    gpus = pools[-1]                       # the most GPUs per node share the devices thinnest
    gbps = min(len(rdma.devices) * speed / gpus, MAX_GBPS)
    speed_txt = f"{speed:g} Gbit/s" + ("" if rdma.deviceGbps else " (assumed)")
    how = (f"{len(rdma.devices)} RDMA device{'s' if len(rdma.devices) > 1 else ''} "
           f"({', '.join(rdma.devices)}) x {speed_txt} / {gpus} GPUs per node")
    return InterNode(gbps, "derived", how, () if rdma.deviceGbps else ("network.rdma.deviceGbps",))


def of_request(req) -> InterNode:
    """:func:`inter_node` of a PlanRequest: its network over every pool it offers
    (``network.interNodeGbps`` counts as stated when the request sets it)."""
    net = req.spec.network
    return inter_node(net, [p.gpusPerNode for p in req.spec.nodePools.values()],
                      stated="interNodeGbps" in net.model_fields_set)


def resolved(req):
    """``req`` (a PlanRequest) with ``network.interNodeGbps`` set to :func:`of_request`'s value
    and still counted as not stated (so :func:`of_request` of the result says the same); the
    request itself when the value is unchanged."""
    inter = of_request(req)
    net = req.spec.network
    if inter.gbps == net.interNodeGbps:
        return req
    stated = set(net.model_fields_set)
    net = net.model_copy(update={"interNodeGbps": inter.gbps})
    net.__pydantic_fields_set__.intersection_update(stated)
    return req.model_copy(update={"spec": req.spec.model_copy(update={"network": net})})


def of_deployment(doc) -> InterNode:
    """:func:`inter_node` of an InferenceDeployment over the pools its roles run on."""
    s = doc.spec
    pools = {r.nodePool for r in s.roles}
    return inter_node(s.network, [p.gpusPerNode for n, p in s.nodePools.items() if n in pools])
