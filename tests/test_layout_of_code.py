"""The shape of the code (issue #22): no import circle anywhere in ``generator/`` (between
modules, and between its top-level packages/modules), no module over 600 lines, no function over
120 lines; and (issue #35) a room (top-level package or module) imports only rooms above it in
the table of AGENTS.md ("Where things are", its module column) or in its own row. Imports are
read from the source (every ``import``, including those inside functions and under
``TYPE_CHECKING``: a type-only import is still an edge of the design).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from tests.helpers import ROOT

PACKAGE = ROOT / "generator"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 120


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The generator modules ``name`` imports (``from x import y`` counts y when y is a
    module, else x)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in MODULES}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                if f"{mod}.{a.name}" in MODULES:
                    found.add(f"{mod}.{a.name}")
                elif mod in MODULES:
                    found.add(mod)
    return found - {name}


def _graph() -> dict[str, set[str]]:
    return {name: _imports(name, path) for name, path in MODULES.items()}


def _room(module: str) -> str:
    """The top-level package or module of ``generator`` a module belongs to."""
    return ".".join(module.split(".")[:2])


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_between_modules():
    assert _cycles(_graph()) == []


def test_no_import_circle_between_rooms():
    rooms: dict[str, set[str]] = defaultdict(set)
    for a, targets in _graph().items():
        for b in targets:
            if _room(a) != _room(b) and _room(b) != "generator":
                rooms[_room(a)].add(_room(b))
    assert _cycles(rooms) == []


def test_the_cycle_finder_finds_a_cycle():
    # The checks above cannot pass by a broken finder: a known circle is found.
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_import_reader_sees_relative_and_function_imports(tmp_path):
    # The deployment model imports the prediction and the engine registry at module level.
    deps = _imports("generator.deployment", MODULES["generator.deployment"])
    assert {"generator.perf.predict", "generator.engines.registry"} <= deps
    # pipeline.render imports the targets inside the function.
    assert "generator.targets" in _imports("generator.pipeline", MODULES["generator.pipeline"])


def _table_rows(agents: str) -> dict[str, int]:
    """Room -> the row (0-based) of AGENTS.md's "Where things are" table whose module column
    first names it (``generator/spec/load.py`` and ``generator/spec/`` both name generator.spec)."""
    section = agents.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| step ")]
    out: dict[str, int] = {}
    for n, line in enumerate(rows):
        module_column = line.strip().strip("|").split("|")[1]
        for path in re.findall(r"`(generator/[^`]*)`", module_column):
            parts = path.rstrip("/").removesuffix(".py").split("/")
            out.setdefault(".".join(parts[:2]), n)
    return out


def _upward(graph: dict[str, set[str]], rows: dict[str, int]) -> list[str]:
    """Every import of a room further down the table than the importing room's row."""
    out = []
    for a, targets in sorted(graph.items()):
        for b in sorted(targets):
            ra, rb = _room(a), _room(b)
            if "generator" in (ra, rb) or ra == rb:
                continue   # the package's own __init__ re-exports lazily; a room's own modules
            if rows.get(rb, -1) > rows.get(ra, -1):
                out.append(f"{a} imports {b}: {ra} (row {rows.get(ra)}) is above {rb} "
                           f"(row {rows[rb]})")
    return out


ROWS = _table_rows((ROOT / "AGENTS.md").read_text())


def test_every_room_has_a_row_of_the_table():
    rooms = {_room(m) for m in MODULES} - {"generator"}
    assert sorted(rooms - ROWS.keys()) == [], "rooms AGENTS.md's table does not name"
    assert sorted(ROWS.keys() - rooms) == [], "rows of AGENTS.md's table naming no module"


def test_rooms_import_only_rooms_above_them():
    assert _upward(_graph(), ROWS) == []


def test_the_order_check_finds_a_wrong_direction_import():
    # The check above cannot pass by a broken reader: a table of three rows is read in order
    # (the spec's two rows count as its first), and the spec importing the CLI, a room further
    # down, is reported; the CLI importing the spec and __main__ importing the CLI (its own
    # row) are allowed.
    rows = _table_rows("## Where things are\n\n| step | module | job |\n|---|---|---|\n"
                       "| read | `generator/spec/load.py` | x |\n"
                       "| structure | `generator/spec/` | y |\n"
                       "| command line | `generator/cli.py`, `generator/__main__.py` | z |\n\n## Rules")
    assert rows == {"generator.spec": 0, "generator.cli": 2, "generator.__main__": 2}
    graph = {"generator.spec.models": {"generator.cli"}, "generator.cli": {"generator.spec.load"},
             "generator.__main__": {"generator.cli"}}
    assert _upward(graph, rows) == [
        "generator.spec.models imports generator.cli: generator.spec (row 0) is above "
        "generator.cli (row 2)"]
    # The real table puts the spec above the command line.
    assert ROWS["generator.spec"] < ROWS["generator.cli"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_and_function_sizes(name):
    path = MODULES[name]
    text = path.read_text()
    lines = text.count("\n")
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(ROOT)}: {lines} lines"
    long = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(ast.parse(text))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{path.relative_to(ROOT)}: functions over {MAX_FUNCTION_LINES} lines: {long}"
