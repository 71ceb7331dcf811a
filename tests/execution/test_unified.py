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


def test_bench_job_runs_the_real_client_and_feeds_gen_calibrate(cluster, request, tmp_path):
    """gen bench's Job, run with the real `vllm bench serve` of the CPU runtime against the
    rendered client Service (S10), and its pod log through gen calibrate: the path users run
    (the numbers are a CPU's). 8 prompts of 32/8 tokens, 8 in flight (sizing.concurrency)."""
    import yaml

    from generator.cli import run
    from tests.execution.conftest import OVERLAYS
    from tests.helpers import EXAMPLES
    spec = EXAMPLES / "s1-32xh20-unified.yaml"
    overlays = ["-f", str(OVERLAYS / "unified-small.yaml"), "-f", str(OVERLAYS / "vllm-0.32.yaml"),
                "-f", str(OVERLAYS / "bench-traffic.yaml")]
    out = tmp_path / "bench"
    assert run(["bench", str(spec), *overlays, "-o", str(out), "--num-prompts", "8",
                "--keep", "0"]) == 0
    [pod] = cluster.pods
    cluster.wait_ready(pod)
    job = cluster.add_job(out / "bench-job.yaml")
    print(cluster.substitutions())
    cluster.start(job)
    rc = cluster.run_to_completion(job, cluster.allowance(factor=3, floor=300))
    log = cluster.log(job)
    assert rc == 0, log[-4000:]
    (tmp_path / "bench.log").write_text(log)
    (tmp_path / "engine.log").write_text(cluster.log(pod))      # kubectl logs of the engine pod
    profile = tmp_path / "profile.yaml"
    assert run(["calibrate", str(tmp_path / "bench.log"), f"serve={tmp_path / 'engine.log'}",
                "--spec", str(spec), *overlays, "-o", str(profile)]) == 0
    doc = yaml.safe_load(profile.read_text())
    [r] = doc["spec"]["runs"]
    # ignore_eos and --random-range-ratio 0.0: every request 32 tokens in, 8 out
    assert r["traffic"] == {"inputTokens": 32, "outputTokens": 8, "concurrency": 8.0}
    assert r["client"] == "vllm bench serve"
    assert set(doc["spec"]["factors"]) == {"ttft", "tpot", "output"}
    f = doc["spec"]["factors"]
    fact(request, "bench Job on CPU: measured/predicted TTFT x{:.1f}, TPOT x{:.1f}, output "
                  "tokens/s predicted/measured x{:.1f}".format(f["ttft"]["factor"],
                                                               f["tpot"]["factor"],
                                                               f["output"]["factor"]))
    # the engine's memory line: S4's 64 MiB of KV in blocks of 16 tokens of 2 layers x 576 x 2 B
    # = 2304 B/token: 67,108,864 // (16 x 2304) = 1820 blocks = 29,120 tokens ("CPU KV cache size")
    [mem] = doc["spec"]["memory"]
    assert (mem["role"], mem["engine"], mem["kvTokensPerRank"]["measured"]) == ("serve", "vllm", 29120)
    # one run: each factor is that run's own ratio
    # (the profile lists the measured TPOT rounded to 0.001 ms: on a CPU's tens of microseconds
    # that rounding alone moves the ratio by up to 0.0005 / tpotMs)
    measured = r["measured"]["tpotMs"]
    assert f["tpot"]["factor"] == pytest.approx(measured / r["predicted"]["tpotMs"],
                                                rel=1e-3 + 0.0005 / measured)
