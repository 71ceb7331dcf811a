"""gen render -> gen import -> gen render is byte-identical for every overlay in overlays/
(issue 31 item 5): the goldens cover the examples and the overlays their cases use
(tests/test_import.py ``test_import_of_moegens_output_renders_the_same_bytes``); here every
overlay of overlays/ is rendered over S1 (the S1-shaped overlays name its roles) and the ones
that change the network or the KV cache also over an SGLang example, and the import of the
render renders the same bytes with the same findings. bf16-weights fits no example's HBM (its
header: twice the weight bytes; S1 and S2 fail SIZ001/SIZ003), so it rides on dev-small
(DeepSeek-V2-Lite on H100s). One render and one import per pair, ~1 s each (18 s for all).
(gen render of an example with no overlay: test_import.py over the goldens.)"""

from __future__ import annotations

import pytest

from generator import pipeline
from generator.emit import diff_tree, write_tree
from generator.inputs import read_inputs
from tests.helpers import EXAMPLES, ROOT, finding_keys

OVERLAYS = sorted((ROOT / "overlays").glob("*.yaml"))
S1 = EXAMPLES / "s1-16xh20-pd.yaml"
SGLANG = EXAMPLES / "s3-v4pro-pd-dp16.yaml"
#: overlay -> the examples it is rendered over.
DEV = ROOT / "overlays" / "dev-small.yaml"
PAIRS = [([DEV, o] if o.stem == "bf16-weights" else [o], S1) for o in OVERLAYS] + \
    [([o], SGLANG) for o in OVERLAYS if o.stem in ("fp8-kv-cache", "infiniband",
                                                 "multi-nic-cloud", "roce-hostnetwork",
                                                 "two-batch-overlap")]


def test_every_overlay_is_covered():
    assert {o for os, _ in PAIRS for o in os} == set(OVERLAYS) and len(OVERLAYS) >= 10


@pytest.mark.parametrize("overlays, spec", PAIRS,
                         ids=[f"{s.stem}+{'+'.join(o.stem for o in os)}" for os, s in PAIRS])
def test_render_import_render_is_byte_identical(overlays, spec, tmp_path):
    _round_trip(spec, overlays, tmp_path)


def _round_trip(spec, overlays, tmp_path) -> tuple[dict, object]:
    """Render ``spec`` with ``overlays``, import the tree, render again: the same bytes and the
    same findings (code, path); returns the first render's files and the import's result."""
    original = pipeline.check(spec, overlays)
    errors = [f for f in original.findings if f.severity.value == "error"]
    assert not errors, errors
    tree, files = tmp_path / "tree", pipeline.render(original)[1]
    write_tree(tree, files)
    batch = read_inputs([tree])
    assert not batch.findings and [r.kind for r in batch.results] == ["manifest"]
    again = batch.results[0]
    assert [f for f in again.checked.findings if f.severity.value == "error"] == []
    assert diff_tree(tree, pipeline.render(again.checked)[1]) == []
    assert finding_keys(again.checked.findings) == finding_keys(original.findings)
    return files, again


def test_a_hub_download_renders_and_round_trips(tmp_path):
    """model.hub: the engine is given the repository id, the cache volume is mounted where
    HF_HOME points, HF_HUB_OFFLINE=1 for an offline cache; gen import reads it back (not
    IMP010) and renders the same bytes."""
    overlay = tmp_path / "hub.yaml"
    overlay.write_text("spec:\n  model:\n    path: null\n    volume: null\n    hub:\n"
                       "      cache: {persistentVolumeClaim: {claimName: hf-cache}}\n"
                       "      mountPath: /var/cache/hf\n      offline: true\n")
    files, r = _round_trip(S1, [overlay], tmp_path)
    lws = files["decode-lws.yaml"]
    assert "deepseek-ai/DeepSeek-V3 \\" in lws
    assert "claimName: hf-cache" in lws and "mountPath: /var/cache/hf" in lws
    assert "name: HF_HOME\n" in lws and "value: /var/cache/hf" in lws
    assert "name: HF_HUB_OFFLINE" in lws
    assert r.imported.data["spec"]["model"]["hub"] == {
        "cache": {"persistentVolumeClaim": {"claimName": "hf-cache"}},
        "mountPath": "/var/cache/hf", "offline": True}
    assert "IMP010" not in {f.code for f in r.findings}


def test_an_explicit_kv_load_failure_policy_is_kept(tmp_path):
    """kvTransfer.loadFailurePolicy: fail renders kv_load_failure_policy "fail" (not the
    decode's default "recompute") and gen import reads it back as fail, not as a key moegen does
    not model (issue 31: it was imported as IMP005 and re-rendered as recompute)."""
    overlay = tmp_path / "fail.yaml"
    overlay.write_text("spec:\n  roles:\n    - name: decode\n"
                       "      kvTransfer: {connector: nixl, loadFailurePolicy: fail}\n")
    files, r = _round_trip(S1, [overlay], tmp_path)
    assert '"kv_load_failure_policy":"fail"' in files["decode-lws.yaml"]
    assert "kv_load_failure_policy" not in files["prefill-lws.yaml"]
    decode = next(x for x in r.imported.data["spec"]["roles"] if x["name"] == "decode")
    assert decode["kvTransfer"] == {"connector": "nixl", "loadFailurePolicy": "fail"}
    assert "IMP005" not in {f.code for f in r.findings}


def _qwen_fp8(tmp_path, nodes: int, tail: str):
    """A Qwen3-235B-A22B FP8 vLLM 0.33.0 spec on ``nodes`` H100 nodes; ``tail``: its serving,
    traffic and roles (YAML at the spec's indentation)."""
    spec = tmp_path / "qwen.yaml"
    spec.write_text(f"""apiVersion: moegen.dev/v1alpha1
kind: InferenceDeployment
metadata: {{name: qwen}}
spec:
  model: {{name: Qwen/Qwen3-235B-A22B-FP8, architecture: qwen3-235b-a22b, weights: fp8, path: /m,
          volume: {{persistentVolumeClaim: {{claimName: w}}}}}}
  engine: {{name: vllm, version: "0.33.0", image: "vllm/vllm-openai:v0.33.0"}}
  network: {{socketInterface: eth0}}
  nodePools:
    h100: {{gpu: H100-80GB, gpusPerNode: 8, nodes: {nodes}, nodeSelector: {{pool: h100}}}}
""" + tail)
    return spec


def test_a_statefulset_keeps_its_sized_load(tmp_path, capsys):
    """A StatefulSet role carries moegen.dev's sized-load annotation as a LeaderWorkerSet does:
    Qwen3-235B FP8, two TP4 x DP2 instances with EP on H100, 64 sequences of the spec's
    8,000 + 1,000-token traffic. Without it the import lost spec.traffic and judged the 64
    sequences at maxModelLen 32,768 (SIZ003: 25.4 per rank), so `gen validate` of moegen's own
    render failed (a new user's trial)."""
    spec = _qwen_fp8(tmp_path, 2, """  serving: {maxModelLen: 32768}
  traffic: {inputTokens: 8000, outputTokens: 1000}
  roles:
    - {name: serve, mode: unified, nodePool: h100, workload: statefulset, replicas: 2,
       parallel: {tensor: 4, data: 2, expert: true}, sizing: {concurrency: 64}}
""")
    files, r = _round_trip(spec, [], tmp_path)
    assert "moegen.dev/sized-load: concurrency=64 traffic=8000/1000 acceptance=0.7" in \
        files["serve-statefulset.yaml"]
    assert r.imported.data["spec"]["traffic"] == {"inputTokens": 8000, "outputTokens": 1000}
    # gen size says at which length "fits" was judged: the traffic's mean context, 8,000 +
    # 1,000 / 2 = 8,500 tokens (its KV-used line at maxModelLen reads over 100 %).
    from generator.cli import run
    assert run(["size", str(spec)]) == 0
    assert "  fits         yes (judged at the traffic's mean context, 8500 tokens: SIZ003)" in \
        capsys.readouterr().out


def test_an_engine_cap_stays_an_engine_cap(tmp_path):
    """serving.maxNumSeqs (the engines' cap, vLLM --max-num-seqs 128 per DP rank) renders the
    same flag moegen renders for sizing.concurrency; the import of moegen's tree reads it back
    as serving.maxNumSeqs: 128, not as sizing.concurrency 128 x 2 DP ranks = 256 (which
    judged 256 sequences at maxModelLen and failed SIZ003: a new user's trial)."""
    spec = _qwen_fp8(tmp_path, 1, """  serving: {maxModelLen: 32768, maxNumSeqs: 128}
  roles:
    - {name: serve, mode: unified, nodePool: h100, parallel: {tensor: 4, data: 2, expert: true}}
""")
    files, r = _round_trip(spec, [], tmp_path)
    assert "--max-num-seqs 128" in files["serve-lws.yaml"]
    role = r.imported.data["spec"]["roles"][0]
    assert "sizing" not in role
    assert role["serving"]["maxNumSeqs"] == 128


def test_siz003_at_the_mean_context_states_one_length(tmp_path):
    """SIZ003 judged at the traffic's mean context (8,000 + 1,000 / 2 = 8,500 tokens) offered
    "kvCacheDtype: fp8 gives N per rank" with N the sequences of maxModelLen 32,768 (a
    reviewer): the hint now gives each figure at the 8,500 tokens the verdict is at. FP8 KV
    halves the bytes per token, so one rank holds twice the tokens: 2 x T / 8,500 sequences."""
    from generator import pipeline
    spec = _qwen_fp8(tmp_path, 2, """  serving: {maxModelLen: 32768, kvCacheDtype: auto}
  traffic: {inputTokens: 8000, outputTokens: 1000}
  roles:
    - {name: serve, mode: unified, nodePool: h100, workload: statefulset, replicas: 2,
       parallel: {tensor: 4, data: 2, expert: true}, sizing: {concurrency: 256}}
""")
    checked = pipeline.check(spec)
    [f] = [f for f in checked.findings if f.code == "SIZ003"]
    z = checked.sizing[0]
    # sizing.concurrency is per instance: 256 over its 2 DP ranks = 128 per rank, each 8,500
    # tokens on average.
    assert "must hold 256 sequences of 8500 tokens on average" in f.message
    assert "128 per DP rank" in f.message
    now = z.kv_tokens_per_rank / 8500
    assert f"one rank holds {now:.1f} sequences of 8500 tokens" in f.message
    fp8 = float(f.hint.split("kvCacheDtype: fp8 holds ")[1].split(" ")[0])
    assert fp8 == pytest.approx(2 * now, rel=0.01)
    assert "sequences of 8500 tokens per rank" in f.hint
    # No figure at maxModelLen: z.max_concurrency (sequences of 32,768 tokens) is not in it.
    assert f"{z.max_concurrency:.1f}" not in f.hint
