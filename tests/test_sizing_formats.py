"""Checkpoint formats nvfp4 and w4a16 (generator/sizing/formats.py): bytes derived by hand from
the config fields, and compared with the published checkpoints.

DeepSeek-R1 (= V3 shapes): hidden 7168, 61 layers (3 dense), 128 heads, q_lora 1536, kv_lora 512,
qk nope/rope 128/64, v 128, dense intermediate 18432, 256 experts x 2048 + 1 shared, vocab
129280, one MTP layer. Kimi-K2-Thinking: the same but 64 heads, 1 dense layer, 384 experts, vocab
163840, no MTP layer.

NVFP4 (nvidia/DeepSeek-R1-FP4, ModelOpt): per linear, U8 weight n/2 + F8_E4M3 weight_scale n/16
+ F32 weight_scale_2 and input_scale (8 B) on the routed experts, shared experts and dense MLP;
attention and the MTP layer BF16. W4A16 (moonshotai/Kimi-K2-Thinking, compressed-tensors): routed
experts n/2 + BF16 scale per 32 (2n/32); everything else BF16.
"""

from __future__ import annotations

import json

import pytest

from generator.catalog import GPUS, builtin_arch
from generator.sizing.formats import ENGINE_STORAGE, encoding, held_encoding, storage
from generator.sizing.params import inventory
from generator.sizing.weights import Placement, block_misfits, checkpoint_bytes, stage_weights
from tests.helpers import ROOT

H, L, DENSE, MOE = 7168, 61, 3, 58
EXPERT = 3 * 7168 * 2048                                    # gate, up, down of one expert
DENSE_MLP = 3 * 7168 * 18432
VOCAB = 129280


def _attn(heads: int) -> int:
    """MLA parameters of one layer with ``heads`` heads (q_a, norm, q_b, kv_a, norm, kv_b, o)."""
    return (7168 * 1536 + 1536 + 1536 * heads * (128 + 64) + 7168 * (512 + 64) + 512
            + 512 * heads * (128 + 128) + heads * 128 * 7168)


def _by_component(arch: str, fmt: str, place: Placement) -> dict[str, float]:
    cfg = builtin_arch(arch)
    return stage_weights(inventory(cfg), cfg, fmt, place)[0].by_component


def test_r1_nvfp4_routed_experts_per_layer():
    """256 experts x 3 matrices x 7168 x 2048 x (4 + 8/16) / 8 bytes + 256 x 3 x 8 B of FP32
    per-tensor scales per MoE layer; EP8 holds 32 experts per GPU."""
    per_layer = 256 * (EXPERT * (4 + 8 / 16) / 8 + 3 * 8)
    assert per_layer == 6_341_793_792
    z = _by_component("deepseek-r1", "nvfp4", Placement(8, 8, 1, mtp=False))
    assert z["routed_experts"] == pytest.approx(MOE * per_layer / 8, rel=1e-12)


def test_r1_nvfp4_dense_shared_nvfp4_attention_bf16():
    """TP8, no EP: the dense MLP and shared experts are NVFP4 (sharded / 8), attention stays
    BF16 (q_a, kv_a and their norms replicated, q_b, kv_b, o sharded) and vLLM makes no BF16
    W_UK/W_UV copies of a BF16 kv_b_proj."""
    z = _by_component("deepseek-r1", "nvfp4", Placement(8, 1, 1))
    nv = (4 + 8 / 16) / 8
    assert z["dense_mlp"] == pytest.approx(DENSE * (DENSE_MLP * nv + 3 * 8) / 8)
    assert z["shared_experts"] == pytest.approx(MOE * (EXPERT * nv + 3 * 8) / 8)
    replicated = 7168 * 1536 + 1536 + 7168 * 576 + 512
    sharded = 1536 * 128 * 192 + 512 * 128 * 256 + 128 * 128 * 7168
    assert z["attention"] == pytest.approx(L * 2 * (replicated + sharded / 8))
    assert z["attention"] == _by_component("deepseek-r1", "bf16", Placement(8, 1, 1))["attention"]


def test_r1_nvfp4_mtp_layer_is_bf16():
    """The ModelOpt recipe excludes ``layers.61*``: the MTP layer loads in BF16 (its experts
    2 bytes per parameter) while the main layers' experts are NVFP4."""
    nv = _by_component("deepseek-r1", "nvfp4", Placement(8, 8, 1, mtp=True))["mtp"]
    bf = _by_component("deepseek-r1", "bf16", Placement(8, 8, 1, mtp=True))["mtp"]
    assert nv == bf
    # 32 of 256 experts per GPU at EP8, 2 bytes each: the bulk of it.
    assert nv > 32 * EXPERT * 2


def test_r1_nvfp4_matches_published_parameter_count():
    """nvidia/DeepSeek-R1-NVFP4 (= nvidia/DeepSeek-R1-FP4; https://huggingface.co/nvidia/
    DeepSeek-R1-NVFP4, "397B" safetensors elements, each U8 byte, FP8 scale, F32 scalar and
    BF16 weight counted once). By hand: NVFP4 linears n/2 + n/16 + 2 scalars per matrix; BF16
    attention, norms, router, embedding, lm_head; the FP32 router bias; the BF16 MTP layer,
    which in DeepSeek's checkpoint also carries its own embed_tokens and shared_head.head
    (2 x vocab x hidden). Within 0.5 % (the page rounds to 1 B)."""
    def nv(n: int, matrices: int) -> float:
        return n / 2 + n / 16 + 2 * matrices

    norms = L * 2 * H + H
    main = (L * _attn(128) + norms
            + DENSE * nv(DENSE_MLP, 3) + MOE * nv(EXPERT, 3)          # dense MLP, shared
            + MOE * 256 * nv(EXPERT, 3)                               # routed experts
            + MOE * 256 * H + MOE * 256                               # router + FP32 bias
            + 2 * VOCAB * H)                                          # embedding + lm_head
    mtp = (_attn(128) + 2 * H + 257 * EXPERT + 256 * H + 256         # layer, experts, router
           + 2 * H * H + 3 * H                                        # eh_proj, 3 norms
           + 2 * VOCAB * H)                                           # its embed + head copy
    assert main + mtp == pytest.approx(397e9, rel=0.005)
    # The same count from the inventory (the code under test, MTP copies of embed/head added).
    cfg = builtin_arch("deepseek-r1")
    inv = inventory(cfg)
    counted = 0.0
    for ts, n, in_mtp in [(inv.kinds[k], c, False) for k, c in inv.kind_counts().items()] + \
            [(inv.outer, 1, False), (inv.mtp_layer, 1, True)]:
        for t in ts:
            enc = encoding(t.component, t.quantized, "nvfp4", mtp=in_mtp)
            size = t.out_dim * t.in_dim
            counted += n * t.experts * (nv(size, t.parts) if enc == "nvfp4" else size)
    assert counted + 2 * VOCAB * H == pytest.approx(main + mtp, rel=1e-6)


def test_r1_nvfp4_checkpoint_bytes_by_hand():
    """Checkpoint bytes without the MTP layer: the routed experts 367.8 GB, the rest 28.9 GB
    (BF16 attention 2 x 61 x 187.1 M = 22.8 GB, embedding + lm_head 3.7 GB, ...)."""
    cfg = builtin_arch("deepseek-r1")
    other, experts = checkpoint_bytes(inventory(cfg), cfg, "nvfp4", mtp=False)
    assert experts == pytest.approx(MOE * 256 * (EXPERT * 0.5625 + 24))
    nv = 0.5625
    by_hand = (2 * (L * _attn(128) + L * 2 * H + H + MOE * 256 * H + 2 * VOCAB * H)
               + 4 * MOE * 256
               + DENSE * (DENSE_MLP * nv + 24) + MOE * (EXPERT * nv + 24))
    assert other == pytest.approx(by_hand)
    assert round((other + experts) / 1e9, 1) == 396.7


def test_kimi_k2_thinking_w4a16_by_hand_and_published():
    """moonshotai/Kimi-K2-Thinking: routed experts 60 x 384 x 3 x 7168 x 2048 x (0.5 + 2/32) B;
    attention (64 heads), shared experts, the dense layer, router, embedding and lm_head BF16.
    Published: 594 GB of safetensors (https://huggingface.co/moonshotai/Kimi-K2-Thinking; "the K2
    Thinking model itself weighs in at 594GB",
    https://www.banandre.com/blog/2025-11/trillion-parameter-ai-on-your-desktop-the-kimi-k2-thinking-revolution-hits-local-hardware).
    Within 1 %."""
    cfg = builtin_arch("kimi-k2-thinking")
    other, experts = checkpoint_bytes(inventory(cfg), cfg, "w4a16", mtp=False)
    routed = 60 * 384 * EXPERT * (0.5 + 2 / 32)
    assert experts == pytest.approx(routed)
    v = 163840
    rest = (2 * (61 * _attn(64) + 61 * 2 * H + H + 1 * DENSE_MLP + 60 * EXPERT
                 + 60 * 384 * H + 2 * v * H) + 4 * 60 * 384)
    assert other == pytest.approx(rest)
    assert routed + rest == pytest.approx(594e9, rel=0.01)


def test_kimi_k2_thinking_w4a16_per_gpu_tp8():
    """TP8 (no EP): experts sharded 8 ways at 0.5625 B/param, no MLA copies (BF16 kv_b)."""
    z = _by_component("kimi-k2-thinking", "w4a16", Placement(8, 1, 1))
    assert z["routed_experts"] == pytest.approx(60 * 384 * EXPERT * 0.5625 / 8)
    replicated = 7168 * 1536 + 1536 + 7168 * 576 + 512
    sharded = 1536 * 64 * 192 + 512 * 64 * 256 + 64 * 128 * 7168
    assert z["attention"] == pytest.approx(61 * 2 * (replicated + sharded / 8))


def test_v4_nvfp4_hybrid_keeps_fp8_attention():
    """nvidia/DeepSeek-V4-Pro-NVFP4 (SGLang HybridFp8NvFp4Config): routed experts NVFP4
    (61 layers x 48 experts at EP8 x 3 x 7168 x 3072 x 0.5625 B + 48 x 3 x 8 B), attention as in
    the MXFP4 checkpoint (block FP8)."""
    nv = _by_component("deepseek-v4-pro", "nvfp4", Placement(8, 8, 1))
    mx = _by_component("deepseek-v4-pro", "mxfp4", Placement(8, 8, 1))
    assert nv["routed_experts"] == pytest.approx(61 * 48 * (3 * 7168 * 3072 * 0.5625 + 24))
    assert nv["attention"] == mx["attention"]


def test_fp8_blocks_only_where_the_format_has_them():
    """R1 at TP32: kv_b/q_b shards of 4 heads x 192/256 fit 128 blocks; the dense MLP's 18432 /
    32 = 576 does not. NVFP4 (BF16 attention, NVFP4 MLP) and W4A16 have no 128 x 128 blocks."""
    cfg = builtin_arch("deepseek-r1")
    inv = inventory(cfg)
    assert block_misfits(inv, cfg, "fp8", Placement(32, 1, 1))
    assert block_misfits(inv, cfg, "nvfp4", Placement(32, 1, 1)) == []
    kimi = builtin_arch("kimi-k2-thinking")
    assert block_misfits(inventory(kimi), kimi, "w4a16", Placement(32, 1, 1)) == []


def test_engine_storage_table():
    """Every row cites a source; no default path holds more than the checkpoint; SGLang has no
    NVFP4 kernel on ROCm; NVFP4 on Hopper is Marlin weight-only in both engines."""
    for row in ENGINE_STORAGE:
        assert row.source and row.engine in ("vllm", "sglang")
    for gpu in GPUS.values():
        for fmt in ("nvfp4", "w4a16", "mxfp4"):
            for engine in ("vllm", "sglang"):
                assert held_encoding(engine, fmt, gpu) is None
    assert storage("sglang", "nvfp4", GPUS["MI355X-288GB"]).kernel == ""
    assert storage("vllm", "nvfp4", GPUS["MI355X-288GB"]).compute == "emulated"
    for engine in ("vllm", "sglang"):
        assert storage(engine, "nvfp4", GPUS["H200-141GB"]).compute == "weight-only"
        assert storage(engine, "nvfp4", GPUS["B200-180GB"]).compute == "native"


def test_schema_lists_the_formats():
    schema = json.loads((ROOT / "schemas" / "inferencedeployment.schema.json").read_text())
    text = json.dumps(schema)
    assert '"nvfp4"' in text and '"w4a16"' in text
