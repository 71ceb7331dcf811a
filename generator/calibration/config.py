"""Where a calibration holds: the configuration a benchmark run was measured on.

Light on purpose (no performance model): the rendered bench Job stores :func:`configuration`'s
``key`` with each run (generator/manifests/bench.py), ``gen calibrate`` skips runs of another key
(CAL005), and a profile is applied only where :func:`differences` finds nothing (CAL001).
"""

from __future__ import annotations

import hashlib
import json

from ..spec.models import InferenceDeployment


def configuration(doc: InferenceDeployment) -> dict:
    """Where a profile holds: the model and checkpoint, the engine release, and per role its
    mode, GPU, node shape, replicas, parallel layout and draft tokens; ``key``: a hash of the
    rest (what the bench Job stores with each run)."""
    s = doc.spec
    conf = {
        "model": {"architecture": s.model.architecture or s.model.name,
                  "weights": s.model.weights},
        "engine": {"name": s.engine.name, "version": s.engine.version},
        "roles": [{"name": r.name, "mode": r.mode, "gpu": s.nodePools[r.nodePool].gpu,
                   "gpusPerNode": s.nodePools[r.nodePool].gpusPerNode, "replicas": r.replicas,
                   "parallel": r.parallel.model_dump(mode="json", exclude_none=True),
                   "draftTokens": r.speculative.numSpeculativeTokens if r.speculative else 0}
                  for r in s.roles],
    }
    text = json.dumps(conf, sort_keys=True, separators=(",", ":"))
    return {"key": hashlib.sha256(text.encode()).hexdigest()[:12], **conf}


def differences(measured_on: dict, here: dict) -> list[str]:
    """What differs between two :func:`configuration` results, in words ([] when none)."""
    out = []
    a, b = measured_on.get("model", {}), here["model"]
    if a != b:
        out.append(f"model {b['architecture']} {b['weights']}, not {a.get('architecture')} "
                   f"{a.get('weights')}")
    a, b = measured_on.get("engine", {}), here["engine"]
    if a != b:
        out.append(f"engine {b['name']} {b['version']}, not {a.get('name')} {a.get('version')}")
    theirs = measured_on.get("roles", [])
    gpus = (sorted({r["gpu"] for r in here["roles"]}), sorted({r.get("gpu") for r in theirs}))
    if gpus[0] != gpus[1]:
        out.append(f"GPU {', '.join(gpus[0])}, not {', '.join(map(str, gpus[1]))}")
    if _shape(here["roles"]) != _shape(theirs):
        out.append("layout " + _layout(here["roles"]) + ", not " + _layout(theirs))
    return out


def _layout(roles: list[dict]) -> str:
    def one(r: dict) -> str:
        p = r.get("parallel", {})
        ep = " EP" if p.get("expert") else ""
        return (f"{r.get('mode')} {r.get('replicas')}x TP{p.get('tensor')} DP{p.get('data')} "
                f"PP{p.get('pipeline', 1)}{ep} on {r.get('gpusPerNode')}/node"
                + (f" +{r['draftTokens']} draft" if r.get("draftTokens") else ""))
    return "; ".join(one(r) for r in roles) or "(none)"


def _shape(roles: list[dict]) -> list[dict]:
    """The roles' layout without names and GPUs, in mode order (a plan's roles have no names)."""
    return sorted(({k: v for k, v in r.items() if k not in ("name", "gpu")} for r in roles),
                  key=lambda r: str(r.get("mode")))


def request_configuration(req, roles: list[dict]) -> dict:
    """:func:`configuration` of a PlanRequest's candidate (``roles``: the candidate's role
    JSON, or the request's fixed roles), the key left out."""
    s = req.spec
    draft = s.speculative.numSpeculativeTokens if s.speculative else 0
    out = []
    for r in roles:
        pool = s.nodePools[r["nodePool"]]
        spec_tokens = (r.get("speculative") or {}).get("numSpeculativeTokens")
        out.append({"name": r.get("name", r["mode"]), "mode": r["mode"], "gpu": pool.gpu,
                    "gpusPerNode": pool.gpusPerNode, "replicas": r["replicas"],
                    "parallel": {k: v for k, v in r["parallel"].items() if v is not None},
                    "draftTokens": spec_tokens if spec_tokens is not None
                    else (draft if r["mode"] != "prefill" else 0)})
    return {"model": {"architecture": s.model.architecture, "weights": s.model.weights},
            "engine": {"name": s.engine.name, "version": s.engine.version}, "roles": out}
