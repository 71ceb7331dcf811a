"""Built-in catalogs: GPUs and model architectures (data with sources, shipped in the package).

GPU figures (dense, no sparsity):

* ``hbm_mib`` — device memory as the driver reports it (``nvidia-smi``), MiB (2^20 bytes).
  H20-96GB 97,871 MiB and H20-141GB/H200 143,771 MiB: docs/brief.md section 3 (from nvidia-smi
  on those parts). H100/H800 81,559 MiB and B200 183,359 MiB: nvidia-smi on those parts.
* ``torch_total_gib`` — ``torch.cuda.mem_get_info()`` total as engines print it, GiB (2^30 bytes),
  which is what vLLM multiplies by ``gpu_memory_utilization``. H20-96GB 95.58, H20-141GB 139.72,
  H200 139.81, B200 178.4: engine logs in the engine-printed figures tests/test_sizing.py and bench/sizing_residuals.py check; H100/H800 79.19:
  PyTorch's "total capacity of 79.19 GiB" out-of-memory message (docs/brief.md: ~79.2).
* ``hbm_gbps`` — HBM bandwidth, GB/s (10^9 bytes/s); ``bf16_tflops``/``fp8_tflops`` — dense tensor
  throughput; ``nvlink_gbps`` — NVLink bandwidth per GPU, GB/s. Sources: NVIDIA datasheets (H20
  product brief: 4.0 TB/s / 4.8 TB/s, 148 / 296 TFLOPS, 900 GB/s, as quoted in docs/brief.md
  section 1; H100/H800 SXM datasheet: 3.35 TB/s, 989 / 1979 TFLOPS, NVLink 900 / 400 GB/s; H200:
  4.8 TB/s; B200 (HGX): 8 TB/s, 2250 / 4500 TFLOPS, NVLink 1800 GB/s).

* ``generation`` — GPU architecture (``hopper`` = sm90: H20/H100/H800/H200; ``blackwell`` =
  sm100: B200), which decides the engines' MLA attention backend (vLLM 0.33: FLASHMLA first on
  sm90, FLASHINFER_MLA on sm100; vllm/platforms/cuda.py ``_get_backend_priorities``).

Architectures: the docs/spec.md catalog ids map to copies of the Hugging Face ``config.json`` files in
``catalog/models/`` (the models' published Hugging Face configs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..resources import package_text


@dataclass(frozen=True)
class Gpu:
    """One GPU model of the catalog (units in the field names; see the module docstring)."""

    id: str
    hbm_mib: int
    torch_total_gib: float
    hbm_gbps: float
    bf16_tflops: float
    fp8_tflops: float
    nvlink_gbps: float
    fp4: bool = False
    generation: str = "hopper"


GPUS: dict[str, Gpu] = {
    g.id: g
    for g in (
        Gpu("H20-96GB", 97_871, 95.58, 4_000, 148, 296, 900),
        Gpu("H20-141GB", 143_771, 139.72, 4_800, 148, 296, 900),
        Gpu("H100-80GB", 81_559, 79.19, 3_350, 989, 1_979, 900),
        Gpu("H800-80GB", 81_559, 79.19, 3_350, 989, 1_979, 400),
        Gpu("H200-141GB", 143_771, 139.81, 4_800, 989, 1_979, 900),
        Gpu("B200-180GB", 183_359, 178.4, 8_000, 2_250, 4_500, 1_800, fp4=True,
            generation="blackwell"),
    )
}

#: docs/spec.md architecture id -> config file shipped in catalog/models/.
ARCHITECTURES: dict[str, str] = {
    "deepseek-v3": "deepseek-v3.config.json",
    "deepseek-r1": "deepseek-r1.config.json",
    "deepseek-v3.1": "deepseek-v3.1.config.json",
    "deepseek-v3.2": "deepseek-v3.2.config.json",
    "deepseek-v4-pro": "deepseek-v4-pro.config.json",
    "deepseek-v4-flash": "deepseek-v4-flash.config.json",
    "kimi-k2": "kimi-k2-instruct-0905.config.json",
    "deepseek-v2-lite": "deepseek-v2-lite.config.json",
}

#: Catalog id -> the Hugging Face repository of the checkpoint whose config.json ships
#: (https://huggingface.co/<id>); the served model id ``gen plan --emit`` writes.
HF_IDS: dict[str, str] = {
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "deepseek-r1": "deepseek-ai/DeepSeek-R1",
    "deepseek-v3.1": "deepseek-ai/DeepSeek-V3.1",
    "deepseek-v3.2": "deepseek-ai/DeepSeek-V3.2",
    "deepseek-v4-pro": "deepseek-ai/DeepSeek-V4-Pro",
    "deepseek-v4-flash": "deepseek-ai/DeepSeek-V4-Flash",
    "kimi-k2": "moonshotai/Kimi-K2-Instruct-0905",
    "deepseek-v2-lite": "deepseek-ai/DeepSeek-V2-Lite",
}

#: HF ``model_type`` values moegen understands -> architecture family.
FAMILIES: dict[str, str] = {
    "deepseek_v2": "deepseek_v2",
    "deepseek_v3": "deepseek_v3",
    "kimi_k2": "deepseek_v3",
    "deepseek_v32": "deepseek_v32",
    "deepseek_v4": "deepseek_v4",
}


@dataclass(frozen=True)
class ModelArch:
    """The shape facts of a model that layout and rules need (from its ``config.json``).

    Attributes:
        family: one of the :data:`FAMILIES` values.
        hidden_size, num_attention_heads, num_layers, vocab_size: as in the config.
        routed_experts: ``n_routed_experts`` (0 for dense models).
        experts_per_token: ``num_experts_per_tok``.
        mtp_layers: ``num_nextn_predict_layers`` (0 when the checkpoint has no MTP module).
        max_position_embeddings: longest context the model supports, tokens.
        config: the full parsed config (read-only use).
    """

    family: str
    hidden_size: int
    num_attention_heads: int
    num_layers: int
    vocab_size: int
    routed_experts: int
    experts_per_token: int
    mtp_layers: int
    max_position_embeddings: int
    config: Any


class UnknownArchitecture(ValueError):
    """The config's ``model_type`` is not a family moegen can size and render."""


def arch_from_config(config: dict) -> ModelArch:
    """Build a :class:`ModelArch` from a parsed HF config.

    Raises:
        UnknownArchitecture: ``model_type`` is missing or not in :data:`FAMILIES`.
        KeyError / TypeError: a required key is missing or of the wrong type.
    """
    model_type = config.get("model_type")
    if model_type not in FAMILIES:
        raise UnknownArchitecture(
            f"model_type {model_type!r} is not supported (supported: {', '.join(sorted(FAMILIES))})"
        )
    return ModelArch(
        family=FAMILIES[model_type],
        hidden_size=int(config["hidden_size"]),
        num_attention_heads=int(config["num_attention_heads"]),
        num_layers=int(config["num_hidden_layers"]),
        vocab_size=int(config["vocab_size"]),
        routed_experts=int(config.get("n_routed_experts") or 0),
        experts_per_token=int(config.get("num_experts_per_tok") or 0),
        mtp_layers=int(config.get("num_nextn_predict_layers") or 0),
        max_position_embeddings=int(config["max_position_embeddings"]),
        config=config,
    )


@cache
def builtin_config(arch_id: str) -> dict:
    """The shipped ``config.json`` of catalog id ``arch_id`` (KeyError if unknown)."""
    name = ARCHITECTURES[arch_id]
    text = package_text("catalog", "models", name)
    return json.loads(text)
