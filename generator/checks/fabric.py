"""Rules about the InfiniBand fabric the collectives run on: partitions (P_Key indices).

A pod handed an SR-IOV virtual function often sits in an InfiniBand partition whose key is not
at index 0 of the port's P_Key table. Every library that creates queue pairs must then use that
index: NCCL reads ``NCCL_IB_PKEY``, NVSHMEM (DeepEP's transport) ``NVSHMEM_IB_PKEY_INDEX`` from
3.7.0; moegen renders both from ``network.rdma.pkeyIndex`` (generator/engines/network.py).
"""

from __future__ import annotations

from ..engines.network import NVSHMEM_PKEY_SINCE, PKEY_INDEX_ENV, nic_family
from .registry import Context, Hit, W, role_path, rule

#: DeepEP's all-to-all backends that run over NVSHMEM between pods.
NVSHMEM_BACKENDS = ("deepep_low_latency", "deepep_high_throughput")


def _deepep_across_pods(ctx: Context):
    """(index, role) of the roles whose DeepEP ranks talk over the NIC (NVSHMEM)."""
    for i, r in ctx.role_items():
        if r.moe is not None and r.moe.all2all in NVSHMEM_BACKENDS and r.layout.multi_pod:
            yield i, r


def _env_value(ctx: Context, i: int, key: str) -> tuple[tuple, str] | None:
    """(path, value) of variable ``key`` as role ``i``'s pods get it from the user (the role's
    ``env`` over ``network.env``), or None."""
    role = ctx.spec.spec.roles[i]
    if key in role.env:
        return role_path(i, "env", key), role.env[key]
    if key in ctx.spec.spec.network.env:
        return ("spec", "network", "env", key), ctx.spec.spec.network.env[key]
    return None


@rule("NET040", W, "NCCL and DeepEP's NVSHMEM use the same InfiniBand partition",
      "NVIDIA/nvshmem#82 (NVSHMEM <= 3.6.x creates its IBRC/IBGDA queue pairs at P_Key index 0: "
      "on a partition elsewhere the connection set-up hangs; NVSHMEM_IB_PKEY_INDEX from 3.7.0, "
      "\"Fixed in 3.7.0\"); NCCL's index is NCCL_IB_PKEY "
      "(NVIDIA/nccl@02aedae040e45a2ae37595c5a83c929f506330b9:src/transport/net_ib.cc "
      "qpAttr.pkey_index = ncclParamIbPkey())")
def _pkey_env(ctx: Context):
    if ctx.spec.spec.network.rdma is None:
        return
    for i, r in _deepep_across_pods(ctx):
        nccl = _env_value(ctx, i, PKEY_INDEX_ENV["nccl"])
        if nccl is None or nccl[1].strip() in ("", "0"):
            continue
        nvshmem = _env_value(ctx, i, PKEY_INDEX_ENV["nvshmem"])
        if nvshmem is not None and nvshmem[1].strip() == nccl[1].strip():
            continue
        theirs = nvshmem[1] if nvshmem is not None else "0 (its default)"
        yield Hit(nccl[0],
                  f"role {r.name!r}: NCCL uses P_Key index {nccl[1]} (NCCL_IB_PKEY) but "
                  f"{r.moe.all2all}'s NVSHMEM queue pairs use index {theirs}: across its "
                  f"{len(r.layout.pods)} pods DeepEP hangs at connection set-up on a partition "
                  "the other index does not name",
                  f"set network.rdma.pkeyIndex: {nccl[1]} instead (moegen renders NCCL_IB_PKEY "
                  f"and NVSHMEM_IB_PKEY_INDEX; NVSHMEM >= {NVSHMEM_PKEY_SINCE} reads the latter)")
        return


@rule("NET041", W, "DeepEP on an InfiniBand partition needs an NVSHMEM that reads its index",
      "NVIDIA/nvshmem#82 (\"Fixed in 3.7.0\": NVSHMEM_IB_PKEY_INDEX; 3.6.x and older hard-code "
      "pkey_index 0 in the IBRC, IBGDA and IBDEVX transports: NVIDIA/nvshmem@v3.4.5-0:"
      "src/modules/transport/ibrc/ibrc.cpp:353 attr.pkey_index = 0)")
def _pkey_nvshmem(ctx: Context):
    rdma = ctx.spec.spec.network.rdma
    if rdma is None or not rdma.pkeyIndex:
        return
    nic = nic_family(rdma)
    for i, r in _deepep_across_pods(ctx):
        if not nic.ibgda:
            return   # NET030 refuses DeepEP across pods on these NICs
        yield Hit(("spec", "network", "rdma", "pkeyIndex"),
                  f"role {r.name!r}: {r.moe.all2all} spans {len(r.layout.pods)} pods on P_Key "
                  f"index {rdma.pkeyIndex}; moegen renders NVSHMEM_IB_PKEY_INDEX, which only "
                  f"NVSHMEM >= {NVSHMEM_PKEY_SINCE} reads (older releases use index 0 and DeepEP "
                  "hangs at connection set-up), and the NVSHMEM inside the engine image is not "
                  "in the spec",
                  f"check the image's NVSHMEM (pip show nvidia-nvshmem-cu12 / -cu13) is "
                  f">= {NVSHMEM_PKEY_SINCE}, or give the pods a partition at index 0")
        return
