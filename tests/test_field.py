"""Public field failures (``tests/field/<case>/case.yaml``, format in tests/field/README.md).

Each case is a real report from an upstream tracker written as a spec: either moegen rejects or
warns with the exact finding set, or it renders the fix (``render:`` assertions on the files).
Every case also runs through the CLI: no traceback.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from generator import pipeline
from generator.cli import run
from tests.helpers import ROOT, materialise_case

FIELD = ROOT / "tests" / "field"
CASES = sorted(p.parent for p in FIELD.glob("*/case.yaml"))
REQUIRED = ("source", "engine", "component", "class", "failed", "root_cause", "failed_before",
            "spec")
CLASSES = {"timeout-pair", "restart-path", "version-skew", "release-regression",
           "hardware-capability", "model-requirement", "router-policy", "handshake", "memory",
           "network", "probe", "rank-wiring", "config-parse"}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_field_case(case: Path, tmp_path: Path, capsys) -> None:
    spec, overlays, meta = materialise_case(case, tmp_path)
    missing = [k for k in REQUIRED if not meta.get(k)]
    assert not missing, f"{case.name}: case.yaml lacks {missing}"
    assert isinstance(meta.get("rules"), list), f"{case.name}: rules: (list, [] for a rendered fix)"
    assert meta["class"] in CLASSES, meta["class"]
    assert "expect" in meta or "warnings" in meta or "render" in meta or "predicted" in meta \
        or "notices" in meta, case.name
    checked = pipeline.check(spec, overlays)
    errors = Counter(f.code for f in checked.findings if f.severity.value == "error")
    warnings = Counter(f.code for f in checked.findings if f.severity.value == "warning")
    report = "\n".join(map(str, checked.findings))
    assert errors == Counter(e["code"] for e in meta.get("expect", [])), report
    assert warnings == Counter(meta.get("warnings", [])), report
    if "notices" in meta:   # what moegen could not check (exact set when listed)
        notices = Counter(f.code for f in checked.findings if f.severity.value == "notice")
        assert notices == Counter(meta["notices"]), report
    for exp in meta.get("expect", []):
        hits = [f for f in checked.findings if f.code == exp["code"]]
        for text in exp.get("contains", []):
            assert any(text in (f.message + " " + f.hint) for f in hits), (text, hits)
    codes = {e["code"] for e in meta.get("expect", [])} | set(meta.get("warnings", [])) \
        | set(meta.get("predicted", [])) | set(meta.get("notices", []))
    assert set(meta.get("rules", [])) <= codes, ("rules: lists a code the case does not expect",
                                                 meta.get("rules"))
    if "predicted" in meta:   # findings on gen size's prediction (capacity/predict.py sanity)
        predicted = pipeline.performance(checked)
        got = Counter(f.code for f in (predicted.findings if predicted else []))
        assert got == Counter(meta["predicted"]), predicted
    if meta.get("render"):
        assert not errors, report
        _, files = pipeline.render(checked)
        for check in meta["render"]:
            assert check["file"] in files, (check["file"], sorted(files))
            text = files[check["file"]]
            for want in check.get("contains", []):
                assert want in text, f"{check['file']} lacks {want!r}"
            for bad in check.get("absent", []):
                assert bad not in text, f"{check['file']} holds {bad!r}"
    args = ["validate", str(spec)] + [a for o in overlays for a in ("-f", str(o))]
    assert run(args) == (1 if errors else 0)
    assert "Traceback" not in capsys.readouterr().err


def test_field_index_is_current() -> None:
    """``gen rules`` reads the shipped index of these cases: regenerated, it is unchanged (run
    ``python tools/index_field_cases.py`` after adding a case or changing its ``rules:``)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("index_field_cases",
                                                  ROOT / "tools" / "index_field_cases.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    shipped = (ROOT / "generator" / "checks" / "data" / "field_cases.json").read_text()
    assert tool.index(FIELD) == shipped, "stale: run python tools/index_field_cases.py"


def test_gen_rules_lists_the_field_cases_of_each_rule(capsys) -> None:
    """SRV060 covers the three engine-ready-timeout cases (their ``rules: [SRV060]``); a rendered
    fix (rules: []) is listed under what moegen renders."""
    assert run(["rules"]) == 0
    out = capsys.readouterr().out
    block = out.split("\nSRV060 ", 1)[1].split("\nSRV061 ", 1)[0]
    cases = block.split("field cases: ", 1)[1]
    assert [c.split(" (")[0] for c in cases.strip().split("; ")] == [
        "engine-ready-timeout-163-shards", "engine-ready-timeout-dp16-deepgemm",
        "engine-ready-timeout-dsv32-dp16"]
    rendered = out.split("prevented by what moegen renders", 1)[1]
    assert "sglang-pd-role-services" in rendered and "SRV060" not in rendered
    assert run(["rules", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_code = {r["code"]: r for r in doc}
    assert [c["case"] for c in by_code["PD061"]["fieldCases"]] == ["vllm-0.12-autoscaled-prefill"]
    assert by_code["PD061"]["fieldCases"][0]["source"] == \
        yaml.safe_load((FIELD / "vllm-0.12-autoscaled-prefill" / "case.yaml").read_text())["source"]
