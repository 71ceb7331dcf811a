"""A disaggregated request's way through the decode instance (perf/loop.py
``decode_first_token``), the KV transfer's source NIC (perf/terms.py ``kv_readers``) and chunked
prefill in TTFT vs throughput (perf/terms.py ``prefill``, ``prefill_chunk``): each number below
is derived by hand from the engine behaviour the term names."""

from __future__ import annotations

import json
import math

import pytest

from generator.catalog import GPUS, builtin_arch
from generator.cli import run
from generator.perf import terms as perf
from generator.perf.decode import model_shape
from generator.perf.fixed import PREFILL_LAUNCH_EXPOSED, fixed_costs
from generator.perf.loop import decode_first_token, exposed_kv
from tests.helpers import EXAMPLES


def test_vllm_decode_takes_the_request_in_reads_the_kv_then_computes_the_last_token():
    """vLLM (NixlConnector), synchronous scheduling: half a step until the decode scheduler
    takes the request in, the read starting with a step and reported at the end of the step it
    finishes in (ceil(kv / step) steps, at least one), then one step recomputing the last
    prompt token. Step 40 ms, transfer 10 ms: 20 + 40 + 40 - 10 = 90 ms besides the transfer;
    transfer 100 ms: 20 + ceil(2.5) x 40 + 40 - 100 = 80 ms; transfer 50 ms:
    20 + 2 x 40 + 40 - 50 = 90 ms (the read ends in the second step)."""
    assert decode_first_token("vllm", 0.010, 0.040) == pytest.approx(0.090)
    assert decode_first_token("vllm", 0.100, 0.040) == pytest.approx(0.080)
    assert decode_first_token("vllm", 0.050, 0.040) == pytest.approx(0.090)


def test_vllm_async_scheduling_takes_two_steps_more():
    """vLLM's asynchronous scheduling (the default from 0.26.0 without pipeline parallelism,
    vllm/config/vllm.py): step k+1 is scheduled before step k's output, so the request is
    taken in one step later and recomputed one step after its read is reported:
    90 + 2 x 40 = 170 ms."""
    assert decode_first_token("vllm", 0.010, 0.040, True) == pytest.approx(0.170)


def test_sglang_decode_streams_the_prefill_token_at_its_next_poll():
    """SGLang: the prefill sampled the first token; decode streams it from its prebuilt batch
    at the next scheduler iteration, half a 40 ms step on average = 20 ms, whatever the
    transfer."""
    assert decode_first_token("sglang", 0.010, 0.040) == pytest.approx(0.020)
    assert decode_first_token("sglang", 0.100, 0.040) == pytest.approx(0.020)


def test_s1_ttft_carries_the_decode_first_step(capsys):
    """S1 (vLLM 0.33, NIXL, decode MTP 1 at the default acceptance 0.7, asynchronous
    scheduling): the decode step at the operating point is TPOT x (1 + 0.7) tokens; its
    first-token term is 0.5 s + max(1, ceil(kv / s)) s + s - kv + 2 s with kv the KV
    transfer of the same TTFT."""
    assert run(["size", str(EXAMPLES / "s1-16xh20-pd.yaml"), "--format", "json"]) == 0
    roles = {r["name"]: r["predicted"] for r in json.loads(capsys.readouterr().out)["roles"]}
    parts = roles["prefill"]["ttftPartsMs"]
    step = roles["decode"]["tpotMs"] * 1.7
    kv = parts["kvTransfer"]
    want = 0.5 * step + max(1, math.ceil(kv / step)) * step + step - kv + 2 * step
    assert parts["decodeFirstStep"] == pytest.approx(want, rel=0.01)
    assert parts["decodeFirstStep"] > 0


def test_kv_readers_share_one_prefill_gpus_nic():
    """Decode attention TP 8 reading from prefill TP 2: 8 / 2 = 4 decode GPUs pull from each
    prefill GPU (vLLM's r x P / D mapping, SGLang's required_dst_info_num); TP 1 from TP 8, or
    equal TPs: one reader per source GPU."""
    assert perf.kv_readers(2, 8) == 4
    assert perf.kv_readers(8, 1) == 1 and perf.kv_readers(8, 8) == 1


def test_kv_transfer_runs_on_one_gpus_nic_times_its_readers():
    """4,096 tokens of 70,272 B (DeepSeek-V3's FP8 latent: 61 layers x 1,152 B) over one GPU's
    400 Gbit/s at ETA_NET 0.6 = 30 GB/s: 4096 x 70272 / 30e9 = 9.59 ms; four decode GPUs
    reading the same prefill GPU: 38.4 ms."""
    one = 4096 * 70272 / (400 / 8 * 1e9 * 0.6)
    assert perf.kv_transfer_time(4096, 70272, 400) == pytest.approx(one)
    assert one == pytest.approx(0.009594, rel=1e-3)
    assert perf.kv_transfer_time(4096, 70272, 400, readers=4) == pytest.approx(4 * one)


def test_prefill_chunk_per_rank():
    """SGLang divides chunked_prefill_size by the attention-DP size (16,384 / 4 = 4,096);
    vLLM's max_num_batched_tokens is each DP rank's own budget (8,192 under DP 4)."""
    assert perf.prefill_chunk("sglang", 16384, 4) == 4096
    assert perf.prefill_chunk("sglang", 16384, 1) == 16384
    assert perf.prefill_chunk("vllm", 8192, 4) == 8192


@pytest.fixture(scope="module")
def h100_prefill():
    """DeepSeek-V3 FP8 prefill on one H100 TP8 instance, as the planner times it."""
    gpu = GPUS["H100-80GB"]
    shape = model_shape(builtin_arch("deepseek-v3"), "fp8", 0)

    def run_(isl: int, chunk: int) -> perf.PrefillEstimate:
        return perf.prefill(shape, gpu, isl=isl, tensor=8, data=1, pipeline=1, expert=False,
                            gpus_per_node=8, inter_gbps=400, weights_bytes=80e9, bf16=False,
                            batch_tokens=chunk, chunk_tokens=chunk)
    return run_, fixed_costs(gpu)


def test_a_long_prompt_pays_one_step_per_chunk_in_its_ttft(h100_prefill):
    """TTFT: 20,000 tokens in chunks of 8,192 take ceil(20000 / 8192) = 3 steps one after
    another, each with the step's launches: latency = max(3 x step, work) + exposed x the
    shorter (fixed.step_time over the three steps)."""
    run_, _ = h100_prefill
    pre = run_(20000, 8192)
    assert pre.chunks == 3
    launches = 3 * pre.step_s
    want = max(launches, pre.work_s) + PREFILL_LAUNCH_EXPOSED * min(launches, pre.work_s)
    assert pre.latency_s == pytest.approx(want)


def test_chunks_of_different_requests_share_steps_in_throughput(h100_prefill):
    """Throughput: at full load the chunks of different requests fill the steps, so a prompt
    of 5,000 tokens takes 5000 / 8192 of a step's launches, not a whole step; the GPU-seconds
    of one request are then its work and 8 GPUs x step x 5000 / 8192 of launches, through the
    same overlap: rate = 8 GPUs / busy."""
    run_, _ = h100_prefill
    pre = run_(5000, 8192)
    work = 8 * pre.work_s          # GPU-seconds: TP8, no pipeline, as the rank's time x 8
    launches = 8 * pre.step_s * 5000 / 8192
    busy = max(launches, work) + PREFILL_LAUNCH_EXPOSED * min(launches, work)
    assert pre.requests_per_s == pytest.approx(8 / busy, rel=0.02)
    assert math.isclose(pre.chunk_share, 5000 / 8192)


def test_a_disaggregated_prefill_role_times_its_chunks(tmp_path, capsys):
    """S1's prefill role (vLLM 0.33 on H20-96GB, enforce-eager, max_num_batched_tokens 8,192 by
    default on a GPU of 70 GiB or more) with 20,000-token prompts: the TTFT's prefill term is
    ceil(20000 / 8192) = 3 eager steps over the request's GPU time, max(3 x step, work) +
    exposed x the shorter, with the step's launches and the work of the planner's prefill."""
    over = tmp_path / "o.yaml"
    over.write_text("spec:\n  traffic: {inputTokens: 20000, outputTokens: 1200}\n")
    assert run(["size", str(EXAMPLES / "s1-16xh20-pd.yaml"), "-f", str(over),
                "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    role = next(r for r in doc["roles"] if r["name"] == "prefill")
    pre = perf.prefill(model_shape(builtin_arch("deepseek-v3"), "fp8", 0), GPUS["H20-96GB"],
                       isl=20000, tensor=8, data=1, pipeline=1, expert=False, gpus_per_node=8,
                       inter_gbps=200, weights_bytes=role["perGpu"]["weightsGiB"] * 2**30,
                       bf16=False)
    launches = 3 * pre.step_s
    want = max(launches, pre.work_s) + PREFILL_LAUNCH_EXPOSED * min(launches, pre.work_s)
    assert role["predicted"]["ttftPartsMs"]["prefill"] == pytest.approx(want * 1000, abs=0.1)


def test_sglang_sends_each_chunks_kv_while_the_next_chunks_compute():
    """SGLang's prefill sends a chunk's KV when the chunk is done (disaggregation/prefill.py
    send_kv_chunk): 4 chunks of 50 ms (200 ms prefill) and a 120 ms transfer leave
    max(120 / 4, 120 - 3 x 50) = 30 ms after the prefill; a 400 ms transfer
    400 - 150 = 250 ms. vLLM's decode pulls after the prefill: all 120 ms. One chunk: all."""
    pre = perf.PrefillEstimate(latency_s=0.200, requests_per_s=5.0, chunks=4)
    assert exposed_kv("sglang", 0.120, pre) == pytest.approx(0.030)
    assert exposed_kv("sglang", 0.400, pre) == pytest.approx(0.250)
    assert exposed_kv("vllm", 0.120, pre) == pytest.approx(0.120)
    one = perf.PrefillEstimate(latency_s=0.200, requests_per_s=5.0, chunks=1)
    assert exposed_kv("sglang", 0.120, one) == pytest.approx(0.120)
