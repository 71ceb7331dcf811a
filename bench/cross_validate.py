"""Leave-one-source-out cross-validation of the performance model (issue 32).

A figure's error quoted beside a prediction must not come from the fit that saw it. For each
publication (``planner_residuals.source_of``) whose development figures fit a constant (a group
of ``bench/fit_constants.py``), this refits every group that source's figures belong to without
them, on the group's other development figures and every other development figure its
constants move (a constant none of those figures moves takes its prior,
``fit_constants.PRIORS``; one without a prior keeps its fitted value and is listed as
unconstrained), and predicts the source's figures with those constants: their cross-validated
ratio. A source whose figures fit nothing has its in-sample ratio as its cross-validated one.

    python bench/cross_validate.py            # refit per source (minutes) and write
                                              # bench/cross_validation.json
    python bench/cross_validate.py --show     # the stored ratios

bench/planner_residuals.py ``--write`` turns the stored ratios into each regime's band
(generator/perf/data/regime-errors.json); tests/test_regimes.py checks the stored in-sample
ratios are the bench's current ones (a model change needs this run again).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import fit_constants as fc  # noqa: E402
import planner_residuals as bench  # noqa: E402

CV_FILE = ROOT / "bench" / "cross_validation.json"
#: Refit effort per left-out source (fewer sweeps and section steps than a full fit: the
#: constants start from their fitted values, a short way from the refit ones).
SWEEPS, ITERS = 2, 12


def _group_sources() -> dict[int, set[str]]:
    """Per fit group (index into fit_constants.GROUPS), the sources of its development figures."""
    by_id = {case["id"]: bench.source_of(case) for case, _ in bench.requests()}
    return {k: {by_id[i] for i in fc._rows(prefixes)}
            for k, (_, _, prefixes) in enumerate(fc.GROUPS)}


def _moved(params, ids) -> tuple[dict[str, bool], set[str]]:
    """Per parameter whether doubling it moves any figure of ``ids``, and the figures moved."""
    base = {r["id"]: r["ratio"] for r in bench.residuals(ids)}
    free, moved = {}, set()
    for name, read, write in params:
        x0 = read()
        write(x0 * 2 if x0 else 1e-3)
        hit = {r["id"] for r in bench.residuals(ids)
               if r["ratio"] != base[r["id"]] and (r["ratio"] is None or base[r["id"]] is None
                                                   or abs(r["ratio"] / base[r["id"]] - 1) > 1e-6)}
        write(x0)
        free[name] = bool(hit)
        moved |= hit
    return free, moved


def _dev_ids(without: str) -> set[str]:
    return {case["id"] for case, _ in bench.requests()
            if case.get("split", "dev") == "dev" and not case.get("excluded")
            and bench.source_of(case) != without}


def refit_without(source: str, groups: list[int]) -> list[str]:
    """Refit ``groups`` (indices into fit_constants.GROUPS) without ``source``'s figures, in
    place; returns the parameters no figure is left to constrain and that have no prior."""
    unconstrained = []
    dev = _dev_ids(source)
    for k in groups:
        _, params, prefixes = fc.GROUPS[k]
        free, moved = _moved(params, dev)
        ids = fc._rows(prefixes, frozenset({source})) | moved
        for name, _, write in params:
            if not free[name]:
                if name in fc.PRIORS:
                    write(fc.PRIORS[name]())
                else:
                    unconstrained.append(name)
        if ids:
            fc.fit([p for p in params if free[p[0]]], ids, sweeps=SWEEPS, iters=ITERS)
    return unconstrained


def _snapshot():
    """Every fitted constant's current value, and a function restoring them."""
    values = [(write, read()) for _, params, _ in fc.GROUPS for _, read, write in params]

    def restore():
        for write, v in values:
            write(v)
    return restore


def cross_validate(log=print) -> dict:
    """Per figure: its source, in-sample ratio and cross-validated ratio; per refit source the
    unconstrained parameters (see the module docstring)."""
    rows = {r["id"]: r for r in bench.residuals()}
    cases = {case["id"]: case for case, _ in bench.requests()}
    sources = {i: bench.source_of(c) for i, c in cases.items()}
    cv = {i: r["ratio"] for i, r in rows.items()}
    notes = {}
    groups = _group_sources()
    for source in sorted({s for g in groups.values() for s in g}):
        touched = [k for k, s in groups.items() if source in s]
        restore = _snapshot()
        try:
            notes[source] = refit_without(source, touched)
            ids = [i for i, s in sources.items() if s == source]
            for r in bench.residuals(set(ids)):
                cv[r["id"]] = r["ratio"]
        finally:
            restore()
        log(f"{source}: groups {touched}, " + ", ".join(
            f"{i.split(':')[-1] if ':' in i else i} {cv[i]:.2f}" for i in ids if cv[i]))
    return {"source": "bench/cross_validate.py over bench/published_cases.yaml and "
                      "published-dev-4.yaml",
            "figures": {i: {"source": sources[i],
                            "ratio": None if rows[i]["ratio"] is None
                            else round(rows[i]["ratio"], 4),
                            "cvRatio": None if cv[i] is None else round(cv[i], 4)}
                        for i in sorted(rows)},
            "unconstrained": {s: n for s, n in sorted(notes.items()) if n}}


def load() -> dict:
    """The stored cross-validation ({} when not written yet)."""
    return json.loads(CV_FILE.read_text()) if CV_FILE.exists() else {}


def main(argv: list[str]) -> int:
    if "--show" in argv:
        for i, f in load().get("figures", {}).items():
            r, c = f["ratio"], f["cvRatio"]
            if r and c:
                print(f"{i:<48} in-sample {r:5.2f}  cross-validated {c:5.2f}"
                      f"{'  *' if abs(math.log(c / r)) > 0.05 else ''}")
        return 0
    doc = cross_validate()
    CV_FILE.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {CV_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
