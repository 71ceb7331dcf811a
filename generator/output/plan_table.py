"""``gen plan`` as text: the capacity planner's ranked table and its assumptions."""

from __future__ import annotations

from ..capacity.search import PlanResult
from ..layout import parallel_text
from ..perf.candidate import ttft_split_text
from ..perf.inputs import inputs_text


def plan_text(result: PlanResult, req=None) -> str:
    """The planner's ranked table and its assumptions; with the PlanRequest ``req``, each
    candidate's regime per figure (generator/perf/regimes.py) and that regime's measured
    error against published figures (bench/planner_residuals.py); then the inputs the
    predictions rest on (perf/inputs.py, the JSON's ``inputs``), as ``gen size`` shows them."""
    lines = ["assumptions:"] + [f"  - {a}" for a in result.assumptions]
    lines.append(f"reachable: {'yes' if result.reachable else 'NO'}; binding: {result.bound}")
    for alt in result.alternatives:
        lines.append(f"  with {alt['change']}: {alt['totalTokensPerSec']:,} tokens/s"
                     f" ({'reachable' if alt['reachable'] else 'still not reachable'}; {alt['bound']})")
    head = f"{'#':>2} {'layout':<44} {'GPUs':>4} {'KV tok/rank':>11} {'TTFT ms':>8} " \
           f"{'TPOT ms':>7} {'out tok/s':>9} {'tot tok/s':>9} {'out/GPU':>7}  bound"
    lines += ["", head]
    for c in result.candidates[:10]:
        layout = " + ".join(
            f"{r['mode'][0].upper()}x{r['replicas']} "
            f"{parallel_text(**r['parallel'], sep='')}@{r['nodePool']}" for r in c.roles)
        mark = "" if c.meets_slo else " (misses SLO)"
        lines.append(f"{c.rank:>2} {layout:<44} {c.gpus:>4} {c.kv_tokens_per_rank:>11,} "
                     f"{c.ttft_ms:>8.0f} {c.tpot_ms:>7.1f} {c.output_tps:>9,.0f} {c.total_tps:>9,.0f} "
                     f"{c.output_tps / c.gpus:>7.0f}  {c.bound}{mark}")
    best = result.candidates[0] if result.candidates else None
    if best is not None and best.fits and best.ttft_parts_ms:
        lines.append(f"   #{best.rank} TTFT {best.ttft_ms:,.0f} ms = "
                     f"{ttft_split_text(best.ttft_parts_ms)}")
    if req is not None:
        lines += _regime_lines(result, req)
    # A fixed layout (docs/spec.md section 5.1): each role's own capacity per node.
    for r in (result.candidates[0].roles if len(result.candidates) == 1 else []):
        rates = [f"{r[k]:,} {label} tokens/s per node" for k, label in
                 (("inputTokensPerSecPerNode", "input"), ("outputTokensPerSecPerNode", "output"))
                 if k in r]
        if rates:
            batch = f" (batch {r['batchPerRank']} per rank)" if "batchPerRank" in r else ""
            lines.append(f"   {r.get('name', r['mode'])}: {', '.join(rates)}{batch}")
    if result.inputs:
        lines.append("inputs:")
        lines += [f"  {line}" for line in inputs_text(result.inputs)]
    return "\n".join(lines) + "\n"


def _regime_lines(result: PlanResult, req) -> list[str]:
    """Per listed candidate, the regime of its TTFT, TPOT and tokens/s; then each regime's
    measured bench error once."""
    from ..catalog import builtin_arch
    from ..perf.regimes import request_roles, roles_regimes
    s = req.spec
    seen: dict[str, object] = {}
    lines = []
    for c in result.candidates[:10]:
        if not c.roles:
            continue
        reg = roles_regimes(request_roles(req, c.roles), s.nodePools,
                            builtin_arch(s.model.architecture), s.engine.name, s.engine.version,
                            s.model.weights, s.speculative is not None)
        figs = (("TTFT", reg["ttftMs"]), ("TPOT", reg["tpotMs"]),
                ("tokens/s", reg["outputTokensPerSec"]))
        lines.append(f"   #{c.rank} regimes: " + ", ".join(f"{n} {e.regime}" for n, e in figs))
        for _, e in figs:
            seen.setdefault(e.regime, e)
    if seen:
        lines.append("model error by regime (cross-validated, one source left out at a time: "
                     "bench/planner_residuals.py):")
        lines += [f"   {e.describe()}" for e in seen.values()]
    return lines
