"""The Argo CD health check of LeaderWorkerSets (generator/manifests/data/
leaderworkerset-health.lua): run in a real Lua interpreter (lupa) on sample statuses, and kept
identical in docs/argocd.md."""

from __future__ import annotations

import pytest

from tests.helpers import ROOT

lupa = pytest.importorskip("lupa", reason="lupa (a Lua runtime) is a test dependency")

LUA = (ROOT / "generator" / "manifests" / "data" / "leaderworkerset-health.lua").read_text()
DS_LUA = (ROOT / "generator" / "manifests" / "data" / "disaggregatedset-health.lua").read_text()


def _health(obj: dict, script: str = LUA) -> tuple[str, str]:
    lua = lupa.LuaRuntime(unpack_returned_tuples=True)

    def table(value):
        if isinstance(value, dict):
            return lua.table_from({k: table(v) for k, v in value.items()})
        if isinstance(value, list):
            return lua.table_from([table(v) for v in value])
        return value

    run = lua.eval("function(obj) " + script + " end")
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


@pytest.mark.parametrize("script", [LUA, DS_LUA], ids=["lws", "disaggregatedset"])
def test_docs_carry_the_same_lua(script):
    doc = (ROOT / "docs" / "argocd.md").read_text()
    indented = "".join("    " + line if line.strip() else line for line in script.splitlines(True))
    assert indented in doc


def _ds(generation=2, observed=2, roles=(("prefill", 1, 1, 1), ("decode", 2, 2, 2)),
        conditions=(("Available", "True"),)):
    return {"metadata": {"generation": generation},
            "spec": {"roles": [{"name": r[0]} for r in roles]},
            "status": {"observedGeneration": observed,
                       "roleStatuses": [{"name": n, "replicas": want, "readyReplicas": ready,
                                         "updatedReplicas": updated}
                                        for n, want, ready, updated in roles],
                       "conditions": [{"type": t, "status": s, "message": f"{t} says so"}
                                      for t, s in conditions]}}


@pytest.mark.parametrize("obj,status,text", [
    ({"metadata": {"generation": 1}, "spec": {"roles": []}}, "Progressing", "controller"),
    (_ds(observed=1), "Progressing", "generation 2"),
    (_ds(roles=(("prefill", 1, 1, 1),)) | {"spec": {"roles": [{"name": "prefill"},
                                                               {"name": "decode"}]}},
     "Progressing", "Waiting for role decode"),
    (_ds(roles=(("prefill", 1, 1, 1), ("decode", 2, 2, 1))), "Progressing",
     "decode: 1 of 2 groups updated"),
    (_ds(roles=(("prefill", 1, 0, 1), ("decode", 2, 2, 2))), "Progressing",
     "prefill: 0 of 1 groups ready"),
    (_ds(conditions=(("Available", "True"), ("Progressing", "True"))), "Progressing",
     "Progressing says so"),
    (_ds(conditions=()), "Progressing", "Available"),
    (_ds(conditions=(("Degraded", "True"),)), "Degraded", "Degraded says so"),
    (_ds(), "Healthy", "All roles"),
])
def test_disaggregatedset_health_on_sample_statuses(obj, status, text):
    got_status, message = _health(obj, DS_LUA)
    assert got_status == status and text in message
