"""The planner against published deployments: each case of ``bench/published_cases.yaml`` is a
PlanRequest with fixed roles (docs/spec.md §5.1) and the figure its deployment published;
moegen's prediction for that figure, the ratio, the median |ratio - 1| and the worst ratio.

    python bench/planner_residuals.py
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.capacity import plan
from generator.spec.request import PlanRequest

CASES = ROOT / "bench" / "published_cases.yaml"


def _merge(base: dict, update: dict) -> dict:
    out = dict(base)
    for k, v in update.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def requests() -> list[tuple[dict, PlanRequest]]:
    """(case, PlanRequest) of every published case."""
    out = []
    for case in yaml.safe_load(CASES.read_text())["cases"]:
        spec = _merge(case["request"], case.get("request_update") or {})
        req = PlanRequest.model_validate({"apiVersion": "moegen.dev/v1alpha1",
                                          "kind": "PlanRequest",
                                          "metadata": {"name": "published"}, "spec": spec})
        out.append((case, req))
    return out


def residuals() -> list[dict]:
    """Per case: id, published value, predicted value (None when the layout does not fit)."""
    rows = []
    for case, req in requests():
        m = case["metric"]
        result = plan(req)
        cand = result.candidates[0] if result.candidates else None
        if m.get("role"):
            doc = next((r for r in (cand.roles if cand else []) if r.get("name") == m["role"]), {})
        else:   # a figure of the whole deployment (docs/spec.md §5 candidate fields)
            doc = cand.to_json() if cand else {}
        got = doc.get(m["field"]) if cand and cand.fits else None
        rows.append({"id": case["id"], "published": m["value"], "predicted": got,
                     "ratio": got / m["value"] if got else None,
                     "note": result.bound if got is None else ""})
    return rows


def main() -> int:
    rows = residuals()
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if r["ratio"] else "  - "
        got = f"{r['predicted']:>10,}" if r["predicted"] else "       n/a"
        print(f"{r['id']:<40} published {r['published']:>9,}  predicted {got}  ratio {ratio}"
              f"  {r['note']}")
    ratios = [r["ratio"] for r in rows if r["ratio"]]
    if ratios:
        errors = [abs(x - 1) for x in ratios]
        worst = max(ratios, key=lambda x: max(x, 1 / x))
        print(f"\n{len(ratios)} of {len(rows)} cases: median |ratio - 1| "
              f"{statistics.median(errors):.0%}, worst ratio {worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
