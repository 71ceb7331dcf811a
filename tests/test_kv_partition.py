"""The KV transports on an InfiniBand partition (review38 F2): network.rdma.pkeyIndex reaches
NCCL (NCCL_IB_PKEY, an index) and NVSHMEM; NIXL's UCX takes UCX_IB_PKEY, a P_Key VALUE whose
default picks the port's first full-member key (NET042), and Mooncake creates its queue pairs
at index 0 whatever is set (NET043)."""

from __future__ import annotations

import pytest

from generator import pipeline
from tests.helpers import EXAMPLES

S1 = EXAMPLES / "s1-16xh20-pd.yaml"


def _codes(tmp_path, overlay: str) -> list[tuple[str, str, str]]:
    path = tmp_path / "o.yaml"
    path.write_text(overlay)
    return sorted((f.code, f.severity.value, f.path) for f in pipeline.check(S1, [path]).findings
                  if f.code in ("NET042", "NET043"))


PKEY = "spec:\n  network:\n    rdma: {pkeyIndex: 1}\n"
MOONCAKE = ("  roles:\n  - {name: prefill, kvTransfer: {connector: mooncake}}\n"
            "  - {name: decode, kvTransfer: {connector: mooncake}}\n")


@pytest.mark.parametrize("overlay, expected", [
    # S1 (NIXL over UCX on mlx5) on P_Key index 1: one warning naming both roles
    (PKEY, [("NET042", "warning", "$.spec.network.rdma.pkeyIndex")]),
    # the partition's P_Key value stated for UCX: nothing to say
    (PKEY + "    env: {UCX_IB_PKEY: '0x0001'}\n", []),
    # index 0 (or none): UCX's auto and Mooncake's 0 are the partition
    ("spec:\n  network:\n    rdma: {pkeyIndex: 0}\n", []),
    # Mooncake: index 0 always
    (PKEY + MOONCAKE, [("NET043", "warning", "$.spec.network.rdma.pkeyIndex")]),
])
def test_kv_transfer_on_a_partition(tmp_path, overlay, expected):
    assert _codes(tmp_path, overlay) == expected
