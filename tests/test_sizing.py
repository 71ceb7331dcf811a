"""HBM sizing: hand-derived numbers (each test says how), and engine-printed figures.

Expected values are written out as arithmetic on the config fields of DeepSeek-V3
(hidden 7168, 61 layers of which 3 dense, 128 heads, q_lora 1536, kv_lora 512, qk nope/rope
128/64, v 128, dense intermediate 18432, 256 experts x 2048 + 1 shared, vocab 129280), never by
calling the code under test.
"""

from __future__ import annotations

import pytest

from generator.catalog import builtin_arch
from generator.sizing.kv import kv_bytes_per_token
from generator.sizing.params import inventory
from tests.helpers import EXAMPLES, load_script, shared

GIB = 2**30
H, L, DENSE, MOE = 7168, 61, 3, 58
ATTN = (7168 * 1536 + 1536 + 1536 * 128 * (128 + 64) + 7168 * (512 + 64) + 512
        + 512 * 128 * (128 + 128) + 128 * 128 * 7168)       # q_a, norm, q_b, kv_a, norm, kv_b, o
EXPERT = 3 * 7168 * 2048                                    # gate, up, down of one expert
DENSE_MLP = 3 * 7168 * 18432
VOCAB = 129280


def test_deepseek_v3_parameter_counts():
    inv = inventory(builtin_arch("deepseek-v3"))
    comp = inv.component_params()
    assert ATTN == 187_107_328
    assert comp["attention"] == L * ATTN
    assert comp["routed_experts"] == MOE * 256 * EXPERT == 653_908_770_816
    assert comp["shared_experts"] == MOE * EXPERT
    assert comp["dense_mlp"] == DENSE * DENSE_MLP
    assert comp["embedding"] == comp["lm_head"] == VOCAB * H
    # 671.03 B in the main model (671 B: https://arxiv.org/abs/2412.19437), ~11.6 B more for MTP.
    assert round(inv.total_params() / 1e9, 2) == 671.03
    assert round((inv.total_params(True) - inv.total_params()) / 1e9, 1) == 11.6


def test_kv_bytes_per_token():
    v3, v32 = builtin_arch("deepseek-v3"), builtin_arch("deepseek-v3.2")
    assert kv_bytes_per_token(v3, "auto", 61) == 61 * (512 + 64) * 2 == 70_272
    assert kv_bytes_per_token(v3, "fp8", 61) == 61 * (512 + 64) == 35_136
    # V3.2 FP8: fp8_ds_mla 512 + 4 x 4 scales + 64 x 2 rope = 656, indexer 128 + 4 = 132.
    assert kv_bytes_per_token(v32, "fp8", 61) == 61 * (656 + 132) == 48_068
    assert kv_bytes_per_token(v32, "auto", 61) == 61 * (1152 + 132) == 78_324
    # The MTP draft layer's KV comes on top.
    assert kv_bytes_per_token(v3, "fp8", 61, 1) == 62 * 576


def _size(tmp_path, overlay: str, spec=EXAMPLES / "s2-32xh20-ep32-fp8.yaml"):
    from generator import pipeline
    o = tmp_path / "o.yaml"
    o.write_text(overlay)
    checked = pipeline.check(spec, [o])
    return checked, checked.sizing[0]


def test_s2_bf16_dp32_weights_per_gpu(tmp_path):
    """BF16 at DP32/EP32 (TP1): everything but the routed experts is replicated; 8 of 256
    experts per GPU; no extra MLA copies for a BF16 kv_b_proj: ~69.9 GiB (docs/design.md §1)."""
    checked, z = _size(tmp_path, "spec:\n  model: {weights: bf16}\n")
    by_hand = 2 * (L * ATTN + L * 2 * H + H                      # attention, layer norms, final norm
                   + DENSE * DENSE_MLP + MOE * EXPERT             # dense MLP, shared experts
                   + MOE * 256 * H + 2 * VOCAB * H                # router, embedding + lm_head
                   + MOE * (256 // 32) * EXPERT) + MOE * 256 * 4  # routed experts; fp32 bias
    assert z.weights == pytest.approx(by_hand / GIB, abs=0.005)
    assert round(z.weights, 1) == 69.9
    assert [f.code for f in checked.findings if f.severity.value == "error"] == ["SIZ003"]


def test_s2_fp8_kv_capacity_by_hand(tmp_path):
    """FP8 weights, BF16 KV, DP32 on H20-96GB at 0.90, vLLM 0.33 with DeepEP low-latency:
    KV tokens per rank = (0.90 x 95.58 - weights - rotary cache - activation - overhead)
    / 70,272 B, where the rotary cache = 163,840 positions x 64 x 2 B, activation = 256 tokens x
    7168 x 88 B, overhead = 0.3 (non-torch at TP1) + 1.7 (CUDA graphs) + DeepEP 4 x 256 experts x
    256 tokens x 2 x 7168 B."""
    _, z = _size(tmp_path, "metadata: {name: s2}\n")
    rope = 163_840 * 64 * 2 / GIB
    activation = 256 * 7168 * 88 / GIB
    deepep = 4 * 256 * 256 * 2 * 7168 / GIB
    overhead = 0.3 + 1.7 + deepep
    assert z.load_buffers == pytest.approx(rope)
    assert z.activation == pytest.approx(activation)
    assert z.overhead == pytest.approx(overhead)
    kv = 0.90 * 95.58 - z.weights - rope - activation - overhead
    assert z.kv_tokens_per_rank == int(kv * GIB // 70_272)
    assert z.per_rank_required == 7 and z.fits       # ceil(200 / 32)


def test_redundant_experts_cost_whole_expert_slots(tmp_path):
    """EP32 with 32 redundant experts: 288 / 32 = 9 slots instead of 8 per GPU: one more expert
    per MoE layer in FP8 (1 byte + an FP32 scale per 128 x 128 block)."""
    _, z0 = _size(tmp_path, "metadata: {name: s2}\n")
    _, z1 = _size(tmp_path, "spec:\n  roles:\n    - name: serve\n      moe: {eplb: {enabled: true, "
                            "redundantExperts: 32}}\n      parallel: {expert: true}\n")
    scales = (2 * 2048 // 128) * (7168 // 128) * 4 + (7168 // 128) * (2048 // 128) * 4
    one_slot = MOE * (EXPERT + scales)
    assert (z1.weights - z0.weights) * GIB == pytest.approx(one_slot, rel=1e-9)


def test_tp_sharding_never_raises_weights(tmp_path):
    """Property: more tensor parallelism never raises per-GPU weight bytes."""
    from generator.sizing.weights import Placement, stage_weights
    cfg = builtin_arch("deepseek-v3")
    inv = inventory(cfg)
    prev = None
    for tp in (1, 2, 4, 8, 16):
        total = stage_weights(inv, cfg, "fp8", Placement(tp, 1, 1))[0].total
        assert prev is None or total < prev
        prev = total


def test_v4_parameter_counts():
    """DeepSeek-V4-Pro: 61 layers, 384 experts of 3 x 7168 x 3072 (gate, up, down) on every
    layer; published ~1.6 T total with the MTP layer. V4-Flash: 43 layers, 256 experts of
    3 x 4096 x 2048; published 284 B."""
    pro = inventory(builtin_arch("deepseek-v4-pro"))
    assert pro.component_params()["routed_experts"] == 61 * 384 * 3 * 7168 * 3072
    assert round(pro.total_params(True) / 1e12, 1) == 1.6
    flash = inventory(builtin_arch("deepseek-v4-flash"))
    assert flash.component_params()["routed_experts"] == 43 * 256 * 3 * 4096 * 2048
    assert round(flash.total_params() / 1e9) == 284


def test_v4_mxfp4_experts_per_gpu():
    """MXFP4: 4 bits + one E8M0 byte per 32 values = 0.53125 B per parameter; EP8 holds
    384 / 8 = 48 experts per layer."""
    from generator.sizing.weights import Placement, stage_weights
    cfg = builtin_arch("deepseek-v4-pro")
    st = stage_weights(inventory(cfg), cfg, "mxfp4", Placement(8, 8, 1))[0]
    assert st.by_component["routed_experts"] == pytest.approx(61 * 48 * 3 * 7168 * 3072 * 0.53125)


def _bench():
    return load_script("bench/sizing_residuals.py")


def test_engine_printed_figures_within_tolerance():
    """Weights within 3 % and KV tokens within 8 % of what vLLM printed (groundtruth-dev.yaml)."""
    rows = _bench().residuals(shared("reference", "groundtruth-dev.yaml"))
    checked = [r for r in rows if "skipped" not in r and "known_miss" not in r]
    assert len(checked) >= 7
    assert sum("tokens_err" in r for r in checked) >= 6
    for r in checked:
        if "weights_err" in r:
            assert abs(r["weights_err"]) <= 0.03, r
        if "tokens_err" in r:
            assert abs(r["tokens_err"]) <= 0.08, r
        if "outcome" in r:        # the H20 TP8 boundary case: 0.90 + 65536 tokens works
            assert r["fits_at_max_len"], r


def test_sglang_default_fraction_fails_tp8_fp8_on_h20_96():
    """SGLang's default mem_fraction_static leaves no room for 65,536 tokens next to ~80 GiB of
    FP8 R1 weights at TP8 on H20-96GB: 'Not enough memory' (groundtruth sglang-r1-h20-8-tp8-blog).
    moegen renders --cuda-graph-max-bs-decode 8 for one sequence, so SGLang's reserve is
    512 + 1.5 x 8192 + 2 x 8 + 1024 x 8 / 8 = 13,840 MB -> (97,871 - 13,840) / 97,871 = 0.859."""
    import yaml
    bench = _bench()
    case = next(c for c in yaml.safe_load(shared("reference", "groundtruth-dev.yaml").read_text())
                if c["id"] == "sglang-r1-h20-8-tp8-blog")
    z = bench.size_case(case, {"memFractionStatic": None})
    assert z.utilization == round((97_871 - 13_840) / 97_871, 3) == 0.859
    assert z.kv_tokens_per_rank < 65536


def test_size_json_has_the_spec_shape(capsys):
    """SPEC.md §4: the keys of every sized role, and every role listed even when one fails."""
    import json

    from generator.cli import run
    assert run(["size", str(EXAMPLES / "s1-16xh20-pd.yaml"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in doc["roles"]] == ["prefill", "decode"]
    for role in doc["roles"]:
        for key in ("name", "gpu", "engine", "gpuMemoryGiB", "budgetGiB", "perGpu",
                    "kvBytesPerToken", "kvTokensPerRank", "maxConcurrencyAtMaxModelLen",
                    "requiredConcurrency", "fits", "findings"):
            assert key in role, key
        assert set(role["perGpu"]) == {"weightsGiB", "loadBuffersGiB", "activationGiB",
                                       "overheadGiB", "kvCacheGiB"}
    decode = doc["roles"][1]
    assert decode["requiredConcurrency"] == 200 and decode["kvBytesPerToken"] == 62 * 576


@pytest.mark.parametrize("overlay,code", [
    # a role-level error (decode: 256 + 24 experts on EP 16) ...
    ("spec:\n  roles:\n    - name: decode\n      moe:\n        eplb: {redundantExperts: 24}\n",
     "EP003"),
    # ... and a spec-level one (a Gloo interface with NCCL syntax)
    ("spec:\n  network: {socketInterface: '^lo'}\n", "NET002"),
])
def test_size_reports_every_sized_role_whatever_the_error(overlay, code, tmp_path, capsys):
    """gen size lists the memory of every role it could size, whether the spec's error is in a
    role or at spec level; only the SIZ* findings skip erroneous roles (the rules run as a pure
    function, Checked.sizing is not cleared behind the caller's back)."""
    import json

    from generator.cli import run
    path = tmp_path / "o.yaml"
    path.write_text(overlay)
    assert run(["size", str(EXAMPLES / "s1-16xh20-pd.yaml"), "-f", str(path),
                "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in doc["roles"]] == ["prefill", "decode"]
    assert all("kvTokensPerRank" in r for r in doc["roles"]), doc["roles"]
    assert code in {f["code"] for f in doc["findings"]}
    assert not any(f["code"].startswith("SIZ") for f in doc["findings"])


def test_sglang_dp_attention_graph_memory_grows_with_batch_times_dp():
    """sgl-project/sglang#24453: Kimi-K2 FP8, DP32/EP32, --cuda-graph-max-bs 128, DeepEP with
    SGLANG_DEEPEP_NUM_MAX_DISPATCH_TOKENS_PER_RANK=256: ~20 GB per rank taken during graph
    capture (the DeepEP buffers are allocated at the first forward, inside the capture).

    By hand: graphs 1.7 + 128 x 32 x 3 MB / 1024 = 1.7 + 12.0 = 13.7 GiB; DeepEP low-latency
    buffer 4 x 384 experts x 256 tokens x 2 x 7168 B = 5.25 GiB; together 18.95 GiB, within 10 %
    of the reported ~20. Without DP attention the term is the base alone; above a batch of 300
    the extra 1.5 MB per sequence per rank applies (SGLang's reserve_for_graph_mb)."""
    from generator.facts.deepep import ll_buffer_bytes
    from generator.sizing.sglang_budget import cuda_graph_gib

    assert cuda_graph_gib(128, 32) == pytest.approx(13.7)
    assert cuda_graph_gib(128, 1) == pytest.approx(1.7)
    assert cuda_graph_gib(512, 8) == pytest.approx(1.7 + 512 * 8 * 4.5 / 1024)   # 19.7
    captured = cuda_graph_gib(128, 32) + ll_buffer_bytes(384, 256, 7168) / 2**30
    assert captured == pytest.approx(18.95)
    assert captured == pytest.approx(20.0, rel=0.10)
