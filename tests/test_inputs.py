"""Many inputs in one process (generator/inputs.py): how deployments group across inputs, and
what is reported for files that cannot be read, that hold nothing to check, or whose engines run
under kinds moegen does not read."""

from __future__ import annotations

import json
import shutil

import yaml

from generator.cli import run
from generator.inputs import read_inputs, summary_line
from tests.helpers import ROOT, shared, vllm_deployment

GOLDEN = ROOT / "tests" / "golden"
S1_TREE = GOLDEN / "s1-16xh20-pd" / "expected"
S1_IGW = GOLDEN / "s1-inference-gateway" / "expected"
S1_KSERVE = ROOT / "tests" / "golden-targets" / "kserve-s1" / "expected"


def _roles(batch) -> list[list[str]]:
    return [[r["name"] for r in c.imported.data["spec"]["roles"]] for c in batch.results]


def test_a_copied_tree_is_a_second_deployment_not_more_roles(tmp_path):
    # gen import out/r1 r1-copy: two deployments of two roles each (not prefill, prefill-1,
    # decode, decode-3): the same LeaderWorkerSets (group, kind, namespace, name) twice.
    copy = tmp_path / "r1-copy-staging"
    shutil.copytree(S1_TREE, copy)
    batch = read_inputs([S1_TREE, copy])
    assert _roles(batch) == [["prefill", "decode"], ["prefill", "decode"]]
    assert batch.ok, batch.all_findings()


def test_two_renders_of_one_spec_are_two_deployments():
    # The inference-gateway render's objects (InferencePool, picker) are not read into the
    # plain render's deployment (RTR012 belongs to the gateway render only), and a KServe
    # render beside a Kubernetes render keeps its own ports (no RTR005).
    batch = read_inputs([S1_TREE, S1_IGW])
    assert _roles(batch) == [["prefill", "decode"], ["prefill", "decode"]]
    rtr012 = {f.location.file for f in batch.all_findings() if f.code == "RTR012"}
    assert rtr012 == {str(S1_IGW / "decode-lws.yaml")}
    both = read_inputs([S1_IGW, S1_KSERVE])
    assert len(both.results) == 2 and both.ok, both.all_findings()
    assert not [f for f in both.all_findings() if f.code == "RTR005"]


def test_prefill_and_decode_in_two_files_are_still_one_deployment(tmp_path):
    # The documented feature: a deployment's roles in different inputs combine, as long as
    # they repeat no object; given file by file, two trees still split by directory.
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(S1_TREE, a)
    shutil.copytree(S1_TREE, b)
    one = read_inputs([a / "prefill-lws.yaml", a / "decode-lws.yaml", a / "kustomization.yaml"])
    assert _roles(one) == [["prefill", "decode"]]
    files = sorted(str(p) for p in tmp_path.glob("*/*.yaml"))
    batch = read_inputs([type(a)(f) for f in files])
    assert _roles(batch) == [["prefill", "decode"], ["prefill", "decode"]]
    assert [sorted({f.rsplit("/", 2)[1] for f in c.imported.files}) for c in batch.results] \
        == [["a"], ["b"]]


def test_the_readme_renders_beside_the_checkout_validate(tmp_path):
    # The README's commands render into out/ (a plain, a gateway and a KServe render of S1):
    # validated together, file by file as the pre-commit hook passes them, each is its own.
    out = tmp_path / "out"
    for name, tree in (("s1", S1_TREE), ("igw", S1_IGW), ("s1-kserve", S1_KSERVE)):
        shutil.copytree(tree, out / name)
    files = sorted(str(p) for p in out.rglob("*.yaml"))
    assert run(["validate", *files]) == 0
    assert run(["validate", str(out / "s1"), str(out / "igw"), str(out / "s1-kserve")]) == 0


def test_broken_yaml_that_names_no_engine_is_a_finding(tmp_path, capsys):
    # A policy check must fail on it: given explicitly or found in a directory (LOAD008 at the
    # line the parser stopped), exit 1, not "checked nothing; 1 file skipped".
    broken = tmp_path / "deploy" / "f.yaml"
    broken.parent.mkdir()
    broken.write_text("apiVersion: x\nkind: LeaderWorkerSet\nspec: {\n")
    for arg in (broken, broken.parent):
        batch = read_inputs([arg])
        assert [(f.code, f.location.line) for f in batch.all_findings()] == [("LOAD008", 4)]
        assert not batch.ok and batch.skipped == []
        assert run(["validate", str(arg)]) == 1
        assert "Traceback" not in capsys.readouterr().err
    dup = tmp_path / "dup.yaml"
    dup.write_text("a: 1\na: 2\n")
    assert [f.code for f in read_inputs([dup]).all_findings()] == ["LOAD009"]


def test_templates_and_yaml_moegen_refuses_for_itself_are_still_skipped(tmp_path):
    # A Helm template is YAML only once rendered; anchors are valid YAML other tools use (a
    # GitLab CI file): neither is moegen's to judge.
    helm = tmp_path / "deployment.yaml"
    helm.write_text("spec:\n  replicas: {{ .Values.replicas }}\n  x: {\n")
    ci = tmp_path / ".gitlab-ci.yaml"
    ci.write_text(".base: &base\n  image: python\njob:\n  <<: *base\n")
    batch = read_inputs([helm, ci])
    assert batch.ok and batch.all_findings() == []
    assert batch.skipped == sorted([str(helm), str(ci)])


HUB = vllm_deployment("deepseek-ai/DeepSeek-R1", '--tensor-parallel-size, "8"')


def test_import_fails_when_validate_of_its_spec_would(tmp_path, capsys):
    # vLLM 0.8.5 (no facts: judged at 0.11.0, the nearest release) with an option 0.11.0's parser
    # does not have: on the manifest ENG004 is a warning (an assumed release, IMP008); the
    # written spec says engine.version 0.11.0, where it is an error. gen import exits 1 as gen
    # validate of its spec does.
    manifest = tmp_path / "r1.yaml"
    manifest.write_text(vllm_deployment("deepseek-ai/DeepSeek-R1",
                                        '--tensor-parallel-size, "8", --fail-on-environ-validation',
                                        models_pvc=True).replace("v0.33.0", "v0.8.5"))
    assert run(["validate", str(manifest)]) == 0
    assert "warning ENG004" in capsys.readouterr().err
    spec = tmp_path / "r1-imported.yaml"
    assert run(["import", str(manifest), "-o", str(spec)]) == 1
    assert f"{spec}:" in capsys.readouterr().err
    assert run(["validate", str(spec)]) == 1 and "error ENG004" in capsys.readouterr().err


def test_a_hub_download_imports_as_model_hub(tmp_path, capsys):
    # Weights from the Hugging Face Hub into the container's filesystem: model.hub with no cache
    # (MOD006: downloaded again by every new pod), and the spec validates (issue 31: it used to
    # need model.volume, MOD005).
    manifest = tmp_path / "r1-lws2.yaml"
    manifest.write_text(HUB)
    spec = tmp_path / "r1-imported.yaml"
    assert run(["import", str(manifest), "-o", str(spec)]) == 0
    assert "MOD006" in capsys.readouterr().err
    assert yaml.safe_load(spec.read_text())["spec"]["model"]["hub"] == {}
    assert run(["validate", str(spec)]) == 0


def test_pool005_hint_names_the_pools_own_gpu_label(tmp_path):
    from generator import pipeline
    from tests.helpers import EXAMPLES
    # An H200 pool is told NVIDIA-H200 (not NVIDIA-H20); a GPU whose label value moegen has not
    # seen gets no invented value.
    text = (EXAMPLES / "s1-16xh20-pd.yaml").read_text()
    text = text.replace("gpu: H20-96GB", "gpu: H200-141GB").replace("gpu: H20-141GB",
                                                                     "gpu: H800-80GB")
    text = "\n".join(ln for ln in text.splitlines() if "nodeSelector:" not in ln) + "\n"
    spec = tmp_path / "s.yaml"
    spec.write_text(text)
    found = [f for f in pipeline.check(spec).findings if f.code == "POOL005"]
    hints = {f.path.rsplit(".", 1)[-1]: f.hint for f in found}
    assert "{nvidia.com/gpu.product: NVIDIA-H200}" in hints["prefill-h20"]
    assert "NVIDIA-H" not in hints["decode-h20"] and "H800-80GB nodes" in hints["decode-h20"]


def test_engine_release_findings_point_at_the_image_line(tmp_path):
    # An image of a release moegen has no facts for (vLLM 0.6.9: judged at 0.11.0, IMP008, not
    # VER001 on a manifest that runs): at the image, not at 1:1.
    manifest = tmp_path / "sts.yaml"
    manifest.write_text(HUB.replace("vllm/vllm-openai:v0.33.0", "vllm/vllm-openai:v0.6.9"))
    found = read_inputs([manifest]).all_findings()
    assert "VER001" not in {f.code for f in found}
    imp008 = [f for f in found if f.code == "IMP008"]
    assert [(f.location.line, f.location.column) for f in imp008] == [(13, 9)]


def test_one_directory_of_several_renders_splits_by_directory(tmp_path):
    # gen validate out/ (the README's renders side by side): each subdirectory its own
    # deployment, reading its own objects (the KServe render does not get the gateway
    # render's InferencePool: no RTR005) and its own env ConfigMaps.
    out = tmp_path / "out"
    for name, tree in (("s1", S1_TREE), ("igw", S1_IGW), ("s1-kserve", S1_KSERVE)):
        shutil.copytree(tree, out / name)
    batch = read_inputs([out])
    assert sorted(_roles(batch)) == [["prefill", "decode"]] * 3
    assert batch.ok, batch.all_findings()
    # RST011 (a notice, the restart model) on the KServe tree only: it runs KServe's vLLM 0.26.0
    # preset image, whose NIXL moegen does not know; vLLM 0.33.0 (s1, igw) requires NIXL >= 1.5.0,
    # which has the restart race's fix.
    assert {f.code for f in batch.all_findings()} == {"RTR012", "RST011"}


def test_a_kind_that_is_not_a_string_is_a_finding(tmp_path, capsys):
    """`kind: []` (found by tests/test_fuzz.py): the schema's findings, exit 1, no traceback;
    the same in a document that is not moegen's is skipped (and, alone, checks nothing:
    INP001 unless --allow-empty)."""
    from generator.cli import run
    spec = tmp_path / "spec.yaml"
    spec.write_text("apiVersion: moegen.dev/v1alpha1\nkind: []\nmetadata: {name: x}\nspec: {}\n")
    assert run(["validate", str(spec)]) == 1
    assert "SCH005 $.kind: [] is not of type string" in capsys.readouterr().err
    other = tmp_path / "other.yaml"
    other.write_text("apiVersion: v1\nkind: [1]\nmetadata: {name: x}\n")
    assert run(["validate", "--allow-empty", str(other)]) == 0
    assert run(["validate", str(other)]) == 1
    assert "INP001" in capsys.readouterr().err


# -- nothing passes unread (issue 31) ------------------------------------------------------------


def test_inputs_with_nothing_to_check_are_an_error(tmp_path, capsys):
    """gen validate empty.yaml, an empty directory, or only a values file: INP001, exit 1 (it
    said "checked nothing" and exited 0); --allow-empty (the pre-commit hook) exits 0."""
    empty, nothing, values = tmp_path / "empty.yaml", tmp_path / "none", tmp_path / "values.yaml"
    empty.write_text("")
    nothing.mkdir()
    values.write_text("replicaCount: 2\n")
    for arg, read in ((empty, "1 file read; 1 neither a spec nor a serving manifest"),
                      (nothing, "0 files read"),
                      (values, "1 file read; 1 neither a spec nor a serving manifest")):
        assert run(["validate", str(arg), "--format", "json"]) == 1
        doc = json.loads(capsys.readouterr().out)
        assert doc["ok"] is False and [(f["code"], f["severity"], f["file"], f["message"])
                                       for f in doc["findings"]] == [
            ("INP001", "error", str(arg), "nothing was checked: no InferenceDeployment and no "
             f"serving workload moegen reads in the inputs ({read})")]
        assert run(["validate", str(arg), "--allow-empty"]) == 0
        assert "checked nothing" in capsys.readouterr().err
    # A spec beside them: something was checked.
    assert run(["validate", str(empty), str(ROOT / "examples" / "s1-16xh20-pd.yaml")]) == 0


def test_skip_counts_do_not_depend_on_how_files_are_passed(tmp_path):
    """A rendered tree with a values file beside it, given as a directory or file by file: the
    values file is skipped either way, the tree's Services, PDBs, router objects,
    kustomization.yaml and the kustomizeconfig.yaml it names are read with the manifests. Before,
    the directory skipped none (its input held manifests) and the files 11 (each its own input)."""
    tree = tmp_path / "out"
    shutil.copytree(S1_TREE, tree)
    (tree / "values.yaml").write_text("replicaCount: 2\n")
    files = sorted(tree.rglob("*.yaml"))
    assert len(files) == 15   # 14 rendered (2 NetworkPolicies) + values.yaml (env files: not YAML)
    by_dir, by_file = read_inputs([tree]), read_inputs(files)
    assert by_dir.skipped == by_file.skipped == [str(tree / "values.yaml")]
    assert summary_line(by_dir) == summary_line(by_file) == (
        "checked 1 deployment from manifests; 1 file skipped (neither specs nor serving "
        "manifests): 0 errors, 0 warnings")
    # Without serving manifests, the same objects are skipped, passed either way.
    objects = [f for f in files if f.name.startswith("router-")]
    alone = read_inputs(objects)
    assert alone.skipped == sorted(map(str, objects)) and alone.results == []


CORPUS_UNREAD = {   # file -> (line, path) of the INP002 notice, the engine container
    "aibrix-rayclusterfleet-vllm-deepseek-r1-tp16-huggingface.yaml":
        (88, "$.spec.template.spec.headGroupSpec.template.spec.containers[0]"),
    "kthena-modelbooster-vllm-qwen3-coder-30b-a3b.yaml": (23, "$.spec.backend.workers[0]"),
    "kthena-modelserving-vllm-ascend-deepseek-v2-lite-pd.yaml":
        (49, "$.spec.template.roles[0].entryTemplate.spec.containers[1]"),
    "ome-clusterservingruntime-sglang-deepseek-v3.yaml": (42, "$.spec.engineConfig.runner"),
}


def test_engines_under_kinds_moegen_does_not_read_are_notices(capsys):
    """The corpus's AIBrix RayClusterFleet (vllm serve in the Ray head's bash -lc), kthena
    ModelBooster (an image, the controller writes the command) and ModelServing (kthena-engine
    image tagged vllm-ascend, no command) and OME ClusterServingRuntime (sglang.launch_server in
    a runner): each one INP002 notice at its engine container, the files counted as unread, and
    alone they check nothing (INP001, exit 1). Before: 'checked nothing; 4 files skipped', exit
    0."""
    files = [shared("reference", "corpus", name) for name in CORPUS_UNREAD]
    batch = read_inputs(files, require=True)
    got = [(f.code, f.severity.value, f.location.file.rsplit("/", 1)[1], f.location.line, f.path)
           for f in batch.all_findings()]
    assert got == [("INP001", "error", files[0].name, 0, "$")] + sorted(
        ("INP002", "notice", name, line, path) for name, (line, path) in CORPUS_UNREAD.items())
    notice = next(f for f in batch.all_findings() if f.code == "INP002")
    assert notice.message == (
        "RayClusterFleet deepseek-r1-671b (orchestration.aibrix.ai/v1alpha1) runs vLLM "
        "(aibrix/vllm-openai:v0.7.3.self.post1), a kind moegen does not read: its engine flags, "
        "parallel layout, HBM sizing, pods, network and probes were not checked")
    assert batch.unread == sorted(map(str, files)) and batch.skipped == []
    assert summary_line(batch) == ("checked nothing; 4 files with engines moegen does not read "
                                   "(not checked): 1 error, 0 warnings, 4 notices")
    assert run(["validate", *map(str, files)]) == 1
    capsys.readouterr()
    # gen import has nothing to import: the notice says why, then the usage error (exit 2).
    assert run(["import", str(files[0])]) == 2
    err = capsys.readouterr().err
    assert "notice INP002" in err and err.endswith(
        "gen: error: no vLLM or SGLang workload of a kind moegen reads found in the input "
        "(1 files read)\n")


POD = """apiVersion: v1
kind: Pod
metadata: {name: r1-debug}
spec:
  containers:
  - name: vllm
    image: vllm/vllm-openai:v0.33.0
    args: [deepseek-ai/DeepSeek-R1, --tensor-parallel-size, "8"]
---
apiVersion: batch/v1
kind: Job
metadata: {name: bench}
spec:
  template:
    spec:
      containers:
      - {name: bench, image: vllm/vllm-openai:v0.33.0, command: [vllm, bench, serve]}
      - name: server
        image: lmsysorg/sglang:v0.5.23
        command: [python3, -m, sglang.launch_server, --model-path, /models/r1]
---
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: r1-kn}
spec:
  template:
    spec:
      containers:
      - {image: "registry.corp/ml/runner:1", command: [sh, -c, "exec vllm serve /models/r1"]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: router}
spec:
  template:
    spec:
      containers:
      - {name: router, image: lmsysorg/sglang-router:v0.2.1}
"""


def test_bare_pods_jobs_and_knative_services_are_found(tmp_path):
    """Beside a Deployment moegen reads: a bare Pod on the vllm-openai entrypoint, a Job whose
    second container starts SGLang (the first runs vllm bench, not a server), a Knative Service
    whose shell starts vllm serve: one notice each; a DaemonSet running a router image is no
    engine."""
    f = tmp_path / "mixed.yaml"
    f.write_text(vllm_deployment("deepseek-ai/DeepSeek-R1", '--tensor-parallel-size, "8"') + "---\n"
                 + POD)
    batch = read_inputs([f])
    notices = [(f.location.line, f.path, f.message.split(", a kind")[0])
               for f in batch.all_findings() if f.code == "INP002"]
    # The Deployment is lines 1-18, "---" 19; each notice is at its container's "- " line.
    assert notices == [
        (23, "$.spec.containers[0]", "Pod r1-debug (v1) runs vLLM (vllm/vllm-openai:v0.33.0)"),
        (35, "$.spec.template.spec.containers[1]",
         "Job bench (batch/v1) runs SGLang (lmsysorg/sglang:v0.5.23)"),
        (46, "$.spec.template.spec.containers[0]",
         "Service r1-kn (serving.knative.dev/v1) runs vLLM (registry.corp/ml/runner:1)")]
    assert len(batch.results) == 1 and batch.unread == [] and batch.skipped == []


def test_a_manifest_on_hub_weights_is_still_sized(tmp_path):
    """DeepSeek-R1 (671B parameters in FP8: > 600 GiB) on one H200, weights from the Hub: the
    spec form's MOD005 (no model.volume), not reported on manifests (IMP010 said it then), kept
    the role from the sizing phase, so this passed green (only IMP010). Now SIZ001, beside
    IMP017 (no probe) and MOD006 (the Hub download lands in the container's filesystem: a notice
    on a manifest, a cost and not a defect); IMP029: the Deployment imports as a StatefulSet,
    which rolls without its surge."""
    f = tmp_path / "tp1.yaml"
    f.write_text(vllm_deployment("deepseek-ai/DeepSeek-R1", '--tensor-parallel-size, "1"')
                 .replace("nvidia.com/gpu: 8", "nvidia.com/gpu: 1"))
    batch = read_inputs([f])
    assert [(x.code, x.severity.value) for x in batch.all_findings()] == [
        ("SIZ001", "error"), ("IMP029", "notice"), ("IMP017", "warning"),
        ("MOD006", "notice")]
    # 671e9 parameters x 1 byte (FP8) / 2^30 = 625 GiB at least, against 141 GB of HBM.
    weights = float(batch.all_findings()[0].message.split("weights ")[1].split(" ")[0])
    assert weights >= 671e9 / 2**30
