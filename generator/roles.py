"""One role of a deployment as every later step sees it: the validated spec pieces plus the
computed layout (:class:`RoleInput`), and how the spec's roles become them (:func:`role_inputs`).

Sizing, the engine dialects, the performance model and the rules all take a :class:`RoleInput`;
it sits below all of them (it imports only the spec, the catalog and the layout).
"""

from __future__ import annotations

import json
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
        engine_release: the spec's ``engine.version`` ("" for the planner's candidates: the
            newest behaviour), for the facts that differ by release below the dialects
            (:func:`context_limit`).
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
    engine_release: str = ""

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
            env=tuple({**spec.spec.network.env, **role.env}.items()),
            engine_release=spec.spec.engine.version))
    return roles


def engine_option(args: tuple[str, ...], flag: str) -> str | None:
    """The value of option ``flag`` in ``args`` (``--x=v`` or ``--x v``; the last one written
    wins, as argparse keeps it), or None when absent or given without a value."""
    value: str | None = None
    for j, a in enumerate(args):
        name, eq, rest = a.partition("=")
        if name != flag:
            continue
        if eq:
            value = rest
        elif j + 1 < len(args) and not args[j + 1].startswith("--"):
            value = args[j + 1]
    return value


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


#: The engine option whose JSON replaces config.json fields before the engine derives the
#: model's context (vLLM 0.33.0 vllm/engine/arg_utils.py --hf-overrides, applied in
#: vllm/transformers_utils/config.py; SGLang 0.5.23 --json-model-override-args,
#: srt/configs/model_config.py model_override_args).
CONFIG_OVERRIDES = {"vllm": "--hf-overrides", "sglang": "--json-model-override-args"}
#: The variable that lets maxModelLen pass the derived context (the engine warns instead of
#: refusing), and the values each engine reads as on: vLLM 0.33.0 vllm/envs.py
#: VLLM_ALLOW_LONG_MAX_MODEL_LEN ("1"/"true"), vllm/config/model.py _get_and_verify_max_len;
#: SGLang 0.5.23 srt/environ.py SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN (EnvBool),
#: srt/configs/model_config.py _derive_context_length.
LONG_CONTEXT_ENV = {"vllm": ("VLLM_ALLOW_LONG_MAX_MODEL_LEN", ("1", "true")),
                    "sglang": ("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN",
                               ("1", "true", "yes", "y"))}


#: vLLM 0.33.0 vllm/config/model.py _get_and_verify_max_len: the rope types whose ``factor``
#: is not multiplied into the derived length (YaRN's max_position_embeddings is already the
#: scaled one, vllm-project/vllm#56446), from :data:`VLLM_YARN_UNSCALED_SINCE`.
VLLM_UNSCALED_ROPE = ("su", "longrope", "llama3", "yarn", "deepseek_yarn",
                      "deepseek_llama_scaling")
#: The first vLLM release with vllm-project/vllm#56446 (read in the 0.29.0 and 0.30.0 wheels'
#: vllm/config/model.py). Before it, every rope type but su, longrope and llama3 multiplies
#: its factor in, and ``yarn`` starts from ``original_max_position_embeddings``: Qwen3's
#: YaRN x4 from 32,768 derives 131,072 there, 40,960 from 0.30.0.
VLLM_YARN_UNSCALED_SINCE = (0, 30, 0)
VLLM_UNSCALED_ROPE_BEFORE = ("su", "longrope", "llama3")


def _release(version: str) -> tuple[int, ...]:
    """``0.29.0`` -> (0, 29, 0); () for "" (the newest behaviour)."""
    out = []
    for part in version.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit()) if part[:1].isdigit() else ""
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


#: The config keys each engine derives the context from: vLLM 0.33.0 takes the smallest of
#: these, then ``model_max_length`` when set (model_arch_config_convertor.py
#: derive_max_model_len_and_key); SGLang 0.5.23 the first it finds, in this order
#: (srt/utils/hf_transformers/common.py CONTEXT_LENGTH_KEYS).
VLLM_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                    "model_max_length", "max_target_positions", "max_sequence_length",
                    "max_seq_length", "seq_len")
SGLANG_LENGTH_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                      "max_position_embeddings")


def _overrides(r: RoleInput, engine: str) -> dict:
    """The config fields role ``r``'s :data:`CONFIG_OVERRIDES` option sets (the last one
    written wins, as argparse keeps it: :func:`engine_option`; one that is not a JSON object is
    left to the engine's own parser), as they reach the language model's config: a model whose config nests it
    under ``text_config`` (Llama-4) takes the override's ``text_config`` object, and its flat
    keys land on the outer config (vLLM 0.33.0 vllm/config/model.py applies dict values to
    the sub-config of that name, transformers_utils/config.py updates the rest; SGLang 0.5.23
    srt/utils/hf_transformers/config.py the same)."""
    option = CONFIG_OVERRIDES.get(engine)
    found: dict = {}
    text = engine_option(r.engine_args, option) if option else None
    try:
        value = json.loads(text) if text is not None else None
    except ValueError:
        value = None
    if isinstance(value, dict):
        found = value
    if r.arch.text_config:
        nested = found.get("text_config")
        return nested if isinstance(nested, dict) else {}
    return found


def _length(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


def context_limit(r: RoleInput, engine: str) -> tuple[int, str]:
    """(tokens, where they come from) of the context role ``r``'s engine derives from the
    config as its :data:`CONFIG_OVERRIDES` option leaves it: the length keys each engine
    reads (:data:`VLLM_LENGTH_KEYS`, :data:`SGLANG_LENGTH_KEYS`), times the rope scaling
    ``factor`` of the override's rope scaling, else the config's, where the engine applies it
    (vLLM from 0.30.0: a type outside :data:`VLLM_UNSCALED_ROPE`; before, any but su,
    longrope and llama3, YaRN from its original length: :data:`VLLM_YARN_UNSCALED_SINCE`;
    SGLang 0.5.23 get_context_length: unless the scaling names
    ``original_max_position_embeddings`` or is llama3), at the role's ``engine_release``. The catalog's configs carry only
    ``max_position_embeddings`` and scalings neither engine applies (YaRN with its original
    length, llama3), so without an override the limit is that field. Qwen3's YaRN recipe for
    131,072 tokens therefore needs max_position_embeddings in the override beside the
    scaling."""
    ov = _overrides(r, engine)
    option = CONFIG_OVERRIDES.get(engine, "")
    lengths = {k: v for k in (VLLM_LENGTH_KEYS if engine != "sglang" else SGLANG_LENGTH_KEYS)
               if (v := _length(ov.get(k))) is not None}
    if "max_position_embeddings" not in lengths:
        lengths["max_position_embeddings"] = r.arch.max_position_embeddings
    given = {k: (f"{option} {k}" if k in ov else f"config.json {k}") for k in lengths}
    if engine == "sglang":
        key = next(k for k in SGLANG_LENGTH_KEYS if k in lengths)
    elif "model_max_length" in lengths:
        key = "model_max_length"
    else:
        key = min(lengths, key=lambda k: lengths[k])
    limit, where = lengths[key], given[key]
    rope, source = ov.get("rope_scaling", ov.get("rope_parameters")), option
    if not isinstance(rope, dict) and r.arch.rope_scaling is not None:
        rope, source = r.arch.rope_scaling.as_dict(), "config.json"
    if isinstance(rope, dict):
        kind = rope.get("rope_type", rope.get("type"))
        factor = rope.get("factor")
        original = rope.get("original_max_position_embeddings")
        old_vllm = engine != "sglang" and () < _release(r.engine_release) < VLLM_YARN_UNSCALED_SINCE
        if engine == "sglang":
            applies = original is None and kind != "llama3"
        elif old_vllm:
            applies = kind not in VLLM_UNSCALED_ROPE_BEFORE
            start = _length(original)
            if kind == "yarn" and start is not None:
                limit, where = start, f"{source} original_max_position_embeddings"
        else:
            applies = kind not in VLLM_UNSCALED_ROPE
        if applies and isinstance(factor, (int, float)) and not isinstance(factor, bool) \
                and factor > 0:
            limit, where = int(limit * factor), f"{where} x the {source} rope factor {factor:g}"
    return limit, where


def max_len(r: RoleInput, engine: str) -> int:
    """Tokens of one sequence role ``r`` admits: ``serving.maxModelLen``, else the context its
    engine derives (:func:`context_limit`: vLLM's and SGLang's default when no
    --max-model-len / --context-length is given)."""
    return r.serving.maxModelLen or context_limit(r, engine)[0]
