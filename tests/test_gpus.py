"""The GPUs added to the catalog for issue #15 (B300, GB200, GB300, A100, L20, L40S, MI300X,
MI325X, MI355X): their figures hang together, they size, and a deployment renders on one.

Expected numbers are written out as arithmetic on the catalog's published figures (torch totals in
GiB, ``nvidia-smi``/``rocm-smi`` totals in MiB) and the engines' defaults, never by calling the
code under test: vLLM 0.33's ``--gpu-memory-utilization`` default is 0.92, its
``max_num_batched_tokens`` default 16384 on GPUs >= 160 GiB, 8192 on >= 70 GiB, else 2048
(generator/sizing/vllm_budget.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from generator import pipeline
from generator.catalog import GPUS
from generator.engines import vllm
from generator.spec.models import NodePool
from tests.helpers import ROOT, render_spec

GPUS_DIR = ROOT / "tests" / "gpus"
MI300X_PD = GPUS_DIR / "mi300x-dsv3-pd.yaml"
NEW = ("B300-288GB", "GB200-186GB", "GB300-288GB", "A100-80GB", "L20-48GB", "L40S-48GB",
       "MI300X-192GB", "MI325X-256GB", "MI355X-288GB")

#: DeepSeek-V2-Lite (BF16, 15.7 B parameters: ~29 GiB) on one GPU, vLLM 0.33 defaults.
V2_LITE_ONE_GPU = """\
apiVersion: moegen.dev/v1alpha1
kind: InferenceDeployment
metadata: {{name: v2lite}}
spec:
  model: {{name: deepseek-ai/DeepSeek-V2-Lite, architecture: deepseek-v2-lite, weights: bf16,
          path: /models/DeepSeek-V2-Lite, volume: {{persistentVolumeClaim: {{claimName: w}}}}}}
  engine: {{name: vllm, version: "0.33.0", image: "vllm/vllm-openai:v0.33.0"}}
  nodePools:
    p: {{gpu: {gpu}, gpusPerNode: {per_node}, nodes: 1, nodeSelector: {{pool: p}}}}
  serving: {{maxModelLen: 8192}}
  roles:
    - {{name: serve, mode: unified, nodePool: p, parallel: {{tensor: 1}}}}
"""
#: The same deployment on SGLang 0.5.23's ROCm image.
SGLANG_ROCM = ('spec:\n  engine: {name: sglang, version: "0.5.23", '
               'image: "lmsysorg/sglang:v0.5.23-rocm700-mi30x"}\n')


def _check(tmp_path: Path, text: str) -> pipeline.Checked:
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    return pipeline.check(spec, [])


def test_catalog_figures_hang_together():
    for gid in NEW:
        g = GPUS[gid]
        smi_gib = g.hbm_mib / 1024
        # The torch total is the driver total less what the driver keeps (NVIDIA: 0.5-1.1 GiB);
        # ROCm reports all of VRAM: MI300X 196,592 MiB / 1024 = 191.98 GiB.
        assert 0 <= smi_gib - g.torch_total_gib <= 1.1, gid
        if g.vendor == "amd":
            assert round(smi_gib, 2) == g.torch_total_gib, gid
        assert g.resource == {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}[g.vendor]
    # A100: no FP8 tensor cores; FP8 checkpoints compute at the BF16 rate (W8A16).
    a100 = GPUS["A100-80GB"]
    assert not a100.fp8 and a100.fp8_tflops == a100.bf16_tflops == 312
    # NVL72: expert parallelism over NVLink across trays; PCIe cards have no NVLink domain.
    assert GPUS["GB200-186GB"].scaleup_gpus == GPUS["GB300-288GB"].scaleup_gpus == 72
    assert not GPUS["L20-48GB"].nvlink and not GPUS["L40S-48GB"].nvlink
    assert GPUS["MI300X-192GB"].nvlink_gbps == 7 * 128
    assert [g for g in GPUS if GPUS[g].fp4] == ["B200-180GB", "B300-288GB", "GB200-186GB",
                                                 "GB300-288GB", "MI355X-288GB"]


def test_existing_gpus_keep_their_defaults():
    """The new fields default to what the Hopper/Blackwell parts always were."""
    for gid in ("H20-96GB", "H20-141GB", "H100-80GB", "H800-80GB", "H200-141GB", "B200-180GB"):
        g = GPUS[gid]
        assert (g.vendor, g.scaleup_gpus, g.fp8) == ("nvidia", 8, True), gid


def test_every_gpu_is_a_pool_choice():
    enum = NodePool.model_json_schema()["properties"]["gpu"]["enum"]
    # Every catalog GPU, and "unknown": a GPU the imported manifests do not name (docs/spec.md §2).
    assert set(NEW) <= set(enum) and set(enum) == set(GPUS) | {"unknown"}


@pytest.mark.parametrize("gpu, per_node, total, batched", [
    ("B300-288GB", 8, 267.69, 16384),
    ("GB200-186GB", 4, 184.31, 16384),
    ("GB300-288GB", 4, 276.50, 16384),
    ("A100-80GB", 8, 79.14, 8192),
    ("L20-48GB", 8, 44.53, 2048),
    ("L40S-48GB", 8, 44.39, 2048),
    ("MI300X-192GB", 8, 191.98, 16384),
    ("MI325X-256GB", 8, 255.98, 16384),
    ("MI355X-288GB", 8, 287.98, 16384),
])
def test_vllm_budget_on_each_new_gpu(tmp_path, gpu, per_node, total, batched):
    """Budget = torch total x 0.92 (vLLM 0.33's default utilization); the default batch tier by
    torch total (>= 160 GiB: 16384; >= 70: 8192; else 2048)."""
    checked = _check(tmp_path, V2_LITE_ONE_GPU.format(gpu=gpu, per_node=per_node))
    assert [f.code for f in checked.findings if f.severity.value == "error"] == []
    z = checked.sizing[0]
    assert z.gpu == gpu and z.gpu_memory == total
    assert z.budget == pytest.approx(total * 0.92)
    assert z.batched_tokens == batched


def test_mi300x_pd_sizes_by_hand():
    """tests/gpus/mi300x-dsv3-pd.yaml: prefill at 0.9 x 191.98 = 172.782 GiB, decode at the
    release default 0.92 x 191.98 = 176.6216 GiB; both profile 16,384 tokens (>= 160 GiB)."""
    checked = pipeline.check(MI300X_PD, [])
    # no finding (vLLM 0.33.0's NIXL >= 1.5.0 has the restart race's fix: no RST011)
    assert [f.code for f in checked.findings] == []
    pre, dec = checked.sizing
    assert pre.budget == pytest.approx(191.98 * 0.9) == pytest.approx(172.782)
    assert dec.budget == pytest.approx(191.98 * 0.92) == pytest.approx(176.6216)
    assert pre.batched_tokens == dec.batched_tokens == 16384
    # MoRI keeps its buffers outside moegen's model: no all-to-all term, unlike DeepEP.
    assert dec.comm == 0.0


def test_mi300x_sglang_mem_fraction_by_hand(tmp_path):
    """SGLang decode DP8/EP8 on MI300X (196,592 MiB: the >= 160,000 MB tier, chunked prefill
    16384): reserve = 512 + 1.5 x 16384 + 2 x 8 (graph batch: 64 / 8 ranks) + 1024 x 8 / 8
    + 3 x 8 x 8 (DP attention) = 26,320 MB; mfs = round((196,592 - 26,320) / 196,592, 3) =
    0.866; pool budget = (191.98 - 1.8) x 0.866."""
    (tmp_path / "o.yaml").write_text(SGLANG_ROCM)
    checked = pipeline.check(MI300X_PD, [tmp_path / "o.yaml"])
    assert [f.code for f in checked.findings if f.severity.value == "error"] == []
    dec = checked.sizing[1]
    reserve = 512 + 1.5 * 16384 + 2 * 8 + 1024 * 8 / 8 + 3 * 8 * 8
    assert reserve == 26_320
    assert dec.utilization == round((196_592 - reserve) / 196_592, 3) == 0.866
    assert dec.budget == pytest.approx((191.98 - 1.8) * 0.866)


def test_mi300x_renders_mori(tmp_path):
    """vLLM 0.33 takes the engine-neutral name as is; SGLang 0.5.23 spells MoRI-EP as
    ``--moe-a2a-backend mori`` with the DeepEP mode flag (server_args.py: "DeepEP or MoriEP")."""
    _, plan, _ = render_spec(MI300X_PD)
    decode = next(r for r in plan.roles if r.name == "decode")
    argv = decode.launch.argv(0)
    assert argv[argv.index("--all2all-backend") + 1] == "mori_low_latency"

    (tmp_path / "o.yaml").write_text(SGLANG_ROCM)
    _, plan, _ = render_spec(MI300X_PD, [tmp_path / "o.yaml"])
    argv = next(r for r in plan.roles if r.name == "decode").launch.argv(0)
    assert argv[argv.index("--moe-a2a-backend") + 1] == "mori"
    assert argv[argv.index("--deepep-mode") + 1] == "low_latency"


def test_mori_names_follow_the_vllm_release():
    """vLLM had one ``mori`` backend from 0.15.0 and split it into the high-throughput and
    low-latency kernels in 0.23.0 (every release's parser, generator/engines/data)."""
    assert "mori" in vllm.dialect("0.20.2").all2all_choices
    assert "mori_low_latency" not in vllm.dialect("0.20.2").all2all_choices
    assert {"mori_high_throughput", "mori_low_latency"} <= set(vllm.dialect("0.33.0").all2all_choices)
    assert not any(c.startswith("mori") for c in vllm.dialect("0.14.1").all2all_choices)
