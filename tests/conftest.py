"""How the suite is spread over the cores, and the execution tier's summary.

pytest-xdist (``-n auto --dist loadfile`` in pyproject.toml) runs each test file on one worker,
so its module-scoped fixtures (renders, parser venvs, clusters) are built once; the execution
tier's files run like any other (at most one cluster per worker, each with its own loopback /24
and budgets stretched by the starts measured in the same run: tests/execution/kubelet.py), so the
waits of one shape (drains, grace periods, restarts) overlap the other worker's tests.
``pytest -n 0`` runs everything in one process. (Not ``--dist loadgroup``: pytest-xdist 3.8
writes the group into ``item._nodeid``, which pytest 9.2 no longer reads, so the marks group
nothing: pytest-dev/pytest-xdist#1386, fix proposed in pytest-dev/pytest-xdist#1388.)

The execution tier's summary (each shape, its measured facts and its tests' outcomes) is written
here, in the process that prints the session's summary: a shape module's ``SHAPE`` and each fact
a test records (``tests/execution/conftest.py`` ``fact``) travel as user properties of the test
reports, which pytest-xdist sends from its workers to the controller (which loads no conftest
below ``tests/``).

The order the workers take the files in: pytest-xdist hands each worker the next file of the
collection when it has at most 2 tests left (pytest-xdist 3.8 ``xdist/scheduler/loadscope.py``,
``_reschedule``), so a file that starts late ends late. Its own order (``--loadscope-reorder``, the
default) puts the files with the most tests first, which put the execution tier's long files (2 to
6 tests, minutes each) near the end of the queue (55th to 68th of 75 files at stop 37): a worker
that takes one of them last runs alone until it ends.
The conformance files (1 to 4 tests, minutes each) were at the end likewise. pyproject.toml turns
that off (``--no-loadscope-reorder``) and ``order_files`` below starts the long files first,
longest first, then every other file as pytest-xdist would have ordered it (most tests first), so
the end of the run is made of short files."""

from __future__ import annotations


#: per execution-tier module (its ``SHAPE`` title): test outcomes, and facts its tests recorded
_shapes: dict[str, str] = {}
_outcomes: dict[str, list[str]] = {}
_facts: dict[str, list[str]] = {}


#: The files that start first, longest first: the execution tier's engine files and the
#: conformance files (1 to 6 tests each, every test minutes long: real engines started, or the
#: engines venv's vLLM/SGLang imported in subprocesses). Seconds each took on this 2-core machine
#: at load 6-28 (tier: ``pytest tests/execution -n 0``; the rest: ``pytest -m "not execution"``
#: on 2 workers): conformance_targets 817, conformance_vllm 769, pd 745, rollout 599,
#: conformance_engine_config 471, unified 386, parsers_selfcheck 330, dp_group 307,
#: conformance_rollout 176; the next file, test_targets.py, 295 s over 79 tests. Only the order
#: matters; a file missing here goes with the rest.
LONGEST_FIRST = ("tests/test_conformance_targets.py", "tests/test_conformance_vllm.py",
                 "tests/execution/test_pd.py", "tests/execution/test_rollout.py",
                 "tests/test_conformance_engine_config.py", "tests/execution/test_unified.py",
                 "tests/conformance/test_parsers_selfcheck.py", "tests/execution/test_dp_group.py",
                 "tests/test_conformance_rollout.py")


def order_files(nodeids: list[str]) -> list[str]:
    """The test files of ``nodeids`` in the order the workers should take them: those of
    ``LONGEST_FIRST`` in that order, then the others by number of tests, most first, ties in
    collection order (what pytest-xdist's ``--loadscope-reorder`` does). Tests keep their order
    within a file."""
    counts: dict[str, int] = {}
    for nodeid in nodeids:
        path = nodeid.split("::")[0]
        counts[path] = counts.get(path, 0) + 1
    first = [f for f in LONGEST_FIRST if f in counts]
    rest = sorted((f for f in counts if f not in LONGEST_FIRST), key=lambda f: -counts[f])
    return first + rest


def pytest_collection_modifyitems(items):
    rank = {f: i for i, f in enumerate(order_files([item.nodeid for item in items]))}
    items.sort(key=lambda item: rank[item.nodeid.split("::")[0]])   # stable: order within a file kept
    for item in items:
        shape = getattr(getattr(item, "module", None), "SHAPE", None)
        if shape and item.nodeid.startswith("tests/execution/"):
            _shapes[item.nodeid.split("::")[0]] = shape
            # carried by every report of the item, so that the controller, which collects
            # nothing under pytest-xdist, writes the summary from the workers' reports
            item.user_properties.append(("execution-shape", shape))


def pytest_runtest_logreport(report):
    module = report.nodeid.split("::")[0]
    props = getattr(report, "user_properties", None) or []
    for key, value in props:
        if key == "execution-shape":
            _shapes[module] = value
        elif key == "execution-fact" and value not in _facts.setdefault(module, []):
            _facts[module].append(value)
    if module not in _shapes or (report.when != "call" and report.outcome == "passed"):
        return
    test = report.nodeid.split("::")[-1]
    if hasattr(report, "wasxfail"):
        what = f"xfail ({report.wasxfail})" if report.skipped else \
            "XPASS: serves on this machine (the expected crash did not happen)"
    elif report.skipped:
        what = "not run: " + str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
    else:
        what = report.outcome
    _outcomes.setdefault(module, []).append(f"{test}: {what}")


def pytest_terminal_summary(terminalreporter):
    if not _shapes:
        return
    terminalreporter.section("execution tier: rendered pods run with the real engine and router on CPU")
    for module, shape in _shapes.items():
        lines = _outcomes.get(module, [])
        if not lines:
            status = "not run (deselected)"
        elif any(": failed" in x or "-> failed" in x for x in lines):
            status = "FAILED"
        elif all(": not run" in x for x in lines):
            status = "NOT RUN"
        else:
            status = "ran"
        terminalreporter.write_line(f"{shape}: {status}")
        for line in _facts.get(module, []) + lines:
            terminalreporter.write_line(f"    {line}")
