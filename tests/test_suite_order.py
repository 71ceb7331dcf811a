"""The order the pytest-xdist workers take the test files in (tests/conftest.py ``order_files``)."""

from __future__ import annotations

import tomllib

from tests.conftest import LONGEST_FIRST, order_files
from tests.helpers import ROOT


def test_long_files_first_longest_first_then_most_tests_first():
    ids = ["tests/a.py::t1",
           "tests/execution/test_unified.py::u1",
           "tests/b.py::t1", "tests/b.py::t2",
           "tests/execution/test_kubelet.py::k1",
           "tests/execution/test_dp_group.py::d1", "tests/execution/test_dp_group.py::d2",
           "tests/c.py::t1"]
    # unified (386 s) then dp_group (307 s), in LONGEST_FIRST's order (the other long files are
    # not collected here), then b (2 tests), then a, test_kubelet, c (1 test each, in collection
    # order)
    assert order_files(ids) == ["tests/execution/test_unified.py", "tests/execution/test_dp_group.py",
                                "tests/b.py", "tests/a.py", "tests/execution/test_kubelet.py",
                                "tests/c.py"]


def test_the_listed_files_exist_and_xdist_keeps_the_order():
    assert all((ROOT / f).is_file() for f in LONGEST_FIRST)
    # without --no-loadscope-reorder, pytest-xdist re-sorts the files by number of tests
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "--dist loadfile" in addopts and "--no-loadscope-reorder" in addopts.split()
