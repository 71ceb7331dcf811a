"""How the suite is spread over the cores (pytest-xdist, ``-n auto`` in pyproject.toml): each
test file is one scope, so its module-scoped fixtures (renders, parser venvs, clusters) are built
once, on one worker; the execution tier (``tests/execution``) is one scope, so its clusters start
one after another on one worker while the other workers run the rest. ``pytest -n 0`` runs
everything in one process.

The scopes are set by the scheduler below rather than by ``xdist_group`` marks: pytest-xdist
3.8's ``--dist loadgroup`` writes the group into ``item._nodeid``, which pytest 9 no longer reads
(``Node.nodeid`` is ``str(self._id)``), so the marks group nothing there."""

from __future__ import annotations


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class FileScopes(LoadScopeScheduling):
        """LoadScopeScheduling with one scope per test file and one for the execution tier."""

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "tests/execution" if path.startswith("tests/execution/") else path

    return FileScopes(config, log)
