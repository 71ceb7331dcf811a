"""The review model behind ``gen report``: one dict that the HTML page draws and ``--format json``
prints, so the page never computes anything (every coordinate and number is made here).

Sections: ``summary`` (model, engine, pools, roles, GPUs used of available), ``topology`` (pools ->
nodes -> pods -> GPUs with their DP/TP/PP/EP ranks, leader/worker, and the prefill -> KV transfer
-> decode flow through the router, or for router kind inference-gateway the Gateway ->
InferencePool -> endpoint picker route with its profiles and scorers, as SVG boxes; roles with
more than :data:`MAX_NODES_DRAWN`
nodes draw the first ones and aggregate the rest), ``memory`` (per role the most loaded GPU as
stacked segments against HBM with the engine's budget line), ``findings``, and ``plan`` (the
planner's table when the input is a PlanRequest).
"""

from __future__ import annotations

from ..layout import Spread, parallel_text
from ..perf.candidate import ttft_split_text
from ..spec.bandwidth import of_deployment
from ..sizing import RoleSizing
from .sizing_report import host_rows

#: Nodes drawn per role before aggregating the rest into a "+N more" box; nodes per row.
MAX_NODES_DRAWN = 8
NODES_PER_ROW = 2
#: SVG geometry, px.
GPU_W, GPU_H, GPU_GAP = 46, 34, 4
POD_PAD, NODE_PAD, ROLE_GAP, LABEL_H = 6, 8, 26, 18
BAR_W, BAR_H = 640, 26
#: Segment colours (memory) and role colours (topology).
COLOURS = {"weights": "#4e79a7", "kv": "#59a14f", "activation": "#f28e2b", "overhead": "#e15759",
           "reserve": "#bab0ac", "overflow": "#d62728"}
ROLE_COLOURS = {"prefill": "#dbe9f6", "decode": "#e3f2df", "unified": "#ece2f5", "router": "#fdf0d5"}


def _gpu_label(lay, pod, g: int) -> tuple[str, str]:
    """(short label, tooltip) of GPU ``g`` of ``pod``."""
    t, p = lay.tensor, lay.pipeline
    if lay.spread is Spread.MODEL:
        idx = pod.index * lay.gpus_per_pod + g
        tp, pp, dp = idx % t, idx // t, 0
    else:
        per_rank = t * p
        dp = pod.dp_ranks[g // per_rank] if pod.dp_ranks else 0
        j = g % per_rank
        tp, pp = j % t, j // t
    ep = dp * t + tp if lay.expert_parallel else None
    short = f"DP{dp}" if lay.data > 1 else f"TP{tp}"
    if lay.data > 1 and t > 1:
        short = f"D{dp}T{tp}"
    if p > 1:
        short += f"P{pp}"
    tip = f"DP rank {dp}, TP rank {tp}, PP stage {pp}" + (f", EP shard {ep}" if ep is not None else "")
    return short, tip


def _topology(checked, plan) -> dict:
    spec = checked.spec.spec
    roles_out = []
    y = 10
    width = 0
    flows = []
    anchors: dict[str, tuple[int, int, int]] = {}
    pool_next: dict[str, int] = {}   # node numbers continue across the roles of a pool
    for role_spec, role in zip(spec.roles, checked.roles):
        lay = role.layout
        pool = spec.nodePools[role_spec.nodePool]
        pods_per_node = 1 if lay.spread is not Spread.PER_RANK else max(
            1, pool.gpusPerNode // lay.gpus_per_pod)
        # Every node of the role: (replica, [pods on the node]).
        nodes = []
        for r in range(role_spec.replicas):
            pods = list(lay.pods)
            for i in range(0, len(pods), pods_per_node):
                nodes.append((r, pods[i:i + pods_per_node]))
        drawn = nodes[:MAX_NODES_DRAWN]
        gpu_cols = lay.gpus_per_pod
        pod_w = POD_PAD * 2 + gpu_cols * (GPU_W + GPU_GAP) - GPU_GAP
        node_w = NODE_PAD * 2 + pods_per_node * (pod_w + POD_PAD) - POD_PAD
        pod_h = LABEL_H + POD_PAD * 2 + GPU_H
        node_h = LABEL_H + NODE_PAD * 2 + pod_h
        x = 10
        role_y = y + LABEL_H
        node_boxes = []
        for n, (replica, pods) in enumerate(drawn):
            nx = x + (n % NODES_PER_ROW) * (node_w + 10)
            ny = role_y + (n // NODES_PER_ROW) * (node_h + 10)
            pod_boxes = []
            for k, pod in enumerate(pods):
                px = nx + NODE_PAD + k * (pod_w + POD_PAD)
                py = ny + LABEL_H + NODE_PAD
                gpus = []
                for g in range(lay.gpus_per_pod):
                    label, tip = _gpu_label(lay, pod, g)
                    gx, gy = px + POD_PAD + g * (GPU_W + GPU_GAP), py + LABEL_H + POD_PAD
                    gpus.append({"x": gx, "y": gy, "w": GPU_W, "h": GPU_H, "tx": gx + 4,
                                 "ty": gy + 21, "label": label, "title": tip})
                leader = pod.index == 0
                pod_boxes.append({"x": px, "y": py, "w": pod_w, "h": pod_h, "leader": leader,
                                  "tx": px + 6, "ty": py + 13,
                                  "label": f"{'leader' if leader else 'worker'} pod {pod.index}"
                                           f" (instance {replica})", "gpus": gpus})
            number = pool_next.get(role_spec.nodePool, 0) + n
            node_boxes.append({"x": nx, "y": ny, "w": node_w, "h": node_h,
                               "tx": nx + 8, "ty": ny + 13,
                               "label": f"{role_spec.nodePool} node {number}", "pods": pod_boxes})
        pool_next[role_spec.nodePool] = pool_next.get(role_spec.nodePool, 0) + len(nodes)
        more = len(nodes) - len(drawn)
        more_box = None
        slots = len(drawn) + (1 if more else 0)
        rows = -(-slots // NODES_PER_ROW)
        if more:
            mx = x + (len(drawn) % NODES_PER_ROW) * (node_w + 10)
            my = role_y + (len(drawn) // NODES_PER_ROW) * (node_h + 10)
            more_box = {"x": mx, "y": my, "w": 150, "h": node_h, "tx": mx + 12, "ty": my + 30,
                        "label": f"+{more} more node{'s' * (more != 1)}"}
        right = x + min(slots, NODES_PER_ROW) * (node_w + 10)
        width = max(width, right + 10)
        block_h = rows * (node_h + 10) - 10
        desc = (f"{role.name} ({role.mode}): {role_spec.replicas} x "
                f"{parallel_text(lay.tensor, lay.data, lay.pipeline, lay.expert_parallel)}"
                f" on {pool.gpu}, {lay.gpus_per_instance} GPUs per instance, {role_spec.workload}")
        roles_out.append({"name": role.name, "mode": role.mode, "y": y, "ty": y + 13, "label": desc,
                          "fill": ROLE_COLOURS.get(role.mode, "#eeeeee"), "nodes": node_boxes,
                          "more": more_box, "height": block_h + LABEL_H})
        anchors[role.mode] = (right - 10, role_y, role_y + block_h)
        y = role_y + block_h + ROLE_GAP
    if plan.router is not None and "prefill" in anchors and "decode" in anchors:
        px_, py0, py1 = anchors["prefill"]
        dx_, dy0, dy1 = anchors["decode"]
        py, dy = (py0 + py1) // 2, (dy0 + dy1) // 2
        rx = width + 120
        ry = (py + dy) // 2 - 25
        router = {"x": rx, "y": ry, "w": 190, "h": 50, "tx": rx + 8, "ty": ry + 29,
                  "label": f"router ({plan.router.image.split('/')[-1]})"}
        connector = next(r.kv_transfer.connector for r in checked.roles if r.kv_transfer)
        # KV goes from the prefill block's edge to the decode block's facing edge.
        kv_x = min(px_, dx_) - 60
        down = py1 < dy0
        # (ending above the receiving role's title line)
        ky1, ky2 = (py1, dy0 - LABEL_H) if down else (py0 - LABEL_H, dy1)
        flows = [
            {"x1": rx, "y1": ry + 12, "x2": px_ + 2, "y2": py, "tx": px_ + 10, "ty": py - 6,
             "label": "1. prefill"},
            {"x1": kv_x, "y1": ky1, "x2": kv_x, "y2": ky2, "tx": kv_x + 6,
             "ty": (ky1 + ky2) // 2 + 4, "label": f"2. KV ({connector})"},
            {"x1": rx, "y1": ry + 38, "x2": dx_ + 2, "y2": dy, "tx": dx_ + 10, "ty": dy + 16,
             "label": "3. decode"},
        ]
        width = rx + 210
    else:
        router = None
    gateway = None
    if plan.gateway is not None and anchors:
        gateway, gflows, width, y = _gateway_route(plan, checked, anchors, width, y)
        flows = gflows
    return {"width": width, "height": y, "roles": roles_out, "router": router, "flows": flows,
            "gateway": gateway}


#: Gateway column geometry, px: box width, box height, line height, gap between boxes.
GW_W, GW_H, GW_LINE, GW_GAP = 560, 40, 15, 46


def _gateway_route(plan, checked, anchors: dict, width: int, height: int):
    """Router kind inference-gateway: the Gateway -> InferencePool -> endpoint picker column to
    the right of the roles, the request to the decode (or unified) pods, the sidecar's prefill
    leg and the KV transfer. Returns (boxes, flows, width, height)."""
    g = plan.gateway
    gx = width + 230
    boxes = []
    texts = [
        [f"Gateway {g.parent}", f"HTTPRoute {g.route}, path /"],
        [f"InferencePool {g.pool}",
         "targetPorts " + ", ".join(str(p["number"]) for p in g.pool_spec["targetPorts"])],
        [f"endpoint picker {g.epp}",
         *(f"profile {p['name']}: " + ", ".join(p["scorers"]) for p in g.profiles)],
    ]
    y = 10
    for lines in texts:
        h = max(GW_H, 12 + GW_LINE * len(lines))
        boxes.append({"x": gx, "y": y, "w": GW_W, "h": h,
                      "lines": [{"x": gx + 8, "y": y + 18 + GW_LINE * k, "text": t,
                                 "bold": k == 0}
                                for k, t in enumerate(lines)]})
        y += h + GW_GAP
    gw_box, pool_box, epp_box = boxes
    flows = [
        {"x1": gx + 60, "y1": gw_box["y"] + gw_box["h"], "x2": gx + 60, "y2": pool_box["y"],
         "tx": gx + 66, "ty": pool_box["y"] - 14, "label": "HTTPRoute"},
        {"x1": gx + 200, "y1": pool_box["y"] + pool_box["h"], "x2": gx + 200,
         "y2": epp_box["y"], "tx": gx + 206, "ty": epp_box["y"] - 14,
         "label": "ext-proc: pick endpoints"},
    ]
    target = "decode" if "decode" in anchors else next(iter(anchors))
    tx_, ty0, ty1 = anchors[target]
    ty = (ty0 + ty1) // 2
    pool_mid = pool_box["y"] + pool_box["h"] // 2
    if g.sidecar_connector and "prefill" in anchors:
        px_, py0, py1 = anchors["prefill"]
        py = (py0 + py1) // 2
        connector = next(r.kv_transfer.connector for r in checked.roles if r.kv_transfer)
        kv_x = min(px_, tx_) - 60
        down = py1 < ty0
        ky1, ky2 = (py1, ty0 - LABEL_H) if down else (py0 - LABEL_H, ty1)
        # The sidecar's prefill leg: from the decode block's top-right corner to the prefill
        # block's right edge.
        lx1, ly1 = tx_ - 20, (ty0 - LABEL_H if down else ty1)
        flows += [
            {"x1": gx, "y1": pool_mid, "x2": tx_ + 2, "y2": ty, "tx": tx_ + 10, "ty": ty + 16,
             "label": "1. decode pod (routing sidecar)"},
            {"x1": lx1, "y1": ly1, "x2": px_ + 2, "y2": py, "tx": (lx1 + px_) // 2 + 8,
             "ty": (ly1 + py) // 2 - 6, "label": f"2. prefill leg ({g.sidecar_connector})"},
            {"x1": kv_x, "y1": ky1, "x2": kv_x, "y2": ky2, "tx": kv_x + 6,
             "ty": (ky1 + ky2) // 2 + 4, "label": f"3. KV ({connector})"},
        ]
    else:
        flows.append({"x1": gx, "y1": pool_mid, "x2": tx_ + 2, "y2": ty, "tx": tx_ + 10,
                      "ty": ty + 16, "label": f"request to a {target} pod"})
    return boxes, flows, gx + GW_W + 10, max(height, y)


def _memory(sizing: list) -> list[dict]:
    """Stacked bars of the most loaded GPU, scaled so the whole demand fits the bar; the HBM and
    budget lines mark what the GPU has and what the engine may use (demand past HBM = overflow)."""
    out = []
    for z in sizing:
        if not isinstance(z, RoleSizing):
            continue
        kv = max(z.kv_cache, 0.0)
        if z.engine == "sglang":
            reserve = z.gpu_memory - z.budget - z.activation - z.overhead
        else:
            reserve = z.gpu_memory - z.budget
        loaded = z.weights + z.load_buffers   # what the engine holds after loading the model
        parts = [("weights", loaded), ("kv", kv), ("activation", z.activation),
                 ("overhead", z.overhead), ("reserve", max(reserve, 0.0))]
        demand = loaded + kv + z.activation + z.overhead + max(reserve, 0.0)
        scale = BAR_W / max(z.gpu_memory, demand)
        segs, x = [], 0.0
        for name, gib in parts:
            w = gib * scale
            segs.append({"name": name, "gib": round(gib, 2), "x": round(x, 1), "w": round(w, 1),
                         "colour": COLOURS[name]})
            x += w
        hbm_x = round(z.gpu_memory * scale, 1)
        over = demand - z.gpu_memory if z.kv_cache < 0 else 0.0
        overflow = None
        if z.kv_cache < 0:
            overflow = {"x": round(z.budget * scale, 1), "w": round(-z.kv_cache * scale, 1),
                        "gib": round(-z.kv_cache, 2), "colour": COLOURS["overflow"]}
        out.append({
            "role": z.name, "gpu": z.gpu, "engine": z.engine, "hbmGiB": round(z.gpu_memory, 2),
            "budgetGiB": round(z.budget, 2), "budgetX": round(z.budget * scale, 1),
            "budgetTextX": round(z.budget * scale + 3, 1), "hbmX": hbm_x,
            "hbmTextX": BAR_W + 6, "svgWidth": BAR_W + 150, "svgHeight": BAR_H + 36,
            "textY": BAR_H + 30, "hbmTextY": BAR_H - 8, "lineY2": BAR_H + 6,
            "hbmLabel": f"HBM {z.gpu_memory:.2f} GiB" + (f" (demand {demand:.1f})" if over > 0 else ""),
            "kvTokensText": f"{z.kv_tokens_per_rank:,}",
            "width": BAR_W, "height": BAR_H, "segments": segs, "overflow": overflow,
            "budgetLabel": ("mem_fraction_static" if z.engine == "sglang"
                            else "gpu_memory_utilization") + f" {z.utilization:g}",
            "kvTokensPerRank": z.kv_tokens_per_rank,
            "sequencesAtMaxModelLen": round(z.max_concurrency, 1),
            "maxModelLen": z.max_model_len, "fits": z.fits,
            "weightsByComponent": {k: round(v, 2) for k, v in
                                   sorted(z.weights_by_component.items(), key=lambda kv: -kv[1])},
        })
    return out


def _predicted_text(p) -> str:
    """One line of a role's predicted figures (:class:`~generator.perf.predict.RolePrediction`)."""
    parts = []
    if p.ttft_ms is not None:
        split = ttft_split_text(p.ttft_parts_ms)
        parts.append(f"TTFT {p.ttft_ms:,.0f} ms" + (f" = {split}" if split else ""))
    if p.tpot_ms is not None:
        parts.append(f"TPOT {p.tpot_ms:,.1f} ms at batch {p.fed_batch} per rank"
                     + ("" if p.fed_batch == p.batch_per_rank
                        else f" (sized for {p.batch_per_rank}; prefill feeds fewer)"))
    if p.output_per_node is not None:
        parts.append(f"{p.output_per_node:,} output tokens/s per node")
    if p.input_per_node is not None:
        parts.append(f"{p.input_per_node:,} input tokens/s per node")
    errors = dict.fromkeys(e.describe() for e in p.regimes.values())   # one per regime
    cal = dict.fromkeys(f"{k} {f.describe()}" for k, f in sorted(p.calibrated.items()))
    if cal:
        errors[f"{p.calibration_note}: " + ", ".join(cal)] = None
    return "predicted: " + ", ".join(parts) + ("; " + "; ".join(errors) if errors else "")


def build(checked, plan, prediction=None) -> dict:
    """The review model of a checked spec (``plan`` None when the spec was rejected);
    ``prediction``: the roles' predicted TTFT/TPOT/tokens/s (:mod:`generator.perf.predict`),
    shown beside each role's memory bar."""
    spec = checked.spec
    findings = [f.to_json() for f in checked.findings]
    if spec is None:
        return {"kind": "InferenceDeployment", "summary": None, "topology": None, "memory": [],
                "pods": [], "placement": [], "objects": [], "network": [], "findings": findings, "plan": None, "ok": False,
                "verdict": {"ok": False, "text": "rejected"}}
    s = spec.spec
    used = sum(r.layout.gpus_per_instance * rs.replicas for rs, r in zip(s.roles, checked.roles))
    available = sum(p.gpusPerNode * p.nodes for p in s.nodePools.values())
    summary = {
        "name": spec.metadata.name, "namespace": spec.metadata.namespace,
        "model": s.model.name, "architecture": s.model.architecture or "config.json",
        "weights": s.model.weights, "engine": s.engine.name, "version": s.engine.version,
        "dialect": getattr(checked.dialect, "version", None),
        "pools": [{"name": n, "gpu": p.gpu, "nodes": p.nodes, "gpusPerNode": p.gpusPerNode}
                  for n, p in s.nodePools.items()],
        "roles": [{"name": r.name, "mode": r.mode, "workload": r.workload, "replicas": r.replicas,
                   "parallel": r.parallel.model_dump(exclude_none=True),
                   "layout": parallel_text(r.parallel.tensor, r.parallel.data, r.parallel.pipeline,
                                           r.parallel.expert, r.parallel.context)}
                  for r in s.roles],
        "gpusUsed": used if checked.roles else None, "gpusAvailable": available,
        "gpusText": (f"{used} used of {available} available" if checked.roles
                     else f"{available} available"),
    }
    memory = _memory(checked.sizing or [])
    summary["predicted"] = None
    for m in memory:
        p = prediction.roles.get(m["role"]) if prediction is not None else None
        m["predicted"] = _predicted_text(p) if p is not None else None
    if prediction is not None:
        summary["predicted"] = prediction.reason or (
            f"{prediction.total_tps:,.0f} tokens/s (input + output), "
            f"{prediction.output_tps:,.0f} output tokens/s at the sized load; binding: "
            f"{prediction.bound}")
    predicted = None
    if prediction is not None:
        predicted = prediction.to_json() | {
            "roles": {n: p.to_json() for n, p in prediction.roles.items()}}
    return {"kind": "InferenceDeployment", "summary": summary, "prediction": predicted,
            "topology": _topology(checked, plan) if plan is not None else None,
            "memory": memory, "pods": _pods(checked),
            "placement": _placement(checked, plan) if plan is not None else [],
            "objects": _objects(plan) if plan is not None else [],
            "network": _network(s.network, of_deployment(checked.spec)),
            "findings": findings, "plan": None, "ok": checked.ok,
            "verdict": {"ok": checked.ok,
                        "text": "passes every check" if checked.ok else "rejected"}}


def _network(net, inter) -> list[dict]:
    """The network settings the pods run with, as ``{"name", "value"}`` rows (spec.network);
    ``inter``: the inter-node bandwidth per GPU (generator/spec/bandwidth.py ``InterNode``)."""
    rdma = net.rdma
    rows = [("socket interface", net.socketInterface or "(the pod's default route)"),
            ("host network", "yes" if net.hostNetwork else "no"),
            ("API listens on", "the pod IP only" if net.bindAddress == "podIP"
             else "every interface of the pod"),
            ("RDMA", (f"{rdma.resourceName} x{rdma.resourceCount}" if rdma.resourceName
                      else "no device-plugin resource")
             + f": {', '.join(rdma.devices) or 'every HCA the pod sees'}"
             + (f", GID index {rdma.gidIndex}" if rdma.gidIndex is not None else "")
             + (f", P_Key index {rdma.pkeyIndex}" if rdma.pkeyIndex is not None else "")
             + (f", {rdma.deviceGbps:g} Gbit/s each" if rdma.deviceGbps else "")
             if rdma is not None else "none (TCP)"),
            ("multi-node NVLink", net.computeDomain.resourceClaimTemplate
             if net.computeDomain is not None else "no ComputeDomain"),
            ("inter-node Gbit/s per GPU", f"{inter.gbps:g} ({inter.basis}: {inter.how})"),
            ("extra environment", ", ".join(sorted(net.env)) or "none")]
    return [{"name": k, "value": v} for k, v in rows]


def _placement(checked, plan) -> list[dict]:
    """Per role: nodes per instance, its topology domain and whether a group fits it, the gang
    scheduler that admits a group, and the autoscaler's bounds (docs/spec.md §6.2)."""
    spec = checked.spec.spec
    platform = spec.platform
    sched = platform.scheduler if platform is not None else None
    topo = platform.topology if platform is not None else None
    scaled = {so.role: so.spec for so in plan.scaled_objects}
    out = []
    for role_spec, role in zip(spec.roles, checked.roles):
        lay = role.layout
        nodes = len(lay.pods) if lay.multi_pod else 1
        if topo is not None and lay.multi_pod:
            per = f", {topo.nodesPerDomain} nodes per domain" if topo.nodesPerDomain else ""
            domain = f"each group's {nodes} pods in one {topo.key} domain{per}"
        elif role_spec.placement is not None and role_spec.placement.topologyKey:
            domain = f"exclusive {role_spec.placement.topologyKey} per group (LWS annotation)"
        else:
            domain = "none"
        if sched is None or sched.kind == "default" or not lay.multi_pod:
            gang = "none (the default scheduler places pods one by one)" if lay.multi_pod \
                else "single-pod instances"
        elif sched.kind == "kueue":
            gang = (f"Kueue queue {sched.queue}: one Workload per group"
                    + (" with topology-aware scheduling" if topo is not None else ""))
        else:
            gang = f"Volcano: one PodGroup per group (queue {sched.queue or 'default'})"
        so = scaled.get(role_spec.name)
        scaling = (f"KEDA {so['minReplicaCount']}-{so['maxReplicaCount']} instances on "
                   f"{role_spec.autoscaling.metric} (target {role_spec.autoscaling.target:g})"
                   if so else f"{role_spec.replicas} instance(s), fixed")
        out.append({"role": role_spec.name, "nodes": nodes, "domain": domain, "gang": gang,
                    "scaling": scaling})
    return out


def _objects(plan) -> list[dict]:
    """The operational objects rendered beside the engines: monitoring, dashboards,
    autoscalers, disruption budgets and the grouping object (kind, name, what it does)."""
    out = []
    if plan.disaggregated is not None:
        out.append({"kind": "DisaggregatedSet", "name": plan.disaggregated.name,
                    "what": f"roles {plan.disaggregated.role_names}"})
    for b in plan.pdbs:
        out.append({"kind": "PodDisruptionBudget", "name": b.name,
                    "what": f"maxUnavailable {b.max_unavailable}"})
    m = plan.monitoring
    if m is not None:
        out.append({"kind": "PodMonitor", "name": m.name, "what": "engine pods serving the API"})
        if m.service_monitor is not None:
            out.append({"kind": "ServiceMonitor", "name": m.router_name, "what": "the router"})
        if m.epp_monitor is not None:
            out.append({"kind": "ServiceMonitor", "name": m.epp_monitor_name,
                        "what": "the endpoint picker"})
        alerts = [r["alert"] for g in m.rule_groups for r in g["rules"]]
        out.append({"kind": "PrometheusRule", "name": m.name,
                    "what": "alerts: " + ", ".join(alerts)})
    if plan.dashboard is not None:
        out.append({"kind": "ConfigMap", "name": plan.dashboard.name,
                    "what": "Grafana dashboard (sidecar label grafana_dashboard)"})
    for so in plan.scaled_objects:
        out.append({"kind": "ScaledObject", "name": so.name,
                    "what": f"KEDA on {so.spec['scaleTargetRef']['kind']} "
                            f"{so.spec['scaleTargetRef']['name']}"})
    return out


def _pods(checked) -> list[dict]:
    """Per role, the host resources of its pods and its startup budget (``gen size`` rows)."""
    out = []
    for role, h in zip(checked.spec.spec.roles, checked.host or ()):
        if h is not None:
            out.append({"role": role.name,
                        "rows": [{"what": k, "text": v} for k, v in host_rows(h)]})
    return out


def _plan_rows(result) -> dict:
    doc = result.to_json()
    for c in doc["candidates"]:
        c["rolesText"] = [f"{r['mode']} x{r['replicas']} {parallel_text(**r['parallel'])} "
                          f"on {r['nodePool']}" for r in c["roles"]]
        c["outText"] = f"{c['outputTokensPerSec']:,}"
        c["totalText"] = f"{c['totalTokensPerSec']:,}"
        c["kvText"] = f"{c['kvTokensPerRank']:,}"
        c["notesText"] = "; ".join(c["notes"])
    for a in doc["alternatives"]:
        a["text"] = (f"with {a['change']}: {a['totalTokensPerSec']:,} tokens/s "
                     f"({'reachable' if a['reachable'] else 'still not reachable'})")
    doc["emptyText"] = "" if doc["candidates"] else f"No candidate: {result.bound}."
    return doc


def build_plan(req, result) -> dict:
    """The review model of a PlanRequest: its summary and the planner's table."""
    s = req.spec
    return {"kind": "PlanRequest",
            "summary": {"name": req.metadata.name, "model": s.model.architecture,
                        "architecture": s.model.architecture, "weights": s.model.weights,
                        "engine": s.engine.name, "version": s.engine.version, "dialect": None,
                        "pools": [{"name": n, "gpu": p.gpu, "nodes": p.nodes,
                                   "gpusPerNode": p.gpusPerNode} for n, p in s.nodePools.items()],
                        "roles": [], "gpusUsed": None, "predicted": None,
                        "gpusAvailable": sum(p.gpusPerNode * p.nodes for p in s.nodePools.values()),
                        "gpusText": f"{sum(p.gpusPerNode * p.nodes for p in s.nodePools.values())}"
                                    " available"},
            "topology": None, "memory": [], "pods": [], "placement": [], "objects": [], "network": [], "findings": [],
            "plan": _plan_rows(result),
            "ok": result.reachable,
            "verdict": {"ok": result.reachable,
                        "text": "goal reachable" if result.reachable else "not reachable"}}
