"""The platform targets (spec.target: kserve, rbg, dynamo, aibrix): golden trees, every object
against its CRD, what each renders and refuses on every example, and the controllers' facts.

Golden cases: ``tests/golden-targets/<case>/case.yaml`` (``spec:`` an example, ``overlays:``
files of the case directory, ``target:`` the ``--target`` override when the overlays do not
set spec.target) with the expected tree in ``expected/``; refresh with
``MOEGEN_UPDATE_GOLDEN=1 pytest tests/test_targets.py`` and review the diff.
"""

from __future__ import annotations

import copy
import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from generator import pipeline
from generator.cli import run
from generator.emit import diff_tree, write_tree
from generator.facts import controllers
from tests.helpers import EXAMPLES, K8S_VERSION, ROOT, example_specs, shared, validate_schema
from tests.test_manifests_valid import _crd_schema as _k8s_crd_schema
from tests.test_manifests_valid import _strict

GOLDEN = ROOT / "tests" / "golden-targets"
PLATFORMS = ("kserve", "rbg", "dynamo", "aibrix")


def target_cases() -> list[tuple[str, Path, list[Path], str | None]]:
    """(name, spec, overlays, --target) of every golden target case."""
    out = []
    for case in sorted(GOLDEN.glob("*/case.yaml")):
        meta = yaml.safe_load(case.read_text())
        out.append((case.parent.name, ROOT / meta["spec"],
                    [case.parent / o for o in meta.get("overlays", [])], meta.get("target")))
    return out


CASES = target_cases()
IDS = [c[0] for c in CASES]


@functools.cache
def render_case(name: str) -> tuple[pipeline.Checked, object, dict[str, str]]:
    """Check and render one golden target case (fails on any error)."""
    _, spec, overlays, target = next(c for c in CASES if c[0] == name)
    checked = pipeline.check(spec, overlays, target)
    errors = [f for f in checked.findings if f.severity.value == "error"]
    assert not errors, "\n".join(map(str, errors))
    plan, files = pipeline.render(checked)
    return checked, plan, files


def objects(files: dict[str, str]) -> list[dict]:
    """Every object of a target's output (the kustomization excluded)."""
    return [yaml.safe_load(t) for p, t in files.items()
            if p.endswith(".yaml") and p != "kustomization.yaml"]


@pytest.mark.parametrize("name", IDS)
def test_target_golden_tree(name: str) -> None:
    _, _, files = render_case(name)
    expected = GOLDEN / name / "expected"
    if os.environ.get("MOEGEN_UPDATE_GOLDEN"):
        if expected.exists():
            shutil.rmtree(expected)
        write_tree(expected, files)
    assert expected.is_dir(), f"no golden tree for {name}: run with MOEGEN_UPDATE_GOLDEN=1"
    drift = diff_tree(expected, files)
    assert not drift, "\n".join(drift)


def test_every_platform_has_golden_s1_and_s3() -> None:
    """Each platform target has an S1 case and an S3 case (or the S3 example that fits)."""
    for platform in PLATFORMS:
        names = [n for n in IDS if n.startswith(f"{platform}-")]
        assert any("-s1" in n for n in names) and any("-s3" in n for n in names), platform


# --- CRDs -------------------------------------------------------------------------------------

#: Custom resources of the platform targets -> (CRD file in shared/reference/crds, version).
PLATFORM_CRDS = {
    "LLMInferenceService": ("serving.kserve.io_llminferenceservices.yaml", "v1alpha2"),
    "RoleBasedGroup": ("workloads.x-k8s.io_rolebasedgroups.yaml", "v1alpha2"),
    "CoordinatedPolicy": ("workloads.x-k8s.io_coordinatedpolicies.yaml", "v1alpha2"),
    "DynamoGraphDeployment": ("nvidia.com_dynamographdeployments.yaml", "v1beta1"),
    "StormService": ("orchestration.aibrix.ai_stormservices.yaml", "v1alpha1"),
}
#: The kubernetes target's custom resources the platform targets keep as plain objects.
KEPT_CRDS = ("PodMonitor", "ServiceMonitor", "PrometheusRule", "InferencePool", "HTTPRoute")


@functools.cache
def platform_schema(kind: str) -> dict:
    file, version = PLATFORM_CRDS[kind]
    crd = yaml.safe_load(shared("reference", "crds", file).read_text())
    v = next(v for v in crd["spec"]["versions"] if v["name"] == version)
    return _strict(copy.deepcopy(v["schema"]["openAPIV3Schema"]))


def _pod_templates(obj: dict) -> list[tuple[str, dict]]:
    """The Kubernetes PodTemplateSpecs (or PodSpecs, as templates) inside a platform object."""
    kind, spec = obj["kind"], obj["spec"]
    if kind == "LLMInferenceService":
        works = [spec] + ([spec["prefill"]] if "prefill" in spec else [])
        return [(f"{w}-{k}", {"spec": work[k]}) for w, work in enumerate(works)
                for k in ("template", "worker") if k in work]
    if kind == "RoleBasedGroup":
        out = []
        for role in spec["roles"]:
            pattern = role.get("leaderWorkerPattern") or role.get("standalonePattern")
            out.append((role["name"], pattern["template"]))
            if "leaderTemplatePatch" in pattern:
                out.append((f"{role['name']}-leader", pattern["leaderTemplatePatch"]))
        return out
    if kind == "DynamoGraphDeployment":
        return [(c["name"], c["podTemplate"]) for c in spec["components"]
                if c["type"] != "frontend"]
    if kind == "StormService":
        return [(r["name"], r["template"]) for r in spec["template"]["spec"]["roles"]]
    return []


def _validate(obj: dict) -> None:
    """``obj`` against its CRD (strict: no field the API server would prune), its pod templates
    against Kubernetes' PodTemplate schema, every other object against Kubernetes' own."""
    kind = obj["kind"]
    if kind in PLATFORM_CRDS:
        validate_schema(obj, platform_schema(kind))
        for which, template in _pod_templates(obj):
            kubernetes_validate.validate(
                {"apiVersion": "v1", "kind": "PodTemplate",
                 "metadata": {"name": f"{obj['metadata']['name']}-{which}".lower(),
                              "namespace": "x"}, "template": template},
                K8S_VERSION, strict=True)
    elif kind in KEPT_CRDS:
        validate_schema(obj, _k8s_crd_schema(kind))
    else:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


@pytest.mark.parametrize("name", IDS)
def test_every_object_validates_against_its_crd(name: str) -> None:
    _, _, files = render_case(name)
    objs = objects(files)
    assert any(o["kind"] in PLATFORM_CRDS for o in objs)
    for obj in objs:
        _validate(obj)


@pytest.mark.parametrize("name", IDS)
def test_cel_rules_of_the_crds_hold(name: str) -> None:
    """The CRDs' x-kubernetes-validations (CEL, which jsonschema does not run) that the
    rendered objects touch: KServe replicas XOR scaling and data with dataLocal; RBG one
    pattern per role; Dynamo unique component names and at most one epp."""
    _, _, files = render_case(name)
    for obj in objects(files):
        spec = obj.get("spec", {})
        if obj["kind"] == "LLMInferenceService":
            for work in [spec] + ([spec["prefill"]] if "prefill" in spec else []):
                assert not ("replicas" in work and "scaling" in work)
                par = work.get("parallelism", {})
                assert ("data" in par) == ("dataLocal" in par)
                if "worker" in work:   # the webhook: a worker needs data or pipeline parallelism
                    assert "data" in par or "pipeline" in par
        elif obj["kind"] == "RoleBasedGroup":
            for role in spec["roles"]:
                patterns = {"standalonePattern", "leaderWorkerPattern"} & set(role)
                assert len(patterns) == 1, role["name"]
        elif obj["kind"] == "DynamoGraphDeployment":
            names = [c["name"].lower() for c in spec["components"]]
            assert len(names) == len(set(names))
            assert sum(c["type"] == "epp" for c in spec["components"]) <= 1


def test_crd_validation_can_fail() -> None:
    """The strict CRD check rejects a misspelled field of each platform object."""
    _, _, files = render_case("kserve-s1")
    obj = yaml.safe_load(files["llminferenceservice.yaml"])
    bad = copy.deepcopy(obj)
    bad["spec"]["parallelism"]["dataLocl"] = 8
    with pytest.raises(jsonschema.ValidationError):
        _validate(bad)
    _, _, files = render_case("rbg-s1")
    bad = yaml.safe_load(files["rolebasedgroup.yaml"])
    bad["spec"]["roles"][1]["leaderWorkerPattern"]["sizee"] = 2
    with pytest.raises(jsonschema.ValidationError):
        _validate(bad)
    _, _, files = render_case("dynamo-s1")
    bad = yaml.safe_load(files["dynamographdeployment.yaml"])
    bad["spec"]["components"][2]["multinode"]["nodeCount"] = "two"
    with pytest.raises(jsonschema.ValidationError):
        _validate(bad)
    _, _, files = render_case("aibrix-s1")
    bad = yaml.safe_load(files["stormservice.yaml"])
    bad["spec"]["template"]["spec"]["roles"][1]["podGroupSize"] = 0   # minimum 1
    with pytest.raises(jsonschema.ValidationError):
        _validate(bad)


@pytest.mark.parametrize("name", [n for n in IDS if n.startswith("dynamo-")])
def test_dynamo_uses_only_fields_of_its_release(name: str) -> None:
    """The CRD in shared/ is Dynamo's main (newer than the 1.4.0 branch point): the fields
    moegen renders must exist at the release (the extracted CRD property lists)."""
    checked, _, files = render_case(name)
    rel = controllers.normalise("dynamo", checked.spec.spec.target.version)
    props = controllers.value("dynamo", rel, "crd")["properties"]
    obj = yaml.safe_load(files["dynamographdeployment.yaml"])
    assert set(obj["spec"]) <= set(props["spec"])
    for c in obj["spec"]["components"]:
        assert set(c) <= set(props["component"]), c["name"]
        assert set(c.get("multinode", {})) <= set(props["multinode"])
        assert set(c.get("compilationCache", {})) <= set(props["compilationCache"])


@pytest.mark.skipif(shutil.which("kubectl") is None,
                    reason="kubectl (with built-in kustomize) is not installed on this machine")
@pytest.mark.parametrize("name", IDS)
def test_target_output_is_a_kustomize_base(name: str, tmp_path: Path) -> None:
    _, plan, files = render_case(name)
    write_tree(tmp_path / "base", files)
    built = subprocess.run(["kubectl", "kustomize", str(tmp_path / "base")], capture_output=True,
                           text=True, check=False)
    assert built.returncode == 0, built.stderr
    docs = [d for d in yaml.safe_load_all(built.stdout) if d]
    assert len(docs) == len(files) - 1
    assert {d["metadata"]["namespace"] for d in docs} == {plan.namespace}


# --- every example on every platform ----------------------------------------------------------

#: What each platform refuses of the shipped examples (error codes), derived by hand:
#: KServe's presets run vLLM only (the S3 examples are SGLang), as non-root (the vLLM examples
#: name no runAsUser), and vLLM 0.33.0 refuses their data-parallel leader's start rank (every
#: vLLM example has a multi-pod DP role: TGT010 both); Dynamo 1.4.0's runtime images bundle
#: vLLM 0.26.0 and SGLang 0.5.16, and every example pins vLLM 0.33.0 or SGLang 0.5.23.
REFUSED = {**{("kserve", e): {"TGT002"} for e in ("s3-v4pro-pd-dp16", "s3-v4pro-pd-dp32",
                                                  "s3-v4pro-pd-lowlat", "s3-v4pro-tp8-ref")},
           **{("kserve", e): {"TGT010"} for e in ("s1-16xh20-pd", "s1-32xh20-pd",
                                                  "s1-32xh20-unified", "s2-32xh20-ep32-fp8")},
           **{("dynamo", p.stem): {"TGT032"} for p in sorted(EXAMPLES.glob("*.yaml"))}}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_example_renders_or_is_refused_with_a_finding(platform: str, tmp_path: Path,
                                                            capsys) -> None:
    """``gen render --target X`` on every example: the files, each platform object valid
    against its CRD; or exit 1 with exactly the refusals of :data:`REFUSED`."""
    for example in example_specs():
        out = tmp_path / example.stem
        code = run(["render", str(example), "--target", platform, "-o", str(out)])
        err = capsys.readouterr().err
        want = REFUSED.get((platform, example.stem), set())
        errors = set(re.findall(r" error ([A-Z]+[0-9]+) ", err))
        assert errors == want, (example.stem, err)
        if want:
            assert code == 1 and all(c in err for c in want), (example.stem, err)
            assert not out.exists()
            continue
        assert code == 0, (example.stem, err)
        for path in sorted(out.glob("*.yaml")):
            obj = yaml.safe_load(path.read_text())
            if obj["kind"] in PLATFORM_CRDS:
                validate_schema(obj, platform_schema(obj["kind"]))


@pytest.mark.parametrize("target,says", [
    ("kserv", "did you mean 'kserve'?"), ("openshift", "one of kubernetes, kserve"),
    ("kserve@", "no release after @"), ("kserve@latest", "'latest' is not a release")])
def test_unknown_target_on_the_command_line_is_a_usage_error(capsys, target, says) -> None:
    # A command-line mistake, not a finding on the spec: exit 2 (an empty @ was accepted).
    code = run(["validate", str(EXAMPLES / "s1-16xh20-pd.yaml"), "--target", target])
    err = capsys.readouterr().err
    assert code == 2 and says in err and "Traceback" not in err


def test_target_sets_name_and_version_and_keeps_the_other_fields(tmp_path) -> None:
    """``--target dynamo`` over an overlay that sets spec.target.image (no name): the image
    stays (it used to be replaced with the whole spec.target: TGT032, name an image); a
    target that does not take it drops it (TGT003 otherwise), and a spec's version of another
    target's releases is dropped, the same target's kept."""
    image = "registry.example.com/dynamo/vllm-runtime:1.4.0-vllm0.33.0"
    overlay = tmp_path / "o.yaml"
    overlay.write_text(f'spec:\n  target: {{image: "{image}"}}\n')
    spec = EXAMPLES / "s1-16xh20-pd.yaml"
    checked = pipeline.check(spec, [overlay], "dynamo")
    assert checked.spec.spec.target.image == image
    assert not [f for f in checked.findings if f.severity.value == "error"], checked.findings
    assert pipeline.check(spec, [overlay], "kserve").spec.spec.target.image is None
    overlay.write_text("spec:\n  target: {name: kserve, version: 0.20.0}\n")
    assert pipeline.check(spec, [overlay], "kserve").spec.spec.target.version == "0.20.0"
    assert pipeline.check(spec, [overlay], "rbg").spec.spec.target.version is None


# --- what each target leaves to its controller (hand-derived expectations) --------------------

def _check_overlay(tmp_path: Path, example: str, overlay: str, target: str | None = None):
    path = tmp_path / "overlay.yaml"
    path.write_text(overlay)
    return pipeline.check(EXAMPLES / example, [path], target)


def test_kserve_passes_the_api_server_count_through_the_presets_variable(tmp_path) -> None:
    """The data-parallel presets set --api-server-count from VLLM_API_SERVER_COUNT (default 8:
    config-llm-worker-data-parallel.yaml); moegen's value (the user's 4 here; else vLLM's
    default, the DP size 16, which the host plan sized) goes there, never twice."""
    checked = _check_overlay(tmp_path, "s1-16xh20-pd.yaml", """
spec:
  engine: {version: "0.26.0", image: "vllm/vllm-openai:v0.26.0"}
  pod: {securityContext: {runAsUser: 1000}}
  roles:
    - name: decode
      engineArgs: ["--api-server-count", "4"]
""", "kserve")
    assert checked.ok, checked.findings
    _, files = pipeline.render(checked)
    obj = yaml.safe_load(files["llminferenceservice.yaml"])
    env = {e["name"]: e.get("value") for e in obj["spec"]["template"]["containers"][0]["env"]}
    assert env["VLLM_API_SERVER_COUNT"] == "4"
    assert "--api-server-count" not in env["VLLM_ADDITIONAL_ARGS"]
    _, _, files = render_case("kserve-s1")
    obj = yaml.safe_load(files["llminferenceservice.yaml"])
    env = {e["name"]: e.get("value") for e in obj["spec"]["template"]["containers"][0]["env"]}
    assert env["VLLM_API_SERVER_COUNT"] == "16"


def test_kserve_adds_ipc_lock_where_the_preset_does_not() -> None:
    """RDMA needs IPC_LOCK; KServe's single-node presets add no capability, the data-parallel
    ones add IPC_LOCK, SYS_RAWIO, NET_RAW (the facts): only S1's single-node prefill gets it."""
    _, _, files = render_case("kserve-s1")
    obj = yaml.safe_load(files["llminferenceservice.yaml"])
    prefill = obj["spec"]["prefill"]["template"]["containers"][0]
    assert prefill["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"],
                                                           "drop": ["ALL"]}}
    assert "securityContext" not in obj["spec"]["template"]["containers"][0]


def test_dynamo_refuses_api_server_options_in_engine_args(tmp_path) -> None:
    checked = _check_overlay(tmp_path, "s1-16xh20-pd.yaml", """
spec:
  target: {name: dynamo, image: "registry.example.com/dynamo/vllm-runtime:1.4.0-vllm0.33.0"}
  roles:
    - name: prefill
      engineArgs: ["--api-server-count", "2"]
""")
    tgt = [f for f in checked.findings if f.code == "TGT030"]
    assert [f.path for f in tgt] == ["$.spec.roles[0].engineArgs"], checked.findings
    assert "--api-server-count" in tgt[0].message


def test_aibrix_refuses_names_it_would_shorten(tmp_path) -> None:
    """A 40-character name: the decode pods are named up to 40 + len("-roleset-") 9 + 5
    generated + 1 + len("decode") 6 + 1 + 6 (template hash) + 1 + 1 (replica 0) + 1 + 1
    (pod 1) = 72 characters, and AIBrix shortens names of 63 or more; S1's "dsv3-pd" gives
    7 + 9 + 5 + 1 + 6 + 1 + 6 + 1 + 1 + 1 + 1 = 39."""
    checked = _check_overlay(tmp_path, "s1-16xh20-pd.yaml", "metadata: {name: " + "a" * 40
                             + "}\n", "aibrix")
    tgt = [f for f in checked.findings if f.code == "TGT040"]
    assert len(tgt) == 1 and "up to 72 characters" in tgt[0].message, checked.findings
    assert tgt[0].path == "$.metadata.name"
    assert not any(f.code == "TGT040" for f in render_case("aibrix-s1")[0].findings)


def test_rbg_and_aibrix_launchers_read_the_injected_env() -> None:
    """The multi-pod launchers switch on the platform's pod index (RBG_LWP_WORKER_INDEX /
    POD_GROUP_INDEX) and resolve the leader the platform names; moegen's own LWS-derived
    index and leader env are not rendered."""
    for case, index, leader in (("rbg-s3", "RBG_LWP_WORKER_INDEX", "RBG_LWP_LEADER_ADDRESS"),
                                ("aibrix-s3", "POD_GROUP_INDEX", "MOEGEN_LEADER_HOST")):
        _, _, files = render_case(case)
        text = files["rolebasedgroup.yaml" if case.startswith("rbg") else "stormservice.yaml"]
        assert f'case "${{{index}}}" in' in text
        assert f'getent hosts "${{{leader}}}"' in text
        assert "MOEGEN_POD_INDEX" not in text and "LWS_LEADER_ADDRESS" not in text


def test_kserve_leaves_its_pod_labels_alone() -> None:
    """KServe selects its workload pods by app.kubernetes.io/component, name and part-of,
    kserve.io/component and llm-d.ai/role (workload_single_node.go singleNodeLabels) and copies
    spec.labels over the template's: moegen's labels must not name those keys."""
    _, _, files = render_case("kserve-s1")
    obj = yaml.safe_load(files["llminferenceservice.yaml"])
    owned = {"app.kubernetes.io/component", "app.kubernetes.io/name",
             "app.kubernetes.io/part-of", "kserve.io/component", "llm-d.ai/role"}
    for work in (obj["spec"], obj["spec"]["prefill"]):
        assert not owned & set(work["labels"]), work["labels"]
        assert work["labels"]["moegen.dev/role"] in ("prefill", "decode")


def test_preflight_asks_for_the_platforms_crds() -> None:
    """gen preflight checks the platform's CRDs (not the LeaderWorkerSet's) for a target."""
    from generator.preflight import _crds
    got = {name: [n for n, _ in _crds(render_case(name)[0])]
           for name in ("kserve-s1", "rbg-s1", "dynamo-s1", "aibrix-s1")}
    assert got == {"kserve-s1": ["llminferenceservices.serving.kserve.io"],
                   "rbg-s1": ["rolebasedgroups.workloads.x-k8s.io",
                              "coordinatedpolicies.workloads.x-k8s.io"],
                   "dynamo-s1": ["dynamographdeployments.nvidia.com"],
                   "aibrix-s1": ["stormservices.orchestration.aibrix.ai"]}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_golden_case_renders_or_is_refused_by_the_target(platform: str,
                                                               tmp_path: Path) -> None:
    """Every kubernetes golden case (each a spec moegen accepts: monitoring, autoscaling, the
    gateway, Kueue, Volcano, topology, pod-per-rank, StatefulSets, older engine releases) on
    each platform: rendered, its platform object valid against the CRD, or refused by the
    target's own findings only (TGT codes) -- never another error, never a traceback. On Dynamo
    with a runtime image of the case's own engine release (spec.target.image), since every
    case pins another release than the 1.4.0 images bundle (TGT032); on KServe with a non-root
    user (its presets set runAsNonRoot)."""
    from tests.test_golden import cases
    image = tmp_path / "dynamo-image.yaml"
    image.write_text("spec:\n  target: {name: dynamo, image: registry.example.com/runtime:x}\n")
    user = tmp_path / "non-root.yaml"
    user.write_text("spec:\n  pod: {securityContext: {runAsUser: 1000}}\n")
    refused = 0
    for name, spec, overlays in cases():
        if platform == "dynamo":
            checked = pipeline.check(spec, [*overlays, image])
        elif platform == "kserve":
            checked = pipeline.check(spec, [*overlays, user], platform)
        else:
            checked = pipeline.check(spec, overlays, platform)
        errors = {f.code for f in checked.findings if f.severity.value == "error"}
        if errors:
            assert all(c.startswith("TGT") for c in errors), (name, errors)
            refused += 1
            continue
        _, files = pipeline.render(checked)
        kinds = [o for o in objects(files) if o["kind"] in PLATFORM_CRDS]
        assert kinds, name
        for obj in kinds:
            validate_schema(obj, platform_schema(obj["kind"]))
    assert refused < len(cases())


def test_kserve_probe_timing_router_replicas_and_non_root() -> None:
    """The presets' readiness/liveness answer within 1 s (config-llm-worker-data-parallel.yaml);
    the leader template carries the kubernetes target's timing (readiness period 10 s, timeout
    5 s, 3 failures; liveness 30 s, timeout max(10, 5) = 10, 5 failures; generator/pods.py),
    the headless workers none. The scheduler runs ROUTER_REPLICAS = 2 (KServe adds leader
    election above 1). The golden's runAsUser 1000 lifts the non-root refusal."""
    checked, _, files = render_case("kserve-s1")
    obj = yaml.safe_load(files["llminferenceservice.yaml"])
    main = obj["spec"]["template"]["containers"][0]
    assert main["readinessProbe"] == {"periodSeconds": 10, "timeoutSeconds": 5,
                                      "failureThreshold": 3}
    assert main["livenessProbe"] == {"periodSeconds": 30, "timeoutSeconds": 10,
                                     "failureThreshold": 5}
    assert "readinessProbe" not in obj["spec"]["worker"]["containers"][0]
    assert obj["spec"]["router"]["scheduler"]["replicas"] == 2
    assert obj["spec"]["template"]["securityContext"]["runAsUser"] == 1000
    assert not any(f.code == "TGT010" for f in checked.findings)


def test_aibrix_router_selects_only_the_sglang_api_pods() -> None:
    """S3's SGLang roles span pods whose followers (node rank >= 1) answer /health only; the
    pods share one template, API label included, so the router's selectors name pod-group
    index 0 (launch.serves_api), while the followers keep their probes (they bind HTTP)."""
    _, _, files = render_case("aibrix-s3")
    args = yaml.safe_load(files["router-deployment.yaml"])["spec"]["template"]["spec"][
        "containers"][0]["args"]
    for flag in ("--prefill-selector", "--decode-selector"):
        i = args.index(flag)
        assert "stormservice.orchestration.aibrix.ai/pod-group-index=0" in args[i + 1:i + 5]
    storm = yaml.safe_load(files["stormservice.yaml"])
    for role in storm["spec"]["template"]["spec"]["roles"]:
        probe = role["template"]["spec"]["containers"][0].get("readinessProbe", {})
        assert "exec" not in probe, role["name"]
    checked = render_case("aibrix-s3")[0]
    multi = {f"$.spec.roles[{i}].parallel" for i, r in checked.model.role_items()
             if r.layout.multi_pod}
    assert multi and {f.path for f in checked.findings if f.code == "TGT042"} == multi


def _mergo_override(base: dict, user: dict) -> dict:
    """mergo.Merge(base, user, WithOverride) on a container (dario.cat/mergo v0.3.16, as
    ai-dynamo/dynamo@e147cee:deploy/operator/internal/dynamo/graph.go:1735-1745 calls it):
    every non-empty field of ``user`` replaces base's (slices whole: no WithAppendSlice), maps
    merge key by key; env is then merged by name (MergeEnvs)."""
    out = copy.deepcopy(base)
    for key, value in user.items():
        if value in (None, "", [], {}):
            continue
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _mergo_override(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@pytest.mark.parametrize("name", [n for n in IDS if n.startswith("dynamo-")])
def test_dynamo_worker_ports_survive_the_operators_merge(name: str) -> None:
    """The operator's worker container declares system (9090) and nixl (19090) and probes the
    named port system (component_worker.go:30-80); the worker Service targets system
    (graph.go:924-928). After the merge the named port exists, once, and no name or number
    repeats (moegen's NIXL side channels are vllm-nixl-*)."""
    from generator.targets.dynamo import OPERATOR_PORTS
    _, _, files = render_case(name)
    obj = yaml.safe_load(files["dynamographdeployment.yaml"])
    probe = {"httpGet": {"path": "/health", "port": "system"}}
    base = {"name": "main", "ports": [dict(p) for p in OPERATOR_PORTS],
            "readinessProbe": probe, "livenessProbe": probe, "startupProbe": probe}
    assert [p["containerPort"] for p in OPERATOR_PORTS] == [9090, 19090]
    for c in obj["spec"]["components"]:
        if c["type"] == "frontend":
            continue
        user = c["podTemplate"]["spec"]["containers"][0]
        merged = _mergo_override(base, user)
        names = [p["name"] for p in merged["ports"]]
        numbers = [p["containerPort"] for p in merged["ports"]]
        assert len(names) == len(set(names)) and len(numbers) == len(set(numbers)), c["name"]
        for kind in ("readinessProbe", "livenessProbe", "startupProbe"):
            assert merged[kind]["httpGet"]["port"] in names, (c["name"], kind)
        assert {"system", "nixl"} <= set(names)
        assert 9090 in numbers and 19090 in numbers


def test_declared_nixl_ports_are_the_bound_ones() -> None:
    """vLLM's NIXL side channel of DP rank r binds base + r. S1's decode: DP16, 8 ranks a pod.
    KServe: the worker template (pod 1, ranks 8-15) runs with base 5600 - 8 = 5592 and declares
    5592 + 8..15 = 5600-5607. Dynamo: one template for both pods, base 5600: pod 0 binds
    5600-5607 and pod 1 5608-5615, all declared."""
    _, _, files = render_case("kserve-s1")
    worker = yaml.safe_load(files["llminferenceservice.yaml"])["spec"]["worker"]["containers"][0]
    env = {e["name"]: e.get("value") for e in worker["env"]}
    assert env["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5592"
    assert [p["containerPort"] for p in worker["ports"] if p["name"].startswith("nixl")] == \
        list(range(5600, 5608))
    assert [e["name"] for e in worker["env"]].count("VLLM_NIXL_SIDE_CHANNEL_PORT") == 1
    _, _, files = render_case("dynamo-s1-custom-image")
    obj = yaml.safe_load(files["dynamographdeployment.yaml"])
    decode = next(c for c in obj["spec"]["components"] if c["name"] == "decode")
    main = decode["podTemplate"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in main["env"]}
    assert env["VLLM_NIXL_SIDE_CHANNEL_PORT"] == "5600"
    assert [p["containerPort"] for p in main["ports"] if p["name"].startswith("vllm-nixl")] == \
        list(range(5600, 5616))


@pytest.mark.parametrize("name", IDS)
def test_target_output_validates_and_imports_its_sized_load(name: str, tmp_path: Path,
                                                           capsys) -> None:
    """Round trip: the golden cases' rendered output, read back by ``gen validate``, has no
    error, and where the spec sets spec.traffic (S1: 3500/1200; S3 dp16) ``gen import`` gets it
    back from the moegen.dev/sized-load annotation each target carries (KServe on the
    WorkloadSpec, RBG/Dynamo/AIBrix on the leader's pod template)."""
    checked, _, files = render_case(name)
    traffic = checked.spec.spec.traffic
    write_tree(tmp_path / "out", files)
    code = run(["validate", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert run(["import", str(tmp_path / "out")]) == 0
    imported = yaml.safe_load(capsys.readouterr().out)
    if traffic is None:
        assert "traffic" not in imported["spec"]
        return
    assert imported["spec"]["traffic"]["inputTokens"] == traffic.inputTokens
    assert imported["spec"]["traffic"]["outputTokens"] == traffic.outputTokens


def test_rbg_stable_release_renders_its_restart_policy_field(tmp_path) -> None:
    """RBG v0.7.0 (the stable release; v1alpha2 and the same RBG_LWP_* env as v0.8.0-alpha.5)
    is known: its leaderWorkerPattern has the ``restartPolicy`` string, no
    ``restartPolicyConfig`` (the extracted CRD properties), and every field moegen renders
    exists at the release."""
    checked = _check_overlay(tmp_path, "s3-v4pro-pd-dp16.yaml",
                             "spec:\n  target: {name: rbg, version: v0.7.0}\n")
    assert checked.ok, checked.findings
    assert controllers.value("rbg", "v0.7.0", "env", "workerIndex") == "RBG_LWP_WORKER_INDEX"
    _, files = pipeline.render(checked)
    obj = yaml.safe_load(files["rolebasedgroup.yaml"])
    props = controllers.value("rbg", "v0.7.0", "crd")["properties"]
    for role in obj["spec"]["roles"]:
        assert set(role) <= set(props["role"]), role["name"]
        lwp = role.get("leaderWorkerPattern")
        if lwp is not None:
            assert lwp["restartPolicy"] == "RecreateRoleInstanceOnPodRestart"
            assert set(lwp) <= set(props["leaderWorkerPattern"])
    _, _, files = render_case("rbg-s3")
    lwp = next(r["leaderWorkerPattern"] for r in yaml.safe_load(files["rolebasedgroup.yaml"])[
        "spec"]["roles"] if "leaderWorkerPattern" in r)
    assert lwp["restartPolicyConfig"] == {"type": "RecreateRoleInstanceOnPodRestart"}
