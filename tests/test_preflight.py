"""``gen preflight`` against a local HTTP server that answers like the Kubernetes API.

No API server can run on these machines: ``tests/preflight/*.json`` hold cluster states written
by hand in the Kubernetes JSON form (Node objects with their GPU feature discovery labels and
allocatable resources, PersistentVolumeClaims, the CRDs, namespaces, priority classes, service
accounts, Kueue LocalQueues, the server's ``/version``), and :class:`_Cluster` serves them on the API paths the official
client calls (label selectors on nodes included). The client, its kubeconfig handling and its
deserialisation are the real ones.

``gen preflight --dry-run`` also reads discovery (``tests/preflight/discovery.json``: built-in
APIResourceLists, and those of the CRDs a state installs) and PATCHes every rendered object as a
server-side apply; the server answers a request with ``dryRun=All`` like the API server (201 and
the object for a new one, 200 for one the state holds, a Status from
``tests/preflight/dry-run-rejections.json`` for one it rejects, 404 for a missing namespace) and
refuses any write without it.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from generator import pipeline
from generator.cli import run
from generator.preflight import api_for, preflight
from tests.helpers import EXAMPLES, ROOT

kubernetes = pytest.importorskip("kubernetes")

STATES = ROOT / "tests" / "preflight"
S1 = EXAMPLES / "s1-16xh20-pd.yaml"


def _matches(labels: dict, selector: str) -> bool:
    pairs = [p.split("=", 1) for p in selector.split(",") if p]
    return all(labels.get(k) == v for k, v in pairs)


DISCOVERY = json.loads((STATES / "discovery.json").read_text())
REJECTIONS = json.loads((STATES / "dry-run-rejections.json").read_text())


def _status(code: int, reason: str, message: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


class _Cluster:
    """Serves one cluster state; ``requests`` records every request (method, path), ``writes``
    every request that is not a GET (method, path, query, Content-Type, JSON body)."""

    def __init__(self, state: dict):
        self.state = state
        self.requests: list[tuple[str, str]] = []
        self.writes: list[dict] = []
        cluster = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):  # noqa: N802 - http.server hook
                cluster.requests.append(("GET", self.path))
                body = cluster.answer(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(body if body is not None else
                                            {"kind": "Status", "code": 404}).encode())

            def _write(self, method: str):
                cluster.requests.append((method, self.path))
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                url = urlparse(self.path)
                write = {"method": method, "path": url.path, "query": parse_qs(url.query),
                         "content_type": self.headers.get("Content-Type"),
                         "body": json.loads(raw or b"null")}
                cluster.writes.append(write)
                code, body = cluster.dry_run(write)
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps(body).encode())

            def do_PATCH(self):  # noqa: N802 - http.server hook
                self._write("PATCH")

            def do_POST(self):  # noqa: N802 - http.server hook
                self._write("POST")

            def do_PUT(self):  # noqa: N802 - http.server hook
                self._write("PUT")

            def do_DELETE(self):  # noqa: N802 - http.server hook
                self._write("DELETE")

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def discovery(self, path: str):
        """The APIResourceList of ``/api/v1`` or ``/apis/<group>/<version>``, or None."""
        gv = "v1" if path == "/api/v1" else path.removeprefix("/apis/")
        if gv in DISCOVERY["builtin"]:
            return DISCOVERY["builtin"][gv]
        resources = [r for name, crd in DISCOVERY["crds"].items()
                     if name in self.state["crds"] and crd["groupVersion"] == gv
                     for r in crd["resources"]]
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
                "resources": resources} if resources else None

    def dry_run(self, write: dict) -> tuple[int, dict]:
        """(HTTP status, body) of a write: only a dry run is accepted."""
        if write["query"].get("dryRun") != ["All"]:
            return 500, _status(500, "InternalError", "this test server refuses real writes")
        parts = write["path"].strip("/").split("/")
        if "namespaces" in parts and parts[parts.index("namespaces") + 1] \
                not in self.state["namespaces"]:
            ns = parts[parts.index("namespaces") + 1]
            return 404, _status(404, "NotFound", f'namespaces "{ns}" not found')
        obj = write["body"]
        key = f"{obj['kind']}/{obj['metadata']['name']}"
        if key in self.state.get("rejections", {}):
            status = self.state["rejections"][key]
            return status["code"], status
        exists = key in self.state.get("objects", [])
        stored = {**obj, "metadata": {**obj["metadata"], "uid": "00000000-dry-run",
                                      "creationTimestamp": "2026-01-01T00:00:00Z"}}
        return (200 if exists else 201), stored

    def answer(self, raw: str):
        url = urlparse(raw)
        parts = url.path.strip("/").split("/")
        st = self.state
        if url.path == "/api/v1" or url.path.startswith("/apis/") and len(parts) == 3:
            return self.discovery(url.path)
        if url.path == "/api/v1/nodes":
            sel = parse_qs(url.query).get("labelSelector", [""])[0]
            items = [n for n in st["nodes"]["items"] if _matches(n["metadata"]["labels"], sel)]
            return {**st["nodes"], "items": items}
        if url.path.startswith("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"):
            name = parts[-1]
            return {"kind": "CustomResourceDefinition", "metadata": {"name": name}} \
                if name in st["crds"] else None
        if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 4:
            return {"kind": "Namespace", "metadata": {"name": parts[3]}} \
                if parts[3] in st["namespaces"] else None
        if url.path == "/version":
            return st.get("version")
        if "persistentvolumeclaims" in parts:
            return st["pvcs"].get(f"{parts[3]}/{parts[-1]}")
        for kind in ("priorityclasses", "serviceaccounts", "localqueues"):
            if kind in parts:
                return {"metadata": {"name": parts[-1]}} if parts[-1] in st[kind] else None
        return None

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def cluster(request):
    c = _Cluster(json.loads((STATES / f"{request.param}.json").read_text()))
    yield c
    c.close()


@pytest.fixture
def api(cluster):
    conf = kubernetes.client.Configuration(host=cluster.url)
    a = api_for(kubernetes.client.ApiClient(conf))
    yield a
    a.close()


@pytest.mark.parametrize("cluster", ["ready"], indirect=True)
def test_ready_cluster_passes_and_is_only_read(cluster, api):
    findings = preflight(pipeline.check(S1), api)
    assert findings == []
    assert cluster.requests and all(m == "GET" for m, _ in cluster.requests)


@pytest.mark.parametrize("cluster", ["broken"], indirect=True)
def test_broken_cluster_findings(cluster, api):
    """S1 on a cluster without the LWS CRD, namespace missing, a decode node that is an
    H20-96GB, another with 4 GPUs, 96 GiB of memory and 40 GiB of ephemeral storage
    allocatable, and a ReadWriteOnce weights claim."""
    findings = preflight(pipeline.check(S1), api)
    codes = sorted(f.code for f in findings)
    assert codes == ["PRE001", "PRE003", "PRE004", "PRE004", "PRE004", "PRE005", "PRE006"], \
        findings
    by_code = {f.code: f for f in findings}
    assert "h20-141-0" in by_code["PRE003"].message and "97871 MiB" in by_code["PRE003"].message
    pre4 = [f.message for f in findings if f.code == "PRE004"]
    assert any("nvidia.com/gpu 4 < 8" in m for m in pre4)
    assert any("memory 96 GiB < 180 GiB" in m for m in pre4)   # the decode leader's request
    # 32 GiB compile cache + 20 GiB /tmp (generator/sizing/host.py) a pod, one pod a node
    assert any("ephemeral-storage 40 GiB < 52 GiB" in m for m in pre4)
    assert "ReadWriteOnce" in by_code["PRE006"].message


@pytest.mark.parametrize("cluster", ["broken"], indirect=True)
def test_cli_reads_the_kubeconfig_context(cluster, tmp_path, capsys):
    kubeconfig = _kubeconfig(tmp_path, cluster.url, current="other")
    assert run(["preflight", str(S1), "--kubeconfig", str(kubeconfig),
                "--context", "gpu-cluster", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and {f["code"] for f in doc["findings"]} >= {"PRE001", "PRE005"}


def test_no_cluster_is_a_usage_error(tmp_path, capsys):
    assert run(["preflight", str(S1), "--kubeconfig", str(tmp_path / "none")]) == 2
    assert "cannot reach the cluster" in capsys.readouterr().err


@pytest.mark.parametrize("cluster", ["ready"], indirect=True)
def test_missing_references_and_nodes(cluster, api, tmp_path):
    """S1 naming a PriorityClass, a ServiceAccount and a Kueue LocalQueue the cluster lacks, with
    a decode pool that counts on 3 nodes where 2 match."""
    overlay = tmp_path / "o.yaml"
    overlay.write_text("spec:\n  nodePools:\n    decode-h20: {nodes: 3}\n"
                       "  pod: {priorityClassName: llm-critical, serviceAccountName: llm-serving}\n"
                       "  platform:\n    scheduler: {kind: kueue, queue: llm-queue}\n")
    findings = preflight(pipeline.check(S1, [overlay]), api)
    assert sorted(f.code for f in findings) == ["PRE001", "PRE002", "PRE007", "PRE007", "PRE008"]
    assert any("localqueues.kueue.x-k8s.io" in f.message for f in findings)


@pytest.mark.parametrize("cluster", ["ready"], indirect=True)
def test_amd_pools_need_amd_gpus(cluster, api, tmp_path):
    """S1 moved to MI300X pools (MoRI-EP on decode): the ready cluster's nodes are H20 nodes with
    nvidia.com/gpu only, so every node lacks the amd.com/gpu its pods request; the NVIDIA GPU
    feature discovery labels are not read for an AMD pool (no PRE003)."""
    overlay = tmp_path / "o.yaml"
    overlay.write_text("spec:\n  nodePools:\n    prefill-h20: {gpu: MI300X-192GB}\n"
                       "    decode-h20: {gpu: MI300X-192GB}\n"
                       "  roles:\n    - name: decode\n      moe: {all2all: mori_low_latency}\n")
    findings = preflight(pipeline.check(S1, [overlay]), api)
    assert {f.code for f in findings} == {"PRE004"}, findings
    assert all("allocatable amd.com/gpu 0 < 8" in f.message for f in findings), findings


TOPOLOGY = ROOT / "tests" / "golden" / "s1-topology" / "topology.yaml"


@pytest.mark.parametrize("git_version,codes", [
    ("v1.31.2", []),
    ("v1.30.4-eks-a737599", ["PRE009"]),
])
def test_group_affinity_needs_kubernetes_1_31(git_version, codes):
    """S1 with platform.topology: the multi-node decode groups' pod affinity uses matchLabelKeys,
    which API servers before 1.31 drop (MatchLabelKeysInPodAffinity off)."""
    state = json.loads((STATES / "ready.json").read_text())
    state["version"] = {**state["version"], "minor": git_version.split(".")[1],
                        "gitVersion": git_version}
    c = _Cluster(state)
    try:
        api = api_for(kubernetes.client.ApiClient(kubernetes.client.Configuration(host=c.url)))
        findings = preflight(pipeline.check(S1, [TOPOLOGY]), api)
        assert [f.code for f in findings] == codes, findings
        assert all("Kubernetes 1.30" in f.message for f in findings)
        # Without platform.topology the server's version is asked once only: whether it is an
        # API server at all (PRE011), not for PRE009.
        c.requests.clear()
        assert preflight(pipeline.check(S1), api) == []
        assert c.requests.count(("GET", "/version")) == 1
        api.close()
    finally:
        c.close()


# --- gen preflight --dry-run ------------------------------------------------------------------

#: What S1 renders (tests/golden/s1-16xh20-pd, kustomization.yaml): its resources, then the two
#: ConfigMaps its configMapGenerator builds from env/<role>.env.
S1_OBJECTS = {
    ("LeaderWorkerSet", "dsv3-pd-decode"): "/apis/leaderworkerset.x-k8s.io/v1/namespaces/llm/"
                                          "leaderworkersets/dsv3-pd-decode",
    ("LeaderWorkerSet", "dsv3-pd-prefill"): "/apis/leaderworkerset.x-k8s.io/v1/namespaces/llm/"
                                           "leaderworkersets/dsv3-pd-prefill",
    ("PodDisruptionBudget", "dsv3-pd-decode"): "/apis/policy/v1/namespaces/llm/"
                                              "poddisruptionbudgets/dsv3-pd-decode",
    ("PodDisruptionBudget", "dsv3-pd-prefill"): "/apis/policy/v1/namespaces/llm/"
                                               "poddisruptionbudgets/dsv3-pd-prefill",
    ("PodDisruptionBudget", "dsv3-pd-router"): "/apis/policy/v1/namespaces/llm/"
                                              "poddisruptionbudgets/dsv3-pd-router",
    ("Service", "dsv3-pd-router"): "/api/v1/namespaces/llm/services/dsv3-pd-router",
    ("Deployment", "dsv3-pd-router"): "/apis/apps/v1/namespaces/llm/deployments/dsv3-pd-router",
    ("Role", "dsv3-pd-router"): "/apis/rbac.authorization.k8s.io/v1/namespaces/llm/roles/"
                                "dsv3-pd-router",
    ("RoleBinding", "dsv3-pd-router"): "/apis/rbac.authorization.k8s.io/v1/namespaces/llm/"
                                       "rolebindings/dsv3-pd-router",
    ("ServiceAccount", "dsv3-pd-router"): "/api/v1/namespaces/llm/serviceaccounts/dsv3-pd-router",
    ("ConfigMap", "dsv3-pd-prefill-env"): "/api/v1/namespaces/llm/configmaps/dsv3-pd-prefill-env",
    ("ConfigMap", "dsv3-pd-decode-env"): "/api/v1/namespaces/llm/configmaps/dsv3-pd-decode-env",
    ("NetworkPolicy", "dsv3-pd-engines"): "/apis/networking.k8s.io/v1/namespaces/llm/"
                                          "networkpolicies/dsv3-pd-engines",
    ("NetworkPolicy", "dsv3-pd-router"): "/apis/networking.k8s.io/v1/namespaces/llm/"
                                         "networkpolicies/dsv3-pd-router",
}


def _rejecting_cluster() -> _Cluster:
    """The ready cluster, with the admission policy that denies S1's decode LeaderWorkerSet, and
    S1's router Service already applied (its dry run answers 200, not 201)."""
    state = json.loads((STATES / "ready.json").read_text())
    state["rejections"] = {k: v for k, v in REJECTIONS.items() if not k.startswith("_")}
    state["objects"] = ["Service/dsv3-pd-router"]
    return _Cluster(state)


def _kubeconfig(tmp_path, url: str, current: str = "gpu-cluster"):
    path = tmp_path / "config"
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {{server: "{url}"}}
users:
- name: test
  user: {{token: x}}
contexts:
- name: gpu-cluster
  context: {{cluster: test, user: test, namespace: llm}}
current-context: {current}
""")
    return path


def test_dry_run_applies_every_object_server_side():
    """Every object of the render is one server-side apply with dryRun=All (what kubectl apply
    --server-side --dry-run=server sends), and the one the cluster's admission policy denies is
    PRE010 on its file, with the API server's message."""
    c = _rejecting_cluster()
    try:
        api = api_for(kubernetes.client.ApiClient(kubernetes.client.Configuration(host=c.url)))
        findings = preflight(pipeline.check(S1), api, dry_run=True)
        api.close()
    finally:
        c.close()
    assert [f.code for f in findings] == ["PRE010"], findings
    f = findings[0]
    assert f.location.file == "decode-lws.yaml"
    assert f.path == "$.spec.leaderWorkerTemplate.size"   # the Status cause's field
    assert f.message.startswith("LeaderWorkerSet dsv3-pd-decode: the API server rejects it "
                                "(HTTP 422 Invalid): ")
    assert "ValidatingAdmissionPolicy 'max-group-size'" in f.message
    # One PATCH per object, no POST, PUT or DELETE; each a dry-run server-side apply.
    assert {w["method"] for w in c.writes} == {"PATCH"}
    sent = {(w["body"]["kind"], w["body"]["metadata"]["name"]): w["path"] for w in c.writes}
    assert sent == S1_OBJECTS
    assert len(c.writes) == len(S1_OBJECTS) == 14    # 12 resources + 2 generated ConfigMaps
    for w in c.writes:
        assert w["content_type"] == "application/apply-patch+yaml"
        assert w["query"] == {"dryRun": ["All"], "fieldManager": ["kubectl"],
                              "fieldValidation": ["Strict"], "force": ["false"]}
        assert w["body"]["metadata"]["namespace"] == "llm"
    # The generated ConfigMap as kustomize builds it from env/decode.env: split at the first
    # "=" (NCCL_IB_HCA==mlx5_0,... is the value "=mlx5_0,...", NCCL's exact-match prefix),
    # comment lines dropped, the generator's labels and annotations.
    cm = next(w["body"] for w in c.writes if w["body"]["metadata"]["name"] == "dsv3-pd-decode-env")
    assert cm["data"]["NCCL_IB_HCA"] == "=mlx5_0,mlx5_1,mlx5_2,mlx5_3"
    assert cm["data"]["GLOO_SOCKET_IFNAME"] == "eth0"
    assert not any(k.startswith("#") for k in cm["data"])
    assert cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "moegen"
    assert cm["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "-1"


@pytest.mark.parametrize("cluster", ["broken"], indirect=True)
def test_dry_run_sends_nothing_into_a_missing_namespace(cluster, api):
    """On the broken cluster (no namespace llm, no LWS CRD) no object is sent: every one is
    namespaced (PRE005 says why) and LeaderWorkerSet is not served (PRE010, as kubectl's "no
    matches for kind")."""
    findings = preflight(pipeline.check(S1), api, dry_run=True)
    assert cluster.writes == []
    pre10 = sorted((f.location.file, f.message) for f in findings if f.code == "PRE010")
    assert [file for file, _ in pre10] == ["decode-lws.yaml", "prefill-lws.yaml"]
    assert all("serves no LeaderWorkerSet in leaderworkerset.x-k8s.io/v1" in m for _, m in pre10)
    assert "PRE005" in {f.code for f in findings}


def test_cli_dry_run_finding_and_exit_code(tmp_path, capsys):
    """gen preflight --dry-run: the rejection in every format's file field, exit 1; without
    --dry-run the same cluster sees only GETs and passes (exit 0)."""
    c = _rejecting_cluster()
    try:
        kubeconfig = _kubeconfig(tmp_path, c.url)
        assert run(["preflight", str(S1), "--kubeconfig", str(kubeconfig)]) == 0
        assert c.writes == [] and all(m == "GET" for m, _ in c.requests)
        capsys.readouterr()
        assert run(["preflight", str(S1), "--kubeconfig", str(kubeconfig), "--dry-run",
                    "--format", "json"]) == 1
        doc = json.loads(capsys.readouterr().out)
        assert doc["ok"] is False
        assert [(f["code"], f["file"]) for f in doc["findings"]] == [("PRE010",
                                                                      "decode-lws.yaml")]
        assert len(c.writes) == 14
        assert run(["preflight", str(S1), "--kubeconfig", str(kubeconfig), "--dry-run"]) == 1
        err = capsys.readouterr().err
        assert "decode-lws.yaml: error PRE010 $.spec.leaderWorkerTemplate.size: LeaderWorkerSet " \
               "dsv3-pd-decode: the API server rejects it (HTTP 422 Invalid)" in err
    finally:
        c.close()


class _NotKubernetes:
    """An HTTP server that is no API server, answering every GET with ``status`` and ``body``."""

    def __init__(self, status: int, body: bytes, content_type: str):
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):  # noqa: N802 - http.server hook
                server.requests.append(self.path)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.end_headers()
                self.wfile.write(body)

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_an_endpoint_that_is_not_an_api_server_is_one_finding(tmp_path, capsys):
    """A kubeconfig pointing at another HTTP server: one answering 404 to every path (the
    engine's own API: FastAPI's {"detail": "Not Found"}; before, five findings as if the
    cluster were empty: PRE001, PRE005, PRE002 x2, PRE006), or a web server's HTML page
    (before, exit 2 "the cluster refused a read"), is one PRE011 naming the server, and
    nothing else is asked."""
    fastapi = _NotKubernetes(404, b'{"detail":"Not Found"}', "application/json")
    nginx = _NotKubernetes(200, b"<html><body>Welcome to nginx!</body></html>", "text/html")
    try:
        for server, what in ((fastapi, "404 Not Found"), (nginx, "a body that is not JSON")):
            kubeconfig = _kubeconfig(tmp_path, server.url)
            assert run(["preflight", str(S1), "--kubeconfig", str(kubeconfig),
                        "--format", "json"]) == 1
            doc = json.loads(capsys.readouterr().out)
            assert [(f["code"], f["message"]) for f in doc["findings"]] == [(
                "PRE011", f"{server.url} is not a Kubernetes API server: GET /version answers "
                f"{what}, so nothing in the cluster was checked")]
            assert server.requests == ["/version"]
    finally:
        fastapi.close()
        nginx.close()


def test_pods_a_role_places_on_one_node():
    """The allocatable check counts the pods a node holds of a role: 8 one-GPU instances pack
    on an 8-GPU node (8), 3 of them are 3; per-rank TP2 pods of a DP8 instance 4 a node; an
    instance of whole nodes one."""
    from types import SimpleNamespace

    from generator.layout import compute_layout
    from generator.preflight import _pods_per_node

    def checked(lay):
        return SimpleNamespace(roles=[SimpleNamespace(layout=lay)])
    assert _pods_per_node(checked(compute_layout(1, 1, 1, False, "statefulset", 8, 8, True)), 0) == 8
    assert _pods_per_node(checked(compute_layout(1, 1, 1, False, "statefulset", 8, 3, True)), 0) == 3
    assert _pods_per_node(checked(compute_layout(2, 8, 1, True, "pod-per-rank", 8, 1)), 0) == 4
    assert _pods_per_node(checked(compute_layout(1, 16, 1, True, "lws", 8, 2)), 0) == 1
