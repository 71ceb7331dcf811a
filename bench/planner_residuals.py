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

import functools
import json
import math
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.capacity import plan
from generator.catalog import GPUS, builtin_arch
from generator.perf.domain import Descriptor, descriptor, differences, domain_of
from generator.perf.regimes import (
    ERRORS_FILE,
    EXTRAPOLATED,
    REGIMES,
    classify,
    kind_of,
    sparse_attention,
)
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
    figures of published-dev-4.yaml (:func:`dev4_cases`); read once per process."""
    return list(_requests())


@functools.lru_cache(maxsize=1)
def _requests() -> tuple[tuple[dict, PlanRequest], ...]:
    out = []
    doc = yaml.safe_load(CASES.read_text())
    for case in doc["cases"] + dev4_cases(updates=doc.get("dev4")):
        spec = _merge(case["request"], case.get("request_update") or {})
        req = PlanRequest.model_validate({"apiVersion": "moegen.dev/v1alpha1",
                                          "kind": "PlanRequest",
                                          "metadata": {"name": "published"}, "spec": spec})
        out.append((case, req))
    return tuple(out)


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


def case_descriptor(req: PlanRequest) -> Descriptor:
    """The configuration of a case's deployment (generator/perf/domain.py ``descriptor``)."""
    s = req.spec
    return descriptor(s.engine.name, s.engine.version, s.model.weights, s.nodePools,
                      s.roles or [], builtin_arch(s.model.architecture),
                      s.speculative is not None)


def residuals(ids=None) -> list[dict]:
    """Per case (those in ``ids`` if given): id, split, source (:func:`source_of`), regime,
    its configuration (``where``: :func:`case_descriptor`), published value, predicted value
    (None when the layout does not fit, with the reason in ``note``) and ratio."""
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
                     "source": source_of(case), "where": case_descriptor(req),
                     "regime": case_regime(case, req), "field": m["field"],
                     "published": m["value"], "predicted": got,
                     "ratio": got / m["value"] if got else None,
                     "note": result.bound if got is None else "",
                     "excluded": case.get("excluded", "")})
    return rows


def _factor(ratio: float) -> float:
    return max(ratio, 1 / ratio)


#: Share of the figures outside the other sources' domain the extrapolated band covers (its
#: worst figure alone would set a band of +300 %: one configuration refit without the figures
#: that set its term).
EXTRAPOLATED_COVERAGE = 0.9


def _stats(rows: list[dict], coverage: float = 1.0) -> dict:
    """n, median and worst cross-validated error factor (rounded to 0.001), the ``band`` (the
    factor ``coverage`` of them stay within: the worst at 1) and the sources of ``rows`` (each
    with ``cv``, its cross-validated ratio)."""
    factors = sorted(_factor(r["cv"]) for r in rows)
    band = factors[max(0, math.ceil(coverage * len(factors)) - 1)] if factors else None
    return {"n": len(factors), "sources": len({r["source"] for r in rows}),
            "median": round(statistics.median(factors), 3) if factors else None,
            "worst": round(factors[-1], 3) if factors else None,
            "band": round(band, 3) if factors else None, "coverage": coverage}


def cross_validated(rows: list[dict], cv: dict) -> tuple[dict, dict, dict]:
    """From the stored leave-one-source-out ratios ``cv`` (bench/cross_validate.py: figure id
    -> {"cvRatio"}), per regime the statistics of its figures that stay inside the domain of the
    regime's figures from other sources, and over every regime those that leave it (the
    extrapolated band); and per figure whether it stayed inside (figure id -> differences)."""
    kept = [r | {"cv": cv[r["id"]]["cvRatio"]} for r in rows
            if not r["excluded"] and r["id"] in cv and cv[r["id"]]["cvRatio"]]
    placed, out = {}, {}
    for r in kept:
        others = [x["where"] for x in rows if x["regime"] == r["regime"] and not x["excluded"]
                  and x["source"] != r["source"]]
        placed[r["id"]] = differences(r["where"], domain_of(others)) if others \
            else ["no other source in this regime"]
    for regime in REGIMES:
        out[regime] = _stats([r for r in kept if r["regime"] == regime and not placed[r["id"]]])
    extra = _stats([r for r in kept if placed[r["id"]]], EXTRAPOLATED_COVERAGE)
    return out, extra, placed


def summary(rows: list[dict], cv: dict | None = None) -> dict:
    """Per regime (every id of REGIMES): label, its ``domain`` (what its figures span,
    generator/perf/domain.py), for ``dev``, ``heldOut`` and ``all``: n (figures with a
    prediction), missing (figures without one), excluded (figures marked ``excluded``, in
    neither), median and worst error factor (rounded to 0.001), and with ``cv`` (the stored
    cross-validation, :func:`cross_validated`) ``crossValidated``: n, sources, median and worst
    of its figures' leave-one-source-out ratios."""
    cvs = cross_validated(rows, cv)[0] if cv is not None else {}
    out = {}
    for regime, label in REGIMES.items():
        mine = [r["where"] for r in rows
                if r["regime"] == regime and not r["excluded"] and r.get("where")]
        entry = {"label": label, "domain": domain_of(mine) if mine else None}
        if cv is not None:
            entry["crossValidated"] = cvs[regime]
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
    cv = stored_cv()
    if cv:
        by_regime, extra, placed = cross_validated(rows, cv)
        print("\ncross-validated (leave one source out, bench/cross_validate.py), inside the "
              "domain of the other sources' figures:")
        for regime, st in by_regime.items():
            print(f"  {regime:<26} {_cell(st)}")
        print(f"  {EXTRAPOLATED:<26} {_cell(extra)}   (outside it, every regime)")
    if "--write" in argv:
        ERRORS_FILE.parent.mkdir(exist_ok=True)
        ERRORS_FILE.write_text(json.dumps(table_doc(rows, cv), indent=1, sort_keys=True) + "\n")
        print(f"wrote {ERRORS_FILE.relative_to(ROOT)}")
    return 0


def _cell(st: dict) -> str:
    if not st["n"]:
        return "    0       -      -"
    return (f"{st['n']:>5} {st['median']:>6.2f}x {st['worst']:>5.2f}x  band {st['band']:.2f}x "
            f"({st['sources']} sources)")


def stored_cv() -> dict:
    """bench/cross_validation.json's per-figure ratios ({} before bench/cross_validate.py has
    written it)."""
    path = ROOT / "bench" / "cross_validation.json"
    return json.loads(path.read_text())["figures"] if path.exists() else {}


def table_doc(rows: list[dict], cv: dict) -> dict:
    """The package data generator/perf/data/regime-errors.json: per regime :func:`summary`,
    and the extrapolated band (:func:`cross_validated`)."""
    return {"source": "bench/planner_residuals.py over bench/published_cases.yaml and "
                      "published-dev-4.yaml; cross-validation: bench/cross_validate.py",
            "regimes": summary(rows, cv),
            EXTRAPOLATED: cross_validated(rows, cv)[1]}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
