"""The platform controllers' releases and what each injects (``spec.target``, docs/spec.md §6.3).

The facts are read from each controller's tagged source by ``tools/extract_controllers.py``
into ``generator/facts/data/controllers.json`` (every fact: ``{"value": ..., "source":
"repo@tag:path:line"}``; ``tests/test_data_drift.py`` checks the file against the source).
moegen knows the releases listed there; another release is refused (rule TGT001) rather than
guessed: what a controller injects changes between releases (KServe's presets, Dynamo's
operator flags).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from ..resources import package_text


@cache
def _data() -> dict:
    return json.loads(package_text("facts", "data", "controllers.json"))["targets"]


def releases(target: str) -> list[str]:
    """The releases moegen knows of ``target`` (``kserve``, ``rbg``, ``dynamo``, ``aibrix``),
    oldest first; empty for a target without a controller (``kubernetes``)."""
    data = _data().get(target)
    return list(data["releases"]) if data else []


def newest(target: str) -> str | None:
    """The release ``spec.target.version`` defaults to (the last known)."""
    known = releases(target)
    return known[-1] if known else None


def normalise(target: str, version: str | None) -> str | None:
    """The known release ``version`` names (``0.20.0`` and ``v0.20.0`` name the same KServe
    release), the newest when ``version`` is None, or None when moegen does not know it."""
    known = releases(target)
    if version is None:
        return known[-1] if known else None
    bare = version.removeprefix("v")
    return next((r for r in known if r.removeprefix("v") == bare), None)


def facts(target: str, release: str) -> dict[str, Any]:
    """Every fact of one known release (raises KeyError for an unknown one)."""
    return _data()[target]["releases"][release]


def value(target: str, release: str, *path: str) -> Any:
    """The value of the fact at ``path`` (e.g. ``("env", "workerIndex")``)."""
    node = facts(target, release)
    for key in path:
        node = node[key]
    return node["value"] if isinstance(node, dict) and "value" in node else node


def source(target: str, release: str, *path: str) -> str:
    """Where the fact at ``path`` comes from (``repo@tag:path:line``)."""
    node = facts(target, release)
    for key in path:
        node = node[key]
    return node["source"]
