"""The SGLang dialect: ``python3 -m sglang.launch_server`` flags for every release 0.5.1..0.5.x.

Per-release option names come from ``data/sglang-releases.json`` (extracted by
``tools/extract_sglang_dialects.py`` from every release's own parser dump,
every release's parser dump, extracted by tools/extract_sglang_dialects.py); value choices from the 0.5.23 dump. All
options are defined in ``ServerArgs.add_cli_args``, python/sglang/srt/server_args.py (0.5.23);
environment variables in python/sglang/srt/environ.py.

Mapping of the spec's ``parallel`` (one instance: GPUs = tensor x data x pipeline):

* ``--tp-size`` = tensor x data: SGLang's TP group is every GPU of a pipeline stage; with
  data > 1 attention runs data-parallel (attention TP = tensor) while MoE and dense layers use
  the whole group: ``--attn-dp-size data`` from 0.5.22 (``--dp-size N --enable-dp-attention``
  is deprecated there and rewritten to it, arg_groups/parallel_hook.py
  ``handle_deprecated_dp_attention``), ``--dp-size data --enable-dp-attention`` before.
  With attention DP the dense MLP layers run data-parallel too (``--moe-dense-tp-size 1``):
  sharding them over the whole group breaks FP8 block shapes (18,432 / 32 = 576 is not a
  multiple of 128; layers/quantization/fp8_utils.py ``validate_fp8_block_shape``) and adds a
  gather per layer (utils/common.py ``require_mlp_tp_gather``).
* ``--ep-size`` = tensor x data with ``expert: true``; ``--pp-size`` = pipeline.
* ``parallel.context`` = prefill context parallelism: ``--attn-cp-size C --enable-prefill-cp
  --cp-strategy interleave`` (>= 0.5.14). ``--attn-cp-size`` alone binds no CP strategy
  (layers/cp/base.py ``init_cp_strategy``): attention would run replicated with no token split.
  ``interleave`` is the strategy DeepSeek-V3.2 and, on CUDA, DeepSeek-V4 accept
  (arg_groups/parallel_hook.py, deepseek_v4_hook.py ``validate_deepseek_v4_cp``).
* Multi-node instances: ``--nnodes/--node-rank/--dist-init-addr`` (node 0 serves HTTP).

Version switches (first release that has them): ``--attn-cp-size`` 0.5.9, ``--enable-prefill-cp``
and ``--cp-strategy`` 0.5.14; ``--attn-dp-size`` 0.5.22;
``--cuda-graph-max-bs-decode`` 0.5.14 (``--cuda-graph-max-bs`` until 0.5.19);
``--enable-deepep-moe``/``--enable-ep-moe`` removed after 0.5.4 (never rendered: DeepEP is
``--moe-a2a-backend deepep --deepep-mode``); ``--kv-cache-dtype fp8`` is not a choice (fp8_e4m3).

``/health`` runs a one-token generation and waits up to ``SGLANG_HEALTH_CHECK_TIMEOUT`` (20 s)
for the detokenizer (entrypoints/http_server.py ``health_generate``, every 0.5.x release): the
value is rendered explicitly and the probes wait longer than it (:data:`HEALTH_CHECK_TIMEOUT_S`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import ClassVar

from ..facts.batches import (
    DEEPEP_LL_DEFAULT_TOKENS,
    DEEPEP_V2_DEFAULT_TOKENS,
    cuda_graph_batch,
    deepep_dispatch_tokens,
    deepep_v2_dispatch_tokens,
)
from ..facts.deepep import qp_depth as deepep_qp_depth
from ..facts.requirements import required_flags
from ..facts.versions import SupportedRange, parse_version, select_known
from ..layout import Spread
from ..resources import package_text
from ..roles import RoleInput
from ..roles import max_len as role_max_len
from ..sizing import RoleSizing
from ..sizing.host import PodProcesses
from .base import (
    DERIVED_BY_LAYOUT as _LAYOUT,
)
from .base import (
    DERIVED_LISTENER as _LISTENER,
)
from .base import (
    LEADER_IP,
    POD_IP,
    EngineLaunch,
    Port,
    offload_args,
)
from .network import nic_family
from .options import release_options

#: SGLang releases moegen supports: the 0.5 series (docs/spec.md §2), 0.5.1 being the first known.
SUPPORTED = [SupportedRange((0, 5, 1), (0, 6, 0))]
#: ``--dist-init-addr`` port (torch.distributed rendezvous of a multi-node instance); the LWS
#: and SGLang multi-node examples use 20000.
DIST_INIT_PORT = 20000
#: ``--disaggregation-bootstrap-port``: SGLang's default (server_args.py), rendered explicitly.
BOOTSTRAP_PORT = 8998
#: engine-neutral ``moe.overlap`` -> SGLang flag (python/sglang/srt/server_args.py; 0.5.23
#: arg_groups/fields/exec_.py ``exec.overlap``).
OVERLAP = {"two_batch": "--enable-two-batch-overlap",
           "single_batch": "--enable-single-batch-overlap"}
#: engine-neutral all2all -> (--moe-a2a-backend, --deepep-mode or None). MoRI-EP (AMD) takes the
#: DeepEP mode flag too ("Select the mode when enable DeepEP or MoriEP MoE", server_args.py
#: 0.5.23); plain ``mori`` leaves it at ``auto`` (normal for prefill, low_latency for decode).
A2A = {"deepep_low_latency": ("deepep", "low_latency"),
       "deepep_high_throughput": ("deepep", "normal"),
       "deepep_v2": ("deepep_v2", None), "nixl_ep": ("nixl", None), "pplx": ("pplx", None),
       "flashinfer_all2allv": ("flashinfer", None),
       "mori": ("mori", None), "mori_high_throughput": ("mori", "normal"),
       "mori_low_latency": ("mori", "low_latency"), "megamoe": ("megamoe", None),
       "naive": ("none", None), "allgather_reducescatter": ("none", None)}
#: First release whose ``--moe-a2a-backend`` takes ``megamoe`` (DeepGEMM Mega MoE):
#: MOE_A2A_BACKEND_CHOICES of python/sglang/srt/server_args.py, read in the 0.5.11 and 0.5.12
#: wheels (absent, present).
MEGAMOE_SINCE = (0, 5, 12)
#: Target all-to-all backends the MTP draft may not inherit -> the draft's
#: ``--speculative-moe-a2a-backend``. The draft inherits the target's backend when the flag is
#: unset, and 0.5.23 refuses a DeepEP v2 draft at start (arg_groups/moe_hook.py:624-638
#: validate_deepep_v2_speculative_draft: "DeepEP v2 MoE is not validated as a speculative draft
#: backend"); ``none`` runs the draft's MoE layer on the standard all-gather path, as SGLang does
#: itself for drafts of a flashinfer_megamoe target (server_args help of the flag).
DRAFT_A2A = {"deepep_v2": "none"}
#: ``SGLANG_HEALTH_CHECK_TIMEOUT``: how long /health waits for its one-token generation, s
#: (SGLang's default 20, entrypoints/http_server.py); probes time out only after it.
HEALTH_CHECK_TIMEOUT_S = 20
#: First release that runs pipeline parallelism with speculative decoding at all, and then only on
#: disaggregated prefill (arg_groups/validation_hook.py: "PP + speculative decoding (MTP) is only
#: supported on prefill nodes"); 0.5.1-0.5.20 refuse PP with any speculative algorithm on CUDA
#: (server_args.py / validation_hook.py "Pipeline parallelism is not compatible with ...
#: speculative decoding"). Read from every release's wheel.
PP_SPECULATIVE_PREFILL = (0, 5, 21)
#: ``--cp-strategy`` for prefill context parallelism (see the module docstring).
CP_STRATEGY = "interleave"
#: First release whose Mooncake transfer engine takes its protocol from MOONCAKE_PROTOCOL
#: (sgl-project/sglang PR#25083, fixing #24838); 0.5.1-0.5.12 pass "rdma" hard-coded
#: (mooncake_transfer_engine.py:191-197 at 0.5.11). Read in the 0.5.11-0.5.14 wheels.
MOONCAKE_PROTOCOL_SINCE = (0, 5, 13)
#: First release that raises NVSHMEM_QP_DEPTH for its DeepEP low-latency dispatch itself
#: (token_dispatcher/deepep.py _set_nvshmem_qp_depth; absent in the 0.5.15-0.5.18 wheels).
SETS_QP_DEPTH = (0, 5, 19)
#: First release read with SGLANG_DISAGGREGATION_NIXL_BACKEND (srt/environ.py in the 0.5.15,
#: 0.5.16 and 0.5.23 wheels).
NIXL_BACKEND_ENV_SINCE = (0, 5, 15)
#: kvTransfer.connector -> --disaggregation-transfer-backend.
TRANSFER = {"nixl": "nixl", "mooncake": "mooncake"}
#: serving.kvCacheDtype -> --kv-cache-dtype (0.5.23 choices have no plain "fp8").
KV_DTYPE = {"auto": "auto", "fp8": "fp8_e4m3"}


#: Options that change what a request may contain or which tokens its prompt becomes (rule
#: PD090): sglang@v0.5.23 python/sglang/srt/entrypoints/openai/serving_chat.py renders tools into
#: the prompt by --tool-call-parser and applies the --chat-template; both legs of a PD pair
#: tokenize the request themselves (the router sends it to both), and the bootstrap pairs their
#: KV by position.
REQUEST_SHAPING = ("--tool-call-parser", "--chat-template", "--tokenizer-path", "--tokenizer-mode",
                   "--trust-remote-code", "--skip-tokenizer-init")


@cache
def _data() -> dict:
    text = package_text("engines", "data", "sglang-releases.json")
    return json.loads(text)


def known_versions() -> list[str]:
    """Every SGLang release moegen has read (0.5.1 .. 0.5.23)."""
    return sorted(_data()["releases"], key=parse_version)


#: Flags moegen derives for SGLang, by canonical name (``engines/options.py`` folds aliases such
#: as ``--tensor-parallel-size``), with the spec field that sets each: ``roles[].engineArgs`` may
#: not set them (rule ENG005). Options are those of sglang/srt/server_args.py.
DERIVED_FLAGS: dict[str, str] = {
    "--model-path": "spec.model.path",
    "--served-model-name": "spec.model.name",
    "--host": "network.bindAddress",
    "--port": "serving.port",
    "--tp-size": "roles[].parallel.tensor",
    "--pp-size": "roles[].parallel.pipeline",
    "--dp-size": "roles[].parallel.data",
    "--attn-dp-size": "roles[].parallel.data",
    "--enable-dp-attention": "roles[].parallel.data",
    "--ep-size": "roles[].parallel.expert",
    "--enable-ep-moe": "roles[].parallel.expert",
    "--attn-cp-size": "roles[].parallel.context",
    "--enable-prefill-cp": "roles[].parallel.context",
    "--cp-strategy": "roles[].parallel.context",
    **{f: _LAYOUT for f in ("--nnodes", "--node-rank", "--dist-init-addr", "--moe-dense-tp-size",
                            "--disaggregation-bootstrap-port")},
    "--moe-a2a-backend": "roles[].moe.all2all",
    "--deepep-mode": "roles[].moe.all2all",
    "--deepep-v2-mode": "roles[].moe.all2all (hybrid when a deepep_v2 instance spans nodes)",
    "--enable-deepep-moe": "roles[].moe.all2all",
    "--enable-eplb": "roles[].moe.eplb",
    "--enable-two-batch-overlap": "roles[].moe.overlap",
    "--enable-single-batch-overlap": "roles[].moe.overlap",
    "--ep-num-redundant-experts": "roles[].moe.eplb.redundantExperts",
    "--eplb-rebalance-num-iterations": "roles[].moe.eplb.stepInterval",
    "--expert-distribution-recorder-buffer-size": "roles[].moe.eplb.windowSize",
    "--disaggregation-mode": "roles[].mode",
    "--disaggregation-transfer-backend": "roles[].kvTransfer.connector",
    "--disaggregation-ib-device": "spec.network.rdma.devices",
    "--speculative-algorithm": "roles[].speculative",
    "--speculative-num-steps": "roles[].speculative.numSpeculativeTokens",
    "--speculative-eagle-topk": "roles[].speculative",
    "--speculative-num-draft-tokens": "roles[].speculative.numSpeculativeTokens",
    "--speculative-moe-a2a-backend": "roles[].moe.all2all (the MTP draft of a deepep_v2 target)",
    "--mem-fraction-static": "serving.memFractionStatic (else derived by the HBM check)",
    "--context-length": "serving.maxModelLen",
    "--kv-cache-dtype": "serving.kvCacheDtype",
    "--max-running-requests": "serving.maxNumSeqs (or roles[].sizing.concurrency)",
    "--chunked-prefill-size": "serving.maxNumBatchedTokens",
    "--swa-full-tokens-ratio": "serving.swaFullTokensRatio",
    "--cuda-graph-max-bs": "(derived from the batch the role admits)",
    "--cuda-graph-max-bs-decode": "(derived from the batch the role admits)",
    "--disable-cuda-graph": "serving.enforceEager",
    "--max-total-tokens": "serving.kvCacheMemoryBytes",
    "--cpu-offload-gb": "serving.weightOffload.cpuGiB",
    "--offload-group-size": "serving.weightOffload.groupSize",
    "--offload-num-in-group": "serving.weightOffload.numInGroup",
    "--offload-prefetch-step": "serving.weightOffload.prefetchStep",
    "--quantization": "spec.model.weights",
    **{f: _LISTENER for f in ("--grpc-mode", "--ssl-keyfile", "--ssl-certfile")},
    "--enable-metrics": "spec.monitoring.enabled",
}


@dataclass(frozen=True)
class SglangDialect:
    """The flag dialect of one known SGLang release (``version``), selected for ``requested``."""

    requested: str
    version: str
    engine: ClassVar[str] = "sglang"
    label: ClassVar[str] = "SGLang"
    derived_flags: ClassVar[dict[str, str]] = DERIVED_FLAGS
    #: SGLang has no ``--gpu-memory-utilization``: its ``--mem-fraction-static`` is sized
    #: (generator/sizing/sglang_budget.py); the sizing's EngineRelease protocol reads None.
    gpu_memory_utilization_default: ClassVar[None] = None

    @property
    def options(self) -> frozenset[str]:
        """Options of the release: every one when moegen ships its full list
        (``engines/options.py``), else the ones it tracks."""
        full = release_options("sglang", self.version)
        return full.options if full is not None else frozenset(_data()["releases"][self.version])

    @property
    def pp_speculative_on_prefill(self) -> bool:
        """Pipeline parallelism may run with speculative decoding on prefill roles (>= 0.5.21)."""
        return parse_version(self.version) >= PP_SPECULATIVE_PREFILL

    def has(self, option: str) -> bool:
        """The release has ``option``."""
        return option in self.options

    @property
    def a2a_backends(self) -> list[str]:
        """``--moe-a2a-backend`` choices moegen can vouch for: 0.5.23's full list (dumped from its
        parser); for earlier releases ``none`` and ``deepep``, present since 0.5.1, and
        ``megamoe`` from :data:`MEGAMOE_SINCE` (the other backends arrived in releases whose
        choices were not dumped)."""
        if self.version == "0.5.23":
            return _data()["choices_0.5.23"]["--moe-a2a-backend"]
        return ["none", "deepep"] + (
            ["megamoe"] if parse_version(self.version) >= MEGAMOE_SINCE else [])

    @property
    def all2all_choices(self) -> list[str]:
        """Engine-neutral ``moe.all2all`` names whose SGLang backend the release has."""
        return [name for name, (backend, _) in A2A.items() if backend in self.a2a_backends]

    @property
    def connectors(self) -> list[str]:
        """``kvTransfer.connector`` names SGLang transfers KV with
        (``--disaggregation-transfer-backend``)."""
        return list(TRANSFER)

    def processes(self, role: RoleInput, api_servers: int | None) -> tuple[PodProcesses, ...]:
        """The processes of each pod (SGLang 0.5.23 sglang/srt/entrypoints/engine.py): one
        scheduler per GPU; a main process (HTTP server + tokenizer manager; a dummy health
        server on node ranks > 0) plus ``--tokenizer-worker-num`` - 1 HTTP workers on node 0;
        a detokenizer on node 0; a data-parallel controller on every node when DP > 1."""
        lay = role.layout
        out = []
        for pod in lay.pods:
            leader = pod.index == 0
            api = (api_servers or 1) if leader else 1
            other = (1 if leader else 0) + (1 if lay.data > 1 else 0)
            out.append(PodProcesses(gpu=pod.gpus, api=api, other=other))
        return tuple(out)

    def _moe_args(self, role: RoleInput, sizing: RoleSizing | None,
                  env: dict[str, str]) -> list[str]:
        """The MoE flags of ``role`` (all-to-all backend and mode, DeepEP v2 across nodes and
        its dispatch budget, the low-latency dispatch tokens and NVSHMEM QP depth, overlap,
        EPLB); environment they need goes into ``env``."""
        lay, moe = role.layout, role.moe
        common: list[str] = []
        if moe is not None and moe.all2all is not None:
            backend, mode = A2A[moe.all2all]
            if backend != "none":
                common += ["--moe-a2a-backend", backend]
            if mode:
                common += ["--deepep-mode", mode]
            if moe.all2all == "deepep_v2" and lay.multi_pod and self.has("--deepep-v2-mode"):
                # The default "direct" is NVLink-only: 0.5.23 arg_groups/moe_hook.py:432-436
                # refuses it with nnodes > 1 ("pass --deepep-v2-mode hybrid").
                common += ["--deepep-v2-mode", "hybrid"]
            if moe.all2all == "deepep_low_latency" and role.mode != "prefill":
                tokens = deepep_dispatch_tokens(role)
                if tokens != DEEPEP_LL_DEFAULT_TOKENS:
                    env["SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK"] = str(tokens)
                depth = deepep_qp_depth(tokens)
                if depth is not None and parse_version(self.version) < SETS_QP_DEPTH:
                    env["NVSHMEM_QP_DEPTH"] = str(depth)
            if moe.all2all == "deepep_v2" and sizing is not None:
                tokens = deepep_v2_dispatch_tokens(role, sizing.batched_tokens)
                if tokens != DEEPEP_V2_DEFAULT_TOKENS:
                    env["SGLANG_DEEPEP_V2_NUM_MAX_DISPATCH_TOKENS_PER_RANK"] = str(tokens)
        if moe is not None and moe.overlap is not None:
            # exec.overlap (arg_groups/fields/exec_.py, 0.5.23; server_args.py before 0.5.22):
            # two-batch since 0.4.x, single-batch since 0.5.3 (checked by OVL002).
            common += [OVERLAP[moe.overlap]]
        if moe is not None and moe.eplb is not None and moe.eplb.enabled:
            common += ["--enable-eplb",
                       "--ep-num-redundant-experts", str(moe.eplb.redundantExperts),
                       "--eplb-rebalance-num-iterations", str(moe.eplb.stepInterval),
                       "--expert-distribution-recorder-buffer-size", str(moe.eplb.windowSize)]
        return common

    def _transfer_args(self, role: RoleInput, env: dict[str, str]) -> list[str]:
        """The disaggregation flags of a PD role (mode, transfer backend, IB devices, the NIC's
        NIXL backend / Mooncake protocol, the prefill's bootstrap port)."""
        common: list[str] = []
        if role.kv_transfer is None:
            return common
        common += ["--disaggregation-mode", role.mode,
                   "--disaggregation-transfer-backend", TRANSFER[role.kv_transfer.connector]]
        if role.network.rdma is not None and role.network.rdma.devices:
            common += ["--disaggregation-ib-device", ",".join(role.network.rdma.devices)]
        nic = nic_family(role.network.rdma)
        if role.kv_transfer.connector == "nixl" and nic is not None \
                and nic.nixl_backend != "UCX" \
                and parse_version(self.version) >= NIXL_BACKEND_ENV_SINCE:
            # SGLANG_DISAGGREGATION_NIXL_BACKEND defaults to UCX (srt/environ.py:766), which
            # cannot do RDMA on EFA (vllm#41814, nixl#909).
            env["SGLANG_DISAGGREGATION_NIXL_BACKEND"] = nic.nixl_backend
        if role.kv_transfer.connector == "mooncake" and nic is not None \
                and nic.mooncake_protocol != "rdma" \
                and parse_version(self.version) >= MOONCAKE_PROTOCOL_SINCE:
            # MOONCAKE_PROTOCOL (default rdma) selects the transfer engine's transport
            # (distributed/device_communicators/mooncake_transfer_engine.py:207-209, 0.5.23).
            env["MOONCAKE_PROTOCOL"] = nic.mooncake_protocol
        if role.mode == "prefill":
            common += ["--disaggregation-bootstrap-port", str(BOOTSTRAP_PORT)]
        return common

    def launch(self, role: RoleInput, sizing: RoleSizing | None,
               startup_s: int | None = None, drain_s: int | None = None) -> EngineLaunch:
        """Build the launch of one instance of ``role`` (the role must have passed the rules);
        ``sizing`` is the role's memory plan, whose ``--mem-fraction-static`` is rendered.
        ``drain_s`` is unused: SGLang drains until its requests finish, within the pod's grace
        period (tokenizer_manager.py ``sigterm_watchdog``)."""
        mem_fraction_static = sizing.utilization
        lay = role.layout
        s = role.serving
        group = lay.tensor * lay.data
        common: list[str] = [
            "--model-path", role.model.argument(),
            "--served-model-name", role.model.name,
            "--host", POD_IP if role.network.bindAddress == "podIP" else "0.0.0.0",
            "--port", str(s.port),
            "--tp-size", str(group),
        ]
        # What the model needs on every command line (facts/requirements.py).
        common += required_flags(self.engine, self.version, role.arch)
        if lay.pipeline > 1:
            common += ["--pp-size", str(lay.pipeline)]
        if lay.data > 1:
            if self.has("--attn-dp-size"):
                common += ["--attn-dp-size", str(lay.data)]
            else:
                common += ["--dp-size", str(lay.data), "--enable-dp-attention"]
            if role.arch.moe.first_dense:
                common += ["--moe-dense-tp-size", "1"]
        if role.parallel.context and role.parallel.context > 1:
            common += ["--attn-cp-size", str(role.parallel.context), "--enable-prefill-cp",
                       "--cp-strategy", CP_STRATEGY]
        if lay.expert_parallel:
            common += ["--ep-size", str(group)]
        env: dict[str, str] = {"SGLANG_HEALTH_CHECK_TIMEOUT": str(HEALTH_CHECK_TIMEOUT_S)}
        moe = role.moe
        common += self._moe_args(role, sizing, env)
        common += self._transfer_args(role, env)
        if role.speculative is not None:
            steps = role.speculative.numSpeculativeTokens
            common += ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", str(steps),
                       "--speculative-eagle-topk", "1",
                       "--speculative-num-draft-tokens", str(steps + 1)]
            draft_a2a = DRAFT_A2A.get(moe.all2all) if moe is not None and moe.all2all else None
            if draft_a2a and self.has("--speculative-moe-a2a-backend"):
                common += ["--speculative-moe-a2a-backend", draft_a2a]
        max_len = role_max_len(role, "sglang")
        common += ["--context-length", str(max_len),
                   "--kv-cache-dtype", KV_DTYPE[s.kvCacheDtype],
                   "--mem-fraction-static", repr(round(mem_fraction_static, 3))]
        if s.maxNumSeqs is not None:
            common += ["--max-running-requests", str(s.maxNumSeqs)]
        elif not role.engine_default and (role.mode != "prefill" or role.admission is not None):
            # Admit what the plan sized (KV, graphs, DeepEP buffers), not SGLang's default
            # (sizing.concurrency: engine-default leaves it to SGLang: deployment.py).
            # SGLang divides it among attention-DP ranks (mem_cache/kv_cache_configurator.py
            # resolve_max_num_reqs: max // attn_dp_size): ceil per rank x ranks.
            per_rank = -(-role.concurrency // lay.data)
            common += ["--max-running-requests", str(per_rank * lay.data)]
        if s.maxNumBatchedTokens is not None:
            common += ["--chunked-prefill-size", str(s.maxNumBatchedTokens)]
        if s.swaFullTokensRatio is not None:
            common += ["--swa-full-tokens-ratio", repr(s.swaFullTokensRatio)]
        if s.kvCacheMemoryBytes and sizing is not None:
            # SGLang caps its pool in tokens (model_runner_kv_cache_mixin.py: min(profiled,
            # --max-total-tokens)): the bytes over the role's KV bytes per token.
            common += ["--max-total-tokens",
                       str(s.kvCacheMemoryBytes // max(sizing.kv_bytes_per_token, 1))]
        common += offload_args(s.weightOffload)
        normal_deepep = moe is not None and moe.all2all == "deepep_high_throughput"
        if s.enforceEager or (normal_deepep and role.mode != "prefill"):
            # DeepEP normal mode cannot be graph-captured: SGLang would switch graphs off
            # silently (arg_groups/moe_hook.py); say it on the command line instead.
            common += ["--disable-cuda-graph"]
        elif role.mode != "prefill":
            flag = ("--cuda-graph-max-bs-decode" if self.has("--cuda-graph-max-bs-decode")
                    else "--cuda-graph-max-bs")
            common += [flag, str(cuda_graph_batch(role))]

        notes: list[str] = []
        if role.speculative is not None and role.speculative_from:
            notes.append(f"speculative config of decode role {role.speculative_from!r}: prefill "
                         "sends the draft's hidden states with the KV (disaggregation/prefill.py)")
        ports = [Port("http", s.port)]
        # The disaggregation bootstrap server runs on node 0 of a prefill instance only
        # (python/sglang/srt/disaggregation/ bootstrap server, started by the node-0 scheduler).
        bootstrap = (Port("kv-bootstrap", BOOTSTRAP_PORT),) \
            if role.kv_transfer is not None and role.mode == "prefill" else ()
        per_pod, serves, pod_ports, rendezvous = _pod_args(role, bootstrap, notes)
        return EngineLaunch(
            program=("python3", "-m", "sglang.launch_server"),
            common=tuple(common),
            per_pod=tuple(tuple(a) for a in per_pod),
            serves_api=tuple(serves),
            http_pods=tuple(True for _ in per_pod),
            env=env,
            ports=tuple(ports),
            pod_ports=tuple(pod_ports),
            rendezvous_port=rendezvous,
            health_timeout_s=HEALTH_CHECK_TIMEOUT_S + 5,
            notes=tuple(notes),
        )


def _pod_args(role: RoleInput, bootstrap: tuple[Port, ...], notes: list[str]):
    """(per-pod arguments, which pods serve the API, per-pod ports, rendezvous port) of one
    instance: node ranks and ``--dist-init-addr`` over the leader's address for a multi-node
    instance (a note appended to ``notes``)."""
    lay = role.layout
    if lay.spread is Spread.SINGLE:
        return [[]], [True], [bootstrap], None
    n = len(lay.pods)
    shared = ["--nnodes", str(n)]
    per_pod = [shared + ["--node-rank", "0", "--dist-init-addr", f"{POD_IP}:{DIST_INIT_PORT}"]]
    for pod in lay.pods[1:]:
        per_pod.append(shared + ["--node-rank", str(pod.index),
                                 "--dist-init-addr", f"{LEADER_IP}:{DIST_INIT_PORT}"])
    serves = [True] + [False] * (n - 1)
    # Nodes 1.. run no API but bind --port too: a health server that serves their
    # schedulers' /metrics with --enable-metrics (entrypoints/engine.py, node_rank >= 1:
    # launch_dummy_health_check_server; utils/common.py adds the Prometheus route; the
    # metrics since sgl-project/sglang#7720, 2025-07, before 0.5.0).
    pod_ports = [(*bootstrap, Port("dist-init", DIST_INIT_PORT))] + [()] * (n - 1)
    notes.append(f"{n} nodes of one SGLang instance (tp {lay.tensor * lay.data}, "
                 f"pp {lay.pipeline}); node 0 serves the API")
    return per_pod, serves, pod_ports, DIST_INIT_PORT


def dialect(requested: str) -> SglangDialect:
    """The dialect for ``requested`` (raises versions.UnsupportedVersion outside 0.5.x)."""
    return SglangDialect(requested, select_known(requested, known_versions(), SUPPORTED))
