"""Write a tiny DeepSeek-V2-Lite-architecture checkpoint with random weights, for the CPU runtime.

    <cpu-runtime python> checkpoint.py OUT_DIR

Runs under the CPU runtime's interpreter (torch, safetensors, tokenizers), not the project's.
The rendered examples serve ``deepseek-ai/DeepSeek-V2-Lite-Chat`` (``DeepseekV2ForCausalLM``); this
is the same architecture, shrunk, with what vLLM's code paths need kept real:

* MLA with the real latent width: ``kv_lora_rank 512 + qk_rope_head_dim 64 = 576``, the only head
  size vLLM's CPU MLA decode backends take (vllm-project/vllm@v0.32.0:
  vllm/v1/attention/backends/mla/cpu_mla.py, ``get_supported_head_sizes``);
* no q_lora, softmax greedy top-k routing, 2 shared experts, the first layer dense
  (``first_k_dense_replace 1``), as DeepSeek-V2-Lite's config.json;
* ``max_position_embeddings`` and the yarn rope scaling of the real model (163840 = 4096 x 40), so
  the rendered ``--max-model-len`` passes vLLM's check against it;
* weights in the original checkpoint layout (one tensor per expert), so vLLM's default
  safetensors loader runs and checks that every parameter is present.

Everything else is tiny: hidden 256, 2 layers, 4 heads, 8 routed experts (top-2, divisible by the
EP size 2), a byte-level tokenizer without merges (256 byte tokens + 3 specials = the vocabulary).
Deterministic: the weights come from a seeded generator, and the file bytes are the same each run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SPECIAL = ["<|begin_of_sentence|>", "<|end_of_sentence|>", "<|pad|>"]
HIDDEN, LAYERS, HEADS, EXPERTS, TOPK = 256, 2, 4, 8, 2
NOPE, ROPE, V_HEAD, KV_LORA = 32, 64, 32, 512
MOE_INTER, DENSE_INTER, SHARED = 128, 512, 2


def tokenizer_json() -> tuple[str, int]:
    """A byte-level BPE without merges: every UTF-8 byte is one token. Returns (json, vocab size)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {tok: i for i, tok in enumerate(SPECIAL)}
    vocab.update({ch: len(SPECIAL) + i for i, ch in enumerate(alphabet)})
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIAL)
    return tok.to_str(), len(vocab)


def config(vocab: int) -> dict:
    return {
        "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
        "vocab_size": vocab, "hidden_size": HIDDEN, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "num_key_value_heads": HEADS,
        "intermediate_size": DENSE_INTER, "moe_intermediate_size": MOE_INTER,
        "first_k_dense_replace": 1, "moe_layer_freq": 1,
        "n_routed_experts": EXPERTS, "num_experts_per_tok": TOPK, "n_shared_experts": SHARED,
        "n_group": 1, "topk_group": 1, "topk_method": "greedy", "scoring_func": "softmax",
        "norm_topk_prob": False, "routed_scaling_factor": 1.0,
        "q_lora_rank": None, "kv_lora_rank": KV_LORA,
        "qk_nope_head_dim": NOPE, "qk_rope_head_dim": ROPE, "v_head_dim": V_HEAD,
        "hidden_act": "silu", "rms_norm_eps": 1e-6, "max_position_embeddings": 163840,
        "rope_theta": 10000.0,
        "rope_scaling": {"type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                         "beta_fast": 32, "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 0.707},
        "attention_bias": False, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2, "use_cache": True,
        "initializer_range": 0.02,
    }


def weights(cfg: dict) -> dict:
    import torch

    gen = torch.Generator().manual_seed(0)
    out = {}

    def rand(name, *shape):
        out[name] = (torch.randn(shape, generator=gen) * 0.02).to(torch.bfloat16)

    def ones(name, n):
        out[name] = torch.ones(n, dtype=torch.bfloat16)

    vocab = cfg["vocab_size"]
    rand("model.embed_tokens.weight", vocab, HIDDEN)
    ones("model.norm.weight", HIDDEN)
    rand("lm_head.weight", vocab, HIDDEN)
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        ones(p + "input_layernorm.weight", HIDDEN)
        ones(p + "post_attention_layernorm.weight", HIDDEN)
        a = p + "self_attn."
        rand(a + "q_proj.weight", HEADS * (NOPE + ROPE), HIDDEN)
        rand(a + "kv_a_proj_with_mqa.weight", KV_LORA + ROPE, HIDDEN)
        ones(a + "kv_a_layernorm.weight", KV_LORA)
        rand(a + "kv_b_proj.weight", HEADS * (NOPE + V_HEAD), KV_LORA)
        rand(a + "o_proj.weight", HIDDEN, HEADS * V_HEAD)
        m = p + "mlp."
        if i < cfg["first_k_dense_replace"]:
            rand(m + "gate_proj.weight", DENSE_INTER, HIDDEN)
            rand(m + "up_proj.weight", DENSE_INTER, HIDDEN)
            rand(m + "down_proj.weight", HIDDEN, DENSE_INTER)
            continue
        rand(m + "gate.weight", EXPERTS, HIDDEN)
        for e in range(EXPERTS):
            rand(m + f"experts.{e}.gate_proj.weight", MOE_INTER, HIDDEN)
            rand(m + f"experts.{e}.up_proj.weight", MOE_INTER, HIDDEN)
            rand(m + f"experts.{e}.down_proj.weight", HIDDEN, MOE_INTER)
        shared = MOE_INTER * SHARED
        rand(m + "shared_experts.gate_proj.weight", shared, HIDDEN)
        rand(m + "shared_experts.up_proj.weight", shared, HIDDEN)
        rand(m + "shared_experts.down_proj.weight", HIDDEN, shared)
    return out


def write(out_dir: Path) -> None:
    from safetensors.torch import save_file

    out_dir.mkdir(parents=True, exist_ok=True)
    tok, vocab = tokenizer_json()
    cfg = config(vocab)
    (out_dir / "tokenizer.json").write_text(tok)
    (out_dir / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": SPECIAL[0],
        "eos_token": SPECIAL[1], "pad_token": SPECIAL[2], "add_bos_token": True,
        "model_max_length": cfg["max_position_embeddings"]}, indent=1))
    (out_dir / "config.json").write_text(json.dumps(cfg, indent=1))
    (out_dir / "generation_config.json").write_text(json.dumps({"bos_token_id": 0, "eos_token_id": 1}))
    save_file(weights(cfg), str(out_dir / "model.safetensors"), metadata={"format": "pt"})


if __name__ == "__main__":
    write(Path(sys.argv[1]))
