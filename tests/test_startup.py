"""What ``gen validate`` of a spec loads (issue #35 item 5): each command imports what it needs
when it needs it. The time itself is measured by ``bench/startup.py``, not here; these tests
guard the imports that made it slow (the importer, the render path, the planner, calibration).
Since the address check (NET100) builds the deployment plan of a valid spec, the plan and the
perf model load in gen validate: 0.40 s of CPU for S1 against the issue's 0.15 s goal."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from generator import pipeline
from generator.durations import timing_env, timing_env_names
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
# address, generator/pipeline.py, issue 34), and the plan's timeouts come from the durations,
# so generator.manifests and generator.perf load in gen validate since that check landed; the
# render path, the planner, calibration and the client libraries still do not.
@pytest.mark.parametrize("prefix", [
    "generator.capacity",     # gen plan
    "generator.calibration",  # gen calibrate
    "generator.targets.templates",  # the Jinja environment: gen render
    "jinja2", "jsonschema", "kubernetes", "yaml", "grafana_foundation_sdk",
])
def test_validate_of_a_valid_spec_does_not_load(s1_modules, prefix):
    loaded = sorted(m for m in s1_modules if m == prefix or m.startswith(prefix + "."))
    assert loaded == []


def test_validate_of_a_spec_loads_no_importer_beyond_its_options(s1_modules):
    # cli._import_options builds the importer's Options (a dataclass); nothing that reads
    # manifests (workloads, launch scripts, argv tables) loads for a spec.
    assert sorted(m for m in s1_modules if m.startswith("generator.importer")) == [
        "generator.importer", "generator.importer.options"]


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
