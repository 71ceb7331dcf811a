"""The pod-template hygiene of imported serving workloads (issue #31 item 5, the corpus classes
without a rule: generator/importer/hygiene.py).

IMP019 a non-engine container on a moving image tag, IMP020 an env name set twice in one
container, IMP021 an engine container with readiness/startup probes but no liveness probe,
IMP022 a package installed by the container's command at every start. Each test writes the
smallest manifest that shows the defect (exact code, severity and line) and its sound twin
(no finding); the corpus tests check the findings on the audited manifests they were judged on
(tests/corpus/audit).
"""

from __future__ import annotations

import pytest
from generator.importer import Options
from generator.inputs import read_inputs
from tests.helpers import shared

HEAD = ("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"   # lines 1-3
        "spec:\n  replicas: 1\n  template:\n    spec:\n      containers:\n"  # 4-8
        "      - name: vllm\n        image: vllm/vllm-openai:v0.33.0\n"      # 9-10
        "        args: [/models/DeepSeek-R1, --tensor-parallel-size, '8']\n"  # 11
        "        resources: {limits: {nvidia.com/gpu: 8}}\n")                # 12
PROBES = ("        startupProbe: {httpGet: {path: /health, port: 8000}}\n"
          "        readinessProbe: {httpGet: {path: /health, port: 8000}}\n"
          "        livenessProbe: {httpGet: {path: /health, port: 8000}}\n")
OURS = ("IMP019", "IMP020", "IMP021", "IMP022", "IMP023", "IMP024")


def _ours(text: str, tmp_path) -> list[tuple[str, str, int]]:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    found = read_inputs([path], opts=Options()).all_findings()
    return sorted((f.code, f.severity.value, f.location.line) for f in found if f.code in OURS)


def _messages(text: str, tmp_path, code: str) -> list[str]:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return [f.message for f in read_inputs([path], opts=Options()).all_findings()
            if f.code == code]


def test_sound_pod_has_no_hygiene_finding(tmp_path):
    assert _ours(HEAD + PROBES, tmp_path) == []


@pytest.mark.parametrize("image, flagged", [
    ("ghcr.io/llm-d/llm-d-router-disagg-sidecar:main", True),
    ("busybox", True),                                     # no tag: :latest
    ("registry:5000/tools/proxy", True),                   # the port is not a tag
    ("quay.io/x/evictor:latest", True),
    ("ghcr.io/llm-d/llm-d-routing-sidecar:v0.4.0", False),
    ("ghcr.io/llm-d/llm-d-router-disagg-sidecar:main@sha256:" + "a" * 64, False),
    ("registry:5000/tools/proxy:1.2", False),
])
def test_imp019_component_on_a_moving_tag(tmp_path, image, flagged):
    side = f"      - name: proxy\n        image: {image}\n"      # lines 16-17
    got = _ours(HEAD + PROBES + side, tmp_path)
    assert got == ([("IMP019", "warning", 17)] if flagged else [])


def test_imp019_names_the_pull_policy_and_leaves_the_engine_to_eng003(tmp_path):
    text = HEAD.replace("vllm/vllm-openai:v0.33.0", "vllm/vllm-openai:latest") + PROBES + (
        "      initContainers:\n      - name: proxy\n"                  # 16-17
        "        image: ghcr.io/llm-d/llm-d-router-disagg-sidecar:main\n"  # 18
        "        imagePullPolicy: Always\n        restartPolicy: Always\n")
    assert _ours(text, tmp_path) == [("IMP019", "warning", 18)]
    msg, = _messages(text, tmp_path, "IMP019")
    assert "init container proxy" in msg and "imagePullPolicy Always" in msg


def test_imp020_duplicate_env_name_the_last_wins(tmp_path):
    env = ("        env:\n        - {name: ENABLE_MTP, value: '0'}\n"       # 16-17
           "        - {name: OTHER, value: x}\n        - {name: ENABLE_MTP, value: '1'}\n")  # 19
    assert _ours(HEAD + PROBES + env, tmp_path) == [("IMP020", "warning", 19)]
    msg, = _messages(HEAD + PROBES + env, tmp_path, "IMP020")
    assert "line 17" in msg and "'1'" in msg
    # Distinct names: nothing.
    assert _ours(HEAD + PROBES + env.replace("ENABLE_MTP, value: '1'", "X, value: '1'"),
                 tmp_path) == []


def test_imp021_readiness_without_liveness(tmp_path):
    ready = "        readinessProbe: {httpGet: {path: /health, port: 8000}}\n"   # line 13
    assert _ours(HEAD + ready, tmp_path) == [("IMP021", "warning", 13)]
    # No probe at all is IMP017's, not IMP021's.
    assert _ours(HEAD, tmp_path) == []


@pytest.mark.parametrize("install, flagged", [
    ("pip install mooncake-transfer-engine &&", True),
    ("python3 -m pip install -U nixl &&", True),
    ("uv pip install lmcache &&", True),
    ("echo pip-install-free &&", False),
])
def test_imp022_package_install_at_start(tmp_path, install, flagged):
    text = HEAD.replace(
        "        args: [/models/DeepSeek-R1, --tensor-parallel-size, '8']\n",
        "        command: [/bin/bash, -c]\n        args:\n        - |\n"    # 11-13
        f"          {install} \\\n"                                      # 14
        "          vllm serve /models/DeepSeek-R1 --tensor-parallel-size 8\n") + PROBES
    assert _ours(text, tmp_path) == ([("IMP022", "warning", 14)] if flagged else [])


@pytest.fixture(scope="module")
def cks_mooncake():
    batch = read_inputs([shared("reference", "corpus",
                                "llmd-deployment-vllm-gpt-oss-120b-pd-cks-mooncake.yaml")])
    return sorted((f.code, f.severity.value, f.location.line) for f in batch.all_findings()
                  if f.code in OURS)


def test_corpus_cks_mooncake(cks_mooncake):
    # The decode's and the prefill's `pip install mooncake-transfer-engine-cuda13 && vllm
    # serve` (lines 51, 174) and the decode's routing sidecar on :main (line 119).
    assert cks_mooncake == [("IMP019", "warning", 119), ("IMP022", "warning", 51),
                            ("IMP022", "warning", 174)]


def test_imp023_container_without_an_image(tmp_path):
    side = "      initContainers:\n      - name: proxy\n        restartPolicy: Always\n"  # 16-18
    assert _ours(HEAD + PROBES + side, tmp_path) == [("IMP023", "error", 17)]


def test_imp023_placeholder_image(tmp_path):
    text = HEAD.replace("vllm/vllm-openai:v0.33.0", "<your-registry>/vllm:latest").replace(
        "args: [", "command: [vllm, serve, ") + PROBES
    assert ("IMP023", "error", 10) in _ours(text, tmp_path)
    msg, = _messages(text, tmp_path, "IMP023")
    assert "InvalidImageName" in msg


def test_imp023_not_on_kinds_whose_controller_fills_the_image(tmp_path):
    # KServe's LLMInferenceService "main" container takes the preset's image: no IMP023.
    text = ("apiVersion: serving.kserve.io/v1alpha1\nkind: LLMInferenceService\n"
            "metadata: {name: s}\nspec:\n  model: {uri: 'hf://openai/gpt-oss-20b'}\n"
            "  template:\n    containers:\n    - name: main\n"
            "      command: [vllm, serve, /mnt/models]\n")
    assert [c for c in _ours(text, tmp_path) if c[0] == "IMP023"] == []


def _sglang_host_network(addr: str, dns: str = "") -> str:
    return ("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\n"        # 1-3
            "spec:\n  replicas: 2\n  template:\n    spec:\n"                       # 4-7
            "      hostNetwork: true\n" + dns +                                     # 8
            "      containers:\n      - name: sglang\n"
            "        image: lmsysorg/sglang:v0.5.23\n"
            "        command: [python3, -m, sglang.launch_server, --model-path, /m,"
            f" --tp, '16', --nnodes, '2', --node-rank, '0', --dist-init-addr, '{addr}']\n"
            "        resources: {limits: {nvidia.com/gpu: 8}}\n" + PROBES)


@pytest.mark.parametrize("addr, dns, flagged", [
    ("sglang-master-pod:5000", "", True),
    ("sglang-master-pod:5000", "      dnsPolicy: ClusterFirst\n", True),
    ("sglang-master-pod:5000", "      dnsPolicy: ClusterFirstWithHostNet\n", False),
    ("10.0.0.5:5000", "", False),                    # an address needs no resolver
])
def test_imp024_host_network_rendezvous_by_name(tmp_path, addr, dns, flagged):
    got = [c for c in _ours(_sglang_host_network(addr, dns), tmp_path) if c[0] == "IMP024"]
    assert got == ([("IMP024", "error", 8)] if flagged else [])
