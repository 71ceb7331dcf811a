"""DeepSeek-V4's KV cache per engine release (generator/sizing/kv.py ``V4Cache``), against the
engine logs of published-dev-2.yaml and the arithmetic of docs/v4-kv.md."""

from __future__ import annotations

import pytest
import yaml

from generator import pipeline
from generator.sizing.kv import V4Cache
from tests.helpers import shared

GIB = 2**30
#: DeepSeek-V4-Pro: 61 layers, 30 of compress ratio 4 and 31 of ratio 128, plus the MTP entry
#: of compress_ratios (62 entries). V4-Flash: 43 layers, 21 ratio-4, 20 ratio-128.
PRO, FLASH = (30, 31, 61), (21, 20, 43)


def _dev(kind: str, row_id: str) -> dict:
    doc = yaml.safe_load(shared("reference", "published-dev-2.yaml").read_text())
    return next(r for r in doc[kind] if r["id"] == row_id)


def _v4pro_spec(tmp_path, engine: str, pool: str, serving: str, role: str):
    """Write a one-role DeepSeek-V4-Pro (mxfp4) InferenceDeployment and return its path: the
    ``engine``, ``nodePools``, ``serving`` and role-tail flow mappings as given."""
    spec = tmp_path / "v4pro.yaml"
    spec.write_text(f"""apiVersion: moegen.dev/v1alpha1
kind: InferenceDeployment
metadata: {{name: v4pro}}
spec:
  model: {{name: deepseek-ai/DeepSeek-V4-Pro, architecture: deepseek-v4-pro, weights: mxfp4,
          path: /m, volume: {{persistentVolumeClaim: {{claimName: w}}}}}}
  engine: {engine}
  nodePools:
    pool: {pool}
  serving: {serving}
  roles:
    - {{name: serve, mode: unified, nodePool: pool, {role}}}
""")
    return spec


def test_sglang_dsv4_pool_reproduces_the_engine_log():
    """sglang#24523 (DSv4 pool of 0.5.12-0.5.14): per full token
    0.1 x 584 x 62 + 584/4 x 30 + 584/128 x 31 + 132/4 x 30 + 0.1 x 8/128 x (8192 + 2048) x 30
    + 0.1 x 4096 x 31 = 3620.8 + 4380 + 141.44 + 990 + 1920 + 12697.6 = 23,749.84 B; the pool's
    4.126 GiB (rest_memory) / 23,749.84 = 186,538 -> 186,368 full tokens (256-token pages)."""
    row = _dev("sizing", "sglang-v4pro-prefill-dp8-h200")["printed"]
    cache = V4Cache("sglang", "full-state", *PRO, entries=62)
    assert cache.bytes_per_full_token() == pytest.approx(row["bytes_per_full_token"], abs=0.005)
    assert cache.tokens(4.126 * GIB, 1) == row["full_tokens_per_rank"] == 186_368


def test_sglang_0523_pool_by_hand():
    """0.5.23: pages padded (585 B/token window and ratio-4, 864 ratio-128), the ratio-4 state per
    window slot (ring 8 of 256), the ratio-128 state fixed: 0.1 x (585 x 61 + 8/256 x 10240 x 30)
    + 30 x (585 + 132)/4 + 31 x 864/128 = 4528.5 + 5377.5 + 209.25 = 10,115.25 B per full token,
    and (33 x 128 + 129 -> 4480 rows) x 4096 B x 31 layers = 0.53 GiB for 32 sequences per rank."""
    cache = V4Cache("sglang", "fixed-state", *PRO, running_per_rank=32)
    assert cache.bytes_per_full_token() == 10_115.25
    fixed = 4480 * 4096 * 31
    assert cache.tokens(4.126 * GIB, 1) == int((4.126 * GIB - fixed) / 10_115.25) // 256 * 256


def test_sglang_0523_mtp_inflates_every_per_token_byte():
    """0.5.23 with MTP (DSV4PoolConfigurator.__init__ in python/sglang/srt/model_executor/
    pool_configurator.py: bytes_per_full_token *= (target_layers + 1) / target_layers): the
    draft layer scales the whole per-token figure, not only the window term. V4-Pro, ring 16:
    0.1 x (585 x 61 + 16/256 x 10240 x 30) + 30 x 717/4 + 31 x 864/128
    = 5488.5 + 5377.5 + 209.25 = 11,075.25, x 62/61 = 11,256.81 B per full token (moegen had
    0.1 x (585 x 62 + 19,200) + 5377.5 + 209.25 = 11,133.75: the draft layer on the window term
    only)."""
    cache = V4Cache("sglang", "fixed-state", *PRO, running_per_rank=32, mtp=True)
    assert cache.bytes_per_full_token() == pytest.approx(11_075.25 * 62 / 61)
    assert round(cache.bytes_per_full_token(), 1) == 11_256.8


def test_vllm_packed_layout_by_hand():
    """vLLM <= 0.32 (V4-Flash, 1M tokens, 8192 batched): full block 21 x (37,440 + 8,640) +
    20 x 1,728 = 1,002,240 B; the pool block packs 22 x 37,440 + 21 x 8,640 + 20 x 1,728 =
    1,039,680 B; a request weighs 4096 full blocks + 2 x 131 window blocks + 2051 ratio-4 and
    1041 ratio-128 state blocks = 7,065 pool blocks (6.84 GiB)."""
    cache = V4Cache("vllm", "packed", *FLASH, in_flight=8192)
    assert cache._full_block() == 21 * (37_440 + 8_640) + 20 * 1_728 == 1_002_240
    assert cache._pool_block() == 22 * 37_440 + 21 * 8_640 + 20 * 1_728 == 1_039_680
    assert cache._blocks_per_request(1 << 20) == 7_065
    planned = V4Cache("vllm", "planned", *FLASH, in_flight=2 * 8192)
    assert planned._blocks_per_request(1 << 20) == 4096 + 2 * 259 + 4099 + 2065 == 10_778


def test_vllm_v4_flash_0731_on_b200_within_10_percent(tmp_path):
    """vllm#51454 (vLLM 0.25.0, V4-Flash-0731 = V4-Flash's architecture, DP8 EP on B200, 0.95,
    fp8, 8192 batched, 1M max length): the engine printed 19.6 x maximum concurrency per
    engine; moegen's budget and the packed layout must land within 10 %."""
    row = _dev("sizing", "vllm-v4flash-0731-b200-dp8")
    spec = tmp_path / "v4.yaml"
    spec.write_text("""apiVersion: moegen.dev/v1alpha1
kind: InferenceDeployment
metadata: {name: v4flash}
spec:
  model: {name: deepseek-ai/DeepSeek-V4-Flash-0731, architecture: deepseek-v4-flash,
          weights: mxfp4, path: /m, volume: {persistentVolumeClaim: {claimName: w}}}
  engine: {name: vllm, version: "0.25.0", image: "vllm/vllm-openai:v0.25.0"}
  nodePools:
    b200: {gpu: B200-180GB, gpusPerNode: 8, nodes: 1, nodeSelector: {pool: b200}}
  serving: {maxModelLen: 1048576, kvCacheDtype: fp8, gpuMemoryUtilization: 0.95,
            maxNumBatchedTokens: 8192, maxNumSeqs: 256}
  roles:
    - {name: serve, mode: unified, nodePool: b200, parallel: {tensor: 1, data: 8, expert: true}}
""")
    checked = pipeline.check(spec)
    assert checked.ok, checked.findings
    printed = row["printed"]["max_concurrency_at_max_model_len_per_engine"]
    got = checked.sizing[0].max_concurrency
    assert got == pytest.approx(printed, rel=0.10), got


def test_sglang_v4_pro_row_through_the_whole_pipeline(tmp_path):
    """sglang#24523's row end to end: V4-Pro (FP8 + MXFP4 experts) on H200, attention DP8 with
    EP8, mem_fraction_static 0.90, the 0.5.12-0.5.14 pool: the engine printed 186,368 full tokens
    per rank. The pool is small (4.13 GiB of 138 GiB), so 0.1 GiB of weights moves the tokens
    by 2.4 %; moegen counts SGLang's two 0.25 GiB RoPE tables (complex64 2^20 x 32 per distinct
    RoPE: v4_rope_tables_gib) beside the weights. Within 10 %."""
    row = _dev("sizing", "sglang-v4pro-prefill-dp8-h200")["printed"]
    spec = _v4pro_spec(
        tmp_path, '{name: sglang, version: "0.5.14", image: "lmsysorg/sglang:v0.5.14"}',
        "{gpu: H200-141GB, gpusPerNode: 8, nodes: 1, nodeSelector: {pool: h200}}",
        "{maxModelLen: 65536, kvCacheDtype: fp8, memFractionStatic: 0.9}",
        "parallel: {tensor: 1, data: 8, expert: true}, moe: {all2all: deepep_high_throughput}, "
        "sizing: {concurrency: 8}")
    checked = pipeline.check(spec)
    z = checked.sizing[0]
    assert z.weights_by_component["rope_tables"] == 2 * 2**20 * 32 * 8 / GIB == 0.5
    assert z.kv_tokens_per_rank == pytest.approx(row["full_tokens_per_rank"], rel=0.10)


#: vLLM 0.26.0's start-up check for one 1,048,576-token DeepSeek-V4-Pro request (MTP draft:
#: 62 attention layers), 8,192 batched tokens, asynchronous scheduling (2 x 8,192 in flight).
M01 = "m01-vllm-v4pro-mxfp4-mi355x-dp4ep4-mtp:kv_gib_one_1M_sequence"


def _dev4_memory(row_id: str) -> dict:
    doc = yaml.safe_load(shared("reference", "published-dev-4.yaml").read_text())
    return next(r for r in doc["memory"] if r["id"] == row_id)


def test_vllm_start_up_check_of_one_request_by_hand():
    """vLLM 0.20-0.28 (vllm/v1/core/kv_cache_utils.py _max_memory_usage_bytes_from_groups):
    layer tuples x the full group's page sizes x pages. Pro with MTP: full group 30 c4 + 30
    indexer + 31 c128 layers (31 tuples), 62 window layers split in two groups of 31 (d = 31
    minimises the padding of [31, 62, 30, 31]), a page tuple of 37,440 + 8,640 + 1,728 =
    47,808 B; pages: cdiv(1,048,576, 256) = 4,096 full, cdiv(127 + 16,384, 64) + 1 = 259 per
    window group, cdiv(7 + 16,384, 4) + 1 = 4,099 ratio-4 state, cdiv(127 + 16,384, 8) + 1 =
    2,065 ratio-128 state: 31 x 47,808 x 10,778 = 15,973,513,344 B = 14.88 GiB, the figure vLLM
    0.26.0 printed (published-dev-4 m01). From 0.29 the pool block (30 x (37,440 + 8,640) +
    31 x 1,728 = 1,435,968 B) x (10,778 + the null block)."""
    cache = V4Cache("vllm", "packed", 30, 31, 62, in_flight=2 * 8192)
    assert cache.admission_bytes(1 << 20) == 31 * 47_808 * (4096 + 2 * 259 + 4099 + 2065) \
        == 15_973_513_344
    printed = _dev4_memory(M01)["printed"]
    assert round(cache.admission_bytes(1 << 20) / GIB, 2) == printed == 14.88
    planned = V4Cache("vllm", "planned", 30, 31, 62, in_flight=2 * 8192)
    assert planned.admission_bytes(1 << 20) == 1_435_968 * (10_778 + 1)


def _m01_spec(tmp_path, kv_gib: float):
    spec = _v4pro_spec(
        tmp_path, '{name: vllm, version: "0.26.0", image: "vllm/vllm-openai-rocm:v0.26.0"}',
        "{gpu: MI355X-288GB, gpusPerNode: 4, nodes: 1, nodeSelector: {pool: mi}}",
        f"{{maxModelLen: 1048576, kvCacheMemoryBytes: {int(kv_gib * GIB)}}}",
        "parallel: {tensor: 1, data: 4, expert: true}, "
        "speculative: {method: mtp, numSpeculativeTokens: 1}")
    return pipeline.check(spec)


def test_siz002_refuses_what_vllms_start_up_check_refuses(tmp_path):
    """m01 (SemiAnalysisAI/InferenceX#2540: V4-Pro, 4 x MI355X, vLLM 0.26.0, DP4 EP4, MTP,
    1,048,576 tokens): 12.09 GiB left for KV, 14.88 GiB needed, vLLM refused to start. With the
    KV cache pinned there, SIZ002 says the engine's figures. At 14.5 GiB the packed pool holds
    one request (14,546 MB of pages over 1,435,968-B full blocks: 10,130 pool blocks of
    1,473,408 B = 13.9 GiB) but the start-up check still needs 14.88: refused too."""
    checked = _m01_spec(tmp_path, 12.09)
    siz = [f for f in checked.findings if f.code == "SIZ002"]
    assert len(siz) == 1 and "needs 14.88 GiB of KV but 12.09 GiB remain" in siz[0].message
    assert checked.sizing[0].max_concurrency < 1
    checked = _m01_spec(tmp_path, 14.5)
    assert checked.sizing[0].max_concurrency >= 1
    assert [f.code for f in checked.findings if f.severity.name == "ERROR"] == ["SIZ002"]
    siz = next(f for f in checked.findings if f.code == "SIZ002")
    assert "needs 14.88 GiB of KV but 14.50 GiB remain" in siz.message


def test_swa_full_tokens_ratio_sizes_sglangs_window_pool_and_is_rendered(tmp_path):
    """serving.swaFullTokensRatio is SGLang's --swa-full-tokens-ratio: DeepSeek-V4's window
    share of the pool (0.1 unless set; the SGLang V4 table's B200 Pro high-throughput cell runs
    0.075). 0.5.23, V4-Pro, 32 sequences per rank: per full token 0.075 x (585 x 61 + 8/256 x
    10,240 x 30) + 30 x (585 + 132) / 4 + 31 x 864 / 128 = 3,396.375 + 5,377.5 + 209.25 =
    8,983.125 B (10,115.25 at 0.1); rendered as the flag."""
    cache = V4Cache("sglang", "fixed-state", *PRO, running_per_rank=32, swa_ratio=0.075)
    assert cache.bytes_per_full_token() == pytest.approx(8_983.125)
    def spec(ratio: str):
        return _v4pro_spec(
            tmp_path, '{name: sglang, version: "0.5.23", image: "lmsysorg/sglang:v0.5.23"}',
            "{gpu: B200-180GB, gpusPerNode: 8, nodes: 1, nodeSelector: {pool: b200}}",
            f"{{maxModelLen: 65536, memFractionStatic: 0.835, swaFullTokensRatio: {ratio}}}",
            "parallel: {tensor: 1, data: 8, expert: true}, sizing: {concurrency: 256}")
    checked = pipeline.check(spec("0.075"))
    assert checked.ok, [str(f) for f in checked.findings]
    z = checked.sizing[0]
    assert z.seq_layout.swa_ratio == 0.075
    assert z.kv_bytes_per_token == round(z.seq_layout.bytes_per_full_token())
    _, files = pipeline.render(checked)
    assert any("--swa-full-tokens-ratio 0.075" in text for text in files.values())
    assert pipeline.check(spec("0.1")).sizing[0].kv_tokens_per_rank < z.kv_tokens_per_rank
