"""Unified shape: one engine pod serving the API itself (no router), started, served, restarted.

examples/s1-32xh20-unified.yaml through tests/execution/overlays/unified-small.yaml (one 1-GPU pod,
TP1, eager) and vllm-0.32.yaml, run by tests/execution/kubelet.py with the real vLLM (CPU build).
"""

from __future__ import annotations

import pytest

from tests.execution import client
from tests.execution.conftest import fact, ip_prefix, render, usage
from tests.execution.kubelet import Cluster

pytestmark = pytest.mark.execution
SHAPE = "unified single pod (s1-32xh20-unified + unified-small + vllm-0.32)"
MODEL = "deepseek-ai/DeepSeek-V2-Lite-Chat"   # the rendered --served-model-name
SERVICE = "dsv3-dp32-serve-api"


@pytest.fixture(scope="module")
def cluster(runtime, checkpoint, tmp_path_factory, request):
    work = tmp_path_factory.mktemp("unified")
    out = render("s1-32xh20-unified.yaml", ["unified-small.yaml", "vllm-0.32.yaml"], work / "out")
    with Cluster(out, work, runtime, checkpoint, ip_prefix()) as c:
        print(c.substitutions())
        c.start(*c.pods)
        yield c
        usage(request, c)


def test_pod_ready_within_its_startup_budget(cluster, request):
    assert list(cluster.pods) == ["dsv3-dp32-serve-0"]   # an LWS of size 1: the leader pod only
    ready = cluster.wait_ready(*cluster.pods)
    fact(request, f"ready after {ready['dsv3-dp32-serve-0']} s "
                  f"(rendered startup budget {cluster.pods['dsv3-dp32-serve-0'].startup_budget_s:.0f} s)")


def test_completion_through_the_service(cluster):
    pod, url = cluster.service_url(SERVICE)
    reply = client.complete(url, MODEL, "Kubernetes manifests for DeepSeek", max_tokens=8)
    assert reply.ok, reply.body
    assert reply.body["model"] == MODEL
    # ignore_eos: exactly max_tokens generated
    assert reply.body["usage"]["completion_tokens"] == 8
    # the tokenizer is byte-level without merges and adds no BOS: one prompt token per byte
    assert reply.body["usage"]["prompt_tokens"] == len("Kubernetes manifests for DeepSeek") == 33


def test_killed_pod_group_is_recreated_and_serves_again(cluster, request):
    [pod] = cluster.pods
    _, url = cluster.service_url(SERVICE)
    cluster.kill(pod)
    assert client.complete(url, MODEL, "while down").status == 0   # nothing listens
    members = cluster.recreate_group(pod)                          # RecreateGroupOnPodRestart
    assert members == [pod]
    ready = cluster.wait_ready(pod)
    fact(request, f"re-created pod ready after {ready[pod]} s")
    # a new pod has a new address: the Service sends to it (its endpoints follow the pods)
    _, new_url = cluster.service_url(SERVICE)
    assert new_url != url
    reply = client.complete(new_url, MODEL, "after the restart", max_tokens=4)
    assert reply.ok, reply.body
    assert reply.body["usage"]["completion_tokens"] == 4
