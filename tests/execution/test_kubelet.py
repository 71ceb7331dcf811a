"""The execution tier's kubelet emulation and CPU substitutions, without an engine (fast, always run).

The expected values are Kubernetes' and LWS's documented behaviour, written out by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
import time
from pathlib import Path

import pytest

from tests.execution import cpu
from tests.execution.conftest import render
from tests.execution.kubelet import Cluster, expand, read_env_file

FAKE = cpu.Runtime(Path("/nonexistent/cpu-runtime"))


def test_dollar_paren_expansion_follows_kubernetes():
    env = {"A": "x", "B": "$(A)"}
    assert expand("$(A)-$(B)", env) == "x-$(A)"      # one pass: values are not re-expanded
    assert expand("$(UNDEFINED)", env) == "$(UNDEFINED)"
    assert expand("$$(A) $$ $(A)", env) == "$(A) $ x"
    assert expand("${A} $A", env) == "${A} $A"       # shell syntax is the shell's business


def test_env_file_splits_at_the_first_equals_sign():
    assert read_env_file("# c\n\nNCCL_IB_HCA==mlx5_0\nX=a=b\n  Y=\n") == \
        {"NCCL_IB_HCA": "=mlx5_0", "X": "a=b", "Y": ""}
    with pytest.raises(ValueError):
        read_env_file("NOEQUALS\n")


@pytest.fixture(scope="module")
def dp2(tmp_path_factory):
    work = tmp_path_factory.mktemp("kubelet-dp2")
    out = render("s1-16xh20-pd.yaml", ["dev-small.yaml", "decode-dp2.yaml", "vllm-0.32.yaml"], work / "out")
    return Cluster(out, work, FAKE, work / "model", "127.254.1")


def test_pods_names_and_lws_labels(dp2):
    # LWS size 2: leader <lws>-<g>, worker <lws>-<g>-<i>; a Deployment's pods; addresses from .10
    assert {n: p.ip for n, p in dp2.pods.items()} == {
        "dsv3-pd-decode-0": "127.254.1.10", "dsv3-pd-decode-0-1": "127.254.1.11",
        "dsv3-pd-prefill-0": "127.254.1.12", "dsv3-pd-router-0": "127.254.1.13",
        "dsv3-pd-router-1": "127.254.1.14"}      # the router Deployment has 2 replicas
    w = dp2.pods["dsv3-pd-decode-0-1"]
    assert {k: v for k, v in w.labels.items() if k.startswith("leaderworkerset")} == {
        "leaderworkerset.sigs.k8s.io/name": "dsv3-pd-decode",
        "leaderworkerset.sigs.k8s.io/group-index": "0",
        "leaderworkerset.sigs.k8s.io/worker-index": "1"}
    assert dp2.group_of("dsv3-pd-decode-0-1") == ["dsv3-pd-decode-0", "dsv3-pd-decode-0-1"]


def test_env_is_built_in_kubelet_order(dp2):
    w = dp2.pods["dsv3-pd-decode-0-1"]
    keys = list(w.rendered_env)
    # service links, then LWS's variables, then envFrom (env/decode.env), then env in order
    lws = keys.index("LWS_LEADER_ADDRESS")
    assert keys[lws:lws + 3] == ["LWS_LEADER_ADDRESS", "LWS_GROUP_SIZE", "LWS_WORKER_INDEX"]
    assert lws < keys.index("VLLM_NIXL_SIDE_CHANNEL_PORT") < keys.index("MOEGEN_POD_IP")
    assert w.rendered_env["LWS_LEADER_ADDRESS"] == "dsv3-pd-decode-0.dsv3-pd-decode.llm"
    assert w.rendered_env["MOEGEN_LEADER_HOST"] == "dsv3-pd-decode-0.dsv3-pd-decode.llm"   # $(LWS_...)
    assert w.rendered_env["MOEGEN_POD_INDEX"] == "1"          # downward API: the worker-index label
    assert w.rendered_env["MOEGEN_POD_IP"] == w.rendered_env["VLLM_NIXL_SIDE_CHANNEL_HOST"] == w.ip
    assert w.rendered_env["LWS_GROUP_SIZE"] == "2"
    # the kubelet's service links for the rendered Services of the namespace
    assert w.rendered_env["DSV3_PD_ROUTER_SERVICE_PORT"] == "8080"
    router = dp2.pods["dsv3-pd-router-0"]
    assert router.rendered_env["POD_NAMESPACE"] == "llm"
    i = router.rendered_argv.index("--service-discovery-namespace")
    assert router.rendered_argv[i + 1] == "llm"                # $(POD_NAMESPACE) in args


def test_substitutions_are_the_listed_ones_and_nothing_else(dp2):
    leader, worker = dp2.pods["dsv3-pd-decode-0"], dp2.pods["dsv3-pd-decode-0-1"]
    # S1 three times: the /tmp emptyDir of the read-only root, the model PVC, the compile cache
    assert [c.split()[0] for c in worker.changes] == ["S2", "S1", "S1", "S1", "S3", "S4", "S5", "S6", "S11", "S7", "S7", "S7", "S8"]
    # S6 and S11 both put a test plugin on PYTHONPATH (EP collectives; NIXL's progress thread)
    assert worker.env["PYTHONPATH"].split(os.pathsep) == [str(cpu.EP_PLUGIN), str(cpu.NIXL_PLUGIN)]
    assert [c.split()[3] for c in worker.changes if c.startswith("S1 ")] == ["/tmp", "/models/DeepSeek-V2-Lite-Chat", "/var/cache/moegen"]
    # argv: only the mount paths differ (the wrapper on PATH adds S3-S5 to `vllm serve`)
    model = str(dp2.model_dir)
    assert [a.replace(model, "/models/DeepSeek-V2-Lite-Chat") for a in worker.argv] == worker.rendered_argv
    changed = {k for k in worker.env if worker.env[k] != worker.rendered_env.get(k)}
    image = set(cpu.IMAGE_ENV) | {"PATH", "HOME"}
    cache = {k for k, v in worker.rendered_env.items() if v.startswith("/var/cache/moegen")}
    assert changed - image - cache == {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "VLLM_HOST_IP",
                                       "VLLM_CPU_OMP_THREADS_BIND", "PYTHONPATH"}
    wrapper = (dp2.work / "pods" / leader.name / "bin" / "vllm").read_text()
    assert f"--host {leader.ip} --kv-cache-memory-bytes 67108864 --enforce-eager" in wrapper
    # the router: its service discovery runs as rendered, against the harness's API server
    r = dp2.pods["dsv3-pd-router-0"]
    assert r.argv[:1] + r.argv[1:] == [r.ip if a == "0.0.0.0" else a for a in r.rendered_argv]
    assert "--service-discovery" in r.argv and r.argv[r.argv.index("--host") + 1] == r.ip
    assert r.env["KUBECONFIG"] == str(dp2.kubeconfig)
    assert json.loads(dp2.kubeconfig.read_text())["clusters"][0]["cluster"]["server"] == \
        "http://127.254.1.250:6443"
    assert [c.split()[0] for c in r.changes] == ["S1", "S9"]     # S1: its /tmp emptyDir
    assert (dp2.work / "substitutions.txt").read_text() == dp2.substitutions()


def test_hosts_file_resolves_pods_as_the_lws_headless_service(dp2):
    hosts = dp2.hosts.read_text()
    assert "127.254.1.10 dsv3-pd-decode-0.dsv3-pd-decode.llm dsv3-pd-decode-0.dsv3-pd-decode.llm.svc.cluster.local" in hosts


@pytest.mark.skipif(not shutil.which("unshare") or os.geteuid() != 0, reason="needs unshare as root")
def test_a_pod_has_its_own_shm_hosts_and_pid_namespace_and_leaves_nothing(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "deploy.yaml").write_text("""
apiVersion: apps/v1
kind: Deployment
metadata: {name: probe, namespace: t}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: probe}}
    spec:
      containers:
      - name: c
        command: [/bin/sh, -c]
        args: ["touch /dev/shm/moegen-shm-$(MY_NAME); echo $$$$ > pid; hostname > host; getent hosts probe-0 > resolved; sleep 60 & sleep 60"]
        env: [{name: MY_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
        volumeMounts: [{name: shm, mountPath: /dev/shm}]
      volumes: [{name: shm, emptyDir: {medium: Memory, sizeLimit: 1Mi}}]
""")
    c = Cluster(out, tmp_path / "work", FAKE, tmp_path, "127.254.2")
    pod_dir = tmp_path / "work" / "pods" / "probe-0"
    try:
        c.start("probe-0")
        # a harness wait, not a budget under test: generous for a loaded machine
        deadline = time.monotonic() + 300
        # the shell creates the file before getent writes into it: wait for its line
        while not ((pod_dir / "resolved").exists() and (pod_dir / "resolved").read_text()) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (pod_dir / "pid").read_text().strip() == "2"    # PID 1 is `timeout`, the lifetime bound
        assert (pod_dir / "host").read_text().strip() == "probe-0"
        assert (pod_dir / "resolved").read_text().split()[0] == "127.254.2.10"
        assert not Path("/dev/shm/moegen-shm-probe-0").exists()          # a private tmpfs
        # the pod's processes, exactly: unshare, timeout (PID 1 inside), sh and its two sleeps
        # (the sleeps start after `resolved` is written: wait for them)
        def comms():
            return sorted(Path(f"/proc/{pid}/comm").read_text().strip() for pid in c.pids("probe-0"))
        while len(comms()) < 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert comms() == ["sh", "sleep", "sleep", "timeout", "unshare"]
    finally:
        c.close()                                                        # raises on leftovers
    assert c.leftovers() == []


def _deployment(out: Path, name: str, script: str, pod: str = "", container: str = "") -> Path:
    """A one-pod Deployment running ``script``; ``pod``/``container``: more fields, one per line
    (YAML flow style)."""
    out.mkdir(parents=True, exist_ok=True)
    pod_fields = "".join(f"\n      {x}" for x in pod.splitlines())
    container_fields = "".join(f"\n        {x}" for x in container.splitlines())
    (out / f"{name}.yaml").write_text(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: t}}
spec:
  replicas: 1
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:{pod_fields}
      containers:
      - name: c
        command: [/bin/sh, -c, {json.dumps(script)}]{container_fields}
""")
    return out


def _sleeper(out: Path, name: str, shm: str = "1Mi") -> Path:
    return _deployment(out, name, "sleep 300 & sleep 300",
                       pod=f"volumes: [{{name: shm, emptyDir: {{medium: Memory, sizeLimit: {shm}}}}}]",
                       container="volumeMounts: [{name: shm, mountPath: /dev/shm}]")


@pytest.mark.skipif(not shutil.which("unshare") or os.geteuid() != 0, reason="needs unshare as root")
def test_another_clusters_pods_are_never_taken_for_leftovers(tmp_path):
    # Cluster A's pod is killed; cluster B (another test run on the same machine, say) starts one
    # right after, possibly in a PID namespace whose inode the kernel just freed. Identity is by
    # process tree and marker, so A's teardown finds nothing left and leaves B's pod running.
    a = Cluster(_sleeper(tmp_path / "a", "one"), tmp_path / "wa", FAKE, tmp_path, "127.254.3")
    b = Cluster(_sleeper(tmp_path / "b", "two"), tmp_path / "wb", FAKE, tmp_path, "127.254.4")
    try:
        a.start("one-0")
        assert a.pids("one-0")
        a.kill("one-0")
        b.start("two-0")
        mine = b.pids("two-0")
        assert len(mine) >= 4 and a.run_id != b.run_id
        assert a.leftovers() == []
        a.close()                                   # raises on leftovers; kills only its own
        assert b.alive("two-0") and set(mine) <= set(b.pids("two-0"))
    finally:
        b.close()
    assert b.leftovers() == []


@pytest.mark.skipif(not shutil.which("unshare") or os.geteuid() != 0, reason="needs unshare as root")
def test_a_failed_namespace_setup_is_the_harness_s_failure_not_the_pod_s(tmp_path, monkeypatch):
    # /dev/shm's tmpfs cannot be mounted with this size: the pod's own program never runs, so
    # the start is retried and then reported as the harness's failure (HarnessError), never as
    # "pod exited" (PodFailed).
    from tests.execution import kubelet
    monkeypatch.setattr(kubelet, "SETUP_ATTEMPTS", 2)
    c = Cluster(_sleeper(tmp_path / "out", "bad", shm="lots"), tmp_path / "w", FAKE, tmp_path, "127.254.5")
    try:
        with pytest.raises(kubelet.HarnessError, match="attempt 2") as e:
            c.start("bad-0")
        assert not isinstance(e.value, AssertionError)          # not a PodFailed
        assert "bad-0" not in c.running
    finally:
        c.close()


def test_loopback_prefixes_are_held_per_cluster_across_runs(tmp_path, monkeypatch):
    # Two clusters (of this run or of another run on the machine) never get the same /24 while
    # both hold it; a released prefix is free again.
    from tests.execution import kubelet
    monkeypatch.setattr(kubelet, "IP_LOCK_DIR", tmp_path / "locks")
    p1, l1 = kubelet.allocate_ip_prefix()
    p2, l2 = kubelet.allocate_ip_prefix()
    assert (p1, p2) == ("127.100.1", "127.100.2")
    l1.close()
    p3, l3 = kubelet.allocate_ip_prefix()
    assert p3 == "127.100.1"
    l2.close()
    l3.close()


def _pod_yaml(out: Path, name: str, script: str, grace: int, pre_stop: str) -> Path:
    hook = f"lifecycle: {{preStop: {{exec: {{command: [/bin/sh, -c, {json.dumps(pre_stop)}]}}}}}}"
    return _deployment(out, name, script, pod=f"terminationGracePeriodSeconds: {grace}",
                       container=hook)


@pytest.mark.skipif(not shutil.which("unshare") or os.geteuid() != 0, reason="needs unshare as root")
def test_delete_runs_prestop_then_sigterm_then_sigkill_at_the_grace_period(tmp_path):
    # Kubernetes pod termination: the preStop hook runs in the container (here it writes a file
    # in the pod's mount namespace: its /dev/shm is private, so the file is seen by the pod's
    # own process only), then SIGTERM; a process that ignores SIGTERM is killed when the grace
    # period (counted from the deletion) is over.
    polite = "trap 'ls /dev/shm > seen; echo term > got; exit 0' TERM; while :; do sleep 0.1; done"
    deaf = "trap '' TERM; while :; do sleep 0.1; done"
    out = _pod_yaml(tmp_path / "out", "polite", polite, 5, "touch /dev/shm/prestop; sleep 1")
    _pod_yaml(out, "deaf", deaf, 3, "true")
    c = Cluster(out, tmp_path / "w", FAKE, tmp_path, "127.254.6")
    try:
        c.start("polite-0", "deaf-0")
        time.sleep(1)
        t0 = time.monotonic()
        done = c.delete("polite-0", "deaf-0")
        took = time.monotonic() - t0
        pod = tmp_path / "w" / "pods"
        assert (pod / "polite-0" / "got").read_text().strip() == "term"
        assert (pod / "polite-0" / "seen").read_text().split() == ["prestop"]
        assert done["polite-0"]["preStop_s"] >= 1 and not done["polite-0"]["killed"]
        assert done["polite-0"]["exited_s"] < 5
        assert done["deaf-0"]["killed"] and done["deaf-0"]["exited_s"] is None
        assert 3 <= took < 3 + 10                 # both at once: the longer grace bounds it
        assert c.running == {} and c.leftovers() == []
    finally:
        c.close()


@pytest.mark.skipif(not shutil.which("unshare") or os.geteuid() != 0, reason="needs unshare as root")
def test_a_recreated_pod_gets_a_new_address_that_the_api_and_dns_follow(tmp_path):
    out = _pod_yaml(tmp_path / "out", "web", "while :; do sleep 0.1; done", 2, "true")
    c = Cluster(out, tmp_path / "w", FAKE, tmp_path, "127.254.7")
    api = "http://127.254.7.250:6443/api/v1/namespaces/t/pods"

    def listed_ready():       # the prober publishes Ready within a second of the probes passing
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            doc = json.loads(urllib.request.urlopen(api, timeout=10).read())
            if doc["items"] and doc["items"][0]["status"]["conditions"][0]["status"] == "True":
                return doc
            time.sleep(0.2)
        raise AssertionError("never Ready")
    try:
        c.start("web-0")
        assert c.wait_ready("web-0")                    # no probes: ready once it runs
        listed = listed_ready()
        [pod] = listed["items"]
        assert (pod["status"]["podIP"], pod["status"]["conditions"]) == \
            ("127.254.7.10", [{"type": "Ready", "status": "True"}])
        since = listed["metadata"]["resourceVersion"]
        assert c.recreate_group("web-0") == ["web-0"]
        assert c.pods["web-0"].ip == "127.254.7.100"     # a new pod, a new address
        assert "127.254.7.100 web-0" in c.hosts.read_text()
        c.wait_ready("web-0")
        listed_ready()
        watch = urllib.request.urlopen(f"{api}?watch=true&resourceVersion={since}&timeoutSeconds=1",
                                       timeout=10).read().decode().splitlines()
        seen = [(e["type"], e["object"]["status"]["podIP"], "deletionTimestamp" in e["object"]["metadata"],
                 e["object"]["status"]["conditions"][0]["status"]) for e in map(json.loads, watch)]
        assert seen == [("MODIFIED", "127.254.7.10", True, "False"),     # deletion starts
                        ("DELETED", "127.254.7.10", True, "False"),
                        ("ADDED", "127.254.7.100", False, "False"),     # the new pod
                        ("MODIFIED", "127.254.7.100", False, "True")]   # ready
    finally:
        c.close()


def test_a_changed_env_file_changes_both_templates(tmp_path):
    # kustomize names a generated ConfigMap after its content: one variable more in the engines'
    # environment is a new template for both LeaderWorkerSets (what the rollout then replaces)
    from tests.execution.controllers import changed_workloads
    base = ["dev-small.yaml", "vllm-0.32.yaml", "decode-eager.yaml"]
    old = render("s1-16xh20-pd.yaml", base, tmp_path / "old")
    new = render("s1-16xh20-pd.yaml", base + ["rollout-env.yaml"], tmp_path / "new")
    c = Cluster(old, tmp_path / "w", FAKE, tmp_path, "127.254.8")
    assert {k: sorted(v) for k, v in changed_workloads(c, new).items()} == {
        "dsv3-pd-decode": ["dsv3-pd-decode-0"], "dsv3-pd-prefill": ["dsv3-pd-prefill-0"]}
    assert changed_workloads(c, old) == {}
