"""The sizing report: ``gen size`` as a table per role, or SPEC's JSON form (docs/spec.md §4).
All memory figures are GiB (2^30 bytes)."""

from __future__ import annotations

from ..sizing import RoleSizing


def sizing_json(checked) -> dict:
    """docs/spec.md §4: ``{"roles": [...]}`` with each role's findings attached. Every role of the spec
    is listed; a role that could not be sized has ``"sized": false`` and the reason."""
    roles = []
    spec = checked.spec
    names = [r.name for r in spec.spec.roles] if spec else []
    sizing = checked.sizing or [None] * len(names)
    for i, name in enumerate(names):
        z = sizing[i] if i < len(sizing) else None
        prefix = f"$.spec.roles[{i}]"
        own = [f for f in checked.findings if f.path == prefix or f.path.startswith(prefix + ".")
               or f.path.startswith(prefix + "[")
               or (f.code.startswith("SIZ") and f.message.startswith(f"role {name!r}"))]
        if isinstance(z, RoleSizing):
            z.findings = own
            roles.append(z.to_json())
        else:
            reason = z if isinstance(z, str) else \
                "not sized: the spec has errors that make sizing meaningless (see findings)"
            roles.append({"name": name, "sized": False, "reason": reason, "fits": False,
                          "findings": [f.to_json() for f in own]})
    return {"roles": roles, "ok": checked.ok, "spec": spec.metadata.name if spec else None,
            "findings": [f.to_json() for f in checked.findings]}


def sizing_text(checked) -> str:
    """A table per role: memory of the most loaded GPU and KV capacity."""
    out = []
    for z in checked.sizing or []:
        if not isinstance(z, RoleSizing):
            continue
        comps = ", ".join(f"{k} {v:.2f}" for k, v in
                          sorted(z.weights_by_component.items(), key=lambda kv: -kv[1]) if v >= 0.005)
        rows = [
            ("GPU", f"{z.gpu}: {z.gpu_memory:.2f} GiB, budget {z.utilization:g} x = {z.budget:.2f} GiB"),
            ("weights", f"{z.weights:.2f} GiB  ({comps})"),
            ("activation", f"{z.activation:.2f} GiB  (profile batch {z.batched_tokens} tokens)"),
            ("overhead", f"{z.overhead:.2f} GiB  (non-torch, CUDA graphs, all-to-all {z.comm:.2f})"),
            ("KV cache", (f"{z.kv_cache:.2f} GiB = {z.kv_tokens_per_rank:,} tokens per DP rank "
                          f"({z.kv_bytes_per_token:,} B/token)") if z.kv_cache > 0 else
             f"none: the rest exceeds the budget by {-z.kv_cache:.2f} GiB"),
            ("concurrency", f"{z.max_concurrency:.1f} x {z.max_model_len} tokens per rank; needs "
                            f"{z.per_rank_required} ({z.required_concurrency} over {z.data} ranks)"),
            ("fits", "yes" if z.fits else "NO"),
        ]
        out.append(f"role {z.name} ({z.engine})")
        out += [f"  {k:<12} {v}" for k, v in rows]
        out.append("")
    return "\n".join(out) + ("\n" if out else "")
