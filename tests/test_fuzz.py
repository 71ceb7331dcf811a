"""Property-based robustness: mutated specs never crash gen, and accepted ones render valid
Kubernetes objects.

Mutations start from the shipped examples: replace a random field (or a whole subtree) with a
value of another type or range, or delete it. Whatever comes out, ``gen validate`` must exit 0 or
1 (never 4, never a traceback); when it exits 0, ``gen render`` must succeed and every object must
pass kubernetes-validate in strict mode.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import kubernetes_validate
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator import pipeline
from generator.cli import run
from tests.helpers import K8S_VERSION, example_specs, lws_templates, objects

EXAMPLES = {p.name: yaml.safe_load(p.read_text()) for p in example_specs()}

VALUES = st.one_of(
    st.sampled_from([None, True, False, 0, 1, -1, 2, 3, 7, 8, 9, 16, 24, 32, 61, 64, 65535,
                     1 << 40, 0.5, 0.95, 1.5, "", "x", "a b", "0.33.0", "0.11.0", "latest",
                     "deepseek-v3", "kimi-k2", "deepseek-v4-flash", "nixl", "mooncake", "lmcache",
                     "fp8", "bf16", "mxfp4", "w4a8", "nvfp4", "w4a16", "auto", "lws", "statefulset",
                     "pod-per-rank", "prefill", "decode", "unified", "deepep_low_latency",
                     "deepep_high_throughput", "naive", "round_robin", "^lo", "eth0", "H20-96GB",
                     "H100-80GB", "B200-180GB", [], {}, ["a"], {"a": 1}]),
    st.integers(min_value=-10, max_value=300),
    st.text(max_size=12),
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


def _mutate(doc, path, value, delete):
    if not path:
        return value
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    if delete and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


PLANS = {p.name: yaml.safe_load(p.read_text())
         for p in sorted((Path(__file__).resolve().parent.parent / "examples" / "plan").glob("*.yaml"))}


@st.composite
def mutated(draw, corpus: dict):
    """A document of ``corpus`` with 1-3 random fields replaced or deleted."""
    doc = yaml.safe_load(yaml.safe_dump(corpus[draw(st.sampled_from(sorted(corpus)))]))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(list(_paths(doc))))
        doc = _mutate(doc, path, draw(VALUES), draw(st.booleans()))
        if not isinstance(doc, dict):
            break
    return doc


def _examples(default: int) -> int:
    """Examples per property (MOEGEN_FUZZ_EXAMPLES raises it for a long local run)."""
    return int(os.environ.get("MOEGEN_FUZZ_EXAMPLES", default))


def _validate(obj: dict) -> None:
    """Strict Kubernetes validation; LWS pod templates are checked as PodTemplates."""
    if obj["kind"] != "LeaderWorkerSet":
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        return
    for which, template in lws_templates(obj).items():
        kubernetes_validate.validate(
            {"apiVersion": "v1", "kind": "PodTemplate",
             "metadata": {"name": f"{obj['metadata']['name']}-{which}"},
             "template": template}, K8S_VERSION, strict=True)


@settings(max_examples=_examples(120), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutated(EXAMPLES))
def test_mutated_specs_never_crash(doc):
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(yaml.safe_dump(doc, sort_keys=False))
        code = run(["validate", str(spec), "--format", "json"])
        assert code in (0, 1), f"exit {code} for:\n{spec.read_text()}"
        # A mutation that leaves no moegen document (kind and apiVersion gone, null) makes a
        # file gen validate skips as neither a spec nor a serving manifest (issue #24).
        data = pipeline.check(spec).loaded.data
        skipped = not str(data.get("apiVersion", "")).startswith("moegen.dev/") \
            and data.get("kind") != "InferenceDeployment"
        if code == 0 and not skipped:
            checked = pipeline.check(spec)
            _, files = pipeline.render(checked)
            for obj in objects(files):
                _validate(obj)


@settings(max_examples=_examples(60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutated(PLANS))
def test_mutated_plan_requests_never_crash(doc):
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "plan.yaml"
        req.write_text(yaml.safe_dump(doc, sort_keys=False))
        code = run(["plan", str(req), "--format", "json"])
        assert code in (0, 1, 2), f"exit {code} for:\n{req.read_text()}"
