"""gen import writes a spec that validates whenever the manifest is sound (issue 31 item 7), on
the reference manifests of ../shared/reference/manifests with the GPU their README names (before
issue 31: none of the 20 did; MOD005 x15 for Hub downloads, ENG002 x5 for llm-d-cuda:v0.9.0 read
as vLLM 0.9.0). Without options: tests/test_import_validate.py (the GPU a manifest does not name
is ``gpu: unknown`` there).

Of the twenty, SOUND validate, and the Llama-4 Maverick sample's spec does too (its import exits
1 on the Secret's ``{{HF_TOKEN}}``, LOAD014 in the manifest). The others, and why
(tests/test_import_reference.py has each finding): six are unsound as published (PD011 on both
Dynamo SGLang DeepSeek-R1 recipes, SRV001 on the Hopper vLLM recipe, A2A004 on the llm-d
DisaggregatedSet, NET032 on the KServe P/D sample, PD090 on the llm-d GLM-5.2 benchmark, whose
``--max-model-len auto`` (vLLM's auto-fit) the spec does not express either: SIZ002); two run
vLLM 0.8.5, which moegen renders at its nearest release, 0.11.0, where TP x PP across pods needs
--nnodes (LAY005; the manifests span pods over Ray). SGLang deployments that leave the decode
admission at SGLang's default are ``sizing.concurrency: engine-default`` (before it SRV004 failed
five: both DeepSeek-R1 recipes above, the Dynamo DeepSeek-V4-Pro GB200 recipe, whose import exits
1 on its ``<your-namespace>`` placeholder (IMP013) and whose spec validates, the llm-d gpt-oss
SGLang guide, now in SOUND, and SGLang's own StatefulSet example, whose local model path needs
its config.json: MOD001)."""

from __future__ import annotations

import pytest
import yaml

from generator.cli import run
from generator.importer import Options
from generator.inputs import read_inputs
from tests.helpers import shared

#: manifest -> --gpu (the reference README's GPU where the manifest does not say).
SOUND = {
    "dynamo-dgd-deepseek-v4-flash-vllm-disagg-h200-agentic": None,
    "dynamo-dgd-glm-5.2-fp8-sglang-disagg-h200-agentic": None,
    "kserve-llmisvc-deepseek-r1-0528-dp-ep-deepep-ht": "H200-141GB",
    "llmd-pd-disaggregation-sglang-gpt-oss-120b-coreweave": "H200-141GB",
    "llmd-pd-disaggregation-vllm-gpt-oss-120b-coreweave": "H200-141GB",
    "llmd-wide-ep-lws-vllm-deepseek-r1-0528-coreweave": "H200-141GB",
    "llmd-wide-ep-lws-vllm-deepseek-r1-0528-gke": "H200-141GB",
    "llmd-wide-ep-lws-vllm-deepseek-v4-pro-oci-gb200-high-tpt": "GB200-186GB",
    "llmd-wide-ep-lws-vllm-deepseek-v4-pro-oci-gb200-low-latency": "GB200-186GB",
}


@pytest.mark.parametrize("name", sorted(SOUND))
def test_the_import_of_a_sound_manifest_validates(name, tmp_path):
    path = shared("reference", "manifests", f"{name}.yaml")
    spec = tmp_path / "spec.yaml"
    gpu = SOUND[name]
    assert run(["import", str(path), "-o", str(spec)] + (["--gpu", gpu] if gpu else [])) == 0
    checked = read_inputs([spec]).results[0].checked
    assert [f for f in checked.findings if f.severity.value == "error"] == []
    doc = yaml.safe_load(spec.read_text())
    model = doc["spec"]["model"]
    # The weights as deployed: a Hub download into the cache volume the pods mount, or the
    # PVC KServe mounts (pvc://).
    assert "hub" in model or "volume" in model
    # False findings the import raised about itself (issue 31): OVL005 assumed concurrency 1,
    # kv_load_failure_policy "fail" was not modelled.
    assert "OVL005" not in {f.code for f in checked.findings}
    if name.startswith("llmd-wide-ep-lws-vllm-deepseek-r1"):
        kvt = {r["name"]: r.get("kvTransfer") for r in doc["spec"]["roles"]}
        assert kvt["decode"] == {"connector": "nixl", "loadFailurePolicy": "fail"}
    if name == "llmd-wide-ep-lws-vllm-deepseek-r1-0528-coreweave":
        # HF_HUB_CACHE=/var/cache/huggingface on a hostPath (l.129, l.211, l.262).
        assert model["hub"] == {"cache": {"hostPath": {"path": "/mnt/local/hf-cache",
                                                       "type": "DirectoryOrCreate"}},
                                "mountPath": "/var/cache/huggingface"}


def test_an_all2all_backend_the_spec_does_not_name_is_not_a_schema_error():
    """llm-d's GB200 DeepSeek-V4 variant runs ``--all2all-backend flashinfer_nvlink_one_sided``
    (a vLLM 0.33.0 choice, vllm/config/parallel.py) that moegen's spec does not name: IMP005 says
    the all-to-all checks did not run, not SCH004 (an error on a manifest that runs)."""
    path = shared("reference", "corpus",
                  "llmd-lws-vllm-deepseek-v4-pro-gb200-oci-3p2d-dep8-dep16-flashinfer.yaml")
    r = read_inputs([path], opts=Options(gpu="GB200-186GB")).results[0]
    assert [f for f in r.findings if f.severity.value == "error"] == []
    assert any(f.code == "IMP005" and "flashinfer_nvlink_one_sided" in f.message
               for f in r.findings)


@pytest.mark.parametrize("name", ["llmd-deployment-vllm-gpt-oss-120b-optimized-baseline",
                                  "llmd-deployment-vllm-gpt-oss-120b-p2p-kv-cache-base"])
def test_an_aggregated_server_labelled_decode_is_unified(name):
    """llm-d labels every server that is not a prefill one ``llm-d.ai/role: decode``: a single
    Deployment with no prefill beside it and no PD connector (the p2p guide's OffloadingConnector
    with kv_both caches to CPU) is a unified server, not a decode missing its prefill (PD001 and
    PD002 were errors on manifests that run)."""
    path = shared("reference", "corpus", f"{name}.yaml")
    r = read_inputs([path], opts=Options(gpu="H200-141GB")).results[0]
    assert [x["mode"] for x in r.imported.data["spec"]["roles"]] == ["unified"]
    assert not {"PD001", "PD002"} & {f.code for f in r.findings}


def test_a_kv_connector_moegen_does_not_model_is_not_a_missing_one():
    """llm-d's TPU P/D guide runs vLLM's TPUConnector (kv_producer / kv_consumer): IMP005 says
    moegen does not model it; PD002 ("no kvTransfer: decode would recompute every prompt") was
    a false error on a manifest that runs."""
    path = shared("reference", "corpus", "llmd-deployment-vllm-qwen3-coder-480b-fp8-tpu7x-pd.yaml")
    r = read_inputs([path], opts=Options(gpu="H200-141GB")).results[0]
    assert "PD002" not in {f.code for f in r.findings}
    assert [f.location.line for f in r.findings
            if f.code == "IMP005" and "TPUConnector" in f.message] == [61, 211]
