"""spec.platform.lws: the LeaderWorkerSet release table (generator/facts/lws.py), what each
release renders, and the DisaggregatedSet output (golden tests/golden/s1-disaggregatedset)."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml

from generator.facts import lws
from tests.helpers import EXAMPLES, objects, render_spec, validate_schema

S1 = EXAMPLES / "s1-16xh20-pd.yaml"


def _overlay(tmp: Path, text: str) -> list[Path]:
    path = tmp / "overlay.yaml"
    path.write_text(text)
    return [path]


def _lws_platform(tmp: Path, body: str) -> list[Path]:
    return _overlay(tmp, f"spec:\n  platform:\n    lws: {body}\n")


@pytest.mark.parametrize("version,feature,has", [
    # Each first release as the upstream sources in generator/facts/lws.py give it.
    ("0.3.0", "startupPolicy", True),
    ("0.6.3", "volcanoGang", False), ("0.7.0", "volcanoGang", True),
    ("0.7.1", "volumeClaimTemplates", False), ("v0.8.0", "volumeClaimTemplates", True),
    ("0.8.0", "recreateGroupAfterStartAnnotation", True),
    ("0.8.0", "recreateGroupAfterStart", False), ("0.9.0", "recreateGroupAfterStart", True),
    ("0.8.2", "disaggregatedSet", False), ("0.9.0", "disaggregatedSet", True),
    ("0.9.0", "disaggregatedSetSlices", False), ("0.10.0", "disaggregatedSetSlices", True),
    # Unknown lines have nothing; no version declared is moegen's default output.
    ("0.11.0", "startupPolicy", False), ("0.2.0", "startupPolicy", False),
    (None, "disaggregatedSet", True),
])
def test_release_table(version, feature, has):
    assert lws.has(version, feature) is has


def test_version_parsing():
    assert lws.parse("v0.10.0") == (0, 10, 0)
    assert lws.parse("0.10") is None
    assert lws.known("0.10.2") and not lws.known("1.0.0") and not lws.known("0.2.0")


def test_declared_release_with_defaults_renders_todays_output(tmp_path):
    """platform.lws with moegen's defaults changes nothing: same files, byte for byte."""
    _, _, plain = render_spec(S1)
    _, _, declared = render_spec(S1, _lws_platform(tmp_path, '{version: "0.7.0"}'))
    assert declared == plain


def _lws_objects(files: dict[str, str]) -> list[dict]:
    return [o for o in objects(files) if o["kind"] == "LeaderWorkerSet"]


def _lws_annotations(obj: dict) -> dict:
    """The object's annotations without moegen's own (moegen.dev/sized-load records the load the
    role was sized for, read back by ``gen import``)."""
    return {k: v for k, v in obj["metadata"].get("annotations", {}).items()
            if not k.startswith("moegen.dev/")}


def test_recreate_after_start_is_an_annotation_in_0_8(tmp_path):
    _, _, files = render_spec(S1, _lws_platform(
        tmp_path, '{version: "0.8.0", restartPolicy: RecreateGroupAfterStart}'))
    for obj in _lws_objects(files):
        assert obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
        assert _lws_annotations(obj) == {
            "leaderworkerset.sigs.k8s.io/experimental-recreate-group-after-start": "true"}


def test_recreate_after_start_is_a_policy_from_0_9(tmp_path):
    _, _, files = render_spec(S1, _lws_platform(
        tmp_path, '{version: "0.9.0", restartPolicy: RecreateGroupAfterStart}'))
    objs = _lws_objects(files)
    assert len(objs) == 2   # prefill, decode
    for obj in objs:
        assert obj["spec"]["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupAfterStart"
        assert _lws_annotations(obj) == {}


def _ds_files(tmp_path) -> dict[str, str]:
    _, _, files = render_spec(S1, _lws_platform(tmp_path, '{version: "0.9.0", '
                                                'disaggregatedSet: true}'))
    return files


def test_disaggregatedset_replaces_the_leaderworkersets(tmp_path):
    files = _ds_files(tmp_path)
    assert not [f for f in files if f.endswith("-lws.yaml")]
    kinds = [o["kind"] for o in objects(files)]
    assert kinds.count("DisaggregatedSet") == 1 and "LeaderWorkerSet" not in kinds
    ds = next(o for o in objects(files) if o["kind"] == "DisaggregatedSet")
    assert ds["apiVersion"] == "disaggregatedset.x-k8s.io/v1"
    assert [r["name"] for r in ds["spec"]["roles"]] == ["prefill", "decode"]
    # S1: prefill TP8 on one node (size 1), decode DP16 on two nodes (size 2), one group each.
    sizes = [(r["spec"]["replicas"], r["spec"]["leaderWorkerTemplate"]["size"])
             for r in ds["spec"]["roles"]]
    assert sizes == [(1, 1), (1, 2)]
    # No partition: the DisaggregatedSet owns rollouts (disaggregatedset_types.go).
    for r in ds["spec"]["roles"]:
        assert "partition" not in r["spec"]["rolloutStrategy"]["rollingUpdateConfiguration"]


def test_disaggregatedset_consumers_select_by_label(tmp_path):
    """Nothing names a child LeaderWorkerSet or its pods: their names carry a revision hash."""
    files = _ds_files(tmp_path)
    router = next(o for o in objects(files) if o["kind"] == "Deployment")
    args = " ".join(router["spec"]["template"]["spec"]["containers"][0]["args"])
    assert "--service-discovery" in args and "http://" not in args
    for svc in (o for o in objects(files) if o["kind"] == "Service"):
        if svc["metadata"]["name"].endswith("-api"):
            assert set(svc["spec"]["selector"]) <= {
                "app.kubernetes.io/instance", "moegen.dev/role",
                "leaderworkerset.sigs.k8s.io/worker-index"}
    text = "".join(files.values())
    assert "dsv3-pd-prefill." not in text and "dsv3-pd-decode." not in text


def test_disaggregatedset_crd_check_can_fail(tmp_path):
    """The CRD forbids a one-role set and unknown fields (the golden check is live)."""
    from tests.test_manifests_valid import _crd_schema

    ds = next(o for o in objects(_ds_files(tmp_path)) if o["kind"] == "DisaggregatedSet")
    validate_schema(ds, _crd_schema("DisaggregatedSet"))
    one = copy.deepcopy(ds)
    one["spec"]["roles"] = one["spec"]["roles"][:1]
    with pytest.raises(jsonschema.ValidationError):
        validate_schema(one, _crd_schema("DisaggregatedSet"))
    bad = copy.deepcopy(ds)
    bad["spec"]["roles"][0]["spec"]["sizee"] = 1
    with pytest.raises(jsonschema.ValidationError):
        validate_schema(bad, _crd_schema("DisaggregatedSet"))


def test_schema_documents_platform_lws():
    from generator.spec.models import InferenceDeployment

    schema = yaml.safe_load(yaml.safe_dump(InferenceDeployment.model_json_schema()))
    props = schema["$defs"]["Lws"]["properties"]
    assert set(props) == {"version", "restartPolicy", "disaggregatedSet"}
