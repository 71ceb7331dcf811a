"""Known-bad engine releases: a release range x a feature combination that fails, as data.

Each :class:`KnownBad` row names an engine, the first release that has the bug and the first
that does not (``[first, fixed)``), the features of a role that trigger it (:class:`Match`: every
field given must hold; a field left ``None`` matches anything), what the user sees, and its
sources: the upstream report, the fixing change and the engine file:line at a bad and a fixed
release, read in the released wheels or sdists. Rule ENG030 (``checks/engine.py``) reads the table:
one rule for every row, so a new regression is one row here plus its field case under
``tests/field/``.

Rows are added when the root cause was read in the released source, not on a report alone.
Candidates come from reports and from the engines' own history between the supported releases
(``tools/mine_known_bad.py``; the method, the counts and the rejected candidates are in
docs/known-bad.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..roles import RoleInput
from .versions import Version, parse_version


@dataclass(frozen=True)
class Match:
    """The role features a row needs (``None``: any). All given fields must hold.

    Attributes:
        weights: ``model.weights`` formats.
        all2all: ``moe.all2all`` backends (engine-neutral names).
        modes: role modes (``prefill``, ``decode``, ``unified``).
        speculative: the role speculates (MTP) or not.
        classes: models by the class the engines dispatch on (``ModelArch.engine_class``, the
            HF ``architectures[0]``): a bug in one engine model implementation.
        connectors: ``kvTransfer.connector`` names.
        expert_parallel: ``parallel.expert``.
        data_parallel: more than one data-parallel rank.
        eplb: EPLB enabled.
        kv_dtypes: ``serving.kvCacheDtype`` values.
        multi_node: the instance spans pods.
        generations: GPU generations of the role's pool (``catalog.Gpu.generation``).
        min_tensor: the role's tensor-parallel size is at least this.
        pipeline: more than one pipeline-parallel stage.
        executors: vLLM's distributed executor (``parallel.executor``; unset is ``mp``).
    """

    weights: frozenset[str] | None = None
    all2all: frozenset[str] | None = None
    modes: frozenset[str] | None = None
    speculative: bool | None = None
    classes: frozenset[str] | None = None
    connectors: frozenset[str] | None = None
    expert_parallel: bool | None = None
    data_parallel: bool | None = None
    eplb: bool | None = None
    kv_dtypes: frozenset[str] | None = None
    multi_node: bool | None = None
    generations: frozenset[str] | None = None
    min_tensor: int | None = None
    pipeline: bool | None = None
    executors: frozenset[str] | None = None

    def holds(self, role: RoleInput, weights: str, generation: str) -> bool:
        """Every given feature holds for ``role`` (checkpoint ``weights``, pool GPU
        ``generation``)."""
        moe = role.moe
        eplb = bool(moe and moe.eplb and moe.eplb.enabled)
        checks = (
            (self.weights, weights),
            (self.all2all, moe.all2all if moe else None),
            (self.modes, role.mode),
            (self.classes, role.arch.engine_class),
            (self.connectors, role.kv_transfer.connector if role.kv_transfer else None),
            (self.kv_dtypes, role.serving.kvCacheDtype),
            (self.generations, generation),
            (self.executors, role.parallel.executor or "mp"),
        )
        if any(want is not None and have not in want for want, have in checks):
            return False
        if self.min_tensor is not None and role.layout.tensor < self.min_tensor:
            return False
        flags = ((self.speculative, role.speculative is not None),
                 (self.expert_parallel, role.layout.expert_parallel),
                 (self.data_parallel, role.layout.data > 1),
                 (self.eplb, eplb),
                 (self.multi_node, role.layout.multi_pod),
                 (self.pipeline, role.layout.pipeline > 1))
        return all(want is None or want == have for want, have in flags)


@dataclass(frozen=True)
class KnownBad:
    """One known-bad release range x feature combination (see the module docstring).

    Attributes:
        engine: ``vllm`` or ``sglang``.
        first: first release with the bug.
        fixed: first release without it (None: not fixed in any release moegen knows).
        match: the features that trigger it.
        field: the role field the finding points at (a path below ``spec.roles[i]``).
        what: what fails, as the user sees it.
        source: upstream report, fixing change, engine file:line at a bad and a fixed release.
        hint: what to do instead.
        unless_arg: ``(option, value)`` in the role's engineArgs that avoids the bug (a kernel
            choice), or None.
    """

    engine: str
    first: Version
    fixed: Version | None
    match: Match
    field: tuple[str, ...]
    what: str
    source: str
    hint: str
    unless_arg: tuple[str, str] | None = None

    def covers(self, engine: str, version: str) -> bool:
        """``engine`` at ``version`` is in the bad range."""
        v = parse_version(version)
        return engine == self.engine and v >= self.first and (self.fixed is None
                                                               or v < self.fixed)

    @property
    def releases(self) -> str:
        """The bad range as text (``0.5.16-0.5.17``-style: ``>= first, < fixed``)."""
        first = ".".join(map(str, self.first))
        return f"{first} .. before {'.'.join(map(str, self.fixed))}" if self.fixed \
            else f"{first} and later"


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


#: Every known-bad row (see the module docstring). Keep rows ordered by engine, then release.
KNOWN_BAD: tuple[KnownBad, ...] = (
    KnownBad(
        "sglang", (0, 5, 16), (0, 5, 18),
        Match(weights=_f("w4a8"), all2all=_f("deepep_high_throughput"),
              expert_parallel=True),
        ("moe", "all2all"),
        "W4AFP8 experts behind DeepEP's normal (high-throughput) dispatch crash every rank at "
        "the first prefill batch: TypeError \"missing 1 required positional argument: "
        "'routed_scaling_factor'\"",
        "sgl-project/sglang#33660, fixed by PR#33669; SGLang 0.5.17 python/sglang/srt/layers/"
        "moe/cutlass_w4a8_moe.py:420-429 calls deepep_post_reorder_triton_kernel without the "
        "routed_scaling_factor that sglang/kernels/ops/moe/ep_moe_kernels.py:110-118 requires "
        "since 0.5.16 (0.5.15's kernel had no such parameter); 0.5.18 passes 1.0 "
        "(cutlass_w4a8_moe.py:420-430)",
        "use SGLang 0.5.18 or later, or deepep_low_latency / allgather_reducescatter"),
    KnownBad(
        "sglang", (0, 5, 12), (0, 5, 13),
        Match(classes=_f("DeepseekV4ForCausalLM"), eplb=True, expert_parallel=True),
        ("moe", "eplb", "enabled"),
        "EPLB with DeepSeek-V4: the model's forward sets no current layer for the expert "
        "distribution recorder, so its layer index is None: prefill crashes, decode records "
        "wrong statistics and rebalances on them",
        "sgl-project/sglang PR#25948 (\"[dsv4] support eplb\": \"Without the context, the "
        "layer_idx used in eplb distribution gatherer is None which causes crash in prefill node "
        "and stats inaccuracy issue in decode node\"); SGLang 0.5.12 python/sglang/srt/models/"
        "deepseek_v4.py:988 (layer loop without the recorder context), 0.5.13 :1678-1682 "
        "(with_current_layer); read in the 0.5.12 and 0.5.13 wheels",
        "use SGLang 0.5.13 or later, or disable EPLB"),
    KnownBad(
        "sglang", (0, 5, 9), (0, 5, 11),
        Match(classes=_f("DeepseekV32ForCausalLM"), kv_dtypes=_f("fp8"), generations=_f("hopper"),
              min_tensor=4),
        ("parallel", "tensor"),
        "DeepSeek-V3.2 with an FP8 KV cache on Hopper decodes with FlashMLA's FP8 sparse kernel "
        "(nsa decode backend flashmla_kv), which takes 64 or 128 query heads: tensor 4 or more "
        "leaves 128 / tensor heads per GPU and the kernel refuses them",
        "sgl-project/sglang PR#22372 (\"FlashMLA requires q heads to be 64 or 128, but with "
        "tensor parallelism the per-GPU head count gets divided ... DeepSeek V3.2's 128 heads / "
        "TP8 = 16\"; adds the padding); SGLang 0.5.10 python/sglang/srt/server_args.py:1463-1473 "
        "(fp8_e4m3 on sm90: decode flashmla_kv), srt/layers/attention/nsa_backend.py:1700-1740 "
        "(_forward_flashmla_kv passes layer.tp_q_head_num unpadded); 0.5.11 pads "
        "(nsa_backend.py:330-335, :1744); read in the 0.5.9, 0.5.10 and 0.5.11 wheels",
        "use SGLang 0.5.11 or later, run attention data-parallel (parallel.data, tensor 1 or 2), "
        "or serve the KV cache in BF16 (kvCacheDtype: auto)"),
    KnownBad(
        "sglang", (0, 5, 3), (0, 5, 4),
        Match(classes=_f("DeepseekV32ForCausalLM"), speculative=True),
        ("speculative",),
        "DeepSeek-V3.2 with MTP: the NSA attention backend (DeepSeek-V3.2's sparse attention) "
        "asserts there is no speculative input (\"Spec decoding is not supported for NSA backend "
        "now\"), so the first draft or verify forward fails",
        "SGLang 0.5.3 python/sglang/srt/layers/attention/nsa_backend.py:212-214 "
        "(init_forward_metadata), :344-346 and :416-418 (CUDA-graph capture and replay metadata); 0.5.4 "
        "nsa_backend.py takes speculative_num_steps and spec_info instead; read in the 0.5.3 and "
        "0.5.4 wheels (found with tools/mine_known_bad.py)",
        "use SGLang 0.5.4 or later, or drop speculative decoding"),
    KnownBad(
        "vllm", (0, 20, 0), (0, 30, 0),
        Match(classes=_f("DeepseekV4ForCausalLM"), kv_dtypes=_f("auto"),
              generations=_f("hopper", "blackwell")),
        ("serving", "kvCacheDtype"),
        "DeepSeek-V4 with --kv-cache-dtype auto dies at layer construction (AssertionError "
        "\"DeepseekV4 only supports fp8 kv-cache format for now, got auto\" up to 0.22, "
        "\"DeepseekV4 fp8_ds_mla layout only supports fp8 kv-cache, got auto\" from 0.23): the "
        "FlashMLA "
        "attention vLLM picks on every CUDA GPU but SM12 keeps its KV in the fp8_ds_mla layout, "
        "which has no BF16 variant, and nothing maps auto to fp8",
        "vllm-project/vllm#47174 (reported at 0.24.0), fixed by vllm-project/vllm#45091; vLLM "
        "0.20.0 vllm/model_executor/layers/deepseek_v4_attention.py:594-599 and 0.22.0 "
        "vllm/models/deepseek_v4/attention.py:668-674 assert kv_cache_dtype.startswith(\"fp8\"), "
        "0.29.0 attention.py:105 (_resolve_dsv4_kv_cache_dtype), nvidia/model.py:1050-1052 "
        "(FlashMLA unless SM12); 0.30.0 attention.py:109-110 maps auto to fp8; read in the "
        "0.20.0-0.30.0 wheels",
        "set serving.kvCacheDtype: fp8 (the layout is FP8 whatever auto says), or use vLLM "
        "0.30.0 or later"),
    KnownBad(
        "vllm", (0, 11, 0), (0, 18, 0),
        Match(classes=_f("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"), kv_dtypes=_f("fp8"),
              generations=_f("ampere", "ada")),
        ("serving", "kvCacheDtype"),
        "MLA with an FP8 KV cache on Ampere or Ada: the only MLA backend vLLM has there "
        "(Triton MLA; FlashAttention-MLA and FlashMLA need SM90, FlashInfer and CUTLASS MLA "
        "SM100) takes no FP8 KV cache (NotImplementedError \"TritonMLA V1 with FP8 KV cache not "
        "yet supported\"), so the engine does not start",
        "vLLM 0.17.1 vllm/v1/attention/backends/mla/triton_mla.py:31-34 (supported_kv_cache_dtypes "
        "auto, bfloat16), :96-99 and :123-124 (the raises; the same in 0.11.0 and 0.14.0), "
        "vllm/platforms/cuda.py:76-82 (MLA backend priority below SM100); 0.18.0 triton_mla.py"
        ":32-38 adds fp8 and fp8_e4m3; read in the wheels (found with tools/mine_known_bad.py)",
        "set serving.kvCacheDtype: auto, or use vLLM 0.18.0 or later"),
    KnownBad(
        "vllm", (0, 11, 1), (0, 11, 2),
        Match(multi_node=True, executors=_f("ray")),
        ("parallel", "executor"),
        "a tensor/pipeline group spanning pods over Ray: every GPU worker asserts that the local "
        "world size, the whole world size under Ray (one node as vLLM counts them, no --nnodes), "
        "fits its node's GPUs (AssertionError \"local_world_size (16) must be less than or equal "
        "to the number of visible devices (8)\"), so the engine does not start",
        "vllm-project/vllm#28997 (reported at 0.11.1), fixed by vllm-project/vllm#28873; vLLM "
        "0.11.1 vllm/v1/worker/gpu_worker.py:207-214 (the assertion for every executor), "
        "vllm/config/parallel.py:407-417 (local_world_size = world_size // nnodes_within_dp, 1 "
        "when nnodes is 1); 0.11.2 gpu_worker.py:184-214 asserts it only for multiprocess data "
        "parallelism; 0.11.0 has no such assertion; read in the 0.11.0-0.11.2 wheels",
        "use vLLM 0.11.2 or later, or parallel.executor mp (--nnodes, 0.11.1+)"),
    KnownBad(
        "vllm", (0, 16, 0), (0, 24, 0),
        Match(connectors=_f("mooncake"), pipeline=True),
        ("parallel", "pipeline"),
        "the Mooncake KV connector refuses pipeline parallelism at engine start (ValueError "
        "\"Mooncake Transfer Engine does not support pipeline parallelism yet.\")",
        "vLLM 0.16.0 vllm/distributed/kv_transfer/kv_connector/v1/mooncake/mooncake_connector.py"
        ":495-498 and 0.23.0 :791-794 (MooncakeConnectorWorker.__init__ raises for "
        "pipeline_parallel_size > 1); 0.24.0 :865-866 keeps pp_size/pp_rank and maps the peers' "
        "stages (:1723-1755); read in the wheels (found with tools/mine_known_bad.py)",
        "use vLLM 0.24.0 or later, parallel.pipeline: 1, or kvTransfer.connector: nixl"),
    KnownBad(
        "vllm", (0, 11, 0), None,
        Match(weights=_f("w4a16"), eplb=True, expert_parallel=True),
        ("moe", "eplb", "enabled"),
        "EPLB with INT4 (W4A16, compressed-tensors WNA16) experts: 0.33.0 refuses the model at "
        "load (NotImplementedError \"EPLB is not supported CompressedTensorsWNA16MoEMethod\") "
        "unless the experts run the Triton WNA16 kernel, which vLLM picks after Marlin, Humming "
        "and FlashInfer; 0.11 ran it through Marlin and gave wrong outputs",
        "vllm-project/vllm#32388 (0.11.0: wrong outputs with EPLB on "
        "CompressedTensorsWNA16MarlinMoEMethod); vLLM 0.33.0 vllm/model_executor/layers/"
        "quantization/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe_wna16.py:"
        "562-563 (supports_eplb only for WNA16MoEBackend.TRITON), "
        "vllm/model_executor/layers/fused_moe/routed_experts.py:186-199, "
        "fused_moe/oracle/int_wna16.py:126-143 (backend priority)",
        "drop EPLB (moe.eplb.enabled: false), or add engineArgs: [--moe-backend, triton]",
        unless_arg=("--moe-backend", "triton")),
)


def known_bad(engine: str, version: str, role: RoleInput, weights: str, generation: str,
              engine_args: list[str] | tuple[str, ...] = ()) -> list[KnownBad]:
    """The rows of :data:`KNOWN_BAD` that ``role`` hits on ``engine`` ``version`` (with its
    ``engine_args``, which may avoid a row: ``unless_arg``)."""
    def avoided(row: KnownBad) -> bool:
        if row.unless_arg is None:
            return False
        opt, val = row.unless_arg
        args = list(engine_args)
        return any(a == f"{opt}={val}" or (a == opt and i + 1 < len(args) and args[i + 1] == val)
                   for i, a in enumerate(args))
    return [row for row in KNOWN_BAD
            if row.covers(engine, version) and row.match.holds(role, weights, generation)
            and not avoided(row)]
