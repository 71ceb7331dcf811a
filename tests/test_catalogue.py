"""The rule catalogue's own contract: every rule's source resolves (a user running ``gen rules``
can open it), and every rule has a failing example.

Sources:

A source resolves when it names at least one of: a file of this repository that exists
(``docs/...``, ``generator/...``, ``schemas/...``), an upstream issue or pull request
(``vllm#32136``, ``sglang PR#5014``, ``kvcache-ai/Mooncake#1382``), an upstream source file of a
named project (``vllm/config/parallel.py``, ``python/sglang/srt/...``, DeepEP's
``csrc/kernels/...``, LWS's ``pkg/...``), a Kubernetes API rule, or a URL. Paths outside the
repository (the team's ``shared/`` folder) never resolve for a user.
"""

from __future__ import annotations

import re

import pytest
import yaml

from generator.checks import RULES
from tests.helpers import ROOT

REPO_PATH = re.compile(r"(?<![/\w.-])((?:docs|generator|schemas|tests|tools|templates)/[\w./-]*\w)")
ISSUE = re.compile(r"[\w.-]+(?:/[\w.-]+)?(?:#| PR#)\d+")
UPSTREAM_FILE = re.compile(r"[\w.-]+(?:/[\w.-]+)+\.(?:py|go|cuh|cu|cpp|hpp|rs|json|md)\b")
PROJECTS = ("vLLM", "vllm", "SGLang", "sglang", "DeepEP", "lws", "LWS", "smg", "Mooncake", "NCCL",
            "kubernetes-sigs", "deepseek-ai", "vllm-project", "pytorch", "PyTorch")
KUBERNETES = re.compile(r"\bKubernetes\b")
URL = re.compile(r"https?://\S+")


def unresolved(source: str) -> list[str]:
    """Why ``source`` does not resolve (empty when it does)."""
    problems = []
    if "shared/" in source or re.search(r"(?<![/\w])(SPEC|BRIEF)\.md", source):
        problems.append("cites a file outside the repository")
    for path in REPO_PATH.findall(source):
        if not (ROOT / path).exists():
            problems.append(f"{path} does not exist in the repository")
    repo_paths = REPO_PATH.findall(source)
    upstream = [f for f in UPSTREAM_FILE.findall(source) if not REPO_PATH.match(f)]
    resolvable = (repo_paths or ISSUE.search(source) or URL.search(source)
                  or KUBERNETES.search(source)
                  or (upstream and any(p in source for p in PROJECTS)))
    if not resolvable:
        problems.append("names no repository file, upstream file, issue, Kubernetes rule or URL")
    return problems


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_source_resolves(rule):
    assert not unresolved(rule.source), (rule.code, rule.source, unresolved(rule.source))


@pytest.mark.parametrize("source", [
    "SPEC.md §2 (catalog ids)", "shared/research/field-failures.md #10", "moegen loader",
    "docs/no-such-file.md", "the engines do this",
])
def test_the_check_rejects_unopenable_sources(source):
    assert unresolved(source)


#: Codes whose failing examples are unit tests (loader, planner, conformance) rather than invalid
#: cases: test file -> codes it asserts on (each must appear there as a quoted string).
UNIT_TESTED = {"tests/test_load.py": None, "tests/test_rules.py": None, "tests/test_planner.py": None,
               "tests/test_preflight.py": None, "tests/test_evaluate.py": None,
               "tests/test_autoscaling.py": None, "tests/test_import.py": None,
               "tests/test_import_reference.py": None}


def _case_codes() -> set[str]:
    codes = set()
    for case in (ROOT / "tests" / "invalid").glob("*/case.yaml"):
        meta = yaml.safe_load(case.read_text())
        codes |= {e["code"] for e in meta.get("expect") or []}
        codes |= set(meta.get("warnings") or [])
    return codes


def test_every_rule_has_a_failing_example():
    """A code counts when an invalid case expects it, or a unit test asserts on it by name."""
    covered = _case_codes()
    unit = " ".join((ROOT / f).read_text() for f in UNIT_TESTED)
    covered |= {r.code for r in RULES if f'"{r.code}"' in unit}
    # SCH001 is the fallback for a pydantic error the generated schema does not catch: it cannot
    # fire while the schema is generated from the same models (test_cli.py schema tests).
    missing = sorted(r.code for r in RULES if r.code not in covered and r.code != "SCH001")
    assert missing == [], "rules without a failing example"
