"""``gen rules`` shows the module that defines each entry of the catalogue (issue #35 item 4):
the rule function's file and the line of its ``@rule`` decorator, or, for a code raised outside
the rule functions (listed in ``generator/checks/codes.py``), the modules that raise it."""

from __future__ import annotations

import json

import pytest

from generator.cli import run
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def catalogue() -> list[dict]:
    from generator.output.catalogue import catalogue as text_of
    return json.loads(text_of("json"))


def _decorator_line(path: str, code: str) -> int:
    """The line of ``@rule("CODE"`` in ``path``, read from the file."""
    lines = (ROOT / path).read_text().splitlines()
    hits = [n for n, line in enumerate(lines, 1) if line.startswith(f'@rule("{code}"')]
    assert len(hits) == 1, (path, code, hits)
    return hits[0]


def test_a_rule_function_is_located_at_its_decorator(catalogue):
    by_code = {r["code"]: r for r in catalogue}
    net003 = by_code["NET003"]
    assert (net003["module"], net003["raisedIn"]) == ("generator/checks/network.py", [])
    assert net003["line"] == _decorator_line("generator/checks/network.py", "NET003")


def test_every_rule_function_sits_at_its_line_in_a_family_module(catalogue):
    for r in catalogue:
        if r["line"] is None:
            continue
        assert r["module"].startswith("generator/checks/"), r
        assert r["line"] == _decorator_line(r["module"], r["code"])


def test_a_code_raised_outside_the_rules_names_the_modules_that_raise_it(catalogue):
    by_code = {r["code"]: r for r in catalogue}
    # LOAD004 (one document per spec file): the reader and the multi-input reader raise it.
    assert by_code["LOAD004"]["module"] == "generator/checks/codes.py"
    assert by_code["LOAD004"]["line"] is None
    assert by_code["LOAD004"]["raisedIn"] == ["generator/inputs.py", "generator/spec/load.py"]
    # A catalogued code that no module raises would be stale.
    assert [r["code"] for r in catalogue if r["line"] is None and not r["raisedIn"]] == []


def test_gen_rules_text_shows_the_module(capsys):
    assert run(["rules"]) == 0
    out = capsys.readouterr().out
    block = out.split("\nNET003 ", 1)[1].split("\nNET004 ", 1)[0]
    line = _decorator_line("generator/checks/network.py", "NET003")
    assert f"module: generator/checks/network.py:{line}" in block.splitlines()[-1]
    block = out.split("\nLOAD004 ", 1)[1].split("\nLOAD005 ", 1)[0]
    assert "module: generator/checks/codes.py (raised in generator/inputs.py, " \
           "generator/spec/load.py)" in block
