"""KEDA autoscaling (roles[].autoscaling): bounds from the pool, behaviour from the cold start,
queries on the PodMonitor's labels, and a LeaderWorkerSet that leaves replicas to the scaler."""

from __future__ import annotations

import json

import yaml

from generator.layout import max_instances
from tests.helpers import EXAMPLES, ROOT, render_spec

OVERLAY = ROOT / "tests" / "golden" / "s1-autoscaling" / "autoscaling.yaml"


def test_max_instances_counts_whole_instances_in_free_nodes():
    # DP16 over 8-GPU nodes: 2 nodes per instance; 6 free nodes hold 3, 5 hold 2.
    assert max_instances(1, 16, 1, True, "lws", 8, 6) == 3
    assert max_instances(1, 16, 1, True, "lws", 8, 5) == 2
    # TP2 single-node instances: 4 to an 8-GPU node when they may share it (12 in 3 nodes),
    # one a node when they may not (hostNetwork, placement, anti-affinity).
    assert max_instances(2, 1, 1, False, "lws", 8, 3, share_nodes=True) == 12
    assert max_instances(2, 1, 1, False, "lws", 8, 3) == 3
    # Pod-per-rank TP2 ranks pack 4 per 8-GPU node: DP2 instances, 2 per node -> 6 in 3 nodes.
    assert max_instances(2, 2, 1, False, "pod-per-rank", 8, 3) == 6
    assert max_instances(8, 2, 1, True, "lws", 8, 1) == 0


def test_decode_scaledobject_follows_the_pool_and_the_cold_start():
    """S1 decode on a 6-node pool: maxReplicaCount 6 nodes / 2 per instance = 3; minReplicaCount
    = replicas 1; the decode pods' startup budget is 1,860 s (gen size: load 352 s + warm-up
    1,200 s + rendezvous 300 s = 1,852 s, rounded up to the startup probe's 30 s period), so one instance per min(1,860, 1,800) s up, and a scale-down
    window of 1,860 s; the query sums the role's queued requests (AverageValue per instance)."""
    _, _, files = render_spec(EXAMPLES / "s1-16xh20-pd.yaml", [OVERLAY])
    so = yaml.safe_load(files["decode-scaledobject.yaml"])["spec"]
    assert so["scaleTargetRef"] == {"apiVersion": "leaderworkerset.x-k8s.io/v1",
                                    "kind": "LeaderWorkerSet", "name": "dsv3-pd-decode"}
    assert (so["minReplicaCount"], so["maxReplicaCount"]) == (1, 3)
    behavior = so["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert 352 + 1200 + 300 == 1852 and behavior["scaleDown"]["stabilizationWindowSeconds"] == 1860
    assert behavior["scaleUp"]["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 1800}]
    (trigger,) = so["triggers"]
    assert trigger["metricType"] == "AverageValue" and trigger["metadata"]["threshold"] == "8"
    # A vLLM 0.20+ decode role: only the requests waiting for capacity, not for their KV.
    assert trigger["metadata"]["query"] == (
        'sum(vllm:num_requests_waiting_by_reason{app_kubernetes_io_instance="dsv3-pd",'
        'moegen_dev_role="decode",reason="capacity"})')
    decode = yaml.safe_load(files["decode-lws.yaml"])
    prefill = yaml.safe_load(files["prefill-lws.yaml"])
    assert "replicas" not in decode["spec"] and prefill["spec"]["replicas"] == 1
    assert "prefill-scaledobject.yaml" not in files


def test_bounds_that_cannot_scale_are_a_warning(tmp_path, capsys):
    """S1's decode pool holds exactly its one instance: autoscaling between 1 and 1 is AUT006."""
    from generator.cli import run
    over = tmp_path / "o.yaml"
    over.write_text("spec:\n  monitoring: {enabled: true, prometheusUrl: 'http://p:9090'}\n"
                    "  roles:\n    - name: decode\n      autoscaling: {target: 8}\n")
    assert run(["validate", str(EXAMPLES / "s1-16xh20-pd.yaml"), "-f", str(over),
                "--format", "json"]) == 0
    findings = [f for f in json.loads(capsys.readouterr().out)["findings"]
                if f["severity"] != "notice"]   # S1's NIXL restart race (RST011)
    assert [f["code"] for f in findings] == ["AUT006"]
    assert "between 1 and 1 instances" in findings[0]["message"]
