"""Turn a planner candidate into an InferenceDeployment spec (YAML text, validated by tests)."""

from __future__ import annotations

import yaml

from ..catalog import HF_IDS, builtin_arch, checkpoint_id
from ..engines.registry import dialect_for
from ..layout import min_redundant_experts
from ..perf.decode import workload_max_len
from ..spec.request import PlanRequest
from .layouts import DSPARK_DP_ALL2ALL, all2all_for
from ..facts.versions import default_image  # noqa: F401 - re-exported for callers


#: What the emitted spec says where the PlanRequest gives no network: the interface and NICs
#: of a ConnectX-7 HGX node as the examples use them, marked as placeholders in its header.
PLACEHOLDER_INTERFACE = "eth0"
PLACEHOLDER_RDMA = {"resourceName": "rdma/hca", "devices": ["mlx5_0"]}
#: All-to-all backends and connectors that need RDMA between pods (rules A2A004, PD011).
RDMA_ALL2ALL = ("deepep_low_latency", "deepep_high_throughput", "mori_low_latency",
                "mori_high_throughput", "mori")


def _pool(name: str, pool) -> dict:
    """A pool of the emitted spec: the request's selector and tolerations, else a placeholder
    selector (distinct per pool, so the pools do not share nodes: rule POOL004)."""
    doc = {"gpu": pool.gpu, "gpusPerNode": pool.gpusPerNode, "nodes": pool.nodes,
           "nodeSelector": dict(pool.nodeSelector) or {"moegen.dev/pool": name}}
    if pool.tolerations:
        doc["tolerations"] = [t.model_dump(exclude_none=True) for t in pool.tolerations]
    return doc


def _fixed_roles(req: PlanRequest) -> list[dict]:
    """A fixed-layout request's roles as given (docs/spec.md §5.1), with the load each decoding
    role is sized for and the request's MTP where the role sets none (what was evaluated)."""
    s = req.spec
    arch = builtin_arch(s.model.architecture)
    decoding = [r for r in s.roles if r.mode != "prefill"]
    ranks = sum(r.replicas * r.parallel.data for r in decoding) or 1
    out = []
    for r in s.roles:
        doc = r.model_dump(exclude_none=True, exclude_defaults=False)
        if r.mode != "prefill" and (r.sizing is None or r.sizing.concurrency is None):
            # The sequences an instance holds: the workload's share (one without concurrency).
            wl = s.workload
            per_rank = -(-wl.concurrency // ranks) if wl.concurrency else 1
            doc["sizing"] = {**doc.get("sizing", {}), "concurrency": per_rank * r.parallel.data}
        if r.mode != "prefill" and r.speculative is None and s.speculative and arch.mtp_layers:
            doc["speculative"] = {"method": "mtp",
                                  "numSpeculativeTokens": s.speculative.numSpeculativeTokens}
        out.append(doc)
    return out


def _network(req: PlanRequest, roles: list[dict]) -> tuple[dict, list[str]]:
    """The emitted spec's network (the request's fields, placeholders where it gives none and a
    role needs them: RDMA for DeepEP/MoRI across pods or Mooncake) and the placeholders used."""
    net = req.spec.network
    doc = net.model_dump(exclude_none=True, exclude_defaults=True)
    doc.pop("interNodeGbps", None)
    placeholders = []
    if net.socketInterface is None:
        doc["socketInterface"] = PLACEHOLDER_INTERFACE
        placeholders.append("network.socketInterface")
    needs_rdma = any((r.get("moe") or {}).get("all2all") in RDMA_ALL2ALL
                     or (r.get("kvTransfer") or {}).get("connector") == "mooncake"
                     for r in roles)
    if net.rdma is None and needs_rdma:
        doc["rdma"] = dict(PLACEHOLDER_RDMA)
        placeholders.append("network.rdma")
    if "interNodeGbps" in net.model_fields_set and (net.interNodeGbps != 400 or net.rdma):
        doc["interNodeGbps"] = net.interNodeGbps
    return {k: doc[k] for k in sorted(doc)}, placeholders


def _searched_roles(req: PlanRequest, cand) -> list[dict]:
    """The roles of a searched candidate as spec roles: its layouts, the all-to-all backend the
    GPU runs, the EPLB redundancy its EP size needs, MTP, the connector, what it pinned."""
    s = req.spec
    arch = builtin_arch(s.model.architecture)
    dialect = dialect_for(s.engine.name, s.engine.version)
    wl = s.workload
    pd = any(r["mode"] == "prefill" for r in cand.roles)
    dspark = s.speculative is not None and s.speculative.method == "dspark"
    roles = []
    for r in cand.roles:
        p = r["parallel"]
        role = {"name": r["mode"] if r["mode"] != "unified" else "serve", "mode": r["mode"],
                "nodePool": r["nodePool"], "replicas": r["replicas"], "workload": "lws",
                "parallel": dict(p)}
        if p["expert"] and arch.routed_experts:
            ep = p["tensor"] * p["data"]
            redundant = min_redundant_experts(arch.routed_experts, ep)
            pool = s.nodePools[r["nodePool"]]
            choices = dialect.all2all_choices
            if dspark and r["mode"] != "prefill" and p["data"] > 1:
                choices = [c for c in choices if c in DSPARK_DP_ALL2ALL]
            role["moe"] = {"all2all": all2all_for(pool.gpu, r["mode"], ep, pool.gpusPerNode,
                                                  choices, engine=s.engine.name,
                                                  weights=s.model.weights,
                                                  hidden_size=arch.hidden_size,
                                                  version=s.engine.version)}
            if redundant:
                role["moe"]["eplb"] = {"enabled": True, "redundantExperts": redundant}
        if s.speculative and arch.mtp_layers and r["mode"] != "prefill":
            role["speculative"] = {"method": "mtp",
                                   "numSpeculativeTokens": s.speculative.numSpeculativeTokens}
        if pd:
            role["kvTransfer"] = {"connector": "nixl" if s.engine.name == "vllm" else "mooncake"}
        if r.get("serving"):   # settings the planner pinned (SGLang's memFractionStatic)
            role["serving"] = dict(r["serving"])
        if r["mode"] != "prefill" and wl.concurrency:
            role["sizing"] = {"concurrency": -(-wl.concurrency // r["replicas"])}
        roles.append(role)
    return roles


def deployment(req: PlanRequest, cand=None) -> tuple[dict, list[str]]:
    """The InferenceDeployment a plan describes, and the placeholders in it: a fixed-layout
    request's roles as given (role ``i`` of the request is role ``i`` of the document, so
    findings keep their paths), else ``cand``'s; the request's pools, network and serving,
    placeholders (:data:`PLACEHOLDER_RDMA`, a socket interface, node selectors) where the
    request carries no cluster facts and a role needs them. ``gen plan --emit`` writes it and
    ``capacity/judge.py`` checks it."""
    s = req.spec
    arch = builtin_arch(s.model.architecture)
    roles = _fixed_roles(req) if s.roles else _searched_roles(req, cand)
    used = {r["nodePool"] for r in roles}
    network, placeholders = _network(req, roles)
    placeholders += [f"nodePools.{n}.nodeSelector" for n in sorted(used)
                     if not s.nodePools[n].nodeSelector]
    name = s.model.name or checkpoint_id(s.model.architecture, s.model.weights)
    if name is None:   # no checkpoint of that format known: the config's, to be changed
        placeholders.append("model.name")
    doc = {
        "apiVersion": "moegen.dev/v1alpha1", "kind": "InferenceDeployment",
        "metadata": {"name": req.metadata.name},
        "spec": {
            "model": {"name": name or HF_IDS[s.model.architecture],
                      "architecture": s.model.architecture, "weights": s.model.weights,
                      "path": f"/models/{s.model.architecture}",
                      "volume": {"persistentVolumeClaim": {
                          "claimName": f"{s.model.architecture.replace('.', '-')}-weights"}}},
            "engine": {"name": s.engine.name, "version": s.engine.version,
                       "image": default_image(s.engine.name, s.engine.version)},
            "nodePools": {n: _pool(n, p) for n, p in s.nodePools.items() if n in used},
            "network": network,
            "serving": {"maxModelLen": workload_max_len(arch, s.workload),
                        "kvCacheDtype": s.constraints.kvCacheDtype,
                        **(s.serving.model_dump(exclude_none=True) if s.serving else {})},
            # The workload's mean request: gen size / report / diff predict at it, and the
            # memory check judges a raised maxModelLen at its mean context.
            "traffic": {"inputTokens": s.workload.inputTokens,
                        "outputTokens": s.workload.outputTokens,
                        **({"acceptance": s.speculative.acceptance}
                           if s.speculative is not None and roles_speculate(roles) else {})},
            "roles": roles,
        },
    }
    return doc, placeholders + ["model.volume"]


def roles_speculate(roles: list[dict]) -> bool:
    """Some emitted role runs speculative decoding (traffic.acceptance applies)."""
    return any("speculative" in r for r in roles)


def _name_note(req: PlanRequest) -> str:
    """The header lines saying the emitted model.name is the catalog config's checkpoint, not
    one in the planned format (the catalog knows no such release: catalog ``RELEASES``)."""
    m = req.spec.model
    own = builtin_arch(m.architecture).checkpoint.format
    return (f"# model.name: {HF_IDS[m.architecture]} is the {own} checkpoint; the catalog knows "
            f"no {m.weights} release of {m.architecture}:\n# set model.name (and the weights in "
            f"model.volume) to the {m.weights} checkpoint you serve.\n")


def spec_yaml(req: PlanRequest, cand) -> str:
    """YAML of the InferenceDeployment deploying ``cand`` (:func:`deployment`), its header
    naming the placeholders to set for the cluster."""
    s = req.spec
    doc, placeholders = deployment(req, cand)
    dspark = s.speculative is not None and s.speculative.method == "dspark"
    head = (f"# Generated by gen plan from PlanRequest {req.metadata.name} (candidate "
            f"{cand.rank}: {cand.total_tps:,.0f} tokens/s estimated).\n"
            f"# Placeholders to set for your cluster: {', '.join(placeholders)}\n"
            "# (give them in the PlanRequest's network and nodePools to have them written here).\n"
            f"# Planned at the workload's mean request (spec.traffic): serving.maxModelLen "
            f"{doc['spec']['serving']['maxModelLen']} is input + output tokens, and the engine "
            "refuses a longer request:\n# raise it to the longest request you serve (the memory "
            "check then judges at the traffic's mean context)\n"
            f"# and kvCacheDtype {doc['spec']['serving']['kvCacheDtype']} "
            "(constraints.kvCacheDtype, fp8 unless the request gives it); raise or change them\n"
            "# here, then run gen validate: the memory check and the prediction follow.\n"
            + (_name_note(req) if "model.name" in placeholders else "")
            + ("# Planned with DSpark drafting; the InferenceDeployment renders MTP speculative\n"
               "# decoding (DSpark is not a spec method yet): expect the MTP figures, not these.\n"
               if dspark else ""))
    return head + yaml.safe_dump(doc, sort_keys=False)
