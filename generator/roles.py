"""One role of a deployment as every later step sees it: the validated spec pieces plus the
computed layout (:class:`RoleInput`), and how the spec's roles become them (:func:`role_inputs`).

Sizing, the engine dialects, the performance model and the rules all take a :class:`RoleInput`;
it sits below all of them (it imports only the spec, the catalog and the layout).
"""

from __future__ import annotations

from dataclasses import dataclass

from .catalog import GPUS, Gpu, ModelArch, nvl72
from .layout import RoleLayout, compute_layout
from .spec.models import (
    ENGINE_DEFAULT,
    DeploymentSpec,
    InferenceDeployment,
    KvTransfer,
    Model,
    Moe,
    Network,
    Parallel,
    Role,
    ServingSettings,
    Speculative,
    effective_serving,
)


@dataclass(frozen=True)
class RoleInput:
    """One role as the dialects see it (all fields validated already).

    Attributes:
        name, mode: role name and ``prefill`` | ``decode`` | ``unified``.
        model: the spec's ``model``.
        arch: the model's shape.
        serving: the role's effective serving settings (``models.effective_serving``).
        parallel, moe, speculative, kv_transfer: the role's spec blocks (``None`` when unset).
        network: the spec's ``network``.
        layout: the computed layout.
        pd: True when the deployment has both prefill and decode roles.
        concurrency: ``sizing.concurrency`` (sequences of maxModelLen one instance must hold;
            1 when unset).
        admission: ``sizing.concurrency`` when the spec sets it: the engine then admits that
            many sequences per instance (``--max-num-seqs`` per DP rank, SGLang
            ``--max-running-requests``) so the HBM guarantee holds; ``None`` when unset or
            ``engine-default``.
        engine_default: ``sizing.concurrency: engine-default``: no admission flag is rendered;
            the deployment model (deployment.py) sets ``concurrency`` to the engine's own
            default, computed from the role's KV pool (SGLang), 1 until then.
        graph_cap: the decode CUDA-graph batch per DP rank the engine captures up to by
            default (SGLang's ``cuda_graph_max_bs`` for the GPU and TP size) when moegen does
            not size the admission: set with ``engine_default``; ``None`` otherwise.
        speculative_from: name of the decode role whose speculative config a prefill role
            carries ("" when the role's own, or none). Prefill must run the decode's MTP/EAGLE
            config: vLLM >= 0.28.0 refuses a NIXL handshake otherwise, and both engines only
            transfer the draft layer's KV / hidden states when prefill computes them.
        mnnvl: the pods reach their peers over multi-node NVLink: an NVL72 pool (GB200/GB300,
            more GPUs in the NVLink domain than on a node) whose pods claim the spec's
            ``network.computeDomain`` IMEX channel (:func:`uses_mnnvl`).
        rank_ports: HTTP API ports per serving pod: 1, or one per local DP rank (vLLM's DP
            supervisor behind the inference gateway: ``serving.port + rank``,
            engines/gateway.py ``rank_ports``).
        engine_args: the role's ``engineArgs`` as written (the sizing reads the switches that
            change the KV pool's layout: :func:`engine_switch`).
        env: the environment the spec gives the role's engine pods (spec.network.env, then
            the role's ``env``), as (name, value) pairs: the engine settings read from it.
    """

    name: str
    mode: str
    model: Model
    arch: ModelArch
    serving: ServingSettings
    parallel: Parallel
    moe: Moe | None
    speculative: Speculative | None
    kv_transfer: KvTransfer | None
    network: Network
    layout: RoleLayout
    pd: bool
    concurrency: int = 1
    speculative_from: str = ""
    admission: int | None = None
    engine_default: bool = False
    graph_cap: int | None = None
    rank_ports: int = 1
    mnnvl: bool = False
    engine_args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    def env_value(self, name: str) -> str | None:
        """The value the role's engine pods get for ``name`` (spec.network.env, then the
        role's env, applied last), or ``None``."""
        return dict(self.env).get(name)


def carried_speculative(spec: InferenceDeployment) -> tuple[Speculative | None, str]:
    """The speculative config prefill roles run when they set none: the decode roles' one.

    Returns ``(Speculative, decode role name)``, or ``(None, "")`` when no decode role
    speculates or the decode roles disagree (rule SPD004 reports that). Prefill must run the
    decode's MTP/EAGLE config: vLLM >= 0.28.0 hashes it into the NIXL handshake
    (vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py), and SGLang's decode needs
    the draft hidden states that only a speculating prefill sends (disaggregation/prefill.py).
    """
    decodes = [r for r in spec.spec.roles if r.mode == "decode"]
    configs = {r.speculative for r in decodes}
    if len(configs) != 1 or decodes[0].speculative is None:
        return None, ""
    return decodes[0].speculative, decodes[0].name


def apart_reason(spec: DeploymentSpec, role: Role) -> str | None:
    """Why pods of ``role`` smaller than a node may not share one with each other (``None``
    when they may).

    Kubernetes places pods by their resource requests (kube-scheduler's NodeResourcesFit
    filter: https://kubernetes.io/docs/reference/scheduling/config/#scheduling-plugins), so
    instances of a few GPUs pack onto a node's GPUs, except when:

    * ``network.hostNetwork``: every pod binds the node's ports, the same ones (rule PORT002);
    * the pool's pods claim the ``network.computeDomain`` IMEX channel (:func:`uses_mnnvl`):
      every pod gets its own claim, and several pods of a node in one ComputeDomain need a
      shared claim (kubernetes-sigs/dra-driver-nvidia-gpu#309, #353);
    * ``placement.topologyKey``: one instance per topology domain (LWS exclusive-topology,
      a required pod anti-affinity for StatefulSets: manifests/pods.py);
    * the pod's own ``affinity`` has a pod anti-affinity moegen cannot read the domain of.
    """
    pool = spec.nodePools.get(role.nodePool)
    if spec.network.hostNetwork:
        return "network.hostNetwork: the pods bind the node's ports"
    if pool is not None and pool.gpu in GPUS and uses_mnnvl(spec.network, GPUS[pool.gpu],
                                                            pool.gpusPerNode):
        return "network.computeDomain: each pod claims the node's IMEX channel"
    if role.placement is not None and role.placement.topologyKey is not None:
        return f"placement.topologyKey {role.placement.topologyKey}: one instance per domain"
    # The role's pod.affinity replaces spec.pod's (generator/pods.py effective_pod: key by key).
    layers = [layer.affinity for layer in (role.pod, spec.pod)
              if layer is not None and layer.affinity is not None]
    if layers and layers[0].get("podAntiAffinity"):
        return "pod.affinity has a pod anti-affinity"
    return None


def shares_nodes(spec: DeploymentSpec, role: Role) -> bool:
    """Pods of ``role`` smaller than a node may share one (:func:`apart_reason` is None)."""
    return apart_reason(spec, role) is None


def role_inputs(spec: InferenceDeployment, arch: ModelArch | None) -> list[RoleInput | None]:
    """Each role as the dialects see it (``None`` for a role whose pool is unknown)."""
    roles: list[RoleInput | None] = []
    pd = {r.mode for r in spec.spec.roles} >= {"prefill", "decode"}
    carried, carried_from = carried_speculative(spec) if pd else (None, "")
    for role in spec.spec.roles:
        pool = spec.spec.nodePools.get(role.nodePool)
        if pool is None or arch is None:
            roles.append(None)
            continue
        p = role.parallel
        layout = compute_layout(p.tensor, p.data, p.pipeline, p.expert, role.workload,
                                pool.gpusPerNode, role.replicas, shares_nodes(spec.spec, role))
        stated = role.sizing.concurrency if isinstance(role.sizing.concurrency, int) else None
        speculative, source = role.speculative, ""
        if role.mode == "prefill" and speculative is None and carried is not None:
            speculative, source = carried, carried_from
        roles.append(RoleInput(
            name=role.name, mode=role.mode, model=spec.spec.model, arch=arch,
            serving=effective_serving(spec.spec, role), parallel=p, moe=role.moe,
            speculative=speculative, kv_transfer=role.kvTransfer,
            network=spec.spec.network, layout=layout, pd=pd,
            concurrency=stated or 1, speculative_from=source, admission=stated,
            engine_default=role.sizing.concurrency == ENGINE_DEFAULT,
            mnnvl=uses_mnnvl(spec.spec.network, GPUS[pool.gpu], pool.gpusPerNode),
            engine_args=tuple(role.engineArgs),
            env=tuple({**spec.spec.network.env, **role.env}.items())))
    return roles


def engine_switch(args: tuple[str, ...], flag: str, negated: str = "") -> bool | None:
    """A boolean switch in ``args``: True for ``flag`` (or ``flag=true``), False for
    ``negated`` (argparse's ``--no-`` form, or ``flag=false``), None when neither is given;
    the last one written wins, as argparse keeps it."""
    state: bool | None = None
    for a in args:
        name, eq, value = a.partition("=")
        if name == flag:
            state = value.lower() not in ("false", "0") if eq else True
        elif negated and name == negated:
            state = False
    return state


def uses_mnnvl(net: Network, gpu: Gpu, gpus_per_node: int) -> bool:
    """Pods of a pool talk over multi-node NVLink: an NVL72 pool whose pods claim the spec's
    ``network.computeDomain`` channel (NVIDIA DRA driver ComputeDomain; ai-dynamo/dynamo
    PR#6364, PR#8811)."""
    return net.computeDomain is not None and nvl72(gpu, gpus_per_node)
