"""The model as capabilities: one place reads config.json (generator/catalog/readers.py);
everything else reads the capabilities."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from generator.catalog import ARCHITECTURES, builtin_arch, builtin_config
from generator.catalog.readers import UnknownArchitecture, arch_from_config

GENERATOR = Path(__file__).resolve().parent.parent / "generator"
ONE_PLACE = GENERATOR / "catalog" / "readers.py"


def test_no_module_but_the_capabilities_reads_model_type_or_a_family():
    """``model_type`` (and a family name compared as one) appears in one module only: a rule, a
    sizing term or a performance term that tests a family by name fails here."""
    offenders = []
    for path in sorted(GENERATOR.rglob("*.py")):
        if path == ONE_PLACE:
            continue
        text = path.read_text()
        for n, line in enumerate(text.splitlines(), 1):
            if "model_type" in line or re.search(
                    r"\barch\.family\b|\.family\s*[!=]=|architecture\.startswith\(", line):
                offenders.append(f"{path.relative_to(GENERATOR.parent)}:{n}: {line.strip()}")
    assert offenders == []


def test_deepseek_v3_as_capabilities():
    """DeepSeek-V3: MLA (kv_lora 512 + rope 64, 128 heads, nope 128 + rope 64 = 192 query-key),
    256 experts of 2048 from layer 3, one shared expert, top-8 of 8 groups (4 picked), an FP32
    correction bias (noaux_tc), one MTP layer, block-FP8 with FP32 scales."""
    a = builtin_arch("deepseek-v3")
    at, moe = a.attention, a.moe
    assert (at.kind, at.heads, at.kv_heads, at.head_dim, at.kv_lora_rank) == ("mla", 128, 1, 192, 512)
    assert at.index is None and not at.local
    assert (moe.experts, moe.top_k, moe.expert_intermediate, moe.shared_intermediate) == \
        (256, 8, 2048, 1 * 2048)
    assert (moe.first_dense, moe.moe_layer_count, moe.groups, moe.topk_group) == (3, 58, 8, 4)
    assert moe.router_bias == "correction" and a.mtp_layers == 1
    assert (a.checkpoint.format, a.checkpoint.fp8_scale_bytes) == ("fp8", 4)
    assert a.engine_class == "DeepseekV3ForCausalLM"


def test_kimi_k2_is_deepseek_v3_with_a_custom_tokenizer():
    k = builtin_arch("kimi-k2")
    assert k.engine_class == "DeepseekV3ForCausalLM" and k.checkpoint.remote_code_tokenizer
    assert not builtin_arch("deepseek-v3").checkpoint.remote_code_tokenizer


def test_v32_sparse_and_v4_compressed():
    v32, v4 = builtin_arch("deepseek-v3.2"), builtin_arch("deepseek-v4-pro")
    assert v32.sparse_attention and v32.attention.index.layers == (True,) * 61
    assert (v32.attention.index.heads, v32.attention.index.dim) == (64, 128)
    assert v4.compressed_attention and not v4.sparse_attention
    assert v4.checkpoint.format == "mxfp4"     # expert_dtype fp4 beside block FP8 (UE8M0)
    assert v4.moe.hash_layers == 3 and v4.hyper_connections == 4


def test_every_catalog_model_reads():
    for arch in ARCHITECTURES:
        a = builtin_arch(arch)
        assert a.missing == "" and a.num_layers == len(a.moe.moe_layers), arch
        assert len(a.attention.layer_types) == a.num_layers, arch


def test_an_unknown_family_and_a_missing_basic_field_raise():
    with pytest.raises(UnknownArchitecture, match="'llama' is not supported"):
        arch_from_config(dict(builtin_config("deepseek-v3"), model_type="llama"))
    cfg = dict(builtin_config("deepseek-v3"))
    del cfg["hidden_size"]
    with pytest.raises(KeyError):
        arch_from_config(cfg)


def test_a_missing_shape_field_is_named_not_raised():
    """Without kv_lora_rank the layout rules still run; sizing says what is missing (SIZ005)."""
    cfg = dict(builtin_config("deepseek-v3"))
    del cfg["kv_lora_rank"]
    assert arch_from_config(cfg).missing == "kv_lora_rank"
