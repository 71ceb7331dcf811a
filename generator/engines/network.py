"""The communication libraries' environment of a role (Gloo, NCCL, UCX, NVSHMEM), derived from
``spec.network`` (shared by the checks and the env files).

* GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME: the bootstrap NIC (PyTorch Gloo reads a concrete name;
  NCCL env docs).
* NCCL_IB_HCA: ``=``-prefixed exact list so mlx5_1 does not also match mlx5_10 (NCCL env docs).
* NCCL_IB_GID_INDEX: RoCE GID (NCCL env docs).
* UCX_NET_DEVICES: RDMA ports ``<hca>:1`` plus ``lo`` (NIXL's UCX backend needs a TCP/loopback
  device: sglang PR#40641, nixl#299).
* NVSHMEM_*: DeepEP's NVSHMEM transport (NVSHMEM env docs; llm-d wide-EP manifests): IBGDA
  remote transport, bootstrap NIC, HCA list and GID index.
"""

from __future__ import annotations

from ..spec.models import KvTransfer, Moe, Network


def network_env(net: Network, moe: Moe | None,
                kv_transfer: KvTransfer | None) -> list[tuple[str, str]]:
    """The role's network variables, in a fixed order (see the module docstring)."""
    out: list[tuple[str, str]] = []
    if net.socketInterface:
        out += [("GLOO_SOCKET_IFNAME", net.socketInterface),
                ("NCCL_SOCKET_IFNAME", net.socketInterface)]
    deepep = bool(moe and moe.all2all and moe.all2all.startswith("deepep"))
    if net.rdma is not None:
        out.append(("NCCL_IB_HCA", "=" + ",".join(net.rdma.devices)))
        if net.rdma.gidIndex is not None:
            out.append(("NCCL_IB_GID_INDEX", str(net.rdma.gidIndex)))
        if kv_transfer is not None:
            out.append(("UCX_NET_DEVICES", ",".join(f"{d}:1" for d in net.rdma.devices) + ",lo"))
    if deepep:
        if net.socketInterface:
            out.append(("NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME", net.socketInterface))
        if net.rdma is not None:
            out += [("NVSHMEM_REMOTE_TRANSPORT", "ibgda"), ("NVSHMEM_IB_ENABLE_IBGDA", "1"),
                    ("NVSHMEM_HCA_LIST", ",".join(f"{d}:1" for d in net.rdma.devices))]
            if net.rdma.gidIndex is not None:
                out.append(("NVSHMEM_IB_GID_INDEX", str(net.rdma.gidIndex)))
    return out


def env_items(derived: list[tuple[str, str]], overrides: dict[str, str]) -> list[tuple[str, str]]:
    """One value per key: derived variables in order, a user override replacing a derived value
    in place (rule NET003 warns), other user variables after them (kustomize refuses an env file
    that sets a key twice)."""
    out = [(k, overrides.get(k, v)) for k, v in derived]
    have = {k for k, _ in out}
    return out + [(k, v) for k, v in overrides.items() if k not in have]
