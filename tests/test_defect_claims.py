"""Findings on third-party manifests claim a defect only where there is one (issue #31: "never
apply moegen's own spec patterns to third-party values"; the corpus37 round of item 8).

Each class below was a defect claim the corpus audits judged false or debatable
(tests/corpus/audit): moegen's host sizing (POD003/POD004), a Hub re-download (MOD006) and a
shared node type (POOL004) are notices on imported manifests that say what moegen would do and
that it is not a defect; IMP016 is a notice where the engine container's memory limit bounds
/dev/shm; NET001 asks for the bootstrap interface only where a pod has more than one; POD001
leaves pods of one GPU process alone; LAY005 leaves a manifest that spans pods over Ray alone.
Each test failed before the change (the findings were warnings, or were raised at all).
"""

from __future__ import annotations

import pytest
from generator import pipeline
from generator.inputs import read_inputs
from tests.helpers import ROOT, shared

S1 = ROOT / "examples" / "s1-16xh20-pd.yaml"


def _findings(*parts: str, text: str | None = None, tmp_path=None):
    """(code, severity, line, message) of gen validate on a reference manifest (or ``text``)."""
    if text is not None:
        path = tmp_path / parts[-1]
        path.write_text(text)
    else:
        path = shared("reference", *parts)
    batch = read_inputs([path])
    return [(f.code, f.severity.value, f.location.line, f.message) for f in batch.all_findings()]


@pytest.fixture(scope="module")
def pd_aws():
    """llm-d's P/D guide on AWS (vLLM 0.26.0): decode TP 4 with 16 CPUs and 64Gi, prefill TP 1
    with a 16Gi limit under a 20Gi /dev/shm, both on p5en.48xlarge, weights from the Hub."""
    return _findings("corpus", "llmd-deployment-vllm-gpt-oss-120b-pd-aws.yaml")


def test_moegens_own_patterns_are_notices_on_a_manifest(pd_aws):
    got = {(c, line): (sev, msg) for c, sev, line, msg in pd_aws
           if c in ("POD003", "POD004", "POOL004", "MOD006")}
    # The decode's pod (line 16) under moegen's host sizing; the pools at the prefill's
    # selector (line 181); the Hub model argument (line 237).
    assert sorted(got) == [("MOD006", 237), ("POD003", 16), ("POD004", 16), ("POOL004", 181)]
    assert {sev for sev, _ in got.values()} == {"notice"}
    # Decode: 4 GPU workers x 4 cores + 1 API server x 2 + 3 other processes x 1 = 21 cores
    # (generator/sizing/host.py), against the manifest's 16.
    assert "cpu 16 is below the 21 cores" in got[("POD004", 16)][1]
    for _, msg in got.values():
        assert "[notice on an imported manifest: moegen" in msg and "not a defect" in msg


def test_no_shm_claim_on_a_pod_of_one_gpu_process(pd_aws):
    # The prefill (TP 1, one GPU: vLLM's uni executor) has a 16Gi limit under a 20Gi /dev/shm:
    # nothing there fills it, so no POD001 (a warning at line 181 before).
    assert [f for f in pd_aws if f[0] == "POD001"] == []


def test_ray_and_one_interface_are_not_claimed():
    # GKE's TP 8 x PP 2 LWS on vLLM 0.8.5: the pods span the model over Ray
    # (multi-node-serving.sh), on a pod network (eth0 only): no LAY005, no NET001 (both
    # warnings at line 27 before).
    got = _findings("manifests", "gke-lws-vllm-deepseek-r1-tp8-pp2.yaml")
    assert [c for c, *_ in got if c in ("LAY005", "NET001")] == []


def test_without_ray_lay005_speaks(tmp_path):
    # The same manifest with vllm serve and no Ray cluster: at 0.11.0 (the release assumed for
    # 0.8.5, IMP008) spanning TP x PP across pods needs --nnodes: LAY005, a warning (assumed).
    text = shared("reference", "manifests", "gke-lws-vllm-deepseek-r1-tp8-pp2.yaml").read_text()
    text = text.replace("bash /vllm-workspace/examples/online_serving/multi-node-serving.sh "
                        "leader --ray_cluster_size=$(LWS_GROUP_SIZE);", "") \
        .replace("bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker "
                 "--ray_address=$(LWS_LEADER_ADDRESS)", "sleep infinity")
    got = _findings("manifests", "no-ray.yaml", text=text, tmp_path=tmp_path)
    assert [(c, sev, line) for c, sev, line, _ in got if c == "LAY005"] == [
        ("LAY005", "warning", 27)]


def _s1_net001(tmp_path, pod: str) -> list[str]:
    overlay = tmp_path / "o.yaml"
    overlay.write_text("spec:\n  network: {socketInterface: null}\n" + pod)
    return [f.severity.value for f in pipeline.check(S1, [overlay]).findings
            if f.code == "NET001"]


def test_net001_on_a_multi_homed_pod_only(tmp_path):
    # S1 (decode spans 2 pods) without socketInterface, on the pod network (eth0 and lo only):
    # NCCL skips lo, Gloo resolves the hostname to eth0: no NET001 (a warning before).
    assert _s1_net001(tmp_path, "") == []
    # With a Multus secondary network the pod is multi-homed: the guess may be wrong.
    assert _s1_net001(tmp_path, "  pod: {annotations: {k8s.v1.cni.cncf.io/networks: rdma}}\n") \
        == ["warning"]


def test_imp016_is_a_notice_under_a_memory_limit():
    # GKE's Llama-4 Maverick Deployment: limit 1311Gi bounds its unsized /dev/shm: a notice.
    got = _findings("manifests", "gke-deployment-vllm-llama4-maverick-fp8-tp8.yaml")
    assert [(c, sev, line) for c, sev, line, _ in got if c == "IMP016"] == [
        ("IMP016", "notice", 76)]
    # The HDML variant's containers have no memory limit: the node's memory bounds it, a warning.
    got = _findings("manifests", "gke-lws-vllm-deepseek-r1-tp8-pp2-hdml.yaml")
    assert [(c, sev, line) for c, sev, line, _ in got if c == "IMP016"] == [
        ("IMP016", "warning", 68)]
