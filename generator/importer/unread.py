"""Engines under kinds the importer does not read: found, and reported as not checked.

A Kubernetes object whose kind :func:`.workloads.workloads_of` does not read (a KubeRay
RayCluster, RayService or AIBrix RayClusterFleet, a bare Pod, a Job or CronJob, a DaemonSet, a
Knative Service, a kthena ModelBooster, an OME ClusterServingRuntime, a KServe
LLMInferenceServiceConfig, any other custom resource) is walked for container-like mappings (a
mapping with a string ``image``, wherever it sits: pod templates, a Ray head group, a CRD's
``runner`` or ``workers``). One that starts an engine is INP002, a notice per object: moegen saw
the engine and checked none of it (docs/design.md §10). A container starts an engine when its
``command``/``args`` name an engine entry point (the importer's own pattern,
:data:`.launch._ENGINE_TEXT`), or, with no ``command`` (the image's entrypoint runs, or the
controller writes the command), when its image is an engine's (:data:`ENGINE_IMAGE`).
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from ..errors import Finding, Severity
from ..spec.load import Document, json_path
from .launch import _ENGINE_TEXT
from .workloads import workloads_of

#: Images that run an engine, by the last part of the reference (repository name and tag): vLLM's
#: (vllm/vllm-openai, vllm-ascend, vllm-tpu, Dynamo's vllm-runtime, AIBrix's vllm-openai, kthena's
#: kthena-engine:vllm-ascend_...), SGLang's (lmsysorg/sglang, Dynamo's sglang-runtime), llm-d's
#: accelerator images (ghcr.io/llm-d/llm-d-cuda and its -rocm, -xpu, -tpu, -cpu, -aws, -gke
#: variants run ``vllm serve``). Router, gateway and sidecar images that carry an engine's name
#: are not engines (:data:`NOT_ENGINE`, on the repository name).
ENGINE_IMAGE = re.compile(r"vllm|sglang|^llm-d-(?:cuda|rocm|xpu|tpu|cpu|aws|gke)\b", re.I)
NOT_ENGINE = re.compile(r"router|gateway|sidecar|scheduler|(?:^|-)epp(?:-|$)", re.I)
#: What the notice says was not checked.
NOT_CHECKED = ("its engine flags, parallel layout, HBM sizing, pods, network and probes were "
               "not checked")


def _containers(node: Any, path: tuple) -> Iterator[tuple[tuple, dict]]:
    """Every mapping with a string ``image`` under ``node`` (depth first, in document order)."""
    if isinstance(node, dict):
        if isinstance(node.get("image"), str):
            yield path, node
        for k, v in node.items():
            yield from _containers(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _containers(v, (*path, i))


def _words(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    return str(value) if isinstance(value, str) else ""


def engine_of(container: dict) -> str | None:
    """``vLLM``, ``SGLang`` or ``an engine`` when ``container`` starts one, else None."""
    text = f"{_words(container.get('command'))} {_words(container.get('args'))}"
    m = _ENGINE_TEXT.search(text)
    last = container["image"].rsplit("/", 1)[-1]
    if m is None and (container.get("command") or not ENGINE_IMAGE.search(last)
                      or NOT_ENGINE.search(last.split(":", 1)[0].split("@", 1)[0])):
        return None
    said = m.group(0) if m else last.lower()
    return "vLLM" if "vllm" in said or "llm-d" in said else "SGLang" if "sglang" in said \
        else "an engine"


def unread_engines(doc: Document) -> Finding | None:
    """INP002 for ``doc`` when it is a Kubernetes object of a kind the importer does not read
    and one of its containers starts an engine (located at the first such container), else
    None."""
    data = doc.data
    if not isinstance(data, dict) or not data.get("kind") or not data.get("apiVersion") \
            or str(data["apiVersion"]).startswith("moegen.dev/") or workloads_of(doc):
        return None
    found = [(p, c, e) for p, c in _containers(data, ()) if (e := engine_of(c))]
    if not found:
        return None
    path, container, engine = found[0]
    kind, api = str(data["kind"]), str(data["apiVersion"])
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    name = f" {meta['name']}" if isinstance(meta.get("name"), str) else ""
    more = f" (and {len(found) - 1} more container{'s' * (len(found) > 2)})" \
        if len(found) > 1 else ""
    return Finding(
        "INP002", Severity.NOTICE, json_path(path),
        f"{kind}{name} ({api}) runs {engine} ({container['image']}){more}, a kind moegen does "
        f"not read: {NOT_CHECKED}",
        "moegen reads LeaderWorkerSet, StatefulSet, Deployment, DisaggregatedSet, "
        "LLMInferenceService, RoleBasedGroup, DynamoGraphDeployment and StormService; describe "
        "this deployment as an InferenceDeployment to check it (gen validate, gen render)",
        doc.provenance.locate(path))
