"""Real-parser conformance (vLLM and SGLang): every vLLM command the golden cases render parses with the real
``vllm serve`` parser (make_arg_parser + EngineArgs.from_cli_args) of the release the case pins,
its env file holds only VLLM_* variables that release reads, and every PD router command parses
with vllm-router's own RouterArgs.

The engines venv (``.ci/engines-venv.sh``) holds vLLM 0.33.0; cases pinned to other releases are
checked against their per-release option lists instead (test_flags.py), and listed here as not
parser-checked. Pod-specific placeholders (pod and leader IPs) are replaced by example addresses.
"""

from __future__ import annotations

from tests.conformance.runner import check_commands, require_engines
from tests.helpers import render_spec
from tests.test_golden import cases

PARSER_VERSION = "0.33.0"


def _commands(engine: str = "vllm", version: str = PARSER_VERSION):
    out = []
    for name, spec, overlays in cases():
        checked, plan, _ = render_spec(spec, overlays)
        if plan.engine != engine or checked.dialect.version != version:
            continue
        envs = {e.role: dict(e.items) for e in plan.env_files}
        for role in plan.roles:
            for pod in range(len(role.launch.per_pod)):
                out.append({"id": f"{name}/{role.name}/pod{pod}",
                            "argv": role.launch.argv(pod, substitute=True),
                            "env": envs[role.name]})
    return out


def _router_commands(engine: str = "vllm"):
    out = []
    for name, spec, overlays in cases():
        _, plan, _ = render_spec(spec, overlays)
        if plan.router is not None and plan.engine == engine:
            # The container's own command: vllm-router, or `smg launch` (smg's console script
            # needs the subcommand).
            out.append({"id": name, "argv": [*plan.router.command, *plan.router.args]})
    return out


def test_every_rendered_vllm_command_parses():
    require_engines()
    commands = _commands()
    assert len(commands) >= 10
    results = check_commands("vllm", commands)
    failed = [f"{r['id']}: {r['error']}" for r in results if not r["ok"]]
    assert not failed, "\n".join(failed)
    # Every VLLM_* variable of the env files is one vLLM 0.33 reads (vllm/envs.py).
    unknown = [f"{r['id']}: {r['unknown_env']}" for r in results if r["unknown_env"]]
    assert not unknown, "\n".join(unknown)


def test_every_rendered_router_command_parses():
    """vllm-router 0.1.17's RouterArgs accepts every PD router command the cases render."""
    require_engines()
    commands = _router_commands()
    assert len(commands) >= 5
    results = check_commands("vllm-router", commands)
    failed = [f"{r['id']}: {r['error']}" for r in results if not r["ok"]]
    assert not failed, "\n".join(failed)
    bad = [{"id": "sglang-flag", "argv": ["vllm-router", "--pd-disaggregation",
                                          *commands[0]["argv"][2:]]}]
    assert not check_commands("vllm-router", bad)[0]["ok"]


def test_checker_rejects_the_seed_flags():
    """The seed's EPLB flags are rejected by vLLM 0.33: the conformance check can fail."""
    require_engines()
    argv = _commands()[0]["argv"] + ["--num-redundant-experts", "32"]
    [res] = check_commands("vllm", [{"id": "seed-flags", "argv": argv}])
    assert not res["ok"] and "unrecognized arguments" in res["error"]


def test_every_rendered_sglang_command_parses():
    """SGLang 0.5.23's ServerArgs (add_cli_args + from_cli_args) accepts every rendered server
    command of the SGLang cases, and smg 1.13.0's RouterArgs every router command."""
    require_engines()
    commands = _commands("sglang", "0.5.23")
    assert len(commands) >= 8
    results = check_commands("sglang", commands)
    failed = [f"{r['id']}: {r['error']}" for r in results if not r["ok"]]
    assert not failed, "\n".join(failed)
    routers = _router_commands("sglang")
    assert len(routers) >= 3
    results = check_commands("sglang", routers)
    failed = [f"{r['id']}: {r['error']}" for r in results if not r["ok"]]
    assert not failed, "\n".join(failed)
    # The removed DeepEP switch is rejected: the check can fail.
    bad = [{"id": "removed-flag", "argv": commands[0]["argv"] + ["--enable-deepep-moe"]}]
    assert not check_commands("sglang", bad)[0]["ok"]


_PARSE_PROBE = r"""
import json, os, sys
values = json.load(sys.stdin)
import vllm.envs as envs
out = {}
for name, tried in values.items():
    if name not in envs.environment_variables:
        continue
    kinds = []
    for value in tried:
        os.environ[name] = value
        try:
            kinds.append(type(envs.environment_variables[name]()).__name__)
        except ValueError:
            kinds.append("ValueError")
        del os.environ[name]
    out[name] = kinds
print(json.dumps(out))
"""


def test_the_integer_variables_are_the_ones_vllm_parses_with_int():
    """ENG011's tables (generator/checks/engine.py INT_ENV, CHOICE_ENV) are every variable of
    moegen's vLLM scope (vllm-envs.json, the ones moegen renders or reads) that vLLM 0.33.0
    itself parses with int(): "x" raises ValueError and "1" reads as an int (``int(...)``) or a
    bool (``bool(int(...))``); and every one it reads as a choice: "1" refused too, each listed
    choice accepted."""
    import json
    import subprocess

    from generator.checks.engine import CHOICE_ENV, INT_ENV, _env_data
    from generator.checks.network import ENGINE_ENV
    py = require_engines()
    names = sorted(set(_env_data()) | set(INT_ENV) | set(CHOICE_ENV) | {n for n in ENGINE_ENV
                                                        if n.startswith("VLLM_")})
    tried = {n: ["x", "1", *CHOICE_ENV.get(n, ())] for n in names}
    got = json.loads(subprocess.run([str(py), "-c", _PARSE_PROBE], input=json.dumps(tried),
                                    capture_output=True, text=True, check=True,
                                    timeout=300).stdout)
    # Every choice CHOICE_ENV lists is one vLLM accepts (read back as the string).
    assert all(k[2:] == ["str"] * len(CHOICE_ENV[n]) for n, k in got.items() if n in CHOICE_ENV)
    got = {n: k[:2] for n, k in got.items()}
    parsed = {n: ("bool(int(...))" if k == ["ValueError", "bool"] else "int(...)")
              for n, k in got.items() if k in (["ValueError", "bool"], ["ValueError", "int"])}
    assert parsed == INT_ENV
    # A variable that refuses both "x" and "1" reads a choice: CHOICE_ENV's.
    assert {n for n, k in got.items() if k == ["ValueError", "ValueError"]} == set(CHOICE_ENV)
