"""The performance model's named terms (generator/perf/terms.py) and the memory items of
issue 25, each against numbers derived by hand (the arithmetic is in the test) or an
engine-printed figure within a stated tolerance."""

from __future__ import annotations

import pytest
import yaml

from generator.perf import terms as perf
from generator.perf.fixed import PREFILL_LAUNCH_EXPOSED
from generator.perf.interleave import interleaved
from generator.perf.decode import model_shape
from generator.catalog import GPUS, builtin_arch
from generator.sizing.formats import encoded_bytes, encoding
from generator.sizing.vllm_budget import activation_gib
from tests.helpers import load_script, shared

BLACKWELL = perf.FIXED_COSTS[("nvidia", "blackwell")]
HOPPER = perf.FIXED_COSTS[("nvidia", "hopper")]


def test_interleaved_prefill_holds_decode():
    """2 requests/s, 20 ms decode steps, a prefill step of 80 ms of launches and 10 ms of work
    (it lasts 80 + 0.325 x 10 = 83.25 ms: PREFILL_LAUNCH_EXPOSED of the shorter shows), 10
    sequences of 100 output tokens (k = max(1, 10 / 100) = 1 request per prefill step):
    SGLang, one rank: busy = 2 x 0.08325 = 0.1665, tokens/s = 0.8335 / 0.02 = 41.675, TPOT =
    24.00 ms; attention DP8: the other 7 ranks advance in the held step: 41.675 + 7/8 x 2 =
    43.425 tokens/s; vLLM (prompt chunk inside the decode step, no fixed step): the step holds
    0.02 + 0.01 s, busy = 0.06, tokens/s = 0.94 / 0.02 + 2 = 49, TPOT 20.41 ms."""
    assert PREFILL_LAUNCH_EXPOSED == 0.325
    pre = perf.PrefillEstimate(0.08, 10.0, step_s=0.08, work_s=0.01)
    one = interleaved(2.0, 0.02, pre, data=1, engine="sglang", sequences=10, osl=100)
    assert one.busy == pytest.approx(0.1665) and one.tpot_s == pytest.approx(1 / 41.675)
    dp8 = interleaved(2.0, 0.02, pre, data=8, engine="sglang", sequences=10, osl=100)
    assert dp8.tpot_s == pytest.approx(1 / (41.675 + 7 / 8 * 2))
    vllm = interleaved(2.0, 0.02, pre, data=1, engine="vllm", sequences=10, osl=100)
    assert vllm.busy == pytest.approx(0.06) and vllm.tpot_s == pytest.approx(1 / 49)


def test_closed_loop_batches_the_requests_that_finish_in_one_step():
    """400 sequences of 100 output tokens: 4 finish per decode step, so a prefill step
    carries k = 4 requests (TP: work 4 x 10 ms = 40 ms beside 80 ms of launches: 80 + 0.325 x
    40 = 93.0 ms), 2 / 4 of them per second."""
    pre = perf.PrefillEstimate(0.08, 10.0, step_s=0.08, work_s=0.01)
    m = interleaved(2.0, 0.02, pre, data=1, engine="sglang", sequences=400, osl=100)
    assert m.per_step == 4 and m.busy == pytest.approx(2.0 / 4 * 0.093)


def test_unified_ttft_waits_for_the_running_step():
    """A unified role: 60 ms off the GPU, an 80 ms prefill, 20 % of the time in prefill, 40 ms
    decode steps. vLLM's synchronous step loop (overlap=False: before 0.26.0, or with pipeline
    parallelism): the request waits the rest of the running step,
    60 + (1 - 0.2) x 40 / 2 + 80 x (1 + 0.2 / (2 x 0.8)) = 60 + 16 + 90 = 166 ms. SGLang's
    overlap scheduler, and vLLM's asynchronous scheduling, have launched the next step before
    they read the request: 1.5 steps, 60 + 0.8 x 60 + 90 = 198 ms. The median has no queue
    below half load: 60 + 48 + 80 = 188 ms for SGLang; at busy 0.8 the M/D/1 median wait is
    80 / (2 x 0.2) x ln 1.6 = 94.0 ms."""
    from generator.perf.loop import median_wait, unified_ttft, unified_ttft_median
    pre = perf.PrefillEstimate(0.08, 12.5, request_s=0.06)
    assert unified_ttft(pre, 0.2, 0.04, "vllm", overlap=False) == pytest.approx(0.166)
    assert unified_ttft(pre, 0.2, 0.04, "vllm") == pytest.approx(0.198)
    assert unified_ttft(pre, 0.2, 0.04, "sglang") == pytest.approx(0.198)
    assert unified_ttft_median(pre, 0.2, 0.04, "sglang") == pytest.approx(0.188)
    assert median_wait(0.08, 0.5) == 0.0
    assert median_wait(0.08, 0.8) == pytest.approx(0.0940, abs=1e-4)
    assert unified_ttft(pre, 0.0, 0.0) == pytest.approx(0.140)
    # nothing else decoding (a closed loop of one), or SGLang forced synchronous (drafting)
    assert unified_ttft(pre, 0.2, 0.04, "sglang", decoding=0.0) == pytest.approx(0.150)
    assert unified_ttft(pre, 0.2, 0.04, "sglang", overlap=False) == pytest.approx(0.166)


def _r1(fmt="fp8"):
    return model_shape(builtin_arch("deepseek-r1"), fmt, 70272)


def test_a_prefill_step_takes_the_longer_of_its_launches_and_its_work():
    """R1 FP8 TP8 on B200, 610 tokens, 80 GiB of weights per GPU: the weight read, 80 x 2^30
    / (8e12 x 0.75) = 14.3 ms, is shorter than the launches, 61 layers x prefill_layer_s; the
    step lasts the launches + 0.325 of the work."""
    est = perf.prefill(_r1(), GPUS["B200-180GB"], isl=610, tensor=8, data=1, pipeline=1,
                       expert=False, gpus_per_node=8, inter_gbps=400,
                       weights_bytes=80 * 2**30, bf16=False)
    assert est.step_s == pytest.approx(61 * BLACKWELL.prefill_layer_s)
    assert est.work_s == pytest.approx(80 * 2**30 / (8e12 * 0.75))
    assert est.latency_s == pytest.approx(est.step_s + 0.325 * est.work_s)
    assert est.request_s == BLACKWELL.request_s
    graphs = perf.prefill(_r1(), GPUS["B200-180GB"], isl=610, tensor=8, data=1, pipeline=1,
                          expert=False, gpus_per_node=8, inter_gbps=400,
                          weights_bytes=80 * 2**30, bf16=False, graphs=True)
    assert graphs.step_s == pytest.approx(61 * BLACKWELL.decode_layer_s)


def test_a_prompt_longer_than_the_prefill_batch_pays_a_step_per_batch_of_its_tokens():
    """R1 FP8 TP8 on H20-96GB, a 32,768-token prompt: with an 8,192-token prefill batch it runs
    in ceil(32,768 / 8,192) = 4 steps, each with its launches (61 layers x prefill_layer_s on
    each of the 8 GPUs), against 1 with a 32,768-token batch; its GPU work (the same in both)
    is longer than the 4 steps' launches, so each extra step adds PREFILL_LAUNCH_EXPOSED of
    its launches: 8 / rate_4 - 8 / rate_1 = 0.325 x 3 x 8 x step_s (GPU-seconds per request)."""
    kw = dict(isl=32768, tensor=8, data=1, pipeline=1, expert=False, gpus_per_node=8,
              inter_gbps=400, weights_bytes=80 * 2**30, bf16=False)
    four = perf.prefill(_r1(), GPUS["H20-96GB"], batch_tokens=8192, **kw)
    one = perf.prefill(_r1(), GPUS["H20-96GB"], batch_tokens=32768, **kw)
    assert four.step_s == one.step_s == pytest.approx(61 * HOPPER.prefill_layer_s)
    assert one.work_s * 8 > 4 * 8 * four.step_s        # the work hides the launches
    assert 8 / four.requests_per_s - 8 / one.requests_per_s == pytest.approx(
        PREFILL_LAUNCH_EXPOSED * 3 * 8 * four.step_s)


def test_decode_fixed_cost_and_expert_slices_at_tp8():
    """Batch 1 at TP8 on B200: the fixed cost 61 layers x decode_layer_s; each GPU reads its
    1/8 slice of every hit expert: 256 x (1 - (255/256)^8) = 7.89 slices per MoE layer, x 58
    MoE layers x moe_slice_s."""
    t = perf.decode_terms(_r1(), GPUS["B200-180GB"], batch=1, tensor=8, data=1, expert=False,
                          nonexpert_bytes=2e9, local_experts_per_layer=0, ctx=820,
                          gpus_per_node=8, inter_gbps=400, draft=0, bf16=False)
    assert t.fixed == pytest.approx(61 * BLACKWELL.decode_layer_s)
    hit = 256 * (1 - (255 / 256) ** 8)
    assert hit == pytest.approx(7.89, abs=0.01)
    assert t.slices == pytest.approx(58 * hit * BLACKWELL.moe_slice_s)


def test_moe_tensor_parallel_under_attention_dp():
    """Attention DP8 without EP (SGLang --tp 8 --dp 8, vLLM DP8 without EP): the routed experts
    are tensor-parallel over all 8 GPUs and see every rank's tokens. One sequence per rank: 8
    tokens x 8 routed copies hit 256 x (1 - (255/256)^64) = 56.72 experts per MoE layer; each
    GPU reads its 1/8 slice of every hit one (58 MoE layers x 56.72 x expert bytes / 8) and pays
    a gather and a scatter per MoE layer; under EP without an all-to-all kernel it reads its own
    hit experts and, on AMD, the EP path's per-layer cost on top (FIXED_COSTS amd
    ep_moe_layer_s)."""
    from generator.perf import fixed
    m = _r1()
    gpu = GPUS["MI300X-192GB"]
    costs = fixed.fixed_costs(gpu)
    kw = dict(batch=1, tensor=1, data=8, nonexpert_bytes=2e9, ctx=500, gpus_per_node=8,
              inter_gbps=400, draft=0, bf16=False)
    tp = perf.decode_terms(m, gpu, expert=False, local_experts_per_layer=0, **kw)
    hit = 256 * (1 - (255 / 256) ** 64)
    assert hit == pytest.approx(56.72, abs=0.01)
    assert tp.slices == pytest.approx(58 * hit * costs.moe_slice_s)
    hbm = gpu.hbm_gbps * 1e9 * perf.ETA_HBM
    assert tp.weights == pytest.approx((2e9 + 58 * hit * m.expert_bytes / 8) / hbm)
    assert tp.latency == pytest.approx(2 * 58 * costs.gather_latency_s)
    ep = perf.decode_terms(m, gpu, expert=True, local_experts_per_layer=32, **kw)
    assert ep.latency == pytest.approx(2 * 58 * costs.gather_latency_s
                                       + 58 * costs.ep_moe_layer_s)
    assert costs.ep_moe_layer_s > 0 == fixed.fixed_costs(GPUS["B200-180GB"]).ep_moe_layer_s
    # the token exchange's bytes: 7 other ranks' tokens x 7168 x 2 B each way per MoE layer
    assert tp.dispatch == tp.combine > 0
    # with DeepEP (a kernel), neither the gathers nor the EP path's cost
    deepep = perf.decode_terms(m, gpu, expert=True, local_experts_per_layer=32,
                               all2all="deepep_low_latency", **kw)
    assert deepep.latency == pytest.approx(2 * 58 * costs.a2a_latency_s)
    # the EP path's cost is SGLang's gather path under attention DP only: not with an
    # all-to-all kernel (MoRI), not on vLLM, not with one DP rank (TP-EP)
    base = 2 * 58 * costs.gather_latency_s
    mori = perf.decode_terms(m, gpu, expert=True, local_experts_per_layer=32,
                             all2all="mori_low_latency", **kw)
    assert mori.latency == pytest.approx(2 * 58 * costs.a2a_latency_s)
    vllm = perf.decode_terms(m, gpu, expert=True, local_experts_per_layer=32, engine="vllm",
                             **kw)
    assert vllm.latency == pytest.approx(base)
    tp_ep = perf.decode_terms(m, gpu, **(kw | {"tensor": 8, "data": 1}), expert=True,
                              local_experts_per_layer=32)
    assert tp_ep.latency == pytest.approx(2 * 58 * costs.gather_latency_s
                                          + 2 * 61 * costs.allreduce_latency_s)
    # slices counted on a GPU with a per-slice cost (AMD's is 0): B200
    b200 = perf.decode_terms(m, GPUS["B200-180GB"], expert=False, local_experts_per_layer=0,
                             **kw)
    assert BLACKWELL.moe_slice_s > 0
    assert b200.slices == pytest.approx(58 * hit * BLACKWELL.moe_slice_s)


def test_amd_takes_nvidias_token_gather():
    """No AMD figure separates the collective from the EP path's cost: AMD's gather latency is
    the Blackwell row's (a refit of one must update the other)."""
    assert perf.FIXED_COSTS[("amd", "*")].gather_latency_s == BLACKWELL.gather_latency_s


def test_published_b200_tp8_decode_at_concurrency_1():
    """The SGLang cookbook's R1 TP8 on 8 x B200 at concurrency 1 (TPOT 9.16 ms, a
    development figure the fixed costs are fitted to): within 5 %."""
    rows = {r["id"]: r for r in load_script("bench/planner_residuals.py").residuals()}
    assert rows["cookbook-r1-b200-tp8-1k1k-c1-tpot"]["ratio"] == pytest.approx(1, abs=0.05)


def test_published_mi325x_8k_prefill_at_concurrency_4():
    """InferenceX's R1 TP8 on 8 x MI325X, 8K/1K at concurrency 4 (mean TTFT 1,025 ms, a
    development figure the AMD prefill efficiency is fitted to): within 10 %; the AMD row's own
    prefill GEMM efficiency, 0.0380 of the FP8 peak, is what makes it (at the Hopper rate,
    0.386, its GEMMs would run 0.386 / 0.0380 = 10.2x faster)."""
    rows = {r["id"]: r for r in load_script("bench/planner_residuals.py").residuals()}
    assert rows["inferencex-r1-mi325x-tp8-8k1k-c4-ttft"]["ratio"] == pytest.approx(1, abs=0.10)
    assert perf.fixed_costs(GPUS["MI325X-256GB"]).prefill_eta == 0.0380


# --- memory -----------------------------------------------------------------------------------

def test_nvfp4_v2_quantizes_o_proj():
    """o_proj (7168 x 16384) is BF16 in v1 (2 B per weight) and NVFP4 in v2 (0.5 + 1/16 B,
    plus 8 B of per-tensor scalars): 117,440,512 x 1.4375 - 8 = 168,820,728 B less per layer."""
    n = 7168 * 16384
    assert encoding("attention", True, "nvfp4", name="attn.o_proj") == "bf16"
    assert encoding("attention", True, "nvfp4-v2", name="attn.o_proj") == "nvfp4"
    assert encoding("attention", True, "nvfp4-v2", name="attn.q_b_proj") == "bf16"
    assert encoding("attention", True, "nvfp4-v2", name="attn.o_proj", mtp=True) == "bf16"
    assert encoded_bytes("bf16", 7168, 16384) - encoded_bytes("nvfp4", 7168, 16384) == \
        n * 1.4375 - 8 == 168_820_728


def test_activation_peak_stops_growing_with_the_moe_chunk():
    """8,192 tokens: 8192 x 7168 x 88 B = 4.81 GiB (the fit); 65,536 tokens: (65536 x 44 +
    16384 x 44) x 7168 B = 24.06 GiB, not 8x."""
    assert activation_gib(8192, 7168) == pytest.approx(8192 * 7168 * 88 / 2**30)
    assert activation_gib(65536, 7168) == pytest.approx((65536 + 16384) * 44 * 7168 / 2**30)
    assert activation_gib(65536, 7168) == pytest.approx(24.06, abs=0.01)


def _dev3(name):
    shared("reference", "published-dev-3", "sizing")
    rows = {r["id"]: r for r in load_script("bench/sizing_residuals.py").dev3_residuals()}
    return rows[name]


def test_kv_cache_memory_bytes_gb200_decode():
    """vLLM R1-NVFP4-v2 DP8 decode on GB200 with --kv-cache-memory-bytes 119519622533: the
    engine printed 3,401,600 KV tokens; 119,519,622,533 // 35,136 B per token (61 x 576 FP8)
    = 3,401,628 (one block short of the printed figure: its 16-token blocks); weights within
    5 % of the printed 58.22 GiB."""
    r = _dev3("m01-vllm-r1nvfp4-gb200-dp8-decode")
    assert r["tokens"] == 119_519_622_533 // (61 * 576) == 3_401_628
    assert r["tokens_err"] == pytest.approx(0, abs=0.001)
    assert abs(r["weights_err"]) < 0.05


def test_group_offloading_gb200_prefill():
    """vLLM R1-NVFP4-v2 DP2 prefill on GB200, --offload-group-size 2 --offload-num-in-group 1:
    layers 1, 3, ..., 59 (30); of them 29 MoE layers each hold 128 experts x 44,040,192 weights
    x 0.5 B = 2,818,572,288 B, 29 x that = 81,738,596,352 B: the engine's "81.7386 GB saved".
    Resident weights within 5 % of the printed 112.62 GiB, KV tokens within 10 % of 596,672."""
    experts_bytes = 128 * 3 * 7168 * 2048 * 0.5
    assert 29 * experts_bytes == 81_738_596_352
    r = _dev3("m03-vllm-r1nvfp4-gb200-dp2-prefill")
    assert abs(r["weights_err"]) < 0.05 and abs(r["tokens_err"]) < 0.10
    assert r["weights_printed"] + 81_738_596_352 / 2**30 == pytest.approx(188.74, abs=0.01)


def _s1_decode(tmp_path, concurrency):
    from generator import pipeline
    from tests.helpers import EXAMPLES
    doc = yaml.safe_load((EXAMPLES / "s1-16xh20-pd.yaml").read_text())
    doc["spec"]["roles"][1]["sizing"] = {"concurrency": concurrency}
    doc["spec"]["roles"][1]["serving"] = {"maxNumBatchedTokens": 1024}
    path = tmp_path / f"s{concurrency}.yaml"
    path.write_text(yaml.safe_dump(doc))
    checked = pipeline.check(path)
    return checked.sizing[1], [f for f in checked.findings if f.code == "SIZ003"]


def test_siz003_admits_the_traffics_mean_context(tmp_path):
    """S1 (PD, spec.traffic 3.5K / 1.2K, maxModelLen 32768) with 1024 batched tokens: the
    DP16 decode role on H20-141GB holds 1,401,044 KV tokens per rank (the sizing's); a
    sequence holds 3500 + 1200 / 2 = 4100 tokens on
    average. 3000 sequences (188 per rank): 188 x 4100 = 770,800 fit (at maxModelLen,
    188 x 32,768 = 6,160,384 would not); 8000 (500 per rank): 500 x 4100 = 2,050,000 do not,
    and SIZ003 names the mean context."""
    z, siz = _s1_decode(tmp_path, 3000)
    assert z.admit_len == 4100 and 188 * 4100 <= z.kv_tokens_per_rank < 500 * 4100
    assert not siz and z.fits and 188 * 32768 > z.kv_tokens_per_rank
    z, siz = _s1_decode(tmp_path, 8000)
    assert len(siz) == 1 and "sequences of 4100 tokens on average" in siz[0].message
    assert not z.fits


def _launch(tmp_path, example, overlay):
    from generator import pipeline
    from tests.helpers import EXAMPLES
    path = tmp_path / "o.yaml"
    path.write_text(overlay)
    checked = pipeline.check(EXAMPLES / example, [path])
    assert checked.ok, [str(f) for f in checked.findings]
    return checked, [checked.dialect.launch(r, z).common
                     for r, z in zip(checked.roles, checked.sizing)]


def test_kv_bytes_and_offloading_reach_the_command_line(tmp_path):
    """vLLM 0.33 (S1): --kv-cache-memory-bytes as given; group offloading's three flags. SGLang
    0.5.23 (S3): --max-total-tokens = bytes // the role's KV bytes per token."""
    checked, (pre, dec) = _launch(tmp_path, "s1-16xh20-pd.yaml", """
spec:
  roles:
    - name: prefill
      serving: {weightOffload: {groupSize: 4, numInGroup: 1, prefetchStep: 2}}
    - name: decode
      serving: {kvCacheMemoryBytes: 40000000000}
""")
    i = pre.index("--offload-group-size")
    assert list(pre[i:i + 6]) == ["--offload-group-size", "4", "--offload-num-in-group", "1",
                            "--offload-prefetch-step", "2"]
    assert dec[dec.index("--kv-cache-memory-bytes") + 1] == "40000000000"
    z = checked.sizing[1]
    assert z.kv_cache == pytest.approx(40e9 / 2**30)   # the pool is the bytes, not the budget
    checked, (_, dec) = _launch(tmp_path, "s3-v4pro-pd-dp16.yaml", """
spec:
  roles:
    - name: decode
      serving: {kvCacheMemoryBytes: 10000000000}
""")
    per_token = checked.sizing[1].kv_bytes_per_token
    assert dec[dec.index("--max-total-tokens") + 1] == str(10_000_000_000 // per_token)
