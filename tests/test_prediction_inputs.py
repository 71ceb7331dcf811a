"""The inputs a prediction rests on, shown beside it (issue 32 item 6): the inter-node bandwidth
per GPU derived from the RDMA devices and gpusPerNode (generator/spec/bandwidth.py), stated,
derived or assumed; the TTFT split into service and queueing (perf/loop.py ``ttft_parts``)."""

from __future__ import annotations

import json

import pytest
import yaml

from generator.cli import run
from generator.perf.candidate import QUEUE_PARTS, SERVICE_PARTS, ttft_split_json
from generator.perf.loop import ttft_parts
from generator.perf.terms import PrefillEstimate
from generator.spec.bandwidth import inter_node, of_request, resolved
from generator.spec.models import Network
from generator.spec.request import PlanRequest
from tests.helpers import EXAMPLES

RDMA4 = {"resourceName": "rdma/ib", "devices": ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]}


def test_four_400g_devices_on_eight_gpus_are_200_gbit_per_gpu():
    """4 devices x 400 Gbit/s (assumed: no deviceGbps) / 8 GPUs per node = 200 Gbit/s per GPU
    = 25 GB/s; stated as 200 Gbit/s per device on 8 GPUs with 8 devices: 8 x 200 / 8 = 200;
    the pool with the most GPUs per node binds (4 x 400 / 4 = 400 on a 4-GPU pool, 200 on the
    8-GPU one)."""
    net = Network.model_validate({"rdma": RDMA4})
    got = inter_node(net, [8])
    assert (got.gbps, got.gbps / 8, got.basis) == (200.0, 25.0, "derived")
    assert got.assumed == ("network.rdma.deviceGbps",) and "400 Gbit/s (assumed)" in got.how
    eight = Network.model_validate({"rdma": {**RDMA4, "deviceGbps": 200,
                                             "devices": [f"mlx5_{i}" for i in range(8)]}})
    got = inter_node(eight, [8])
    assert (got.gbps, got.basis, got.assumed) == (200.0, "derived", ())
    assert inter_node(net, [4]).gbps == 400.0 and inter_node(net, [4, 8]).gbps == 200.0


def test_a_stated_bandwidth_wins_and_none_is_assumed():
    stated = inter_node(Network.model_validate({"rdma": RDMA4, "interNodeGbps": 800}), [8])
    assert (stated.gbps, stated.basis, stated.how) == (800.0, "stated", "network.interNodeGbps")
    bare = inter_node(Network.model_validate({}), [8])
    assert (bare.gbps, bare.basis, bare.assumed) == (400.0, "assumed", ("network.interNodeGbps",))


def _request(network: dict) -> PlanRequest:
    return PlanRequest.model_validate({
        "apiVersion": "moegen.dev/v1alpha1", "kind": "PlanRequest", "metadata": {"name": "r"},
        "spec": {"model": {"architecture": "deepseek-v3", "weights": "fp8"},
                 "engine": {"name": "vllm", "version": "0.33.0"},
                 "nodePools": {"p": {"gpu": "H20-96GB", "gpusPerNode": 8, "nodes": 2}},
                 "network": network,
                 "workload": {"inputTokens": 1000, "outputTokens": 100, "concurrency": 8}}})


def test_a_plan_request_derives_the_bandwidth_its_field_does_not_state():
    """A PlanRequest's interNodeGbps defaults to 400: with RDMA devices and the field unset it
    is derived (4 x 400 / 8 = 200), and stays counted as not stated (gen plan --emit leaves it
    out: the spec derives the same); set, it wins."""
    req = resolved(_request({"rdma": RDMA4}))
    assert req.spec.network.interNodeGbps == 200.0
    assert of_request(req).basis == "derived"
    assert "interNodeGbps" not in req.spec.network.model_fields_set
    kept = resolved(_request({"rdma": RDMA4, "interNodeGbps": 400}))
    assert (kept.spec.network.interNodeGbps, of_request(kept).basis) == (400.0, "stated")


def test_ttft_parts_add_up_to_the_ttft():
    """A prefill of 200 ms after a 50 ms per-request cost, 10 ms of KV transfer, at utilisation
    0.5: the M/D/1 queue 0.2 x 0.5 / (2 x (1 - 0.5)) = 0.1 s; a TTFT of 1 s leaves
    1 - (0.05 + 0.2 + 0.01 + 0.1) = 0.64 s beyond the capacity. Service = 50 + 200 + 10 = 260
    ms, queue = 100 + 640 = 740 ms."""
    pre = PrefillEstimate(latency_s=0.2, requests_per_s=5.0, request_s=0.05)
    parts = ttft_parts(pre, 1.0, kv_s=0.01, rho=0.5)
    assert tuple(parts) == SERVICE_PARTS + QUEUE_PARTS
    assert parts == pytest.approx({"request": 50, "prefill": 200, "kvTransfer": 10,
                                   "decodeFirstStep": 0, "stepWait": 0, "prefillQueue": 100, "prefillDelayer": 0,
                                   "overflow": 640})
    split = ttft_split_json(parts)
    assert (split["ttftServiceMs"], split["ttftQueueMs"]) == (260.0, 740.0)


@pytest.fixture(scope="module")
def s1_at(tmp_path_factory):
    """gen size --format json of S1 (4 RDMA devices, 8 GPUs per node: 200 Gbit/s per GPU
    derived) and of S1 with interNodeGbps: 400 stated."""
    out = {}
    over = tmp_path_factory.mktemp("net") / "o.yaml"
    over.write_text(yaml.safe_dump({"spec": {"network": {"interNodeGbps": 400}}}))
    for gbps, extra in ((200, []), (400, ["-f", str(over)])):
        import io
        from contextlib import redirect_stdout
        buf = io.StringIO()
        with redirect_stdout(buf):
            assert run(["size", str(EXAMPLES / "s1-16xh20-pd.yaml"), *extra,
                        "--format", "json"]) == 0
        out[gbps] = json.loads(buf.getvalue())
    return out


def _prefill(doc) -> dict:
    return next(r for r in doc["roles"] if r["name"] == "prefill")["predicted"]


def test_a_slower_fabric_shows_a_longer_service_and_the_split_explains_a_better_ttft(s1_at):
    """S1 at 200 Gbit/s per GPU (derived) against 400 (stated): the KV transfer of 3,500
    tokens x 35,712 B = 124,992,000 B at 25 GB/s x ETA_NET 0.6 takes 8.33 ms, twice the 4.17
    ms at 50 GB/s, so the service is longer; the TTFT is shorter because the slower decode
    keeps fewer sequences in the loop waiting beyond the capacity (the queue is shorter), which
    the split says."""
    slow, fast = _prefill(s1_at[200]), _prefill(s1_at[400])
    assert slow["ttftPartsMs"]["kvTransfer"] == pytest.approx(124_992_000 / (25e9 * 0.6) * 1e3,
                                                              abs=0.05)
    assert fast["ttftPartsMs"]["kvTransfer"] == pytest.approx(124_992_000 / (50e9 * 0.6) * 1e3,
                                                              abs=0.05)
    assert slow["ttftServiceMs"] > fast["ttftServiceMs"]
    assert slow["ttftMs"] < fast["ttftMs"] and slow["ttftQueueMs"] < fast["ttftQueueMs"]
    for p in (slow, fast):
        assert p["ttftServiceMs"] + p["ttftQueueMs"] == pytest.approx(p["ttftMs"], abs=0.15)
    assert s1_at[200]["prediction"]["inputs"][0]["basis"] == "derived"
    assert s1_at[400]["prediction"]["inputs"][0] == {
        "name": "interNodeGbpsPerGpu", "value": 400.0, "unit": "Gbit/s", "basis": "stated",
        "from": "network.interNodeGbps"}


def test_gen_size_text_shows_the_split_and_the_inputs(capsys):
    assert run(["size", str(EXAMPLES / "s1-16xh20-pd.yaml")]) == 0
    out = capsys.readouterr().out
    assert "(predicted: service " in out and " + queue " in out and "KV transfer 8, decode's first step 140) + queue" in out
    assert ("interNodeGbpsPerGpu: 200 Gbit/s (derived: 4 RDMA devices (mlx5_0, mlx5_1, mlx5_2, "
            "mlx5_3) x 400 Gbit/s (assumed) / 8 GPUs per node)") in out
    assert "acceptance: 0.7 per draft token (assumed: the default 0.7)" in out


def test_gen_plan_text_shows_the_inputs_block(capsys):
    """gen plan's text output lists the inputs its predictions rest on, as gen size and
    --format json do: the fixed-layout H20 request states 200 Gbit/s per GPU and concurrency
    768."""
    assert run(["plan", str(EXAMPLES / "plan" / "h20-96-fixed-layout.yaml")]) == 0
    out = capsys.readouterr().out
    block = out[out.index("\ninputs:\n"):]
    assert "  interNodeGbpsPerGpu: 200 Gbit/s (stated: network.interNodeGbps)" in block
    assert "  concurrency: 768 sequences (stated: spec.workload.concurrency)" in block


def test_a_deployments_concurrency_is_derived_from_its_roles(s1_at):
    """S1 states no workload concurrency: 1 decode replica x sizing.concurrency 200 = 200
    sequences, derived (not stated)."""
    inputs = {i["name"]: i for i in s1_at[200]["prediction"]["inputs"]}
    c = inputs["concurrency"]
    assert (c["value"], c["basis"]) == (200, "derived")
    assert c["from"] == "decode: 1 x 200 (roles[].replicas x sizing.concurrency)"


def test_the_weight_load_rate_is_marked_assumed_or_stated(s1_at, tmp_path, capsys):
    """S1 sets no model.loadGBps: the cold start reads at the assumed 1 GB/s (the prefill pod's
    637.7 GiB share: 637.7 x 2^30 / 1e9 = 685 s), marked assumed in the inputs and the host
    JSON; model.loadGBps: 4 is stated, 637.7 x 2^30 / 4e9 = 171 s."""
    inputs = {i["name"]: i for i in s1_at[200]["prediction"]["inputs"]}
    assert (inputs["weightLoadGBps"]["value"], inputs["weightLoadGBps"]["basis"]) == \
        (1.0, "assumed")
    host = s1_at[200]["roles"][0]["host"]
    assert (host["loadGBps"], host["loadGBpsBasis"], host["loadSeconds"]) == \
        (1.0, "assumed", round(637.7 * 2**30 / 1e9))
    over = tmp_path / "o.yaml"
    over.write_text("spec:\n  model:\n    loadGBps: 4\n")
    assert run(["size", str(EXAMPLES / "s1-16xh20-pd.yaml"), "-f", str(over)]) == 0
    out = capsys.readouterr().out
    assert f"load {round(637.7 * 2**30 / 4e9)} s at 4 GB/s (stated: model.loadGBps)" in out
    assert "weightLoadGBps: 4 GB/s (stated: spec.model.loadGBps" in out
