"""Fixtures of the execution tier: the CPU runtime, the tiny checkpoint, rendering, the facts of
the shape report (which tests/conftest.py prints).

The tier needs the CPU runtime venv (``.ci/cpu-runtime-venv.sh``). Without it the engine tests
skip with a loud reason, except under ``CI=true``, where they fail: CI must build it.
Deselect the whole tier with ``pytest -m "not execution"``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from generator import pipeline
from tests.execution import cpu
from tests.execution.kubelet import allocate_ip_prefix
from tests.helpers import EXAMPLES, ROOT

HERE = Path(__file__).resolve().parent
OVERLAYS = HERE / "overlays"
_ip_locks: list = []          # the lock files holding this session's loopback /24s
#: the test item running now: facts a module-scoped fixture records at its teardown go to the
#: last item of its module (and reach the summary with that item's teardown report)
_current: list = []


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def pytest_runtest_setup(item):
    _current[:] = [item]


def fact(request, text: str) -> None:
    """Record a measured fact of the running shape (times, memory) for the session summary: as
    a user property of the running test item (``("execution-fact", text)``), which its reports
    carry to the process that writes the summary (the pytest-xdist controller, or this one)."""
    item = _current[0] if _current else request.node
    item.user_properties.append(("execution-fact", text))
    print(f"[execution] {text}", file=sys.stderr)


def usage(request, cluster) -> None:
    """Record each pod's peak memory and CPU time (facts of the session summary)."""
    cpu_s = cluster.cpu_s
    for name, (rss, pss) in sorted(cluster.peak_kib.items()):
        fact(request, f"{name}: peak {rss / 2**20:.2f} GiB RSS ({pss / 2**20:.2f} GiB PSS), "
                      f"{cpu_s.get(name, 0):.0f} CPU-s over all its starts")


@pytest.fixture(scope="session")
def runtime() -> cpu.Runtime:
    rt = cpu.find_runtime()
    if rt is not None:
        return rt
    reason = cpu.absent_reason()
    print(reason, file=sys.stderr)
    if in_ci():
        pytest.fail(reason + " [CI=true: .ci/run must build the CPU runtime]", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def checkpoint(runtime, tmp_path_factory) -> Path:
    """The tiny DeepSeek-V2-Lite-architecture checkpoint (tests/execution/checkpoint.py)."""
    out = tmp_path_factory.mktemp("checkpoint") / "tiny-deepseek-v2-lite"
    subprocess.run([str(runtime.python), str(HERE / "checkpoint.py"), str(out)], check=True, timeout=900,
                   env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
    return out


def render(example: str, overlays: list[str], out_dir: Path) -> Path:
    """``gen render examples/<example> -f ...`` through moegen's public pipeline, written to
    ``out_dir``; fails the test on any error finding. Overlay names are looked up in
    ``overlays/`` (shipped) first, then ``tests/execution/overlays/``."""
    paths = [ROOT / "overlays" / o if (ROOT / "overlays" / o).exists() else OVERLAYS / o for o in overlays]
    checked = pipeline.check(EXAMPLES / example, paths)
    errors = [str(f) for f in checked.findings if f.severity.value == "error"]
    assert not errors, "\n".join(errors)
    _, files = pipeline.render(checked)
    for name, text in files.items():
        path = out_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return out_dir


def ip_prefix() -> str:
    """A loopback /24 for one cluster, held (``flock``) until this test session ends: distinct
    per cluster of this session and from every other session's on the same machine
    (``kubelet.allocate_ip_prefix``)."""
    prefix, lock = allocate_ip_prefix()
    _ip_locks.append(lock)
    return prefix
