"""The manifest importer (issue #24): the reader's streams, the shell reader, the option reader,
classification of inputs, ``gen validate`` of many inputs, ``gen import``, and the round trip:
``gen import`` of moegen's own output gives back a spec whose render is byte-identical, for every
example and golden case. The twenty third-party manifests are in test_import_reference.py."""

from __future__ import annotations

import io
import json
import random
import shutil
from pathlib import Path

import pytest
import yaml

from generator import pipeline
from generator.cli import run
from generator.emit import diff_tree, write_tree
from generator.importer import Options, classify, import_unit, to_loaded
from generator.importer.argv import find_engine, parse_engine_args, resolve
from generator.importer.shell import ShellError, is_runtime, run_script, runtime, show
from generator.inputs import read_inputs
from generator.spec import load
from generator.spec.load import read_unit
from tests.helpers import EXAMPLES, ROOT, finding_keys, materialise_case, vllm_deployment
from tests.test_golden import GOLDEN, cases

S1 = EXAMPLES / "s1-16xh20-pd.yaml"


# -- the shell reader --------------------------------------------------------------------------


def test_shell_variables_arithmetic_branches_and_exec():
    script = (
        "set -eu\n"
        "START_RANK=$(( ${LWS_WORKER_INDEX:-0} * DP_SIZE_LOCAL ))\n"
        "API=1\n"
        'if [ "${LWS_WORKER_INDEX:-0}" -gt 0 ]; then\n'
        "  API=0\n"
        "fi\n"
        "exec vllm serve m \\\n"
        "  --a $((LWS_GROUP_SIZE * DP_SIZE_LOCAL)) --b $START_RANK --c $API \\\n"
        "  --kv '{\"x\": 1}' $EXTRA \"$@\"\n"
        "echo never\n")
    env = {"LWS_WORKER_INDEX": "1", "DP_SIZE_LOCAL": "8", "LWS_GROUP_SIZE": "2",
           "EXTRA": "--x 1 --y"}
    cmds = run_script(script, env, ["--z"])
    # exec ends the script: `echo never` is not run; $EXTRA splits into fields, "$@" does not.
    assert [c.argv[0] for c in cmds] == ["vllm"]
    # 2 pods x 8 local ranks = 16; start rank 1 x 8 = 8; the worker branch sets API=0.
    assert cmds[0].argv == ("vllm", "serve", "m", "--a", "16", "--b", "8", "--c", "0", "--kv",
                            '{"x": 1}', "--x", "1", "--y", "--z")
    # Positions (0-based line, column): `--a` starts line 7 column 2.
    assert cmds[0].positions[3] == (7, 2)


def test_shell_case_functions_eval_and_runtime_values():
    script = (
        "f() { echo in-f; }\n"
        'case "${IDX}" in\n'
        "  0) set -- --leader ;;\n"
        "  1) ADDR=`resolve`; set -- --headless --addr \"$ADDR\" ;;\n"
        "  *) exit 1 ;;\n"
        "esac\n"
        "f\n"
        'eval "exec python3 -m sglang.launch_server --tp 8 $@"\n')
    leader = run_script(script, {"IDX": "0"})
    assert [c.argv for c in leader] == [("echo", "in-f"),
                                       ("python3", "-m", "sglang.launch_server", "--tp", "8",
                                        "--leader")]
    worker = run_script(script, {"IDX": "1"})[-1]
    assert worker.argv[-3:-1] == ("--headless", "--addr")
    assert is_runtime(worker.argv[-1]) and show(worker.argv[-1]) == "<`resolve`>"
    # An undecidable case (a runtime value) takes the first non-default branch; commands in it
    # are marked conditional.
    unknown = run_script(script, {"IDX": runtime("pod index")})[-1]
    assert unknown.argv[-1] == "--leader"
    inside = run_script('case "$IDX" in 0) vllm serve m ;; esac', {"IDX": runtime("i")})
    assert [c.conditional for c in inside] == [True]


def test_shell_unset_variables_are_reported():
    cmd = run_script("vllm serve m --data-parallel-size $DP_SIZE", {})[0]
    assert cmd.argv == ("vllm", "serve", "m", "--data-parallel-size") and cmd.unset == {"DP_SIZE"}


@pytest.mark.parametrize("bad", ["echo 'open", 'echo "open', "cat <<EOF\nx\nEOF\n", "if x; then",
                                 "case x in a) y", "echo $(unclosed"])
def test_shell_refuses_what_it_cannot_read(bad):
    with pytest.raises(ShellError):
        run_script(bad, {})


def test_shell_never_raises_anything_else_on_random_text():
    """Fuzz: random shell-ish text is read or refused with ShellError, never another error."""
    rng = random.Random(24)
    alphabet = list("ab $(){}[];&|'\"\\`\n=-+*/#!0123456789") + ["if ", "then ", "fi ", "case ",
                                                                "esac ", " in ", "$((", "${"]
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        try:
            run_script(text, {"a": "1"})
        except ShellError:
            pass


# -- the engines' option tables ----------------------------------------------------------------


def test_options_read_with_the_release_table():
    argv = ["vllm", "serve", "--kv_transfer_config", '{"kv_connector":"NixlConnector"}',
            "--enforce-eager", "/models/x", "--served-model-name", "a", "b", "-tp=4",
            "--disable-prefix-caching", "--max-model-len", "4096"]
    engine, wrapper, first, start = find_engine(argv)
    cmd = parse_engine_args(engine, wrapper, "0.33.0", argv, start, start)
    # vllm serve's positional model may follow options; --x_y is --x-y; a flag takes no value;
    # --served-model-name takes a list; -tp=4 is the alias with an inline value.
    assert cmd.model == "/models/x"
    assert cmd.json("--kv-transfer-config") == {"kv_connector": "NixlConnector"}
    assert cmd.flag("--enforce-eager") is True and cmd.flag("--enable-prefix-caching") is False
    assert cmd.get("--served-model-name").value == ["a", "b"]
    assert cmd.value("--tensor-parallel-size") == "4" and cmd.value("--max-model-len") == "4096"


def test_sglang_abbreviations_resolve_as_argparse_does():
    # argparse allow_abbrev (on in SGLang's parser): --tp is the unique prefix of --tp-size;
    # vLLM 0.33 has several --dp... options, so --dp is ambiguous there.
    assert resolve("sglang", "0.5.23", "--tp") == "--tp-size"
    assert resolve("sglang", "0.5.23", "--dp") == "--dp-size"
    assert resolve("vllm", "0.33.0", "--dp") is None
    argv = ["python3", "-m", "dynamo.sglang", "--tp", "16", "--dp", "16", "--enable-dp-attention",
            "--dyn-tool-call-parser", "x"]
    engine, wrapper, first, start = find_engine(argv)
    assert (engine, wrapper) == ("sglang", "dynamo")
    cmd = parse_engine_args(engine, wrapper, "0.5.19", argv, start, start)
    assert cmd.value("--tp-size") == "16" and cmd.value("--dp-size") == "16"
    assert [o.wrapper for o in cmd.options] == [False, False, False, True]


# -- the reader ----------------------------------------------------------------------------------


def test_streams_keep_documents_before_a_broken_one(tmp_path):
    f = tmp_path / "m.yaml"
    f.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n"
                 "kind: Secret\nstringData:\n  token: {{TOKEN}}\n---\nkind: ConfigMap\n"
                 "metadata: {name: b}\n---\nkey: [unclosed\n")
    unit = read_unit(f)
    # The Secret's {{TOKEN}} is a mapping as a key (LOAD014, line 7); the last document is not
    # YAML (LOAD008); the two ConfigMaps are kept.
    assert [d.data["metadata"]["name"] for d in unit.documents] == ["a", "b"]
    assert sorted((x.code, x.location.line) for x in unit.findings) == [("LOAD008", 13),
                                                                         ("LOAD014", 7)]


def test_a_directory_reads_kustomize_env_files_as_configmaps(tmp_path):
    out = tmp_path / "o"
    assert run(["render", str(S1), "-o", str(out)]) == 0
    unit = read_unit(out, load.expand_inputs([out])[0][0][1])
    cm = next(d for d in unit.documents if d.data.get("kind") == "ConfigMap"
              and d.data["metadata"]["name"] == "dsv3-pd-decode-env")
    assert cm.data["data"]["NCCL_IB_HCA"] == "=mlx5_0,mlx5_1,mlx5_2,mlx5_3"
    loc = cm.provenance.locate(("data", "NCCL_IB_HCA"))
    assert loc.file.endswith("env/decode.env") and loc.line == 5


def test_classify(tmp_path):
    spec, plan = read_unit(S1), read_unit(EXAMPLES / "plan" / "h20-96-fixed-layout.yaml")
    hooks = read_unit(ROOT / ".pre-commit-hooks.yaml")
    assert classify(spec.documents) == "spec" and classify(plan.documents) == "plan"
    assert classify(hooks.documents) == "neither"


# -- the round trip -------------------------------------------------------------------------


@pytest.mark.parametrize("name,spec,overlays", cases(), ids=[c[0] for c in cases()])
def test_import_of_moegens_output_renders_the_same_bytes(name, spec, overlays, tmp_path):
    """gen import of a golden tree -> a spec whose gen render is the golden tree, byte for byte,
    and whose findings are those of the spec it was rendered from."""
    tree = GOLDEN / name / "expected"
    batch = read_inputs([tree])
    assert batch.findings == [] and [r.kind for r in batch.results] == ["manifest"]
    checked = batch.results[0].checked
    errors = [f for f in checked.findings if f.severity.value == "error"]
    assert not errors, errors
    _, files = pipeline.render(checked)
    assert diff_tree(tree, files) == []
    original = pipeline.check(spec, overlays)
    assert finding_keys(batch.results[0].findings) == finding_keys(original.findings)


def _kubernetes_target(case: Path) -> bool:
    """The case renders for the default target (the byte-for-byte round trip holds for the
    kubernetes output only: test_moegens_platform_output_imports_without_findings)."""
    meta = yaml.safe_load(case.read_text())
    docs = [yaml.safe_load(meta["inline"]) if meta["spec"] == "inline" else {},
            yaml.safe_load(meta.get("overlay") or "{}")]
    names = [((d or {}).get("spec") or {}).get("target", {}).get("name") for d in docs]
    return all(n in (None, "kubernetes") for n in names)


FIELD_RENDERED = sorted(p.parent for p in (ROOT / "tests" / "field").glob("*/case.yaml")
                        if "\nrender:" in p.read_text() and _kubernetes_target(p))


@pytest.mark.parametrize("case", FIELD_RENDERED, ids=[c.name for c in FIELD_RENDERED])
def test_import_of_a_rendered_field_case_renders_the_same_bytes(case, tmp_path):
    """The field cases that render (tests/field, ``render:``) hold what the goldens do not
    (EFA NICs and their NIXL/Mooncake extra config, a ComputeDomain's IMEX channel, the flags a
    model needs): gen import of each render gives back a spec whose render is the same bytes,
    with the same findings."""
    spec, overlays, _ = materialise_case(case, tmp_path)
    original = pipeline.check(spec, overlays)
    tree = tmp_path / "tree"
    write_tree(tree, pipeline.render(original)[1])
    batch = read_inputs([tree])
    assert batch.findings == [] and [r.kind for r in batch.results] == ["manifest"]
    checked = batch.results[0].checked
    assert not [f for f in checked.findings if f.severity.value == "error"], checked.findings
    assert diff_tree(tree, pipeline.render(checked)[1]) == []
    assert sorted((f.code, f.path) for f in checked.findings) == \
        sorted((f.code, f.path) for f in original.findings)


TARGET_GOLDEN = ROOT / "tests" / "golden-targets"
TARGET_CASES = sorted(p.name for p in TARGET_GOLDEN.iterdir() if (p / "expected").is_dir())


@pytest.mark.parametrize("name", TARGET_CASES)
def test_moegens_platform_output_imports_without_findings(name, tmp_path):
    """moegen's KServe, RBG, Dynamo and AIBrix output (tests/golden-targets) reads back as one
    deployment with the engine release it was rendered for and no finding: the KServe presets'
    single-node command (no --api-server-count outside data parallelism), RBG's leader and
    worker template patches (a strategic merge: the leader's 75 cores / 180Gi, the workers' 42 /
    130Gi on S1's decode), the engine release of a Dynamo runtime image (1.4.0's vllm-runtime
    bundles vLLM 0.26.0 and sglang-runtime SGLang 0.5.16, facts/controllers.py; a custom
    build's -vllm0.33.0 suffix). (The spec it gives back does not name spec.target, and is not
    byte-identical when rendered for the platform: the round trip holds for the kubernetes
    output, test_import_of_moegens_output_renders_the_same_bytes.)"""
    case = yaml.safe_load((TARGET_GOLDEN / name / "case.yaml").read_text())
    spec, overlays = ROOT / case["spec"], [TARGET_GOLDEN / name / o
                                           for o in case.get("overlays", [])]
    original = pipeline.check(spec, overlays)
    batch = read_inputs([TARGET_GOLDEN / name / "expected"])
    assert [r.kind for r in batch.results] == ["manifest"]
    # Notices say what moegen could not check (S1: the NIXL restart race, RST011), not the input.
    assert [f for f in batch.all_findings() if f.severity.value != "notice"] == []
    engine = batch.results[0].imported.data["spec"]["engine"]
    assert (engine["name"], engine["version"]) == (original.spec.spec.engine.name,
                                                   original.spec.spec.engine.version)


def test_gen_import_writes_a_spec_that_renders_the_same_tree(tmp_path, capsys):
    out = tmp_path / "o"
    assert run(["render", str(S1), "-o", str(out)]) == 0
    spec = tmp_path / "imported.yaml"
    assert run(["import", str(out), "-o", str(spec)]) == 0
    assert "InferenceDeployment dsv3-pd written" in capsys.readouterr().err
    text = spec.read_text()
    assert text.startswith("# Imported by gen import from")
    doc = yaml.safe_load(text)
    # The fields S1's spec sets come back; what moegen derives does not. The decode's
    # --max-num-seqs 13 = ceil(200 / 16) alone would give 13 x 16 = 208 sequences: the
    # workload's moegen.dev/sized-load annotation says 200 (and spec.traffic).
    decode = doc["spec"]["roles"][1]
    assert decode["parallel"] == {"data": 16, "expert": True}
    assert decode["moe"]["eplb"]["redundantExperts"] == 32
    assert decode["sizing"] == {"concurrency": 200}
    assert doc["spec"]["traffic"] == {"inputTokens": 3500, "outputTokens": 1200}
    assert "engineArgs" not in decode and "env" not in decode
    assert run(["render", str(spec), "-o", str(out), "--check"]) == 0
    # A second import replaces the file it wrote; a file moegen did not write is refused.
    assert run(["import", str(out), "-o", str(spec)]) == 0
    other = tmp_path / "mine.yaml"
    other.write_text("mine\n")
    assert run(["import", str(out), "-o", str(other)]) == 2


# -- gen validate of many inputs ---------------------------------------------------------------


def test_validate_many_inputs_in_one_process(tmp_path, capsys):
    out = tmp_path / "o"
    assert run(["render", str(S1), "-o", str(out)]) == 0
    capsys.readouterr()
    (tmp_path / "values.yaml").write_text("replicaCount: 2\n")
    (tmp_path / "chart.yaml").write_text("{{ .Values.x }}: [\n")   # a Helm template
    args = ["validate", str(S1), str(EXAMPLES / "s2-32xh20-ep32-fp8.yaml"), str(out),
            str(tmp_path / "values.yaml"), str(tmp_path / "chart.yaml"),
            str(EXAMPLES / "plan" / "h20-96-fixed-layout.yaml")]
    assert run(args) == 0
    err = capsys.readouterr().err.strip().splitlines()
    # One summary line: two specs and the rendered tree's deployment checked; the values file
    # and the Helm template skipped; the PlanRequest left to gen plan. The notices: S1 and its
    # rendered tree: none (vLLM 0.33.0 runs NIXL >= 1.5.0: no RST011).
    assert err[-1:] == [
        "checked 2 specs and 1 deployment from manifests; 2 files skipped (neither specs nor "
        "serving manifests); 1 PlanRequest (gen plan): 0 errors, 0 warnings"]
    assert run([*args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and [i["kind"] for i in doc["inputs"]] == ["spec", "spec", "manifest"]
    assert doc["skipped"] == sorted([str(tmp_path / "chart.yaml"), str(tmp_path / "values.yaml")])


def test_validate_reports_each_input_at_its_file(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(S1.read_text().replace("tensor: 8, data: 1", "tensor: 3, data: 1"))
    assert run(["validate", str(S1), str(bad), "--format", "github"]) == 1
    lines = [x for x in capsys.readouterr().out.splitlines() if not x.startswith("::notice")]
    assert lines and all(f"file={bad}" in x for x in lines)
    assert any("LAY002" in x and "line=52" in x for x in lines)
    assert run(["validate", str(S1), str(tmp_path / "missing.yaml")]) == 2


def test_validate_manifests_from_standard_input(monkeypatch, capsys, tmp_path):
    """A kustomize-build-like stream on stdin: the objects and the env ConfigMaps (built here
    from the env files, as configMapGenerator does) -> one deployment, checked clean, every
    finding named <stdin>."""
    out = tmp_path / "o"
    assert run(["render", str(S1), "-o", str(out)]) == 0
    docs = [p.read_text() for p in sorted(out.glob("*.yaml")) if p.name != "kustomization.yaml"]
    for env in sorted((out / "env").glob("*.env")):
        data = dict(line.split("=", 1) for line in env.read_text().splitlines()
                    if line and not line.startswith("#"))
        docs.append(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": f"dsv3-pd-{env.stem}-env", "namespace": "llm"}, "data": data}))
    monkeypatch.setattr(load, "_stdin_cache", {})
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("---\n".join(docs).encode())))
    capsys.readouterr()
    assert run(["validate", "-", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [i["name"] for i in doc["inputs"]] == ["dsv3-pd (<stdin>)"]
    assert doc["findings"] == [] and doc["skipped"] == []   # (vLLM 0.33.0: no RST011)


def test_imported_findings_point_at_the_manifest(tmp_path, capsys):
    out = tmp_path / "o"
    assert run(["render", str(S1), "-o", str(out)]) == 0
    lws = out / "decode-lws.yaml"
    lws.write_text(lws.read_text().replace('"num_redundant_experts":32',
                                           '"num_redundant_experts":24'))
    assert run(["validate", str(out), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    # 256 routed + 24 redundant = 280 experts are not divisible by EP 16 (280 = 17.5 x 16): the
    # finding is located at the --eplb-config line of the leader's launcher: line 103 of
    # decode-lws.yaml, column 15 (the script's indentation, 14, + 1).
    ep = [f for f in doc["findings"] if f["code"] == "EP003"]
    assert [(Path(f["file"]).name, f["line"], f["column"]) for f in ep] == \
        [("decode-lws.yaml", 103, 15)]


def test_rdma_without_named_devices_is_a_notice(tmp_path):
    """A pod that requests rdma/ib and names no HCA: NCCL (NCCL_IB_HCA unset) and UCX use every
    device the pod sees, so the manifest is sound; moegen only cannot run its RDMA checks
    (IMP004, a notice, not a warning: issue #31)."""
    lws = tmp_path / "lws.yaml"
    lws.write_text(
        "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: r1}\n"
        "spec:\n  leaderWorkerTemplate:\n    size: 1\n    workerTemplate:\n      spec:\n"
        "        containers:\n        - name: vllm\n          image: vllm/vllm-openai:v0.33.0\n"
        "          args: [/models/DeepSeek-R1, --tensor-parallel-size, '8']\n"
        "          resources: {limits: {nvidia.com/gpu: 8, rdma/ib: 1}}\n")
    found = read_inputs([lws], opts=Options()).all_findings()
    assert [(f.code, f.severity.value) for f in found if f.code == "IMP004"] == \
        [("IMP004", "notice")]


def test_engine_command_as_one_string_is_an_error(tmp_path):
    """``command: ["python3 -m sglang.launch_server ..."]`` (one list item, no shell): the kubelet
    executes a program named by the whole string, which does not exist (IMP018, an error at the
    string's line); its words are still read as the command meant (the engine, --tp 8)."""
    lws = tmp_path / "lws.yaml"
    lws.write_text(
        "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: r1}\n"
        "spec:\n  leaderWorkerTemplate:\n    size: 1\n    workerTemplate:\n      spec:\n"
        "        containers:\n        - name: sglang\n          image: lmsysorg/sglang:v0.5.23\n"
        "          command:\n          - >\n            python3 -m sglang.launch_server\n"
        "            --model-path /models/DeepSeek-R1 --tp 8\n"
        "          resources: {limits: {nvidia.com/gpu: 8}}\n")
    batch = read_inputs([lws], opts=Options())
    found = batch.all_findings()
    # The folded scalar's item starts on line 13 (``- >``), column 13.
    assert [(f.code, f.severity.value, f.location.line) for f in found
            if f.code == "IMP018"] == [("IMP018", "error", 13)]
    # python3, -m, sglang.launch_server, --model-path, /models/DeepSeek-R1, --tp, 8: 7 words.
    assert "7 words" in next(f.message for f in found if f.code == "IMP018")
    assert batch.results[0].imported.data["spec"]["roles"][0]["parallel"] == {"tensor": 8}


def test_import_options_fill_what_a_manifest_does_not_say(tmp_path):
    lws = tmp_path / "lws.yaml"
    lws.write_text(
        "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: r1}\n"
        "spec:\n  leaderWorkerTemplate:\n    size: 1\n    workerTemplate:\n      spec:\n"
        "        containers:\n        - name: vllm\n          image: vllm/vllm-openai:v0.33.0\n"
        "          args: [/models/DeepSeek-R1, --tensor-parallel-size, '8', --max-model-len,"
        " '8192']\n          resources: {limits: {nvidia.com/gpu: 8}}\n")
    batch = read_inputs([lws], opts=Options())
    # The GPU is not stated: a notice that the deployment checks did not run (issue #31: never
    # an error on a manifest that may run), and none of them ran (no HBM check of a GPU the
    # manifest does not name). IMP017 (no probe) is the importer's own reading.
    found = batch.results[0].findings
    assert sorted((f.code, f.severity.value) for f in found) == \
        [("IMP012", "notice"), ("IMP017", "warning")]
    assert batch.ok and run(["validate", str(lws)]) == 0
    # gen import writes gpu: unknown, not a guess; gen validate of that spec runs the checks
    # that do not read the GPU (POOL006 says which did not) and finds what they find: nothing
    # is mounted at the local model path /models/DeepSeek-R1 (MOD005), so the import exits 1.
    spec = tmp_path / "spec.yaml"
    assert run(["import", str(lws), "-o", str(spec)]) == 1
    assert yaml.safe_load(spec.read_text())["spec"]["nodePools"]["serve"]["gpu"] == "unknown"
    again = read_inputs([spec]).results[0].checked.findings
    assert [(f.code, f.severity.value) for f in again] == [("MOD005", "error"),
                                                          ("POOL006", "notice")]
    batch = read_inputs([lws], opts=Options(gpu="H200-141GB"))
    r = batch.results[0]
    assert r.imported.data["spec"]["nodePools"]["serve"]["gpu"] == "H200-141GB"
    assert r.imported.data["spec"]["model"]["architecture"] == "deepseek-r1"
    # The image's entrypoint is vllm serve (the args are its arguments).
    assert r.imported.data["spec"]["roles"][0]["parallel"] == {"tensor": 8}
    # IMP017: the container has no probe.
    assert {f.code for f in r.findings} <= {"IMP010", "POOL005", "MOD005", "IMP017"}


def test_imported_unit_without_engines_finds_nothing(tmp_path):
    f = tmp_path / "svc.yaml"
    f.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\n")
    assert import_unit(read_unit(f)).deployments == []


def test_to_loaded_merges_an_overlay_over_the_import(tmp_path):
    out = tmp_path / "o"
    assert run(["render", str(S1), "-o", str(out)]) == 0
    dep = import_unit(read_unit(out, load.expand_inputs([out])[0][0][1])).deployments[0]
    ctx = tmp_path / "ctx.yaml"
    ctx.write_text("spec:\n  nodePools:\n    decode: {nodes: 8}\n")
    loaded = to_loaded(dep, [ctx])
    assert loaded.data["spec"]["nodePools"]["decode"]["nodes"] == 8
    assert loaded.provenance.locate(("spec", "nodePools", "decode", "nodes")).file == str(ctx)


def test_pre_commit_hook_takes_many_files_and_skips_the_others():
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    validate = next(h for h in hooks if h["id"] == "moegen-validate")
    # Many files per call (pass_filenames, require_serial); every YAML is fine: gen validate
    # skips what is neither a spec nor a serving manifest, and --allow-empty passes a commit
    # that changes none (without it: INP001).
    assert validate["entry"] == "gen validate --allow-empty" and validate["types"] == ["yaml"]
    assert validate.get("pass_filenames", True) is True and validate["require_serial"] is True
    files = [str(p) for p in sorted(ROOT.glob("**/*.yaml"))
             if ".venv" not in p.parts and "expected" not in p.parts and "invalid" not in p.parts
             and "golden" not in p.parts][:60]
    assert run(["validate", *files]) == 0
    hooks_file = str(ROOT / ".pre-commit-hooks.yaml")   # neither: a commit that changes only it
    assert run(["validate", "--allow-empty", hooks_file]) == 0
    assert run(["validate", hooks_file]) == 1


def test_copied_tree_round_trips_through_the_cli(tmp_path):
    # The shipped workflow: render, commit, later import what is committed.
    src = GOLDEN / "s3-v4pro-pd-dp16" / "expected"
    tree = tmp_path / "t"
    shutil.copytree(src, tree)
    spec = tmp_path / "s.yaml"
    assert run(["import", str(tree), "-o", str(spec)]) == 0
    assert run(["render", str(spec), "-o", str(tree), "--check"]) == 0
    write_tree(tmp_path / "again", pipeline.render(pipeline.check(spec))[1])
    assert diff_tree(src, pipeline.render(pipeline.check(spec))[1]) == []


def test_the_readme_workflow_runs(tmp_path, capsys):
    """The GitHub Actions workflow in the README: its gen commands, run on a copy of the
    examples as deploy/ (S1 as deploy/dsv3.yaml, rendered first as manifests/dsv3)."""
    import re
    text = (ROOT / "README.md").read_text()
    block = re.search(r"A GitHub Actions workflow.*?```yaml\n(.*?)```", text, re.S).group(1)
    steps = yaml.safe_load(block)["jobs"]["validate"]["steps"]
    runs = [s["run"].split("#")[0].strip() for s in steps if s.get("run", "").startswith("gen ")]
    assert len(runs) == 3
    deploy = tmp_path / "deploy"
    shutil.copytree(EXAMPLES, deploy)
    shutil.copy(S1, deploy / "dsv3.yaml")
    assert run(["render", str(deploy / "dsv3.yaml"), "-o", str(tmp_path / "manifests" / "dsv3")]) == 0
    import os
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for cmd in runs:
            argv = cmd.split()[1:]
            sarif = ">" in argv
            if sarif:
                argv = argv[:argv.index(">")]
            capsys.readouterr()
            assert run(argv) == 0, cmd
            if sarif:
                assert json.loads(capsys.readouterr().out)["version"] == "2.1.0"
    finally:
        os.chdir(cwd)


RBG = """apiVersion: workloads.x-k8s.io/v1alpha2
kind: RoleBasedGroup
metadata: {name: dsr1, namespace: llm}
spec:
  roles:
  - name: prefill
    replicas: 1
    standalonePattern:
      template:
        spec:
          nodeSelector: {nvidia.com/gpu.product: NVIDIA-H200}
          containers:
          - name: sglang
            image: lmsysorg/sglang:v0.5.23
            command: [python3, -m, sglang.launch_server]
            args: [--model-path, /models/DeepSeek-R1, --tp-size, "8", --disaggregation-mode,
                   prefill, --disaggregation-transfer-backend, nixl]
            resources: {limits: {nvidia.com/gpu: 8}}
  - name: decode
    replicas: 1
    leaderWorkerPattern:
      size: 2
      template:
        spec:
          nodeSelector: {nvidia.com/gpu.product: NVIDIA-H200}
          containers:
          - name: sglang
            image: lmsysorg/sglang:v0.5.23
            command: [sh, -c]
            args:
            - |
              exec python3 -m sglang.launch_server --model-path /models/DeepSeek-R1 \\
                --tp-size 16 --attn-dp-size 16 --ep-size 16 --disaggregation-mode decode \\
                --disaggregation-transfer-backend nixl --nnodes $RBG_LWP_GROUP_SIZE \\
                --node-rank $RBG_LWP_WORKER_INDEX --dist-init-addr $RBG_LWP_LEADER_ADDRESS:20000 \\
                --max-running-requests 128
            resources: {limits: {nvidia.com/gpu: 8}}
"""

STORM = """apiVersion: orchestration.aibrix.ai/v1alpha1
kind: StormService
metadata: {name: dsv3}
spec:
  replicas: 1
  stateful: true
  selector: {matchLabels: {app: dsv3}}
  template:
    metadata: {labels: {app: dsv3}}
    spec:
      roles:
      - name: serve
        replicas: 2
        podGroupSize: 2
        stateful: true
        template:
          spec:
            nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
            containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              command: [sh, -c]
              args:
              - |
                exec vllm serve /models/DeepSeek-V3 --tensor-parallel-size 8 \\
                  --pipeline-parallel-size 2 --nnodes $POD_GROUP_SIZE --node-rank $POD_GROUP_INDEX
              resources: {limits: {nvidia.com/gpu: 8}}
"""


@pytest.mark.parametrize("text,crd", [(RBG, "workloads.x-k8s.io_rolebasedgroups.yaml"),
                                      (STORM, "orchestration.aibrix.ai_stormservices.yaml")])
def test_platform_crds_are_read(text, crd, tmp_path):
    """RoleBasedGroup and StormService documents (valid against their CRDs) become roles; the
    variables their controllers add resolve in the launch scripts."""
    import jsonschema
    from tests.helpers import shared
    doc = yaml.safe_load(text)
    crd_doc = yaml.safe_load(shared("reference", "crds", crd).read_text())
    version = doc["apiVersion"].split("/")[1]
    schema = next(v["schema"]["openAPIV3Schema"] for v in crd_doc["spec"]["versions"]
                  if v["name"] == version)
    jsonschema.Draft7Validator(schema).validate(doc)
    f = tmp_path / "cr.yaml"
    f.write_text(text)
    batch = read_inputs([f])
    dep = batch.results[0].imported.data["spec"]
    if doc["kind"] == "RoleBasedGroup":
        # decode: --tp-size 16 over --attn-dp-size 16 = tensor 1 x data 16 on 2 pods of 8 GPUs;
        # --max-running-requests 128 (not moegen's: the engine's cap, serving.maxNumSeqs). The
        # roles' pods are alike (H200, 8 GPUs, one selector): one pool of 1 + 2 nodes.
        prefill, decode = dep["roles"]
        assert (prefill["mode"], decode["mode"]) == ("prefill", "decode")
        assert decode["parallel"] == {"data": 16, "expert": True}
        assert decode["serving"]["maxNumSeqs"] == 128
        assert prefill["nodePool"] == decode["nodePool"]
        assert dep["nodePools"][decode["nodePool"]] == {
            "gpu": "H200-141GB", "gpusPerNode": 8, "nodes": 3,
            "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H200"}}
    else:
        # 2 pod groups of 2 pods, TP8 x PP2 = 16 GPUs each: 2 instances, 4 nodes of H100.
        (serve,) = dep["roles"]
        assert serve["replicas"] == 2 and serve["parallel"] == {"tensor": 8, "pipeline": 2}
        assert dep["nodePools"]["serve"]["nodes"] == 4
        assert dep["nodePools"]["serve"]["gpu"] == "H100-80GB"
    assert not [x for x in batch.all_findings() if x.code in ("IMP006", "IMP009", "IMP001")]


def _lws(script_or_args, tmp_path, shell=True, gpus=8, size=1):
    args = (["command: [sh, -c]", "          args:", "          - |"]
            + ["            " + x for x in script_or_args.splitlines()]) if shell else \
        [f"args: {json.dumps(script_or_args)}"]
    f = tmp_path / "lws.yaml"
    f.write_text(
        "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: r1}\n"
        f"spec:\n  leaderWorkerTemplate:\n    size: {size}\n    workerTemplate:\n      spec:\n"
        "        nodeSelector: {nvidia.com/gpu.product: NVIDIA-H200}\n"
        "        containers:\n        - name: vllm\n          image: vllm/vllm-openai:v0.33.0\n"
        "          " + "\n".join(args) + "\n"
        f"          resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}\n")
    return f


def _codes(f):
    return sorted((x.code, x.location.line) for x in read_inputs([f]).all_findings()
                  if x.code.startswith("IMP"))


def test_imp_findings_for_what_cannot_be_reconstructed(tmp_path):
    # The file: line 15 is the args item `- |`, line 16 the script's first line.
    # IMP002: a here-document (the shell reader does not take them): at the script's item.
    f = _lws("cat <<EOF > /tmp/x\nhello\nEOF\nvllm serve /models/DeepSeek-R1", tmp_path)
    assert _codes(f) == [("IMP002", 15)]
    # IMP006: $LEN is set by nothing: the shell drops the word and vLLM sees no value (at the
    # command, line 16).
    f = _lws("exec vllm serve /models/DeepSeek-R1 --tensor-parallel-size 8 --max-model-len $LEN",
             tmp_path)
    assert ("IMP006", 16) in _codes(f)
    # IMP009: TP 16 asks for 16 GPUs; one pod of 8 GPUs gives 8.
    f = _lws("exec vllm serve /models/DeepSeek-R1 --tensor-parallel-size 16", tmp_path)
    assert ("IMP009", 16) in _codes(f)
    # IMP009 too: 2 pods x 4 local ranks = 8 ranks for --data-parallel-size 16.
    f = _lws("exec vllm serve /models/DeepSeek-R1 --data-parallel-size 16 \\\n"
             "  --data-parallel-size-local 4 --enable-expert-parallel", tmp_path, gpus=8, size=2)
    msgs = [x.message for x in read_inputs([f]).all_findings() if x.code == "IMP009"]
    assert any("4 x 2 pod(s) = 8 DP ranks" in m for m in msgs)


def test_imp001_a_platform_engine_container_without_an_engine(tmp_path):
    f = tmp_path / "dgd.yaml"
    f.write_text("apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\n"
                 "metadata: {name: d}\nspec:\n  services:\n    decode:\n"
                 "      componentType: worker\n      extraPodSpec:\n        mainContainer:\n"
                 "          image: x\n          command: [python3, my_launcher.py]\n")
    assert [(x.code, x.severity.value) for x in import_unit(read_unit(f)).findings] == \
        [("IMP001", "error")]


def test_imp011_a_model_outside_the_catalog(tmp_path):
    """IMP011: a served model the catalog does not have (Llama-3.1, a dense model) is named
    at the command; Llama-4, gpt-oss and the other families of issue 35 are in it."""
    f = _lws("exec vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 8",
             tmp_path)
    assert ("IMP011", 16) in _codes(f)
    f = _lws("exec vllm serve openai/gpt-oss-120b --tensor-parallel-size 8", tmp_path)
    assert "IMP011" not in {c for c, _ in _codes(f)}


@pytest.mark.parametrize("value", ["banana", "latest", "0.33"])
def test_an_engine_version_that_is_not_a_release_is_a_usage_error(tmp_path, capsys, value):
    """--engine-version banana was taken as a stated release (IMP008 "judged at 0.33.0, the
    nearest it knows") and turned release-dependent errors into warnings: exit 0 on a manifest
    whose flag the parser refuses. It is refused like --gpu FOO (exit 2), before any file is read."""
    lws = tmp_path / "m.yaml"
    lws.write_text(vllm_deployment("deepseek-ai/DeepSeek-R1", '--tensor-parallel-size, "8"'))
    assert run(["validate", str(lws), "--engine-version", value]) == 2
    assert capsys.readouterr().err == (f"gen: error: --engine-version {value}: not a release "
                                       "(MAJOR.MINOR.PATCH, e.g. 0.33.0)\n")


def _sglang_prefill_cp(tmp_path, model, args=("--cp-strategy", "interleave"), tp="8",
                       codes=("IMP028",)):
    """An LWS serving ``model`` with SGLang 0.5.23 on ``--tp-size tp`` (8 GPUs) and
    ``--enable-prefill-cp`` (line 18) followed by ``args`` (one a line from 19), no
    ``--attn-cp-size`` unless ``args`` give it: the findings of ``codes`` and the role."""
    lws = tmp_path / "lws.yaml"
    lines = "".join(f"          - '{a}'\n" for a in args)
    lws.write_text(
        "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {name: q}\n"
        "spec:\n  leaderWorkerTemplate:\n    size: 1\n    workerTemplate:\n      spec:\n"
        "        containers:\n        - name: sglang\n          image: lmsysorg/sglang:v0.5.23\n"
        "          command: [python3, -m, sglang.launch_server]\n"
        f"          args:\n          - --model-path\n          - {model}\n"
        f"          - --tp-size\n          - '{tp}'\n          - --enable-prefill-cp\n{lines}"
        "          resources: {limits: {nvidia.com/gpu: 8}}\n")
    batch = read_inputs([lws], opts=Options(gpu="H200-141GB"))
    found = [f for f in batch.all_findings() if f.code in codes]
    return found, batch.results[0].imported.data["spec"]["roles"][0]


def test_prefill_cp_without_a_cp_size_is_said_when_dropped(tmp_path):
    """``--enable-prefill-cp --cp-strategy interleave`` without ``--attn-cp-size`` on Qwen3:
    SGLang 0.5.23 keeps attn_cp_size at its default 1 (arg_groups/fields/parallel.py), so the
    prefill splits no tokens. The importer dropped the flag silently (a reviewer, issue #35);
    it now says so in a notice at the flag's line, and the role has no parallel.context.
    DeepSeek-V2-Lite (DeepseekV2ForCausalLM) is MLA but not among the classes SGLang's
    DeepSeek overrides are registered for (arg_groups/model_overrides/deepseek_v2.py): the
    same."""
    found, role = _sglang_prefill_cp(tmp_path, "Qwen/Qwen3-235B-A22B")
    # --enable-prefill-cp is the args' 5th item: line 18.
    assert [(f.severity.value, f.location.line) for f in found] == [("notice", 18)]
    assert found[0].message == (
        "--enable-prefill-cp without --attn-cp-size: SGLang keeps the attention context-"
        "parallel size at 1 for Qwen3-MoE, so the prefill splits no tokens; dropped (moegen "
        "renders --attn-cp-size C --enable-prefill-cp --cp-strategy interleave from "
        "roles[].parallel.context)")
    assert "DeepSeek-V4" in found[0].hint and "--attn-cp-size" in found[0].hint
    assert role["parallel"] == {"tensor": 8}
    found, role = _sglang_prefill_cp(tmp_path, "deepseek-ai/DeepSeek-V2-Lite")
    assert "at 1 for DeepSeek-V2" in found[0].message and role["parallel"] == {"tensor": 8}


@pytest.mark.parametrize("model", ["deepseek-ai/DeepSeek-V3.2", "zai-org/GLM-5.2-FP8",
                                   "deepseek-ai/DeepSeek-V4-Pro"])
def test_prefill_cp_without_a_cp_size_is_the_tp_group_for_the_deepseek_family(tmp_path, model):
    """DSA (DeepSeek-V3.2, GLM-5) and DeepSeek-V4 are where SGLang 0.5.23 makes the attention
    TP group the CP group when --attn-cp-size is not given (arg_groups/model_overrides/
    deepseek_v2.py: attn_cp_size = tp_size // attn_dp_size = 8 // 1; deepseek_v4_hook.py
    likewise); with interleave neither forces an all-to-all: imported as parallel.context 8."""
    found, role = _sglang_prefill_cp(tmp_path, model)
    assert [(f.severity.value, f.location.line) for f in found] == [("notice", 18)]
    assert "imported as roles[].parallel.context: 8" in found[0].message
    assert "tp_size // (attn_dp_size x dp_size) = 8 // (1 x 1) = 8" in found[0].message
    assert role["parallel"] == {"tensor": 8, "context": 8}


def test_prefill_cp_needs_a_cp_strategy(tmp_path):
    """Without --cp-strategy SGLang 0.5.23 refuses to start, for every model
    (arg_groups/parallel_hook.py: "--cp-strategy must be set when --enable-prefill-cp is
    enabled"); the importer invented interleave for the DeepSeek family (a reviewer, fix42 #1).
    An error (IMP030) at the flag's line; no parallel.context."""
    for model in ("deepseek-ai/DeepSeek-R1", "Qwen/Qwen3-235B-A22B"):
        found, role = _sglang_prefill_cp(tmp_path, model, args=(), codes=("IMP028", "IMP030"))
        assert [(f.code, f.severity.value, f.location.line) for f in found] == \
            [("IMP030", "error", 18)]
        assert "--cp-strategy must be set" in found[0].message
        assert role["parallel"] == {"tensor": 8}


def test_mla_prefill_cp_runs_deepep_over_the_whole_group(tmp_path):
    """Plain MLA (DeepSeek-R1) prefill CP: SGLang 0.5.23 (model_overrides/deepseek_v2.py, the
    MLA branch) sets attn_dp_size = attn_dp x dp, attn_cp_size = tp_size // attn_dp_size,
    moe_a2a_backend deepep, ep_size = tp_size and moe_dense_tp_size 1 whatever the strategy.
    --tp-size 8 --attn-dp-size 2: attention 8 / 2 = 4 ranks a group, CP 8 // (2 x 1) = 4;
    EP over the 8 ranks; DeepEP's auto mode runs normal on prefill batches (fields/exec_.py
    deepep_mode), so a prefill role is deepep_high_throughput."""
    found, role = _sglang_prefill_cp(
        tmp_path, "deepseek-ai/DeepSeek-R1",
        args=("--cp-strategy", "interleave", "--attn-dp-size", "2", "--disaggregation-mode",
              "prefill"), codes=("IMP028", "IMP030", "IMP005"))
    assert [(f.code, f.severity.value) for f in found] == [("IMP028", "notice")]
    assert "8 // (2 x 1) = 4" in found[0].message
    assert "moe_a2a_backend deepep, ep_size 8 and moe_dense_tp_size 1" in found[0].message
    assert role["parallel"] == {"tensor": 4, "data": 2, "context": 4, "expert": True}
    assert role["moe"]["all2all"] == "deepep_high_throughput"
    # A role that also decodes runs DeepEP auto (low_latency on decode batches), which
    # moe.all2all cannot name: expert parallel is imported, the backend is said (IMP005).
    found, role = _sglang_prefill_cp(tmp_path, "deepseek-ai/DeepSeek-R1",
                                     codes=("IMP028", "IMP030", "IMP005"))
    assert [(f.code, f.severity.value) for f in found] == [("IMP005", "warning"),
                                                          ("IMP028", "notice")]
    assert "deepep" in found[0].message.lower() and "auto" in found[0].message
    assert role["parallel"] == {"tensor": 8, "context": 8, "expert": True}
    assert "all2all" not in role.get("moe", {})


def test_zigzag_prefill_cp_is_read_as_sglang_reads_it(tmp_path):
    """--cp-strategy zigzag (SGLang 0.5.23): on GLM-5 (DSA) it forces moe_a2a_backend deepep and
    ep_size = tp_size (model_overrides/deepseek_v2.py), imported with the CP group 8 // 1 = 8;
    moegen renders interleave only, so the strategy is said (IMP005, at --cp-strategy, line
    19). DeepSeek-V3.2 refuses zigzag (arg_groups/parallel_hook.py), DeepSeek-V4 on CUDA too
    (deepseek_v4_hook.py: "zigzag CP requires the NPU backend"): IMP030."""
    zigzag = ("--cp-strategy", "zigzag", "--disaggregation-mode", "prefill")
    found, role = _sglang_prefill_cp(tmp_path, "zai-org/GLM-5.2-FP8", args=zigzag,
                                     codes=("IMP028", "IMP030", "IMP005"))
    assert sorted((f.code, f.severity.value, f.location.line) for f in found) == [
        ("IMP005", "warning", 19), ("IMP028", "notice", 18)]
    assert role["parallel"] == {"tensor": 8, "context": 8, "expert": True}
    assert role["moe"]["all2all"] == "deepep_high_throughput"
    for model in ("deepseek-ai/DeepSeek-V3.2", "deepseek-ai/DeepSeek-V4-Pro"):
        found, role = _sglang_prefill_cp(tmp_path, model, args=zigzag, codes=("IMP030",))
        assert [(f.severity.value, f.location.line) for f in found] == [("error", 19)], model
        assert "zigzag" in found[0].message and "context" not in role["parallel"]


def test_dsa_prefill_cp_stays_within_eight_ranks(tmp_path):
    """DSA context parallelism asserts tp_size <= 8 in SGLang 0.5.23 (model_overrides/
    deepseek_v2.py: "Context parallel only supports single machine"): GLM-5.2 on --tp-size 16
    does not start (IMP030 at the flag's line)."""
    found, role = _sglang_prefill_cp(tmp_path, "zai-org/GLM-5.2-FP8", tp="16",
                                     codes=("IMP030",))
    assert [(f.severity.value, f.location.line) for f in found] == [("error", 18)]
    assert "tp_size 16 > 8" in found[0].message and "context" not in role["parallel"]


def test_a_deployment_imports_as_the_workload_moegen_renders_for_one_pod_instances(tmp_path):
    """A plain apps/v1 Deployment (one pod per instance, vLLM TP8 on 8 GPUs) was imported as
    ``workload: lws`` (a new user's trial, issue #35): a one-pod instance is what moegen renders
    as ``workload: statefulset`` (spec.models Role.workload: "statefulset (single-node
    instances)"); a multi-node StatefulSet (--nnodes 2, two pods per instance) stays lws."""
    dep = tmp_path / "dep.yaml"
    dep.write_text(vllm_deployment("deepseek-ai/DeepSeek-R1", '--tensor-parallel-size, "8"'))
    role = read_inputs([dep], opts=Options()).results[0].imported.data["spec"]["roles"][0]
    assert role["workload"] == "statefulset"
    sts = tmp_path / "sts.yaml"
    sts.write_text(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: r1}\nspec:\n  replicas: 2\n"
        "  serviceName: r1\n  selector: {matchLabels: {app: r1}}\n  template:\n"
        "    metadata: {labels: {app: r1}}\n    spec:\n      containers:\n      - name: sglang\n"
        "        image: lmsysorg/sglang:v0.5.23\n"
        "        command: [python3, -m, sglang.launch_server, --model-path, /models/DeepSeek-R1,"
        " --tp-size, '16', --nnodes, '2']\n"
        "        resources: {limits: {nvidia.com/gpu: 8}}\n")
    role = read_inputs([sts], opts=Options()).results[0].imported.data["spec"]["roles"][0]
    assert role["workload"] == "lws"


def test_the_catalogs_checkpoint_names_read_back_as_their_model_and_format():
    """Every repository gen plan --emit names for a format (catalog RELEASES, fix41) is read back
    by gen import as that model and that format: nvidia/DeepSeek-R1-NVFP4-v2 read as nvfp4
    (its "-nvfp4-" matched first), losing the v2 layout's quantized o_proj."""
    from generator.catalog import RELEASES
    from generator.importer.build import architecture_of, checkpoint_format
    for arch, names in RELEASES.items():
        for fmt, name in names.items():
            assert architecture_of(name, None) == arch, name
            assert checkpoint_format(arch, name) == fmt, name


@pytest.mark.parametrize("model,weights", [
    ("RedHatAI/Qwen3-235B-A22B-FP8-dynamic", "fp8"),   # llm-compressor FP8_DYNAMIC
    ("moonshotai/Kimi-K2-Thinking", "w4a16"),          # the catalog config's own format
])
def test_compressed_tensors_on_the_command_line_does_not_name_a_format(tmp_path, model, weights):
    """``--quantization compressed-tensors`` says which loader, not which scheme (FP8, INT4
    W4A16, NVFP4, INT8 W8A8 all load through it: vLLM 0.33.0 quantization/compressed_tensors):
    it was imported as w4a16 whatever the checkpoint (an FP8-dynamic Qwen3 sized as INT4
    experts, a reviewer); the format is read from the name, else the catalog's config."""
    dep = tmp_path / "dep.yaml"
    dep.write_text(vllm_deployment(model, '--quantization, compressed-tensors, '
                                          '--tensor-parallel-size, "8"'))
    spec = read_inputs([dep], opts=Options()).results[0].imported.data["spec"]
    assert spec["model"]["weights"] == weights


def test_a_deployment_imported_as_statefulset_says_the_rollout_changes(tmp_path):
    """A Deployment imported as ``workload: statefulset`` (fix41 #5) changes how an update
    rolls (review of issue #35): a Deployment without ``spec.strategy`` rolls with maxSurge 25 %
    and maxUnavailable 25 % (Kubernetes apps/v1 DeploymentStrategy defaults; the surge rounds
    up, the unavailable count down), a StatefulSet replaces one pod at a time with no surge.
    With 1 replica: surge ceil(1 x 0.25) = 1 pod, unavailable floor(1 x 0.25) = 0, so the
    Deployment's only instance stays up while its replacement starts; the StatefulSet stops it
    first. IMP029, a notice at the Deployment's ``kind`` line (line 2)."""
    dep = tmp_path / "dep.yaml"
    dep.write_text(vllm_deployment("deepseek-ai/DeepSeek-R1", '--tensor-parallel-size, "8"'))
    found = [f for f in read_inputs([dep], opts=Options()).all_findings() if f.code == "IMP029"]
    assert [(f.severity.value, f.location.line) for f in found] == [("notice", 2)]
    assert found[0].message == (
        "Deployment r1 rolls out with maxSurge 25% and maxUnavailable 25% (the Kubernetes "
        "defaults): 1 extra pod and 0 of 1 pods down at a time; imported as workload: "
        "statefulset, whose rolling update replaces one pod at a time without surge (1 of 1 "
        "pods down at a time)")
    # A stated strategy is read, at its line (6): maxSurge 0; maxUnavailable 50 % of 4 = 2.
    dep.write_text(vllm_deployment("deepseek-ai/DeepSeek-R1", '--tensor-parallel-size, "8"')
                   .replace("  replicas: 1\n", "  replicas: 4\n  strategy:\n    type: "
                            "RollingUpdate\n    rollingUpdate: {maxSurge: 0, maxUnavailable: "
                            "50%}\n"))
    found = [f for f in read_inputs([dep], opts=Options()).all_findings() if f.code == "IMP029"]
    assert [(f.severity.value, f.location.line) for f in found] == [("notice", 6)]
    assert "maxSurge 0 and maxUnavailable 50%: 0 extra pods and 2 of 4 pods down" \
        in found[0].message and "(1 of 4 pods down at a time)" in found[0].message
    # Recreate stops every pod first.
    dep.write_text(vllm_deployment("deepseek-ai/DeepSeek-R1", '--tensor-parallel-size, "8"')
                   .replace("  replicas: 1\n", "  replicas: 2\n  strategy: {type: Recreate}\n"))
    found = [f for f in read_inputs([dep], opts=Options()).all_findings() if f.code == "IMP029"]
    assert found[0].message.startswith(
        "Deployment r1 rolls out with Recreate: every pod stops before the new ones start; ")
    # A StatefulSet imported as statefulset keeps its rollout: nothing said.
    sts = tmp_path / "sts.yaml"
    sts.write_text(vllm_deployment("deepseek-ai/DeepSeek-R1", '--tensor-parallel-size, "8"')
                   .replace("kind: Deployment", "kind: StatefulSet"))
    assert not [f for f in read_inputs([sts], opts=Options()).all_findings()
                if f.code == "IMP029"]
