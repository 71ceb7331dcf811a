"""The communication libraries' environment of a role (Gloo, NCCL, UCX, NVSHMEM), derived from
``spec.network`` (shared by the checks and the env files).

* GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME: the bootstrap NIC (PyTorch Gloo reads a concrete name;
  NCCL env docs).
* NCCL_IB_HCA: ``=``-prefixed exact list so mlx5_1 does not also match mlx5_10 (NCCL env docs).
* NCCL_IB_GID_INDEX: RoCE GID (NCCL env docs).
* UCX_NET_DEVICES: RDMA ports ``<hca>:1`` plus ``lo`` (NIXL's UCX backend needs a TCP/loopback
  device: sglang PR#40641, nixl#299), on NICs whose NIXL backend is UCX (:data:`NICS`: not EFA,
  where the dialects select NIXL's LIBFABRIC backend instead).
* NVSHMEM_*: DeepEP's NVSHMEM transport (NVSHMEM env docs; llm-d wide-EP manifests): IBGDA
  remote transport, bootstrap NIC, HCA list and GID index, on NICs with IBGDA (mlx5; rule NET030
  refuses DeepEP V1 across pods on the others).
* The RoCE GID index (``network.rdma.gidIndex``) goes to every RDMA library the role's pods run
  (:data:`GID_INDEX_ENV`), not to one: NCCL, NVSHMEM (DeepEP), UCX (NIXL's backend) and the
  Mooncake transfer engine each pick a GID of their own otherwise, and on a bonded RoCE NIC
  Mooncake's automatic choice returns none, so every KV transfer fails (sgl-project/sglang
  PR#30737; tests/field/mooncake-roce-gid-vllm).
* The InfiniBand partition (``network.rdma.pkeyIndex``, an index into the port's P_Key table)
  goes to the libraries that create queue pairs with a fixed index: NCCL (``NCCL_IB_PKEY``, the
  P_Key index NCCL's queue pairs take: NVIDIA/nccl@02aedae040e45a2ae37595c5a83c929f506330b9:
  src/transport/net_ib.cc ``NCCL_PARAM(IbPkey, "IB_PKEY", 0)``, ``qpAttr.pkey_index``) and
  NVSHMEM (``NVSHMEM_IB_PKEY_INDEX``, read from 3.7.0; NVSHMEM 3.6.x and older create their
  IBRC/IBGDA queue pairs at index 0, so DeepEP hangs at connection set-up on a partition that is
  not there: NVIDIA/nvshmem#82, "Fixed in 3.7.0";
  NVIDIA/nvshmem@v3.4.5-0:src/modules/transport/ibrc/ibrc.cpp:353 ``attr.pkey_index = 0``). Not
  to the KV transports: UCX (NIXL) takes ``UCX_IB_PKEY``, a P_Key VALUE (0-0x7fff) whose default
  "auto" is the port's first full-member key from index 0, not the one at ``pkeyIndex``
  (openucx/ucx src/uct/ib/base/ib_iface.c config table ``PKEY``), which moegen cannot derive
  from the index (the user sets it in ``network.env``: rule NET042); Mooncake creates its queue
  pairs at index 0 (kvcache-ai/Mooncake@0098b54c:mooncake-transfer-engine/src/transport/
  rdma_transport/rdma_endpoint.cpp doSetupConnection: rule NET043).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..spec.models import KvTransfer, Moe, Network, Rdma

#: The GID-index variable of each RDMA library, by the component that loads it: NCCL (NCCL env
#: docs: NCCL_IB_GID_INDEX), NVSHMEM (NVSHMEM env docs: NVSHMEM_IB_GID_INDEX), UCX
#: (openucx/ucx src/uct/ib/base/ib_iface.c ``GID_INDEX``, default auto: UCX_IB_GID_INDEX), the
#: Mooncake transfer engine (kvcache-ai/Mooncake mooncake-transfer-engine/src/transport/
#: rdma_transport/rdma_context.cpp reads MC_GID_INDEX; sgl-project/sglang PR#30737).
GID_INDEX_ENV = {"nccl": "NCCL_IB_GID_INDEX", "nvshmem": "NVSHMEM_IB_GID_INDEX",
                 "ucx": "UCX_IB_GID_INDEX", "mooncake": "MC_GID_INDEX"}
#: The P_Key-index variable of each library that reads one (see the module docstring).
PKEY_INDEX_ENV = {"nccl": "NCCL_IB_PKEY", "nvshmem": "NVSHMEM_IB_PKEY_INDEX"}
#: The first NVSHMEM release that reads NVSHMEM_IB_PKEY_INDEX (NVIDIA/nvshmem#82: "Fixed in 3.7.0").
NVSHMEM_PKEY_SINCE = "3.7.0"


#: NCCL's multi-node NVLink switches, rendered when the pods claim an IMEX channel
#: (``network.computeDomain``): NCCL_MNNVL_ENABLE (NCCL env docs; vllm PR#16992: without it
#: "NCCL will use TCP or IB for cross-node communication") and NCCL_CUMEM_ENABLE (MNNVL buffers
#: are cuMem fabric allocations); both in llm-d's GB200 deployment (llm-d/llm-d@cc4fbfd:guides/
#: wide-ep-lws/modelserver/gpu/vllm-deepseek-v4/deployments/oci-high-tpt).
MNNVL_ENV = (("NCCL_MNNVL_ENABLE", "1"), ("NCCL_CUMEM_ENABLE", "1"))


@dataclass(frozen=True)
class NicFamily:
    """What a family of RDMA NICs can carry (:data:`NICS`).

    Attributes:
        name: the family as users know it.
        prefixes: RDMA device names of the family (``ibv_devices``), by prefix.
        resources: device-plugin extended resources that expose it.
        ibgda: NVSHMEM's IBGDA transport (GPU-initiated RDMA) works on it: DeepEP's V1 internode
            and low-latency kernels build mlx5 work requests themselves
            (deepseek-ai/DeepEP csrc/kernels/legacy/ibgda_device.cuh:69, mlx5_wqe_ctrl_seg).
        nixl_backend: the NIXL backend KV transfer needs on it (UCX speaks verbs RC; EFA has no
            RC queue pairs and needs NIXL's LIBFABRIC plugin).
        source: where that comes from.
        mooncake_protocol: the Mooncake transfer-engine protocol on it ("rdma" opens verbs RC
            queue pairs, which EFA refuses with EOPNOTSUPP; "efa" is Mooncake's libfabric
            transport, kvcache-ai/Mooncake PR#1509; sgl-project/sglang#24838).
    """

    name: str
    prefixes: tuple[str, ...]
    resources: tuple[str, ...]
    ibgda: bool
    nixl_backend: str
    source: str
    mooncake_protocol: str = "rdma"


#: RDMA NIC families by vendor. A device list whose names match none of them is taken as mlx5's
#: (moegen's default and every example's).
NICS: tuple[NicFamily, ...] = (
    NicFamily("NVIDIA ConnectX/BlueField (mlx5)", ("mlx5",), (), True, "UCX",
              "deepseek-ai/DeepEP README (InfiniBand, RoCE) and csrc/kernels/legacy/"
              "ibgda_device.cuh (mlx5 WQEs)"),
    NicFamily("AWS EFA", ("rdmap", "efa"), ("vpc.amazonaws.com/efa",), False, "LIBFABRIC",
              "deepseek-ai/DeepEP#369 (no EFA support), vllm-project/vllm#27898 (multi-node EP "
              "on EFA: no IBGDA/DeepEP), vllm-project/vllm#41814 and ai-dynamo/nixl#909 (NIXL's "
              "UCX backend cannot do RDMA on EFA; the LIBFABRIC backend can); "
              "sgl-project/sglang#24838 (Mooncake's rdma protocol: \"Failed to create QP: "
              "Operation not supported\")", mooncake_protocol="efa"),
    NicFamily("Alibaba Cloud eRDMA", ("erdma",), ("aliyun/erdma",), False, "UCX",
              "deepseek-ai/DeepEP#759 (IBGDA is mlx5-only: internode_ll unusable on eRDMA; "
              "NCCL over it works)"),
    NicFamily("Broadcom NetXtreme (bnxt_re)", ("bnxt_re",), (), False, "UCX",
              "deepseek-ai/DeepEP#759 (NVSHMEM IBGDA is mlx5-only)"),
    NicFamily("Intel E810 (irdma)", ("irdma",), (), False, "UCX",
              "deepseek-ai/DeepEP#759 (NVSHMEM IBGDA is mlx5-only)"),
)


def nic_family(rdma: Rdma | None) -> NicFamily | None:
    """The NIC family of the spec's RDMA devices (by resource name, then device-name prefix;
    mlx5 when nothing matches), or None without RDMA."""
    if rdma is None:
        return None
    for fam in NICS:
        if rdma.resourceName in fam.resources or any(
                d.startswith(fam.prefixes) for d in rdma.devices):
            return fam
    return NICS[0]


def network_env(net: Network, moe: Moe | None,
                kv_transfer: KvTransfer | None, mnnvl: bool = False) -> list[tuple[str, str]]:
    """The role's network variables, in a fixed order (see the module docstring); ``mnnvl``:
    the role's pods use multi-node NVLink (:func:`generator.roles.uses_mnnvl`)."""
    out: list[tuple[str, str]] = []
    if net.socketInterface:
        out += [("GLOO_SOCKET_IFNAME", net.socketInterface),
                ("NCCL_SOCKET_IFNAME", net.socketInterface)]
    deepep = bool(moe and moe.all2all and moe.all2all.startswith("deepep"))
    gid = net.rdma.gidIndex if net.rdma is not None else None
    pkey = net.rdma.pkeyIndex if net.rdma is not None else None
    nic = nic_family(net.rdma)
    devices = net.rdma.devices if net.rdma is not None else []
    if net.rdma is not None:
        if devices:   # none named: NCCL uses every HCA it finds
            out.append(("NCCL_IB_HCA", "=" + ",".join(devices)))
        if gid is not None:
            out.append((GID_INDEX_ENV["nccl"], str(gid)))
        if pkey is not None:
            out.append((PKEY_INDEX_ENV["nccl"], str(pkey)))
        if kv_transfer is not None and nic.nixl_backend == "UCX":
            if devices:   # none named: UCX uses every device (UCX_NET_DEVICES default all)
                out.append(("UCX_NET_DEVICES", ",".join(f"{d}:1" for d in devices) + ",lo"))
            if gid is not None:
                out.append((GID_INDEX_ENV["ucx"], str(gid)))
                if kv_transfer.connector == "mooncake":
                    out.append((GID_INDEX_ENV["mooncake"], str(gid)))
    if deepep:
        if net.socketInterface:
            out.append(("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", net.socketInterface))
        if net.rdma is not None and nic.ibgda:
            out += [("NVSHMEM_REMOTE_TRANSPORT", "ibgda"), ("NVSHMEM_IB_ENABLE_IBGDA", "1")]
            if devices:
                out.append(("NVSHMEM_HCA_LIST", ",".join(f"{d}:1" for d in devices)))
            if gid is not None:
                out.append((GID_INDEX_ENV["nvshmem"], str(gid)))
            if pkey is not None:
                out.append((PKEY_INDEX_ENV["nvshmem"], str(pkey)))
    if mnnvl:
        out += list(MNNVL_ENV)
    return out


def env_items(derived: list[tuple[str, str]], overrides: dict[str, str]) -> list[tuple[str, str]]:
    """One value per key: derived variables in order, a user override replacing a derived value
    in place (rule NET003 warns), other user variables after them (kustomize refuses an env file
    that sets a key twice)."""
    out = [(k, overrides.get(k, v)) for k, v in derived]
    have = {k for k, _ in out}
    return out + [(k, v) for k, v in overrides.items() if k not in have]
