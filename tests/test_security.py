"""Rendered pods carry no more privilege than the spec asks for, and no inline secrets."""

from __future__ import annotations

from tests.helpers import ROOT, lws_templates, objects, render_spec
from tests.test_golden import cases


def _pod_specs(obj):
    if obj["kind"] == "LeaderWorkerSet":
        return [t["spec"] for t in lws_templates(obj).values()]
    if obj["kind"] in ("StatefulSet", "Deployment"):
        return [obj["spec"]["template"]["spec"]]
    return []


def test_least_privilege_in_every_case():
    for name, spec, overlays in cases():
        checked, _, files = render_spec(spec, overlays)
        s = checked.spec.spec
        rdma = s.network.rdma is not None
        privileged = any(r.pod is not None and r.pod.privileged for r in s.roles)
        for obj in objects(files):
            for pod in _pod_specs(obj):
                assert pod.get("hostNetwork", False) == (s.network.hostNetwork
                                                         and obj["kind"] != "Deployment"), name
                for vol in pod.get("volumes", []):
                    assert "hostPath" not in vol, (name, vol)
                for c in pod["containers"]:
                    sc = c.get("securityContext") or {}
                    assert sc.get("privileged", False) == privileged, name
                    caps = (sc.get("capabilities") or {}).get("add", [])
                    assert caps == (["IPC_LOCK"] if rdma and c["name"] == "engine" else []), name
                    for env in c.get("env", []):
                        if env["name"] in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
                            assert "value" not in env and "secretKeyRef" in env["valueFrom"]
                # The routing sidecar (router kind inference-gateway) meets Pod Security
                # "restricted" whatever the engine needs.
                for c in pod.get("initContainers", []):
                    assert c["securityContext"] == {"allowPrivilegeEscalation": False,
                                                    "capabilities": {"drop": ["ALL"]},
                                                    "runAsNonRoot": True,
                                                    "readOnlyRootFilesystem": True}, name


def test_privileged_and_host_path_only_when_asked(tmp_path):
    overlay = tmp_path / "o.yaml"
    overlay.write_text("spec:\n  model:\n    volume: {hostPath: {path: /mnt/models}, persistentVolumeClaim: null}\n"
                       "  roles:\n    - name: decode\n      pod: {privileged: true}\n")
    _, _, files = render_spec(ROOT / "examples" / "s1-16xh20-pd.yaml", [overlay])
    assert "privileged: true" in files["decode-lws.yaml"]
    assert "privileged" not in files["prefill-lws.yaml"]
    assert "path: /mnt/models" in files["prefill-lws.yaml"]
