"""Shipped overlays apply to the examples and change exactly what they promise."""

from __future__ import annotations

import pytest
import yaml

from generator import pipeline
from tests.helpers import EXAMPLES, ROOT, render_spec

OVERLAYS = sorted((ROOT / "overlays").glob("*.yaml"))
S1 = EXAMPLES / "s1-16xh20-pd.yaml"


#: Overlays made for another example than S1 (their "Use:" line names it).
OTHER_TARGETS = {"bf16-weights": EXAMPLES / "s2-32xh20-ep32-fp8.yaml"}


@pytest.mark.parametrize("overlay", OVERLAYS, ids=[o.stem for o in OVERLAYS])
def test_overlay_applies_to_its_example(overlay):
    target = OTHER_TARGETS.get(overlay.stem)
    if target is None:
        render_spec(S1, [overlay])
        return
    # bf16-weights shows a plan that does not fit (README, "The HBM sizing check"): it passes
    # every structural check and is refused by the HBM check only.
    assert f"-f overlays/{overlay.name}" in overlay.read_text() and target.name in overlay.read_text()
    checked = pipeline.check(target, [overlay])
    assert {f.code for f in checked.findings} == {"SIZ003"}


def test_roce_hostnetwork_overlay_effects():
    _, _, files = render_spec(S1, [ROOT / "overlays" / "roce-hostnetwork.yaml"])
    lws = files["decode-lws.yaml"]
    assert "hostNetwork: true" in lws and "dnsPolicy: ClusterFirstWithHostNet" in lws
    assert "rdma/roce: 1" in lws
    env = files["env/decode.env"]
    assert "GLOO_SOCKET_IFNAME=bond0\n" in env
    assert "NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7\n" in env


def test_infiniband_overlay_has_no_gid_index():
    _, _, files = render_spec(S1, [ROOT / "overlays" / "infiniband.yaml"])
    assert "NCCL_IB_GID_INDEX" not in files["env/decode.env"]
    assert "rdma/ib: 1" in files["decode-lws.yaml"]


def test_dev_overlay_is_small_and_plain():
    _, plan, files = render_spec(S1, [ROOT / "overlays" / "dev-small.yaml"])
    assert all(w.leader.spec.resources["limits"]["nvidia.com/gpu"] == 1 for w in plan.workloads)
    decode = files["decode-lws.yaml"]
    assert "--speculative-config" not in decode and "--all2all-backend" not in decode
    assert "rdma/" not in decode
    # no capability added (the checkov skip annotations may name IPC_LOCK in their reasons)
    lws = yaml.safe_load(decode)
    for tmpl in (lws["spec"]["leaderWorkerTemplate"].get("leaderTemplate"),
                 lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]):
        for c in (tmpl or {"spec": {"containers": []}})["spec"]["containers"]:
            assert "add" not in c.get("securityContext", {}).get("capabilities", {}), c["name"]


def test_multi_nic_overlay_requests_eight_rdma_devices():
    _, _, files = render_spec(S1, [ROOT / "overlays" / "multi-nic-cloud.yaml"])
    assert "rdma/roce_gdr: 8" in files["decode-lws.yaml"]
    assert "UCX_NET_DEVICES=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,lo\n" \
        in files["env/decode.env"]


def test_fp8_kv_and_mtp_overlays():
    _, _, files = render_spec(S1, [ROOT / "overlays" / "fp8-kv-cache.yaml",
                                   ROOT / "overlays" / "mtp-decode.yaml"])
    assert "--kv-cache-dtype fp8" in files["prefill-lws.yaml"]
    assert "'{\"method\":\"mtp\",\"num_speculative_tokens\":1}'" in files["decode-lws.yaml"]
