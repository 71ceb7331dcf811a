"""Rules about the network: bootstrap interface, derived environment, ports."""

from __future__ import annotations

from ..durations import timing_env_names
from ..engines import sglang as sg
from ..facts.versions import parse_version
from ..engines import vllm as v
from ..engines import vllm_ranks
from ..engines.caches import CACHE_ENV_KEYS
from ..engines.gateway import SIDECAR_ENGINE_PORT, has_sidecar
from ..engines.network import network_env, nic_family
from ..layout import Spread
from ..pods import effective_pod
from .registry import Context, E, Hit, W, is_vllm, role_path, rule, serving_path


@rule("NET001", W, "roles spanning pods name network.socketInterface",
      "sgl-project/sglang#3226 (Gloo connectFullMesh fails on the wrong NIC); "
      "aws-samples/aws-do-eks PR#50 (hardening on multi-homed hosts and hostNetwork); a pod "
      "network without secondary networks has eth0 and lo only, and NCCL's default skips lo "
      "(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-socket-ifname): "
      "nothing to guess there")
def _iface(ctx: Context):
    net = ctx.spec.spec.network
    if net.socketInterface:
        return
    for i, r in ctx.role_items():
        homes = _secondary_networks(ctx, i)
        if net.hostNetwork or (r.layout.multi_pod and homes):
            why = "uses hostNetwork" if net.hostNetwork else \
                f"spans {len(r.layout.pods)} pods with secondary networks ({homes})"
            yield Hit(("spec", "network", "socketInterface"),
                      f"role {r.name!r} {why} but network.socketInterface is unset: Gloo and NCCL "
                      "guess the NIC (right on a pod network with one interface, an unroutable "
                      "one on some multi-homed hosts)", "set network.socketInterface (e.g. eth0)")
            return


def _secondary_networks(ctx: Context, i: int) -> str:
    """The annotation of role ``i``'s pods that attaches interfaces beside eth0
    (:data:`MULTI_HOMED`), ``key=value``, or ``""``."""
    notes = effective_pod(ctx.spec.spec, ctx.spec.spec.roles[i]).annotations
    return next((f"{k}={notes[k]}" for k in MULTI_HOMED if notes.get(k)), "")


@rule("NET002", E, "socketInterface is a concrete interface name",
      "PyTorch Gloo reads GLOO_SOCKET_IFNAME literally (pytorch/pytorch#22978); "
      "aws-samples/aws-do-eks PR#51 (\"Unable to find address for: ^lo\")")
def _iface_syntax(ctx: Context):
    iface = ctx.spec.spec.network.socketInterface
    if iface and (iface[0] in "^=" or any(c in iface for c in "*, ")):
        yield Hit(("spec", "network", "socketInterface"),
                  f"socketInterface {iface!r} is not a concrete interface name",
                  "give one interface such as eth0; NCCL-style ^/= prefixes break Gloo")


#: Multus secondary networks (k8snetworkplumbingwg/multus-cni: the pod annotation that adds
#: interfaces net1, net2, ... or the names given as ``<network>@<ifname>``).
MULTUS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
#: The interface a pod network namespace has without hostNetwork or Multus (CNI plugins name
#: the pod's interface eth0: containernetworking/cni SPEC "CNI_IFNAME", set by the kubelet).
POD_INTERFACE = "eth0"
#: Pod annotations that attach interfaces beside eth0: Multus, and GKE multi-networking
#: (https://cloud.google.com/kubernetes-engine/docs/how-to/setup-multinetwork-support-for-pods).
MULTI_HOMED = (MULTUS_ANNOTATION, "networking.gke.io/interfaces")


@rule("NET005", E, "socketInterface exists in the pod's network namespace",
      "https://github.com/containernetworking/cni/blob/main/SPEC.md (CNI_IFNAME: the kubelet "
      "names the pod interface eth0); https://github.com/k8snetworkplumbingwg/multus-cni adds "
      "secondary interfaces net1.. only with the k8s.v1.cni.cncf.io/networks annotation: Gloo, "
      "NCCL and NVSHMEM bootstrap fail at start on a name the pod does not have")
def _iface_exists(ctx: Context):
    net = ctx.spec.spec.network
    iface = net.socketInterface
    if not iface or net.hostNetwork or iface == POD_INTERFACE \
            or iface[0] in "^=" or any(c in iface for c in "*, "):   # not a name: NET002
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        networks = effective_pod(ctx.spec.spec, role).annotations.get(MULTUS_ANNOTATION, "")
        if not networks:
            yield Hit(("spec", "network", "socketInterface"),
                      f"role {role.name!r}: interface {net.socketInterface!r} does not exist in "
                      f"the pod: without hostNetwork a pod has {POD_INTERFACE} only (and lo)",
                      f"use {POD_INTERFACE}, set network.hostNetwork: true, or attach a "
                      f"secondary network with the pod annotation {MULTUS_ANNOTATION}")
            return


#: Engine variables moegen sets (engines/vllm.py, engines/sglang.py, engines/caches.py) besides
#: the network ones (engines/network.py); a user value replaces moegen's.
ENGINE_ENV = ("VLLM_NIXL_SIDE_CHANNEL_HOST", "VLLM_NIXL_SIDE_CHANNEL_PORT",
              "VLLM_MOONCAKE_BOOTSTRAP_PORT", "VLLM_ALL2ALL_BACKEND", "VLLM_ENGINE_READY_TIMEOUT_S",
              v.MNNVL_SWITCH,
              "SGLANG_HEALTH_CHECK_TIMEOUT", "SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK",
              "SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK", "NVSHMEM_QP_DEPTH",
              "SGLANG_DISAGGREGATION_NIXL_BACKEND", "MOONCAKE_PROTOCOL",
              *CACHE_ENV_KEYS)


def _user_env(ctx: Context):
    """(path, key) of every variable the user sets: ``network.env``, then each role's ``env``."""
    for key in ctx.spec.spec.network.env:
        yield ("spec", "network", "env", key), key
    for i, role in enumerate(ctx.spec.spec.roles):
        for key in role.env:
            yield role_path(i, "env", key), key


@rule("NET003", W, "user env does not override derived variables",
      "generator/engines/network.py and the engine dialects derive these from the spec; an "
      "override can desynchronise pods (the override wins, one value per key)")
def _env_override(ctx: Context):
    derived = set(ENGINE_ENV)
    for _, r in ctx.role_items():
        derived |= {k for k, _ in network_env(r.network, r.moe, r.kv_transfer, r.mnnvl)}
        derived |= set(timing_env_names(ctx.spec, ctx.engine, r.mode))
    for path, key in _user_env(ctx):
        if key in derived:
            yield Hit(path, f"{key} is derived by moegen; {path[-2]} overrides it",
                      "set the spec field it is derived from instead")


@rule("NET004", E, "user env does not use names LeaderWorkerSet or moegen own",
      "kubernetes-sigs/lws@v0.10.0:pkg/utils/pod/pod_utils.go:108 addEnvVarsIfNotExists drops "
      "user vars named LWS_*")
def _env_lws(ctx: Context):
    for path, key in _user_env(ctx):
        if key.startswith("LWS_") or key.startswith("MOEGEN_"):
            yield Hit(path,
                      f"{key} is reserved (LWS_* are injected by LeaderWorkerSet, MOEGEN_* by moegen)",
                      "rename the variable")


@rule("PORT001", E, "ports a pod opens do not collide",
      "vLLM 0.33.0 defaults: --port 8000, --data-parallel-rpc-port 29550, --master-port 29501, "
      "NIXL 5600 + DP rank, Mooncake bootstrap 8998 "
      "(vllm-project/vllm@v0.33.0:vllm/config/parallel.py, "
      "vllm-project/vllm@v0.33.0:vllm/envs.py); the routing sidecar's engine port 8200 "
      "(generator/engines/gateway.py)")
def _ports(ctx: Context):
    if ctx.dialect is None:
        return
    for i, r in ctx.role_items():
        http = r.serving.port
        used: dict[int, str] = {}
        if not is_vllm(ctx):
            if r.layout.multi_pod:
                used[sg.DIST_INIT_PORT] = "dist-init rendezvous"
            if r.kv_transfer is not None and r.mode == "prefill":
                used[sg.BOOTSTRAP_PORT] = "disaggregation bootstrap"
        else:
            if r.layout.spread in (Spread.DATA, Spread.PER_RANK):
                used[vllm_ranks.DP_RPC_PORT] = "data-parallel RPC"
            if r.layout.spread is Spread.MODEL:
                used[vllm_ranks.MASTER_PORT] = "torch.distributed master"
            if r.kv_transfer is not None and r.kv_transfer.connector == "nixl":
                lo, hi = ctx.dialect.nixl_port_range(r.layout)
                for p in range(lo, hi + 1):
                    used.setdefault(p, "NIXL side channel")
            if r.kv_transfer is not None and r.kv_transfer.connector == "mooncake":
                used.setdefault(v.MOONCAKE_BOOTSTRAP_PORT, "Mooncake bootstrap")
        if has_sidecar(ctx.spec.spec, r.mode):
            used.setdefault(SIDECAR_ENGINE_PORT, "engine port behind the routing sidecar")
        if http in used:
            yield Hit(serving_path(ctx, i, "port"),
                      f"HTTP port {http} of role {r.name!r} collides with the {used[http]} port",
                      "choose another serving.port (8000 is the default)")


@rule("PORT002", E, "with hostNetwork, no two engine pods can share a node",
      "Kubernetes hostNetwork pods use the node's network namespace "
      "(https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/ "
      "hostNetwork): a second pod with the same ports on a node fails to bind (vLLM --port, DP "
      "RPC, NIXL side channel)")
def _host_ports(ctx: Context):
    if not ctx.spec.spec.network.hostNetwork:
        return
    for i, r in ctx.role_items():
        pool = ctx.spec.spec.nodePools[ctx.spec.spec.roles[i].nodePool]
        if r.layout.gpus_per_pod < pool.gpusPerNode:
            yield Hit(role_path(i, "workload"),
                      f"role {r.name!r} runs pods of {r.layout.gpus_per_pod} GPUs on "
                      f"{pool.gpusPerNode}-GPU nodes with hostNetwork: pods sharing a node would "
                      "bind the same host ports",
                      "use pods that take whole nodes (workload: lws or statefulset with "
                      "tensor x data x pipeline a multiple of gpusPerNode), or hostNetwork: false")


@rule("NET030", E, "DeepEP V1 across pods runs on NICs with IBGDA (mlx5)",
      "deepseek-ai/DeepEP@dd758ca:csrc/kernels/legacy/ibgda_device.cuh:69 (the internode and "
      "low-latency kernels build mlx5 work requests: NVSHMEM IBGDA is mlx5-only, "
      "deepseek-ai/DeepEP#759); deepseek-ai/DeepEP#369 and vllm-project/vllm#27898 (AWS EFA: no "
      "IBGDA, no DeepEP across nodes); generator/engines/network.py NICS")
def _deepep_nic(ctx: Context):
    nic = nic_family(ctx.spec.spec.network.rdma)
    if nic is None or nic.ibgda:
        return
    for i, r in ctx.role_items():
        a2a = r.moe.all2all if r.moe else None
        if a2a in ("deepep_low_latency", "deepep_high_throughput") and r.layout.multi_pod:
            alt = [c for c in ("deepep_v2", "pplx", "allgather_reducescatter")
                   if ctx.dialect is None or c in ctx.dialect.all2all_choices]
            yield Hit(role_path(i, "moe", "all2all"),
                      f"role {r.name!r}: {a2a} spans {len(r.layout.pods)} pods over "
                      f"{nic.name} NICs "
                      f"({', '.join(ctx.spec.spec.network.rdma.devices) or 'devices not named'}): "
                      "DeepEP's V1 internode kernels need NVSHMEM IBGDA, which drives mlx5 NICs "
                      f"only ({nic.source})",
                      f"use {' or '.join(alt)} across pods, or keep each instance in one node")


@rule("NET031", E, "SGLang's Mooncake transfer runs the protocol of the pods' NICs",
      "sgl-project/sglang#24838 (AWS EFA: \"Failed to create QP: Operation not supported\", then "
      "a segmentation fault at the first transfer: the rdma protocol was hard-coded), fixed by "
      "sgl-project/sglang#25083 (MOONCAKE_PROTOCOL, SGLang 0.5.13; python/sglang/srt/distributed/"
      "device_communicators/mooncake_transfer_engine.py); generator/engines/network.py NICS",
      engines=("sglang",))
def _mooncake_protocol(ctx: Context):
    nic = nic_family(ctx.spec.spec.network.rdma)
    if nic is None or nic.mooncake_protocol == "rdma" \
            or parse_version(ctx.spec.spec.engine.version) >= sg.MOONCAKE_PROTOCOL_SINCE:
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.kvTransfer is not None and role.kvTransfer.connector == "mooncake":
            yield Hit(role_path(i, "kvTransfer", "connector"),
                      f"role {role.name!r}: SGLang {ctx.spec.spec.engine.version} starts "
                      "Mooncake with the rdma protocol whatever the NIC, and "
                      f"{nic.name} refuses verbs RC queue pairs: the first KV transfer crashes",
                      f"use SGLang 0.5.13 or later (moegen renders MOONCAKE_PROTOCOL="
                      f"{nic.mooncake_protocol}; the image needs Mooncake built with EFA), or "
                      "connector: nixl (NIXL's LIBFABRIC backend)")


#: Connectors that register the KV cache with the NIC once (ibv_reg_mr) and then move it by RDMA.
PINNED_KV_CONNECTORS = ("nixl", "mooncake")


@rule("NET032", E, "the KV cache an RDMA connector registers stays on fixed physical pages",
      "vLLM 0.33.0 vllm/config/vllm.py:1262-1300 (\"KV connector ... is incompatible with "
      "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\": the CUDA VMM allocator remaps the KV "
      "cache behind the NIC's memory registration), added by vllm-project/vllm#41237 (before it: "
      "IBV_WC_REM_ACCESS_ERR / NIXL_ERR_REMOTE_DISCONNECT at the first inter-node transfer); "
      "sgl-project/sglang#39973 (Mooncake: the same allocator refused under EFA)")
def _expandable_segments(ctx: Context):
    for path, key in _user_env(ctx):
        if key not in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
            continue
        value = (ctx.spec.spec.network.env.get(key) if path[1] == "network"
                 else ctx.spec.spec.roles[path[2]].env.get(key)) or ""
        if "expandable_segments:true" not in value.replace(" ", "").lower():
            continue
        roles = [r for j, r in enumerate(ctx.spec.spec.roles)
                 if (path[1] == "network" or j == path[2]) and r.kvTransfer is not None
                 and r.kvTransfer.connector in PINNED_KV_CONNECTORS]
        if roles:
            yield Hit(path,
                      f"{key}=expandable_segments:True with {roles[0].kvTransfer.connector} KV "
                      f"transfer on {', '.join(repr(r.name) for r in roles)}: the allocator may "
                      "remap the KV cache to other physical pages after the connector registered "
                      "it with the NIC, so transfers read stale memory (vLLM refuses the "
                      "combination at start)",
                      "drop expandable_segments:True from the KV-transfer roles' environment")


@rule("NET090", W, "with hostNetwork, the engines' API listens beyond the pod",
      "Kubernetes hostNetwork pods bind the node's interfaces "
      "(https://kubernetes.io/docs/concepts/workloads/pods/#pod-networking); NetworkPolicy's "
      "behaviour for hostNetwork pods is undefined and most plugins do not apply it "
      "(https://kubernetes.io/docs/concepts/services-networking/network-policies/); vLLM "
      "(vllm-project/vllm@v0.33.0:vllm/entrypoints/common/cli_args.py --host, default every "
      "interface) and SGLang (--host) serve without --api-key by moegen's default")
def _host_bind(ctx: Context):
    net = ctx.spec.spec.network
    if net.hostNetwork and net.bindAddress == "all":
        yield Hit(("spec", "network", "bindAddress"),
                  "hostNetwork engine pods listen on every interface of their node: the engine "
                  "API (no --api-key) is reachable outside the Gateway and router, and usually "
                  "outside NetworkPolicy; with the inference gateway the routing sidecar too",
                  "set network.bindAddress: podIP (the engines listen on the node's pod IP "
                  "only; in a manifest: --host $(POD_IP) from fieldRef status.podIP), and firewall the API and sidecar ports on the nodes")
