"""The Argo CD health check of LeaderWorkerSets (generator/manifests/data/
leaderworkerset-health.lua): run in a real Lua interpreter (lupa) on sample statuses, and kept
identical in docs/argocd.md."""

from __future__ import annotations

import pytest

from tests.helpers import ROOT

lupa = pytest.importorskip("lupa", reason="lupa (a Lua runtime) is a test dependency")

LUA = (ROOT / "generator" / "manifests" / "data" / "leaderworkerset-health.lua").read_text()


def _health(obj: dict) -> tuple[str, str]:
    lua = lupa.LuaRuntime(unpack_returned_tuples=True)

    def table(value):
        if isinstance(value, dict):
            return lua.table_from({k: table(v) for k, v in value.items()})
        if isinstance(value, list):
            return lua.table_from([table(v) for v in value])
        return value

    run = lua.eval("function(obj) " + LUA + " end")
    hs = run(table(obj))
    return hs["status"], hs["message"]


def _lws(generation=2, observed=2, replicas=2, ready=2, updated=2, conditions=()):
    return {"metadata": {"generation": generation}, "spec": {"replicas": replicas},
            "status": {"observedGeneration": observed, "replicas": replicas,
                       "readyReplicas": ready, "updatedReplicas": updated,
                       "conditions": list(conditions)}}


@pytest.mark.parametrize("obj,status,text", [
    ({"metadata": {"generation": 1}, "spec": {"replicas": 1}}, "Progressing", "controller"),
    (_lws(observed=1), "Progressing", "generation 2"),
    (_lws(ready=1), "Progressing", "1 of 2 groups ready"),
    (_lws(updated=1, conditions=[{"type": "UpdateInProgress", "status": "True"}]),
     "Progressing", "Rolling update: 1 of 2"),
    (_lws(updated=1), "Progressing", "1 of 2 groups updated"),
    (_lws(conditions=[{"type": "Available", "status": "True"}]), "Healthy", "2 of 2 groups ready"),
])
def test_health_on_sample_statuses(obj, status, text):
    got_status, message = _health(obj)
    assert got_status == status and text in message


def test_docs_carry_the_same_lua():
    doc = (ROOT / "docs" / "argocd.md").read_text()
    indented = "".join("    " + line if line.strip() else line for line in LUA.splitlines(True))
    assert indented in doc
