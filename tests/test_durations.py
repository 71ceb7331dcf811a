"""The duration model (generator/durations.py) and the lifecycle paths (generator/lifecycle.py):
every timeout pair from one set of predicted durations, every rollout from the pool's room.

Expected numbers are derived by hand below; the physical prefill/decode times come from the
planner's model (generator/perf/terms.py, calibrated in tests/test_planner.py), called here
directly so the composition is checked on its own.
"""

from __future__ import annotations

import math

import yaml

from generator import pipeline
from generator.perf import terms as perf
from generator.perf.decode import bf16_compute, model_shape
from generator.catalog import GPUS
from generator.durations import (
    MARGIN,
    RoleTimes,
    _combine,
    front_idle_s,
    keepalive_s,
    timing_env,
)
from generator.engines.gateway import route_timeout
from generator.engines.routers import router_launch
from generator.lifecycle import client_service, rollout
from tests.helpers import ROOT, render_spec

S1 = ROOT / "examples" / "s1-16xh20-pd.yaml"
S3 = ROOT / "examples" / "s3-v4pro-pd-dp16.yaml"
UNIFIED = ROOT / "examples" / "s1-32xh20-unified.yaml"


def _checked(spec, tmp_path, overlay: str | None = None):
    overlays = []
    if overlay:
        (tmp_path / "o.yaml").write_text(overlay)
        overlays = [tmp_path / "o.yaml"]
    return pipeline.check(spec, overlays)


def test_combine_derives_every_timeout_from_one_set_of_durations():
    """PD: prefill 100 s + transfer 2 s; decode: 32,768 tokens at 0.05 s per step.
    longest prefill = 102 s; longest request = 102 + 32768 x 0.05 = 102 + 1638.4 = 1740.4 s;
    request timeout = ceil(1.5 x 1740.4 = 2610.6 s to a minute) = 2640 s (above the routers'
    1800); KV wait = max(300, ceil(1.5 x 102) = 153) = 300; mean request = 1 + 40 = 41 s,
    drain = max(60, ceil(1.5 x 41) = 62) = 62."""
    times = (RoleTimes("p", "prefill", 32768, 2000, prefill_s=100.0, transfer_s=2.0, mean_s=1.0),
             RoleTimes("d", "decode", 32768, 1800, step_s=0.05, mean_s=40.0))
    d = _combine(times, pd=True, traffic=True, notes=[])
    assert d.startup_s == 2000
    assert d.longest_prefill_s == 102.0
    assert math.isclose(d.longest_request_s, 1740.4)
    assert (d.request_timeout_s, d.kv_wait_s, d.drain_s) == (2640, 300, 62)


def test_combine_floors_and_ceilings():
    """A prefill of 300 s: KV wait ceil(1.5 x 300) = 450 > 300. A short deployment keeps the
    components' defaults: 10 s prefill + 1000 x 0.1 s = 110 s, 1.5 x 110 = 165 < 1800. A mean
    request of 1000 s drains at most 900 s. No traffic: drain 60."""
    long_prefill = (RoleTimes("p", "prefill", 1000, prefill_s=300.0, transfer_s=0.0, mean_s=10.0),
                    RoleTimes("d", "decode", 1000, step_s=0.1, mean_s=990.0))
    d = _combine(long_prefill, pd=True, traffic=True, notes=[])
    assert (d.kv_wait_s, d.request_timeout_s, d.drain_s) == (450, 1800, 900)
    short = (RoleTimes("u", "unified", 1000, prefill_s=10.0, step_s=0.1),)
    d = _combine(short, pd=False, traffic=False, notes=[])
    assert (d.longest_prefill_s, d.longest_request_s) == (10.0, 110.0)
    assert (d.request_timeout_s, d.drain_s) == (1800, 60)
    # nothing predicted: every consumer keeps its component's default
    d = _combine((RoleTimes("d", "decode", 1000),), pd=True, traffic=True, notes=[])
    assert (d.longest_request_s, d.request_timeout_s, d.kv_wait_s, d.drain_s) == \
        (None, 1800, 300, 60)


def test_s1_durations_compose_the_planners_prefill_and_decode(tmp_path):
    """S1's figures are the perf model's prefill of one 32,768-token prompt on the TP8 prefill
    and its decode step at the admitted batch ceil(200 / 16) = 13 per rank, half of maxModelLen
    of context, MTP's one draft token computed but none accepted, composed as the docstring says."""
    c = _checked(S1, tmp_path)
    spec = c.spec.spec
    pre, dec = c.roles
    zp, zd = c.sizing
    # network.interNodeGbps unset: derived from S1's RDMA devices (generator/spec/bandwidth.py),
    # 4 devices x 400 Gbit/s (assumed) / 8 GPUs per node = 200 Gbit/s per GPU
    gbps = 200.0
    h96, h141 = GPUS["H20-96GB"], GPUS["H20-141GB"]
    shp = model_shape(pre.arch, "fp8", zp.kv_bytes_per_token)
    prefill = perf.prefill(shp, h96, isl=32768, tensor=8, data=1, pipeline=1, expert=False,
                           gpus_per_node=8, inter_gbps=gbps, weights_bytes=zp.weights * 2**30,
                           bf16=bf16_compute("fp8"), batch_tokens=8192,
                           chunk_tokens=8192).latency_s   # 4 chunks of vLLM's default 8,192
    # The decode GPU's KV of one prompt from one prefill GPU over its NIC (decode TP 1 reads
    # from prefill TP 8: one reader per prefill GPU).
    transfer = perf.kv_transfer_time(32768, zd.kv_bytes_per_token, gbps, readers=1)
    shd = model_shape(dec.arch, "fp8", zd.kv_bytes_per_token)
    routed = zd.weights_by_component["routed_experts"] * 2**30
    step = perf.decode_step(
        shd, h141, batch=13, tensor=1, data=16, expert=True,
        nonexpert_bytes=zd.weights * 2**30 - routed,
        local_experts_per_layer=routed / (shd.expert_bytes * shd.moe_layers), ctx=16384,
        gpus_per_node=8, inter_gbps=gbps, draft=1, bf16=False, attn_fp8=True,
        drafter="vllm_mtp", all2all=dec.moe.all2all, engine="vllm")[0]
    d = c.model.durations
    assert math.isclose(d.longest_prefill_s, prefill + transfer)
    assert math.isclose(d.longest_request_s, prefill + transfer + 32768 * step)
    assert d.request_timeout_s == math.ceil(MARGIN * (prefill + transfer + 32768 * step) / 60) * 60
    assert d.request_timeout_s > 1800   # so the router gets more than its default
    assert d.startup_s == max(h.startup_s for h in c.host) == 2190
    assert spec.traffic is not None and d.mean_request_s is not None


def test_keepalive_outlasts_the_pool_in_front():
    """vllm-router pools idle connections 50 s -> 50 + 30 = 80; the routing sidecar 90 s ->
    120 (llm-d/llm-d PR#1564's value); smg 1.13 3 s is below the engines' 5 s: nothing."""
    assert (keepalive_s(50), keepalive_s(90), keepalive_s(3), keepalive_s(None)) == \
        (80, 120, None, None)


def test_front_idle_and_timing_env_per_mode(tmp_path):
    igw = ("spec:\n  router:\n    kind: inference-gateway\n    gateway:\n"
           "      parentRef: {name: gw, namespace: gateway-system}\n")
    s1 = _checked(S1, tmp_path)
    assert (front_idle_s(s1.spec, "prefill"), front_idle_s(s1.spec, "decode")) == (50, 50)
    s3 = _checked(S3, tmp_path)
    assert front_idle_s(s3.spec, "decode") == 3   # smg
    assert timing_env(s3.spec, "sglang", "decode", s3.model.durations) == {
        "SGLANG_DISAGGREGATION_WAITING_TIMEOUT": str(s3.model.durations.kv_wait_s)}
    assert timing_env(s3.spec, "sglang", "prefill", s3.model.durations) == {}
    s3g = _checked(S3, tmp_path, igw)
    assert timing_env(s3g.spec, "sglang", "prefill", s3g.model.durations) == {
        "SGLANG_TIMEOUT_KEEP_ALIVE": "120"}
    uni = _checked(UNIFIED, tmp_path)
    assert front_idle_s(uni.spec, "unified") is None
    assert timing_env(uni.spec, "vllm", "unified", uni.model.durations) == {}


def test_route_timeout_and_router_flag():
    assert route_timeout(None) == "3600s"
    assert route_timeout(5520) == "5520s"
    assert route_timeout(200_000) == "99999s"   # Gateway API Duration: at most 5 digits
    args = router_launch("sglang", port=8080, policy="round_robin", connector="nixl",
                         prefill_urls=["http://p:8000"], decode_urls=["http://d:8000"],
                         startup_s=2190, request_timeout_s=3480).args
    i = args.index("--request-timeout-secs")
    assert args[i + 1] == "3480"


def test_rollout_surges_only_where_the_pool_and_the_lws_release_allow(tmp_path):
    """S1's decode instance is DP16 on two 8-GPU nodes. With 4 decode nodes a second instance
    fits beside the first (2 + 2 <= 4) -> surge; with 3 it does not (4 > 3). LWS 0.8.0 cannot
    roll with maxUnavailable 0; Kueue admits groups itself; no platform.lws: the default."""
    def plan(nodes: int, lws: str | None, extra: str = "") -> tuple[int, int]:
        platform = f"  platform:\n    lws: {{version: \"{lws}\"}}\n{extra}" if lws else ""
        c = _checked(S1, tmp_path, f"spec:\n  nodePools:\n    decode-h20: {{nodes: {nodes}}}\n"
                     + platform)
        assert c.ok, c.findings
        r = rollout(c.spec, c.roles, 1)
        return r.max_surge, r.max_unavailable
    assert plan(4, "0.10.0") == (1, 0)
    assert plan(3, "0.10.0") == (0, 1)
    assert plan(4, "0.8.0") == (0, 1)
    assert plan(4, None) == (0, 1)
    assert plan(4, "0.10.0", "    scheduler: {kind: kueue, queue: q}\n") == (0, 1)


def test_rollout_leaves_no_surge_where_an_autoscaler_may_take_the_pool(tmp_path):
    """An autoscaled decode without maxReplicas may grow over every node of its pool: a surge
    group would stay Pending and a maxUnavailable-0 rollout never finish. maxReplicas 1 on a
    4-node pool leaves 2 nodes: surge."""
    base = ("spec:\n  platform:\n    lws: {version: \"0.10.0\"}\n  monitoring: {enabled: true, "
            "prometheusUrl: \"http://p:9090\"}\n  nodePools:\n    decode-h20: {nodes: 4}\n"
            "  roles:\n    - name: decode\n      autoscaling: {metric: waiting, target: 4%s}\n")
    open_ended = _checked(S1, tmp_path, base % "")
    bounded = _checked(S1, tmp_path, base % ", maxReplicas: 1")
    assert open_ended.ok and bounded.ok, (open_ended.findings, bounded.findings)
    assert rollout(open_ended.spec, open_ended.roles, 1).max_surge == 0
    assert rollout(bounded.spec, bounded.roles, 1).max_surge == 1


def test_client_services_only_where_they_are_an_entry_point(tmp_path):
    s1 = _checked(S1, tmp_path)
    assert not client_service(s1.spec, "prefill", False)
    assert not client_service(s1.spec, "decode", False)
    off = _checked(S1, tmp_path, "spec:\n  router: {enabled: false}\n")
    assert client_service(off.spec, "prefill", False) and client_service(off.spec, "decode", False)
    _, _, files = render_spec(S1, [ROOT / "overlays" / "inference-gateway.yaml"])
    kust = yaml.safe_load(files["kustomization.yaml"])["resources"]
    assert "decode-service.yaml" in kust and "prefill-service.yaml" not in kust
