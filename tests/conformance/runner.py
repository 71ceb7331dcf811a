"""Run rendered engine command lines through the engines' REAL argument parsers.

The parsers live in a separate venv (torch CPU + vllm + sglang + routers), built by
`.ci/engines-venv.sh`; this module runs in the project's own venv, which has none of them, and
talks to the checker scripts beside it over a subprocess (JSON on stdin / stdout).

    from tests.conformance.runner import check_commands, require_engines

    def test_x():
        require_engines()                       # skip loudly (fail under CI=true) if no venv
        [res] = check_commands("vllm", [{"id": "decode", "argv": ["vllm", "serve", ...]}])
        assert res["ok"], res["error"]

Batch many commands into one check_commands call: each call starts a fresh interpreter that
imports vLLM (~5 s) or SGLang (~3 s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD_SCRIPT = REPO / ".ci" / "engines-venv.sh"
DEFAULT_VENV = Path.home() / ".cache" / "moegen" / "engines-venv-v1"
MARKER_NAME = ".moegen-engines-ok"  # written by .ci/engines-venv.sh after its smoke test

SCRIPTS = {
    "vllm": HERE / "vllm_parse.py",
    "sglang": HERE / "sglang_parse.py",
    "vllm-router": HERE / "vllm_router_parse.py",
}
# Router commands are handled by the SGLang checker (it dispatches on argv).
KIND_ALIASES = {"smg": "sglang", "sglang_router": "sglang", "sglang-router": "sglang",
                "router": "sglang"}

TIMEOUT_S = float(os.environ.get("MOEGEN_ENGINES_TIMEOUT", "600"))


class EngineCheckError(RuntimeError):
    """The checker subprocess itself failed (not: a command was rejected)."""


def engines_venv() -> Path:
    env = os.environ.get("MOEGEN_ENGINES_VENV")
    return Path(env).expanduser() if env else DEFAULT_VENV


def engines_python() -> Path | None:
    """The engines venv's python, or None if the venv is absent or was never finished."""
    venv = engines_venv()
    py = venv / "bin" / "python"
    if (venv / MARKER_NAME).is_file() and py.exists():
        return py
    return None


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _absent_reason() -> str:
    venv = engines_venv()
    return (
        "!!! ENGINE PARSER CONFORMANCE NOT CHECKED: no finished engines venv at "
        f"{venv} (marker {MARKER_NAME} missing). Rendered vLLM/SGLang/router command lines "
        f"were NOT validated against the real parsers. Build it with `bash {BUILD_SCRIPT}` "
        "(a few minutes, ~3.5 GB; set MOEGEN_ENGINES_VENV to put it elsewhere). !!!"
    )


def require_engines() -> Path:
    """Return the engines python; otherwise pytest.skip loudly -- or pytest.fail when CI=true,
    since CI must build the venv (.ci/engines-venv.sh) before running the tests."""
    py = engines_python()
    if py is not None:
        return py
    import pytest

    reason = _absent_reason()
    print(reason, file=sys.stderr)
    if _in_ci():
        pytest.fail(reason + " [CI=true: CI must build the engines venv]", pytrace=False)
    pytest.skip(reason)


_cache: dict[str, list[dict]] = {}


def _run_checker(py: Path, args: list[str], payload: str, what: str) -> subprocess.CompletedProcess:
    """Run a checker script under the engines venv's python (JSON in on stdin)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    env.setdefault("PYTHONUNBUFFERED", "1")
    try:
        return subprocess.run([str(py), *args], input=payload, capture_output=True, text=True,
                              env=env, timeout=TIMEOUT_S, cwd=str(HERE))
    except subprocess.TimeoutExpired as e:
        raise EngineCheckError(f"{what} checker timed out after {TIMEOUT_S:.0f}s") from e


def check_commands(kind: str, commands: list[dict]) -> list[dict]:
    """Check `commands` ([{"id": str, "argv": [...]}, ...]) with the real parser of `kind`
    ("vllm", or "sglang" for SGLang servers and the smg / sglang-router routers).

    Returns one result per command, in order: {"id", "engine", "ok", "error", ...}; the vLLM
    checker adds "unknown_env" (VLLM_* names in a command's optional "env" that vLLM doesn't
    know). Raises EngineCheckError if the venv is missing or the checker itself fails.
    """
    kind = KIND_ALIASES.get(kind, kind)
    if kind not in SCRIPTS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {sorted(SCRIPTS)}")
    py = engines_python()
    if py is None:
        raise EngineCheckError(_absent_reason())
    commands = [dict(c, id=str(c.get("id", i))) for i, c in enumerate(commands)]
    for c in commands:
        if not isinstance(c.get("argv"), list) or not all(isinstance(a, str) for a in c["argv"]):
            raise ValueError(f"command {c.get('id')!r}: argv must be a list of str, got {c.get('argv')!r}")
    payload = json.dumps({"commands": commands}, sort_keys=True)
    key = f"{kind}\0{payload}"
    if key in _cache:
        return [dict(r) for r in _cache[key]]

    proc = _run_checker(py, [str(SCRIPTS[kind])], payload, kind)

    def tail(s: str, n: int = 40) -> str:
        return "\n".join((s or "").splitlines()[-n:])

    if proc.returncode != 0:
        raise EngineCheckError(
            f"{kind} checker ({py} {SCRIPTS[kind].name}) exited {proc.returncode}.\n"
            f"--- stderr (tail) ---\n{tail(proc.stderr)}\n--- stdout (tail) ---\n{tail(proc.stdout)}"
        )
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise EngineCheckError(
            f"{kind} checker printed no valid JSON ({e}).\n--- stdout (tail) ---\n"
            f"{tail(proc.stdout)}\n--- stderr (tail) ---\n{tail(proc.stderr)}"
        ) from e
    results = doc.get("results")
    if not isinstance(results, list) or [r.get("id") for r in results] != [c["id"] for c in commands]:
        raise EngineCheckError(f"{kind} checker returned results that don't match the commands: {doc!r}")
    for r in results:
        r.setdefault("engine", doc.get("engine", kind))
        r["engine_version"] = doc.get("version")
    _cache[key] = results
    return [dict(r) for r in results]


def check_one(kind: str, argv: list[str], **extra) -> dict:
    """check_commands for a single argv."""
    return check_commands(kind, [{"id": "0", "argv": argv, **extra}])[0]


def build_engine_configs(engine: str, items: list[dict]) -> list[dict]:
    """Build each item's engine configuration objects with ``engine_config.py`` (see its
    docstring for the item format and what runs); one result per item, in order.

    Raises EngineCheckError if the venv is missing or the checker itself fails.
    """
    py = engines_python()
    if py is None:
        raise EngineCheckError(_absent_reason())
    payload = json.dumps({"items": items}, sort_keys=True)
    key = f"config:{engine}\0{payload}"
    if key in _cache:
        return [dict(r) for r in _cache[key]]
    proc = _run_checker(py, [str(HERE / "engine_config.py"), engine], payload,
                        f"{engine} config")
    if proc.returncode != 0:
        raise EngineCheckError(f"{engine} config checker exited {proc.returncode}:\n"
                               + "\n".join(proc.stderr.splitlines()[-40:]))
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        raise EngineCheckError(f"{engine} config checker printed no JSON ({e}):\n"
                               + "\n".join(proc.stderr.splitlines()[-40:])) from e
    results = doc["results"]
    if [r["id"] for r in results] != [i["id"] for i in items]:
        raise EngineCheckError(f"{engine} config checker results do not match the items")
    for r in results:
        r["engine_version"] = doc["version"]
    _cache[key] = results
    return [dict(r) for r in results]
