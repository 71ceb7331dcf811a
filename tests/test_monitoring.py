"""Monitoring objects: the metric names the alerts use exist in the engines the deployment
runs (their own sources, in the engines venv), and the alert thresholds follow the sizing."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml

from generator import pipeline
from generator.engines.metrics import METRICS, VLLM_WAITING_BY_REASON
from tests.conformance.runner import engines_python
from tests.helpers import EXAMPLES, ROOT, lws_templates, render_spec

MON = ROOT / "tests" / "golden" / "s1-monitoring" / "monitoring.yaml"


def _series(engine: str) -> set[str]:
    m = METRICS[engine]
    extra = {VLLM_WAITING_BY_REASON} if engine == "vllm" else set()
    return {m.running, m.generated_total, m.kv_usage, m.waiting, m.prompt_total, m.ttft_seconds,
            m.tpot_seconds, *m.transfer_failed_total.values()} | extra


@pytest.mark.skipif(engines_python() is None, reason="the engines venv is not built")
@pytest.mark.parametrize("engine,package", [("vllm", "vllm"), ("sglang", "sglang")])
def test_metric_names_exist_in_the_engines(engine, package):
    """Each series is declared by the engine (a counter's ``_total`` is added by
    prometheus_client unless the name already has it)."""
    py = engines_python()
    site = subprocess.run([str(py), "-c", f"import {package}, os; "
                           f"print(os.path.dirname({package}.__file__))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    for series in _series(engine):
        names = {series, series.removesuffix("_total")}
        found = subprocess.run(["grep", "-rlE", "|".join(f'"{re.escape(n)}"' for n in names),
                                site, "--include=*.py"], capture_output=True, text=True)
        assert found.stdout.strip(), (engine, series)


def test_sized_roles_alert_on_the_capacity_queue_not_kv():
    """S1 decode admits 13 sequences per rank (--max-num-seqs = ceil(200 / 16)), whose KV at
    maxModelLen is 13 x 32,768 / 1,769,185 = 24 % of a rank's cache: the admission binds first,
    so a KV alert above the sized usage could never fire (issue #20 item 14). The alert is a
    capacity queue (vLLM 0.33's reason="capacity" series) on the sized role only."""
    _, _, files = render_spec(EXAMPLES / "s1-16xh20-pd.yaml", [MON])
    rules = yaml.safe_load(files["prometheusrule.yaml"])["spec"]["groups"][0]["rules"]
    assert not [r for r in rules if r["alert"] == "KVCacheAboveSizing"]
    (queue,) = [r for r in rules if r["alert"] == "CapacityQueue"]
    assert queue["labels"]["role"] == "decode"
    assert queue["expr"] == ('max by (pod) (vllm:num_requests_waiting_by_reason{'
                             'app_kubernetes_io_instance="dsv3-pd",moegen_dev_role="decode",'
                             'reason="capacity"}) > 0')
    assert round(13 * 32768 / 1_769_185, 2) == 0.24 and "24%" in queue["annotations"]["description"]
    (entry,) = [r for r in rules if r["alert"] == "EntryPointDown"]
    assert entry["expr"] == ('max(up{app_kubernetes_io_instance="dsv3-pd",service="dsv3-pd-router"})'
                             ' == 0 or absent(up{app_kubernetes_io_instance="dsv3-pd",'
                             'service="dsv3-pd-router"})')
    # No namespace matcher (grouping by namespace is fine): survives a namespace override.
    assert not any(re.search(r"namespace\s*(=|!=|=~|!~)", r["expr"]) for r in rules)


def test_group_restart_alert_counts_recreated_pods_outside_rollouts():
    """A group LeaderWorkerSet re-creates starts at 0 restarts in new series: the alert also
    fires when a pod name's creation time changes (re-created under its name), unless one of
    the deployment's StatefulSets was between revisions (a rollout) in the window. Selected by
    the pod-name prefix, never by namespace."""
    _, _, files = render_spec(EXAMPLES / "s1-16xh20-pd.yaml", [MON])
    rules = yaml.safe_load(files["prometheusrule.yaml"])["spec"]["groups"][0]["rules"]
    (rule,) = [r for r in rules if r["alert"] == "EngineGroupRestarts"]
    restarts, recreated = rule["expr"].split(" > 0 or ", 1)
    assert restarts == ('sum by (namespace, pod) (increase(kube_pod_container_status_restarts'
                        '_total{pod=~"dsv3-pd-.*",container="engine"}[15m]))')
    assert recreated.startswith('(changes((max by (namespace, pod) (kube_pod_created'
                                '{pod=~"dsv3-pd-.*"}))[15m:1m]) > 0 unless on (namespace) ')
    assert ('kube_statefulset_status_update_revision{statefulset=~"dsv3-pd-.*"} unless on '
            '(namespace, statefulset, revision) kube_statefulset_status_current_revision'
            '{statefulset=~"dsv3-pd-.*"}') in recreated
    assert recreated.count("(") == recreated.count(")")


def _pods(files: dict[str, str], name: str) -> tuple[dict, dict]:
    """(leader, worker) pod templates of a LeaderWorkerSet file."""
    t = lws_templates(yaml.safe_load(files[name]))
    return t["leader"], t.get("worker", t["leader"])


def _http(pod: dict) -> list[int]:
    engine = next(c for c in pod["spec"]["containers"] if c["name"] == "engine")
    return [p["containerPort"] for p in engine.get("ports", []) if p["name"] == "http"]


def test_sglang_worker_pods_are_scraped_too():
    """S3 decode (SGLang, DP16 over 2 pods): node 1 runs its own schedulers and serves their
    /metrics on --port (sglang/srt/entrypoints/engine.py, node_rank >= 1), so its pod declares
    the http port and carries moegen.dev/metrics, which the PodMonitor selects; it still has no
    probes and no serves-api label (the client Service and the router skip it)."""
    _, _, files = render_spec(EXAMPLES / "s3-v4pro-pd-dp16.yaml", [MON])
    pm = yaml.safe_load(files["podmonitor.yaml"])["spec"]
    assert pm["selector"]["matchLabels"] == {"app.kubernetes.io/instance": "dsv4-pd16",
                                             "moegen.dev/metrics": "true"}
    leader, worker = _pods(files, "decode-lws.yaml")
    assert leader["metadata"]["labels"]["moegen.dev/metrics"] == "true"
    assert worker["metadata"]["labels"]["moegen.dev/metrics"] == "true"
    assert "moegen.dev/serves-api" not in worker["metadata"]["labels"]
    assert _http(leader) == _http(worker) == [8000]
    engine = next(c for c in worker["spec"]["containers"] if c["name"] == "engine")
    assert not {"startupProbe", "readinessProbe", "livenessProbe"} & set(engine)
    # Unmonitored: the port is declared (the engine binds it), the label is not.
    _, _, plain = render_spec(EXAMPLES / "s3-v4pro-pd-dp16.yaml")
    _, worker = _pods(plain, "decode-lws.yaml")
    assert _http(worker) == [8000] and "moegen.dev/metrics" not in worker["metadata"]["labels"]


def test_vllm_headless_workers_are_not_scraped():
    """S1 decode (vLLM, DP16 over 2 pods): the headless engines send their stats to the leader's
    API server, which serves every rank's metrics; workers bind no HTTP port."""
    _, _, files = render_spec(EXAMPLES / "s1-16xh20-pd.yaml", [MON])
    leader, worker = _pods(files, "decode-lws.yaml")
    assert leader["metadata"]["labels"]["moegen.dev/metrics"] == "true"
    assert "moegen.dev/metrics" not in worker["metadata"]["labels"] and _http(worker) == []


def test_sglang_engines_expose_metrics_only_when_monitored():
    _, _, plain = render_spec(EXAMPLES / "s3-v4pro-pd-dp16.yaml")
    _, _, watched = render_spec(EXAMPLES / "s3-v4pro-pd-dp16.yaml", [MON])
    assert "--enable-metrics" not in plain["decode-lws.yaml"]
    assert "--enable-metrics" in watched["decode-lws.yaml"]
    assert {"podmonitor.yaml", "router-servicemonitor.yaml", "prometheusrule.yaml"} <= set(watched)


def _dashboard(spec, overlays=()):
    _, _, files = render_spec(spec, [MON, *overlays])
    cm = yaml.safe_load(files["grafana-dashboard.yaml"])
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    (key, text), = cm["data"].items()
    return key, json.loads(text)


def _lines(dash) -> dict[str, float | None]:
    """Panel title -> the value of its reference line (None: no line drawn)."""
    out = {}
    for p in dash["panels"]:
        if p["type"] != "timeseries":
            continue
        d = p["fieldConfig"]["defaults"]
        steps = d["thresholds"]["steps"]
        on = d["custom"]["thresholdsStyle"]["mode"] == "line"
        out[p["title"]] = steps[1]["value"] if on and len(steps) > 1 else None
    return out


def test_dashboard_reference_lines_are_the_sized_and_predicted_figures():
    """S1 with spec.traffic (3.5K in / 1.2K out): the KV line is the planned usage of the HBM
    check (13 x 32,768 / 1,769,185 = 0.2408: the alert's figure without its 1.1 margin), the
    latency and rate lines are gen size's predictions for the same spec; prefill has no
    sizing.concurrency, so no KV line there."""
    key, dash = _dashboard(EXAMPLES / "s1-16xh20-pd.yaml")
    assert key == "dsv3-pd.json" and dash["uid"] == "dsv3-pd"
    lines = _lines(dash)
    assert lines["decode: KV cache usage"] == round(13 * 32768 / 1_769_185, 4) == 0.2408
    assert lines["prefill: KV cache usage"] is None
    checked = pipeline.check(EXAMPLES / "s1-16xh20-pd.yaml")
    pred = pipeline.performance(checked)
    assert pred.reason is None
    dec, pre = pred.roles["decode"], pred.roles["prefill"]
    assert lines["decode: TPOT"] == round(dec.tpot_ms / 1000, 4)
    # vLLM PD: the router sends to decode after prefill returned, so TTFT is compared where the
    # prefill engine records it (queue + compute); decode's own TTFT starts after that.
    assert lines["prefill: TTFT"] == round(pre.ttft_ms / 1000, 4)
    assert "decode: TTFT" not in lines
    ids = [p["id"] for p in dash["panels"]]
    assert len(set(ids)) == len(ids) and 0 not in ids
    assert lines["decode: Output tokens/s"] == round(pred.output_tps)
    assert lines["prefill: Input tokens/s"] == round(pred.total_tps - pred.output_tps)
    # Series by the PodMonitor's target labels, never by namespace (kustomize override).
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert exprs and all('moegen_dev_role="' in e and "namespace" not in e for e in exprs)
    assert any("vllm:request_time_per_output_token_seconds_bucket" in e for e in exprs)


def test_dashboard_without_traffic_draws_only_the_sizing_line(tmp_path):
    plain = tmp_path / "no-traffic.yaml"
    plain.write_text("spec:\n  traffic: null\n")
    _, dash = _dashboard(EXAMPLES / "s1-16xh20-pd.yaml", [plain])
    lines = _lines(dash)
    assert lines["decode: KV cache usage"] == 0.2408
    assert lines["decode: TPOT"] is None and lines["prefill: TTFT"] is None


def test_sglang_dashboard_uses_sglang_series():
    _, dash = _dashboard(EXAMPLES / "s3-v4pro-pd-dp16.yaml")
    exprs = " ".join(t["expr"] for p in dash["panels"] for t in p.get("targets", []))
    assert "sglang:token_usage" in exprs and "sglang:time_to_first_token_seconds_bucket" in exprs
    assert "vllm:" not in exprs
    # smg sends to prefill and decode at once: decode's engine sees the whole wait.
    titles = [p["title"] for p in dash["panels"]]
    assert "decode: TTFT" in titles and "prefill: TTFT" not in titles


def _stall_fires(expr: str, gauges: dict[str, float], rates: dict[str, float]) -> bool:
    """Evaluate EngineStalled's expression for one pod: ``sum by (pod) (G{..}) > 0`` is the
    gauge's value above 0, ``sum by (pod) (rate(C{..}[w])) == 0`` the counter's rate at 0;
    ``or``/``and`` as PromQL's set operators on one pod's series (present = true)."""
    py = re.sub(r"sum by \(pod\) \(rate\(([\w:]+)\{[^}]*\}\[\w+\]\)\) == 0",
                lambda m: f"(rates[{m.group(1)!r}] == 0)", expr)
    py = re.sub(r"sum by \(pod\) \(([\w:]+)\{[^}]*\}\) > 0",
                lambda m: f"(gauges[{m.group(1)!r}] > 0)", py)
    assert re.fullmatch(r"[\s()\w\[\]'\":<>=!.]+", py), py   # nothing left unevaluated
    return bool(eval(py, {}, {"gauges": gauges, "rates": rates}))   # noqa: S307


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_stall_alert_fires_on_waiting_requests_too(engine):
    """EngineStalled fires when no token is generated while requests run, and also while they
    only wait: vLLM PR #46811 saw num_requests_running read 0 during a wedge while requests
    queued. Not when tokens flow, nor on an idle engine."""
    spec = EXAMPLES / ("s1-16xh20-pd.yaml" if engine == "vllm" else "s3-v4pro-pd-dp16.yaml")
    mon = MON if engine == "vllm" else ROOT / "tests" / "golden" / "s3-monitoring" / "monitoring.yaml"
    _, _, files = render_spec(spec, [mon])
    rules = yaml.safe_load(files["prometheusrule.yaml"])["spec"]["groups"][0]["rules"]
    (stall,) = [r for r in rules if r["alert"] == "EngineStalled"]
    m = METRICS[engine]

    def fires(running, waiting, rate):
        return _stall_fires(stall["expr"], {m.running: running, m.waiting: waiting},
                            {m.generated_total: rate})
    assert fires(running=0, waiting=12, rate=0)        # the wedge of vllm#46811
    assert fires(running=4, waiting=0, rate=0)         # a hung collective
    assert not fires(running=4, waiting=12, rate=350.0)
    assert not fires(running=0, waiting=0, rate=0)     # idle
