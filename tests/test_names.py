"""Name-length rules (NAME002) count the highest group an autoscaled role reaches."""

from __future__ import annotations

from generator import pipeline

#: The longest metadata.name (40) and a 9-character role: the role's LeaderWorkerSet group
#: StatefulSets are <name>-decode-ab-<group>, 40 + 11 + digits characters.
SPEC = """\
apiVersion: moegen.dev/v1alpha1
kind: InferenceDeployment
metadata: {{name: {name}}}
spec:
  model: {{name: m, architecture: deepseek-v3, weights: fp8, path: /m, volume: {{persistentVolumeClaim: {{claimName: w}}}}}}
  engine: {{name: vllm, version: "0.33.0", image: vllm/vllm-openai:v0.33.0}}
  monitoring: {{enabled: true, prometheusUrl: "http://prometheus.monitoring.svc:9090"}}
  nodePools:
    p: {{gpu: H20-141GB, gpusPerNode: 8, nodes: 12, nodeSelector: {{pool: p}}}}
  roles:
    - name: decode-ab
      mode: unified
      nodePool: p
      parallel: {{tensor: 8}}
{autoscaling}
"""
NAME = "d" * 40


def _name002(tmp_path, autoscaling: str = "") -> list[str]:
    path = tmp_path / "spec.yaml"
    path.write_text(SPEC.format(name=NAME, autoscaling=autoscaling))
    checked = pipeline.check(path)
    assert not [f for f in checked.findings if f.code.startswith("SCH")], checked.findings
    return [f.message for f in checked.findings if f.code == "NAME002"]


def test_autoscaled_role_names_fit_at_max_replicas(tmp_path):
    """At replicas 1 the highest group is 0: <name>-decode-ab-0 is 40 + 11 + 1 = 52 characters,
    the controller limit (63 - 11 for the controller-revision-hash label)."""
    assert 40 + len("-decode-ab-") + 1 == 52 == 63 - 11
    assert _name002(tmp_path) == []
    # maxReplicas 12: group 11, <name>-decode-ab-11 is 53 characters.
    scaled = _name002(tmp_path, "      autoscaling: {metric: waiting, target: 8, maxReplicas: 12}")
    assert len(scaled) == 1 and "is 53 characters" in scaled[0], scaled
    # No maxReplicas: 12 nodes hold 12 single-node TP8 instances, so again group 11.
    default = _name002(tmp_path, "      autoscaling: {metric: waiting, target: 8}")
    assert len(default) == 1 and "is 53 characters" in default[0], default
    # maxReplicas 10: group 9, one digit: fits.
    assert _name002(tmp_path, "      autoscaling: {metric: waiting, target: 8, maxReplicas: 10}") \
        == []
