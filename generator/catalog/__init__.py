"""Built-in catalogs: GPUs and model architectures (data with sources, shipped in the package).

GPU figures (dense, no sparsity):

* ``hbm_mib`` — device memory as the driver reports it (``nvidia-smi``; ``rocm-smi`` on AMD), MiB
  (2^20 bytes): nvidia-smi on those parts, H20-96GB 97,871, H20-141GB/H200 143,771, H100/H800
  81,559 and B200 183,359 MiB (docs/design.md §8).
* ``torch_total_gib`` — ``torch.cuda.mem_get_info()`` total as engines print it, GiB (2^30 bytes),
  which is what vLLM multiplies by ``gpu_memory_utilization``. H20-96GB 95.58, H20-141GB 139.72,
  H200 139.81, B200 178.4: engine logs in the engine-printed figures tests/test_sizing.py and bench/sizing_residuals.py check; H100/H800 79.19:
  PyTorch's "total capacity of 79.19 GiB" out-of-memory message (79.18 GiB in llm-d's H100
  measurements: llm-d/llm-d-benchmark@v0.5.2:config_explorer/empirical-vllm-memory-results.md:3).
* ``hbm_gbps`` — HBM bandwidth, GB/s (10^9 bytes/s); ``bf16_tflops``/``fp8_tflops`` — dense tensor
  throughput; ``nvlink_gbps`` — NVLink bandwidth per GPU, GB/s, both directions together (H100:
  18 links x 50 = 900). Sources: NVIDIA datasheets (H20, which has no public datasheet:
  4.0 TB/s / 4.8 TB/s, 148 / 296 TFLOPS, 900 GB/s as vendors quote them, docs/design.md §8;
  H100/H800 SXM datasheet: 3.35 TB/s, 989 / 1979 TFLOPS, NVLink 900 / 400 GB/s; H200:
  4.8 TB/s; B200 (HGX): 8 TB/s, 2250 / 4500 TFLOPS, NVLink 1800 GB/s).

* ``generation`` — GPU architecture (``ampere`` = sm80: A100; ``ada`` = sm89: L20/L40S;
  ``hopper`` = sm90: H20/H100/H800/H200; ``blackwell`` = sm100/sm103: B200/B300/GB200/GB300;
  ``cdna3`` = gfx942: MI300X/MI325X; ``cdna4`` = gfx950: MI355X), which decides the engines' MLA
  attention backend (vLLM 0.33: FLASHMLA first on sm90, FLASHINFER_MLA on the sm100 family;
  vllm/platforms/cuda.py ``_get_backend_priorities``; ROCM_AITER_MLA on ROCm) and which kernels
  exist at all (generator/checks/gpu.py).
* ``vendor`` — ``nvidia`` or ``amd`` (ROCm: RCCL, MoRI-EP instead of DeepEP; the device plugin's
  extended resource is :attr:`Gpu.resource`).
* ``scaleup_gpus`` — GPUs joined by one NVLink/xGMI domain: 8 on HGX/OAM boards, 72 on the
  GB200/GB300 NVL72 racks (expert parallelism over NVLink across the 18 trays of 4), 1 on PCIe
  cards without NVLink (L20, L40S: ``nvlink_gbps`` is then their PCIe 4.0 x16 link).
* ``fp8`` — native FP8 tensor cores. False on A100: FP8 checkpoints run weight-only there (W8A16,
  vLLM's FP8 Marlin kernel), so its ``fp8_tflops`` is the BF16 rate those layers compute at.
* ``fp4`` — native FP4 tensor cores (NVFP4/MXFP4 on Blackwell, MXFP4/MXFP6 on CDNA4).

The GPUs added for issue #15 (dense figures; link = NVLink, xGMI or PCIe, both directions):

=============  =======  ======  =====  =======  =======  =====  ======  ==========================
id             smi MiB  torch   HBM    BF16     FP8      link   domain  sources
                        GiB     GB/s   TFLOPS   TFLOPS   GB/s
=============  =======  ======  =====  =======  =======  =====  ======  ==========================
A100-80GB       81,920   79.14  2,039      312    (312)    600       8  [a100] [a100wp] [smi]
L20-48GB        46,068   44.53    864    119.5      239     64       1  [l20] [smi]
L40S-48GB       46,068   44.39    864   362.05      733     64       1  [l40s] [smi]
B300-288GB     275,040  267.69  8,000    2,250    4,500  1,800       8  [b300] [gb300] [b300k]
GB200-186GB    189,471  184.31  8,000    2,500    5,000  1,800      72  [gb200] [b200k] [b300k]
GB300-288GB    284,208  276.50  8,000    2,500    5,000  1,800      72  [gb300] [mleng]
MI300X-192GB   196,592  191.98  5,300  1,307.4  2,614.9    896       8  [mi300x] [mi300xl] [rocm]
MI325X-256GB  *262,128  255.98  6,000  1,307.4  2,614.9    896       8  [mi325x] [mi300xl]
MI355X-288GB  *294,896  287.98  8,000   *2,500    5,000 *1,075       8  [mi355x] [mi355xf] [mi355xl]
=============  =======  ======  =====  =======  =======  =====  ======  ==========================

``*`` derived, not read: the MI325X/MI355X ``rocm-smi`` totals are their torch totals in MiB
(torch reports all of VRAM on ROCm: MI300X 196,592 MiB = 191.98 GiB exactly), the MI355X BF16
rate is half its FP8 rate (as on the MI300X and the NVIDIA parts), its xGMI figure 7 links x
153.6 GB/s. A100's FP8 column ``(312)`` is its BF16 rate: no FP8 cores (``fp8`` False).
FP4: B300 ~13,500-14,000, GB200 10,000, GB300 15,000, MI355X ~10,000 TFLOPS (MXFP4) [b300k]
[gb300] [b200k] [mi355xl]. AMD's xGMI is a full mesh: each GPU pair has one 128 GB/s link (153.6
on MI355X), unlike NVSwitch. The NVIDIA "smi MiB" column is nvidia-smi's total on those parts
(A100-SXM4-80GB 81,920; L20 with ECC on and L40S 46,068; B300 SXM6 275,040; GB200 189,471; GB300
284,208) and the "torch GiB" column PyTorch's "GPU 0 has a total capacity of X GiB"
out-of-memory message on them (A100 80GB reads 79.14-79.15 by driver, L40S 44.31-44.42: the
lower figure is taken), found in public logs [smi].

Sources: [a100] https://glennklockwood.com/garden/processors/A100 (NVIDIA A100 datasheet: 2,039
GB/s, 312 TFLOPS BF16, NVLink 600 GB/s); [a100wp] https://jingchaozhang.github.io/A100-white-paper/
(third-generation NVLink, 12 links x 50 GB/s); [l20]
https://www.tomshardware.com/pc-components/gpus/new-nvidia-ai-gpus-designed-to-get-around-us-export-bans-come-to-china-h20-l20-and-l2-to-fill-void-left-by-restricted-models
(48 GB GDDR6, 864 GB/s, FP8 239, BF16 119.5 TFLOPS, PCIe); [l40s]
https://www.itcreations.com/nvidia-gpu/nvidia-l40s-gpu-accelerator (NVIDIA's table: 864 GB/s, BF16
362.05, FP8 733 TFLOPS dense, PCIe 4.0 x16 64 GB/s); [b300] https://acecloud.ai/blog/nvidia-hgx-b300
(288 GB HBM3e, 8 TB/s, NVLink 1.8 TB/s); [gb300] https://verda.com/blog/gb300-nvl72-architecture
(B300/GB300 dense BF16 2.25 / 2.5, FP8 4.5 / 5 PFLOPS, FP4 15 PFLOPS, NVLink 1.8 TB/s);
[b300k] https://glennklockwood.com/garden/processors/B300; [gb200]
https://raw.githubusercontent.com/mlcommons/inference_results_v6.1/main/closed/Crusoe/systems/GB200-NVL72_GB200-186GB_aarch64x16_Dynamo.json
(186 GB per GPU); [b200k] https://glennklockwood.com/garden/processors/B200 (GB200: 2.5 / 5 / 10
PFLOPS dense BF16 / FP8 / FP4); [mleng] https://github.com/stas00/ml-engineering (GB300 276.50 GiB);
[mi300x]
https://raw.githubusercontent.com/alpharomercoma/MI300X-vs-H200/6077fdc7bfc215171c33435b7cd76ca4c5f2b236/METHODOLOGY.md
(5.3 TB/s, 1,307.4 / 2,614.9 TFLOPS); [mi300xl] https://gpu.blog/gpus/instinct-mi300x-mi300x (7
Infinity Fabric links x 128 GB/s; the MI325X uses the same platform); [rocm]
https://github.com/ROCm/legacy-rocm-build/issues/4750 (rocm-smi VRAM total 206,141,652,992 B =
196,592 MiB); [mi325x] https://awesomeagents.ai/hardware/amd-mi325x (256 GB HBM3e, 6 TB/s, same
compute as MI300X); [mi355x] https://aiwiki.ai/wiki/amd_instinct_mi355x (288 GB HBM3e, 8 TB/s);
[mi355xf] https://www.world-today-news.com/?p=7253162 (ISSCC 2026: five petaflops FP8);
[mi355xl] https://humeconsulting.co/amd-mi355x-strong-node-level-inference-but-not-yet-rack-scale
(~153 GB/s xGMI links, 10 PFLOPS FP4); [smi] nvidia-smi and PyTorch out-of-memory outputs
published in public repositories and issues, the GPU named beside them.

Not in the catalog: the MI308X. Its memory would size like the MI300X's (the same 192 GB, a torch
total of 191.98 GiB in a public rtp-llm MI308X log), but AMD publishes no bandwidth, compute or
xGMI figures for it (80 CUs against the MI300X's 304 give only an estimate), so the planner's timing
would rest on guesses. A pool of MI308X nodes can be validated for memory as ``MI300X-192GB``.

Architectures: the docs/spec.md catalog ids map to copies of the Hugging Face ``config.json`` files in
``catalog/models/`` (the models' published Hugging Face configs; :data:`CONFIG_SOURCES` names the
repository revision and the public copy of each added for issue 35). What moegen knows of a model
it reads from its capabilities (``catalog/capabilities.py``), which ``catalog/readers.py`` maps
from the config.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from ..resources import package_text
from .capabilities import FAMILY_LABELS, ModelArch  # noqa: F401 (catalog/capabilities.py)
from .readers import (  # noqa: F401 (config.json -> capabilities: catalog/readers.py)
    UnknownArchitecture,
    UnreadQuantization,
    arch_from_config,
    config_problems,
)

#: The extended resource a pod requests its GPUs with, per vendor (NVIDIA k8s-device-plugin;
#: ROCm/k8s-device-plugin).
DEVICE_RESOURCES = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}


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
    vendor: str = "nvidia"
    scaleup_gpus: int = 8
    fp8: bool = True

    @property
    def resource(self) -> str:
        """The device plugin's extended resource (``nvidia.com/gpu``, ``amd.com/gpu``)."""
        return DEVICE_RESOURCES[self.vendor]

    @property
    def nvlink(self) -> bool:
        """The GPUs of a node share an NVLink/xGMI fabric (False on PCIe-only cards)."""
        return self.scaleup_gpus > 1


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
        Gpu("B300-288GB", 275_040, 267.69, 8_000, 2_250, 4_500, 1_800, fp4=True,
            generation="blackwell"),
        Gpu("GB200-186GB", 189_471, 184.31, 8_000, 2_500, 5_000, 1_800, fp4=True,
            generation="blackwell", scaleup_gpus=72),
        Gpu("GB300-288GB", 284_208, 276.50, 8_000, 2_500, 5_000, 1_800, fp4=True,
            generation="blackwell", scaleup_gpus=72),
        Gpu("A100-80GB", 81_920, 79.14, 2_039, 312, 312, 600, generation="ampere", fp8=False),
        Gpu("L20-48GB", 46_068, 44.53, 864, 119.5, 239, 64, generation="ada", scaleup_gpus=1),
        Gpu("L40S-48GB", 46_068, 44.39, 864, 362.05, 733, 64, generation="ada", scaleup_gpus=1),
        Gpu("MI300X-192GB", 196_592, 191.98, 5_300, 1_307.4, 2_614.9, 896, generation="cdna3",
            vendor="amd"),
        Gpu("MI325X-256GB", 262_128, 255.98, 6_000, 1_307.4, 2_614.9, 896, generation="cdna3",
            vendor="amd"),
        Gpu("MI355X-288GB", 294_896, 287.98, 8_000, 2_500, 5_000, 1_075, fp4=True,
            generation="cdna4", vendor="amd"),
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
    "kimi-k2-thinking": "kimi-k2-thinking.config.json",
    "deepseek-v2-lite": "deepseek-v2-lite.config.json",
    "qwen3-235b-a22b": "qwen3-235b-a22b.config.json",
    "qwen3-30b-a3b": "qwen3-30b-a3b.config.json",
    "qwen3-coder-480b-a35b": "qwen3-coder-480b-a35b-instruct.config.json",
    "glm-4.5": "glm-4.5.config.json",
    "glm-4.6": "glm-4.6.config.json",
    "glm-4.7": "glm-4.7.config.json",
    "glm-5": "glm-5.config.json",
    "glm-5.2": "glm-5.2.config.json",
    "gpt-oss-120b": "gpt-oss-120b.config.json",
    "gpt-oss-20b": "gpt-oss-20b.config.json",
    "llama-4-scout": "llama-4-scout-17b-16e-instruct.config.json",
    "llama-4-maverick": "llama-4-maverick-17b-128e-instruct.config.json",
    "minimax-m2": "minimax-m2.config.json",
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
    "kimi-k2-thinking": "moonshotai/Kimi-K2-Thinking",
    "deepseek-v2-lite": "deepseek-ai/DeepSeek-V2-Lite",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "qwen3-coder-480b-a35b": "Qwen/Qwen3-Coder-480B-A35B-Instruct",
    "glm-4.5": "zai-org/GLM-4.5",
    "glm-4.6": "zai-org/GLM-4.6",
    "glm-4.7": "zai-org/GLM-4.7",
    "glm-5": "zai-org/GLM-5",
    "glm-5.2": "zai-org/GLM-5.2",
    "gpt-oss-120b": "openai/gpt-oss-120b",
    "gpt-oss-20b": "openai/gpt-oss-20b",
    "llama-4-scout": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "llama-4-maverick": "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
    "minimax-m2": "MiniMaxAI/MiniMax-M2",
}

#: Catalog id -> checkpoint format -> the Hugging Face repository of the model's release in
#: that format where it is not the config's own (the config's format is its
#: ``quantization_config``: ``builtin_arch(id).checkpoint.format``, the checkpoint of
#: :data:`HF_IDS`). Each is its publisher's model page, https://huggingface.co/<repository>;
#: ``gen plan --emit`` names it as ``model.name`` (:func:`checkpoint_id`). A format not listed
#: has no release the catalog knows (DeepSeek-V2-Lite, Llama-4-Scout or gpt-oss in FP8).
RELEASES: dict[str, dict[str, str]] = {
    "deepseek-r1": {"nvfp4": "nvidia/DeepSeek-R1-FP4", "nvfp4-v2": "nvidia/DeepSeek-R1-NVFP4-v2"},
    "deepseek-v4-pro": {"nvfp4": "nvidia/DeepSeek-V4-Pro-NVFP4"},
    "qwen3-235b-a22b": {"fp8": "Qwen/Qwen3-235B-A22B-FP8"},
    "qwen3-30b-a3b": {"fp8": "Qwen/Qwen3-30B-A3B-FP8"},
    "qwen3-coder-480b-a35b": {"fp8": "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8"},
    "glm-4.5": {"fp8": "zai-org/GLM-4.5-FP8"},
    "glm-4.6": {"fp8": "zai-org/GLM-4.6-FP8"},
    "glm-4.7": {"fp8": "zai-org/GLM-4.7-FP8"},
    "glm-5": {"fp8": "zai-org/GLM-5-FP8"},
    "glm-5.2": {"fp8": "zai-org/GLM-5.2-FP8"},
    "llama-4-maverick": {"fp8": "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8"},
}


def checkpoint_id(arch_id: str, fmt: str) -> str | None:
    """The Hugging Face repository of catalog model ``arch_id``'s checkpoint in format ``fmt``:
    :data:`HF_IDS` where the shipped config is that format, else :data:`RELEASES`; None where
    the catalog knows no such checkpoint."""
    if builtin_arch(arch_id).checkpoint.format == fmt:
        return HF_IDS[arch_id]
    return RELEASES.get(arch_id, {}).get(fmt)


#: Where each shipped config.json of issue 35's families was read: the Hugging Face repository
#: and revision whose ``config.json`` it is (``https://huggingface.co/<repo>/blob/<revision>/
#: config.json``; revisions as public sources cite them) and the pinned public copy the text was
#: taken from. The DeepSeek and Kimi configs are copies of shared/reference/models.
_AIC = "ai-dynamo/aiconfigurator@095f58a51c4ca8e61b66ec108d86f223f8d559ce:aic-core/src/" \
    "aiconfigurator_core/model_configs/"
CONFIG_SOURCES: dict[str, str] = {
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B@8efa61729e24bd65b1d152b5ab5409052aa80e65; "
                       + _AIC + "Qwen--Qwen3-235B-A22B_config.json",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B (main); " + _AIC + "Qwen--Qwen3-30B-A3B_config.json",
    "qwen3-coder-480b-a35b": "Qwen/Qwen3-Coder-480B-A35B-Instruct (main); " + _AIC
                             + "Qwen--Qwen3-Coder-480B-A35B-Instruct_config.json",
    "glm-5": "zai-org/GLM-5@c183ef8c61faee82855eca1ed9bb3a9a7ce3b0b2; " + _AIC
             + "zai-org--GLM-5_config.json",
    "glm-5.2": "zai-org/GLM-5.2@b4734de4facf877f85769a911abafc5283eab3d9 (zai-org/GLM-5.2-FP8@"
               "ba978f7d347eaf65d22f1a86833408afdb953541 adds the block-FP8 quantization_config); "
               + _AIC + "zai-org--GLM-5.2_config.json",
    "gpt-oss-120b": "openai/gpt-oss-120b@b5c939de8f754692c1647ca79fbf85e8c1e70f8a; " + _AIC
                    + "openai--gpt-oss-120b_config.json",
    "gpt-oss-20b": "openai/gpt-oss-20b (main); " + _AIC + "openai--gpt-oss-20b_config.json",
    "llama-4-scout": "meta-llama/Llama-4-Scout-17B-16E-Instruct@"
                     "92f3b1597a195b523d8d9e5700e57e4fbb8f20d3; text_config from " + _AIC
                     + "meta-llama--Llama-4-Scout-17B-16E-Instruct_config.json, vision_config "
                     "as aiconfigurator's tests/unit Llama-4 checkpoint test asserts it",
    "llama-4-maverick": "meta-llama/Llama-4-Maverick-17B-128E-Instruct@"
                        "73d14711bcc77c16df3470856949c3764056b617; text_config from " + _AIC
                        + "meta-llama--Llama-4-Maverick-17B-128E-Instruct_config.json, "
                        "vision_config as Scout's (the same vision tower)",
    "glm-4.5": "zai-org/GLM-4.5@cbb2c7cfb52fa128a9660cb1a7a78e017899e115; the shape as "
               "ai-dynamo/aiconfigurator@19d098add98ab8ba2366c94795e9e886cdcc915c:src/"
               "aiconfigurator/model_configs/zai-org--GLM-4.7-FP8_config.json (92 layers, 96 / 8 "
               "heads, 160 experts of 1536, first 3 dense) with GLM-4.5's 131,072 positions, "
               "q/k/v bias, q/k norm and half-rotary RoPE as THUDM/slime scripts/models/"
               "glm4.5-355B-A32B.sh trains it (--add-qkv-bias, --qk-layernorm, --rotary-percent "
               "0.5), one MTP layer",
    "glm-4.6": "zai-org/GLM-4.6@be72194883d968d7923a07e2f61681ea9a2826d1; GLM-4.5's shape with "
               "202,752 positions (aiconfigurator's GLM-4.7-FP8 copy, above)",
    "glm-4.7": "zai-org/GLM-4.7@602d01efcdd332c5238ca4bcede555defbe83eb7; as GLM-4.6 "
               "(aiconfigurator's GLM-4.7-FP8 copy, above)",
    "minimax-m2": "MiniMaxAI/MiniMax-M2 (main); the shape of " + _AIC
                  + "MiniMaxAI--MiniMax-M2.5_config.json, whose architecture M2 shares "
                  "(MiniMaxM2ForCausalLM: 62 layers, 48 / 8 heads, 256 experts of 1536)",
}

#: The ``nvidia.com/gpu.product`` value NVIDIA GPU feature discovery puts on nodes of a catalog
#: GPU (the device name with spaces as dashes: NVIDIA/k8s-device-plugin gpu-feature-discovery),
#: for the GPUs whose value public manifests show (shared/reference/manifests: NVIDIA-H200; the
#: field cases in tests/field: NVIDIA-H100-80GB-HBM3, NVIDIA-B200, NVIDIA-GB200, NVIDIA-H20). The
#: 141 GB H20 and the others are left out: their value was not seen (POOL005 then names none).
GPU_PRODUCTS = {"H20-96GB": "NVIDIA-H20", "H100-80GB": "NVIDIA-H100-80GB-HBM3",
                "H200-141GB": "NVIDIA-H200", "B200-180GB": "NVIDIA-B200",
                "GB200-186GB": "NVIDIA-GB200"}


@cache
def builtin_config(arch_id: str) -> dict:
    """The shipped ``config.json`` of catalog id ``arch_id`` (KeyError if unknown)."""
    name = ARCHITECTURES[arch_id]
    text = package_text("catalog", "models", name)
    return json.loads(text)


@cache
def builtin_arch(arch_id: str) -> ModelArch:
    """The capabilities of catalog id ``arch_id`` (KeyError if unknown)."""
    return arch_from_config(builtin_config(arch_id))


def nvl72(gpu: Gpu, gpus_per_node: int) -> bool:
    """The pool's NVLink domain is rack-scale and larger than a node (GB200/GB300 NVL72 trays of
    4; not an 8-GPU HGX board split into smaller nodes): an instance that spans pods can stay on
    NVLink, given an IMEX channel."""
    return gpu.nvlink and gpu.scaleup_gpus > max(gpus_per_node, 8)
