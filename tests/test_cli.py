"""The CLI: one test per exit code, output formats, and the installed console script."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

import generator
from generator import pipeline
from generator.cli import run, schema_text
from tests.helpers import EXAMPLES, ROOT

S1 = str(EXAMPLES / "s1-16xh20-pd.yaml")
S1_TEXT = (EXAMPLES / "s1-16xh20-pd.yaml").read_text()


def test_exit_0_render_and_check(tmp_path, capsys):
    out = tmp_path / "o"
    assert run(["render", S1, "-o", str(out)]) == 0
    assert (out / "kustomization.yaml").is_file()
    assert run(["render", S1, "-o", str(out), "--check"]) == 0
    assert "up to date" in capsys.readouterr().err


def test_exit_1_rejected_json(tmp_path, capsys):
    bad = tmp_path / "o.yaml"
    bad.write_text("spec:\n  engine: {version: '0.9.0', image: 'vllm/vllm-openai:v0.9.0'}\n")
    assert run(["validate", S1, "-f", str(bad), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False
    assert doc["findings"][0]["code"] == "VER001"
    assert doc["findings"][0]["file"] == str(bad) and doc["findings"][0]["line"] == 2


def test_exit_1_render_writes_nothing(tmp_path):
    bad = tmp_path / "o.yaml"
    bad.write_text("spec:\n  engine: {version: '0.9.0', image: 'vllm/vllm-openai:v0.9.0'}\n")
    out = tmp_path / "o"
    assert run(["render", S1, "-f", str(bad), "-o", str(out)]) == 1
    assert not out.exists()


def test_exit_2_usage(tmp_path, capsys):
    assert run(["render"]) == 2
    assert run(["validate", str(tmp_path / "missing.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "x.txt").write_text("x")
    assert run(["render", S1, "-o", str(foreign)]) == 2


def test_exit_3_drift(tmp_path, capsys):
    out = tmp_path / "o"
    assert run(["render", S1, "-o", str(out)]) == 0
    (out / "decode-pdb.yaml").write_text("edited\n")
    assert run(["render", S1, "-o", str(out), "--check"]) == 3
    assert "M decode-pdb.yaml" in capsys.readouterr().err


def test_exit_4_internal_error(monkeypatch, capsys):
    def boom(*a, **k):
        raise RuntimeError("simulated bug")
    monkeypatch.setattr(pipeline, "render", boom)
    assert run(["render", S1, "-o", "/nonexistent/x"]) == 4
    err = capsys.readouterr().err
    assert "internal error" in err and "Traceback" not in err


def test_strict_turns_warnings_into_rejection(tmp_path):
    warn = tmp_path / "w.yaml"
    warn.write_text("spec:\n  network:\n    env: {NCCL_IB_HCA: mlx5_0}\n")  # NET003 warning
    assert run(["validate", S1, "-f", str(warn)]) == 0
    assert run(["validate", S1, "-f", str(warn), "--strict"]) == 1


def test_github_format(tmp_path, capsys):
    bad = tmp_path / "o.yaml"
    bad.write_text("spec:\n  engine: {version: '0.9.0', image: 'vllm/vllm-openai:v0.9.0'}\n")
    assert run(["validate", S1, "-f", str(bad), "--format", "github"]) == 1
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"::error file={bad},line=2,col=")
    assert "title=VER001 $.spec.engine.version::" in line


def test_schema_command_matches_committed_schema(capsys):
    assert run(["schema"]) == 0
    committed = (ROOT / "schemas" / "inferencedeployment.schema.json").read_text()
    assert capsys.readouterr().out == committed == schema_text(), \
        "schemas/ drifted from the models: python -m generator schema > schemas/inferencedeployment.schema.json"


def test_public_api_is_pinned():
    assert generator.__all__ == ["Checked", "check", "render"]


def test_readme_commands_are_real():
    readme = (ROOT / "README.md").read_text()
    first = readme.split("```sh")[1].split("```")[0]
    assert "pip install" in first and "gen render examples/s1-16xh20-pd.yaml" in first
    assert (EXAMPLES / "s1-16xh20-pd.yaml").is_file()
    assert readme.split("```sh")[2].split("```")[0].strip() == "pytest"


@pytest.mark.skipif(shutil.which("gen") is None, reason="moegen is not installed (no gen on PATH)")
def test_installed_console_script(tmp_path):
    """The wheel ships templates and catalogs: render from outside the repository."""
    out = tmp_path / "o"
    res = subprocess.run(["gen", "render", S1, "-o", str(out)], capture_output=True, text=True,
                         cwd=tmp_path, check=False)
    assert res.returncode == 0, res.stderr
    assert (out / "decode-lws.yaml").read_text() == \
        (ROOT / "tests/golden/s1-16xh20-pd/expected/decode-lws.yaml").read_text()


def test_readme_examples_match_the_tool(tmp_path, capsys):
    """The finding and the sizing excerpt shown in the README are what gen prints today."""
    readme = (ROOT / "README.md").read_text()
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("spec:\n  roles:\n    - name: decode\n      moe:\n"
                       "        eplb: {redundantExperts: 24}\n")
    assert run(["validate", str(EXAMPLES / "s1-32xh20-pd.yaml"), "-f", str(overlay)]) == 1
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if "EP003" in x)
    assert line.replace(str(overlay), "overlay.yaml") in readme
    bf16 = ROOT / "overlays" / "bf16-weights.yaml"
    assert run(["size", str(EXAMPLES / "s2-32xh20-ep32-fp8.yaml"), "-f", str(bf16)]) == 1
    out = capsys.readouterr().out
    for shown in ("weights      69.95 GiB", "concurrency  4.9 x 32768 tokens per rank; needs 7",
                  "GPU          H20-96GB: 95.58 GiB, budget 0.9 x = 86.02 GiB"):
        assert shown in out and shown in readme


def test_explain_shows_the_overlay_that_set_a_value(capsys):
    overlay = ROOT / "overlays" / "roce-hostnetwork.yaml"
    assert run(["explain", S1, "-f", str(overlay), "--path", "$.spec.network"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("$.spec.network.hostNetwork"))
    assert line.split()[-1] == f"{overlay}:6"
    assert all(x.startswith("$.spec.network") for x in out.splitlines())


def test_sarif_format(tmp_path, capsys):
    bad = tmp_path / "o.yaml"
    bad.write_text("spec:\n  engine: {version: '0.9.0', image: 'vllm/vllm-openai:v0.9.0'}\n")
    assert run(["validate", S1, "-f", str(bad), "--format", "sarif"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["version"] == "2.1.0"
    res = next(r for r in doc["runs"][0]["results"] if r["ruleId"] == "VER001")
    assert res["level"] == "error"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    assert {r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]} == {"VER001"}


def test_readme_plan_excerpt_matches(capsys):
    readme = (ROOT / "README.md").read_text()
    assert run(["plan", str(EXAMPLES / "plan" / "h20-32-seed001-bf16.yaml")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("reachable:"))
    assert line in readme
    alt = next(x for x in out.splitlines() if "with weights: fp8" in x)
    assert alt.split("(")[0].strip() in readme
    assert run(["plan", str(EXAMPLES / "plan" / "h20-96-fixed-layout.yaml")]) == 0
    per_role = [x for x in capsys.readouterr().out.splitlines() if "tokens/s per node" in x]
    assert len(per_role) == 2 and all(x in readme for x in per_role)


def test_explain_of_a_rejected_spec_shows_its_values_and_exits_1(tmp_path, capsys):
    """A spec with a type error: the values it sets are still shown (stdout), the findings go to
    stderr and the exit code is 1 (it was 0 with no finding: a new user's report)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(S1_TEXT.replace("name: deepseek-ai/DeepSeek-V3", "name: 5", 1))
    assert run(["explain", str(bad)]) == 1
    out, err = capsys.readouterr()
    assert "$.spec.model.name = 5" in out
    assert "error SCH005 $.spec.model.name: 5 is not of type string" in err


def test_explain_shows_defaults_inherited_and_derived_values(capsys):
    """Every value the deployment runs with, not only what the files set."""
    assert run(["explain", S1]) == 0
    out = {line.split(" = ")[0]: line for line in capsys.readouterr().out.splitlines()}
    assert out["$.spec.router.port"].endswith("default") and " = 8080 " in out["$.spec.router.port"]
    assert out["$.spec.network.hostNetwork"].endswith("default")
    assert out["$.spec.roles[1].serving.maxModelLen"].endswith(
        "inherited: $.spec.serving.maxModelLen")
    assert '= "180Gi"' in out["$.spec.roles[1].pod.memory"] and "derived" in out[
        "$.spec.roles[1].pod.memory"]
    assert run(["explain", str(EXAMPLES / "s3-v4pro-pd-dp16.yaml"),
                "--path", "$.spec.roles[1].serving"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(x.startswith("$.spec.roles[1].serving.memFractionStatic = 0.877")
               and x.endswith("derived: the HBM check (gen size)") for x in lines)


def test_every_schema_field_is_described():
    """Editors show the schema's descriptions: every field of moegen's own objects has one."""
    from generator.spec.models import json_schema
    schema = json_schema()
    missing = [f"{name}.{prop}" for name, d in schema["$defs"].items()
               if not name.startswith("io.k8s")
               for prop, ps in d.get("properties", {}).items() if "description" not in ps]
    missing += [p for p, ps in schema["properties"].items() if "description" not in ps]
    assert not missing, missing


def test_readme_prediction_excerpt_matches(capsys):
    """The README's two `gen size` prediction lines are what the commands print."""
    readme = (ROOT / "README.md").read_text()
    for extra in ([], ["-f", str(ROOT / "overlays" / "s1-two-prefill-nodes.yaml")]):
        assert run(["size", str(EXAMPLES / "s1-16xh20-pd.yaml"), *extra]) == 0
        line = next(x for x in capsys.readouterr().out.splitlines()
                    if x.startswith("predicted:"))
        assert line in readme


def test_spec_from_standard_input(monkeypatch, capsys):
    """`gen validate -` reads the spec from standard input; findings name it <stdin>; a command
    that parses its input twice (gen report, gen plan) reads it once."""
    import io
    from generator.spec import load
    text = (EXAMPLES / "s1-16xh20-pd.yaml").read_text().replace("tensor: 8, data: 1",
                                                                "tensor: 3, data: 1")
    monkeypatch.setattr(load, "_stdin_cache", {})
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert run(["validate", "-"]) == 1
    assert "<stdin>:52:18: error LAY002" in capsys.readouterr().err
    monkeypatch.setattr(load, "_stdin_cache", {})
    plan_text = (EXAMPLES / "plan" / "h20-96-fixed-layout.yaml").read_text()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(plan_text.encode())))
    assert run(["plan", "-"]) == 0
    assert "decode: 5,716 output tokens/s per node" in capsys.readouterr().out


def test_a_notice_is_counted_annotated_and_never_rejects():
    # notice = what moegen did not check: counted in the summary, a GitHub "notice" and a SARIF
    # "note" (SARIF 2.1.0 result.level), and it does not fail a run, not even with --strict
    import json as _json

    from generator.errors import Finding, Location, Severity
    from generator.output import findings as out
    n = Finding("IMP099", Severity.NOTICE, "$", "not read", location=Location("m.yaml", 3, 1))
    w = Finding("IMP098", Severity.WARNING, "$", "hardening", location=Location("m.yaml", 4, 1))
    assert out.summary([n, w, n]) == "0 errors, 1 warning, 2 notices"
    assert out.summary([w]) == "0 errors, 1 warning"
    assert out.github([n]).startswith("::notice file=m.yaml,line=3,col=1,")
    assert [r["level"] for r in _json.loads(out.sarif([n, w], []))["runs"][0]["results"]] == ["note", "warning"]


@pytest.mark.parametrize("command", ["render", "size", "report", "diff"])
def test_a_kubernetes_manifest_given_as_a_spec_says_import_it(tmp_path, capsys, command):
    """A hand-written apps/v1 Deployment given where a spec is read gave seven schema errors
    (apiVersion, kind, four required fields, unknown replicas) and no hint (a new user's trial,
    issue #35): one finding says what the file is and to import it first."""
    from tests.helpers import vllm_deployment
    dep = tmp_path / "dep.yaml"
    dep.write_text(vllm_deployment("deepseek-ai/DeepSeek-R1", '--tensor-parallel-size, "8"'))
    args = {"render": ["render", str(dep), "-o", str(tmp_path / "out")],
            "size": ["size", str(dep)], "report": ["report", str(dep)],
            "diff": ["diff", str(EXAMPLES / "s1-16xh20-pd.yaml"), str(dep)]}[command]
    assert run(args) == 1
    err = capsys.readouterr().err
    assert "SCH00" in err and "Traceback" not in err
    lines = [x for x in err.splitlines() if " error " in x]
    assert lines == [f"{dep}:1:1: error SCH001 $.apiVersion: this is a Kubernetes manifest "
                     "(apps/v1 Deployment), not an InferenceDeployment"], err
    assert f"hint: import it first: gen import {dep} -o spec.yaml" in err


def test_a_stream_of_manifests_given_as_a_spec_says_import_them(tmp_path, capsys):
    """A LeaderWorkerSet and its Service in one file, given to gen render: LOAD004 (one document
    per spec file) says how to read manifests."""
    f = tmp_path / "lws.yaml"
    f.write_text("apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\n"
                 "metadata: {name: a}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: a}\n")
    assert run(["render", str(f), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert "LOAD004" in err and f"gen import {f} -o spec.yaml" in err


def test_explain_marks_a_router_that_is_not_rendered(tmp_path, capsys):
    """router {enabled: true, kind: vllm-router} on unified roles (a new user's trial, day 42):
    gen explain listed ``$.spec.router.kind = "vllm-router"  router.yaml:2`` as if it ran, and
    no router is rendered (RTR015)."""
    overlay = tmp_path / "router.yaml"
    overlay.write_text("spec:\n  router: {enabled: true, kind: vllm-router}\n")
    assert run(["explain", str(EXAMPLES / "s1-32xh20-unified.yaml"), "-f", str(overlay),
                "--path", "$.spec.router"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5 and all(x.endswith("(not rendered: RTR015)") for x in lines)
