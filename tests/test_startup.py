"""What ``gen validate`` of a spec loads (issue #35 item 5): each command imports what it needs
when it needs it. The time itself is measured by ``bench/startup.py``, not here; these tests
guard the imports that made it slow (the importer, the render path, the planner, calibration,
the perf model, the other commands). The address check (NET100) builds the deployment plan of a valid spec untimed
(``build_plan(model, timed=False)``: the timeouts are not addresses), so generator.manifests
loads in gen validate and generator.perf does not. bench/startup.py's figures and the floor
(interpreter, click, ruamel.yaml, pydantic and the spec's models) are in the README (Speed)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from generator import pipeline
from generator.durations import timing_env, timing_env_names
from generator.manifests.addresses import address_model
from generator.manifests.plan import build_plan
from generator.targets import target_for
from tests.helpers import EXAMPLES, ROOT

#: Run ``gen validate`` in a fresh interpreter and print the modules it loaded.
_PROBE = """
import json, sys
from generator.cli import run
code = run(["validate", *sys.argv[1:]])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _validate_modules(*argv: str) -> tuple[int, set[str]]:
    out = subprocess.run([sys.executable, "-c", _PROBE, *argv], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return got["code"], set(got["modules"])


@pytest.fixture(scope="module")
def s1_modules() -> set[str]:
    code, modules = _validate_modules(str(EXAMPLES / "s1-16xh20-pd.yaml"))
    assert code == 0
    return modules


def test_validate_of_a_spec_reads_it_with_pydantic_and_ruamel(s1_modules):
    # The probe ran the command: the reader, the models and the rules are loaded.
    assert {"ruamel.yaml", "pydantic", "generator.spec.models", "generator.checks.network",
            "generator.deployment"} <= s1_modules


# A valid spec's deployment plan is built for the address check (NET100: who dials which
# address, generator/pipeline.py, issue 34), so generator.manifests loads in gen validate; the
# plan is untimed there, so the perf model and its PlanRequest do not, nor do the render path,
# the planner, calibration, the other commands and reporters, and the client libraries.
@pytest.mark.parametrize("prefix", [
    "generator.perf",         # the prediction and the durations: gen size, gen render
    "generator.spec.request",  # PlanRequest: the prediction and gen plan
    "generator.capacity",     # gen plan
    "generator.calibration",  # gen calibrate
    "generator.importer",     # manifests only: a spec needs not even its Options
    "generator.rollout",      # gen diff, gen render --check
    "generator.preflight", "generator.emit",
    "generator.cli_calibrate", "generator.cli_diff",  # gen bench/calibrate, gen diff
    # the reporters other than the findings' text: gen rules, size, explain, plan, report
    "generator.output.catalogue", "generator.output.sizing_report", "generator.output.explain",
    "generator.output.plan_table", "generator.output.review_page",
    "generator.output.rollout_report",
    # monitoring and its dashboard: a monitored or autoscaled spec's plan (S1 is neither)
    "generator.manifests.monitoring", "generator.manifests.dashboard",
    "generator.manifests.bench",
    # the targets S1 is not rendered for
    "generator.targets.kserve", "generator.targets.rbg", "generator.targets.dynamo",
    "generator.targets.aibrix",
    "generator.targets.templates",  # the Jinja environment: gen render
    "jinja2", "jsonschema", "kubernetes", "yaml", "grafana_foundation_sdk",
])
def test_validate_of_a_valid_spec_does_not_load(s1_modules, prefix):
    loaded = sorted(m for m in s1_modules if m == prefix or m.startswith(prefix + "."))
    assert loaded == []


def test_the_perf_model_loads_where_a_rule_needs_the_predicted_durations(tmp_path):
    # The V4-Pro P/D example on SGLang does not set decode's KV wait: PD060 has nothing to
    # compare with the predicted longest prefill, and the perf model does not load. With
    # SGLANG_DISAGGREGATION_WAITING_TIMEOUT set on decode (an overlay), PD060 compares it with
    # the predicted prefill, so the prediction loads; 100000 s is above any prefill: no finding.
    spec = str(EXAMPLES / "s3-v4pro-pd-dp16.yaml")
    code, modules = _validate_modules(spec)
    assert (code, sorted(m for m in modules if m.startswith("generator.perf"))) == (0, [])
    overlay = tmp_path / "wait.yaml"
    overlay.write_text("spec:\n  roles:\n  - name: decode\n    env:\n"
                       "      SGLANG_DISAGGREGATION_WAITING_TIMEOUT: \"100000\"\n")
    code, modules = _validate_modules(spec, "-f", str(overlay))
    assert code == 0 and "generator.perf.predict" in modules


@pytest.mark.parametrize("example, roles", [
    # S1 on vLLM behind vllm-router: prefill and decode get the keep-alive above the router's
    # pooled client (VLLM_HTTP_TIMEOUT_KEEP_ALIVE), the SGLang KV wait is not set on vLLM.
    ("s1-16xh20-pd.yaml", {"prefill": ["VLLM_HTTP_TIMEOUT_KEEP_ALIVE"],
                           "decode": ["VLLM_HTTP_TIMEOUT_KEEP_ALIVE"]}),
    # The V4-Pro P/D example on SGLang: decode waits for prefill's KV
    # (SGLANG_DISAGGREGATION_WAITING_TIMEOUT); no pooled client keeps connections to it.
    ("s3-v4pro-pd-dp16.yaml", {"prefill": [],
                               "decode": ["SGLANG_DISAGGREGATION_WAITING_TIMEOUT"]}),
])
def test_timing_env_names_are_the_variables_timing_env_sets(example, roles):
    # NET003 reads the names without timing the deployment (no perf model in gen validate);
    # the rendered env (timing_env, which needs the durations) must set exactly those names.
    checked = pipeline.check(EXAMPLES / example)
    assert checked.model is not None
    spec, engine = checked.model.spec, checked.model.engine
    seen = {}
    for role in spec.spec.roles:
        names = timing_env_names(spec, engine, role.mode)
        assert list(timing_env(spec, engine, role.mode, checked.model.durations)) == names
        seen[role.name] = names
    assert seen == roles


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_the_untimed_plan_has_the_timed_plans_addresses(example):
    # NET100 reads the untimed plan (no prediction, default durations): every listener and
    # every dial of it must be the rendered (timed) plan's, for each example and its target.
    model = pipeline.check(EXAMPLES / example).model
    assert model is not None
    form = target_for(model.spec.spec.target.name).address_form(model)
    untimed = address_model(build_plan(model, timed=False), form)
    timed = address_model(build_plan(model), form)
    assert untimed == timed
    assert untimed.listeners and untimed.dials
