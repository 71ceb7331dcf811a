"""Real-parser conformance: every vLLM command the golden cases render parses with the real
``vllm serve`` parser (make_arg_parser + EngineArgs.from_cli_args) of the release the case pins.

The engines venv (``.ci/engines-venv.sh``) holds vLLM 0.33.0; cases pinned to other releases are
checked against their per-release option lists instead (test_flags.py), and listed here as not
parser-checked. Pod-specific placeholders (pod and leader IPs) are replaced by example addresses.
"""

from __future__ import annotations

import pytest

from tests.conformance.runner import check_commands, require_engines
from tests.helpers import render_spec
from tests.test_golden import cases

PARSER_VERSION = "0.33.0"


def _commands():
    out = []
    for name, spec, overlays in cases():
        checked, plan, _ = render_spec(spec, overlays)
        if checked.dialect.version != PARSER_VERSION:
            continue
        for role in plan.roles:
            for pod in range(len(role.launch.per_pod)):
                out.append({"id": f"{name}/{role.name}/pod{pod}",
                            "argv": role.launch.argv(pod, substitute=True)})
    return out


def test_every_rendered_vllm_command_parses():
    require_engines()
    commands = _commands()
    assert len(commands) >= 10
    results = check_commands("vllm", commands)
    failed = [f"{r['id']}: {r['error']}" for r in results if not r["ok"]]
    assert not failed, "\n".join(failed)


def test_checker_rejects_the_seed_flags():
    """The seed's EPLB flags are rejected by vLLM 0.33: the conformance check can fail."""
    require_engines()
    argv = _commands()[0]["argv"] + ["--num-redundant-experts", "32"]
    [res] = check_commands("vllm", [{"id": "seed-flags", "argv": argv}])
    assert not res["ok"] and "unrecognized arguments" in res["error"]
