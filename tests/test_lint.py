"""The linters pass (issue #35 item 4), so that ``pytest`` (and CI) runs them: ruff over the
whole checkout (pyflakes, pycodestyle, bugbear: ``[tool.ruff]`` in pyproject.toml) and mypy on
the modules that define each room's public API (``[tool.mypy]`` ``files``: annotated functions,
checked calls). Both are pinned in the ``test`` extra; their caches (``.ruff_cache``,
``.mypy_cache``) live in the checkout, so a second run is quick (a cold run on the 2-core CI
machine: ruff ~0.1 s of CPU, mypy ~2.3 s)."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ROOT


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True,
                          text=True)


def test_ruff_finds_nothing():
    out = _run("ruff", "check", "--output-format", "concise", ".")
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_finds_nothing_in_the_public_interfaces():
    # The scope and settings are pyproject.toml's [tool.mypy]; `mypy` alone runs the same.
    out = _run("mypy", "--no-error-summary")
    assert out.returncode == 0, out.stdout + out.stderr
