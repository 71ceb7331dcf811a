"""The rendered output passes checkov's Kubernetes checks (the policy suite platform teams run,
offline: ``checkov -d DIR --framework kubernetes --skip-download``) over every example on every
target it renders for, every golden case and every golden target case, with each exception a
waiver of generator/security.py that the object names in its skip annotation.

checkov reads only the workload kinds it knows (Deployment, StatefulSet, Pod, ...:
checkov/kubernetes/kubernetes_utils.py SUPPORTED_POD_CONTAINERS_TYPES); the engine pods of a
LeaderWorkerSet, RoleBasedGroup, DisaggregatedSet, LLMInferenceService, DynamoGraphDeployment or
StormService would pass unseen. So every pod template of those objects is also written as the
Pod its controller creates (the template's metadata and spec) and checked: never a green check
on nothing.

One checkov process over one directory (its start-up dominates; measured in the module's
fixture). It runs from its own venv (.ci/checkov-venv.sh): skipped loudly without it, failed
under CI=true.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from generator import pipeline, security
from generator.emit import write_tree
from tests.helpers import ROOT, example_specs
from tests.test_golden import cases
from tests.test_targets import CASES as TARGET_CASES

DEFAULT_VENV = Path.home() / ".cache" / "moegen" / "checkov-venv-v1"
MARKER = ".moegen-checkov-ok"
#: The kinds checkov reads as workloads (checkov/kubernetes/kubernetes_utils.py 3.3.30).
CHECKOV_WORKLOADS = {"Deployment", "DeploymentConfig", "DaemonSet", "Job", "ReplicaSet",
                     "ReplicationController", "StatefulSet", "Pod", "CronJob"}
PLATFORMS = ("kubernetes", "rbg", "aibrix", "kserve", "dynamo")


def checkov() -> Path:
    """The checkov executable of .ci/checkov-venv.sh's venv; skip loudly (fail when CI=true)."""
    venv = Path(os.environ.get("MOEGEN_CHECKOV_VENV", DEFAULT_VENV)).expanduser()
    exe = venv / "bin" / "checkov"
    if (venv / MARKER).is_file() and exe.exists():
        return exe
    reason = (f"!!! CHECKOV NOT RUN: no finished checkov venv at {venv}; build it with "
              f"`bash {ROOT / '.ci' / 'checkov-venv.sh'}` !!!")
    print(reason, file=sys.stderr)
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        pytest.fail(reason + " [CI=true: CI must build it]", pytrace=False)
    pytest.skip(reason)


def trees() -> list[tuple[str, Path, list[Path], str | None]]:
    """(name, spec, overlays, --target) of every tree checked: every golden case, every golden
    target case, and every example on every platform target that renders it."""
    out = [(name, spec, overlays, None) for name, spec, overlays in cases()]
    out += [(f"target-{name}", spec, overlays, target)
            for name, spec, overlays, target in TARGET_CASES]
    out += [(f"{p}-{e.stem}", e, [], p) for e in example_specs() for p in PLATFORMS
            if p != "kubernetes"]
    return out


def _templates(node, path, parent=None):
    """(path, template) of every pod template below ``node``: a dict with ``metadata`` and a
    ``spec`` holding ``containers``, or a bare PodSpec (KServe's ``template`` and ``worker``),
    whose labels and annotations are its parent's (KServe's workload ``labels``/``annotations``
    go on the pods it creates)."""
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            meta = {k: parent[k] for k in ("labels", "annotations") if k in (parent or {})}
            yield path, {"metadata": meta, "spec": node}
            return
        spec = node.get("spec")
        if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
            yield path, node
            return
        for k, v in node.items():
            yield from _templates(v, [*path, str(k)], node)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            name = v.get("name") if isinstance(v, dict) else None
            yield from _templates(v, [*path, str(name or i)], parent)


def pod_views(obj: dict) -> list[dict]:
    """The Pods a controller creates from ``obj``'s pod templates, for a kind checkov does not
    read: each template's metadata (labels, annotations: the skip annotations) and spec."""
    if obj.get("kind") in CHECKOV_WORKLOADS:
        return []
    out = []
    for path, tpl in _templates(obj.get("spec") or {}, [], obj.get("spec")):
        meta = dict(tpl.get("metadata") or {})
        meta["name"] = "-".join([obj["metadata"]["name"], *path]).lower()
        meta["namespace"] = obj["metadata"].get("namespace", "default")
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": tpl["spec"]})
    return out


def _write(root: Path, name: str, files: dict[str, str]) -> int:
    """The tree and its pod views under ``root/name``; returns the number of pod views."""
    write_tree(root / name, files)
    views = 0
    for path, text in files.items():
        if not path.endswith(".yaml"):
            continue
        pods = [p for doc in yaml.safe_load_all(text) if doc for p in pod_views(doc)]
        if pods:
            views += len(pods)
            (root / name / f"{Path(path).stem}.pods.yaml").write_text(
                yaml.safe_dump_all(pods, sort_keys=True))
    return views


@pytest.fixture(scope="module")
def scan(tmp_path_factory) -> dict:
    """Render every tree, run checkov once over all of them; its JSON report."""
    exe = checkov()
    root = tmp_path_factory.mktemp("checkov")
    views = collections.Counter()
    for name, spec, overlays, target in trees():
        checked = pipeline.check(spec, overlays, target)
        if any(f.severity.value == "error" for f in checked.findings):
            continue   # refused on this target (tests/test_targets.py REFUSED says which)
        _, files = pipeline.render(checked)
        views[checked.spec.spec.target.name] += _write(root, name, files)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    run = subprocess.run([str(exe), "-d", str(root), "--framework", "kubernetes",
                          "--skip-download", "--compact", "-o", "json"], capture_output=True, text=True,
                         env=env, timeout=900, check=False)
    assert run.returncode in (0, 1), run.stderr[-2000:]
    report = json.loads(run.stdout)
    report["views"] = views
    report["root"] = str(root)
    return report


def _comment(result: dict) -> str | None:
    return result["check_result"].get("suppress_comment")


def test_no_check_fails(scan) -> None:
    failed = [f"{r['check_id']} {r['file_path']} {r['resource']}"
              for r in scan["results"]["failed_checks"]]
    assert not failed, "\n".join(sorted(failed))
    assert scan["summary"]["parsing_errors"] == 0


def test_every_skip_is_a_waiver_of_security_py(scan) -> None:
    """Every skip names its check and the reason of a waiver of that check, word for word."""
    known = {(w.check, w.reason) for w in security.WAIVERS.values()}
    bad = [f"{r['check_id']}: {_comment(r)!r} ({r['file_path']})"
           for r in scan["results"]["skipped_checks"]
           if (r["check_id"], _comment(r)) not in known]
    assert not bad, "\n".join(bad)


def test_the_engine_pods_are_checked(scan) -> None:
    """Never a green check on nothing: the engine pods of every platform target reach checkov
    (as pod views), and checkov ran its checks on them."""
    assert set(scan["views"]) == set(PLATFORMS), scan["views"]
    assert all(n > 0 for n in scan["views"].values()), scan["views"]
    pods = {r["file_path"] for r in scan["results"]["passed_checks"]
            if r["file_path"].endswith(".pods.yaml")}
    # every file of pod views got checks (a view checkov could not parse would be missing)
    written = {"/" + str(p.relative_to(scan["root"]))
               for p in Path(scan["root"]).rglob("*.pods.yaml")}
    assert written and written == pods


def test_every_waiver_is_used(scan) -> None:
    """A waiver no rendered object needs is dead text in docs/security.md: each one is used on
    some tree, except those only a spec setting none of the trees has reaches (listed)."""
    used = {(r["check_id"], _comment(r)) for r in scan["results"]["skipped_checks"]}
    unused = {w.key for w in security.WAIVERS.values() if (w.check, w.reason) not in used}
    # pod.privileged (test_privileged_pods_name_their_waivers) and network.networkPolicy:
    # false (test_network_policy_off_is_a_waiver): no tree sets them
    assert unused <= {"privileged", "privileged-escalation", "privileged-capabilities",
                      "privileged-net-raw", "no-network-policy"}, unused


# --- without checkov: the one place, the docs, the NetworkPolicies ---------------------------

def _waiver_table() -> str:
    rows = ["| exception | checkov check | why | source |", "|---|---|---|---|"]
    rows += [f"| `{w.key}` | {w.check} | {w.reason} | {w.source} |"
             for w in security.WAIVERS.values()]
    return "\n".join(rows)


def test_docs_list_every_waiver() -> None:
    """docs/security.md shows users every exception with its reason and source, as written in
    generator/security.py (regenerate the table between the markers when a waiver changes)."""
    doc = (ROOT / "docs" / "security.md").read_text()
    block = doc.split("<!-- waivers:", 1)[1].split("-->", 1)[1].split("<!-- /waivers -->")[0]
    assert block.strip() == _waiver_table()


def test_no_reason_holds_an_equals_sign() -> None:
    """checkov splits the annotation value on '=' (kubernetes_utils.get_skipped_checks): a
    second one is a crash of its scan, not a skip."""
    assert all("=" not in w.reason for w in security.WAIVERS.values())


def _render(tmp_path: Path, overlay: str | None = None) -> dict[str, str]:
    overlays = []
    if overlay:
        (tmp_path / "o.yaml").write_text(overlay)
        overlays = [tmp_path / "o.yaml"]
    checked = pipeline.check(ROOT / "examples" / "s1-16xh20-pd.yaml", overlays)
    return pipeline.render(checked)[1]


def test_s1_network_policies(tmp_path: Path) -> None:
    """S1 (vLLM PD, vllm-router on port 8080 with discovery, engines' API on serving.port 8000,
    no monitoring, no gateway): the engines admit each other on every port and the router on
    8000; the router admits anyone on 8080. Nothing else."""
    files = _render(tmp_path)
    engines = yaml.safe_load(files["networkpolicy-engines.yaml"])
    sel = {"matchLabels": {"app.kubernetes.io/instance": "dsv3-pd"},
           "matchExpressions": [{"key": "moegen.dev/mode", "operator": "Exists"}]}
    assert engines["spec"] == {
        "podSelector": sel, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": sel}]},
                    {"from": [{"podSelector": {"matchLabels": {
                        "app.kubernetes.io/instance": "dsv3-pd", "moegen.dev/role": "router"}}}],
                     "ports": [{"port": 8000, "protocol": "TCP"}]}]}
    router = yaml.safe_load(files["networkpolicy-router.yaml"])
    assert router["spec"]["ingress"] == [{"ports": [{"port": 8080, "protocol": "TCP"}]}]
    assert "networkpolicy-epp.yaml" not in files


def test_network_policy_off_is_a_waiver(tmp_path: Path) -> None:
    """network.networkPolicy: false renders none, and every pod says why CKV2_K8S_6 is
    skipped."""
    files = _render(tmp_path, "spec:\n  network: {networkPolicy: false}\n")
    assert not [f for f in files if f.startswith("networkpolicy")]
    reason = security.WAIVERS["no-network-policy"].reason
    for name in ("prefill-lws.yaml", "decode-lws.yaml", "router-deployment.yaml"):
        assert f"CKV2_K8S_6={reason}" in files[name].replace("''", "'"), name


def test_privileged_pods_name_their_waivers(tmp_path: Path) -> None:
    """pod.privileged replaces IPC_LOCK's waiver by the privileged ones (no golden case is
    privileged, so the checkov run does not see them)."""
    files = _render(tmp_path, "spec:\n  roles:\n    - name: decode\n      pod: {privileged: true}\n")
    decode = files["decode-lws.yaml"]
    for key in ("privileged", "privileged-escalation", "privileged-capabilities",
                "privileged-net-raw"):
        assert security.WAIVERS[key].check + "=" in decode, key
    assert "CKV_K8S_25=" not in decode and "CKV_K8S_25=" in files["prefill-lws.yaml"]
