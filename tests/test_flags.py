"""Rendered vLLM arguments, asserted per role and pod for the seed systems (hand-written)."""

from __future__ import annotations

import json

from generator.engines import vllm
from generator.engines.versions import UnsupportedVersion
from tests.helpers import EXAMPLES, ROOT, render_spec

import pytest


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
    assert json.loads(leader["--kv-transfer-config"]) == {
        "kv_connector": "NixlConnector", "kv_role": "kv_consumer"}
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
    assert opts["--max-num-seqs"] == "200" and opts["--gpu-memory-utilization"] == "0.9"
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
    assert "MooncakeConnector" not in vllm.dialect("0.12.0").connectors
    assert "MooncakeConnector" in vllm.dialect("0.13.0").connectors
    for bad in ("0.10.9", "0.34.0", "1.0.0"):
        with pytest.raises(UnsupportedVersion):
            vllm.dialect(bad)


def test_rendered_flags_exist_in_the_pinned_release():
    """Every option the examples render is one the dialect's release knows (per-release data)."""
    for spec in sorted(EXAMPLES.glob("*.yaml")):
        checked, plan, _ = render_spec(spec)
        options = checked.dialect.options
        for role in plan.roles:
            for pod in range(len(role.launch.per_pod)):
                for arg in role.launch.argv(pod)[3:]:
                    if arg.startswith("--"):
                        assert arg in options, (spec.name, role.name, arg)
