"""``gen preflight`` against a local HTTP server that answers like the Kubernetes API.

No API server can run on these machines: ``tests/preflight/*.json`` hold cluster states written
by hand in the Kubernetes JSON form (Node objects with their GPU feature discovery labels and
allocatable resources, PersistentVolumeClaims, the CRDs, namespaces, priority classes, service
accounts, Kueue LocalQueues, the server's ``/version``), and :class:`_Cluster` serves them on the API paths the official
client calls (label selectors on nodes included). The client, its kubeconfig handling and its
deserialisation are the real ones.
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


class _Cluster:
    """Serves one cluster state; ``requests`` records every request (method, path)."""

    def __init__(self, state: dict):
        self.state = state
        self.requests: list[tuple[str, str]] = []
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

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, raw: str):
        url = urlparse(raw)
        parts = url.path.strip("/").split("/")
        st = self.state
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
    H20-96GB, another with 4 GPUs and 96 GiB allocatable, and a ReadWriteOnce weights claim."""
    findings = preflight(pipeline.check(S1), api)
    codes = sorted(f.code for f in findings)
    assert codes == ["PRE001", "PRE003", "PRE004", "PRE004", "PRE005", "PRE006"], findings
    by_code = {f.code: f for f in findings}
    assert "h20-141-0" in by_code["PRE003"].message and "97871 MiB" in by_code["PRE003"].message
    pre4 = [f.message for f in findings if f.code == "PRE004"]
    assert any("nvidia.com/gpu 4 < 8" in m for m in pre4)
    assert any("memory 96 GiB < 180 GiB" in m for m in pre4)   # the decode leader's request
    assert "ReadWriteOnce" in by_code["PRE006"].message


@pytest.mark.parametrize("cluster", ["broken"], indirect=True)
def test_cli_reads_the_kubeconfig_context(cluster, tmp_path, capsys):
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {{server: "{cluster.url}"}}
users:
- name: test
  user: {{token: x}}
contexts:
- name: gpu-cluster
  context: {{cluster: test, user: test, namespace: llm}}
current-context: other
""")
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
        # Without platform.topology the server's version is not asked.
        c.requests.clear()
        assert preflight(pipeline.check(S1), api) == []
        assert ("GET", "/version") not in c.requests
        api.close()
    finally:
        c.close()
