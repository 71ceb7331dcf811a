"""Rules about the InfiniBand fabric the collectives and KV transfers run on: partitions (P_Key
indices).

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


#: UCX's P_Key setting: a P_Key VALUE (0-0x7fff), "auto" the port's first full-member one
#: (openucx/ucx src/uct/ib/base/ib_iface.c config table {"PKEY", "auto", ...}).
UCX_PKEY_ENV = "UCX_IB_PKEY"


def _kv_on_partition(ctx: Context, connector: str) -> list[tuple[int, str]]:
    """(index, name) of the roles whose KV transfer runs over ``connector`` while
    ``network.rdma.pkeyIndex`` puts the collectives on a partition not at index 0."""
    rdma = ctx.spec.spec.network.rdma
    if rdma is None or not rdma.pkeyIndex:
        return []
    return [(i, r.name) for i, r in ctx.role_items()
            if r.kv_transfer is not None and r.kv_transfer.connector == connector]


@rule("NET042", W, "NIXL's UCX transfers KV on the partition network.rdma.pkeyIndex names",
      "openucx/ucx src/uct/ib/base/ib_iface.c (UCX_IB_PKEY: \"Which pkey value to use. Should "
      "be between 0 and 0x7fff. \\\"auto\\\" option selects a first valid pkey value with full "
      "membership\"; a value, not an index); NCCL_IB_PKEY is an index "
      "(NVIDIA/nccl@02aedae040e45a2ae37595c5a83c929f506330b9:src/transport/net_ib.cc)")
def _pkey_ucx(ctx: Context):
    rdma = ctx.spec.spec.network.rdma
    if rdma is None or nic_family(rdma).nixl_backend != "UCX":
        return
    roles = [n for i, n in _kv_on_partition(ctx, "nixl")
             if _env_value(ctx, i, UCX_PKEY_ENV) is None]
    if roles:
        yield Hit(("spec", "network", "rdma", "pkeyIndex"),
                  f"roles {', '.join(map(repr, roles))}: NCCL and NVSHMEM take P_Key index {rdma.pkeyIndex}, but "
                  f"NIXL's UCX backend takes {UCX_PKEY_ENV} (a P_Key value, default auto: the "
                  "port's first full-member P_Key, from index 0): where index 0 holds a "
                  "full-member key (the default partition 0xffff), KV transfers leave the "
                  "partition, or fail where the default one is not shared",
                  f"set {UCX_PKEY_ENV} in network.env to the partition's P_Key value without the "
                  f"membership bit (/sys/class/infiniband/<hca>/ports/1/pkeys/{rdma.pkeyIndex} "
                  "& 0x7fff, e.g. 0x8001 -> 0x0001)")


@rule("NET043", W, "Mooncake transfers KV on the partition network.rdma.pkeyIndex names",
      "kvcache-ai/Mooncake@0098b54c:mooncake-transfer-engine/src/transport/rdma_transport/"
      "rdma_endpoint.cpp doSetupConnection (RESET->INIT: attr.pkey_index = 0, no setting)")
def _pkey_mooncake(ctx: Context):
    rdma = ctx.spec.spec.network.rdma
    roles = [n for _, n in _kv_on_partition(ctx, "mooncake")]
    if roles:
        yield Hit(("spec", "network", "rdma", "pkeyIndex"),
                  f"roles {', '.join(map(repr, roles))}: Mooncake's transfer engine creates its queue pairs at "
                  f"P_Key index 0 whatever the partition: NCCL takes index {rdma.pkeyIndex}, "
                  "Mooncake's KV transfers the key at index 0 (another partition, or none the "
                  "peer shares)",
                  "use kvTransfer.connector: nixl (UCX takes the partition's P_Key value: "
                  "NET042), or hand the pods VFs whose partition is at index 0")
