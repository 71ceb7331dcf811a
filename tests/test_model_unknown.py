"""``model.architecture: unknown`` (docs/spec.md §2; issue 31 item 7): the model is not stated,
as ``gpu: unknown`` says of the GPU. ``gen validate`` runs the checks that do not read the model
on a stand-in (spec/validate.py ``MODEL_STAND_IN``), reports only the findings of an ALLOW list
(checks/registry.py ``MODEL_FREE``) and one MOD008 notice; the commands that need the model
(render, size, report, ...) refuse it with MOD008 as an error.

The spec throughout is examples/s1-16xh20-pd.yaml (DeepSeek-V3, max_position_embeddings
163840 in its config.json) with overlays.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from collections import Counter
from pathlib import Path

import pytest

from generator import pipeline
from generator.cli import run
from generator.checks.registry import RULES, model_independent
from tests.helpers import EXAMPLES

S1 = EXAMPLES / "s1-16xh20-pd.yaml"
#: A defect no model changes: the decode pool's 2 nodes hold one DP16 instance, maxReplicas 3
#: asks for three, min 4 is above max 3, and a KV usage target of 80 is above 1
#: (tests/invalid/autoscaling-beyond-pool: three AUT001).
AUTOSCALING = """
    monitoring: {enabled: true, prometheusUrl: "http://prometheus:9090"}
    roles:
      - name: decode
        autoscaling: {minReplicas: 4, maxReplicas: 3, metric: kvUsage, target: 80}
"""
#: A defect of the model: 200000 tokens > DeepSeek-V3's max_position_embeddings 163840 (LEN001).
LONG = "\n    serving: {maxModelLen: 200000}\n"
UNKNOWN = "\n    model: {architecture: unknown}\n"


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """overlay name -> (the overlay file, pipeline.check of S1 with it)."""
    out = tmp_path_factory.mktemp("unknown-model")
    overlays = {
        "known": AUTOSCALING + LONG,
        "unknown": AUTOSCALING + LONG + UNKNOWN,
        "both": UNKNOWN + "\n    nodePools:\n      decode-h20: {gpu: unknown}\n",
    }
    found = {}
    for name, text in overlays.items():
        path = out / f"{name}.yaml"
        path.write_text("spec:" + text)
        found[name] = (path, pipeline.check(S1, [path]))
    return found


def _codes(c: pipeline.Checked, severity: str) -> Counter:
    return Counter(f.code for f in c.findings if f.severity.value == severity)


def test_a_model_independent_defect_is_still_reported(checked):
    """The three AUT001 are reported on an unknown model; LEN001, which the same spec with its
    DeepSeek-V3 (the stand-in too) raises, is not: it was judged on the stand-in."""
    _, known = checked["known"]
    _, unknown = checked["unknown"]
    assert _codes(known, "error") == Counter({"AUT001": 3, "LEN001": 1})
    assert _codes(unknown, "error") == Counter({"AUT001": 3})
    assert _codes(unknown, "notice") == Counter({"MOD008": 1})
    assert unknown.unstated_model and not known.unstated_model
    # Nothing outside the allow list is reported (the stand-in's sizing, MTP, formats ...).
    assert [f.code for f in unknown.findings if not model_independent(f.code)] == []


def test_the_notice_says_what_did_not_run_and_how_to_state_it(checked):
    path, unknown = checked["unknown"]
    [notice] = [f for f in unknown.findings if f.code == "MOD008"]
    assert notice.path == "$.spec.model.architecture"
    # spec: (1), the AUTOSCALING lines (2-5), a blank line and LONG (6-7), a blank line and
    # UNKNOWN's model: (9): the field is located in the overlay that says it.
    assert (Path(notice.location.file).name, notice.location.line) == (path.name, 9)
    assert "model.architecture: unknown" in notice.message
    for what in ("HBM sizing", "heads", "routed experts", "MTP", "quantization"):
        assert what in notice.message, what
    for how in ("model.architecture", "model.config", "gen import --model",
                "--model-config"):
        assert how in notice.hint, how


def test_commands_that_need_the_model_refuse_it(checked, tmp_path, capsys):
    """gen validate passes (exit 0: the AUT001 overlay is left out); gen render and gen size
    exit 1 with MOD008 as an error and write nothing."""
    path = tmp_path / "unknown.yaml"
    path.write_text("spec:" + UNKNOWN)
    assert run(["validate", str(S1), "-f", str(path)]) == 0
    capsys.readouterr()
    assert run(["render", str(S1), "-f", str(path), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "error MOD008" in err and "gen render needs it" in err
    assert not (tmp_path / "out").exists()
    assert run(["size", str(S1), "-f", str(path)]) == 1
    assert "error MOD008" in capsys.readouterr().err
    # gen explain shows the values stated, none derived from the stand-in (S1's maxModelLen
    # 32768 is stated; its pods' cpu/memory would be derived from the model's weights).
    assert run(["explain", str(S1), "-f", str(path)]) == 1
    out, err = capsys.readouterr()
    assert '$.spec.model.architecture = "unknown"' in out and "derived" not in out
    assert "error MOD008" in err and "gen explain needs it" in err


def test_gpu_and_model_unknown_together(checked, tmp_path, capsys):
    """Both notices on validate, both errors on render; no finding of a check that reads
    either."""
    path, both = checked["both"]
    assert both.ok and both.unstated == ("decode-h20",) and both.unstated_model
    assert sorted((f.code, f.severity.value) for f in both.findings) == \
        [("MOD008", "notice"), ("POOL006", "notice")]
    assert run(["render", str(S1), "-f", str(path), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "error MOD008" in err and "error POOL006" in err


def test_unknown_with_a_config_is_mod001():
    """``architecture: unknown`` beside ``config`` states the model twice: MOD001, no stand-in."""
    from generator.spec.models import InferenceDeployment
    from generator.spec.validate import stand_in_model
    import yaml
    doc = yaml.safe_load(S1.read_text())
    doc["spec"]["model"].update(architecture="unknown", config="config.json")
    spec = InferenceDeployment.model_validate(doc)
    assert stand_in_model(spec) == (spec, False)
    doc["spec"]["model"].pop("config")
    stood, unknown = stand_in_model(InferenceDeployment.model_validate(doc))
    assert unknown and stood.spec.model.architecture == "deepseek-v3"


#: What a rule reads of the model: its configuration (``.arch``; the context the engine derives
#: from it, generator/roles.py ``context_limit``/``max_len``), the sizing and host plans computed
#: from it, the durations and prediction, the per-model requirement and known-bad tables.
READS_MODEL = re.compile(r"\.arch\b|\bctx\.arch\b|\.sized\(|ctx\.sizing|ctx\.host|\.host\[|"
                         r"durations|lifecycle|prediction|requirements|refusals|missing_class|"
                         r"known_bad|inventory|size_role|\.weights\b|context_limit|role_max_len")


def _source(fn, seen: set) -> str:
    """``fn``'s source and that of the functions of its own module it calls, transitively."""
    mod = sys.modules[fn.__module__]
    out = inspect.getsource(fn)
    for name in sorted(set(re.findall(r"\b([A-Za-z_]\w*)\(", out))):
        obj = getattr(mod, name, None)
        if isinstance(obj, types.FunctionType) and obj not in seen \
                and obj.__module__ == fn.__module__:
            seen.add(obj)
            out += _source(obj, seen)
    return out


def test_no_rule_on_the_allow_list_reads_the_model():
    """Every rule whose function (or a helper of its module) reads the model, its sizing or its
    durations is left off the allow list, so its stand-in findings are never reported."""
    reads = sorted(r.code for r in RULES if r.check is not None
                   and READS_MODEL.search(_source(r.check, {r.check})))
    assert {"LAY002", "LEN001", "EP003", "SPD001", "SIZ001", "MOD030"} <= set(reads)
    assert [c for c in reads if model_independent(c)] == []


def _sts(tmp_path: Path, model: str, volume: dict | None) -> Path:
    """A one-pod SGLang StatefulSet serving ``model`` (mounted from ``volume`` at /models)."""
    import yaml
    container = {"name": "sglang", "image": "lmsysorg/sglang:v0.5.23",
                 "command": ["python3", "-m", "sglang.launch_server", "--model-path", model,
                             "--tp", "8"],
                 "resources": {"limits": {"nvidia.com/gpu": 8}}}
    spec: dict = {"containers": [container]}
    if volume is not None:
        container["volumeMounts"] = [{"name": "w", "mountPath": "/models"}]
        spec["volumes"] = [{"name": "w", **volume}]
    doc = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "m"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "m"}},
                    "template": {"metadata": {"labels": {"app": "m"}}, "spec": spec}}}
    path = tmp_path / "sts.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_importer_writes_unknown_only_for_a_model_it_cannot_name(tmp_path, capsys):
    """Weights in a volume with no config.json and no Hub id: ``architecture: unknown`` and
    IMP011 says how to state it; ``--model`` states it (a catalog id); a Hub id not in the
    catalog is named by the manifest, and stays without an architecture (MOD001 on the spec:
    --model-config gives its config.json); a bad ``--model`` is a usage error."""
    from generator.importer import Options
    from generator.inputs import read_inputs
    local = _sts(tmp_path, "/models/my-moe", {"persistentVolumeClaim": {"claimName": "w"}})
    r = read_inputs([local], opts=Options(gpu="H200-141GB")).results[0]
    assert r.imported.data["spec"]["model"]["architecture"] == "unknown"
    [imp] = [f for f in r.findings if f.code == "IMP011"]
    assert "writes model.architecture: unknown" in imp.message
    assert "--model-config" in imp.hint and "--model deepseek-r1" in imp.hint
    assert "MOD008" in {f.code for f in r.checked.findings}
    named = read_inputs([local], opts=Options(gpu="H200-141GB", model="deepseek-r1")).results[0]
    assert named.imported.data["spec"]["model"]["architecture"] == "deepseek-r1"
    assert not {"IMP011", "MOD008"} & {f.code for f in named.checked.findings}
    hub = read_inputs([_sts(tmp_path, "acme/my-moe", None)],
                      opts=Options(gpu="H200-141GB")).results[0]
    assert "architecture" not in hub.imported.data["spec"]["model"]
    assert run(["import", str(local), "--model", "not-a-model"]) == 2
    assert "not a catalog model" in capsys.readouterr().err
