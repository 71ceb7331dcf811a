"""The execution tier's kubelet emulation and CPU substitutions, without an engine (fast, always run).

The expected values are Kubernetes' and LWS's documented behaviour, written out by hand.
"""

from __future__ import annotations

import os
import shutil
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
    assert [c.split()[0] for c in worker.changes] == ["S2", "S1", "S1", "S3", "S4", "S5", "S6", "S7", "S7", "S7", "S8"]
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
    # the router: service discovery replaced by the pods its selectors match, at the discovery port
    r = dp2.pods["dsv3-pd-router-0"]
    assert r.argv[r.argv.index("--prefill") + 1] == "http://127.254.1.12:8000"
    assert r.argv[r.argv.index("--decode") + 1] == "http://127.254.1.10:8000"   # the leader only:
    assert r.argv.count("--decode") == 1              # the headless pod lacks moegen.dev/serves-api
    assert "--service-discovery" not in r.argv and r.argv[r.argv.index("--host") + 1] == r.ip
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
        while not (pod_dir / "resolved").exists() and time.monotonic() < deadline:
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


def _sleeper(out: Path, name: str, shm: str = "1Mi") -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.yaml").write_text(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: t}}
spec:
  replicas: 1
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
      - name: c
        command: [/bin/sh, -c, "sleep 300 & sleep 300"]
        volumeMounts: [{{name: shm, mountPath: /dev/shm}}]
      volumes: [{{name: shm, emptyDir: {{medium: Memory, sizeLimit: {shm}}}}}]
""")
    return out


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
