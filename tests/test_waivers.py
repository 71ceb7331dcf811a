"""Waivers (generator/spec/skips.py, generator/waivers.py; issue 31 item 6): ``# moegen:skip=CODE
reason`` on a finding's line or the line above it in specs, overlays and manifests (launch
scripts included), the ``moegen.dev/skip`` annotation on a manifest object, what a skip without a
reason or without a finding is, and how suppressed findings are reported (text, JSON, SARIF)
and shown again (``--no-skips``)."""

from __future__ import annotations

import json
import shutil

import pytest

from generator.cli import run
from generator.inputs import read_inputs
from generator.spec.skips import comment_skips
from tests.helpers import EXAMPLES, vllm_deployment

S1 = EXAMPLES / "s1-16xh20-pd.yaml"
IMAGE = "    image: vllm/vllm-openai:v0.33.0\n"   # line 22 of S1
INTERNAL = "    image: vllm/vllm-openai:v0.32.0"
REASON = "0.32.0 with the 0.33.0 parser backported (go/vllm-h20)"
#: S1's one notice (the restart model: a vLLM decode over NIXL crashes when its prefill
#: restarts, vllm-project/vllm#49238), at its decode's kvTransfer.connector (line 69 of S1).
RST011 = ("RST011", "notice", 69)


def _spec(tmp_path, image_line: str, name: str = "spec.yaml"):
    text = S1.read_text()
    assert text.count(IMAGE) == 1
    path = tmp_path / name
    path.write_text(text.replace(IMAGE, image_line))
    return path


@pytest.fixture(scope="module")
def waived(tmp_path_factory):
    """S1 on the vLLM 0.32.0 image with flags rendered for 0.33.0 (ENG002), waived on the image's
    own line. (An internal image moegen's image table does not know is no longer an ENG002
    error but an ENG007 notice: nothing to waive there.)"""
    return _spec(tmp_path_factory.mktemp("w"), f"{INTERNAL}   # moegen:skip=ENG002 {REASON}\n")


def test_a_skip_suppresses_the_finding_on_its_line(waived, capsys):
    """Exit 0 (it was 1: no way to waive), the summary counts it, --no-skips shows it again."""
    assert run(["validate", str(waived)]) == 0
    err = capsys.readouterr().err
    assert [line.split(" ", 3)[:3] for line in err.splitlines() if not line.startswith(" ")] \
        == [[f"{waived}:69:20:", "notice", "RST011"], [f"{waived}:", "ok", "(0"]]
    assert err.endswith(f"{waived}: ok (0 errors, 0 warnings, 1 notice, 1 suppressed)\n")
    assert run(["validate", str(waived), "--no-skips"]) == 1
    err = capsys.readouterr().err
    assert f"{waived}:22:5: error ENG002 $.spec.engine.image: image tag 'v0.32.0' is vllm " \
           "0.32.0" in err and err.endswith("1 error, 0 warnings, 1 notice\n")
    # gen render applies the same waivers: it writes the tree, and refuses with --no-skips.
    out = waived.parent / "out"
    assert run(["render", str(waived), "-o", str(out)]) == 0
    assert "vllm/vllm-openai:v0.32.0" in (out / "decode-lws.yaml").read_text()
    assert run(["render", str(waived), "-o", str(out), "--no-skips"]) == 1
    capsys.readouterr()


def test_suppressed_findings_in_json_and_sarif(waived, capsys):
    # The '#' of the comment: after the characters of INTERNAL and 3 blanks (column 39).
    column = len(INTERNAL) + 3 + 1
    assert run(["validate", str(waived), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True
    assert [(f["code"], f["severity"], f["line"]) for f in doc["findings"]] == [RST011]
    [s] = doc["suppressed"]
    assert (s["code"], s["severity"], s["line"], s["column"], s["path"]) == (
        "ENG002", "error", 22, 5, "$.spec.engine.image")
    assert s["reason"] == REASON and s["skip"] == {"file": str(waived), "line": 22,
                                                   "column": column, "form": "comment"}
    assert run(["validate", str(waived), "--format", "sarif"]) == 0
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("RST011", "note"),
                                                            ("ENG002", "error")]
    result = results[1]
    assert "suppressions" not in results[0]
    assert result["suppressions"] == [{
        "kind": "inSource", "justification": REASON,
        "location": {"physicalLocation": {"artifactLocation": {"uri": str(waived)},
                                          "region": {"startLine": 22, "startColumn": column}}}}]
    # --no-skips: a plain result, no suppressions.
    assert run(["validate", str(waived), "--format", "sarif", "--no-skips"]) == 1
    result, _ = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert result["ruleId"] == "ENG002" and "suppressions" not in result


def test_a_skip_without_reason_suppresses_nothing_and_is_a_warning(tmp_path, capsys):
    spec = _spec(tmp_path, f"{INTERNAL}   # moegen:skip=ENG002\n")
    assert run(["validate", str(spec), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [(f["code"], f["severity"], f["line"], f["message"]) for f in doc["findings"]][:2] \
        == [("ENG002", "error", 22, "image tag 'v0.32.0' is vllm 0.32.0, but the flags are "
             "rendered for engine.version 0.33.0"),
            ("SKP001", "warning", 22, "# moegen:skip=ENG002 gives no reason: it suppresses "
             "nothing")]
    assert [(f["code"], f["severity"], f["line"]) for f in doc["findings"][2:]] == [RST011]
    assert doc["suppressed"] == []


def test_stale_and_misspelt_skips_are_warnings(tmp_path, capsys):
    """A skip above S1's image names ENG002 (no finding there: S1's image is right) and ENG02
    (no such rule): SKP002 for each, the spec otherwise clean (0 errors)."""
    spec = _spec(tmp_path, f"    # moegen:skip=ENG002,ENG02 {REASON}\n{IMAGE}")
    assert run(["validate", str(spec), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(f["code"], f["line"], f["column"], f["message"]) for f in doc["findings"]][:2] \
        == [("SKP002", 22, 5, f"skip of ENG002 suppresses nothing: no ENG002 finding on lines "
             f"22-23 of {spec}"),
            ("SKP002", 22, 5, "skip of ENG02: ENG02 is not a moegen rule code")]
    # nothing else: S1 (vLLM 0.33.0, NIXL >= 1.5.0) has no notice (RST011 left it: review38 F1)
    assert doc["findings"][2:] == []
    assert run(["validate", str(spec), "--strict"]) == 1
    capsys.readouterr()


def test_a_skip_above_covers_the_next_line_and_names_several_codes(tmp_path, capsys):
    """S1's prefill at tensor 3: LAY002 (error: 128 heads) and LAY008 (warning: 5 idle GPUs) on
    the parallel line, waived by one comment above it (two comments stacked there work too).
    Sizing then runs on the role (a waived error does not stop it): SIZ001, 214 GiB of weights
    per GPU, still rejects it."""
    text = S1.read_text()
    line = "      parallel: {tensor: 8, data: 1, pipeline: 1, expert: false}\n"
    assert text.count(line) == 1   # prefill (line 52)
    tp3 = line.replace("tensor: 8", "tensor: 3")
    for skips in (f"      # moegen:skip=LAY002,LAY008 {REASON}\n",
                  f"      # moegen:skip=LAY002 {REASON}\n      # moegen:skip=LAY008 {REASON}\n"):
        spec = tmp_path / "tp3.yaml"
        spec.write_text(text.replace(line, skips + tp3))
        assert run(["validate", str(spec), "--format", "json"]) == 1
        doc = json.loads(capsys.readouterr().out)
        first = 52 + skips.count("\n")   # the parallel line: 52 in S1, below the comments
        assert sorted((s["code"], s["line"]) for s in doc["suppressed"]) == [
            ("LAY002", first), ("LAY008", first)]
        # and nothing else (S1 has no notice at vLLM 0.33.0: NIXL >= 1.5.0)
        assert [(f["code"], f["line"]) for f in doc["findings"]] == [("SIZ001", first)]
        assert "weights 214.0" in doc["findings"][0]["message"]


def test_errors_moegen_cannot_go_past_are_not_waived(tmp_path, capsys):
    """VER001 (vLLM 0.9.0 is outside the releases moegen reads): no deployment to check, so the
    skip is refused (SKP002) and the error stays."""
    text = S1.read_text().replace('    version: "0.33.0"\n',
                                  f'    version: "0.9.0"   # moegen:skip=VER001 {REASON}\n')
    spec = tmp_path / "old.yaml"
    spec.write_text(text)
    assert run(["validate", str(spec), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [(f["code"], f["line"]) for f in doc["findings"]] == [
        ("VER001", 21), ("SKP002", 21), ("ENG002", 22)]
    assert doc["findings"][1]["message"] == ("skip of VER001: the VER001 error cannot be waived "
                                             "(moegen has no deployment to check or render while "
                                             "it stands)")


def test_a_skip_in_an_overlay_covers_the_overlay_lines(tmp_path, capsys):
    """The other release's image set by an overlay, waived there: ENG002 is located in the
    overlay."""
    overlay = tmp_path / "corp.yaml"
    overlay.write_text("spec:\n  engine:\n    # moegen:skip=ENG002 " + REASON + "\n"
                       "    image: vllm/vllm-openai:v0.32.0\n")
    assert run(["validate", str(S1), "-f", str(overlay), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(s["code"], s["file"], s["line"], s["skip"]["line"]) for s in doc["suppressed"]] \
        == [("ENG002", str(overlay), 4, 3)]
    assert run(["validate", str(S1), "-f", str(overlay), "--no-skips"]) == 1
    capsys.readouterr()


MANIFEST = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: r1
  annotations:
    moegen.dev/skip: "IMP016: shm is bounded by the node's memory cgroup; IMP004"
spec:
  replicas: 1
  selector: {matchLabels: {app: r1}}
  template:
    metadata: {labels: {app: r1}}
    spec:
      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H200}
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.33.0
        command:
        - sh
        - -c
        - |
          ulimit -n 65536
          # moegen:skip=MOD006 the nodes pre-pull the weights into the Hub cache
          exec vllm serve deepseek-ai/DeepSeek-R1 \\
            --tensor-parallel-size 8
        resources: {limits: {nvidia.com/gpu: 8}}
        startupProbe: {httpGet: {path: /health, port: 8000}, failureThreshold: 360}
        livenessProbe: {httpGet: {path: /health, port: 8000}}
"""


def test_manifest_waivers_in_a_launch_script_and_an_annotation(tmp_path, capsys):
    """A hand-written Deployment whose engine downloads its weights from the Hub into the
    container's filesystem (MOD006, a notice located at the model in the script, line 23):
    waived by a shell comment above it.
    The object's annotation names IMP016 with a reason (no /dev/shm here: SKP002, stale) and
    IMP004 without one (SKP001)."""
    f = tmp_path / "r1.yaml"
    f.write_text(MANIFEST)
    batch = read_inputs([f])
    assert [(s.finding.code, s.finding.location.line, s.skip.at.line, s.skip.reason)
            for s in batch.suppressed] == [
        ("MOD006", 23, 22, "the nodes pre-pull the weights into the Hub cache")]
    # IMP029 (line 2, kind): the Deployment imports as a StatefulSet (fix42 #3).
    assert [(x.code, x.location.line, x.path, x.message) for x in batch.all_findings()
            if x.code != "IMP029"] == [
        ("SKP001", 6, "$.metadata.annotations['moegen.dev/skip']",
         "moegen.dev/skip: IMP004 gives no reason: it suppresses nothing"),
        ("SKP002", 6, "$.metadata.annotations['moegen.dev/skip']",
         f"skip of IMP016 suppresses nothing: no IMP016 finding in its object (lines 1-27) of "
         f"{f}")]
    # Without the stale annotation, --strict passes with the waiver and fails without it.
    clean = tmp_path / "clean.yaml"
    clean.write_text(MANIFEST.replace(
        "  annotations:\n    moegen.dev/skip: \"IMP016: shm is bounded by the node's memory "
        "cgroup; IMP004\"\n", ""))
    assert run(["validate", str(clean), "--strict"]) == 0
    assert capsys.readouterr().err.endswith("0 errors, 0 warnings, 1 notice, 1 suppressed\n")
    # Without the waiver MOD006 shows, a notice on a manifest (a re-download is a cost, not a
    # defect: importer IMPORTED_NOTICES), which --strict does not fail on.
    assert run(["validate", str(clean), "--strict", "--no-skips"]) == 0
    assert "notice MOD006" in capsys.readouterr().err


def test_an_annotation_covers_its_object_only(tmp_path):
    """Two copies of the Hub Deployment in one file (the second in another namespace: another
    deployment); the second's annotation waives IMP010: the first's stays a finding."""
    one = MANIFEST.replace("          # moegen:skip=MOD006 the nodes pre-pull the weights into "
                           "the Hub cache\n", "").replace(
        "    moegen.dev/skip: \"IMP016: shm is bounded by the node's memory cgroup; IMP004\"\n",
        "    moegen.dev/skip: \"MOD006: pre-pulled\"\n")
    first = one.replace("  annotations:\n    moegen.dev/skip: \"MOD006: pre-pulled\"\n", "")
    second = one.replace("  name: r1\n", "  name: r1\n  namespace: team-b\n")
    f = tmp_path / "two.yaml"
    f.write_text(first + "---\n" + second)
    batch = read_inputs([f])
    # MANIFEST (27 lines) has its model token on line 23; without the script comment 22, and
    # the first copy also lacks the two annotation lines: 20, in 24 lines. "---" is line 25, and
    # the second copy's model token, one line lower for its namespace, is on line 25 + 22 + 1 =
    # 48; its annotation covers its document: "---" to the last line, 25 + 27 = 52.
    # IMP029 at each Deployment's kind line (2 and 25 + 2 = 27): imported as StatefulSets.
    assert [(x.code, x.location.line) for x in batch.all_findings()] == [
        ("IMP029", 2), ("MOD006", 20), ("IMP029", 27)]
    assert [(s.finding.code, s.finding.location.line, s.skip.reason, s.skip.lines)
            for s in batch.suppressed] == [("MOD006", 48, "pre-pulled", (25, 52))]


def test_comment_scan():
    """The comment forms: trailing (its line and the next), alone (the next line, through
    stacked skip comments), a reason after ' - ', several codes; a '#' inside a word is not a
    comment."""
    text = ("a: 1  # moegen:skip=A001 why\n"
            "# moegen:skip=B001,B002 - why not\n"
            "# moegen:skip=C001\n"
            "b: 2\n"
            "c: x#moegen:skip=D001 no\n")
    got = [(s.codes, s.reason, s.at.line, s.at.column, s.lines) for s in comment_skips(text, "f")]
    assert got == [(("A001",), "why", 1, 7, (1, 2)),
                   (("B001", "B002"), "why not", 2, 1, (2, 4)),
                   (("C001",), "", 3, 1, (3, 4))]


def test_a_waived_rule_error_in_a_manifest_still_sizes_its_role(tmp_path):
    """--max-model-len 1000000 on DeepSeek-R1 (LEN001: max_position_embeddings 163840), waived:
    the HBM check still runs on the role and says one such request needs 65.45 GiB of KV
    (SIZ002). Before, the waived error kept the role from the sizing phase: green."""
    f = tmp_path / "long.yaml"
    f.write_text(vllm_deployment(
        "deepseek-ai/DeepSeek-R1", '--tensor-parallel-size, "8", --max-model-len, "1000000"',
        models_pvc=True)
        .replace('"1000000"]\n', '"1000000"]  # moegen:skip=LEN001 a YaRN-extended checkpoint\n'))
    batch = read_inputs([f])
    assert [s.finding.code for s in batch.suppressed] == ["LEN001"]
    # IMP017: no probe; MOD006: the Hub id is downloaded into the container (the PVC is not
    # the Hub cache)
    assert [(x.code, x.location.line) for x in batch.all_findings()] == [
        ("IMP029", 2), ("IMP017", 12), ("MOD006", 14), ("SIZ002", 15)]


def test_env_files_a_kustomization_reads_carry_skips(tmp_path):
    """The env files of configMapGenerator are read with the manifests, comments and all: a
    skip there is located at its line (stale here: SKP002 on decode.env)."""
    tree = tmp_path / "out"
    shutil.copytree(EXAMPLES.parent / "tests" / "golden" / "s1-16xh20-pd" / "expected", tree)
    env = tree / "env" / "decode.env"
    lines = env.read_text().splitlines()
    env.write_text("\n".join([*lines, f"# moegen:skip=SRV060 {REASON}", "X=1"]) + "\n")
    batch = read_inputs([tree])
    # (the rendered S1 has no other finding: vLLM 0.33.0 runs NIXL >= 1.5.0, no RST011)
    assert [(f.code, f.location.file, f.location.line) for f in batch.all_findings()] == [
        ("SKP002", str(env), len(lines) + 1)]
