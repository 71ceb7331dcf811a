"""The planner against published deployments, per regime.

Each case of ``bench/published_cases.yaml`` is a PlanRequest with fixed roles (docs/spec.md
§5.1), the figure its deployment published (with its source address and configuration), and
whether the figure is a development figure (constants of generator/perf/terms.py are fitted
to it) or held out (never fitted). moegen's prediction of that figure, the ratio predicted /
published, and the regime (generator/perf/regimes.py) it falls in; per regime and split:
n, median and worst error factor max(ratio, 1 / ratio).

A case may carry ``excluded: "<why>"`` (with ``trust: low`` where the figure itself is
suspect): a figure that is internally inconsistent (a TTFT median that falls as concurrency
rises in the same sweep; warm-up in a concurrency-1 TTFT) or one of a configuration the model
has no term for. It is still predicted and listed, but counted apart (``excluded``), not in n,
median or worst, and bench/fit_constants.py never fits it.

    python bench/planner_residuals.py            # the table
    python bench/planner_residuals.py --write    # and write generator/perf/data/regime-errors.json
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.capacity import plan
from generator.catalog import GPUS, builtin_arch
from generator.perf.regimes import ERRORS_FILE, REGIMES, classify, kind_of, sparse_attention
from generator.spec.request import PlanRequest

CASES = ROOT / "bench" / "published_cases.yaml"
#: Development set 4 (issue 32), read beside the checkout, never copied into the repository:
#: its performance figures become cases here (:func:`dev4_cases`).
DEV4 = ROOT.parent / "shared" / "reference" / "published-dev-4.yaml"
SPLITS = ("dev", "held-out")
#: published-dev-4 figure keys -> (the candidate's JSON field, the figure is per GPU).
DEV4_FIGURES = {"tpot_ms": ("tpotMs", False), "ttft_ms": ("ttftMs", False),
                "out_tok_s_gpu": ("outputTokensPerSec", True),
                "tot_tok_s_gpu": ("totalTokensPerSec", True)}


def _merge(base: dict, update: dict) -> dict:
    out = dict(base)
    for k, v in update.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def source_of(case: dict) -> str:
    """The publication a case's figure comes from (the unit cross-validation leaves out): its
    address without a fragment, else its source text up to the first parenthesis."""
    url = case.get("url")
    if url:
        return url.split("#", 1)[0]
    return case["source"].split(" (", 1)[0].strip()


def dev4_cases(path: Path = DEV4, updates: dict | None = None) -> list[dict]:
    """The performance figures of ``published-dev-4.yaml`` as cases (one per figure: id
    ``<entry>:<key>``, split dev, the entry's PlanRequest body with ``updates[<entry>]``
    merged: the launch flags the entry's request leaves out, bench/published_cases.yaml
    ``dev4``); [] when the file is not beside the checkout."""
    if not path.exists():
        return []
    out = []
    for entry in yaml.safe_load(path.read_text())["performance"]:
        upd = (updates or {}).get(entry["id"], {})
        for key, value in entry["published"].items():
            field, per_gpu = DEV4_FIGURES[key]
            out.append({"id": f"{entry['id']}:{key}", "split": "dev",
                        "source": entry["source"], "config": entry.get("config", ""),
                        "metric": {"field": field, "value": value, "perGpu": per_gpu,
                                   "stat": "mean"},
                        "request": entry["request"],
                        "request_update": upd.get("request_update"),
                        "assumes": upd.get("assumes", "")})
    return out


def requests() -> list[tuple[dict, PlanRequest]]:
    """(case, PlanRequest) of every published case: bench/published_cases.yaml, then the
    figures of published-dev-4.yaml (:func:`dev4_cases`)."""
    out = []
    doc = yaml.safe_load(CASES.read_text())
    for case in doc["cases"] + dev4_cases(updates=doc.get("dev4")):
        spec = _merge(case["request"], case.get("request_update") or {})
        req = PlanRequest.model_validate({"apiVersion": "moegen.dev/v1alpha1",
                                          "kind": "PlanRequest",
                                          "metadata": {"name": "published"}, "spec": spec})
        out.append((case, req))
    return out


def case_regime(case: dict, req: PlanRequest) -> str:
    """The regime of a case's figure (generator/perf/regimes.py ``classify``)."""
    m = case["metric"]
    roles = req.spec.roles or []
    unified = any(r.mode == "unified" for r in roles)
    decoding = next((r for r in roles if r.mode != "prefill"), roles[0])
    gpu = GPUS[req.spec.nodePools[decoding.nodePool].gpu]
    kind = kind_of(m["field"], unified=unified, role_level=bool(m.get("role")))
    return classify(kind, unified=unified, data=decoding.parallel.data, vendor=gpu.vendor,
                    sparse=sparse_attention(builtin_arch(req.spec.model.architecture)))


def residuals(ids=None) -> list[dict]:
    """Per case (those in ``ids`` if given): id, split, regime, published value, predicted
    value (None when the layout does not fit, with the reason in ``note``) and ratio."""
    rows = []
    for case, req in requests():
        if ids is not None and case["id"] not in ids:
            continue
        m = case["metric"]
        result = plan(req)
        cand = result.candidates[0] if result.candidates else None
        if m.get("role"):
            doc = next((r for r in (cand.roles if cand else []) if r.get("name") == m["role"]), {})
        else:   # a figure of the whole deployment (docs/spec.md §5 candidate fields)
            doc = cand.to_json() if cand else {}
        # A published median TTFT is compared with the predicted median (the queue at its
        # median, generator/perf/loop.py median_wait), a mean with the mean.
        field = "ttftMedianMs" if m["field"] == "ttftMs" and m.get("stat") == "median" \
            else m["field"]
        got = doc.get(field) if cand and cand.fits else None
        if got is not None and m.get("perGpu"):
            if m.get("role"):
                role = next(r for r in req.spec.roles if r.name == m["role"])
                got = got / req.spec.nodePools[role.nodePool].gpusPerNode
            else:   # the whole deployment's figure over its GPUs
                got = got / cand.gpus
        rows.append({"id": case["id"], "split": case.get("split", "dev"),
                     "regime": case_regime(case, req), "field": m["field"],
                     "published": m["value"], "predicted": got,
                     "ratio": got / m["value"] if got else None,
                     "note": result.bound if got is None else "",
                     "excluded": case.get("excluded", "")})
    return rows


def _factor(ratio: float) -> float:
    return max(ratio, 1 / ratio)


def summary(rows: list[dict]) -> dict:
    """Per regime (every id of REGIMES): label, and for ``dev``, ``heldOut`` and ``all``: n
    (figures with a prediction), missing (figures without one), excluded (figures marked
    ``excluded``, in neither), median and worst error factor (rounded to 0.001)."""
    out = {}
    for regime, label in REGIMES.items():
        entry = {"label": label}
        for key, splits in (("dev", ("dev",)), ("heldOut", ("held-out",)), ("all", SPLITS)):
            sel = [r for r in rows if r["regime"] == regime and r["split"] in splits]
            kept = [r for r in sel if not r["excluded"]]
            factors = [_factor(r["ratio"]) for r in kept if r["ratio"]]
            entry[key] = {"n": len(factors), "missing": len(kept) - len(factors),
                          "excluded": len(sel) - len(kept),
                          "median": round(statistics.median(factors), 3) if factors else None,
                          "worst": round(max(factors), 3) if factors else None}
        out[regime] = entry
    return out


def table(summ: dict) -> str:
    """The per-regime table as text (``+k``: k figures without a prediction, ``~j``: j figures
    excluded)."""
    lines = [f"{'regime':<26} {'dev n':>5} {'median':>7} {'worst':>6}   {'held-out n':>10} "
             f"{'median':>7} {'worst':>6}   {'all n':>5} {'median':>7} {'worst':>6}"]

    def cell(s):
        if not s["n"]:
            return f"{s['n']:>5} {'-':>7} {'-':>6}"
        miss = (f"+{s['missing']}" if s["missing"] else "") + \
            (f"~{s['excluded']}" if s.get("excluded") else "")
        return f"{str(s['n']) + miss:>5} {s['median']:>6.2f}x {s['worst']:>5.2f}x"
    for regime, e in summ.items():
        lines.append(f"{regime:<26} {cell(e['dev'])}   {'':>5}{cell(e['heldOut'])}   "
                     f"{cell(e['all'])}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    rows = residuals()
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if r["ratio"] else "  - "
        got = f"{r['predicted']:>10,.1f}" if r["predicted"] else "       n/a"
        print(f"{r['id']:<46} {r['split']:<8} {r['regime']:<24} published {r['published']:>9,}"
              f"  predicted {got}  ratio {ratio}  {r['note'][:80]}")
    summ = summary(rows)
    print()
    print(table(summ))
    print("\n(n: figures with a prediction; +k: figures the layout gave no prediction for; "
          "~j: figures excluded, listed below; error factor max(predicted / published, "
          "published / predicted))")
    excluded = [r for r in rows if r["excluded"]]
    if excluded:
        print("\nexcluded (not in n, median or worst; never fitted):")
    for r in excluded:
        ratio = f"{r['ratio']:.2f}" if r["ratio"] else "-"
        print(f"  {r['id']:<44} {r['split']:<8} ratio {ratio:>5}  {r['excluded']}")
    if "--write" in argv:
        ERRORS_FILE.parent.mkdir(exist_ok=True)
        ERRORS_FILE.write_text(json.dumps({
            "source": "bench/planner_residuals.py over bench/published_cases.yaml",
            "regimes": summ}, indent=1, sort_keys=True) + "\n")
        print(f"wrote {ERRORS_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
