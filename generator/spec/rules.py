"""Cross-field rules: the rule catalogue.

Each rule is a function registered with :func:`rule`, carrying a stable code, a severity, the
source it comes from (engine file and version, issue, or documentation) and a one-line summary.
``gen rules`` prints the catalogue. A rule yields :class:`Hit` objects (path, message with the
numbers, hint); :func:`run_rules` turns them into located findings and never stops at the first.

Rules see a :class:`Context`: the validated spec, the provenance of every field, the engine
dialect and, per role, the resolved model shape and computed layout.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Iterator

from ..catalog import ModelArch
from ..engines.common import RoleInput
from ..errors import Finding, Severity
from ..layout import Spread
from .load import Provenance, json_path
from .models import InferenceDeployment


@dataclass(frozen=True)
class Hit:
    """One violation found by a rule (path as a tuple; located by :func:`run_rules`)."""

    path: tuple
    message: str
    hint: str = ""


@dataclass(frozen=True)
class Rule:
    """A catalogue entry."""

    code: str
    severity: Severity
    summary: str
    source: str
    check: Callable[["Context"], Iterator[Hit]]


@dataclass
class Context:
    """What rules look at.

    Attributes:
        spec: the validated document.
        provenance: where each field was set.
        dialect: the engine dialect (``None`` when the engine version is unsupported; rules
            that need it are then skipped, VER001 reports the cause).
        arch: the model shape (``None`` if it could not be resolved; MOD* report why).
        roles: per role, the dialect's view (``None`` for roles whose pool is unknown).
        sizing: per role, its :class:`~generator.sizing.RoleSizing`, or a string saying why the
            role was not sized, or ``None`` (layout or pool problems are reported elsewhere).
    """

    spec: InferenceDeployment
    provenance: Provenance
    dialect: object | None
    arch: ModelArch | None
    roles: list[RoleInput | None]
    sizing: list = None  # per role: RoleSizing | str (why not sized) | None

    def __post_init__(self):
        if self.sizing is None:
            self.sizing = [None] * len(self.roles)

    def role_items(self) -> Iterator[tuple[int, RoleInput]]:
        """(index, role) for roles with a resolved pool and model."""
        for i, r in enumerate(self.roles):
            if r is not None:
                yield i, r


RULES: list[Rule] = []


def rule(code: str, severity: Severity, summary: str, source: str):
    """Register a rule function in :data:`RULES`."""
    def deco(fn: Callable[[Context], Iterator[Hit]]):
        RULES.append(Rule(code, severity, summary, source, fn))
        return fn
    return deco


E, W = Severity.ERROR, Severity.WARNING


def _role_path(i: int, *rest) -> tuple:
    return ("spec", "roles", i, *rest)


# --- model ------------------------------------------------------------------------------------

@rule("MOD001", E, "model: exactly one of architecture and config", "SPEC.md §2 (catalog ids)")
def _model_source(ctx: Context):
    m = ctx.spec.spec.model
    if (m.architecture is None) == (m.config is None):
        yield Hit(("spec", "model"),
                  "give exactly one of model.architecture and model.config "
                  f"(architecture={m.architecture!r}, config={m.config!r})",
                  "use a catalog id such as deepseek-v3, or config: path/to/config.json")


@rule("MOD004", E, "model.volume names exactly one volume source",
      "Kubernetes core/v1 Volume: one VolumeSource member per volume")
def _volume_one(ctx: Context):
    vol = ctx.spec.spec.model.volume
    if vol is not None and len(vol.sources()) != 1:
        names = ", ".join(vol.sources()) or "none"
        yield Hit(("spec", "model", "volume"),
                  f"model.volume sets {len(vol.sources())} sources ({names})",
                  "keep one; in an overlay set the base's source to null, e.g. "
                  "persistentVolumeClaim: null")


@rule("LEN001", E, "maxModelLen must not exceed the model's max_position_embeddings",
      "vLLM vllm/config/model.py (max_model_len check); SGLang server_args context_length")
def _max_len(ctx: Context):
    for i, r in ctx.role_items():
        want = r.serving["maxModelLen"]
        limit = r.arch.max_position_embeddings
        if want is not None and want > limit:
            yield Hit(_role_path(i, "serving", "maxModelLen") if _role_sets(ctx, i, "maxModelLen")
                      else ("spec", "serving", "maxModelLen"),
                      f"maxModelLen {want} exceeds the model's max_position_embeddings {limit}",
                      f"use maxModelLen <= {limit}")


@rule("QNT001", E, "tensor-parallel shards hold whole FP8 quantization blocks",
      "vLLM 0.33 model_executor/layers/quantization/utils/fp8_utils.py validate_fp8_block_shape "
      "(_moe); SGLang python/sglang/srt/layers/quantization/fp8_utils.py: weight shards must be "
      "multiples of the 128 x 128 block")
def _fp8_blocks(ctx: Context):
    from ..sizing import placement_for
    from ..sizing.params import inventory
    from ..sizing.weights import FP8_BLOCK, block_misfits
    for i, r in ctx.role_items():
        if r.arch.num_attention_heads % r.layout.tensor:
            continue  # LAY002 reports a tensor size that does not even divide the heads
        try:
            inv = inventory(r.arch.config)
        except (KeyError, TypeError, ValueError):
            continue  # SIZ005 reports a model that cannot be inventoried
        misfits = block_misfits(inv, r.model.weights, placement_for(r, ctx.spec.spec.engine.name))
        if not misfits:
            continue
        shown = "; ".join(f"{t.name} ({t.component}) splits {t.split} over {tp} GPUs into "
                          f"{size:g}-wide shards" for t, tp, size in misfits[:3])
        experts = any(t.component == "routed_experts" for t, _, _ in misfits)
        yield Hit(_role_path(i, "parallel"),
                  f"role {r.name!r}: {shown}, not multiples of the {FP8_BLOCK}-wide FP8 blocks "
                  f"of the {r.model.weights} checkpoint: the engine refuses to load",
                  "use a smaller tensor size" + (" or expert parallelism (parallel.expert: "
                                                   "true)" if experts else ""))


def _role_sets(ctx: Context, i: int, field: str) -> bool:
    role = ctx.spec.spec.roles[i]
    return role.serving is not None and getattr(role.serving, field) is not None


# --- engine -----------------------------------------------------------------------------------

@rule("ENG001", E, "the workload shape is one the engine supports",
      "SGLang has no per-rank external load-balancing mode (one launch_server per instance, "
      "python/sglang/srt/server_args.py); vLLM --data-parallel-rank")
def _engine(ctx: Context):
    if ctx.spec.spec.engine.name != "sglang":
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.workload == "pod-per-rank":
            yield Hit(_role_path(i, "workload"),
                      f"role {role.name!r}: SGLang cannot run one pod per data-parallel rank",
                      "use workload: lws or statefulset")


def _is_vllm(ctx: Context) -> bool:
    return ctx.spec.spec.engine.name == "vllm"


# --- names ------------------------------------------------------------------------------------

@rule("NAME001", E, "role names are unique", "Kubernetes object names must be unique")
def _unique_roles(ctx: Context):
    seen: dict[str, int] = {}
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.name in seen:
            yield Hit(_role_path(i, "name"),
                      f"role name {role.name!r} is already used by roles[{seen[role.name]}]",
                      "give each role its own name")
        seen.setdefault(role.name, i)


#: Longest hostname a pod may have (RFC 1123 label; pod hostnames come from pod names).
MAX_LABEL = 63


#: Longest controller (StatefulSet) name: pods get the label
#: ``controller-revision-hash: <name>-<10-char hash>``, a label value of at most 63 characters.
MAX_CONTROLLER = MAX_LABEL - 11


@rule("NAME002", E, "generated pod and controller names fit Kubernetes limits",
      "Kubernetes: pod hostname is an RFC 1123 label (<= 63); StatefulSet names + 11 <= 63 "
      "(controller-revision-hash label); LWS pods are <lws>-<group>-<worker>")
def _name_length(ctx: Context):
    base = ctx.spec.metadata.name
    for i, r in ctx.role_items():
        role = ctx.spec.spec.roles[i]
        controller = f"{base}-{role.name}-{role.replicas - 1}"
        pod = f"{controller}-{len(r.layout.pods) - 1}"
        for what, name, limit in (("pod", pod, MAX_LABEL), ("controller", controller, MAX_CONTROLLER)):
            if len(name) > limit:
                yield Hit(("metadata", "name"),
                          f"{what} name {name!r} of role {role.name!r} is {len(name)} characters; "
                          f"the limit is {limit}",
                          f"shorten metadata.name or the role name by {len(name) - limit}")
                break


# --- pools and layout -------------------------------------------------------------------------

@rule("POOL001", E, "role.nodePool names a pool of spec.nodePools", "SPEC.md §2")
def _pool_exists(ctx: Context):
    pools = ctx.spec.spec.nodePools
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.nodePool not in pools:
            yield Hit(_role_path(i, "nodePool"), f"node pool {role.nodePool!r} is not defined",
                      f"defined pools: {', '.join(sorted(pools))}")


@rule("POOL002", E, "the roles on a pool fit in its nodes",
      "SPEC.md §2 (replicas x pods must fit in the pool's nodes)")
def _pool_capacity(ctx: Context):
    need: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for i, r in ctx.role_items():
        need[ctx.spec.spec.roles[i].nodePool].append((i, r.layout.nodes_needed))
    for pool_name, uses in need.items():
        pool = ctx.spec.spec.nodePools[pool_name]
        total = sum(n for _, n in uses)
        if total > pool.nodes:
            parts = ", ".join(f"{ctx.spec.spec.roles[i].name} {n}" for i, n in uses)
            yield Hit(("spec", "nodePools", pool_name, "nodes"),
                      f"pool {pool_name!r} has {pool.nodes} nodes but its roles need {total} "
                      f"({parts})", f"set nodes: {total} or shrink the roles")


@rule("LAY001", E, "an instance's ranks can be placed on its pods",
      "SPEC.md §2 (Pods); vLLM DP places whole DP ranks per node (--data-parallel-size-local)")
def _layout_possible(ctx: Context):
    for i, r in ctx.role_items():
        if r.layout.problem:
            pool = ctx.spec.spec.nodePools[ctx.spec.spec.roles[i].nodePool]
            yield Hit(_role_path(i, "parallel"), r.layout.problem,
                      f"make tensor x pipeline divide gpusPerNode ({pool.gpusPerNode}) and data a "
                      "multiple of the pods" + (", or use workload: pod-per-rank"
                                                if _is_vllm(ctx) else ""))


@rule("LAY002", E, "tensor parallel size divides the attention heads",
      "vLLM vllm/config/model.py verify_with_parallel_config; shared/research/field-failures.md #21")
def _tp_heads(ctx: Context):
    for i, r in ctx.role_items():
        heads = r.arch.num_attention_heads
        tp = r.layout.tensor
        if heads % tp:
            ok = [t for t in (1, 2, 4, 8, 16, 32, 64) if heads % t == 0]
            yield Hit(_role_path(i, "parallel", "tensor"),
                      f"tensor {tp} does not divide the model's {heads} attention heads",
                      f"valid tensor sizes: {', '.join(map(str, ok))}")


@rule("LAY003", E, "pipeline parallel size is at most the number of layers",
      "vLLM vllm/distributed/utils.py get_pp_indices (each stage needs >= 1 layer)")
def _pp_layers(ctx: Context):
    for i, r in ctx.role_items():
        if r.layout.pipeline > r.arch.num_layers:
            yield Hit(_role_path(i, "parallel", "pipeline"),
                      f"pipeline {r.layout.pipeline} exceeds the model's {r.arch.num_layers} layers",
                      f"use pipeline <= {r.arch.num_layers}")


@rule("LAY004", E, "context parallelism is rendered for SGLang only",
      "moegen renders SGLang --attn-cp-size; the vLLM -dcp/-pcp mapping is not implemented")
def _context(ctx: Context):
    if not _is_vllm(ctx):
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.parallel.context not in (None, 1):
            yield Hit(_role_path(i, "parallel", "context"),
                      f"context {role.parallel.context} is not supported with engine vllm in this "
                      "build", "remove parallel.context, or use engine sglang")


@rule("LAY006", E, "context parallelism divides the tensor ranks",
      "SPEC.md §2 (context reuses the tensor ranks); SGLang server_args.py attn_cp_size checks")
def _context_divides(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        c = role.parallel.context
        if c and c > 1 and role.parallel.tensor % c:
            yield Hit(_role_path(i, "parallel", "context"),
                      f"context {c} does not divide tensor {role.parallel.tensor}",
                      f"use a context size that divides {role.parallel.tensor}")


@rule("LAY007", E, "the SGLang release has prefill context parallelism",
      "SGLang --enable-prefill-cp/--cp-strategy first appear in 0.5.14 (per-release option "
      "dumps); before, --attn-cp-size binds no CP strategy (python/sglang/srt/layers/cp/base.py)")
def _context_version(ctx: Context):
    if _is_vllm(ctx) or ctx.dialect is None:
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        c = role.parallel.context
        if c and c > 1 and not ctx.dialect.has("--enable-prefill-cp"):
            yield Hit(_role_path(i, "parallel", "context"),
                      f"SGLang {ctx.spec.spec.engine.version} has no --enable-prefill-cp: "
                      "--attn-cp-size alone splits no tokens",
                      "use SGLang >= 0.5.14")


@rule("LAY011", E, "SGLang context parallelism runs on prefill roles",
      "SGLang --enable-prefill-cp parallelises the prefill phase only "
      "(python/sglang/srt/arg_groups/deepseek_v4_hook.py: CP=1 on decode)")
def _context_prefill(ctx: Context):
    if _is_vllm(ctx):
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        c = role.parallel.context
        if c and c > 1 and role.mode == "decode":
            yield Hit(_role_path(i, "parallel", "context"),
                      f"decode role {role.name!r} sets context {c}: SGLang's context parallelism "
                      "splits prefill tokens; on decode it only replicates attention",
                      "remove parallel.context from decode roles")


#: SGLang 0.5.23 DeepSeek-V4 prefill CP limits (arg_groups/deepseek_v4_hook.py
#: ``validate_deepseek_v4_cp``): one attention DP group, at most 8 GPUs per TP group.
SGLANG_V4_CP_MAX_TP = 8


@rule("LAY012", E, "SGLang DeepSeek-V4 context parallelism stays within one node",
      "SGLang python/sglang/srt/arg_groups/deepseek_v4_hook.py validate_deepseek_v4_cp: "
      "attn_dp_size == 1 and tp_size <= 8 (\"Cross-machine CP has precision issues\")")
def _context_v4(ctx: Context):
    if _is_vllm(ctx):
        return
    for i, r in ctx.role_items():
        c = r.parallel.context
        if not (c and c > 1) or r.arch.family != "deepseek_v4":
            continue
        group = r.layout.tensor * r.layout.data
        if r.layout.data > 1 or group > SGLANG_V4_CP_MAX_TP:
            yield Hit(_role_path(i, "parallel"),
                      f"role {r.name!r}: DeepSeek-V4 context parallelism needs data 1 and tensor "
                      f"x data <= {SGLANG_V4_CP_MAX_TP}, got tensor {r.layout.tensor} x data "
                      f"{r.layout.data}",
                      "use tensor 8, data 1 (add pipeline stages for more GPUs)")


@rule("LAY005", E, "multi-node tensor/pipeline parallel needs vLLM >= 0.11.1",
      "vLLM 0.11.1 added --nnodes/--node-rank/--master-addr (vllm/config/parallel.py)")
def _multinode(ctx: Context):
    if ctx.dialect is None or not _is_vllm(ctx):
        return
    for i, r in ctx.role_items():
        if r.layout.spread is Spread.MODEL and not ctx.dialect.multinode:
            yield Hit(_role_path(i, "parallel"),
                      f"tensor x pipeline = {r.layout.tensor * r.layout.pipeline} GPUs spans "
                      f"{len(r.layout.pods)} pods, which needs --nnodes (vLLM >= 0.11.1); "
                      f"engine.version is {ctx.spec.spec.engine.version}",
                      "use vLLM >= 0.11.1, or fit tensor x pipeline in one node")


@rule("LAY009", E, "an instance that spans pods restarts as a group",
      "vLLM's DP/TP handshake happens only at start (vllm/v1/engine/utils.py; a headless engine "
      "waits HANDSHAKE_TIMEOUT_MINS = 5, v1/engine/core.py) and a headless node whose leader "
      "died never exits (vllm#32136); LWS RecreateGroupOnPodRestart restarts the whole group")
def _group_restart(ctx: Context):
    for i, r in ctx.role_items():
        role = ctx.spec.spec.roles[i]
        if role.workload == "statefulset" and r.layout.multi_pod:
            yield Hit(_role_path(i, "workload"),
                      f"role {r.name!r} spans {len(r.layout.pods)} pods per instance, but a "
                      "StatefulSet restarts one pod at a time: a restarted pod cannot rejoin "
                      "its running group, which then hangs or crash-loops",
                      "use workload: lws (the group restarts together), or a layout that fits "
                      "one node per instance")


@rule("LAY010", W, "DP ranks on one node share NVLink only inside one pod",
      "CUDA IPC / NVLink peer access needs the processes in one container (separate pods have "
      "separate IPC namespaces); DeepEP's intranode path uses CUDA IPC handles")
def _per_rank_nvlink(ctx: Context):
    for i, r in ctx.role_items():
        role = ctx.spec.spec.roles[i]
        pool = ctx.spec.spec.nodePools[role.nodePool]
        per_node = pool.gpusPerNode // max(1, r.layout.gpus_per_pod)
        if role.workload == "pod-per-rank" and r.layout.expert_parallel and per_node > 1:
            yield Hit(_role_path(i, "workload"),
                      f"role {r.name!r} puts up to {per_node} expert-parallel ranks of a node in "
                      "separate pods: their all-to-all cannot use NVLink between them",
                      "use workload: lws (one pod per node, ranks share NVLink)")


# --- MoE, EP, EPLB ----------------------------------------------------------------------------

@rule("EP001", E, "EPLB needs expert parallelism",
      "vLLM vllm/config/parallel.py: enable_eplb requires --enable-expert-parallel")
def _eplb_needs_ep(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        eplb = role.moe.eplb if role.moe else None
        if eplb is not None and eplb.enabled and not role.parallel.expert:
            yield Hit(_role_path(i, "moe", "eplb", "enabled"),
                      "EPLB is enabled but parallel.expert is false",
                      "set parallel.expert: true, or disable EPLB")


@rule("EP002", E, "EPLB needs more than one expert-parallel rank",
      "vLLM vllm/config/parallel.py: EPLB requires TP x DP > 1")
def _eplb_size(ctx: Context):
    for i, r in ctx.role_items():
        eplb = r.moe.eplb if r.moe else None
        if eplb is not None and eplb.enabled and r.layout.expert_parallel and r.layout.ep_size == 1:
            yield Hit(_role_path(i, "moe", "eplb", "enabled"),
                      "EPLB is enabled but tensor x data = 1 (one expert-parallel rank)",
                      "disable EPLB or use more ranks")


@rule("EP003", E, "routed + redundant experts divide evenly over the EP ranks",
      "vLLM vllm/distributed/eplb/policy/default.py asserts num_physical_experts % num_gpus == 0 "
      "(EPLB on; DeepSeek-V4's native MoE always, vllm#52435); SGLang "
      "python/sglang/srt/eplb/expert_location.py asserts (experts + redundant) % ep_size == 0 "
      "at every start, EPLB or not")
def _eplb_divisible(ctx: Context):
    for i, r in ctx.role_items():
        if not r.layout.expert_parallel or not r.arch.routed_experts:
            continue
        eplb = r.moe.eplb if r.moe else None
        eplb_on = eplb is not None and eplb.enabled
        always = not _is_vllm(ctx) or r.arch.family == "deepseek_v4"
        if not eplb_on and not always:
            continue  # vLLM's generic fused-MoE path spreads a remainder unevenly (expert_map_manager.py)
        experts = r.arch.routed_experts
        ep = r.layout.ep_size
        redundant = eplb.redundantExperts if eplb_on else 0
        total = experts + redundant
        if ep > 1 and total % ep:
            first = (ep - experts % ep) % ep
            valid = [first + k * ep for k in range(4)]
            why = "" if eplb_on else (
                " (SGLang checks this with or without EPLB)" if not _is_vllm(ctx)
                else " (DeepSeek-V4's MoE checks this with or without EPLB)")
            if eplb_on:
                path, hint = _role_path(i, "moe", "eplb", "redundantExperts"), \
                    f"valid redundantExperts: {', '.join(map(str, valid))}, ..."
            else:
                path = _role_path(i, "parallel")
                divisors = [d for d in range(1, experts + 1) if experts % d == 0 and d >= ep // 2][:4]
                hint = (f"enable EPLB with redundantExperts {first} (or {first + ep}), or use an "
                        f"expert-parallel size that divides {experts}: "
                        f"{', '.join(map(str, divisors))}")
            yield Hit(path,
                      f"{experts} routed + {redundant} redundant = {total} experts are "
                      f"not divisible by the expert-parallel size {ep} (tensor {r.layout.tensor} x "
                      f"data {r.layout.data}){why}", hint)


@rule("EP004", E, "redundant experts need EPLB",
      "vLLM vllm/config/parallel.py: num_redundant_experts != 0 requires --enable-eplb")
def _redundant_needs_eplb(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        eplb = role.moe.eplb if role.moe else None
        if eplb is not None and not eplb.enabled and eplb.redundantExperts:
            yield Hit(_role_path(i, "moe", "eplb", "redundantExperts"),
                      f"redundantExperts is {eplb.redundantExperts} but EPLB is disabled",
                      "enable EPLB or set redundantExperts: 0")


@rule("EP005", E, "round_robin expert placement needs zero redundant experts",
      "vLLM vllm/model_executor/layers/fused_moe/layer.py (round_robin falls back/raises with "
      "redundant experts); shared/BRIEF.md §2 S1")
def _placement(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        moe = role.moe
        if moe and moe.placement == "round_robin" and moe.eplb and moe.eplb.redundantExperts:
            yield Hit(_role_path(i, "moe", "placement"),
                      f"placement round_robin with {moe.eplb.redundantExperts} redundant experts",
                      "use placement: linear, or redundantExperts: 0")


@rule("EP006", W, "expert parallelism on one rank has no effect",
      "vLLM vllm/config/parallel.py: EP size = TP x DP")
def _ep_one(ctx: Context):
    for i, r in ctx.role_items():
        if r.layout.expert_parallel and r.layout.ep_size == 1:
            yield Hit(_role_path(i, "parallel", "expert"),
                      "expert: true with tensor x data = 1 gives one expert-parallel rank",
                      "set expert: false or raise data/tensor")


@rule("A2A001", E, "the all-to-all backend exists in the engine version",
      "vLLM --all2all-backend choices per release (vllm/config/parallel.py; "
      "shared/reference/engines/vllm-dialects.yaml)")
def _a2a_choice(ctx: Context):
    if ctx.dialect is None:
        return
    from ..engines import sglang as sg
    for i, role in enumerate(ctx.spec.spec.roles):
        if not (role.moe and role.moe.all2all):
            continue
        if _is_vllm(ctx):
            choices = ctx.dialect.all2all_choices
            ok = role.moe.all2all in choices
        else:
            backend = sg.A2A[role.moe.all2all][0]
            choices = [k for k, (b, _) in sg.A2A.items() if b in ctx.dialect.a2a_choices]
            ok = backend in ctx.dialect.a2a_choices
        if not ok:
            yield Hit(_role_path(i, "moe", "all2all"),
                      f"all2all {role.moe.all2all!r} is not available in "
                      f"{ctx.spec.spec.engine.name} {ctx.spec.spec.engine.version} "
                      f"(dialect {ctx.dialect.version})",
                      f"choose one of: {', '.join(choices)}")


@rule("A2A002", W, "an all-to-all backend without expert parallelism is unused",
      "vLLM vllm/distributed/device_communicators/all2all.py (used by EP MoE layers only)")
def _a2a_needs_ep(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.moe and role.moe.all2all and not role.parallel.expert:
            yield Hit(_role_path(i, "moe", "all2all"),
                      f"all2all {role.moe.all2all!r} has no effect with parallel.expert: false",
                      "set parallel.expert: true or drop moe.all2all")


#: Hidden sizes compiled into DeepEP's kernels (deepseek-ai/DeepEP csrc/kernels/legacy/launch.cuh
#: at 0b32c55, SWITCH_HIDDEN; 6144 since PR#329, vllm#21603).
DEEPEP_HIDDEN = (2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192)


@rule("A2A003", E, "DeepEP supports the model's hidden size",
      "deepseek-ai/DeepEP csrc/kernels/legacy/launch.cuh SWITCH_HIDDEN; vllm#21603")
def _deepep_hidden(ctx: Context):
    for i, r in ctx.role_items():
        if r.moe and r.moe.all2all and r.moe.all2all.startswith("deepep") \
                and r.arch.hidden_size not in DEEPEP_HIDDEN:
            yield Hit(_role_path(i, "moe", "all2all"),
                      f"DeepEP kernels are not compiled for hidden size {r.arch.hidden_size}",
                      f"supported: {', '.join(map(str, DEEPEP_HIDDEN))}; use allgather_reducescatter")


@rule("A2A004", E, "DeepEP across pods needs RDMA NICs in the pods",
      "DeepEP internode kernels run over NVSHMEM (IBGDA for low-latency: GPU-initiated RDMA, "
      "deepseek-ai/DeepEP README); without NICs NVSHMEM fails at init (sglang#12533)")
def _deepep_rdma(ctx: Context):
    for i, r in ctx.role_items():
        if r.moe and r.moe.all2all and r.moe.all2all.startswith("deepep") \
                and r.layout.multi_pod and ctx.spec.spec.network.rdma is None:
            yield Hit(_role_path(i, "moe", "all2all"),
                      f"{r.moe.all2all} spans {len(r.layout.pods)} pods but network.rdma is unset: "
                      "NVSHMEM has no RDMA NIC to reach the other pods",
                      "declare network.rdma (resourceName, devices), or use "
                      "allgather_reducescatter across pods")


#: Rank counts DeepEP's normal (high-throughput) kernels are compiled for
#: (deepseek-ai/DeepEP csrc/kernels/legacy/launch.cuh at 0b32c55, SWITCH_RANKS and
#: SWITCH_RDMA_RANKS): intranode 2, 4 or 8 ranks; internode 8 NVLink peers per node times
#: 2, 3, 4, 6, 8, 12, 16, 18 or 20 nodes.
DEEPEP_NORMAL_INTRANODE = (2, 4, 8)
DEEPEP_NORMAL_NODES = (2, 3, 4, 6, 8, 12, 16, 18, 20)
DEEPEP_NVL_PEERS = 8


def deepep_normal_rank_counts(limit: int = 256) -> list[int]:
    """Expert-parallel sizes DeepEP's normal kernels accept, up to ``limit``."""
    return sorted({*DEEPEP_NORMAL_INTRANODE,
                   *(n * DEEPEP_NVL_PEERS for n in DEEPEP_NORMAL_NODES)} & set(range(limit + 1)))


@rule("A2A009", E, "DeepEP high-throughput kernels support the expert-parallel size",
      "deepseek-ai/DeepEP csrc/kernels/legacy/launch.cuh (0b32c55) SWITCH_RANKS / "
      "SWITCH_RDMA_RANKS: EP_HOST_ASSERT \"Unsupported RDMA ranks\" at the first dispatch")
def _deepep_normal_ranks(ctx: Context):
    for i, r in ctx.role_items():
        if not (r.moe and r.moe.all2all == "deepep_high_throughput" and r.layout.expert_parallel):
            continue
        ep = r.layout.ep_size
        ok = deepep_normal_rank_counts(max(ep, 256))
        if ep not in ok:
            nodes = f" ({ep} / {DEEPEP_NVL_PEERS} = {ep / DEEPEP_NVL_PEERS:g} nodes)" \
                if ep > DEEPEP_NVL_PEERS else ""
            yield Hit(_role_path(i, "moe", "all2all"),
                      f"role {r.name!r}: DeepEP's normal kernels are not compiled for {ep} "
                      f"expert-parallel ranks{nodes}",
                      "use an expert-parallel size of "
                      f"{', '.join(map(str, [x for x in ok if x <= max(2 * ep, 64)]))}, or "
                      "deepep_low_latency (any rank count)")


# --- prefill/decode, KV transfer, speculative -------------------------------------------------

@rule("PD001", E, "a PD deployment has both prefill and decode roles",
      "vLLM disaggregated prefill: a producer and a consumer (vllm/config/kv_transfer.py)")
def _pd_pairs(ctx: Context):
    modes = [r.mode for r in ctx.spec.spec.roles]
    for want, have in (("decode", "prefill"), ("prefill", "decode")):
        if have in modes and want not in modes:
            i = modes.index(have)
            yield Hit(_role_path(i, "mode"), f"a {have} role needs a {want} role",
                      f"add a role with mode: {want}, or use mode: unified")


@rule("PD002", E, "prefill and decode roles have a KV connector",
      "vLLM vllm/config/kv_transfer.py; shared/research/field-failures.md #24")
def _pd_connector(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.mode in ("prefill", "decode") and role.kvTransfer is None:
            yield Hit(_role_path(i, "kvTransfer"),
                      f"{role.mode} role {role.name!r} has no kvTransfer: decode would recompute "
                      "every prompt", "set kvTransfer: {connector: nixl} on prefill and decode")


@rule("PD003", E, "prefill and decode use the same KV connector",
      "vLLM connectors pair by type (vllm/distributed/kv_transfer/kv_connector/factory.py)")
def _pd_same(ctx: Context):
    seen: dict[str, tuple[int, str]] = {}
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.mode in ("prefill", "decode") and role.kvTransfer is not None:
            conn = role.kvTransfer.connector
            first = next(iter(seen.values()), None)
            if first is not None and first[1] != conn:
                yield Hit(_role_path(i, "kvTransfer", "connector"),
                          f"connector {conn!r} differs from {first[1]!r} of roles[{first[0]}]",
                          "use one connector on every prefill and decode role")
            seen.setdefault(role.name, (i, conn))


@rule("PD004", E, "the KV connector exists in the engine version",
      "vLLM registered connectors per release (factory.py); MooncakeConnector from 0.13.0")
def _connector_version(ctx: Context):
    if ctx.dialect is None:
        return
    from ..engines.vllm import CONNECTORS
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.kvTransfer is None:
            continue
        conn = role.kvTransfer.connector
        if not _is_vllm(ctx):
            if conn == "lmcache":
                yield Hit(_role_path(i, "kvTransfer", "connector"),
                          "SGLang transfers KV with mooncake or nixl "
                          "(--disaggregation-transfer-backend), not lmcache",
                          "use connector: mooncake or nixl")
            continue
        cls = CONNECTORS[conn]
        if cls not in ctx.dialect.connectors:
            yield Hit(_role_path(i, "kvTransfer", "connector"),
                      f"{cls} is not registered in vLLM {ctx.spec.spec.engine.version} "
                      f"(dialect {ctx.dialect.version})",
                      "MooncakeConnector needs vLLM >= 0.13.0; or use nixl")


@rule("PD005", E, "a unified role takes only a KV-offloading connector",
      "vLLM: NIXL/Mooncake transfer KV between a producer and a consumer (kv_connector docs)")
def _unified_connector(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.mode == "unified" and role.kvTransfer and role.kvTransfer.connector != "lmcache":
            yield Hit(_role_path(i, "kvTransfer", "connector"),
                      f"connector {role.kvTransfer.connector!r} on a unified role has no peer",
                      "remove kvTransfer, use lmcache, or split into prefill and decode roles")


@rule("PD006", E, "the PD router supports the KV connector",
      "vllm-router 0.1.17 --kv-connector choices nixl, mooncake, moriio "
      "(py_src/vllm_router/router_args.py)")
def _router_connector(ctx: Context):
    if not ctx.spec.spec.router.enabled:
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.mode == "prefill" and role.kvTransfer and role.kvTransfer.connector == "lmcache":
            yield Hit(_role_path(i, "kvTransfer", "connector"),
                      ("the vLLM PD router (vllm-router)" if _is_vllm(ctx) else "SGLang's PD router (smg)")
                      + " cannot route LMCache prefill/decode pairs",
                      "use nixl or mooncake, or set router.enabled: false and bring your own proxy")


def _pd_pairs_of(ctx: Context):
    pre = [(i, r) for i, r in ctx.role_items() if r.mode == "prefill"]
    dec = [(i, r) for i, r in ctx.role_items() if r.mode == "decode"]
    for i, p in pre:
        for j, d in dec:
            yield i, p, j, d


@rule("PD007", E, "decode accepts every context prefill accepts",
      "PD: a request prefilled at maxModelLen L must fit the decode engine's max_model_len "
      "(vLLM/SGLang reject longer requests at decode)")
def _pd_len(ctx: Context):
    for i, p, j, d in _pd_pairs_of(ctx):
        lp = p.serving["maxModelLen"] or p.arch.max_position_embeddings
        ld = d.serving["maxModelLen"] or d.arch.max_position_embeddings
        if ld < lp:
            yield Hit(_len_path(ctx, j), f"decode role {d.name!r} has maxModelLen {ld} but prefill "
                      f"role {p.name!r} accepts {lp}", f"set maxModelLen {lp} on both")


@rule("PD008", E, "prefill and decode use the same KV-cache dtype",
      "KV blocks move as bytes between engines: NIXL/Mooncake need the same cache layout on both "
      "sides (vLLM nixl connector handshake compares kv_cache dtype/layout)")
def _pd_dtype(ctx: Context):
    for i, p, j, d in _pd_pairs_of(ctx):
        if p.serving["kvCacheDtype"] != d.serving["kvCacheDtype"]:
            yield Hit(_role_path(j, "serving", "kvCacheDtype") if _role_sets(ctx, j, "kvCacheDtype")
                      else _role_path(i, "serving", "kvCacheDtype"),
                      f"prefill {p.name!r} caches KV as {p.serving['kvCacheDtype']} but decode "
                      f"{d.name!r} as {d.serving['kvCacheDtype']}",
                      "use one kvCacheDtype on prefill and decode")


@rule("PD010", E, "prefill and decode GPUs pick the same attention backend",
      "vLLM hashes attn_backend_name into the NIXL handshake (vllm/distributed/kv_transfer/"
      "kv_connector/v1/nixl/metadata.py compute_nixl_compatibility_hash); MLA backends differ by "
      "GPU generation (vllm/platforms/cuda.py _get_backend_priorities: FLASHMLA on sm90, "
      "FLASHINFER_MLA on sm100), and with them the KV page layout")
def _pd_generation(ctx: Context):
    from ..catalog import GPUS
    pools = ctx.spec.spec.nodePools
    for i, p, j, d in _pd_pairs_of(ctx):
        gp = GPUS[pools[ctx.spec.spec.roles[i].nodePool].gpu]
        gd = GPUS[pools[ctx.spec.spec.roles[j].nodePool].gpu]
        if gp.generation != gd.generation:
            yield Hit(_role_path(j, "nodePool"),
                      f"prefill role {p.name!r} runs on {gp.id} ({gp.generation}) and decode role "
                      f"{d.name!r} on {gd.id} ({gd.generation}): their MLA attention backends and "
                      "KV layouts differ, so the KV transfer handshake fails",
                      "put prefill and decode on GPUs of one generation")


@rule("PD011", E, "Mooncake KV transfer has RDMA NICs",
      "both engines default the Mooncake protocol to rdma (vLLM mooncake_connector.py "
      "mooncake_protocol \"rdma\"; SGLang mooncake_transfer_engine.py); Mooncake#1382")
def _mooncake_rdma(ctx: Context):
    if ctx.spec.spec.network.rdma is not None:
        return
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.kvTransfer is not None and role.kvTransfer.connector == "mooncake":
            yield Hit(_role_path(i, "kvTransfer", "connector"),
                      f"role {role.name!r} transfers KV with Mooncake over RDMA but network.rdma "
                      "is unset: the pods have no RDMA NIC",
                      "declare network.rdma (resourceName, devices), or use connector: nixl (UCX "
                      "falls back to TCP)")


@rule("SRV003", E, "maxNumSeqs admits the sequences the role must hold",
      "vLLM --max-num-seqs is per engine (DP rank), vllm/config/scheduler.py; SGLang "
      "--max-running-requests per instance, server_args.py")
def _admission(ctx: Context):
    for i, r in ctx.role_items():
        cap = r.serving["maxNumSeqs"]
        if cap is None:
            continue
        need = -(-r.concurrency // r.layout.data) if _is_vllm(ctx) else r.concurrency
        if cap < need:
            unit = "per DP rank" if _is_vllm(ctx) else "per instance"
            yield Hit(_role_path(i, "sizing", "concurrency"),
                      f"role {r.name!r} must hold {r.concurrency} sequences ({need} {unit}) but "
                      f"maxNumSeqs admits {cap} {unit}",
                      f"raise maxNumSeqs to {need}, or lower sizing.concurrency")


@rule("PD009", E, "the router's port differs from its metrics port",
      "moegen router Deployment: --port and --prometheus-port 29000 on one container")
def _router_ports(ctx: Context):
    from ..plan import ROUTER_METRICS_PORT
    r = ctx.spec.spec.router
    pd = {x.mode for x in ctx.spec.spec.roles} >= {"prefill", "decode"}
    if r.enabled and pd and r.port == ROUTER_METRICS_PORT:
        yield Hit(("spec", "router", "port"),
                  f"router.port {r.port} is the router's metrics port", "choose another port")


@rule("A2A008", W, "prefill roles use DeepEP's high-throughput kernels",
      "DeepEP low-latency buffers hold at most 1,024 tokens per rank; prefill chunks are "
      "thousands (SGLang docs: normal for prefill, low_latency for decode)")
def _prefill_ll(ctx: Context):
    for i, role in enumerate(ctx.spec.spec.roles):
        if role.mode == "prefill" and role.moe and role.moe.all2all == "deepep_low_latency":
            yield Hit(_role_path(i, "moe", "all2all"),
                      f"prefill role {role.name!r} uses deepep_low_latency",
                      "use deepep_high_throughput for prefill")


@rule("SPD003", E, "prefill runs the decode roles' speculative config",
      "vLLM >= 0.28.0 hashes the EAGLE/MTP config into the NIXL handshake "
      "(vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py "
      "_get_speculative_compatibility_factors); SGLang decode needs the draft hidden states a "
      "speculating prefill sends (python/sglang/srt/disaggregation/prefill.py)")
def _spec_prefill_matches(ctx: Context):
    roles = ctx.spec.spec.roles
    decodes = [r for r in roles if r.mode == "decode"]
    if not decodes or len({d.speculative for d in decodes}) != 1:
        return  # no decode role, or they disagree (SPD004)
    want = decodes[0].speculative
    for i, role in enumerate(roles):
        if role.mode != "prefill" or role.speculative is None or role.speculative == want:
            continue
        theirs = (f"{want.method} with {want.numSpeculativeTokens} token(s)" if want
                  else "no speculative decoding")
        yield Hit(_role_path(i, "speculative"),
                  f"prefill role {role.name!r} speculates with {role.speculative.method} and "
                  f"{role.speculative.numSpeculativeTokens} token(s) but decode role "
                  f"{decodes[0].name!r} runs {theirs}: "
                  + ("the NIXL handshake refuses the pair" if _is_vllm(ctx)
                     else "decode cannot use what prefill sends"),
                  "remove speculative from the prefill role: it carries the decode role's config "
                  "automatically")


@rule("SPD004", E, "decode roles of a PD deployment share one speculative config",
      "any prefill instance hands requests to any decode instance, and prefill runs exactly one "
      "speculative config (see SPD003)")
def _spec_decodes_agree(ctx: Context):
    roles = ctx.spec.spec.roles
    decodes = [(i, r) for i, r in enumerate(roles) if r.mode == "decode"]
    if not any(r.mode == "prefill" for r in roles) or len({r.speculative for _, r in decodes}) < 2:
        return
    first_i, first = decodes[0]
    for i, role in decodes[1:]:
        if role.speculative != first.speculative:
            yield Hit(_role_path(i, "speculative"),
                      f"decode role {role.name!r} speculates differently from decode role "
                      f"{first.name!r} (roles[{first_i}])",
                      "give every decode role the same speculative block")


@rule("LAY008", W, "instances use whole nodes", "an instance smaller than its node leaves GPUs "
      "idle: LWS/StatefulSet pods here take one node each")
def _idle_gpus(ctx: Context):
    for i, r in ctx.role_items():
        pool = ctx.spec.spec.nodePools[ctx.spec.spec.roles[i].nodePool]
        role = ctx.spec.spec.roles[i]
        if role.workload != "pod-per-rank" and not r.layout.problem and \
                r.layout.gpus_per_pod < pool.gpusPerNode:
            yield Hit(_role_path(i, "parallel"),
                      f"role {r.name!r} pods use {r.layout.gpus_per_pod} of each node's "
                      f"{pool.gpusPerNode} GPUs; {pool.gpusPerNode - r.layout.gpus_per_pod} stay idle",
                      "size tensor x data x pipeline to a multiple of gpusPerNode")


@rule("SPD001", E, "MTP needs a checkpoint with an MTP module",
      "HF config num_nextn_predict_layers; vLLM vllm/config/speculative.py (mtp draft = target)")
def _mtp_layers(ctx: Context):
    for i, r in ctx.role_items():
        if r.speculative is not None and not r.speculative_from and r.arch.mtp_layers == 0:
            yield Hit(_role_path(i, "speculative", "method"),
                      "the model has num_nextn_predict_layers = 0: no MTP module to draft with",
                      "remove speculative, or use a checkpoint with MTP layers")


@rule("SPD002", E, "speculative tokens beyond the MTP depth must be a multiple of it",
      "vLLM 0.33 vllm/config/speculative.py: num_speculative_tokens > n_predict must be divisible")
def _mtp_tokens(ctx: Context):
    for i, r in ctx.role_items():
        sp = r.speculative
        n = r.arch.mtp_layers
        if sp is not None and not r.speculative_from and n and sp.numSpeculativeTokens > n and sp.numSpeculativeTokens % n:
            yield Hit(_role_path(i, "speculative", "numSpeculativeTokens"),
                      f"numSpeculativeTokens {sp.numSpeculativeTokens} is not a multiple of the "
                      f"model's {n} MTP layers", f"use a multiple of {n}")


@rule("SPD005", E, "SGLang runs pipeline parallelism with speculative decoding only on prefill",
      "SGLang arg_groups/validation_hook.py (0.5.21+): \"PP + speculative decoding (MTP) is "
      "only supported on prefill nodes\"; 0.5.1-0.5.20 refuse PP with any speculative "
      "algorithm (server_args.py check_server_args)")
def _sglang_pp_speculative(ctx: Context):
    if _is_vllm(ctx) or ctx.dialect is None:
        return
    for i, r in ctx.role_items():
        if r.layout.pipeline == 1 or r.speculative is None:
            continue
        if r.mode == "prefill" and ctx.dialect.pp_speculative_on_prefill:
            continue
        carried = f" (carried from decode role {r.speculative_from!r})" if r.speculative_from else ""
        where = ("SGLang >= 0.5.21 allows it on prefill roles only"
                 if ctx.dialect.pp_speculative_on_prefill
                 else f"SGLang {ctx.spec.spec.engine.version} refuses it on every role")
        yield Hit(_role_path(i, "parallel", "pipeline"),
                  f"role {r.name!r} runs pipeline {r.layout.pipeline} with speculative "
                  f"decoding{carried}: {where}",
                  "drop the pipeline stages (more tensor/expert parallelism), or speculative "
                  "decoding" + ("" if ctx.dialect.pp_speculative_on_prefill or r.mode != "prefill"
                                else ", or use SGLang >= 0.5.21"))


@rule("SRV001", E, "maxNumBatchedTokens is at least maxNumSeqs",
      "vLLM vllm/config/scheduler.py SchedulerConfig.verify_max_model_len: max_num_batched_tokens "
      "must be >= max_num_seqs")
def _batched_vs_seqs(ctx: Context):
    if not _is_vllm(ctx):
        return
    from ..sizing import RoleSizing
    for i, r in ctx.role_items():
        seqs, batched = r.serving["maxNumSeqs"], r.serving["maxNumBatchedTokens"]
        z = ctx.sizing[i] if i < len(ctx.sizing) else None
        if batched is None and isinstance(z, RoleSizing):
            batched = z.batched_tokens   # the default moegen renders (vLLM's own for this GPU)
        if seqs is not None and batched is not None and batched < seqs:
            path = (_role_path(i, "serving", "maxNumBatchedTokens")
                    if _role_sets(ctx, i, "maxNumBatchedTokens")
                    else ("spec", "serving", "maxNumBatchedTokens"))
            yield Hit(path, f"role {r.name!r}: maxNumBatchedTokens {batched} is below maxNumSeqs "
                      f"{seqs}: vLLM refuses to start", f"use maxNumBatchedTokens >= {seqs}")


@rule("SRV002", E, "memFractionStatic is an SGLang setting",
      "SGLang --mem-fraction-static (server_args.py); vLLM sizes with --gpu-memory-utilization")
def _mfs_engine(ctx: Context):
    if not _is_vllm(ctx):
        return
    for i, r in ctx.role_items():
        if r.serving.get("memFractionStatic") is not None:
            path = (_role_path(i, "serving", "memFractionStatic")
                    if _role_sets(ctx, i, "memFractionStatic")
                    else ("spec", "serving", "memFractionStatic"))
            yield Hit(path, "memFractionStatic has no meaning for vLLM",
                      "use gpuMemoryUtilization")


#: DeepEP low-latency kernels take at most this many dispatch tokens per rank
#: (shared/research/field-failures.md #11: token_dispatcher/deepep.py asserts <= 1024).
DEEPEP_LL_MAX_TOKENS = 1024


@rule("A2A005", W, "DeepEP low-latency dispatch stays within its token capacity",
      "DeepEP low-latency buffers hold <= 1024 tokens per rank (sglang token_dispatcher/deepep.py); "
      "vLLM >= 0.20 sizes the dispatch by max_num_batched_tokens")
def _deepep_tokens(ctx: Context):
    if not _is_vllm(ctx):
        return
    for i, r in ctx.role_items():
        batched = r.serving["maxNumBatchedTokens"]
        if r.moe and r.moe.all2all == "deepep_low_latency" and batched and \
                batched > DEEPEP_LL_MAX_TOKENS:
            yield Hit(_role_path(i, "moe", "all2all"),
                      f"role {r.name!r}: deepep_low_latency with maxNumBatchedTokens {batched} "
                      f"exceeds DeepEP's {DEEPEP_LL_MAX_TOKENS} dispatch tokens per rank",
                      "use deepep_high_throughput for large batches (prefill), or lower "
                      "maxNumBatchedTokens")


# --- network and ports ------------------------------------------------------------------------

@rule("NET001", E, "roles spanning pods need network.socketInterface",
      "sglang#3226 (Gloo connectFullMesh); shared/research/field-failures.md #1, #2")
def _iface(ctx: Context):
    net = ctx.spec.spec.network
    if net.socketInterface:
        return
    for i, r in ctx.role_items():
        if r.layout.multi_pod or net.hostNetwork:
            why = f"spans {len(r.layout.pods)} pods" if r.layout.multi_pod else "uses hostNetwork"
            yield Hit(("spec", "network", "socketInterface"),
                      f"role {r.name!r} {why} but network.socketInterface is unset: Gloo and NCCL "
                      "would guess the NIC", "set network.socketInterface (e.g. eth0)")
            return


@rule("NET002", E, "socketInterface is a concrete interface name",
      "PyTorch Gloo reads GLOO_SOCKET_IFNAME literally (pytorch PR#22978); aws-do-eks #51")
def _iface_syntax(ctx: Context):
    iface = ctx.spec.spec.network.socketInterface
    if iface and (iface[0] in "^=" or any(c in iface for c in "*, ")):
        yield Hit(("spec", "network", "socketInterface"),
                  f"socketInterface {iface!r} is not a concrete interface name",
                  "give one interface such as eth0; NCCL-style ^/= prefixes break Gloo")


#: Variables moegen derives; setting them in network.env overrides a derived value.
DERIVED_ENV = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX",
               "UCX_NET_DEVICES", "VLLM_NIXL_SIDE_CHANNEL_HOST", "VLLM_NIXL_SIDE_CHANNEL_PORT",
               "VLLM_MOONCAKE_BOOTSTRAP_PORT", "VLLM_ALL2ALL_BACKEND")


@rule("NET003", W, "network.env does not override derived variables",
      "moegen derives these from the spec; an override can desynchronise pods")
def _env_override(ctx: Context):
    for key in ctx.spec.spec.network.env:
        if key in DERIVED_ENV:
            yield Hit(("spec", "network", "env", key),
                      f"{key} is derived by moegen; network.env overrides it",
                      "set the spec field it is derived from instead")


@rule("NET004", E, "network.env does not use names LeaderWorkerSet owns",
      "LWS pkg/utils/pod/pod_utils.go addEnvVarsIfNotExists drops user vars named LWS_*")
def _env_lws(ctx: Context):
    for key in ctx.spec.spec.network.env:
        if key.startswith("LWS_") or key.startswith("MOEGEN_"):
            yield Hit(("spec", "network", "env", key),
                      f"{key} is reserved (LWS_* are injected by LeaderWorkerSet, MOEGEN_* by moegen)",
                      "rename the variable")


@rule("PORT001", E, "ports a pod opens do not collide",
      "vLLM defaults: --port 8000, --data-parallel-rpc-port 29550, --master-port 29501, "
      "NIXL 5600 + DP rank, Mooncake bootstrap 8998 (vllm/config/parallel.py, vllm/envs.py)")
def _ports(ctx: Context):
    if ctx.dialect is None:
        return
    from ..engines import sglang as sg
    from ..engines import vllm as v
    for i, r in ctx.role_items():
        http = r.serving["port"]
        used: dict[int, str] = {}
        if not _is_vllm(ctx):
            if r.layout.multi_pod:
                used[sg.DIST_INIT_PORT] = "dist-init rendezvous"
            if r.kv_transfer is not None and r.mode == "prefill":
                used[sg.BOOTSTRAP_PORT] = "disaggregation bootstrap"
        else:
            if r.layout.spread in (Spread.DATA, Spread.PER_RANK):
                used[v.DP_RPC_PORT] = "data-parallel RPC"
            if r.layout.spread is Spread.MODEL:
                used[v.MASTER_PORT] = "torch.distributed master"
            if r.kv_transfer is not None and r.kv_transfer.connector == "nixl":
                lo, hi = ctx.dialect.nixl_port_range(r.layout)
                for p in range(lo, hi + 1):
                    used.setdefault(p, "NIXL side channel")
            if r.kv_transfer is not None and r.kv_transfer.connector == "mooncake":
                used.setdefault(v.MOONCAKE_BOOTSTRAP_PORT, "Mooncake bootstrap")
        if http in used:
            yield Hit(_role_path(i, "serving", "port") if _role_sets(ctx, i, "port")
                      else ("spec", "serving", "port"),
                      f"HTTP port {http} of role {r.name!r} collides with the {used[http]} port",
                      "choose another serving.port (8000 is the default)")


@rule("PORT002", E, "with hostNetwork, no two engine pods can share a node",
      "Kubernetes hostNetwork pods bind the node's ports: a second pod with the same ports on a "
      "node fails to bind (vLLM --port, DP RPC, NIXL side channel)")
def _host_ports(ctx: Context):
    if not ctx.spec.spec.network.hostNetwork:
        return
    for i, r in ctx.role_items():
        pool = ctx.spec.spec.nodePools[ctx.spec.spec.roles[i].nodePool]
        if r.layout.gpus_per_pod < pool.gpusPerNode:
            yield Hit(_role_path(i, "workload"),
                      f"role {r.name!r} runs pods of {r.layout.gpus_per_pod} GPUs on "
                      f"{pool.gpusPerNode}-GPU nodes with hostNetwork: pods sharing a node would "
                      "bind the same host ports",
                      "use pods that take whole nodes (workload: lws or statefulset with "
                      "tensor x data x pipeline a multiple of gpusPerNode), or hostNetwork: false")


# --- pods -------------------------------------------------------------------------------------

@rule("POD001", E, "the pod memory limit holds /dev/shm",
      "Kubernetes charges memory-backed emptyDir to the container limit; production-stack#276")
def _shm_limit(ctx: Context):
    from ..plan import shm_gib
    for i, r in ctx.role_items():
        role = ctx.spec.spec.roles[i]
        if role.pod is None or role.pod.memory is None:
            continue
        limit_gib = _quantity_gib(role.pod.memory)
        shm = shm_gib(role, r.layout)
        if limit_gib <= shm:
            yield Hit(_role_path(i, "pod", "memory"),
                      f"memory limit {role.pod.memory} ({limit_gib:.1f} GiB) does not exceed "
                      f"/dev/shm {shm} GiB, which is charged to it",
                      f"raise pod.memory well above {shm}Gi, or lower pod.shmSizeGiB")


def _quantity_gib(q: str) -> float:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    for suffix, mult in units.items():
        if q.endswith(suffix):
            return float(q[: -len(suffix)]) * mult / 2**30
    return float(q) / 2**30


@rule("POOL004", W, "node pools select distinct nodes",
      "Kubernetes nodeSelector: pools with the same (or no) selector share nodes, so one pool's "
      "pods can land on the other's GPU type")
def _pool_overlap(ctx: Context):
    pools = ctx.spec.spec.nodePools
    if len(pools) < 2:
        return
    used = {r.nodePool for r in ctx.spec.spec.roles}
    seen: dict[tuple, str] = {}
    for name, pool in pools.items():
        if name not in used:
            continue
        key = tuple(sorted(pool.nodeSelector.items()))
        if key in seen:
            yield Hit(("spec", "nodePools", name, "nodeSelector"),
                      f"pools {seen[key]!r} and {name!r} select the same nodes "
                      f"({dict(key) or 'no nodeSelector'})",
                      "give each pool a nodeSelector that matches only its nodes (e.g. the "
                      "instance type or GPU product label)")
        seen.setdefault(key, name)


@rule("POOL003", E, "tolerations are valid Kubernetes tolerations",
      "Kubernetes core/v1 validation: value must be empty when operator is Exists; "
      "tolerationSeconds only with effect NoExecute")
def _tolerations(ctx: Context):
    for name, pool in ctx.spec.spec.nodePools.items():
        for j, t in enumerate(pool.tolerations):
            if t.operator == "Exists" and t.value:
                yield Hit(("spec", "nodePools", name, "tolerations", j, "value"),
                          f"toleration {t.key!r} has operator Exists and value {t.value!r}",
                          "drop value, or use operator: Equal")
            if t.tolerationSeconds is not None and t.effect != "NoExecute":
                yield Hit(("spec", "nodePools", name, "tolerations", j, "tolerationSeconds"),
                          f"toleration {t.key!r} sets tolerationSeconds with effect {t.effect!r}",
                          "tolerationSeconds applies to effect NoExecute only")


_TAG_VERSION = __import__("re").compile(r"v?(\d+\.\d+\.\d+)")


@rule("ENG002", W, "the image tag names the engine version the flags are rendered for",
      "shared/research/field-failures.md #23 (flags rendered for one version, image of another)")
def _image_version(ctx: Context):
    eng = ctx.spec.spec.engine
    repo = eng.image.rsplit(":", 1)[0].lower() if ":" in eng.image.rsplit("/", 1)[-1] else eng.image.lower()
    other = {"vllm": "sglang", "sglang": "vllm"}[eng.name]
    if other in repo and eng.name not in repo:
        yield Hit(("spec", "engine", "image"),
                  f"image {eng.image!r} looks like a {other} image but engine.name is {eng.name}",
                  f"use a {eng.name} image, or set engine.name: {other}")
        return
    tag = eng.image.rsplit("/", 1)[-1].partition(":")[2].split("@")[0]
    if tag in ("", "latest", "nightly", "main") and "@" not in eng.image:
        yield Hit(("spec", "engine", "image"),
                  f"image {eng.image!r} has no pinned tag: the flags are rendered for "
                  f"{eng.name} {eng.version}, the image may be another release",
                  f"pin the tag of {eng.version} (or a digest)")
        return
    m = _TAG_VERSION.match(tag)
    if m and m.group(1) != eng.version.split("+")[0][: len(m.group(1))]:
        yield Hit(("spec", "engine", "image"),
                  f"image tag {tag!r} suggests {eng.name} {m.group(1)}, but the flags are rendered "
                  f"for engine.version {eng.version}",
                  "make engine.version match the image")


#: Label keys moegen sets on every object (a user value would be overwritten).
OWN_LABELS = ("app.kubernetes.io/name", "app.kubernetes.io/instance",
              "app.kubernetes.io/component", "app.kubernetes.io/managed-by")


@rule("NAME003", W, "metadata.labels do not use keys moegen sets", "moegen plan.py label scheme")
def _own_labels(ctx: Context):
    for key in ctx.spec.metadata.labels:
        if key in OWN_LABELS or key.startswith("moegen.dev/"):
            yield Hit(("metadata", "labels", key), f"label {key!r} is set by moegen; "
                      "your value would be replaced", "use another label key")


# --- HBM sizing ---------------------------------------------------------------------------

def _sized(ctx: Context):
    from ..sizing import RoleSizing
    for i, r in ctx.role_items():
        z = ctx.sizing[i]
        if isinstance(z, RoleSizing):
            yield i, r, z


def _breakdown(z) -> str:
    if z.engine == "sglang":
        return (f"weights {z.weights:.1f} GiB in a static pool of mem_fraction_static "
                f"{z.utilization:g} x {z.budget / z.utilization:.1f} = {z.budget:.1f} GiB per "
                f"{z.gpu}")
    return (f"weights {z.weights:.1f} + activation {z.activation:.1f} + overhead {z.overhead:.1f} "
            f"GiB against a budget of {z.utilization:g} x {z.gpu_memory:.2f} = {z.budget:.1f} GiB "
            f"per {z.gpu}")


def _len_path(ctx: Context, i: int) -> tuple:
    return (_role_path(i, "serving", "maxModelLen") if _role_sets(ctx, i, "maxModelLen")
            else ("spec", "serving", "maxModelLen"))


def _what_if(ctx: Context, i: int, r: RoleInput, z) -> list[str]:
    """Changes that raise the KV capacity of role i, each with the concurrency per rank it gives."""
    import dataclasses

    from ..sizing import size_role
    from ..catalog import GPUS
    gpu = GPUS[ctx.spec.spec.nodePools[ctx.spec.spec.roles[i].nodePool].gpu]
    out = []

    def conc(role):
        try:
            alt = size_role(role, gpu, ctx.spec.spec.engine.name, ctx.dialect.version)
        except Exception:  # noqa: BLE001 - a what-if that cannot be sized is simply not offered
            return None
        return alt.max_concurrency
    if r.serving["kvCacheDtype"] == "auto":
        c = conc(dataclasses.replace(r, serving={**r.serving, "kvCacheDtype": "fp8"}))
        if c is not None and c > z.max_concurrency:
            out.append(f"kvCacheDtype: fp8 gives {c:.1f} per rank")
    moe = r.moe
    if moe and moe.eplb and moe.eplb.enabled and moe.eplb.redundantExperts:
        eplb0 = moe.eplb.model_copy(update={"redundantExperts": 0})
        c = conc(dataclasses.replace(r, moe=moe.model_copy(update={"eplb": eplb0})))
        if c is not None and c > z.max_concurrency:
            out.append(f"redundantExperts: 0 gives {c:.1f}")
    return out


def _sglang_mfs_room(z) -> float | None:
    """The largest mem_fraction_static that still leaves activations, CUDA graphs and buffers
    (+ 1 GiB) outside SGLang's static pool, if it is above the one planned."""
    pre = z.budget / z.utilization
    best = math.floor((1 - (z.activation + z.overhead + 1.0) / pre) * 1000) / 1000
    return best if best > z.utilization + 0.005 else None


def _freers(r: RoleInput, z) -> list[str]:
    """Settings that free memory for the KV cache, as hint fragments."""
    out = []
    if z.engine == "sglang":
        room = _sglang_mfs_room(z)
        if room:
            out.append(f"memFractionStatic: {room:g} (SGLang's default reserve is conservative "
                       f"here; {z.activation + z.overhead:.1f} GiB must stay outside the pool)")
    if r.serving["kvCacheDtype"] == "auto":
        out.append("kvCacheDtype: fp8 halves the KV per token")
    if not r.serving["enforceEager"] and z.overhead > z.comm + 1.0:
        out.append("enforceEager: true drops the CUDA-graph reserve")
    if z.engine == "vllm" and z.utilization < 0.95:
        out.append(f"gpuMemoryUtilization up to 0.95 adds {(0.95 - z.utilization) * z.gpu_memory:.1f} GiB")
    out.append("more tensor/expert parallelism spreads the weights")
    return out


@rule("SIZ001", E, "weights and fixed overheads fit in the engine's memory budget",
      "vLLM vllm/v1/worker/gpu_worker.py determine_available_memory (KV = budget - non-KV)")
def _siz_fit(ctx: Context):
    for i, r, z in _sized(ctx):
        if z.kv_cache <= 0:
            top = sorted(z.weights_by_component.items(), key=lambda kv: -kv[1])[:3]
            parts = ", ".join(f"{k} {v:.1f}" for k, v in top)
            room = _sglang_mfs_room(z) if z.engine == "sglang" else None
            pinned = r.serving.get("memFractionStatic") or r.serving["gpuMemoryUtilization"]
            if room and not pinned and room * z.budget / z.utilization > z.weights + 1.0:
                # SGLang's own default fraction is the problem, not the model's size: its
                # reserve grows with cuda-graph batch x attention-DP ranks
                # (arg_groups/memory_hook.py reserve_for_graph_mb).
                yield Hit(_role_path(i, "parallel"),
                          f"role {r.name!r} does not fit with SGLang's default mem_fraction_static "
                          f"{z.utilization:g} for this layout: {_breakdown(z)} leaves "
                          f"{z.kv_cache:.1f} GiB for the KV cache (SGLang reserves memory for "
                          f"CUDA graphs per attention-DP rank; {r.layout.data} ranks here)",
                          f"pin serving.memFractionStatic: {room:g} (leaves "
                          f"{z.activation + z.overhead + 1.0:.1f} GiB outside the pool for "
                          "activations, graphs and buffers)")
                continue
            yield Hit(_role_path(i, "parallel"),
                      f"role {r.name!r} does not fit: {_breakdown(z)} leaves {z.kv_cache:.1f} GiB "
                      f"for the KV cache (largest weights per GPU: {parts} GiB)",
                      ("quantize the weights (fp8); " if r.model.weights == "bf16" else "")
                      + "raise expert/tensor parallelism, or use a GPU with more memory")


@rule("SIZ002", E, "one maxModelLen request fits in the KV cache",
      "vLLM vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory (refuses to start); "
      "shared/research/field-failures.md #18")
def _siz_one(ctx: Context):
    for i, r, z in _sized(ctx):
        if z.kv_cache > 0 and z.kv_tokens_per_rank < z.max_model_len:
            yield Hit(_len_path(ctx, i),
                      f"role {r.name!r}: one request of maxModelLen {z.max_model_len} needs "
                      f"{z.max_model_len * z.kv_bytes_per_token / 2**30:.2f} GiB of KV but "
                      f"{z.kv_cache:.2f} GiB remain ({_breakdown(z)}); the KV cache holds "
                      f"{z.kv_tokens_per_rank} tokens",
                      "; ".join([f"set maxModelLen <= {z.longest_len_for(1)}"] + _freers(r, z)))


@rule("SIZ003", E, "sizing.concurrency sequences of maxModelLen fit (ceil per DP rank)",
      "SPEC.md §2 sizing.concurrency; vLLM 'Maximum concurrency for N tokens per request'")
def _siz_conc(ctx: Context):
    for i, r, z in _sized(ctx):
        if z.kv_cache <= 0 or z.kv_tokens_per_rank < z.max_model_len:
            continue
        if z.max_concurrency < z.per_rank_required:
            fits = int(z.max_concurrency) * z.data
            longest = z.longest_len_for(z.per_rank_required)
            options = _what_if(ctx, i, r, z) + [f"maxModelLen <= {longest}"]
            if z.engine == "sglang" and _sglang_mfs_room(z):
                options.insert(0, f"memFractionStatic: {_sglang_mfs_room(z):g}")
            yield Hit(_role_path(i, "sizing", "concurrency"),
                      f"role {r.name!r} must hold {z.required_concurrency} sequences of "
                      f"{z.max_model_len} tokens, {z.per_rank_required} per DP rank, but one rank's "
                      f"KV cache holds {z.kv_tokens_per_rank} tokens = {z.max_concurrency:.1f} "
                      f"sequences; the instance holds {fits} ({_breakdown(z)})",
                      "; ".join(options) + "; or more expert/data parallelism")


@rule("A2A006", E, "SGLang's DeepEP low-latency dispatch fits DeepEP's token capacity",
      "sglang token_dispatcher/deepep.py asserts num_max_dispatch_tokens_per_rank <= 1024; "
      "needed = cuda-graph batch per rank x draft tokens (field-failures.md #11)")
def _sglang_deepep_tokens(ctx: Context):
    if _is_vllm(ctx):
        return
    from ..engines import sglang as sg
    for i, r in ctx.role_items():
        if r.moe and r.moe.all2all == "deepep_low_latency" and r.mode != "prefill":
            need = sg.deepep_dispatch_tokens(r)
            if need > sg.DEEPEP_LL_MAX_TOKENS:
                yield Hit(_role_path(i, "sizing", "concurrency"),
                          f"role {r.name!r}: a decode batch of "
                          f"{max(sg.cuda_graph_batch(r), sg.admitted_per_rank(r))} per rank x "
                          f"{sg.draft_tokens(r)} tokens per request = {need} DeepEP dispatch tokens "
                          f"per rank, above DeepEP's {sg.DEEPEP_LL_MAX_TOKENS}",
                          "spread the concurrency over more data-parallel ranks, or use fewer "
                          "speculative tokens")


@rule("A2A007", W, "SGLang decode with DeepEP normal mode runs without CUDA graphs",
      "SGLang arg_groups/moe_hook.py disables CUDA graphs when deepep_mode is normal "
      "(sglang PR#5014; field-failures.md #12); moegen renders --disable-cuda-graph explicitly")
def _sglang_deepep_normal_decode(ctx: Context):
    if _is_vllm(ctx):
        return
    for i, r in ctx.role_items():
        if r.mode != "prefill" and r.moe and r.moe.all2all == "deepep_high_throughput":
            yield Hit(_role_path(i, "moe", "all2all"),
                      f"role {r.name!r}: DeepEP normal (high-throughput) kernels cannot be "
                      "captured in CUDA graphs: decode runs eager",
                      "use deepep_low_latency for decode roles")


@rule("SIZ006", E, "SGLang leaves room outside mem_fraction_static for graphs and buffers",
      "sglang#5285, #23769 (CUDA graph capture OOM); model_runner remedy text: lower "
      "--mem-fraction-static or --cuda-graph-max-bs")
def _siz_outside(ctx: Context):
    for i, r, z in _sized(ctx):
        if z.engine != "sglang":
            continue
        need = z.activation + z.overhead
        if z.outside_pool < need:
            path = _role_path(i, "sizing", "concurrency")
            for field in ("memFractionStatic", "gpuMemoryUtilization"):
                if _role_sets(ctx, i, field):
                    path = _role_path(i, "serving", field)
                    break
                if getattr(ctx.spec.spec.serving, field) is not None:
                    path = ("spec", "serving", field)
                    break
            yield Hit(path,
                      f"role {r.name!r}: mem_fraction_static {z.utilization:g} leaves "
                      f"{z.outside_pool:.1f} GiB outside the static pool, but activations "
                      f"({z.activation:.1f}), CUDA graphs and DeepEP buffers ({z.overhead:.1f}) "
                      f"need {need:.1f} GiB",
                      f"use memFractionStatic <= {math.floor((1 - need / (z.budget / z.utilization)) * 1000) / 1000:g} "
                      "(or a lower gpuMemoryUtilization), or lower maxNumBatchedTokens / the decode batch")


@rule("SIZ004", W, "the memory outside the budget holds what the engine does not count",
      "vLLM: CUDA context and pre-snapshot NCCL memory sit outside gpu_memory_utilization; "
      "releases < 0.20 capture CUDA graphs after KV sizing (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS)")
def _siz_headroom(ctx: Context):
    from ..sizing.budget import CUDA_CONTEXT_GIB
    for i, r, z in _sized(ctx):
        if z.engine != "vllm":
            continue
        headroom = z.gpu_memory - z.budget
        need = CUDA_CONTEXT_GIB + z.cuda_graph_outside
        if headroom < need:
            yield Hit(_role_path(i, "serving", "gpuMemoryUtilization")
                      if _role_sets(ctx, i, "gpuMemoryUtilization")
                      else ("spec", "serving", "gpuMemoryUtilization"),
                      f"role {r.name!r}: {headroom:.2f} GiB outside the budget, but the CUDA "
                      f"context{' and CUDA graphs' if z.cuda_graph_outside else ''} take ~{need:.1f} GiB",
                      "use gpuMemoryUtilization <= "
                      f"{math.floor((z.gpu_memory - need) / z.gpu_memory * 1000) / 1000:g}")


@rule("SIZ005", W, "every role is sized", "moegen sizing needs the MLA/MoE (or V4) fields of the "
      "model's config.json")
def _siz_skipped(ctx: Context):
    for i, r in ctx.role_items():
        why = ctx.sizing[i]
        if isinstance(why, str):
            yield Hit(_role_path(i), f"role {r.name!r} was not sized: {why}",
                      "check memory by hand before deploying")


def _no_check(ctx: Context) -> Iterator[Hit]:
    return iter(())


#: Codes raised outside the rule functions (loader, schema, pipeline), listed for ``gen rules``.
for _code, _sev, _summary, _source in (
    ("LOAD001", E, "the file exists and is readable", "moegen loader"),
    ("LOAD002", E, "the file is at most 1 MiB", "moegen loader (hostile input)"),
    ("LOAD003", E, "the file is UTF-8 text", "moegen loader (hostile input)"),
    ("LOAD004", E, "one YAML document per file", "moegen loader"),
    ("LOAD005", E, "no YAML anchors or aliases", "moegen loader (alias bombs)"),
    ("LOAD006", E, "no custom YAML tags", "moegen loader (unsafe tags)"),
    ("LOAD007", E, "nesting depth at most 64", "moegen loader (hostile input)"),
    ("LOAD008", E, "the file is valid YAML", "YAML 1.2"),
    ("LOAD009", E, "no duplicate keys", "YAML 1.2 (keys are unique)"),
    ("LOAD010", E, "the document is a mapping", "SPEC.md §2"),
    ("LOAD011", E, "model.config is a readable JSON object", "SPEC.md §2 (config:)"),
    ("LOAD012", W, "an overlay's new named item is not a typo of an existing one",
     "SPEC.md §2 overlay merge (lists of named objects merge by name)"),
    ("SCH001", E, "the spec matches the schema", "schemas/inferencedeployment.schema.json"),
    ("SCH002", E, "no unknown fields", "schema additionalProperties: false"),
    ("SCH003", E, "required fields are present", "schema required"),
    ("SCH004", E, "enumerated fields take a listed value", "schema enum/const"),
    ("SCH005", E, "fields have the right type", "schema type"),
    ("SCH006", E, "numbers and sizes are in range", "schema minimum/maximum/length"),
    ("SCH007", E, "strings match their format", "schema pattern"),
    ("SCH008", E, "map keys are valid names", "schema patternProperties/propertyNames"),
    ("VER001", E, "the engine version is in a supported range",
     "SPEC.md §2 (vLLM 0.11.0-0.33.x, SGLang 0.5.x)"),
    ("MOD002", E, "model.config is a supported architecture family",
     "catalog FAMILIES (model_type)"),
    ("MOD003", E, "model.config has the fields moegen needs", "HF config.json fields"),
    ("PLN001", E, "a PlanRequest gives concurrency or requestsPerSecond, not both",
     "SPEC.md §5 workload"),
):
    RULES.append(Rule(_code, _sev, _summary, _source, _no_check))


def run_rules(ctx: Context) -> list[Finding]:
    """Run every rule of :data:`RULES`; return all findings, located via provenance.

    The sizing rules (SIZ*) run last and skip roles that already have an error (and every role
    when a spec-level error exists): sizing an impossible layout only adds noise.
    """
    out: list[Finding] = []
    seen: set[tuple[str, tuple, str]] = set()

    def emit(r: Rule, hits) -> None:
        for hit in hits:
            key = (r.code, tuple(hit.path), hit.message)
            if key in seen:  # a spec-level field shared by several roles is reported once
                continue
            seen.add(key)
            out.append(Finding(r.code, r.severity, json_path(hit.path), hit.message, hit.hint,
                               ctx.provenance.locate(hit.path)))

    for r in RULES:
        if not r.code.startswith("SIZ"):
            emit(r, r.check(ctx))
    errors = [f for f in out if f.severity is Severity.ERROR]
    for f in errors:
        if not f.path.startswith("$.spec.roles["):
            ctx.sizing = [None] * len(ctx.sizing)
            break
        index = int(f.path[len("$.spec.roles["):].split("]")[0])
        ctx.sizing[index] = None
    for r in RULES:
        if r.code.startswith("SIZ"):
            emit(r, r.check(ctx))
    return out
