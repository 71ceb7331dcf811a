"""Host resources of the engine pods and the startup budget (generator/sizing/host.py), with
the arithmetic done by hand."""

from __future__ import annotations

import pytest

from generator.catalog import builtin_arch
from generator.sizing.host import GIB, PodProcesses, api_servers_from
from generator.sizing.params import inventory
from generator.sizing.weights import checkpoint_bytes
from tests.helpers import EXAMPLES, render_spec


def test_deepseek_v3_fp8_checkpoint_by_hand():
    """Routed experts: 58 MoE layers x 256 experts x (gate_up 4096 x 7168 + down 7168 x 2048
    bytes + one FP32 scale per 128 x 128 block: 32 x 56 and 56 x 16 blocks)
    = 58 x 256 x 44,050,944 B = 654,068,416,512 B = 609.15 GiB."""
    cfg = builtin_arch("deepseek-v3")
    other, experts = checkpoint_bytes(inventory(cfg), cfg, "fp8", mtp=False)
    per_expert = 4096 * 7168 + 4 * 32 * 56 + 7168 * 2048 + 4 * 56 * 16
    assert per_expert == 44_050_944
    assert experts == 58 * 256 * per_expert
    assert round(experts / GIB, 2) == 609.15
    # Everything else (attention, dense layers, shared experts, embeddings): 17.77 GiB; the
    # HF checkpoint's 688.6 GB (641.3 GiB, MTP included) is within 0.6 % of 609.15 + 17.77 + MTP.
    assert round(other / GIB, 2) == 17.77


def test_s1_processes_and_requests():
    """S1, vLLM 0.33: prefill TP8 on one pod; decode DP16/EP over two pods (internal LB)."""
    checked, _, files = render_spec(EXAMPLES / "s1-16xh20-pd.yaml")
    prefill, decode = checked.host
    # Prefill: 8 workers, 1 API server (DP 1), 1 engine core (TP 8 runs the mp executor).
    p = prefill.pods[0]
    assert p.processes == PodProcesses(gpu=8, api=1, other=1)
    assert p.cpu == 4 * 8 + 2 * 1 + 1 * 1 + 2 == 37
    assert p.process_gib == 8 * 8 + 3 * 1 + 2 * 1 + 2 == 71
    # Memory: processes 71 + /dev/shm 8 + staging 5 x 8 = 119 GiB; the pod reads the whole
    # checkpoint (TP 8 on one pod holds every tensor) incl. the MTP module the prefill loads for
    # decode's speculative config: 637.7 GiB (the startup budget's load, not a request).
    assert p.checkpoint_gib == 637.7
    assert p.memory_gib == 71 + 8 + 40 == 119
    # Decode leader: 16 API servers (vLLM >= 0.16 default: the global DP size), 8 engine cores
    # + the DP coordinator; the headless worker: 8 engine cores, no API server.
    leader, worker = decode.pods
    assert leader.processes == PodProcesses(gpu=8, api=16, other=9)
    assert worker.processes == PodProcesses(gpu=8, api=0, other=8)
    assert (leader.cpu, worker.cpu) == (32 + 32 + 9 + 2, 32 + 0 + 8 + 2) == (75, 42)
    # Each pod: the non-expert tensors whole (every DP rank holds them) + half of the experts.
    cfg = builtin_arch("deepseek-v3")
    other, experts = checkpoint_bytes(inventory(cfg), cfg, "fp8", mtp=True)
    assert leader.checkpoint_gib == round((other + experts / 2) / GIB, 1) == 327.9
    assert (leader.memory_gib, worker.memory_gib) == (132 + 8 + 40, 82 + 8 + 40) == (180, 130)
    # Startup: the largest share at 1 GB/s + 1200 s warm-up + 300 s rendezvous, up to 10 s.
    assert decode.load_s == round(327.9 * GIB / 1e9) == 352
    assert decode.startup_s == 1860   # 352 + 1500 = 1852 -> 1860
    assert prefill.startup_s == 2190  # 685 + 1500 = 2185 -> 2190
    # What the manifests request: the leader template carries the leader's numbers.
    assert "memory: 180Gi" in files["decode-lws.yaml"]
    assert "memory: 130Gi" in files["decode-lws.yaml"]
    assert "failureThreshold: 186" in files["decode-lws.yaml"]


def test_sglang_processes():
    """SGLang DP16 decode over two pods: node 0 runs the main process, the detokenizer, the
    DP controller and 8 schedulers; node 1 its schedulers, a DP controller and the dummy
    health server (sglang/srt/entrypoints/engine.py)."""
    checked, _, _ = render_spec(EXAMPLES / "s3-v4pro-pd-dp16.yaml")
    leader, worker = checked.host[1].pods
    assert leader.processes == PodProcesses(gpu=8, api=1, other=2)
    assert worker.processes == PodProcesses(gpu=8, api=1, other=1)


@pytest.mark.parametrize("args,count", [
    (["--api-server-count", "4"], 4), (["-asc=2"], 2), (["--tokenizer-worker-num", "3"], 3),
    (["--enable-auto-tool-choice"], None), (["--api-server-count"], None),
])
def test_api_servers_from_engine_args(args, count):
    assert api_servers_from(args) == count


def test_api_server_count_in_engine_args_changes_the_leader(tmp_path):
    overlay = tmp_path / "o.yaml"
    overlay.write_text("spec:\n  roles:\n    - name: decode\n"
                       "      engineArgs: [--api-server-count, '4']\n")
    checked, _, _ = render_spec(EXAMPLES / "s1-16xh20-pd.yaml", [overlay])
    assert checked.host[1].pods[0].processes.api == 4
