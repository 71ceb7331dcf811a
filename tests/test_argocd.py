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
    status = {"observedGeneration": observed, "replicas": replicas, "readyReplicas": ready,
              "updatedReplicas": updated, "conditions": list(conditions)}
    if observed is None:   # LWS v0.3-v0.8 write no observedGeneration (lws#807 added it, v0.9.0)
        del status["observedGeneration"]
    return {"metadata": {"generation": generation}, "spec": {"replicas": replicas},
            "status": status}


@pytest.mark.parametrize("obj,status,text", [
    ({"metadata": {"generation": 1}, "spec": {"replicas": 1}}, "Progressing", "controller"),
    (_lws(observed=1), "Progressing", "generation 2"),
    (_lws(ready=1), "Progressing", "1 of 2 groups ready"),
    (_lws(updated=1, conditions=[{"type": "UpdateInProgress", "status": "True"}]),
     "Progressing", "Rolling update: 1 of 2"),
    (_lws(updated=1), "Progressing", "1 of 2 groups updated"),
    (_lws(conditions=[{"type": "Available", "status": "True"}]), "Healthy", "2 of 2 groups ready"),
    # LWS v0.8 status (no observedGeneration): healthy once every group is updated and ready,
    # progressing while one is not (issue #20 item 2: it stayed Progressing forever).
    (_lws(observed=None, conditions=[{"type": "Available", "status": "True"}]), "Healthy",
     "2 of 2 groups ready"),
    (_lws(observed=None, ready=1), "Progressing", "1 of 2 groups ready"),
    (_lws(observed=None, updated=1), "Progressing", "1 of 2 groups updated"),
    # Not ready says it may be failing: the status cannot tell a crash loop from loading.
    (_lws(ready=0), "Progressing", "or failing"),
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
        conditions=(("Available", "True"),), slices=None):
    """A DisaggregatedSet with (name, replicas, ready, updated) per role: the spec wants
    ``replicas`` groups per slice and the status reports ``replicas`` groups in all."""
    spec = {"roles": [{"name": r[0], "spec": {"replicas": r[1]}} for r in roles]}
    if slices is not None:
        spec["slices"] = slices
    status = {"observedGeneration": observed,
              "roleStatuses": [{"name": n, "replicas": want, "readyReplicas": ready,
                                "updatedReplicas": updated}
                               for n, want, ready, updated in roles]}
    if conditions:
        status["conditions"] = [{"type": t, "status": s, "message": f"{t} says so"}
                                for t, s in conditions]
    return {"metadata": {"generation": generation}, "spec": spec, "status": status}


def _role_status(obj: dict, name: str, **fields) -> dict:
    """``obj`` with role ``name``'s status entry changed."""
    for r in obj["status"]["roleStatuses"]:
        if r["name"] == name:
            r.update(fields)
    return obj


# LWS v0.9: no status at all (lws#868); v0.10: observedGeneration and roleStatuses (lws#933);
# later releases: the Available/Progressing conditions too (lws#980).
V09 = {"metadata": {"generation": 1},
       "spec": {"roles": [{"name": "prefill", "spec": {"replicas": 1}},
                          {"name": "decode", "spec": {"replicas": 2}}]}}


@pytest.mark.parametrize("obj,status,text", [
    (V09, "Healthy", "reports no status (LWS < 0.10)"),
    (V09 | {"status": {}}, "Healthy", "reports no status (LWS < 0.10)"),
    (_ds(observed=1), "Progressing", "generation 2"),
    (_ds(observed=1, conditions=()), "Progressing", "generation 2"),
    # v0.10: no conditions, judged by the role counts against spec.roles[].spec.replicas
    (_ds(conditions=()), "Healthy", "All roles"),
    (_ds(roles=(("prefill", 1, 1, 1),), conditions=()) | {"spec": {"roles": [
        {"name": "prefill", "spec": {"replicas": 1}}, {"name": "decode"}]}},
     "Progressing", "Waiting for role decode"),
    (_ds(roles=(("prefill", 1, 1, 1), ("decode", 2, 2, 1)), conditions=()), "Progressing",
     "decode: 1 of 2 groups updated"),
    (_ds(roles=(("prefill", 1, 0, 1), ("decode", 2, 2, 2)), conditions=()), "Progressing",
     "prefill: 0 of 1 groups ready"),
    # a rolling update: 2 new groups ready, 1 old still draining
    (_role_status(_ds(conditions=()), "decode", replicas=3), "Progressing",
     "decode: 1 groups of an older revision left"),
    # counts consistent but below what the spec wants (the controller is still scaling up)
    (_role_status(_ds(conditions=()), "decode", replicas=1, readyReplicas=1,
                  updatedReplicas=1), "Progressing", "decode: 1 of 2 groups updated"),
    # 2 slices: every role wants twice its per-slice replicas
    (_ds(conditions=(), slices=2), "Progressing", "prefill: 1 of 2 groups updated"),
    # all roles paused at replicas 0 (the controller omits zero counts: omitempty)
    (_ds(roles=(("prefill", 0, 0, 0), ("decode", 0, 0, 0)), conditions=()), "Healthy",
     "All roles"),
    ({"metadata": {"generation": 2},
      "spec": {"roles": [{"name": "prefill", "spec": {"replicas": 0}}]},
      "status": {"observedGeneration": 2, "roleStatuses": [{"name": "prefill"}]}}, "Healthy",
     "All roles"),
    # with conditions: Available decides
    (_ds(conditions=(("Available", "False"), ("Progressing", "True"))), "Progressing",
     "Progressing says so"),
    (_ds(conditions=(("Available", "False"),)), "Progressing", "Available says so"),
    # the controller's Available stands for the counts
    (_ds(roles=(("prefill", 1, 0, 1), ("decode", 2, 2, 2))), "Healthy", "Available"),
    (_ds(conditions=(("Degraded", "True"),)), "Degraded", "Degraded says so"),
    (_ds(), "Healthy", "All roles"),
])
def test_disaggregatedset_health_on_sample_statuses(obj, status, text):
    got_status, message = _health(obj, DS_LUA)
    assert got_status == status and text in message, (got_status, message)
