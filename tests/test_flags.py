"""Rendered vLLM arguments, asserted per role and pod for the seed systems (hand-written)."""

from __future__ import annotations

import json

import pytest

from generator.engines import vllm
from generator.facts.versions import UnsupportedVersion
from tests.helpers import EXAMPLES, ROOT, render_spec


def _launch(plan, role):
    return next(r.launch for r in plan.roles if r.name == role)


def _opts(argv: list[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is not None and not nxt.startswith("--"):
                out[a] = nxt
                i += 2
                continue
            out[a] = None
        i += 1
    return out


def test_s1_decode_leader_and_worker():
    _, plan, _ = render_spec(EXAMPLES / "s1-16xh20-pd.yaml")
    launch = _launch(plan, "decode")
    leader = _opts(launch.argv(0)[3:])
    worker = _opts(launch.argv(1)[3:])
    assert launch.argv(0)[:3] == ["vllm", "serve", "/models/DeepSeek-V3"]
    # DP16 over 2 pods of 8 GPUs: 8 local ranks each; worker starts at rank 8.
    assert leader["--data-parallel-size"] == worker["--data-parallel-size"] == "16"
    assert leader["--data-parallel-size-local"] == worker["--data-parallel-size-local"] == "8"
    assert "--data-parallel-start-rank" not in leader and "--headless" not in leader
    assert worker["--data-parallel-start-rank"] == "8" and "--headless" in worker
    assert leader["--data-parallel-address"] == "${MOEGEN_POD_IP}"
    assert worker["--data-parallel-address"] == "${MOEGEN_LEADER_IP}"
    assert leader["--data-parallel-rpc-port"] == worker["--data-parallel-rpc-port"] == "29550"
    assert leader["--tensor-parallel-size"] == "1"
    assert "--enable-expert-parallel" in leader
    assert leader["--all2all-backend"] == "deepep_low_latency"
    assert json.loads(leader["--eplb-config"]) == {
        "window_size": 1000, "step_interval": 3000, "num_redundant_experts": 32,
        "log_balancedness": True}
    assert "--enable-eplb" in leader
    # Decode recomputes a prompt whose prefill went away (vLLM >= 0.13: generator/lifecycle.py).
    assert json.loads(leader["--kv-transfer-config"]) == {
        "kv_connector": "NixlConnector", "kv_role": "kv_consumer",
        "kv_load_failure_policy": "recompute"}
    assert json.loads(leader["--speculative-config"]) == {"method": "mtp", "num_speculative_tokens": 1}
    assert leader["--max-model-len"] == "32768"
    assert leader["--gpu-memory-utilization"] == "0.92"
    assert leader["--kv-cache-dtype"] == "fp8"
    assert leader["--served-model-name"] == "deepseek-ai/DeepSeek-V3"
    # None of the seed documents' removed EPLB flags.
    for flag in ("--num-redundant-experts", "--eplb-window-size", "--eplb-step-interval",
                 "--eplb-log-balancedness"):
        assert flag not in leader
    # Leader and worker differ only in rank/address/headless flags.
    assert launch.common == tuple(launch.argv(1)[3:3 + len(launch.common)])


def test_s1_prefill_single_node():
    _, plan, _ = render_spec(EXAMPLES / "s1-16xh20-pd.yaml")
    launch = _launch(plan, "prefill")
    opts = _opts(launch.argv(0)[3:])
    assert len(launch.per_pod) == 1
    assert opts["--tensor-parallel-size"] == "8"
    assert "--data-parallel-size" not in opts and "--enable-expert-parallel" not in opts
    assert json.loads(opts["--kv-transfer-config"])["kv_role"] == "kv_producer"
    assert launch.env["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5600"


def test_s1_32_unified_four_pods():
    _, plan, _ = render_spec(EXAMPLES / "s1-32xh20-unified.yaml")
    launch = _launch(plan, "serve")
    starts = [_opts(launch.argv(i)[3:]).get("--data-parallel-start-rank") for i in range(4)]
    assert starts == [None, "8", "16", "24"]
    opts = _opts(launch.argv(0)[3:])
    assert opts["--max-num-seqs"] == "7" and opts["--gpu-memory-utilization"] == "0.9"
    assert json.loads(opts["--eplb-config"])["num_redundant_experts"] == 32
    assert "--kv-transfer-config" not in opts


def test_pod_per_rank_external_lb():
    _, plan, _ = render_spec(EXAMPLES / "s1-16xh20-pd.yaml",
                             [ROOT / "tests/golden/s1-pod-per-rank/overlay.yaml"])
    launch = _launch(plan, "decode")
    assert len(launch.per_pod) == 16
    for r in range(16):
        opts = _opts(launch.argv(r)[3:])
        assert opts["--data-parallel-rank"] == str(r)
        assert "--headless" not in opts and "--data-parallel-start-rank" not in opts
    assert all(launch.serves_api)


def test_dialect_selection_greatest_known_not_above():
    assert vllm.dialect("0.33.4").version == "0.33.0"
    assert vllm.dialect("0.14.1").version == "0.14.1"
    assert vllm.dialect("0.21.5").version == "0.21.0"
    assert vllm.dialect("0.11.0").all2all_by_env
    assert not vllm.dialect("0.11.1").all2all_by_env
    assert vllm.dialect("0.19.1").gpu_memory_utilization_default == 0.9
    assert vllm.dialect("0.20.0").gpu_memory_utilization_default == 0.92
    assert "MooncakeConnector" not in vllm.dialect("0.12.0").connector_classes
    assert "MooncakeConnector" in vllm.dialect("0.13.0").connector_classes
    assert vllm.dialect("0.12.0").connectors == ["nixl", "lmcache"]
    assert vllm.dialect("0.13.0").connectors == ["nixl", "mooncake", "lmcache"]
    for bad in ("0.10.9", "0.34.0", "1.0.0"):
        with pytest.raises(UnsupportedVersion):
            vllm.dialect(bad)


def test_rendered_flags_exist_in_the_pinned_release():
    """Every option an example or golden case renders (the user's engineArgs included) is one
    its pinned release's own parser has (every release's full option list, per-release data)."""
    from tests.test_golden import cases
    for name, spec, overlays in cases():
        checked, plan, _ = render_spec(spec, overlays)
        options = checked.dialect.options
        assert len(options) > 150, name   # the full list, not the tracked subset
        for role in plan.roles:
            for pod in range(len(role.launch.per_pod)):
                for arg in role.launch.argv(pod)[3:]:
                    if arg.startswith("--"):
                        assert arg in options, (name, role.name, arg)


def test_s3_sglang_decode_dp16_ep16():
    """SGLang: --tp-size is the instance's GPU count per stage (tensor x data = 16), attention
    is data-parallel, DeepEP low-latency for decode, MTP as EAGLE with topk 1 and steps + 1
    draft tokens, the planned mem_fraction_static rendered explicitly."""
    checked, plan, _ = render_spec(EXAMPLES / "s3-v4pro-pd-dp16.yaml")
    launch = _launch(plan, "decode")
    leader = _opts(launch.argv(0)[3:])
    worker = _opts(launch.argv(1)[3:])
    assert launch.argv(0)[:3] == ["python3", "-m", "sglang.launch_server"]
    assert leader["--tp-size"] == "16" and leader["--attn-dp-size"] == "16" and leader["--ep-size"] == "16"
    # 0.5.22+ spelling: --dp-size N --enable-dp-attention is deprecated and rewritten to
    # --attn-dp-size N (sglang arg_groups/parallel_hook.py handle_deprecated_dp_attention).
    assert "--enable-dp-attention" not in leader and "--dp-size" not in leader
    # DeepSeek-V4 has no dense layers: no --moe-dense-tp-size.
    assert "--moe-dense-tp-size" not in leader
    assert leader["--moe-a2a-backend"] == "deepep" and leader["--deepep-mode"] == "low_latency"
    assert leader["--speculative-algorithm"] == "EAGLE"
    assert leader["--speculative-num-steps"] == "3" and leader["--speculative-num-draft-tokens"] == "4"
    assert leader["--speculative-eagle-topk"] == "1"
    assert leader["--kv-cache-dtype"] == "fp8_e4m3"
    assert leader["--disaggregation-mode"] == "decode"
    assert leader["--disaggregation-transfer-backend"] == "mooncake"
    assert leader["--disaggregation-ib-device"] == "mlx5_0,mlx5_1,mlx5_2,mlx5_3"
    # 256 sequences / 16 ranks = 16 per rank -> graph batch 16.
    assert leader["--cuda-graph-max-bs-decode"] == "16"
    z = next(z for z in checked.sizing if z.name == "decode")
    assert leader["--mem-fraction-static"] == repr(round(z.utilization, 3))
    assert leader["--nnodes"] == worker["--nnodes"] == "2"
    assert leader["--node-rank"] == "0" and worker["--node-rank"] == "1"
    assert leader["--dist-init-addr"] == "${MOEGEN_POD_IP}:20000"
    assert worker["--dist-init-addr"] == "${MOEGEN_LEADER_IP}:20000"
    assert "--headless" not in worker


def test_s3_sglang_prefill_pp2_cp8():
    _, plan, _ = render_spec(EXAMPLES / "s3-v4pro-pd-dp16.yaml")
    opts = _opts(_launch(plan, "prefill").argv(0)[3:])
    assert opts["--tp-size"] == "8" and opts["--pp-size"] == "2" and opts["--attn-cp-size"] == "8"
    # --attn-cp-size alone binds no CP strategy (layers/cp/base.py): prefill CP needs both.
    assert "--enable-prefill-cp" in opts and opts["--cp-strategy"] == "interleave"
    assert opts["--disaggregation-bootstrap-port"] == "8998"
    assert "--cuda-graph-max-bs-decode" not in opts   # SGLang runs disaggregated prefill eager
    # Prefill carries the decode role's MTP config (EAGLE, 3 steps, 4 draft tokens).
    assert opts["--speculative-algorithm"] == "EAGLE" and opts["--speculative-num-steps"] == "3"
    assert opts["--speculative-num-draft-tokens"] == "4"


def test_sglang_dp_attention_runs_dense_layers_data_parallel():
    """DeepSeek-V3 decode at DP32 on SGLang: --tp-size 32 would shard the dense MLP into
    18,432 / 32 = 576-wide pieces (not a multiple of the 128-wide FP8 blocks: the engine refuses
    to load); --moe-dense-tp-size 1 keeps the dense layers whole on every rank."""
    _, plan, _ = render_spec(EXAMPLES / "s1-16xh20-pd.yaml", [ROOT / "tests/golden/s3-statefulset-sglang-0.5.10/overlay.yaml"])
    opts = _opts(_launch(plan, "decode").argv(0)[3:])
    assert opts["--tp-size"] == "16" and opts["--moe-dense-tp-size"] == "1"
    # 0.5.10 predates --attn-dp-size (0.5.22): the old spelling.
    assert opts["--dp-size"] == "16" and "--enable-dp-attention" in opts


def test_sglang_default_mem_fraction_matches_the_reserve_formula():
    """SGLang's reserve (MB) for TP8 on H20-96GB: 512 + 1.5 x 8192 + 2 x 512 + 1024 x 8 / 8 =
    14,848 -> mfs = (97,871 - 14,848) / 97,871 = 0.848 (SGLang 0.5.x server_args.py
    _handle_gpu_memory_settings; docs/design.md §5)."""
    from generator.sizing.sglang_budget import default_mem_fraction_static
    assert default_mem_fraction_static(97_871, 8, 1, 1, False, 8192, 512, False) == \
        round((97_871 - 14_848) / 97_871, 3) == 0.848
    # tp16 dp16 DP attention, cgmbs 512 on H20-141GB: + 3 x 512 x 16 + 1.5 x 512 x 16.
    reserve = 512 + 1.5 * 8192 + 2 * 512 + 1024 * 16 / 8 + 3 * 512 * 16 + 1.5 * 512 * 16
    assert default_mem_fraction_static(143_771, 16, 1, 16, True, 8192, 512, False) == \
        round((143_771 - reserve) / 143_771, 3) == 0.633


def test_rendered_sglang_options_exist_in_the_pinned_release():
    """Every option of every SGLang case exists in its pinned release's parser (per-release
    data from shared/reference/engines/sglang-flags-by-version.json)."""
    from tests.test_golden import cases
    seen = 0
    for name, spec, overlays in cases():
        checked, plan, _ = render_spec(spec, overlays)
        if plan.engine != "sglang":
            continue
        options = checked.dialect.options
        for role in plan.roles:
            for pod in range(len(role.launch.per_pod)):
                for arg in role.launch.argv(pod)[3:]:
                    if arg.startswith("--"):
                        assert arg in options, (name, role.name, arg)
                        seen += 1
    assert seen > 50


def test_sglang_0_5_10_uses_the_old_graph_flag():
    _, plan, _ = render_spec(EXAMPLES / "s1-16xh20-pd.yaml",
                             [ROOT / "tests/golden/s3-statefulset-sglang-0.5.10/overlay.yaml"])
    opts = _opts(_launch(plan, "decode").argv(0)[3:])
    # 200 sequences / 16 ranks = 13 per rank -> graph batch 16 (multiples of 8).
    assert opts["--cuda-graph-max-bs"] == "16" and "--cuda-graph-max-bs-decode" not in opts
