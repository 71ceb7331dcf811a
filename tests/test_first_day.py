"""What a platform team finds on the first day (issue #20): each item a test that failed before
its fix. Renders go through the pipeline with small inline overlays over the shipped examples."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from generator.emit import write_tree
from tests.helpers import EXAMPLES, ROOT, objects, render_spec

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
    over.mkdir()
    (over / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + overlay
        + "resources:\n- ../base\n")
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
        tmpl = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]
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
