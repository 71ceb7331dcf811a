"""Monitoring objects: the metric names the alerts use exist in the engines the deployment
runs (their own sources, in the engines venv), and the alert thresholds follow the sizing."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from generator.engines.metrics import METRICS
from tests.conformance.runner import engines_python
from tests.helpers import EXAMPLES, ROOT, render_spec

MON = ROOT / "tests" / "golden" / "s1-monitoring" / "monitoring.yaml"


def _series(engine: str) -> set[str]:
    m = METRICS[engine]
    return {m.running, m.generated_total, m.kv_usage, m.waiting, *m.transfer_failed_total.values()}


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


def test_kv_alert_threshold_is_the_sized_usage():
    """S1 decode: 13 sequences of 32,768 tokens per rank in 1,769,772 KV tokens = 24.1 % planned;
    x 1.1 margin = 26 %. Prefill has no sizing.concurrency: no KV alert for it."""
    _, _, files = render_spec(EXAMPLES / "s1-16xh20-pd.yaml", [MON])
    rules = yaml.safe_load(files["prometheusrule.yaml"])["spec"]["groups"][0]["rules"]
    kv = [r for r in rules if r["alert"] == "KVCacheAboveSizing"]
    assert [r["labels"]["role"] for r in kv] == ["decode"]
    assert round(13 * 32768 / 1_769_772 * 1.1, 2) == 0.26
    assert kv[0]["expr"].endswith("> 0.26")
    assert all("namespace" not in r["expr"] for r in rules)   # survives a namespace override


def test_sglang_engines_expose_metrics_only_when_monitored():
    _, _, plain = render_spec(EXAMPLES / "s3-v4pro-pd-dp16.yaml")
    _, _, watched = render_spec(EXAMPLES / "s3-v4pro-pd-dp16.yaml", [MON])
    assert "--enable-metrics" not in plain["decode-lws.yaml"]
    assert "--enable-metrics" in watched["decode-lws.yaml"]
    assert {"podmonitor.yaml", "router-servicemonitor.yaml", "prometheusrule.yaml"} <= set(watched)
