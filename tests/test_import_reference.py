"""The twenty third-party manifests of ../shared/reference/manifests (issue #24): each is linted
(``gen validate``) and imported (``gen import``), with the findings written down here, reviewed
one by one. ``--gpu`` is given where a manifest does not name its GPU (the README of the
reference set says which: the recipes' H200, OCI's GB200); the SGLang StatefulSet serves
DeepSeek-R1 from a local path, so its config.json is given with ``--model-config``.

What each finding is (the README's ``notes:`` are the authors' own words; "verified" means read
in the engine's source at the release named):

Bugs the notes (the authors) report, that moegen finds:

* gke-deployment-vllm-llama4-maverick: the Secret's ``{{HF_TOKEN}}`` (not valid as written):
  LOAD014 at its line (a flow mapping as a key); ``LD_LIBRARY_PATH: ${LD_LIBRARY_PATH}:...``,
  which Kubernetes does not expand: IMP014.
* dynamo-dgd-deepseek-v4-pro-sglang-disagg-gb200: ``metadata.namespace: <your-namespace>``, a
  literal placeholder: IMP013 (the API server refuses the name).
* gke-lws-...-hdml: "the dshm emptyDir has no sizeLimit": IMP016 (also the Maverick sample's).

Bugs moegen finds that the notes do not mention, verified:

* The pod-template hygiene of generator/importer/hygiene.py (judged in tests/corpus/audit):
  llm-d's routing sidecar on ``:main`` (IMP019), ``ENABLE_MTP`` set twice in the GLM variant
  (IMP020: the kubelet keeps the last), the GKE LWS samples' readiness-only engine (IMP021),
  and the SGLang StatefulSet's hostNetwork pods without ``dnsPolicy: ClusterFirstWithHostNet``
  that rendezvous at ``--dist-init-addr sglang-master-pod:5000`` (IMP024: the node's resolver
  does not know the Service name).

* dynamo-dgd-deepseek-r1-vllm-disagg-hopper-16gpu, decode: ``--max-num-seqs 512`` with no
  ``--max-num-batched-tokens`` under DeepEP low-latency + EP + DP16: vLLM 0.33.0 defaults the
  batched tokens to 256 then (vllm/engine/arg_utils.py
  ``_set_default_max_num_seqs_and_batched_tokens_args``: ``use_batched_dp_moe`` ->
  ``DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP`` = 256, vllm/config/scheduler.py:42;
  vllm/config/parallel.py ``use_batched_dp_moe``) and refuses to start, "max_num_batched_tokens
  (256) must be greater than or equal to max_num_seqs (512)" (vllm/config/scheduler.py:331):
  SRV001. (From vLLM 0.20.0 on, per generator/sizing/vllm_budget.py; the image,
  vllm-runtime:1.3.0, bundles vLLM 0.25.1: moegen's image table, ai-dynamo/dynamo@071aff3:
  pyproject.toml:62, the 1.3.0 branch cut, so the default applies.) The same recipe sets
  ``VLLM_MOE_DP_CHUNK_SIZE``, which vLLM reads through 0.19.1 only (every release's envs.py,
  engines/data/vllm-envs.json): ENG010.
* dynamo-dgd-deepseek-r1-sglang-disagg-8gpu/-16gpu: no ``--disaggregation-transfer-backend``,
  so SGLang transfers KV with Mooncake, whose transport is RDMA unless MOONCAKE_PROTOCOL says
  otherwise (sglang@v0.5.23 python/sglang/srt/distributed/device_communicators/
  mooncake_transfer_engine.py:207), and the pods request no RDMA device (the vLLM recipe of the
  same repository does: ``custom: rdma/ib: "8"``): PD011 on both roles.
* llmd-wide-ep-lws-vllm-deepseek-r1-0528-disaggregatedset: DeepEP (high-throughput on prefill,
  low-latency on decode) across the two pods of each group with no RDMA resource in the pods
  (the CoreWeave and GKE variants of the same guide add rdma/ib or the GKE RDMA networks; this
  base does not): NVSHMEM's internode transport needs an RDMA NIC: A2A004 on both roles.
* llmd-pd-disaggregation-{sglang,vllm}-gpt-oss: the prefill pods' memory limit (16Gi) does not
  exceed their memory-backed /dev/shm (16Gi / 20Gi), but a TP 1 prefill is one GPU process,
  which writes nothing there (vLLM's uni executor has no shared-memory broadcast; NCCL has no
  peer in the pod): no POD001 (corpus37).
* kserve-llmisvc-*: ``VLLM_ALL2ALL_BACKEND=deepep_high_throughput`` is not read by vLLM 0.16.0
  and later (no such variable in vLLM 0.33.0 vllm/envs.py; moegen's release table has it through
  0.15.1), so the backend stays allgather_reducescatter: IMP007. The presets' image
  (llm-d-cuda:v0.8.0) bundles vLLM 0.23.0 (llm-d/llm-d#1819, moegen's image table).
* kserve-llmisvc-deepseek-r1-0528-pd-deepep-ht: ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``
  on both NixlConnector roles (decode l.59, prefill l.248): vLLM 0.33.0 refuses a KV connector
  with it unless ``enable_cumem_allocator`` (not set here) at config time
  (vllm/config/vllm.py:1284-1301, "KV connector ... is incompatible with
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True": the CUDA VMM allocator remaps the KV cache
  behind NIXL's memory registration; vllm-project/vllm#41237): NET032.
* kv_role ``kv_both`` with NixlConnector on prefill/decode roles (Dynamo vLLM recipes, llm-d):
  vLLM 0.23.0 and later log that it is deprecated (vllm/distributed/kv_transfer/kv_connector/
  v1/nixl/connector.py:98 at 0.23.0; no such warning in 0.22.0's connector.py): IMP015 where
  the image runs such a release (Dynamo's vllm-runtime at vLLM 0.23.0, vllm-openai:v0.26.0,
  llm-d-cuda:v0.9.0) or moegen cannot read it (vllm/vllm-openai:nightly: judged at the newest,
  said so).
* sglang-statefulset (SGLang's own example): ``hostNetwork: true`` multi-node launch with no
  GLOO_SOCKET_IFNAME/NCCL_SOCKET_IFNAME: on hosts with Ethernet and InfiniBand NICs Gloo picks
  an unroutable interface (sgl-project/sglang#3226): NET001 (a warning: right on one NIC).
  Its engine container has no probe at all (nor the GKE Maverick Deployment's): IMP017.

The restart model (generator/facts/restarts.py, verified at the releases named there): every
vLLM prefill/decode pair over NIXL gets RST011 (a notice: a prefill restart crashes the decode
through NIXL's UCX race, vllm-project/vllm#49238, fixed only on NIXL main), every SGLang pair
over NIXL's UCX backend RST010 (a decode restart crashes the prefill, smg-project/smg#2503), each
at the decode's or prefill's kv-transfer setting.

moegen's policy, not a bug of the manifest as it runs (documented, not verified as failures):

* No NET001 on the GKE LWS samples nor the Dynamo SGLang 16-GPU recipe (pod network, one eth0:
  Gloo resolves the hostname to it, NCCL skips lo; NET001 asks for the bootstrap NIC only on
  hostNetwork or multi-homed pods since corpus37); POOL005/POOL004 (pools without a GPU
  nodeSelector; POOL004, POD003, POD004 and MOD006 are notices on manifests: moegen's own
  patterns); ENG003 (``latest``/``nightly``).
* vLLM 0.8.5 / 0.10.0 predate the releases moegen knows (0.11.0+): judged at 0.11.0, the
  nearest, and said so (IMP008); the release-dependent findings are warnings. No LAY005
  (--nnodes, >= 0.11.1, is moegen's path): the GKE samples span TP x PP over Ray
  (multi-node-serving.sh), which 0.8.5 picks by itself. No VER001 on a manifest that runs.

What the importer could not carry over (IMP notes): IMP004 (RDMA NICs without device names:
imported as network.rdma without devices, the NIC family read from the resource name), IMP005 (options and load-balancing modes
moegen does not render), IMP008 (the image's engine release is not in moegen's image table,
or has no per-release facts: judged at the newest release whose parser has every option used,
or at the nearest release), IMP011 (a model outside the catalog: Llama-4, gpt-oss, GLM-5.2),
IMP003 (a 1500Gi /dev/shm above what the spec holds). Weights downloaded from the Hub are
imported as model.hub (the cache volume as deployed); a cache that dies with the pod: MOD006.

The GB200 manifests (Dynamo SGLang V4-Pro, llm-d OCI V4-Pro) claim a ComputeDomain's IMEX
channel (pod ``resourceClaims`` + the container's ``resources.claims``, the ComputeDomain in the
same file): imported as ``network.computeDomain``, so GPU030 (instances across trays without
the channel) does not fire and the NCCL MNNVL variables are moegen's own.

Known quirks in the notes moegen does not check: probes (tcpSocket readiness, HTTPS liveness on
the routing sidecar's port), a comment naming a file not in the directory, ``requests:`` left
null (valid Kubernetes), the kustomize placeholders of an unrendered overlay.
"""

from __future__ import annotations

import pytest
import yaml

from generator.cli import run
from generator.importer import IMPORTED_SUPPRESSED, Options
from generator.inputs import read_inputs
from tests.helpers import ROOT, shared

R1_CONFIG = ROOT / "generator" / "catalog" / "models" / "deepseek-r1.config.json"

#: manifest -> (--gpu, the findings as (code, line)), sorted as gen validate prints them.
EXPECTED = {
    "dynamo-dgd-deepseek-r1-sglang-disagg-16gpu": ("H200-141GB", [
        ("PD011", 67),
        ("POOL005", 78),
        ("PD011", 111),
    ]),
    "dynamo-dgd-deepseek-r1-sglang-disagg-8gpu": ("H200-141GB", [
        ("PD011", 64),
        ("POOL005", 75),
        ("PD011", 105),
    ]),
    "dynamo-dgd-deepseek-r1-vllm-disagg-hopper-16gpu": ("H200-141GB", [
        ("SRV001", 36),
        ("IMP004", 53),
        ("ENG010", 66),
        ("IMP005", 87),
        ("IMP015", 106),
        ("RST011", 106),
        ("POOL005", 108),
        ("IMP004", 125),
        ("IMP015", 155),
        ("IMP005", 161),
    ]),
    "dynamo-dgd-deepseek-v4-flash-vllm-disagg-h200-agentic": (None, [
        ("IMP004", 64),
        ("IMP005", 136),
        ("IMP015", 136),
        ("IMP004", 182),
        ("IMP005", 262),
        ("IMP015", 262),
        ("RST011", 262),
    ]),
    "dynamo-dgd-deepseek-v4-pro-sglang-disagg-gb200": ("GB200-186GB", [
        ("IMP013", 32),
        ("POOL005", 172),
        ("RST010", 198),
        ("IMP008", 246),
    ]),
    "dynamo-dgd-glm-5.2-fp8-sglang-disagg-h200-agentic": (None, [
        # enable-prefill-cp with cp-strategy interleave, no attn-cp-size, on GLM-5.2 (DSA): SGLang's
        # CP group is tp // (attn_dp x dp) = 8 // (1 x 1) = 8, imported as parallel.context 8
        # and said (a notice); interleave forces no all-to-all, and tp 8 is within DSA's <= 8.
        ("IMP028", 35),
        ("RST010", 47),
        ("IMP004", 152),
        ("IMP008", 191),
        ("IMP004", 261),
    ]),
    "gke-deployment-vllm-llama4-maverick-fp8-tp8": (None, [
        # A Deployment of 1 replica (surge 1, 0 down) imported as a StatefulSet (1 of 1 down).
        ("IMP029", 23),
        ("IMP017", 39),
        ("IMP008", 40),
        ("MOD006", 60),
        ("IMP014", 63),
        ("IMP016", 76),
        ("LOAD014", 101),
    ]),
    "gke-lws-vllm-deepseek-r1-tp8-pp2": (None, [
        ("IMP027", 35),
        ("IMP008", 41),
        ("MOD006", 51),
        ("IMP021", 58),
    ]),
    "gke-lws-vllm-deepseek-r1-tp8-pp2-hdml": ("H100-80GB", [
        ("POOL005", 28),
        ("IMP027", 36),
        ("IMP008", 40),
        ("IMP021", 57),
        ("IMP016", 68),
    ]),
    "kserve-llmisvc-deepseek-r1-0528-dp-ep-deepep-ht": ("H200-141GB", [
        ("POOL005", 14),
        ("IMP004", 34),
        ("IMP007", 45),
    ]),
    "kserve-llmisvc-deepseek-r1-0528-pd-deepep-ht": ("H200-141GB", [
        ("IMP004", 34),
        ("RST011", 50),
        ("IMP007", 56),
        ("NET032", 59),
        ("POOL005", 221),
        ("IMP004", 231),
        ("IMP007", 246),
        ("NET032", 248),
    ]),
    "llmd-pd-disaggregation-sglang-gpt-oss-120b-coreweave": ("H200-141GB", [
        ("POD004", 18),
        ("POD003", 18),
        # Both Deployments (decode 2 replicas, prefill 8) imported as StatefulSets.
        ("IMP029", 20),
        ("IMP004", 51),
        ("IMP019", 130),
        ("POOL005", 150),
        ("POOL004", 150),
        ("POOL005", 150),
        ("POD004", 150),
        ("IMP029", 152),
        ("IMP004", 183),
        ("MOD006", 184),
        ("RST010", 188),
    ]),
    "llmd-pd-disaggregation-vllm-gpt-oss-120b-coreweave": ("H200-141GB", [
        ("POD004", 18),
        ("POD003", 18),
        ("IMP029", 20),
        ("IMP004", 51),
        ("IMP015", 56),
        ("RST011", 56),
        ("IMP019", 132),
        ("POOL005", 156),
        ("POOL004", 156),
        ("POOL005", 156),
        ("IMP029", 158),
        ("IMP004", 189),
        ("MOD006", 190),
        ("IMP015", 194),
    ]),
    "llmd-wide-ep-lws-vllm-deepseek-r1-0528-coreweave": ("H200-141GB", [
        ("IMP005", 54),
        ("IMP015", 65),
        ("RST011", 65),
        ("IMP019", 223),
        ("POOL005", 282),
        ("IMP005", 314),
        ("IMP015", 323),
    ]),
    "llmd-wide-ep-lws-vllm-deepseek-r1-0528-disaggregatedset": ("H200-141GB", [
        ("POOL005", 37),
        ("MOD006", 65),
        ("IMP005", 69),
        ("IMP015", 78),
        ("A2A004", 82),
        ("IMP005", 270),
        ("IMP015", 281),
        ("RST011", 281),
        ("A2A004", 286),
        ("IMP019", 434),
    ]),
    "llmd-wide-ep-lws-vllm-deepseek-r1-0528-gke": ("H200-141GB", [
        # The GKE RDMA networks (networking.gke.io/interfaces, rdma-0 .. rdma-7) with the HCAs
        # DEEP_EP_DEVICE_TO_HCA_MAPPING names (mlx5_0 .. mlx5_7): network.rdma, no IMP004.
        ("IMP005", 87),
        ("IMP015", 98),
        ("RST011", 98),
        ("IMP019", 275),
        ("POOL005", 334),
        ("IMP005", 399),
        ("IMP015", 408),
    ]),
    "llmd-wide-ep-lws-vllm-deepseek-v4-pro-oci-gb200-high-tpt": ("GB200-186GB", [
        ("IMP005", 68),
        ("RST011", 77),
        ("IMP019", 231),
        ("POOL005", 272),
        ("IMP005", 306),
    ]),
    "llmd-wide-ep-lws-vllm-deepseek-v4-pro-oci-gb200-low-latency": ("GB200-186GB", [
        ("RST011", 73),
        ("IMP019", 222),
        ("POOL005", 264),
        ("IMP005", 299),
    ]),
    "llmd-wide-ep-lws-vllm-glm-5.2-fp8-p1w1d1w2-coreweave": ("H200-141GB", [
        ("PD090", 185),
        ("PD090", 185),
        ("IMP005", 192),
        ("IMP015", 203),
        # no RST011: vllm-openai:nightly is judged at vLLM 0.33.0, whose connector requires
        # NIXL >= 1.5.0 (which has ai-dynamo/nixl PR#1987)
        ("IMP020", 234),
        ("IMP019", 412),
        ("POOL005", 478),
        # --max-model-len auto is vLLM's auto-fit (vLLM 0.33.0 vllm/config/model.py: -1 is the
        # model's length, v1/core/kv_cache_planning.py _auto_fit_max_model_len shrinks it to
        # what the KV cache holds): no SIZ002 (the model's 1,048,576 does not fit, and need not).
        ("IMP003", 502),
        ("IMP005", 580),
        ("IMP015", 590),
        ("IMP020", 615),
        ("IMP008", 669),
        # The image line of the first role's container (the engine's findings are at it).
        ("ENG003", 669),
    ]),
    "sglang-statefulset-deepseek-r1-tp16-ep16": ("H200-141GB", [
        ("NET001", 9),
        ("POOL005", 9),
        ("IMP017", 25),
        ("IMP008", 26),
        ("ENG003", 26),
        # hostNetwork (line 65) with --host 0.0.0.0: the API listens on every node interface.
        ("IMP024", 65),
        ("NET090", 65),
    ]),
}


def _options(name: str, gpu: str | None) -> Options:
    config = str(R1_CONFIG) if name.startswith("sglang-statefulset") else None
    return Options(gpu=gpu, model_config=config)


def test_every_reference_manifest_is_covered():
    names = {p.stem for p in shared("reference", "manifests").glob("*.yaml")}
    assert names == set(EXPECTED) and len(names) == 20


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reference_manifest_lint(name):
    gpu, expected = EXPECTED[name]
    path = shared("reference", "manifests", f"{name}.yaml")
    batch = read_inputs([path], opts=_options(name, gpu))
    assert [r.kind for r in batch.results] == ["manifest"], "one deployment per manifest"
    found = [(f.code, f.location.line) for f in batch.all_findings()]
    assert found == expected
    assert all(f.location.file == str(path) for f in batch.all_findings())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_reference_manifest_import(name, tmp_path):
    """gen import writes an InferenceDeployment that passes the schema; gen validate of it
    reports the checks' findings again (not the importer's IMP notes, which live in its header
    comment), except where the import could not be checked at all; and gen import fails when
    gen validate of the spec it wrote would (model.volume for Hub weights: MOD005)."""
    gpu, expected = EXPECTED[name]
    path = shared("reference", "manifests", f"{name}.yaml")
    spec = tmp_path / "spec.yaml"
    args = ["import", str(path), "-o", str(spec)] + (["--gpu", gpu] if gpu else [])
    if name.startswith("sglang-statefulset"):
        args += ["--model-config", str(R1_CONFIG)]
    errors = any(code in ERROR_CODES for code, _ in expected)
    code = run(args)
    doc = yaml.safe_load(spec.read_text())
    assert doc["kind"] == "InferenceDeployment" and doc["spec"]["roles"]
    again = read_inputs([spec]).results[0].checked
    assert code == (1 if errors or any(f.severity.value == "error" for f in again.findings)
                    else 0)
    assert not [f for f in again.findings if f.code.startswith(("SCH", "LOAD"))]
    rules = {c for c, _ in expected if not c.startswith(("IMP", "LOAD"))}
    codes = {f.code for f in again.findings}
    # The spec says what the import could not carry (an RDMA resource without device names, a
    # load-balancing mode moegen does not render), so the rules whose premise that is, which
    # validating the manifests leaves out (IMPORTED_SUPPRESSED and the deployment's own), speak.
    imported = read_inputs([path], opts=_options(name, gpu)).results[0].imported
    assert rules <= codes
    assert codes - rules <= IMPORTED_SUPPRESSED | imported.suppress


#: Codes that are errors in the expectations above (gen import then exits 1).
ERROR_CODES = {"PD011", "SRV001", "IMP013", "LOAD014", "A2A004", "NET032", "IMP024"}


def test_the_directory_in_one_process():
    """All twenty in one gen validate: twenty deployments, none merged with another (the llm-d
    variants of one guide repeat their LeaderWorkerSets' names: alternatives, split by file)."""
    directory = shared("reference", "manifests")
    batch = read_inputs([directory], opts=Options(gpu="H200-141GB"))
    assert len(batch.results) == 20 and batch.skipped == []
    assert all(len(r.imported.files) == 1 for r in batch.results)


def test_prefill_and_decode_in_two_files_are_one_deployment(tmp_path):
    text = shared("reference", "manifests",
                  "llmd-wide-ep-lws-vllm-deepseek-r1-0528-coreweave.yaml").read_text()
    docs = [d for d in text.split("\n---\n")]
    decode = next(d for d in docs if "name: wide-ep-llm-d-decode" in d)
    prefill = next(d for d in docs if "name: wide-ep-llm-d-prefill" in d)
    (tmp_path / "decode.yaml").write_text(decode)
    (tmp_path / "prefill.yaml").write_text(prefill)
    batch = read_inputs([tmp_path / "decode.yaml", tmp_path / "prefill.yaml"],
                        opts=Options(gpu="H200-141GB"))
    (dep,) = batch.results
    assert [r["mode"] for r in dep.imported.data["spec"]["roles"]] == ["prefill", "decode"]
