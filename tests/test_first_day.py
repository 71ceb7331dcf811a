"""What a platform team finds on the first day (issue #20): each item a test that failed before
its fix. Renders go through the pipeline with small inline overlays over the shipped examples."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from generator.emit import write_tree
from tests.helpers import EXAMPLES, ROOT, lws_templates, objects, render_spec

S1 = EXAMPLES / "s1-16xh20-pd.yaml"
IGW = ROOT / "overlays" / "inference-gateway.yaml"
KUBECTL = shutil.which("kubectl")


def _overlay(tmp_path, text: str, name: str = "overlay.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _kustomize(tmp_path, files, overlay: str) -> list[dict]:
    write_tree(tmp_path / "base", files)
    over = tmp_path / "over"
    over.mkdir(exist_ok=True)
    (over / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + overlay
        + ("" if "resources:" in overlay else "resources:\n") + "- ../base\n")
    built = subprocess.run([KUBECTL, "kustomize", str(over)], capture_output=True, text=True,
                           check=False)
    assert built.returncode == 0, built.stderr
    return [d for d in yaml.safe_load_all(built.stdout) if d]


ENGINE_SA = "spec:\n  pod: {serviceAccountName: llm-serving}\n"


# --- 1 and 10: the router's and the picker's RBAC follow a namespace override, on their own
# ServiceAccount, whatever spec.pod names for the engines ------------------------------------

@pytest.mark.parametrize("gateway", [False, True], ids=["vllm-router", "inference-gateway"])
def test_router_rbac_is_its_own_and_not_the_engines(gateway, tmp_path):
    overlays = [_overlay(tmp_path, ENGINE_SA)] + ([IGW] if gateway else [])
    _, plan, files = render_spec(S1, overlays)
    objs = objects(files)
    binding = next(o for o in objs if o["kind"] == "RoleBinding")
    control = next(o for o in objs if o["kind"] == "Deployment")
    sa = control["spec"]["template"]["spec"]["serviceAccountName"]
    # Its own account (dsv3-pd-router / dsv3-pd-epp), rendered in the base; not llm-serving.
    assert sa == (plan.gateway.epp if gateway else plan.router.name)
    assert [s["name"] for s in binding["subjects"]] == [sa]
    assert any(o["kind"] == "ServiceAccount" and o["metadata"]["name"] == sa for o in objs)
    engines = [o for o in objs if o["kind"] == "LeaderWorkerSet"]
    for lws in engines:
        tmpl = lws_templates(lws)["leader"]["spec"]
        assert tmpl["serviceAccountName"] == "llm-serving"


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (with built-in kustomize) is not installed")
@pytest.mark.parametrize("gateway", [False, True], ids=["vllm-router", "inference-gateway"])
def test_named_router_account_follows_a_namespace_override(gateway, tmp_path):
    """router.serviceAccountName names an account outside the base: kustomize's namespace
    transformer leaves such subjects alone (kubectl 1.32 / kustomize v5.5.0, tried here), so the
    subject carries no namespace and resolves to the binding's (RBAC appliesToUser)."""
    text = ENGINE_SA + "  router: {serviceAccountName: platform-router}\n"
    overlays = [_overlay(tmp_path, text)] + ([IGW] if gateway else [])
    _, _, files = render_spec(S1, overlays)
    docs = _kustomize(tmp_path, files, "namespace: llm-prod\n")
    binding = next(d for d in docs if d["kind"] == "RoleBinding")
    assert binding["metadata"]["namespace"] == "llm-prod"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "platform-router"}]
    assert not any(d["kind"] == "ServiceAccount" for d in docs)


# --- 4: workload statefulset is one StatefulSet per role, replicas = instances --------------

def test_statefulset_role_is_one_statefulset_that_rolls_one_instance_at_a_time(tmp_path):
    text = ("spec:\n  nodePools:\n    prefill-h20: {nodes: 2}\n  roles:\n    - name: prefill\n"
            "      replicas: 2\n      workload: statefulset\n")
    _, plan, files = render_spec(S1, [_overlay(tmp_path, text)])
    sets = [o for o in objects(files) if o["kind"] == "StatefulSet"]
    # Before: dsv3-pd-prefill-0 and dsv3-pd-prefill-1, one replica each, which roll together.
    assert [(s["metadata"]["name"], s["spec"]["replicas"]) for s in sets] == [("dsv3-pd-prefill", 2)]
    assert sets[0]["spec"]["serviceName"] == "dsv3-pd-prefill"
    assert "updateStrategy" not in sets[0]["spec"]   # RollingUpdate, partition 0: one at a time
    headless = [o for o in objects(files) if o["kind"] == "Service"
                and o["spec"].get("clusterIP") == "None"]
    assert [h["metadata"]["name"] for h in headless] == ["dsv3-pd-prefill"]


# --- 5: names inside LeaderWorkerSet templates follow kustomize's generators and prefixes ---

@pytest.mark.skipif(KUBECTL is None, reason="kubectl (with built-in kustomize) is not installed")
def test_generated_pull_secret_and_prefix_reach_the_lws_templates(tmp_path):
    """A secretGenerator, a ServiceAccount and a PVC added beside the rendered objects (as
    ``kustomize edit add secret`` / ``add resource`` in the output directory do: kustomize
    rewrites a name only in objects of the same kustomization or an overlay of it, never in a
    base's objects for an overlay's, tried with kubectl 1.32 / kustomize v5.5.0): the pull secret
    gets a hashed name, an overlay's namePrefix renames all three. Before: the EPP Deployment
    followed, both LWS templates kept 'regcred' (ImagePullBackOff)."""
    text = ("spec:\n  pod:\n    imagePullSecrets: [regcred]\n    serviceAccountName: llm-serving\n"
            "    cache:\n      volume: {persistentVolumeClaim: {claimName: jit-cache}}\n")
    _, _, files = render_spec(S1, [_overlay(tmp_path, text), IGW])
    files = dict(files)
    files["extra.yaml"] = (
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: llm-serving}\n---\n"
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: jit-cache}\n"
        "spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}\n")
    files["kustomization.yaml"] = files["kustomization.yaml"].replace(
        "resources:\n", "resources:\n- extra.yaml\n") + (
        "secretGenerator:\n- name: regcred\n  type: kubernetes.io/dockerconfigjson\n"
        "  literals: ['.dockerconfigjson={}']\n")
    docs = _kustomize(tmp_path, files, "namePrefix: blue-\n")
    secret = next(d["metadata"]["name"] for d in docs if d["kind"] == "Secret")
    assert secret.startswith("blue-regcred-") and secret != "blue-regcred"
    lws = [d for d in docs if d["kind"] == "LeaderWorkerSet"]
    assert len(lws) == 2
    for obj in lws:
        for which, template in lws_templates(obj).items():
            pod = template["spec"]
            assert pod["imagePullSecrets"] == [{"name": secret}], (obj["metadata"]["name"], which)
            assert pod["serviceAccountName"] == "blue-llm-serving"
            claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]
                      if "persistentVolumeClaim" in v]
            assert "blue-jit-cache" in claims and "jit-cache" not in claims
    epp = next(d for d in docs if d["kind"] == "Deployment")
    assert epp["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": secret}]


# --- 7: SGLang pods advertise their own address ------------------------------------------------

def test_sglang_pods_get_their_own_host_ip():
    _, _, files = render_spec(EXAMPLES / "s3-v4pro-pd-dp16.yaml")
    for lws in (o for o in objects(files) if o["kind"] == "LeaderWorkerSet"):
        for template in lws_templates(lws).values():
            env = template["spec"]["containers"][0]["env"]
            host = [e for e in env if e["name"] == "SGLANG_HOST_IP"]
            assert host == [{"name": "SGLANG_HOST_IP",
                             "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]


# --- 8: every pod declares the NIXL ports its engines bind -----------------------------------

def test_pod_per_rank_pods_bind_the_nixl_ports_they_declare():
    """vLLM binds VLLM_NIXL_SIDE_CHANNEL_PORT + DP rank (vllm 0.33 nixl/base_scheduler.py
    ``data_parallel_index``). Before: rank N bound 5600+N while the one worker template declared
    5601-5615 on every worker. Now each pod exports base = 5600 - its rank: 5600 + N - N."""
    overlay = ROOT / "tests" / "golden" / "s1-pod-per-rank" / "overlay.yaml"
    _, plan, files = render_spec(S1, [overlay])
    decode = next(r for r in plan.roles if r.name == "decode")
    launch = decode.launch
    assert len(launch.per_pod) == 16
    for i in range(16):
        rank = int(launch.per_pod[i][launch.per_pod[i].index("--data-parallel-rank") + 1]) \
            if i else 0
        env = dict(launch.pod_env[i])
        base = int(env.get("VLLM_NIXL_SIDE_CHANNEL_PORT", "5600"))
        assert base + rank == 5600                      # what the engine binds
        assert [p.port for p in launch.ports_of(i) if p.name.startswith("nixl")] == [5600]
    lws = next(o for o in objects(files) if o["kind"] == "LeaderWorkerSet"
               and o["metadata"]["name"] == "dsv3-pd-decode")
    worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert [p["containerPort"] for p in worker["ports"] if p["name"].startswith("nixl")] == [5600]
    script = worker["args"][-1] if worker.get("args") else worker["command"][-1]
    assert "export VLLM_NIXL_SIDE_CHANNEL_PORT=5585" in script   # rank 15


def test_multi_pod_dp_ranks_bind_the_same_ports_on_every_pod():
    """S1 decode: DP16 over two pods of 8 ranks; pod 1 (ranks 8-15) exports 5592."""
    _, plan, _ = render_spec(S1)
    launch = next(r for r in plan.roles if r.name == "decode").launch
    assert [dict(e).get("VLLM_NIXL_SIDE_CHANNEL_PORT") for e in launch.pod_env] == [None, "5592"]
    for i in (0, 1):
        assert [p.port for p in launch.ports_of(i) if p.name.startswith("nixl")] == \
            list(range(5600, 5608))


# --- 15: gen explain shows the derived engine flags ------------------------------------------

def test_explain_lists_derived_flags(capsys):
    """S1 decode: --max-num-seqs 13 = ceil(200 sequences / 16 DP ranks) (SRV008), derived from
    roles[].sizing.concurrency; before, gen explain stopped at the spec's own fields."""
    from generator.cli import run
    assert run(["explain", str(S1)]) == 0
    lines = capsys.readouterr().out.splitlines()
    seqs = next(ln for ln in lines if ln.startswith("$.spec.roles[1] --max-num-seqs = "))
    assert '"13"' in seqs and "roles[].sizing.concurrency" in seqs
    assert any(ln.startswith("$.spec.roles[1] --data-parallel-size = \"16\"") for ln in lines)


# --- 12: weights baked into the engine image --------------------------------------------------

def test_weights_in_the_image_need_no_volume(tmp_path):
    """MOD005 refused a spec whose engine image carries the weights; model.inImage says so,
    and the pods then mount nothing at model.path."""
    text = "spec:\n  model: {volume: null, inImage: true}\n"
    _, _, files = render_spec(S1, [_overlay(tmp_path, text)])
    for lws in (o for o in objects(files) if o["kind"] == "LeaderWorkerSet"):
        pod = lws_templates(lws)["leader"]["spec"]
        mounts = [m["mountPath"] for m in pod["containers"][0].get("volumeMounts", [])]
        assert "/models/DeepSeek-V3" not in mounts


# --- 13: gen preflight says what went wrong, in JSON too, and checks the namespace applied to --

def test_preflight_without_kubeconfig_says_where_it_looked(tmp_path, capsys, monkeypatch):
    from generator.cli import run
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing.yaml"))
    assert run(["preflight", str(S1), "--format", "json"]) == 2
    out, err = capsys.readouterr()
    doc = json.loads(out)   # before: nothing on stdout
    assert doc["ok"] is False
    assert f"no usable kubeconfig at {tmp_path / 'missing.yaml'} ($KUBECONFIG; the file does " \
        "not exist)" in doc["error"]
    assert "Invalid kube-config" not in err


def test_preflight_says_connection_refused(tmp_path, capsys):
    """A TCP refusal (nothing listens on port 1) was 'the cluster refused a read'."""
    from generator.cli import run
    kc = tmp_path / "kc.yaml"
    kc.write_text("apiVersion: v1\nkind: Config\n"
                  "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
                  "users: [{name: u, user: {token: x}}]\n"
                  "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n")
    assert run(["preflight", str(S1), "--kubeconfig", str(kc)]) == 2
    assert "connection refused by 127.0.0.1" in capsys.readouterr().err


def test_preflight_checks_the_namespace_the_objects_go_to():
    """After the README's kustomize namespace override, --namespace makes preflight look in
    that namespace (it looked in metadata.namespace)."""
    from generator import pipeline
    from generator.preflight import Api, preflight
    seen = []

    def get(path, query=None):
        seen.append(path)
        return {"gitVersion": "v1.32.0"} if path == "/version" else None   # an API server

    checked = pipeline.check(S1, namespace="llm-prod")
    found = preflight(checked, Api(get=get))
    assert "/api/v1/namespaces/llm-prod" in seen and "/api/v1/namespaces/llm" not in seen
    pre005 = next(f for f in found if f.code == "PRE005")
    assert "'llm-prod' does not exist" in pre005.message
    assert pre005.path == "$.metadata.namespace"


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (with built-in kustomize) is not installed")
def test_preflight_checks_the_objects_actually_applied(tmp_path, monkeypatch):
    """--objects takes the kustomize build of the render with a namespace override and a pull
    secret from a secretGenerator: preflight checks the namespace the objects go to (llm-prod,
    from the objects, no --namespace) and the dry run submits the built objects, hashed names
    and all, located at their documents in the stream (before: only the render was checked)."""
    from generator import cli
    from generator.preflight import Api
    _, _, files = render_spec(S1, [])
    built = _kustomize(tmp_path, files, "namespace: llm-prod\nsecretGenerator:\n"
                       "- {name: regcred, literals: [k=v]}\n")
    stream = tmp_path / "built.yaml"
    stream.write_text(yaml.safe_dump_all(built, sort_keys=False))
    seen, sent = [], []

    def get(path, query=None):
        seen.append(path)
        if path == "/version":   # an API server (PRE011 otherwise)
            return {"gitVersion": "v1.32.0"}
        if path.startswith("/apis/") and path.count("/") == 3 or path == "/api/v1":
            kinds = {o["kind"] for o in built if o["apiVersion"] == path.split("/apis/")[-1]
                     or (path == "/api/v1" and o["apiVersion"] == "v1")}
            return {"resources": [{"kind": k, "name": k.lower() + "s", "namespaced": True}
                                  for k in kinds]}
        return {} if path.startswith("/api/v1/namespaces/") else None

    def apply(path, obj):
        sent.append((path, obj["kind"], obj["metadata"]["name"]))
        return 200, obj

    monkeypatch.setattr("generator.preflight.client_api",
                        lambda *a, **k: Api(get=get, dry_run_apply=apply))
    assert cli.run(["preflight", str(S1), "--objects", str(stream), "--dry-run",
                    "--format", "json"]) == 1          # PRE002 etc.: no nodes in this cluster
    assert "/api/v1/namespaces/llm-prod" in seen and "/api/v1/namespaces/llm" not in seen
    assert len(sent) == len(built)
    assert all("/namespaces/llm-prod/" in path for path, _, _ in sent)
    secret = next(name for _, kind, name in sent if kind == "Secret")
    assert secret.startswith("regcred-") and secret != "regcred"       # kustomize's hash
    env = [name for _, kind, name in sent if kind == "ConfigMap"]
    assert env and all(n.startswith("dsv3-pd-") and n.count("-") >= 4 for n in env), env


def test_preflight_objects_in_several_namespaces_need_namespace(tmp_path, capsys):
    from generator.cli import run
    stream = tmp_path / "objs.yaml"
    stream.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n---\n"
                      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: y}\n")
    assert run(["preflight", str(S1), "--objects", str(stream)]) == 2
    assert "the objects go to 2 namespaces (x, y): pass --namespace" in capsys.readouterr().err


# --- 14: gen size says how much KV the sized load uses -----------------------------------------

def test_gen_size_shows_the_kv_the_sized_load_uses(capsys):
    """S1 decode: 13 x 32,768 / 1,769,185 = 24 % at maxModelLen; at the traffic's mean context
    (3,500 + 1,200 / 2 = 4,100 tokens) 13 x 4,100 / 1,769,185 = 3 %."""
    from generator.cli import run
    assert run(["size", str(S1)]) == 0
    out = capsys.readouterr().out
    assert round(13 * 32768 / 1_769_185 * 100) == 24 and round(13 * 4100 / 1_769_185 * 100) == 3
    assert ("KV used      24% of a rank's KV cache at the sized load (13 x 32768 tokens), 3% at "
            "the traffic's mean context (4100 tokens)") in out


# --- 15: the review page fits its width and shows the network ----------------------------------

def test_review_page_scales_its_topology_and_shows_the_network(tmp_path):
    """The inference-gateway topology was wider than a 1,400 px window; the SVG now scales to
    the page (viewBox + max-width), and a Network table shows spec.network."""
    from generator.cli import run
    out = tmp_path / "r.html"
    assert run(["report", str(S1), "-f", str(IGW), "-o", str(out)]) == 0
    page = out.read_text()
    assert 'id="topology"' in page and 'style="max-width: 100%; height: auto"' in page
    assert '<table id="network">' in page
    assert "rdma/ib x1: mlx5_0, mlx5_1, mlx5_2, mlx5_3, GID index 3" in page
