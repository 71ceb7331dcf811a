"""How the suite is spread over the cores (pytest-xdist, ``-n auto --dist loadgroup`` in
pyproject.toml): each test file is one group, so its module-scoped fixtures (renders, parser
venvs, clusters) are built once, on one worker; the execution tier (``tests/execution``) is one
group, so its clusters start one after another on one worker while the other workers run the
rest. ``pytest -n 0`` runs everything in one process (the marks are then inert)."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        path = item.nodeid.split("::")[0]
        group = "execution" if path.startswith("tests/execution/") else path
        item.add_marker(pytest.mark.xdist_group(group))
