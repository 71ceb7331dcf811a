"""``roles[].parallel.executor: ray``: vLLM's Ray executor (``--distributed-executor-backend
ray``) for an instance that spans pods, as vLLM's LWS guide runs it (docs/deployment/frameworks/
lws.md, examples/online_serving/multi-node-serving.sh): the leader starts the Ray head, waits
until every pod's Ray node is alive, then serves; the other pods only join the cluster.

The S1 overlay ``overlays/ray-prefill-pp2.yaml`` makes the prefill one TP8 x PP2 instance over
two H20 nodes of 8 GPUs (8 x 2 = 16 GPUs / 8 per node = 2 pods). The import side (both GKE
LeaderWorkerSets of vLLM 0.8.5 read back as ``executor: ray``) is in
tests/test_import_validate.py; the byte-identical round trip in tests/test_round_trip.py.
"""

from __future__ import annotations

import subprocess

import pytest
import yaml

from generator import pipeline
from generator.manifests.addresses import address_model
from tests.helpers import EXAMPLES, ROOT, render_spec

S1 = EXAMPLES / "s1-16xh20-pd.yaml"
RAY = ROOT / "overlays" / "ray-prefill-pp2.yaml"


@pytest.fixture(scope="module")
def rendered():
    """(checked, plan, files) of S1 + the Ray overlay."""
    return render_spec(S1, [RAY])


@pytest.fixture(scope="module")
def launchers(rendered) -> dict[str, str]:
    """The prefill LeaderWorkerSet's launcher scripts: leader and worker templates."""
    lws = next(d for d in yaml.safe_load_all(rendered[2]["prefill-lws.yaml"])
               if d and d["kind"] == "LeaderWorkerSet")
    tpl = lws["spec"]["leaderWorkerTemplate"]
    return {side: tpl[f"{side}Template"]["spec"]["containers"][0]["command"][-1]
            for side in ("leader", "worker")}


def _codes(tmp_path, overlay: str) -> set[str]:
    path = tmp_path / "overlay.yaml"
    path.write_text(overlay)
    return {f.code for f in pipeline.check(S1, [path]).findings}


def _prefill(version: str, executor: str | None) -> str:
    """S1 at ``version`` with its prefill TP8 x PP2 over two nodes (executor as given)."""
    par = "{tensor: 8, pipeline: 2" + (f", executor: {executor}" if executor else "") + "}"
    return (f"spec:\n  engine: {{version: \"{version}\", image: \"vllm/vllm-openai:v{version}\"}}\n"
            f"  nodePools:\n    prefill-h20: {{nodes: 2}}\n"
            f"  roles:\n    - name: prefill\n      parallel: {par}\n")


def test_lay005_judges_only_the_nnodes_path(tmp_path):
    """vLLM 0.11.0 has no --nnodes (0.11.1+): a TP x PP group over two pods is LAY005 on the mp
    path; over Ray vLLM spans the cluster at every release, so no LAY005."""
    assert "LAY005" in _codes(tmp_path, _prefill("0.11.0", None))
    assert "LAY005" in _codes(tmp_path, _prefill("0.11.0", "mp"))
    assert "LAY005" not in _codes(tmp_path, _prefill("0.11.0", "ray"))


def test_lay016_from_the_release_that_stops_installing_ray(tmp_path):
    """vLLM 0.17.0's wheel requires ray[cgraph]>=2.48.0, 0.18.0's does not (vllm-project/vllm
    #36170), and vllm/vllm-openai has no Ray from v0.18.0 (production-stack#1056): on the stock
    image LAY016 (an error) from 0.18.0 on, only on a Ray role; on another image LAY017 (a
    warning: its build may install Ray)."""
    assert "LAY016" not in _codes(tmp_path, _prefill("0.17.0", "ray"))
    assert "LAY016" in _codes(tmp_path, _prefill("0.18.0", "ray"))
    assert "LAY016" not in _codes(tmp_path, _prefill("0.18.0", None))
    own = _prefill("0.18.0", "ray").replace('"vllm/vllm-openai:v0.18.0"',
                                            '"registry.corp/ml/vllm-openai-ray:v0.18.0"')
    assert {"LAY016", "LAY017"} & _codes(tmp_path, own) == {"LAY017"}
    hub = _prefill("0.33.0", "ray").replace('"vllm/vllm-openai:', '"docker.io/vllm/vllm-openai:')
    assert {"LAY016", "LAY017"} & _codes(tmp_path, hub) == {"LAY016"}
    assert {"LAY016", "LAY017"} & _codes(tmp_path, _prefill("0.17.0", "ray").replace(
        '"vllm/vllm-openai:v0.17.0"', '"registry.corp/ml/vllm:v0.17.0"')) == set()


def test_lay018_nixl_side_channel_before_ray_executor_v2(tmp_path):
    """Before vLLM 0.26.0 the Ray executor copies the driver's VLLM_* variables over the
    workers' (vllm#14099): a NIXL prefill over two pods on Ray gets LAY018; at 0.26.0
    (RayExecutorV2 keeps the worker's own value, vllm#36836) and on the --nnodes path, none."""
    own = '"registry.example.com/ml/vllm-ray:v{0}"'
    for version, executor, expected in (("0.20.0", "ray", True), ("0.25.0", "ray", True),
                                        ("0.26.0", "ray", False), ("0.20.0", None, False)):
        overlay = _prefill(version, executor).replace(f'"vllm/vllm-openai:v{version}"',
                                                      own.format(version))
        assert ("LAY018" in _codes(tmp_path, overlay)) == expected, (version, executor)


def test_the_leader_starts_the_ray_head_and_waits_for_every_node(launchers):
    leader = launchers["leader"]
    head = leader.index("ray start --head --port=6379")
    wait = leader.index("    moegen_wait_ray_nodes\n")
    serve = leader.index("exec vllm serve")
    assert head < wait < serve
    assert '--node-ip-address="${MOEGEN_POD_IP}"' in leader[head:wait]
    assert 'export RAY_ADDRESS="${MOEGEN_POD_IP}:6379"' in leader[head:wait]
    # 2 pods = 2 Ray nodes; a 1200 s deadline on the clock (each poll imports Ray: a count of
    # polls would outlast it), as long as the worker waits for the leader (below), and the
    # startup budget's rendezvous (sizing/host.py RAY_RENDEZVOUS_S).
    assert 'deadline=`expr "$(date +%s)" + 1200`' in leader
    assert 'while [ "$(date +%s)" -lt "$deadline" ]; do' in leader
    assert 'if [ "$alive" = "2" ]; then' in leader
    assert "fewer than 2 Ray nodes alive after 1200 s" in leader
    engine = leader[serve:]
    assert "--distributed-executor-backend ray \\" in engine
    assert "--tensor-parallel-size 8 \\" in engine and "--pipeline-parallel-size 2 \\" in engine
    for flag in ("--nnodes", "--node-rank", "--master-addr", "--master-port", "--headless"):
        assert flag not in leader, flag


def test_the_worker_joins_the_cluster_and_runs_no_engine(launchers):
    """Both templates carry one launcher; the worker's case (pod index 1) resolves the leader,
    waits for its port 6379 and replaces itself with a blocking Ray node."""
    worker = launchers["worker"]
    assert worker == launchers["leader"]
    case = worker[worker.index("\n  1)\n"):worker.index("\n  *)\n")]
    assert "MOEGEN_LEADER_IP=`moegen_resolve_leader`" in case
    assert 'export VLLM_HOST_IP="${MOEGEN_POD_IP}"' in case
    assert ('exec ray start --address="${MOEGEN_LEADER_IP}:6379" '
            '--node-ip-address="${MOEGEN_POD_IP}" --disable-usage-stats --block') in case
    assert "set --" not in case
    assert "its rendezvous port 6379 accepts connections" in worker


def test_the_launcher_is_valid_sh(launchers):
    proc = subprocess.run(["sh", "-n"], input=launchers["leader"], text=True,
                          capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_ports_and_the_address_model(rendered):
    """The leader declares the Ray head's port; the address model has the head listening on
    the leader's IP and pod 1 dialling it there; nothing is unreachable (no NET100)."""
    checked, plan, files = rendered
    lws = files["prefill-lws.yaml"]
    assert "containerPort: 6379\n            name: ray-gcs" in lws
    model = address_model(plan)
    ray = [x for x in model.listeners if x.port == 6379]
    assert [(x.pod, x.bind) for x in ray] == [("prefill/0", "the pod IP")]
    dials = [(d.client, d.pod, d.address) for d in model.dials if d.port == 6379]
    assert dials == [("prefill pod 1", "prefill/0", "the pod IP")]
    assert model.mismatches() == []
    assert "NET100" not in {f.code for f in checked.findings}


def test_a_single_pod_ray_role_renders_the_flag_only(tmp_path):
    """TP8 on one node over Ray: vLLM starts a local Ray instance itself (ray.init with no
    address, vllm/v1/executor/ray_utils.py initialize_ray_cluster): no ray start, no wait."""
    path = tmp_path / "one.yaml"
    path.write_text("spec:\n  engine: {image: registry.example.com/ml/vllm-openai-ray:v0.33.0}\n"
                    "  roles:\n    - name: prefill\n      parallel: {executor: ray}\n")
    _, _, files = render_spec(S1, [path])
    lws = files["prefill-lws.yaml"]
    assert "--distributed-executor-backend ray \\" in lws
    assert "ray start" not in lws and "moegen_wait_ray_nodes" not in lws
    assert "--distributed-executor-backend" not in files["decode-lws.yaml"]


def test_a_leader_only_label_is_left_out_of_every_pod(tmp_path):
    """IMP027: GKE's vLLM multi-node LWS labels its leader ``role: leader`` (line 35) and its
    Service selects it; the worker template has no such label. ``roles[].pod.labels`` go on every
    pod of the role, so carrying the label would put the worker (a Ray node serving no API)
    behind that Service: the import leaves it out and says so, at the label's line."""
    from generator.inputs import read_inputs
    from tests.helpers import shared
    path = shared("reference", "manifests", "gke-lws-vllm-deepseek-r1-tp8-pp2.yaml")
    batch = read_inputs([path])
    imp027 = [(f.severity.value, f.location.line, f.path) for f in batch.all_findings()
              if f.code == "IMP027"]
    assert imp027 == [("notice", 35, "$.spec.leaderWorkerTemplate.leaderTemplate.metadata"
                                     ".labels.role")]
    out = subprocess.run(["gen", "import", str(path)], capture_output=True, text=True)
    spec = yaml.safe_load(out.stdout)
    pod = spec["spec"]["roles"][0].get("pod", {})
    assert "role" not in pod.get("labels", {})


def test_lay019_ray_ports_on_the_node_network(tmp_path):
    """LAY019: the shipped Ray overlay (pod network) does not warn; with network.hostNetwork
    the pod IP Ray's processes listen on is the node's, so the warning names the role's
    executor field."""
    overlay = RAY.read_text()
    assert "LAY019" not in _codes(tmp_path, overlay)
    hits = [f for f in pipeline.check(S1, [RAY, _write(tmp_path, "spec:\n  network:\n"
                                                       "    hostNetwork: true\n")]).findings
            if f.code == "LAY019"]
    assert [(f.severity.value, f.path) for f in hits] == [
        ("warning", "$.spec.roles[0].parallel.executor")]
    assert "6379" in hits[0].message


def _write(tmp_path, text: str):
    path = tmp_path / "host-network.yaml"
    path.write_text(text)
    return path


def test_the_leader_waits_for_the_workers_as_long_as_they_wait_for_it(rendered, launchers):
    """The two sides of the Ray rendezvous: the worker polls the leader's Ray port 240 x 5 s,
    the leader polls for every Ray node 240 x 5 s, and the leader's startup probe allows that
    wait on top of the load and warm-up, so the probe never kills a leader that is still
    waiting. S1's prefill on 2 H20-96GB pods (TP8 x PP2): the leader's share of the FP8
    checkpoint is read at 1 GB/s; budget = load + warm-up 1200 s + rendezvous 1200 s."""
    worker = launchers["worker"]
    assert "did not accept connections on port 6379 within 1200 s" in worker
    assert "fewer than 2 Ray nodes alive after 1200 s" in launchers["leader"]
    plan = next(h for r, h in zip(rendered[0].model.roles, rendered[0].model.host)
                if r.name == "prefill")
    assert plan.rendezvous_s == 1200
    assert plan.startup_s >= plan.load_s + 1200 + 1200
    lws = next(d for d in yaml.safe_load_all(rendered[2]["prefill-lws.yaml"])
               if d and d["kind"] == "LeaderWorkerSet")
    probe = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0][
        "startupProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] == plan.startup_s
