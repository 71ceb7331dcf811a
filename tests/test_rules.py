"""Rules that need a model outside the catalog (``model.config``): the config is written here."""

from __future__ import annotations

import json

import pytest

from generator import pipeline
from generator.catalog import builtin_config
from generator.cli import run
from tests.helpers import EXAMPLES

SPEC = """\
apiVersion: moegen.dev/v1alpha1
kind: InferenceDeployment
metadata: {{name: x}}
spec:
  model: {{name: m, config: config.json, weights: fp8, path: /m, volume: {{persistentVolumeClaim: {{claimName: w}}}}}}
  engine: {{name: vllm, version: "0.33.0", image: vllm/vllm-openai:v0.33.0}}
  network: {{socketInterface: eth0}}
  nodePools:
    p: {{gpu: H20-141GB, gpusPerNode: 8, nodes: 2, nodeSelector: {{pool: p}}}}
  roles:
    - name: serve
      mode: unified
      nodePool: p
      parallel: {{data: 8, expert: true}}
{extra}
"""


def _check(tmp_path, config: dict, extra: str = ""):
    (tmp_path / "config.json").write_text(json.dumps(config))
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(extra=extra))
    checked = pipeline.check(spec)
    return sorted(f.code for f in checked.findings)


def test_user_config_of_catalog_shape_passes(tmp_path):
    assert _check(tmp_path, builtin_config("deepseek-v3")) == []


def test_a2a003_deepep_hidden_size(tmp_path):
    # vLLM 0.33.0 pads a hidden size up to DeepEP low-latency's next size, up to 8,192
    # (generator/facts/deepep.py VLLM_LL_PADDED_SINCE): 6,400 runs at 7,168, 9,216 does not.
    cfg = dict(builtin_config("deepseek-v3"), hidden_size=9216)
    assert _check(tmp_path, cfg, "      moe: {all2all: deepep_low_latency}") == ["A2A003"]
    cfg = dict(builtin_config("deepseek-v3"), hidden_size=6400)
    assert _check(tmp_path, cfg, "      moe: {all2all: deepep_low_latency}") == []


def test_spd002_tokens_not_multiple_of_mtp_depth(tmp_path):
    cfg = dict(builtin_config("deepseek-v3"), num_nextn_predict_layers=2)
    extra = "      speculative: {method: mtp, numSpeculativeTokens: 3}"
    assert _check(tmp_path, cfg, extra) == ["SPD002"]
    extra = "      speculative: {method: mtp, numSpeculativeTokens: 4}"
    assert _check(tmp_path, cfg, extra) == []


def test_mod002_unknown_model_type(tmp_path):
    cfg = dict(builtin_config("deepseek-v3"), model_type="llama")
    assert _check(tmp_path, cfg) == ["MOD002"]


def test_mod003_incomplete_config(tmp_path):
    cfg = dict(builtin_config("deepseek-v3"))
    del cfg["num_attention_heads"]
    assert _check(tmp_path, cfg) == ["MOD003"]


def test_siz005_config_without_inventory_fields(tmp_path):
    cfg = dict(builtin_config("deepseek-v3"))
    del cfg["kv_lora_rank"]
    assert _check(tmp_path, cfg) == ["SIZ005"]


def test_rtr006_pool_ports_above_the_crd_maximum(tmp_path, monkeypatch):
    """An engine serving one HTTP port per local DP rank (8 ranks per H20 node, + 1 here) would
    need more InferencePool targetPorts than the CRD allows (8): RTR006. moegen's engines serve
    one port per pod today, so the per-pod port list is patched in."""
    import generator.checks.routing as routing
    from tests.helpers import EXAMPLES
    overlay = tmp_path / "igw.yaml"
    overlay.write_text("spec:\n  router:\n    kind: inference-gateway\n    gateway:\n"
                       "      parentRef: {name: inference-gateway}\n")
    spec = EXAMPLES / "s1-16xh20-pd.yaml"
    assert not [f for f in pipeline.check(spec, [overlay]).findings if f.code == "RTR006"]
    monkeypatch.setattr(routing, "engine_api_ports",
                        lambda role: tuple(8000 + r for r in range(9)))
    found = [f for f in pipeline.check(spec, [overlay]).findings if f.code == "RTR006"]
    assert found and "9 HTTP ports" in found[0].message and "at most 8" in found[0].message


def test_srv008_max_num_seqs_per_rank(tmp_path, capsys):
    """S1 unified (DP32, sizing.concurrency 200) with maxNumSeqs 200: vLLM admits 200 per DP
    rank, 32 x 200 = 6,400 per instance; moegen's own value is ceil(200 / 32) = 7."""
    over = tmp_path / "o.yaml"
    over.write_text("spec:\n  serving: {maxNumSeqs: 200}\n")
    assert run(["validate", str(EXAMPLES / "s1-32xh20-unified.yaml"), "-f", str(over),
                "--format", "json"]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f["code"] for f in findings] == ["SRV008"]
    assert "6,400 sequences" in findings[0]["message"] and "--max-num-seqs 7" in findings[0]["hint"]


@pytest.mark.parametrize("field,value,says", [
    ("num_hidden_layers", "61", "num_hidden_layers is '61', not an integer"),
    ("num_hidden_layers", 61.5, "not an integer"),
    ("hidden_size", True, "hidden_size is True, not an integer"),
    ("n_routed_experts", -256, "n_routed_experts is -256, outside 1.."),
    ("num_attention_heads", 0, "outside 1.."),
    ("vocab_size", 1 << 40, "outside 1.."),
    ("num_experts_per_tok", 1000, "num_experts_per_tok 1000 exceeds n_routed_experts 256"),
])
def test_mod003_unusable_config_values(tmp_path, field, value, says):
    """A config.json whose counts are not positive integers, or whose top-k exceeds its experts,
    is one MOD003 finding (it used to crash sizing, or size negative weights)."""
    cfg = dict(builtin_config("deepseek-v3"), **{field: value})
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(extra=""))
    findings = pipeline.check(spec).findings
    assert [f.code for f in findings] == ["MOD003"] and says in findings[0].message


#: llm-compressor's INT8 W8A8 scheme as compressed-tensors writes it (8-bit int weights per
#: channel, 8-bit int dynamic per-token activations: compressed-tensors QuantizationScheme
#: preset W8A8), and its INT4 weights with INT8 activations (W4A8): neither is a format of
#: model.weights.
_W8A8 = {"weights": {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": True},
         "input_activations": {"num_bits": 8, "type": "int", "strategy": "token",
                               "dynamic": True}}
_W4A8 = {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128},
         "input_activations": {"num_bits": 8, "type": "int", "strategy": "token",
                               "dynamic": True}}


@pytest.mark.parametrize("quant,says", [
    ({"quant_method": "compressed-tensors", "format": "int-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"], **_W8A8}}},
     "quantization_config: compressed-tensors config_groups.group_0 weights int 8-bit (strategy "
     "channel), input_activations int 8-bit (strategy token)"),
    ({"quant_method": "compressed-tensors", "format": "int-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"], **_W4A8}}},
     "config_groups.group_0 weights int 4-bit (strategy group), input_activations int 8-bit"),
    ({"quant_method": "gptq", "bits": 4, "group_size": 128},
     "quantization_config: quant_method 'gptq'"),
])
def test_mod003_a_quantization_moegen_does_not_read(tmp_path, quant, says):
    """compressed-tensors INT8 W8A8 was read as W4A16 (Kimi-K2-Thinking's INT4 weight-only) and
    a GPTQ config as BF16 (a reviewer, issue #35): moegen does not size a format it did not
    read; the config's fields are named in one MOD003 finding."""
    cfg = dict(builtin_config("deepseek-v3"), quantization_config=quant)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(extra=""))
    findings = pipeline.check(spec).findings
    assert [f.code for f in findings] == ["MOD003"]
    assert says in findings[0].message, findings[0].message
    assert "a format moegen does not read" in findings[0].message
    assert findings[0].hint.startswith("moegen sizes BF16, block or per-channel FP8")
