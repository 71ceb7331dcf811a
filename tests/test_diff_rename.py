"""gen diff across a rename (a new user's trial, day 42): metadata.name qwen-tp1 -> qwen-tp2 with
the role's tensor parallelism 1 -> 2. Every object gets a new name, so the StatefulSet is not
rolled: the old one is deleted (Argo CD prunes it in its sync wave, the new one is created in the
same wave: argoproj/argo-cd#5199, PruneLast=true defers the prune to after the sync) and the new
one starts cold. Before, moegen paired the two by role name and said::

    serve (StatefulSet in serve-statefulset.yaml, 2 instances): PODS RESTART
      rollout: StatefulSet rolling update, maxSurge 0 / maxUnavailable 1
      unavailable: 1 of 2 instances at a time, fewer than 2 serving for 3320 s (55.3 min), none for 0 s
    Service during the rollout:
      outage: none (every needed role keeps an instance)

Hand arithmetic: an old pod stops within its grace, preStop 10 s + drain 60 s + teardown 15 s
+ 5 s = 90 s (generator/pods.py termination_grace); a new pod is ready within its startup
budget (the rendered startupProbe, read below). The pool is one node of 8 GPUs.
"""

from __future__ import annotations

import yaml

from generator.rollout import compare, side
from generator.rollout.tree import read_tree

SPEC = """apiVersion: moegen.dev/v1alpha1
kind: InferenceDeployment
metadata: {{name: {name}, namespace: llm}}
spec:
  model:
    name: Qwen/Qwen3-30B-A3B
    architecture: qwen3-30b-a3b
    weights: bf16
    path: /models/qwen
    volume: {{persistentVolumeClaim: {{claimName: qwen}}}}
  engine: {{name: vllm, version: "0.33.0", image: "vllm/vllm-openai:v0.33.0"}}
  nodePools:
    h20: {{gpu: H20-96GB, gpusPerNode: 8, nodes: 1, nodeSelector: {{a: b}}}}
  serving: {{maxModelLen: 32768}}
  roles:
    - name: serve
      mode: unified
      nodePool: h20
      workload: statefulset
      replicas: {replicas}
      parallel: {{tensor: {tp}}}
      sizing: {{concurrency: 8}}
"""


def _rename(tmp_path, replicas: int):
    sides = []
    for name, tp in (("qwen-tp1", 1), ("qwen-tp2", 2)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(SPEC.format(name=name, tp=tp, replicas=replicas))
        s, findings = side(path)
        assert s.model is not None, findings
        sides.append(s)
    return sides, compare(*sides)


def _startup(files: dict[str, str]) -> int:
    doc = yaml.safe_load(files["serve-statefulset.yaml"])
    probe = doc["spec"]["template"]["spec"]["containers"][0]["startupProbe"]
    return probe["failureThreshold"] * probe["periodSeconds"]


def test_a_renamed_workload_is_deleted_and_created_not_rolled(tmp_path):
    (old, new), d = _rename(tmp_path, 2)
    start = _startup(new.files)
    assert start == 157 * 10
    # the workloads are paired by kind and name: two of them, one stops, one starts
    assert [(r.role, r.kind, r.plan.old, r.plan.new) for r in d.roles] == [
        ("serve", "StatefulSet", 0, 2), ("qwen-tp1-serve", "StatefulSet", 2, 0)]
    assert {w.name for w in read_tree(old.files).workloads()} == {"qwen-tp1-serve"}
    # old 2 x 1 GPU + new 2 x 2 GPUs = 6 <= 8 on the node: the new pods start at once, the old
    # ones are pruned in the same wave: no instance serves until the new ones are ready
    assert d.rendered.outage_s == start == 1570
    from generator.output.rollout_report import text
    out = text(d)
    assert "StatefulSet rolling update" not in out
    assert "outage: none" not in out
    assert "renamed: StatefulSet qwen-tp1-serve -> qwen-tp2-serve" in out
    assert "qwen-tp1-serve-api" in out and "qwen-tp2-serve-api" in out   # clients' Service


def test_a_renamed_workload_without_room_waits_for_the_old_gpus(tmp_path):
    (old, new), d = _rename(tmp_path, 4)
    start = _startup(new.files)
    # old 4 x 1 GPU + new 4 x 2 GPUs = 12 > 8: the new pods wait until the pruned pods have
    # stopped (90 s grace) and released their GPUs, then start
    assert d.rendered.outage_s == 90 + start
    from generator.output.rollout_report import text
    assert "wait for the GPUs the old pods hold" in text(d)


def test_a_renamed_pd_deployment_has_no_order_to_choose(tmp_path):
    """S1 renamed (metadata.name dsv3-pd -> dsv3-pd2): its pools are full (prefill 1 node, decode
    1 node, each instance a whole node), so each new LeaderWorkerSet waits for the pruned one's
    GPUs: stop 96 s (preStop 10 + drain ceil(1.5 x 43.95) = 66 + 15 + 5, tests/test_diff.py)
    then start (prefill 2190 s, decode 1860 s); the router (wave 1) starts after the slower
    engine, its first worker check 30 s later. Nothing is rolled, so no order of prefill and
    decode is offered (before: the three rolling orders)."""
    from tests.helpers import EXAMPLES
    overlay = tmp_path / "rename.yaml"
    overlay.write_text("metadata: {name: dsv3-pd2}\n")
    spec = EXAMPLES / "s1-16xh20-pd.yaml"
    old, _ = side(spec)
    new, _ = side(spec, [overlay])
    d = compare(old, new)
    by = {r.role: r for r in d.roles}
    assert by["prefill"].waits_gpus and by["decode"].waits_gpus
    assert (by["prefill"].plan.start_s, by["decode"].plan.start_s) == (96 + 2190, 96 + 1860)
    assert d.rendered.outage_s == 96 + 2190 + 30 == 2316
    assert d.options == []
    from generator.output.rollout_report import text
    assert "Which order: nothing is rolled (renamed workloads start new, the old are pruned)" \
        in text(d)
