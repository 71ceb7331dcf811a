"""``sizing.concurrency: engine-default`` (issue 31 item 7): SGLang's own admission when a
manifest leaves ``--max-running-requests`` unset, computed from moegen's KV sizing
(SGLang 0.5.23 python/sglang/srt/mem_cache/kv_cache_configurator.py resolve_max_num_reqs),
used for graphs, DeepEP buffers, durations and the prediction, rendered as no flag, written
by gen import and read back from moegen's own render (render -> import -> render identical).
A hand-written spec that says nothing keeps SRV004 (tests/invalid/sglang-decode-without-
concurrency); vLLM's default is not modelled (SRV012, a warning)."""

from __future__ import annotations

import re

import pytest
import yaml

from generator import pipeline
from generator.cli import run
from generator.emit import diff_tree, write_tree
from generator.inputs import read_inputs
from generator.sizing.sglang_budget import default_running_requests
from tests.helpers import EXAMPLES, shared

V4 = EXAMPLES / "s3-v4pro-pd-dp16.yaml"
GPT_OSS = "llmd-pd-disaggregation-sglang-gpt-oss-120b-coreweave"


def test_default_running_requests_by_hand():
    # 600,000 tokens, context 131,072: int(600000 / 131072 * 512) = int(2343.75) = 2343, inside
    # [2048, 4096]; min(2343, 600000 // 2 = 300000) = 2343.
    assert default_running_requests(600_000, 131_072, 1) == 2343
    # 100,000 tokens: int(100000 / 131072 * 512) = 390 -> raised to 2048; 100000 // 2 = 50000.
    assert default_running_requests(100_000, 131_072, 1) == 2048
    # 3,000 tokens: 2048 (the floor), but the pool holds 3000 // 2 = 1500 requests' worth.
    assert default_running_requests(3_000, 131_072, 1) == 1500
    # 7,000,000 tokens at 8,192: int(7e6 / 8192 * 512) = 437500 -> capped at 4096.
    assert default_running_requests(7_000_000, 8_192, 8) == 4096
    # DeepSeek-V4: SGLang's hook sets 256 per instance; 16 workers: max(1, 256 // 16) = 16,
    # min(16, 500000 // 2) = 16; 512 workers: 256 // 512 = 0 -> 1.
    assert default_running_requests(500_000, 1_048_576, 16, v4=True) == 16
    assert default_running_requests(500_000, 1_048_576, 512, v4=True) == 1


@pytest.fixture(scope="module")
def gpt_oss(tmp_path_factory):
    """The llm-d gpt-oss SGLang guide imported on its README's GPU, checked, rendered."""
    spec = tmp_path_factory.mktemp("gptoss") / "spec.yaml"
    assert run(["import", str(shared("reference", "manifests", f"{GPT_OSS}.yaml")),
                "-o", str(spec), "--gpu", "H200-141GB"]) == 0
    checked = read_inputs([spec]).results[0].checked
    return yaml.safe_load(spec.read_text()), checked


def test_the_import_states_the_engine_default_and_validates(gpt_oss):
    doc, checked = gpt_oss
    sizing = {r["name"]: r.get("sizing") for r in doc["spec"]["roles"]}
    # Decode leaves --max-running-requests unset (the manifest's decode args, l.50-70); prefill
    # is not a decoding role: nothing is said there.
    assert sizing == {"prefill": None, "decode": {"concurrency": "engine-default"}}
    assert [f for f in checked.findings if f.severity.value == "error"] == []
    assert "SRV004" not in {f.code for f in checked.findings}


def test_the_default_is_computed_from_the_kv_pool(gpt_oss):
    _, checked = gpt_oss
    m = checked.model
    decode = next(i for i, r in enumerate(m.roles) if r.name == "decode")
    r, z = m.roles[decode], m.sizing[decode]
    assert (r.layout.tensor, r.layout.data) == (4, 1)
    # resolve_max_num_reqs by hand on the pool the sizing reports: the estimate is
    # int(tokens / 131072 * 512), which for any pool over 1,048,576 tokens (131072 x 4096 / 512)
    # is above 4096, so 4096, and tokens // 2 is larger still: 4096 per worker x 1 worker.
    assert z.max_model_len == 131_072 and z.kv_tokens_per_rank > 1_048_576
    assert r.concurrency == 4096 and r.admission is None
    # The HBM guarantee stays one sequence of maxModelLen (SGLang caps requests, it does not
    # promise each its context): no SIZ003 at 4096.
    assert z.required_concurrency == 1
    # Graphs: SGLang's default cuda_graph_max_bs on a 141 GB GPU at TP 4 is 512
    # (sizing/sglang_budget.py TIERS: < 160,000 MB, tp >= 4), below the 4096 it admits.
    assert r.graph_cap == 512


def test_no_admission_flag_is_rendered(gpt_oss):
    _, checked = gpt_oss
    # The llm-d Deployments are one pod per instance: imported as workload: statefulset.
    lws = pipeline.render(checked)[1]["decode-statefulset.yaml"]
    assert "--max-running-requests" not in lws
    assert set(re.findall(r"--cuda-graph-max-bs\S*\s+(\d+)", lws)) == {"512"}
    assert "concurrency=engine-default" in lws   # the sized-load annotation gen import reads


@pytest.fixture(scope="module")
def v4_default(tmp_path_factory):
    """The SGLang example with its decode at engine-default, checked and rendered."""
    overlay = tmp_path_factory.mktemp("v4") / "default.yaml"
    overlay.write_text("spec:\n  roles:\n    - name: decode\n"
                       "      sizing: {concurrency: engine-default}\n")
    checked = pipeline.check(V4, [overlay])
    assert [f for f in checked.findings if f.severity.value == "error"] == []
    return checked, pipeline.render(checked)[1]


@pytest.fixture(scope="module")
def v4_stated():
    """The SGLang example as shipped: decode sizing.concurrency 256."""
    checked = pipeline.check(V4)
    return checked, pipeline.render(checked)[1]


def test_the_default_is_what_the_example_states(v4_default, v4_stated):
    """DeepSeek-V4: SGLang's hook sets 256 per instance; 16 attention-DP workers: 256 // 16 = 16
    each (the pool holds far more than 2 x 16 tokens), 16 x 16 = 256 for the instance, the
    example's own sizing.concurrency. So graphs (16 per rank, under the 512 SGLang captures by
    default on an H20 141 GB at TP 16), DeepEP buffers, durations and the prediction are the
    example's; the render differs only in the admission flag and the sized-load annotation."""
    (d, dfiles), (s, sfiles) = v4_default, v4_stated
    decode = next(r for r in d.model.roles if r.name == "decode")
    assert (decode.layout.data, decode.concurrency, decode.admission) == (16, 256, None)
    assert decode.graph_cap == 512
    assert d.model.prediction.roles["decode"].tpot_ms == s.model.prediction.roles["decode"].tpot_ms
    assert d.model.durations == s.model.durations
    assert dfiles.keys() == sfiles.keys()
    changed = {k for k in dfiles if dfiles[k] != sfiles[k]}
    assert changed == {"decode-lws.yaml"}
    gone = set(sfiles["decode-lws.yaml"].splitlines()) - set(dfiles["decode-lws.yaml"].splitlines())
    assert all("--max-running-requests 256" in x or "concurrency=256" in x for x in gone), gone


def test_render_import_render_is_byte_identical(v4_default, tmp_path):
    """The SGLang example's decode at engine-default: no --max-running-requests, the same bytes
    after gen import, which writes engine-default back."""
    tree, files = tmp_path / "tree", v4_default[1]
    assert "--max-running-requests" not in files["decode-lws.yaml"]
    write_tree(tree, files)
    batch = read_inputs([tree])
    again = batch.results[0]
    roles = {r["name"]: r.get("sizing", {}) for r in again.imported.data["spec"]["roles"]}
    assert roles["decode"] == {"concurrency": "engine-default"}
    assert diff_tree(tree, pipeline.render(again.checked)[1]) == []


def test_a_stated_concurrency_still_renders_the_flag(v4_stated):
    """The example as shipped (decode sizing.concurrency 256): the flag is rendered on the
    leader's and the workers' commands, 256 = 16 per worker x 16."""
    lws = v4_stated[1]["decode-lws.yaml"]
    assert re.findall(r"--max-running-requests\s+(\d+)", lws) == ["256", "256"]


def test_engine_default_on_vllm_is_a_warning(tmp_path):
    """vLLM's default --max-num-seqs is not modelled: SRV012 (warning) on the role, which keeps
    the HBM check at one sequence and renders no --max-num-seqs, as when unset."""
    overlay = tmp_path / "default.yaml"
    overlay.write_text("spec:\n  roles:\n    - name: decode\n"
                       "      sizing: {concurrency: engine-default}\n")
    checked = pipeline.check(EXAMPLES / "s1-16xh20-pd.yaml", [overlay])
    assert [(f.code, f.severity.value, f.path) for f in checked.findings
            if f.code == "SRV012"] == [("SRV012", "warning", "$.spec.roles[1].sizing.concurrency")]
    decode = next(r for r in checked.model.roles if r.name == "decode")
    assert (decode.concurrency, decode.admission, decode.engine_default) == (1, None, True)
