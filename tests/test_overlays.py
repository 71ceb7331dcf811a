"""Shipped overlays apply to the examples and change exactly what they promise."""

from __future__ import annotations

import pytest

from tests.helpers import EXAMPLES, ROOT, render_spec

OVERLAYS = sorted((ROOT / "overlays").glob("*.yaml"))
S1 = EXAMPLES / "s1-16xh20-pd.yaml"


@pytest.mark.parametrize("overlay", OVERLAYS, ids=[o.stem for o in OVERLAYS])
def test_overlay_applies_to_s1(overlay):
    render_spec(S1, [overlay])


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
