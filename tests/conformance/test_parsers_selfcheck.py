"""Self-check of the conformance checker: it must pass good command lines and reject bad ones.

Needs the engines venv (.ci/engines-venv.sh); without it these tests skip loudly, or fail when
CI=true. The tests of require_engines itself run everywhere.
"""

from __future__ import annotations

import json

import pytest

from . import runner
from .runner import check_commands, require_engines

EPLB = {"window_size": 1000, "step_interval": 3000, "num_redundant_experts": 32,
        "log_balancedness": True}

VLLM_DECODE = [
    "vllm", "serve", "/models/DeepSeek-V3",
    "--tensor-parallel-size", "1",
    "--data-parallel-size", "16",
    "--data-parallel-size-local", "8",
    "--enable-expert-parallel",
    "--all2all-backend", "deepep_low_latency",
    "--enable-eplb",
    "--eplb-config", json.dumps(EPLB, separators=(",", ":")),
    "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}',
    "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}',
    "--max-model-len", "32768",
    "--gpu-memory-utilization", "0.92",
    "--kv-cache-dtype", "fp8",
    "--served-model-name", "deepseek-ai/DeepSeek-V3",
    "--port", "8000",
]


def _replace(argv: list[str], flag: str, value: str) -> list[str]:
    out = list(argv)
    out[out.index(flag) + 1] = value
    return out


def _without(argv: list[str], flag: str, nvalues: int = 1) -> list[str]:
    i = argv.index(flag)
    return argv[:i] + argv[i + 1 + nvalues:]


@pytest.fixture(scope="module")
def vllm_results() -> dict[str, dict]:
    require_engines()
    legacy = _without(VLLM_DECODE, "--eplb-config") + [
        "--num-redundant-experts", "32", "--eplb-window-size", "1000"]
    headless_worker = [
        "vllm", "serve", "/models/DeepSeek-V3", "--headless",
        "--tensor-parallel-size", "1", "--data-parallel-size", "16",
        "--data-parallel-size-local", "8", "--data-parallel-start-rank", "8",
        "--data-parallel-address", "10.0.0.1", "--data-parallel-rpc-port", "13345",
        "--enable-expert-parallel", "--all2all-backend", "deepep_low_latency",
    ]
    cmds = [
        {"id": "decode", "argv": VLLM_DECODE,
         "env": {"VLLM_NIXL_SIDE_CHANNEL_HOST": "10.0.0.1", "VLLM_NIXL_SIDE_CHANNEL_PORT": "5600",
                 "VLLM_ENGINE_READY_TIMEOUT_S": "3600", "VLLM_USE_DEEP_GEMM": "1"}},
        {"id": "legacy-eplb", "argv": legacy},
        {"id": "bad-a2a", "argv": _replace(VLLM_DECODE, "--all2all-backend", "deepep_turbo")},
        {"id": "bad-eplb-key", "argv": _replace(VLLM_DECODE, "--eplb-config", '{"window":1000}')},
        {"id": "bad-kv-role", "argv": _replace(
            VLLM_DECODE, "--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"consumer"}')},
        {"id": "headless-worker", "argv": headless_worker},
        {"id": "headless-with-api-servers", "argv": headless_worker + ["--api-server-count", "2"]},
        {"id": "old-env", "argv": VLLM_DECODE, "env": {"VLLM_ALL2ALL_BACKEND": "deepep_low_latency"}},
    ]
    return {r["id"]: r for r in check_commands("vllm", cmds)}


def test_vllm_deepseek_decode_dp_ep_passes(vllm_results):
    r = vllm_results["decode"]
    assert r["ok"], r["error"]
    assert r["engine"] == "vllm" and r["engine_version"] == "0.33.0"
    assert r["unknown_env"] == []


def test_vllm_rejects_legacy_eplb_flags(vllm_results):
    r = vllm_results["legacy-eplb"]
    assert not r["ok"]
    assert "unrecognized arguments" in r["error"]
    assert "--num-redundant-experts" in r["error"] and "--eplb-window-size" in r["error"]


def test_vllm_rejects_bad_all2all_backend(vllm_results):
    r = vllm_results["bad-a2a"]
    assert not r["ok"]
    assert "--all2all-backend" in r["error"] and "invalid choice" in r["error"]


def test_vllm_rejects_bad_config_json(vllm_results):
    assert not vllm_results["bad-eplb-key"]["ok"]
    assert "EPLBConfig" in vllm_results["bad-eplb-key"]["error"]
    assert not vllm_results["bad-kv-role"]["ok"]
    assert "kv_role" in vllm_results["bad-kv-role"]["error"]


def test_vllm_headless_rules(vllm_results):
    assert vllm_results["headless-worker"]["ok"], vllm_results["headless-worker"]["error"]
    r = vllm_results["headless-with-api-servers"]
    assert not r["ok"] and "--headless" in r["error"]


def test_vllm_flags_unknown_env(vllm_results):
    r = vllm_results["old-env"]
    assert r["ok"]  # env does not change argument parsing ...
    assert r["unknown_env"] == ["VLLM_ALL2ALL_BACKEND"]  # ... but 0.33 no longer reads it


SGLANG_DECODE = [
    "python3", "-m", "sglang.launch_server",
    "--model-path", "/models/DeepSeek-V3", "--served-model-name", "deepseek-ai/DeepSeek-V3",
    "--trust-remote-code", "--tp-size", "16", "--dp-size", "16", "--enable-dp-attention",
    "--moe-a2a-backend", "deepep", "--deepep-mode", "low_latency",
    "--disaggregation-mode", "decode", "--disaggregation-transfer-backend", "nixl",
    "--kv-cache-dtype", "fp8_e4m3", "--nnodes", "2", "--node-rank", "0",
    "--dist-init-addr", "10.0.0.1:5000", "--host", "0.0.0.0", "--port", "30000",
]
ROUTER_PD = ["--pd-disaggregation", "--prefill", "http://prefill-0.prefill:30000", "8998",
             "--decode", "http://decode-0.decode:30000", "--host", "0.0.0.0", "--port", "8000"]


@pytest.fixture(scope="module")
def sglang_results() -> dict[str, dict]:
    require_engines()
    cmds = [
        {"id": "decode", "argv": SGLANG_DECODE},
        {"id": "sglang-serve", "argv": ["sglang", "serve", "/models/DeepSeek-V3", "--tp-size", "8"]},
        {"id": "deepep-moe", "argv": SGLANG_DECODE + ["--enable-deepep-moe"]},
        {"id": "kv-fp8", "argv": _replace(SGLANG_DECODE, "--kv-cache-dtype", "fp8")},
        {"id": "smg-pd", "argv": ["python3", "-m", "smg.launch_router", *ROUTER_PD]},
        {"id": "smg-pd-k8s", "argv": [
            "python3", "-m", "smg.launch_router", "--pd-disaggregation", "--service-discovery",
            "--prefill-selector", "app=prefill", "--decode-selector", "app=decode",
            "--service-discovery-namespace", "llm", "--port", "8000"]},
        {"id": "sglang-router-pd", "argv": [
            "python3", "-m", "sglang_router.launch_router", *ROUTER_PD, "--policy", "cache_aware"]},
        {"id": "sglang-router-bad-policy", "argv": [
            "python3", "-m", "sglang_router.launch_router", *ROUTER_PD, "--policy", "least_load"]},
    ]
    return {r["id"]: r for r in check_commands("sglang", cmds)}


def test_sglang_deepseek_decode_passes(sglang_results):
    for cid in ("decode", "sglang-serve"):
        r = sglang_results[cid]
        assert r["ok"], (cid, r["error"])
        assert r["engine"] == "sglang" and r["engine_version"] == "0.5.23"


def test_sglang_rejects_removed_and_bad_flags(sglang_results):
    r = sglang_results["deepep-moe"]
    assert not r["ok"] and "--enable-deepep-moe" in r["error"]
    r = sglang_results["kv-fp8"]
    assert not r["ok"] and "--kv-cache-dtype" in r["error"]


def test_router_pd_commands_pass(sglang_results):
    for cid, engine in (("smg-pd", "smg"), ("smg-pd-k8s", "smg"),
                        ("sglang-router-pd", "sglang_router")):
        r = sglang_results[cid]
        assert r["ok"], (cid, r["error"])
        assert r["engine"] == engine
    r = sglang_results["sglang-router-bad-policy"]
    assert not r["ok"] and "--policy" in r["error"]


# --- the skip/fail switch itself (no engines venv needed) ---

def test_require_engines_skips_loudly_without_venv(tmp_path, monkeypatch):
    monkeypatch.setenv("MOEGEN_ENGINES_VENV", str(tmp_path / "nope"))
    monkeypatch.delenv("CI", raising=False)
    assert runner.engines_python() is None
    with pytest.raises(pytest.skip.Exception, match="NOT CHECKED"):
        require_engines()
    with pytest.raises(runner.EngineCheckError, match="NOT CHECKED"):
        check_commands("vllm", [{"id": "x", "argv": ["vllm", "serve", "m"]}])


def test_require_engines_fails_under_ci_without_venv(tmp_path, monkeypatch):
    monkeypatch.setenv("MOEGEN_ENGINES_VENV", str(tmp_path / "nope"))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must build"):
        require_engines()


def test_half_built_venv_is_not_used(tmp_path, monkeypatch):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    monkeypatch.setenv("MOEGEN_ENGINES_VENV", str(venv))
    assert runner.engines_python() is None  # no marker: the build never finished
    (venv / runner.MARKER_NAME).write_text("ok\n")
    assert runner.engines_python() == venv / "bin" / "python"
