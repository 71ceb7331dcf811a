"""gen diff (issue 33): what a change does to a running deployment, for S1 and S3.

Every expected answer is computed by hand below from what the two renders contain:

* a stopped engine pod takes up to its terminationGracePeriodSeconds to go: preStop 10 s + drain
  + teardown 15 s + 5 s (generator/pods.py termination_grace), the drain ceil(1.5 x the mean
  request) (generator/durations.py): S1 ceil(1.5 x 43.95 s) = 66 -> 96 s; S3 ceil(1.5 x
  52.80 s) = 80 -> 110 s;
* a new pod is ready within its startup budget, the rendered startupProbe failureThreshold x
  10 s (asserted on the render itself below);
* without room for a surge instance a LeaderWorkerSet of one group replaces it in place: the
  role serves nothing for stop + start; with maxSurge 1 the surge group serves from its start,
  then the old group is replaced (stop + start) while it serves, then the surge group goes.
"""

from __future__ import annotations

import json
import math

import pytest
import yaml

from generator.cli import run
from generator.emit import write_tree
from generator.rollout import compare, side
from generator.rollout.disaggregated import all_steps
from generator.rollout.timeline import RolePlan, role_timeline
from generator.rollout.tree import kustomize_hash
from tests.helpers import EXAMPLES, ROOT

S1, S3 = EXAMPLES / "s1-16xh20-pd.yaml", EXAMPLES / "s3-v4pro-pd-dp16.yaml"
DIFF = ROOT / "tests" / "diff"
VLLM_032 = ROOT / "tests" / "execution" / "overlays" / "vllm-0.32.yaml"
_SIDES: dict = {}


def _side(spec, *overlays):
    key = (spec, overlays)
    if key not in _SIDES:
        s, findings = side(spec, list(overlays))
        assert s.model is not None, findings
        _SIDES[key] = s
    return _SIDES[key]


def _diff(old, new):
    return compare(_side(*old), _side(*new))


def _roles(d):
    return {r.role: r for r in d.roles}


def _startup(files: dict[str, str], name: str) -> int:
    """The rendered startup budget of the LeaderWorkerSet in ``name``: failureThreshold x
    periodSeconds of its leader (or only) template's startup probe."""
    doc = yaml.safe_load(files[name])
    t = doc["spec"]["leaderWorkerTemplate"]
    probe = (t.get("leaderTemplate") or t["workerTemplate"])["spec"]["containers"][0][
        "startupProbe"]
    return probe["failureThreshold"] * probe["periodSeconds"]


# --- S1: vLLM 0.32.0 -> 0.33.0 ------------------------------------------------------------------

@pytest.fixture(scope="module")
def s1_bump():
    return _diff((S1, VLLM_032), (S1,))


def test_s1_upgrade_restarts_both_engines_and_says_why(s1_bump):
    roles = _roles(s1_bump)
    assert [r.role for r in s1_bump.roles] == ["prefill", "decode", "router"]
    assert roles["router"].change.restarts is False
    for name in ("prefill", "decode"):
        why = roles[name].change.reasons
        assert roles[name].change.restarts
        assert why[0] == "image vllm/vllm-openai:v0.32.0 -> vllm/vllm-openai:v0.33.0"
        # the cache keys carry the release: 5 variables (VLLM_CACHE_ROOT, DG_JIT_CACHE_DIR,
        # TRITON_CACHE_DIR, FLASHINFER_WORKSPACE_BASE, CUDA_CACHE_PATH) -> a new ConfigMap name
        assert why[1].startswith(f"env file env/{name}.env: 5 variable(s) changed (")
        assert "VLLM_CACHE_ROOT" in why[1]
    ops = sorted((c.op, c.kind, c.name.rsplit("-", 1)[0] if c.kind == "ConfigMap" else c.name)
                 for c in s1_bump.objects)
    assert ops == [("A", "ConfigMap", "dsv3-pd-decode-env"), ("A", "ConfigMap", "dsv3-pd-prefill-env"),
                   ("K", "ConfigMap", "dsv3-pd-decode-env"), ("K", "ConfigMap", "dsv3-pd-prefill-env"),
                   ("M", "LeaderWorkerSet", "dsv3-pd-decode"), ("M", "LeaderWorkerSet", "dsv3-pd-prefill")]


def test_s1_upgrade_is_a_full_outage_for_the_longer_start(s1_bump):
    new = _side(S1)
    prefill_start = _startup(new.files, "prefill-lws.yaml")
    decode_start = _startup(new.files, "decode-lws.yaml")
    assert (prefill_start, decode_start) == (219 * 10, 186 * 10)
    stop = 10 + math.ceil(1.5 * 43.9459) + 15 + 5               # = 96
    roles = _roles(s1_bump)
    for name, start in (("prefill", prefill_start), ("decode", decode_start)):
        r = roles[name]
        assert (r.plan.surge, r.plan.unavailable) == (0, 1)      # no platform.lws: no surge
        assert r.down_at_once == 1 and r.outage_s == stop + start
    assert roles["prefill"].outage_s == 96 + 2190 == 2286
    assert roles["decode"].outage_s == 96 + 1860 == 1956
    # both LeaderWorkerSets are in sync wave 0: the service is down until the slower is back
    assert s1_bump.rendered.outage_s == max(2286, 1956)
    assert s1_bump.rendered.lowest == (0.0, 0.0)
    # requests in flight: drain 66 s; the mean request (43.9 s) fits, the longest does not
    assert roles["decode"].drain_s == 66 and roles["decode"].mean_s < 66 < roles["decode"].longest_s


def test_s1_upgrade_order_options_and_findings(s1_bump):
    opts = {o.name: o for o in s1_bump.options}
    assert opts["prefill and decode together"].outage_s == 2286
    assert opts["prefill first, then decode"].outage_s == 2286 + 1956 == 4242
    assert opts["decode first, then prefill"].outage_s == 1956 + 2286
    assert s1_bump.best == "prefill and decode together"
    a, b, differ = s1_bump.handshake
    assert a.checked and b.checked and differ == ["release vllm 0.32.0 / vllm 0.33.0"]
    assert s1_bump.rendered.mixed_s == 0            # never both revisions serving at once
    assert sorted((f.code, f.path) for f in s1_bump.findings) == [
        ("ROL001", "$.spec.roles[0].replicas"), ("ROL001", "$.spec.roles[1].replicas")]


def test_s1_upgrade_with_surge_room_keeps_serving_and_rolls_together():
    d = _diff((S1, DIFF / "surge.yaml", VLLM_032), (S1, DIFF / "surge.yaml"))
    roles = _roles(d)
    assert (roles["prefill"].plan.surge, roles["prefill"].plan.unavailable) == (1, 0)
    assert (roles["decode"].plan.surge, roles["decode"].plan.unavailable) == (1, 0)
    # prefill: surge ready at 2190; old replaced 2190..2190+96+2190 = 4476. decode: surge at
    # 1860; old replaced 1860..1860+96+1860 = 3816. Never 0 serving: no outage.
    assert (roles["prefill"].timeline.end, roles["decode"].timeline.end) == (4476, 3816)
    assert d.rendered.outage_s == 0 and not [f for f in d.findings if f.code == "ROL001"]
    # mixed pairs: 1860..2190 new decode with the old prefill (every request): 330 s
    assert d.rendered.mixed_s == 2190 - 1860 == 330
    opts = {o.name: o for o in d.options}
    # prefill first: new prefill + old decode from 2190 until decode's surge replaces it at
    # 4476 + 1860 = 6336: 4146 s; decode first: 1860 .. 3816 + 2190 = 6006: 4146 s
    assert opts["prefill first, then decode"].mixed_s == 6336 - 2190 == 4146
    assert opts["decode first, then prefill"].mixed_s == 6006 - 1860 == 4146
    assert d.best == "prefill and decode together"
    # the new decode pairs with old prefill instances replaced after it: RST011's crash row
    assert [f.code for f in d.findings] == ["ROL005", "ROL003"]


@pytest.mark.parametrize("surge", [False, True], ids=["no-room", "room"])
def test_s1_upgrade_as_a_disaggregatedset_rolls_both_roles_and_pins_revisions(surge):
    extra = (DIFF / "surge.yaml",) if surge else ()
    d = _diff((S1, DIFF / "ds-gateway.yaml", *extra, VLLM_032), (S1, DIFF / "ds-gateway.yaml", *extra))
    assert d.disaggregated and d.screener and d.options == []
    roles = _roles(d)
    assert {n: r.change.restarts for n, r in roles.items()} == {
        "prefill": True, "decode": True, "endpoint-picker": False}
    # the controller's planner, one group per role: with room (maxSurge 1) the new revision's
    # groups start first (2190 s, the slower start), then the old ones drain (96 s); without,
    # both drain (96 s), then both start (2190 s): the whole service is down meanwhile
    assert (roles["decode"].plan.surge, roles["decode"].plan.unavailable) == ((1, 0) if surge else (0, 1))
    assert d.rendered.duration_s == 2190 + 96
    assert d.rendered.outage_s == (0 if surge else 96 + 2190)
    # the picker pins each request to one revision: no mixed pair, although the NIXL hash differs
    assert d.rendered.mixed_s == 0 and d.handshake[2] == ["release vllm 0.32.0 / vllm 0.33.0"]
    assert "ROL003" not in [f.code for f in d.findings]


# --- DP16 -> DP32 ------------------------------------------------------------------------------

def test_s1_decode_dp32_recreates_the_group_and_keeps_the_old_concurrency():
    d = _diff((S1,), (S1, DIFF / "decode-dp32.yaml"))
    roles = _roles(d)
    assert not roles["prefill"].change.restarts
    why = roles["decode"].change.reasons
    assert why[0] == "group size 2 -> 4 pods (leaderWorkerTemplate.size)"   # 32 GPUs / 8
    # --max-num-seqs = ceil(200 / ranks): ceil(200/16) = 13 -> ceil(200/32) = 7
    assert "'--data-parallel-size 16' -> '--data-parallel-size 32'" in why[2]
    assert "'--max-num-seqs 13' -> '--max-num-seqs 7'" in why[2]
    start = _startup(_side(S1, DIFF / "decode-dp32.yaml").files, "decode-lws.yaml")
    assert roles["decode"].outage_s == 96 + start == 96 + 1690
    assert d.rendered.outage_s == 1786        # prefill serves, but no decode does
    # the router's request timeout follows the longest request, which the new decode changes
    # (S1's 4 RDMA devices on 8 GPUs: 200 Gbit/s per GPU derived, generator/spec/bandwidth.py)
    assert roles["router"].change.reasons == ("command: --request-timeout-secs 3600 -> 2220",)
    # the router Deployment: 2 pods, maxSurge 25 % -> 1, maxUnavailable 25 % -> 0, after wave 0
    assert (roles["router"].plan.surge, roles["router"].plan.unavailable) == (1, 0)
    assert roles["router"].timeline.begin == 1786 and roles["router"].outage_s == 0
    codes = sorted((f.code, f.path) for f in d.findings)
    assert codes == [("ROL001", "$.spec.roles[1].replicas"),
                     ("ROL002", "$.spec.roles[1].sizing.concurrency")]
    rol002 = next(f for f in d.findings if f.code == "ROL002")
    assert "sizing.concurrency stays 200 (spread over 32 instead of 16" in rol002.message
    assert "13 -> 7 sequences per rank" in rol002.message


def test_s3_decode_dp32_same_answer_on_sglang():
    d = _diff((S3,), (S3, DIFF / "decode-dp32.yaml"))
    roles = _roles(d)
    # the drain follows the deployment's predicted mean request (generator/durations.py), which
    # the new decode moves: S3 2.397 s + 1500 x 33.6 ms = 52.797 s, ceil(1.5 x 52.797) = 80 ->
    # grace 110; DP32 30.474 s + 1500 x 14.5 ms = 52.224 s, ceil(78.34) = 79 -> 109: the
    # prefill pods restart for that alone
    assert roles["prefill"].change.reasons == ("terminationGracePeriodSeconds 110 -> 109",)
    assert roles["decode"].change.reasons[0] == "group size 2 -> 4 pods (leaderWorkerTemplate.size)"
    start = _startup(_side(S3, DIFF / "decode-dp32.yaml").files, "decode-lws.yaml")
    stop = 10 + math.ceil(1.5 * 52.797) + 15 + 5               # = 110
    assert roles["decode"].outage_s == stop + start == 110 + 1740
    # both revisions of decode agree on every handshake factor: no mixed pair
    assert d.rendered.mixed_s == 0
    rol002 = next(f for f in d.findings if f.code == "ROL002")
    assert "256 (spread over 32 instead of 16" in rol002.message      # ceil(256/16) = 16
    assert "16 -> 8 sequences per rank" in rol002.message               # ceil(256/32) = 8


def test_s3_upgrade_sglang_mooncake_is_not_checked():
    d = _diff((S3, DIFF / "sglang-0.5.22.yaml"), (S3,))
    roles = _roles(d)
    assert roles["prefill"].change.restarts and roles["decode"].change.restarts
    a, b, differ = d.handshake
    assert not a.checked and differ == ["release sglang 0.5.22 / sglang 0.5.23"]
    new = _side(S3)
    starts = (_startup(new.files, "prefill-lws.yaml"), _startup(new.files, "decode-lws.yaml"))
    assert d.rendered.outage_s == 110 + max(starts)
    assert d.best == "prefill and decode together"


def test_s3_upgrade_with_surge_room_mixes_unchecked_pairs():
    d = _diff((S3, DIFF / "surge.yaml", DIFF / "sglang-0.5.22.yaml"), (S3, DIFF / "surge.yaml"))
    new = _side(S3, DIFF / "surge.yaml")
    p_start = _startup(new.files, "prefill-lws.yaml")
    d_start = _startup(new.files, "decode-lws.yaml")
    assert (p_start, d_start) == (1940, 1950)
    # the surge prefill serves from 1940 while the old decode does until the surge decode is
    # ready at 1950 and the old one is deleted: 10 s of new prefill x old decode, every request
    assert d.rendered.outage_s == 0 and d.rendered.mixed_s == 1950 - 1940 == 10
    assert [(f.code, f.severity.value) for f in d.findings] == [("ROL004", "notice")]


# --- a router-only change ----------------------------------------------------------------------

@pytest.mark.parametrize("spec", [S1, S3], ids=["s1", "s3"])
def test_router_only_change_restarts_no_engine(spec):
    d = _diff((spec,), (spec, DIFF / "router-policy.yaml"))
    roles = _roles(d)
    assert not roles["prefill"].change.restarts and not roles["decode"].change.restarts
    assert roles["router"].change.restarts
    assert roles["router"].change.reasons[0].endswith("-> cache_aware")
    # 2 router pods, one new pod at a time (surge 1, unavailable 0), 30 s each to serve
    assert roles["router"].timeline.end - roles["router"].timeline.begin == 2 * 30
    assert d.rendered.outage_s == 0 and d.findings == [] and d.options == []
    assert [c.kind for c in d.objects] == ["Deployment"]


# --- the pieces against upstream's own vectors -------------------------------------------------

def test_kustomize_hash_matches_the_hasher_tests():
    # kubernetes-sigs/kustomize@kustomize/v5.8.1:api/hasher/hasher_test.go TestConfigMapHash
    assert kustomize_hash("", "") == "6ct58987ht"
    assert kustomize_hash("", {"one": ""}) == "9g67k2htb6"
    assert kustomize_hash("", {"two": 2, "one": "", "three": 3}) == "7757f9kkct"


def test_disaggregatedset_planner_matches_the_controller_tests():
    # kubernetes-sigs/lws@v0.10.0:pkg/controllers/disaggregatedset/planner_test.go
    assert all_steps([6, 2], [6, 2], [(2, 0), (2, 0)]) == [
        ((6, 2), (0, 0)), ((6, 2), (2, 1)), ((4, 2), (2, 1)), ((4, 2), (4, 2)),
        ((2, 1), (4, 2)), ((2, 1), (6, 2)), ((0, 0), (6, 2))]
    assert all_steps([5, 5], [2, 2], [(1, 0), (1, 0)]) == [
        ((5, 5), (0, 0)), ((4, 4), (0, 0)), ((3, 3), (0, 0)), ((2, 2), (0, 0)),
        ((2, 2), (1, 1)), ((1, 1), (1, 1)), ((1, 1), (2, 2)), ((0, 0), (2, 2))]
    # one group per role, maxSurge 0 / maxUnavailable 1: both drained, then both started
    assert all_steps([1, 1], [1, 1], [(0, 1), (0, 1)]) == [
        ((1, 1), (0, 0)), ((0, 0), (0, 0)), ((0, 0), (1, 1))]


def test_lws_rolls_max_unavailable_groups_at_a_time():
    # 3 groups, maxUnavailable 1, stop 100 s, start 900 s: 3 batches of 1000 s, 2 serving
    p = RolePlan("decode", "decode", "lws", 3, 3, True, 0, 1, 100, 900)
    tl = role_timeline(p, 0.0)
    assert [(s.start, s.end, s.old, s.new) for s in tl.segments] == [
        (0, 1000, 2, 0), (1000, 2000, 1, 1), (2000, 3000, 0, 2)]
    assert tl.fewest == 2 and tl.below(3) == 3000


def test_gen_diff_reads_a_rendered_directory(tmp_path, capsys):
    # the one CLI run of the module (~3 s: the directory is imported back with gen import and
    # checked, and S1 is checked and rendered by each command)
    out = tmp_path / "s1"
    write_tree(out, _side(S1, VLLM_032).files)
    assert run(["diff", str(out), str(S1), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["old"] == f"{out} (rendered)"
    assert doc["order"]["leastCost"] == "prefill and decode together"
    assert doc["order"]["rendered"]["outageSeconds"] == 2286
    assert {x["role"]: x["restarts"] for x in doc["roles"]} == {
        "prefill": True, "decode": True, "router": False}
    # gen render --check prints the same summary after its file diff (exit 3: drift)
    assert run(["render", str(S1), "-o", str(out), "--check"]) == 3
    err = capsys.readouterr().err
    assert "Which order to roll prefill and decode:" in err and "ROL001" in err


# --- the restart model in a rollout -----------------------------------------------------------

def test_s1_prefill_only_change_says_decode_may_crash():
    """S1 at vLLM 0.32.0 (NIXL over UCX: mlx5 RDMA devices; the image's NIXL not known): a
    prefill-only change re-creates every prefill instance while decode keeps serving; the
    restart model's row (vllm-project/vllm#49238: decode segfaults loading the new prefill's
    NIXL metadata) is quoted at RST011's severity. At vLLM 0.33.0 (NIXL >= 1.5.0, which has
    ai-dynamo/nixl PR#1987) the same change says nothing of it (review38 F1)."""
    assert not [f for f in _diff((S1,), (S1, DIFF / "prefill-env.yaml")).findings
                if f.code == "ROL005"]
    d = _diff((S1, VLLM_032), (S1, VLLM_032, DIFF / "prefill-env.yaml"))
    roles = _roles(d)
    assert roles["prefill"].change.restarts and not roles["decode"].change.restarts
    rol005 = [f for f in d.findings if f.code == "ROL005"]
    assert [(f.severity.value, f.path) for f in rol005] == [
        ("notice", "$.spec.roles[1].kvTransfer.connector")]
    start = _startup(_side(S1, VLLM_032).files, "decode-lws.yaml")
    assert f"a cold start of {start} s ({start / 60:.1f} min) each" in rol005[0].message
    assert "RST011: nixl" in rol005[0].message and "although their own template" in rol005[0].message


def test_a_group_that_loses_its_workers_is_compared_leader_against_leader():
    """S1's decode DP16 (a leader and a worker pod) -> DP8 (one pod, which runs the
    workerTemplate): the leader's template is compared with the new one pod's, so the reasons
    are the real changes (the worker dropped, the size, the DP flags, the resources of 8 ranks
    of 16) and not every field of the old leader removed and of the old worker changed (image
    'vllm/vllm-openai:v0.33.0 -> None', every probe twice, as a new user's trial found)."""
    d = _diff((S1,), (S1, DIFF / "decode-dp8.yaml"))
    why = _roles(d)["decode"].change.reasons
    assert why[:2] == ("worker pods removed: the group is its leader alone",
                       "group size 2 -> 1 pods (leaderWorkerTemplate.size)")
    assert not [w for w in why if "None" in w], why
    assert not [w for w in why if w.startswith("image")], why
    # --max-num-seqs = ceil(200 / ranks): ceil(200/16) = 13 -> ceil(200/8) = 25
    command = next(w for w in why if w.startswith("command:"))
    assert "'--data-parallel-size 16' -> '--data-parallel-size 8'" in command
    assert "'--max-num-seqs 13' -> '--max-num-seqs 25'" in command
    # fewer GPUs at the same sizing.concurrency: each rank holds more (it said "the added GPUs")
    rol002 = next(f for f in d.findings if f.code == "ROL002")
    assert "16 -> 8 GPUs per instance" in rol002.message
    assert "13 -> 25 sequences per rank" in rol002.message
    assert "the fewer GPUs must hold the old load" in rol002.message
