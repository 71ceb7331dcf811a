"""``gen import`` then ``gen validate`` of the twenty reference manifests with NO options (issue 31,
item 7: the import of a sound manifest validates), and the two classes that kept sound ones from
it: the GPU a manifest does not name, and RDMA NICs the pods reach without device names.

Before this change 4 of 20 imports validated: the importer wrote ``gpu: H100-80GB`` where the
manifest names no GPU (SIZ001/SIZ002 then judged the sizing on a guess: the llm-d GB200 and
H200 guides, the Dynamo GB200 recipe), and left ``network.rdma`` out where the pods request an
RDMA resource without naming HCAs or attach RDMA networks (A2A004 on the Dynamo vLLM recipe's
``custom: rdma/ib: "8"`` and the llm-d GKE guide's ``rdma-0 .. rdma-7`` networks).

Each import that still fails, and why (tests/test_import_reference.py and tests/corpus/audit/
have each manifest's findings, verified there):

* defects of the manifest as published, named by a rule: the Dynamo SGLang DeepSeek-R1 recipes
  transfer KV with Mooncake over RDMA and request no RDMA NIC (PD011, both roles); the Dynamo
  vLLM Hopper recipe's decode runs ``--max-num-seqs 512`` under vLLM's 256-token default batch for
  DeepEP low-latency + DP (SRV001); the KServe P/D sample sets
  ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` beside NixlConnector (NET032); the llm-d
  DisaggregatedSet runs DeepEP across pods without RDMA NICs (A2A004); the llm-d GLM-5.2
  benchmark gives the tool-call flags to decode only, so prefill answers a tools request with 400
  (PD090).
A model served from a local path without its config.json (SGLang's own StatefulSet example:
``--model /llm-folder`` from a hostPath) is ``model.architecture: unknown``: the checks that do
not read the model run, MOD008 (a notice) says which did not; before it, MOD001 failed that
import (neither architecture nor config).

vLLM 0.8.5 spanning TP x PP over Ray (both GKE LeaderWorkerSets: multi-node-serving.sh) is
``parallel.executor: ray``; before it the spec could only say ``--nnodes`` (LAY005 from vLLM
0.11.1), and both imports failed LAY005.

SGLang's decode admission left at SGLang's default (no ``--max-running-requests``) is
``sizing.concurrency: engine-default`` (tests/test_engine_default_admission.py); before it,
SRV004 failed the Dynamo GB200 recipe, the llm-d gpt-oss SGLang guide and the two DeepSeek-R1
recipes (beside their PD011).
"""

from __future__ import annotations

import pytest
import yaml

from generator.cli import run
from generator.importer import Options
from generator.importer.spec_text import spec_yaml
from generator.inputs import read_inputs
from tests.helpers import shared

#: manifest -> the error codes gen validate gives on the spec gen import wrote (no options).
FAILING = {
    "dynamo-dgd-deepseek-r1-sglang-disagg-16gpu": ["PD011", "PD011"],
    "dynamo-dgd-deepseek-r1-sglang-disagg-8gpu": ["PD011", "PD011"],
    "dynamo-dgd-deepseek-r1-vllm-disagg-hopper-16gpu": ["SRV001"],
    "kserve-llmisvc-deepseek-r1-0528-pd-deepep-ht": ["NET032", "NET032"],
    "llmd-wide-ep-lws-vllm-deepseek-r1-0528-disaggregatedset": ["A2A004", "A2A004"],
    "llmd-wide-ep-lws-vllm-glm-5.2-fp8-p1w1d1w2-coreweave": ["PD090", "PD090"],
}
#: The manifests that name no GPU product (node selector, node affinity, instance type).
UNSTATED = {
    "dynamo-dgd-deepseek-r1-sglang-disagg-16gpu", "dynamo-dgd-deepseek-r1-sglang-disagg-8gpu",
    "dynamo-dgd-deepseek-r1-vllm-disagg-hopper-16gpu",
    "dynamo-dgd-deepseek-v4-pro-sglang-disagg-gb200", "gke-lws-vllm-deepseek-r1-tp8-pp2-hdml",
    "kserve-llmisvc-deepseek-r1-0528-dp-ep-deepep-ht",
    "kserve-llmisvc-deepseek-r1-0528-pd-deepep-ht",
    "llmd-pd-disaggregation-sglang-gpt-oss-120b-coreweave",
    "llmd-pd-disaggregation-vllm-gpt-oss-120b-coreweave",
    "llmd-wide-ep-lws-vllm-deepseek-r1-0528-coreweave",
    "llmd-wide-ep-lws-vllm-deepseek-r1-0528-disaggregatedset",
    "llmd-wide-ep-lws-vllm-deepseek-r1-0528-gke",
    "llmd-wide-ep-lws-vllm-deepseek-v4-pro-oci-gb200-high-tpt",
    "llmd-wide-ep-lws-vllm-deepseek-v4-pro-oci-gb200-low-latency",
    "llmd-wide-ep-lws-vllm-glm-5.2-fp8-p1w1d1w2-coreweave",
    "sglang-statefulset-deepseek-r1-tp16-ep16",
}


@pytest.fixture(scope="module")
def round_trip(tmp_path_factory) -> dict[str, tuple[dict, list]]:
    """Per manifest: (the spec gen import wrote, gen validate's findings on it), no options."""
    out = tmp_path_factory.mktemp("imported")
    found = {}
    for path in sorted(shared("reference", "manifests").glob("*.yaml")):
        spec = out / path.name   # what gen import -o writes (generator/cli.py import_cmd)
        spec.write_text(spec_yaml(read_inputs([path]).results[0].imported))
        found[path.stem] = (yaml.safe_load(spec.read_text()),
                            read_inputs([spec]).results[0].checked.findings)
    return found


def test_the_imports_of_the_sound_manifests_validate(round_trip):
    assert len(round_trip) == 20
    errors = {name: sorted(f.code for f in findings if f.severity.value == "error")
              for name, (_, findings) in round_trip.items()}
    assert {n: e for n, e in errors.items() if e} == FAILING
    # 20 - 6 = 14 validate (4 before the GPU and RDMA classes were carried over, 9 before
    # sizing.concurrency: engine-default: the Dynamo GB200 recipe, the llm-d gpt-oss guide; 11
    # before parallel.executor: ray: the two GKE LeaderWorkerSets; 13 before
    # model.architecture: unknown: the SGLang StatefulSet).
    assert sum(not e for e in errors.values()) == 14


def test_an_unstated_model_is_unknown_in_the_spec_and_its_checks_a_notice(round_trip):
    """No guessed model: the SGLang StatefulSet serves ``--model /llm-folder`` from a hostPath
    with no config.json and no Hub id, so its spec says ``model.architecture: unknown`` (with
    the weights' volume), gen validate reports one MOD008 notice and nothing judged on the
    stand-in model. Every other import names its model (a catalog id)."""
    for name, (doc, findings) in round_trip.items():
        model = doc["spec"]["model"]
        unknown = model.get("architecture") == "unknown"
        assert unknown == (name == "sglang-statefulset-deepseek-r1-tp16-ep16"), name
        assert [(f.code, f.severity.value, f.path) for f in findings if f.code == "MOD008"] == \
            ([("MOD008", "notice", "$.spec.model.architecture")] if unknown else []), name
    doc, findings = round_trip["sglang-statefulset-deepseek-r1-tp16-ep16"]
    assert doc["spec"]["model"]["volume"] == {"hostPath": {"path": "/llm-folder",
                                                           "type": "DirectoryOrCreate"}}
    # What it reports: the pinned-tag warning (latest), hostNetwork on every interface
    # (NET090) without a socket interface (NET001, a role check that did not run before
    # without a model), and the two notices.
    assert sorted((f.code, f.severity.value) for f in findings) == [
        ("ENG003", "warning"), ("MOD008", "notice"), ("NET001", "warning"),
        ("NET090", "warning"), ("POOL006", "notice")]


def test_a_ray_cluster_is_imported_as_the_ray_executor(round_trip):
    """The GKE samples start Ray (multi-node-serving.sh leader / worker) and span TP 8 x PP 2 =
    16 GPUs over 2 pods of 8: ``parallel.executor: ray``; LAY005 (the --nnodes path) stays out."""
    for name in ("gke-lws-vllm-deepseek-r1-tp8-pp2", "gke-lws-vllm-deepseek-r1-tp8-pp2-hdml"):
        doc, findings = round_trip[name]
        assert doc["spec"]["roles"][0]["parallel"] == {"tensor": 8, "pipeline": 2,
                                                       "executor": "ray"}, name
        assert "LAY005" not in {f.code for f in findings}
    # A manifest without Ray has no executor written.
    doc, _ = round_trip["llmd-wide-ep-lws-vllm-deepseek-r1-0528-gke"]
    assert all("executor" not in r.get("parallel", {}) for r in doc["spec"]["roles"])


def test_an_unstated_gpu_is_unknown_in_the_spec_and_its_checks_a_notice(round_trip):
    """No guessed GPU: ``gpu: unknown``, one POOL006 notice per such pool, and no finding of a
    check that reads the GPU (HBM sizing, what the GPU runs)."""
    for name, (doc, findings) in round_trip.items():
        pools = doc["spec"]["nodePools"]
        unknown = sorted(p for p, v in pools.items() if v["gpu"] == "unknown")
        assert bool(unknown) == (name in UNSTATED), name
        assert sorted(f.path for f in findings if f.code == "POOL006") == \
            [f"$.spec.nodePools.{p}.gpu" for p in unknown], name
        assert all(f.severity.value == "notice" for f in findings if f.code == "POOL006")
        if unknown:
            assert not [f.code for f in findings
                        if f.code.startswith(("SIZ", "GPU", "QNT")) or f.code == "POOL005"], name
    # The llm-d GB200 guide sized on H100-80GB before: SIZ001 on both roles (weights 122.4 GiB
    # against a 0.95 x 79.19 GiB budget); now its import validates, with the notice.
    _, findings = round_trip["llmd-wide-ep-lws-vllm-deepseek-v4-pro-oci-gb200-high-tpt"]
    assert [(f.code, f.severity.value) for f in findings if f.code.startswith(("SIZ", "POOL"))] \
        == [("POOL006", "notice")]


def test_rdma_without_device_names_is_network_rdma(round_trip):
    """RDMA NICs the pods reach: the resource and its count (Dynamo's ``resources.limits.custom``
    ``rdma/ib: "8"``, l.47-49), or GKE's RDMA networks (``networking.gke.io/interfaces``
    rdma-0 .. rdma-7, with zero-valued ``networking.gke.io.networks/rdma-N`` requests that request
    nothing) with the HCAs DeepEP's GPU -> HCA map names (``DEEP_EP_DEVICE_TO_HCA_MAPPING``)."""
    rdma = {n: d["spec"].get("network", {}).get("rdma") for n, (d, _) in round_trip.items()}
    assert rdma["dynamo-dgd-deepseek-r1-vllm-disagg-hopper-16gpu"] == \
        {"resourceName": "rdma/ib", "resourceCount": 8}
    assert rdma["llmd-wide-ep-lws-vllm-deepseek-r1-0528-gke"] == \
        {"devices": [f"mlx5_{i}" for i in range(8)]}
    # No RDMA in the pods (a true A2A004 / PD011, above): none invented.
    assert rdma["llmd-wide-ep-lws-vllm-deepseek-r1-0528-disaggregatedset"] is None
    assert rdma["dynamo-dgd-deepseek-r1-sglang-disagg-8gpu"] is None


def test_commands_that_need_the_gpu_refuse_an_unknown_one(round_trip, tmp_path):
    """gen validate passes the imported GB200 guide with the POOL006 notice; gen render and gen
    size need the GPU's numbers: POOL006 is an error there (exit 1), nothing is written."""
    doc, _ = round_trip["llmd-wide-ep-lws-vllm-deepseek-v4-pro-oci-gb200-low-latency"]
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(doc))
    assert run(["validate", str(spec)]) == 0
    assert run(["render", str(spec), "-o", str(tmp_path / "out")]) == 1
    assert not (tmp_path / "out").exists()
    assert run(["size", str(spec)]) == 1
    doc["spec"]["nodePools"]["prefill"]["gpu"] = "GB200-186GB"
    spec.write_text(yaml.safe_dump(doc))
    assert run(["size", str(spec)]) == 0


@pytest.mark.parametrize("pod, expected", [
    # Multus: an RDMA network by name (k8s.v1.cni.cncf.io/networks), no device-plugin resource.
    ({"metadata": {"annotations": {"k8s.v1.cni.cncf.io/networks": "roce-net-a,roce-net-b"}}},
     {}),
    # The host's network with the verbs devices mounted from the host.
    ({"spec": {"hostNetwork": True,
               "volumes": [{"name": "ib", "hostPath": {"path": "/dev/infiniband"}}]},
      "mounts": [{"name": "ib", "mountPath": "/dev/infiniband"}]},
     {}),
    # An SR-IOV RDMA resource of the NVIDIA network operator, with NCCL's HCA list.
    ({"limits": {"nvidia.com/sriov_rdma_vf": "4"}, "env": [{"name": "NCCL_IB_HCA",
                                                           "value": "=mlx5_0,mlx5_1"}]},
     {"resourceName": "nvidia.com/sriov_rdma_vf", "resourceCount": 4,
      "devices": ["mlx5_0", "mlx5_1"]}),
    # The host's network alone is not RDMA (no verbs devices in the pod).
    ({"spec": {"hostNetwork": True}}, None),
])
def test_how_a_pod_reaches_rdma(tmp_path, pod, expected):
    meta = pod.get("metadata", {})
    spec = {"containers": [{
        "name": "vllm", "image": "vllm/vllm-openai:v0.33.0",
        "args": ["deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "8"],
        "env": pod.get("env", []), "volumeMounts": pod.get("mounts", []),
        "resources": {"limits": {"nvidia.com/gpu": 8, **pod.get("limits", {})}}}],
        **pod.get("spec", {})}
    doc = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "r1"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "r1"}},
                    "template": {"metadata": {"labels": {"app": "r1"}, **meta}, "spec": spec}}}
    path = tmp_path / "sts.yaml"
    path.write_text(yaml.safe_dump(doc))
    r = read_inputs([path], opts=Options(gpu="H200-141GB")).results[0]
    assert r.imported.data["spec"].get("network", {}).get("rdma") == expected
    # Without device names: IMP004 says what moegen takes the NICs to be.
    assert ("IMP004" in {f.code for f in r.findings}) == (expected is not None
                                                          and "devices" not in expected)


def test_rdma_without_devices_leaves_the_device_lists_to_the_libraries():
    """``network.rdma`` without devices renders no device list: NCCL, NVSHMEM, UCX and
    Mooncake then use every HCA the pod sees; with devices, the lists as before."""
    from generator.engines.network import network_env
    from generator.engines.vllm import kv_connector_extra
    from generator.spec.models import KvTransfer, Moe, Network, Rdma
    moe, kv = Moe(all2all="deepep_low_latency"), KvTransfer(connector="nixl")
    bare = dict(network_env(Network(rdma=Rdma(resourceName="rdma/ib")), moe, kv))
    assert {"NCCL_IB_HCA", "UCX_NET_DEVICES", "NVSHMEM_HCA_LIST"}.isdisjoint(bare)
    assert bare["NVSHMEM_IB_ENABLE_IBGDA"] == "1"   # mlx5 (the default family): IBGDA
    named = dict(network_env(Network(rdma=Rdma(resourceName="rdma/ib", devices=["mlx5_0"])),
                             moe, kv))
    assert (named["NCCL_IB_HCA"], named["UCX_NET_DEVICES"], named["NVSHMEM_HCA_LIST"]) == \
        ("=mlx5_0", "mlx5_0:1,lo", "mlx5_0:1")
    # Mooncake opens every device it finds without device_name (vLLM 0.33.0
    # mooncake_connector.py): no extra config; with devices, device_name.
    assert kv_connector_extra("mooncake", Rdma()) is None
    assert kv_connector_extra("mooncake", Rdma(devices=["mlx5_0", "mlx5_1"])) == \
        {"device_name": "mlx5_0,mlx5_1"}


def test_every_rule_that_reads_the_gpu_is_not_reported_on_an_unknown_one():
    """A rule that reads the pool's GPU (the catalog entry, the all-to-all per GPU, the sizing
    phase) is in ``gpu_dependent`` (checks/registry.py), so that ``gpu: unknown`` never reports
    a finding judged on the stand-in. SRV001 reads the sizing only for vLLM's default batch
    (256 on every GPU under DeepEP low-latency + DP: registry.py says why it stays)."""
    import inspect
    import re

    from generator.checks.registry import RULES, Phase, gpu_dependent
    reads = re.compile(r"GPUS\[|\b_gpu\(|_a2a_roles\(|\.sized\(\)|\.durations\b|lifecycle\.")
    found = sorted(r.code for r in RULES if r.check is not None and r.code != "SRV001" and (
        r.phase is Phase.SIZING or reads.search(inspect.getsource(r.check))))
    assert found and [c for c in found if not gpu_dependent(c)] == []
