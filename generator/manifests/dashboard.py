"""The Grafana dashboard of a deployment (``spec.monitoring.dashboard``): one row per role whose
reference lines are moegen's own numbers, so an operator sees at a glance whether the cluster
does what the spec was sized and predicted to do.

Per role, from the API pods' series (selected by the pod labels the PodMonitor copies onto them,
``app_kubernetes_io_instance`` and ``moegen_dev_role``, never by namespace):

* KV cache usage per pod, with a line at the usage the HBM check planned for the role's
  ``sizing.concurrency`` (per rank, at maxModelLen: what the KVCacheAboveSizing alert uses);
* decode/unified roles: TPOT p50/p90 (``request_time_per_output_token_seconds``) with a line at
  the predicted TPOT (``spec.traffic``, :mod:`generator.perf.predict`); TTFT p50/p90
  (``time_to_first_token_seconds``) on the role whose engine sees the whole wait (vLLM PD: the
  prefill role; SGLang PD: decode; unified: itself) with a line at the predicted TTFT; and
  output tokens/s of the role with a line at the output rate predicted at the sized load;
* prefill roles: input tokens/s with a line at the input rate predicted at that load.

Built with Grafana's own typed builders (grafana-foundation-sdk) and shipped as a ConfigMap
labelled ``grafana_dashboard: "1"``, the label the Grafana dashboard sidecar of the
kube-prometheus-stack chart loads (grafana/helm-charts, charts/grafana values.yaml
``sidecar.dashboards.label``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..engines.metrics import METRICS
from ..sizing import RoleSizing
from .monitoring import P_INSTANCE, P_ROLE, RATE_WINDOW, _q

#: The Grafana sidecar's default dashboard label (grafana/helm-charts charts/grafana/values.yaml
#: ``sidecar.dashboards.label: grafana_dashboard``, ``labelValue: "1"``).
DASHBOARD_LABEL = ("grafana_dashboard", "1")
#: Rate window of the panels' queries (the alerts').
WINDOW = RATE_WINDOW
#: Panel size on Grafana's 24-column grid.
PANEL_W, PANEL_H = 8, 8


@dataclass(frozen=True)
class DashboardPlan:
    """The dashboard ConfigMap: its name, labels (the deployment's + the sidecar's), data key
    and the dashboard JSON text."""

    name: str
    labels: dict[str, str]
    key: str
    json_text: str


def _panel(title: str, description: str, queries: list[tuple[str, str]], unit: str,
           reference: float | None, x: int, y: int):
    from grafana_foundation_sdk.builders import common as cb
    from grafana_foundation_sdk.builders import dashboard, prometheus, timeseries
    from grafana_foundation_sdk.models import common
    from grafana_foundation_sdk.models import dashboard as dm

    steps = [dm.Threshold(value=None, color="transparent")]
    if reference is not None:
        steps.append(dm.Threshold(value=reference, color="orange"))
    p = (timeseries.Panel().title(title).description(description).unit(unit)
         .datasource(dm.DataSourceRef(type_val="prometheus", uid="${datasource}"))
         .grid_pos(dm.GridPos(h=PANEL_H, w=PANEL_W, x=x, y=y))
         .legend(cb.VizLegendOptions().display_mode(common.LegendDisplayMode.LIST)
                 .placement(common.LegendPlacement.BOTTOM).show_legend(True))
         .tooltip(cb.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI)
                  .sort(common.SortOrder.DESCENDING))
         .thresholds(dashboard.ThresholdsConfig().mode(dm.ThresholdsMode.ABSOLUTE).steps(steps))
         .thresholds_style(cb.GraphThresholdsStyleConfig().mode(
             common.GraphTresholdsStyleMode.LINE if reference is not None
             else common.GraphTresholdsStyleMode.OFF)))
    for i, (expr, legend) in enumerate(queries):
        p = p.with_target(prometheus.Dataquery().expr(expr).legend_format(legend)
                          .ref_id(chr(ord("A") + i)))
    return p


def _quantiles(metric: str, sel: str) -> list[tuple[str, str]]:
    return [(f"histogram_quantile({q}, sum by (le) (rate({metric}_bucket{sel}[{WINDOW}])))",
             f"p{round(q * 100)}") for q in (0.5, 0.9)]


def dashboard_plan(base: str, engine: str, roles: list[tuple[str, str, bool]],
                   sizing: dict[str, RoleSizing], prediction,
                   labels: dict[str, str]) -> DashboardPlan:
    """``roles``: (name, mode, sizing.concurrency set) per role; ``sizing``: the roles' memory
    plans (a KV line where the role's concurrency is sized); ``prediction``: a
    :class:`~generator.perf.predict.Prediction` (latency and rate lines when it has roles).
    The JSON is deterministic (sorted keys)."""
    from grafana_foundation_sdk.builders import dashboard
    from grafana_foundation_sdk.cog.encoder import JSONEncoder

    m = METRICS[engine]
    d = (dashboard.Dashboard(f"{base} (moegen)").uid(base[:40]).tags(["moegen", engine])
         .time("now-6h", "now").refresh("30s")
         .with_variable(dashboard.DatasourceVariable("datasource").type("prometheus")))
    predicted = prediction.roles if prediction is not None and not prediction.reason else {}
    y = panel_id = 0
    for name, mode, sized in roles:
        sel = _q({P_INSTANCE: base, P_ROLE: name})
        z = sizing.get(name)
        panel_id += 1
        d = d.with_row(dashboard.Row(f"{name} ({mode})").id(panel_id))
        y += 1
        panels = []
        planned = None
        if sized and z is not None and z.kv_tokens_per_rank > 0:
            planned = round(z.per_rank_required * z.max_model_len / z.kv_tokens_per_rank, 4)
        kv_note = (f"{z.kv_tokens_per_rank:,} KV tokens per rank (moegen's sizing)"
                   if z is not None else "")
        panels.append(("KV cache usage", f"{kv_note}; the line: the usage planned for "
                       "sizing.concurrency sequences of maxModelLen per rank",
                       [(f"max by (pod) ({m.kv_usage}{sel})", "{{pod}}")], "percentunit",
                       planned))
        p = predicted.get(name)
        ttft = _ttft(predicted)
        # Where TTFT is recorded: vLLM's router sends a PD request to decode only after prefill
        # returned (vllm-router 0.1.17 NIXL flow), so decode's TTFT starts after prefill and the
        # prefill engine's (its queue + compute) is the one to compare; smg (SGLang) sends to
        # both at once, so the decode engine's TTFT covers the whole wait.
        ttft_here = mode == "unified" or (mode == "prefill") == (engine == "vllm")
        if mode != "prefill":
            panels.append(("TPOT", "per-request time per output token; the line: moegen's "
                           "predicted TPOT at the sized load (spec.traffic)"
                           + _regime(p, "tpotMs"),
                           _quantiles(m.tpot_seconds, sel), "s",
                           round(p.tpot_ms / 1000, 4) if p and p.tpot_ms else None))
        if ttft_here:
            panels.append(("TTFT", "time to first token as this role's engine records it; "
                           "the line: moegen's predicted TTFT (prefill queue + compute + KV "
                           "transfer)" + _regime(_ttft_role(predicted), "ttftMs"),
                           _quantiles(m.ttft_seconds, sel), "s",
                           round(ttft / 1000, 4) if ttft else None))
        if mode != "prefill":
            panels.append(("Output tokens/s", "all pods of the role; the line: the output "
                           "rate predicted at the sized load" + _regime(p, "outputTokensPerSec"),
                           [(f"sum(rate({m.generated_total}{sel}[{WINDOW}]))", name)],
                           "short", p.output_total if p else None))
        if mode != "decode":
            panels.append(("Input tokens/s", "prompt tokens processed by the role; the line: "
                           "the input rate predicted at the sized load"
                           + _regime(p, "inputTokensPerSec"),
                           [(f"sum(rate({m.prompt_total}{sel}[{WINDOW}]))", name)], "short",
                           p.input_total if p else None))
        for i, (title, desc, queries, unit, ref) in enumerate(panels):
            x = (i % 3) * PANEL_W
            if i and i % 3 == 0:
                y += PANEL_H
            panel_id += 1
            d = d.with_panel(_panel(f"{name}: {title}", desc, queries, unit, ref, x, y)
                             .id(panel_id))
        y += PANEL_H
    text = json.dumps(d.build(), cls=JSONEncoder, sort_keys=True, indent=2)
    return DashboardPlan(f"{base}-dashboard", dict(labels) | dict([DASHBOARD_LABEL]),
                         f"{base}.json", text)


def _regime(p, field: str) -> str:
    """``"; <regime> regime, bench median error ..."`` for the predicted figure ``field`` of
    role prediction ``p`` (generator/perf/regimes.py), or "" without one."""
    e = p.regimes.get(field) if p is not None else None
    return f" ({e.describe()})" if e is not None else ""


def _ttft_role(predicted: dict):
    """The role prediction that carries the deployment's TTFT (prefill or unified)."""
    return next((p for p in predicted.values() if p.ttft_ms is not None), None)


def _ttft(predicted: dict) -> float | None:
    """The deployment's predicted TTFT (ms): the prefill or unified role's."""
    return next((p.ttft_ms for p in predicted.values() if p.ttft_ms is not None), None)
