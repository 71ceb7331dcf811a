"""The sizing report: ``gen size`` as a table per role, or SPEC's JSON form (docs/spec.md §4).
All memory figures are GiB (2^30 bytes)."""

from __future__ import annotations

from ..perf.candidate import ttft_split_text
from ..perf.inputs import inputs_text
from ..sizing import RoleSizing
from ..sizing.host import WARMUP_S, HostPlan


def sizing_json(checked, prediction=None) -> dict:
    """docs/spec.md §4: ``{"roles": [...]}`` with each role's findings attached. Every role of the spec
    is listed; a role that could not be sized has ``"sized": false`` and the reason. With a
    ``prediction`` (:mod:`generator.perf.predict`), each role has ``predicted`` (TTFT/TPOT
    ms, tokens/s) and the report a ``prediction`` (deployment totals, or why there are none)."""
    roles = []
    spec = checked.spec
    names = [r.name for r in spec.spec.roles] if spec else []
    sizing = checked.sizing or [None] * len(names)
    host = checked.host or ()
    for i, name in enumerate(names):
        z = sizing[i] if i < len(sizing) else None
        prefix = f"$.spec.roles[{i}]"
        own = [f for f in checked.findings if f.path == prefix or f.path.startswith(prefix + ".")
               or f.path.startswith(prefix + "[")
               or (f.code.startswith("SIZ") and f.message.startswith(f"role {name!r}"))]
        if isinstance(z, RoleSizing):
            z.findings = own
            doc = z.to_json()
            h = host[i] if i < len(host) else None
            if h is not None:
                doc["host"] = host_json(h)
            if prediction is not None and name in prediction.roles:
                doc["predicted"] = prediction.roles[name].to_json()
            roles.append(doc)
        else:
            reason = z if isinstance(z, str) else \
                "not sized: the spec has errors that make sizing meaningless (see findings)"
            roles.append({"name": name, "sized": False, "reason": reason, "fits": False,
                          "findings": [f.to_json() for f in own]})
    out = {"roles": roles, "ok": checked.ok, "spec": spec.metadata.name if spec else None,
           "findings": [f.to_json() for f in checked.findings]}
    if prediction is not None:
        out["prediction"] = prediction.to_json()
    return out


def predicted_rows(p) -> list[tuple[str, str]]:
    """Rows of one role's predicted figures (:class:`~generator.perf.predict.RolePrediction`),
    each with its regime and that regime's measured error (generator/perf/regimes.py), and
    where a calibration profile scaled it, its factor, runs and residual
    (generator/perf/calibrated.py)."""
    def regime(field: str) -> str:
        e, c = p.regimes.get(field), p.calibrated.get(field)
        cal = f"; {c.describe()} ({p.calibration_note})" if c is not None else ""
        return (f"; {e.describe()}" if e is not None else "") + cal

    rows = []
    if p.ttft_ms is not None:
        median = "" if p.ttft_median_ms is None else f", median {p.ttft_median_ms:,.0f} ms"
        split = ttft_split_text(p.ttft_parts_ms) or "request + prefill + KV transfer + queue"
        rows.append(("TTFT", f"{p.ttft_ms:,.0f} ms mean{median} (predicted: {split}"
                             f"{regime('ttftMs')})"))
    if p.tpot_ms is not None:
        fed = "" if p.fed_batch == p.batch_per_rank else \
            f"; sized for {p.batch_per_rank}, prefill feeds fewer"
        rows.append(("TPOT", f"{p.tpot_ms:,.1f} ms (predicted at batch {p.fed_batch} per "
                             f"rank{fed}{regime('tpotMs')})"))
    if p.output_per_node is not None:
        rows.append(("output", f"{p.output_per_node:,} tokens/s per node at the sized batch "
                               f"{p.batch_per_rank}; {p.output_total:,} delivered (predicted"
                               f"{regime('outputTokensPerSec')})"))
    if p.input_per_node is not None:
        rows.append(("input", f"{p.input_per_node:,} tokens/s per node with every GPU busy; "
                              f"{p.input_total:,} delivered at the sized load (predicted"
                              f"{regime('inputTokensPerSec')})"))
    return rows


def sizing_text(checked, prediction=None) -> str:
    """A table per role: memory of the most loaded GPU and KV capacity, then the host
    resources of its pods and its startup budget, then (with a ``prediction``) its predicted
    TTFT, TPOT and tokens/s; a last line gives the deployment's totals or why there are none."""
    out = []
    names = [r.name for r in checked.spec.spec.roles] if checked.spec else []
    hosts = {n: h for n, h in zip(names, checked.host or ()) if h is not None}
    for z in checked.sizing or []:
        if not isinstance(z, RoleSizing):
            continue
        comps = ", ".join(f"{k} {v:.2f}" for k, v in
                          sorted(z.weights_by_component.items(), key=lambda kv: -kv[1]) if v >= 0.005)
        rows = [
            ("GPU", f"{z.gpu}: {z.gpu_memory:.2f} GiB, budget {z.utilization:g} x = {z.budget:.2f} GiB"),
            ("weights", f"{z.weights:.2f} GiB  ({comps})"),
            *([("load buffers", f"{z.load_buffers:.2f} GiB  (held from model loading on: the "
                                 "rotary cache, sparse MLA's buffers)")]
              if z.load_buffers >= 0.05 else []),
            ("activation", f"{z.activation:.2f} GiB  (profile batch {z.batched_tokens} tokens)"),
            ("overhead", f"{z.overhead:.2f} GiB  (non-torch, CUDA graphs, all-to-all {z.comm:.2f})"),
            ("KV cache", (f"{z.kv_cache:.2f} GiB = {z.kv_tokens_per_rank:,} tokens per DP rank "
                          f"({z.kv_bytes_per_token:,} B/token)") if z.kv_cache > 0 else
             f"none: the rest exceeds the budget by {-z.kv_cache:.2f} GiB"),
            ("concurrency", f"{z.max_concurrency:.1f} x {z.max_model_len} tokens per rank; needs "
                            f"{z.per_rank_required} ({z.required_concurrency} over {z.data} ranks)"),
            ("KV used", f"{z.kv_used():.0%} of a rank's KV cache at the sized load "
                        f"({z.per_rank_required} x {z.max_model_len} tokens)"
                        + (f", {z.kv_used(z.admit_len):.0%} at the traffic's mean context "
                           f"({z.admit_len} tokens)" if z.admit_len else "")),
            ("fits", ("yes" if z.fits else "NO")
             + (f" (judged at the traffic's mean context, {z.admit_len} tokens: SIZ003)"
                if z.admit_len else "")),
        ]
        out.append(f"role {z.name} ({z.engine})")
        out += [f"  {k:<12} {v}" for k, v in rows]
        h = hosts.get(z.name)
        if h is not None:
            out += [f"  {k:<12} {v}" for k, v in host_rows(h)]
        if prediction is not None and z.name in prediction.roles:
            out += [f"  {k:<12} {v}" for k, v in predicted_rows(prediction.roles[z.name])]
        out.append("")
    if prediction is not None:
        out.append(f"predicted: {prediction.reason}" if prediction.reason else
                   f"predicted: {prediction.total_tps:,.0f} tokens/s (input + output), "
                   f"{prediction.output_tps:,.0f} output tokens/s; binding: {prediction.bound} "
                   "(generator/perf/terms.py; gen plan for the assumptions)")
        if not prediction.reason and prediction.inputs:
            out.append("inputs:")
            out += [f"  {line}" for line in inputs_text(prediction.inputs)]
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def _pod_label(i: int, n: int) -> str:
    return "pod" if n == 1 else ("leader pod" if i == 0 else f"pod {i}")


def host_rows(h: HostPlan) -> list[tuple[str, str]]:
    """Rows of a role's host resources: per distinct pod, the requests and the terms they add
    up from (sizing/host.py), then the startup budget."""
    rows = []
    seen = set()
    for i, p in enumerate(h.pods):
        key = (p.cpu, p.memory_gib, p.ephemeral_gib, p.processes)
        if key in seen:
            continue
        seen.add(key)
        pr = p.processes
        rows.append((_pod_label(i, len(h.pods)),
                     f"cpu {p.cpu}, memory {p.memory_gib}Gi = processes {p.process_gib:.0f} "
                     f"({pr.gpu} GPU, {pr.api} API, {pr.other} other) + /dev/shm {p.shm_gib} "
                     f"+ weight staging {p.staging_gib:.0f}; ephemeral-storage "
                     f"{p.ephemeral_gib}Gi; reads {p.checkpoint_gib:.1f} GiB of the checkpoint"))
    rows.append(("startup", f"{h.startup_s} s = load {h.load_s} s at {h.load_gbps:g} GB/s "
                            f"({load_basis_text(h)}) "
                            f"+ warm-up {WARMUP_S} s + rendezvous {h.rendezvous_s} s"))
    return rows


def load_basis_text(h: HostPlan) -> str:
    """Where the weight-load rate comes from: ``stated: model.loadGBps`` or ``assumed:
    model.loadGBps unset, a network volume's rate`` (sizing/host.py ``LOAD_GBPS_DEFAULT``)."""
    if h.load_basis == "stated":
        return "stated: model.loadGBps"
    return "assumed: model.loadGBps unset, a network volume's rate"


def host_json(h: HostPlan) -> dict:
    """A role's host resources for the JSON report (GiB, cores, seconds)."""
    return {
        "pods": [{"cpu": p.cpu, "memoryGiB": p.memory_gib, "ephemeralStorageGiB": p.ephemeral_gib,
                  "processes": {"gpu": p.processes.gpu, "api": p.processes.api,
                                "other": p.processes.other},
                  "processMemoryGiB": p.process_gib, "shmGiB": p.shm_gib,
                  "stagingGiB": p.staging_gib, "checkpointShareGiB": p.checkpoint_gib}
                 for p in h.pods],
        "loadGBps": h.load_gbps, "loadGBpsBasis": h.load_basis, "loadSeconds": h.load_s,
        "startupSeconds": h.startup_s,
    }
