"""The engine release an image runs, read through moegen's image table (issue 31 item 1):
generator/facts/images.py over generator/facts/data/images.json (tools/extract_images.py)."""

from __future__ import annotations

import json

import pytest

from generator.facts import controllers, images
from tests.helpers import ROOT


@pytest.mark.parametrize("image, engine, release", [
    # Dynamo's pins per release (docs/fern/pages/reference/general/compatibility.mdx, "Backend
    # engine pins per Dynamo release"): 1.3.0 (Jul 20, 2026) -> vLLM 0.23.0, SGLang 0.5.14; main's
    # pyproject.toml before its 1.4.0 bump had 0.25.1 / 0.5.15 (bumped after the branch cut).
    ("nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.0", "vllm", "0.23.0"),
    ("nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.0", "sglang", "0.5.14"),
    ("nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.9.0", "vllm", "0.14.1"),
    # review38 F6: 1.2.0 pins vllm[...]==0.20.1 and sglang[diffusion]==0.5.11 (the pyproject.toml
    # that declares version 1.2.0 says the same), NOT main's 0.21.0 / 0.5.12.post1 of May 28.
    ("nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.2.0", "vllm", "0.20.1"),
    ("nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.2.0", "sglang", "0.5.11"),
    # a patch release has its own row (same pins as 1.2.0)
    ("nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.2.1", "vllm", "0.20.1"),
    # llm-d's component table for v0.8.0 (llm-d/llm-d#1819): vLLM v0.23.0.
    ("ghcr.io/llm-d/llm-d-cuda:v0.8.0", "vllm", "0.23.0"),
    # Before the table: the vLLM commit llm-d's Dockerfile builds (v0.3.x: v0.11.0's,
    # llm-d/llm-d@v0.3.0:docker/Dockerfile.cuda:388) or docker/common-versions' pin (v0.9.0:
    # the v0.26.0 release commit 568afb3a, llm-d/llm-d#2206). NOT vLLM 0.3.0 or 0.9.0.
    ("ghcr.io/llm-d/llm-d-cuda:v0.3.0", "vllm", "0.11.0"),
    ("ghcr.io/llm-d/llm-d-gke:v0.3.0", "vllm", "0.11.0"),
    ("ghcr.io/llm-d/llm-d-cuda:v0.9.0", "vllm", "0.26.0"),
    # The engines' own images: the tag is the release (Docker Hub's implicit host dropped).
    ("docker.io/vllm/vllm-openai:v0.26.0", "vllm", "0.26.0"),
    ("vllm/vllm-openai:v0.33.0@sha256:" + "0" * 64, "vllm", "0.33.0"),
    ("docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64", "sglang", "0.5.5.post3"),
    ("public.ecr.aws/deep-learning-containers/vllm:0.26.0-gpu-py312-cu130-ubuntu22.04-ec2",
     "vllm", "0.26.0"),
    # A custom Dynamo build named after its engine.
    ("nvcr.io/x/vllm-runtime:my-build-vllm0.33.0", "vllm", "0.33.0"),
])
def test_the_table_reads_the_release(image, engine, release):
    read = images.read(image, engine)
    assert (read.engine, read.release) == (engine, release)
    assert read.source


@pytest.mark.parametrize("image", [
    # An llm-d release the table does not hold (NOT vLLM 0.7.0).
    "ghcr.io/llm-d/llm-d-cuda:v0.7.0",
    # An internal image versioned its own way.
    "registry.corp/ml/vllm-h20:v2.4.1",
    # Moving tags of an engine's own image.
    "docker.io/vllm/vllm-openai:nightly",
    "lmsysorg/sglang:dev",
    # Dynamo development builds (not a release the table holds).
    "nvcr.io/nvidia/ai-dynamo/sglang-runtime:1.3.0-glm-5.2-dev.1",
])
def test_an_image_the_table_does_not_hold_is_unknown(image):
    engine = "sglang" if "sglang" in image else "vllm"
    assert images.read(image, engine).release is None


def test_every_row_cites_its_source():
    doc = json.loads((ROOT / "generator" / "facts" / "data" / "images.json").read_text())
    for row in doc["images"]:
        assert row["engine"] in ("vllm", "sglang") and row["release"][0].isdigit(), row
        src = row["source"]
        assert "#" in src or (src.count("@") == 1 and src.rsplit(":", 1)[-1].isdigit()), src
    for p in doc["presets"]:
        assert p["source"].startswith(f"kserve/kserve@{p['release']}:config/llmisvcconfig/")


def test_the_table_agrees_with_the_controller_facts():
    """Dynamo 1.4.0's pins, read twice (facts/data/controllers.json ``bundled`` and the image
    table), are the same: vLLM 0.26.0, SGLang 0.5.16 (ai-dynamo/dynamo@e147cee:pyproject.toml)."""
    for engine in ("vllm", "sglang"):
        image = f"nvcr.io/nvidia/ai-dynamo/{engine}-runtime:1.4.0"
        assert images.read(image, engine).release == \
            controllers.value("dynamo", "1.4.0", "bundled", engine)


def test_kserve_presets_per_release():
    """KServe's presets run llm-d-cuda v0.4.0 (v0.17.0), v0.6.0 (v0.18.x, v0.19.0), v0.8.0
    (v0.20.0): kserve/kserve@<tag>:config/llmisvcconfig/config-llm-decode-template.yaml."""
    assert images.preset_image("kserve", "v0.17.0")[0] == "ghcr.io/llm-d/llm-d-cuda:v0.4.0"
    assert images.preset_image("kserve", "0.19.0")[0] == "ghcr.io/llm-d/llm-d-cuda:v0.6.0"
    assert images.preset_image("kserve")[0] == "ghcr.io/llm-d/llm-d-cuda:v0.8.0"


# --- the importer: the release a manifest runs, and findings at an assumed one -------------

from generator.importer import Options  # noqa: E402
from generator.inputs import read_inputs  # noqa: E402
from tests.helpers import shared  # noqa: E402

HOPPER = "dynamo-dgd-deepseek-r1-vllm-disagg-hopper-16gpu.yaml"


def _lws(tmp_path, image: str, annotations: str = "", extra: str = ""):
    f = tmp_path / "lws.yaml"
    f.write_text(
        "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\n"
        f"metadata: {{name: r1{annotations}}}\n"
        "spec:\n  leaderWorkerTemplate:\n    size: 1\n    workerTemplate:\n      spec:\n"
        f"        containers:\n        - name: vllm\n          image: {image}\n"
        "          command: [vllm, serve]\n"
        "          args: [/models/DeepSeek-R1, --tensor-parallel-size, '8', --max-model-len,"
        f" '8192'{extra}]\n          resources: {{limits: {{nvidia.com/gpu: 8}}}}\n"
        "          volumeMounts: [{name: w, mountPath: /models}]\n"
        "        volumes: [{name: w, persistentVolumeClaim: {claimName: w}}]\n")
    return read_inputs([f], opts=Options(gpu="H200-141GB")).results[0]


def test_an_llm_d_image_is_not_read_as_the_engine_release(tmp_path):
    """ghcr.io/llm-d/llm-d-cuda:v0.7.0 is llm-d 0.7.0, not vLLM 0.7.0: unknown to the table,
    so IMP008 says how to state the release and the spec is checked at the newest release."""
    r = _lws(tmp_path, "ghcr.io/llm-d/llm-d-cuda:v0.7.0")
    imp008 = [f for f in r.findings if f.code == "IMP008"]
    assert len(imp008) == 1 and "moegen.dev/engine-version" in imp008[0].hint
    assert "--engine-version" in imp008[0].hint
    assert r.imported.data["spec"]["engine"]["version"] == "0.33.0"
    assert r.imported.assumed == "vLLM 0.33.0"
    assert not [f for f in r.findings if f.code in ("VER001", "ENG002")]


def test_the_annotation_states_the_release(tmp_path):
    r = _lws(tmp_path, "registry.corp/ml/vllm-h20:v2.4.1",
             ", annotations: {moegen.dev/engine-version: '0.26.0'}")
    assert r.imported.data["spec"]["engine"]["version"] == "0.26.0"
    assert r.imported.assumed is None
    assert "IMP008" not in {f.code for f in r.findings}


def test_a_release_moegen_has_no_facts_for_is_judged_at_the_nearest(tmp_path):
    """vLLM 0.8.5 (GKE's sample) precedes moegen's first release, 0.11.0: judged there, the
    spec names 0.11.0's own image, and no VER001 error on a manifest that runs."""
    r = _lws(tmp_path, "vllm/vllm-openai:v0.8.5")
    spec = r.imported.data["spec"]["engine"]
    assert (spec["version"], spec["image"]) == ("0.11.0", "vllm/vllm-openai:v0.11.0")
    assert r.imported.assumed == "vLLM 0.11.0"
    (imp008,) = [f for f in r.findings if f.code == "IMP008"]
    assert "0.8.5" in imp008.message and "0.11.0" in imp008.message
    assert "VER001" not in {f.code for f in r.findings}


def test_release_dependent_errors_on_an_assumed_release_are_warnings(tmp_path):
    """Dynamo's Hopper recipe: decode ``--max-num-seqs 512`` without --max-num-batched-tokens
    under DeepEP low-latency + DP: vLLM >= 0.20.0 defaults the batched tokens to 256 and refuses
    (SRV001, an error: the image, vllm-runtime:1.3.0, bundles vLLM 0.23.0). The same manifest
    on an image whose release moegen cannot read: SRV001 is a warning naming the release it
    assumed."""
    src = shared("reference", "manifests", HOPPER)
    ran = read_inputs([src], opts=Options(gpu="H200-141GB")).results[0]
    assert [f.severity.value for f in ran.findings if f.code == "SRV001"] == ["error"]
    assert ran.imported.data["spec"]["engine"]["version"] == "0.23.0"
    custom = tmp_path / HOPPER
    custom.write_text(src.read_text().replace("nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.0",
                                              "registry.corp/ml/vllm-h20:v2.4.1"))
    r = read_inputs([custom], opts=Options(gpu="H200-141GB")).results[0]
    (srv,) = [f for f in r.findings if f.code == "SRV001"]
    assert srv.severity.value == "warning" and "judged at vLLM" in srv.message
    assert not [f for f in r.findings if f.severity.value == "error"]


def test_an_internal_image_in_a_spec_is_a_notice_not_an_error(tmp_path):
    from generator import pipeline
    from tests.helpers import EXAMPLES
    spec = tmp_path / "s.yaml"
    text = (EXAMPLES / "s1-16xh20-pd.yaml").read_text()
    import re
    spec.write_text(re.sub(r"image: .*", "image: registry.corp/ml/vllm-h20:v2.4.1", text, count=1))
    found = pipeline.check(spec).findings
    assert "ENG002" not in {f.code for f in found}
    (eng007,) = [f for f in found if f.code == "ENG007"]
    assert eng007.severity.value == "notice"


def test_which_findings_depend_on_the_release():
    """A release-dependent error at an assumed release becomes a warning; what holds at every
    release (pods, pools, the weights mount, a prefill/decode pair) stays as it is."""
    from generator.checks.registry import release_dependent
    assert release_dependent("SRV001") and release_dependent("ENG004")
    assert release_dependent("LAY005") and release_dependent("NET032")
    assert not release_dependent("POD002") and not release_dependent("PD002")
    assert not release_dependent("MOD005") and not release_dependent("IMP009")
