"""Regimes of the performance model: which regime a predicted figure is in, the shipped error
table is what the bench measures, and every regime's measured error within its stated band
(bench/planner_residuals.py over bench/published_cases.yaml; issue 25's target is a median
within 1.2x and a worst within 1.5x in every regime); each regime's domain and its
cross-validated band (issue 32: one source left out at a time, bench/cross_validate.py), and a
prediction outside every domain marked extrapolated."""

from __future__ import annotations

import json

import pytest
import yaml

from generator.perf.regimes import (ERRORS_FILE, EXTRAPOLATED, REGIMES, classify,
                                    figure_regimes, placed, regime_error, sparse_attention)
from generator.catalog import builtin_arch
from generator.cli import run
from tests.helpers import EXAMPLES, ROOT, load_script, shared


def test_the_first_matching_regime_wins():
    """AMD before TTFT before attention DP before sparse attention before prefill."""
    amd_ttft = classify("ttft", unified=True, data=1, vendor="amd", sparse=False)
    assert amd_ttft == "amd"
    assert classify("ttft", unified=True, data=8, vendor="nvidia", sparse=True) == "ttft"
    assert classify("ttft", unified=False, data=16, vendor="nvidia", sparse=False) == \
        "ttft-disaggregated"
    assert classify("tpot", unified=True, data=8, vendor="nvidia", sparse=True) == \
        "dp-attention-unified"
    assert classify("tpot", unified=True, data=1, vendor="nvidia", sparse=True) == \
        "sparse-attention"
    assert classify("input", unified=True, data=8, vendor="nvidia", sparse=False) == "prefill"
    assert classify("input", unified=True, data=1, vendor="nvidia", sparse=True) == \
        "sparse-attention"
    assert classify("end-to-end", unified=False, data=16, vendor="nvidia", sparse=False) == \
        "disaggregated-end-to-end"
    assert classify("output", unified=False, data=16, vendor="nvidia", sparse=False) == \
        "ep-decode"
    assert classify("tpot", unified=False, data=1, vendor="nvidia", sparse=False) == "tp-decode"
    with pytest.raises(ValueError):
        classify("latency", unified=True, data=1, vendor="nvidia", sparse=False)


def test_sparse_attention_is_v32s_indexer_not_v4s_compressed_attention():
    assert sparse_attention(builtin_arch("deepseek-v3.2"))
    assert not sparse_attention(builtin_arch("deepseek-v4-pro"))
    assert not sparse_attention(builtin_arch("deepseek-r1"))


def _bench():
    return load_script("bench/planner_residuals.py")


@pytest.fixture(scope="module")
def bench_rows():
    # The bench reads published-dev-4's figures beside the checkout; without them its table
    # is another one (skip, as every test of the reference data does).
    shared("reference", "published-dev-4.yaml")
    bench = _bench()
    return bench, bench.residuals()


def test_the_shipped_error_table_is_what_the_bench_measures(bench_rows):
    """generator/perf/data/regime-errors.json = bench/planner_residuals.py's table over the
    current residuals and the stored cross-validation (refresh: python
    bench/planner_residuals.py --write)."""
    bench, rows = bench_rows
    shipped = json.loads(ERRORS_FILE.read_text())
    assert shipped == json.loads(json.dumps(bench.table_doc(rows, bench.stored_cv())))
    assert set(shipped["regimes"]) == set(REGIMES)


def test_the_stored_cross_validation_is_of_the_current_model(bench_rows):
    """bench/cross_validation.json holds, per figure, the in-sample ratio it was computed
    against: the bench's current one (a model change needs python bench/cross_validate.py
    again), for the same figures."""
    bench, rows = bench_rows
    stored = bench.stored_cv()
    assert set(stored) == {r["id"] for r in rows}
    for r in rows:
        want = None if r["ratio"] is None else round(r["ratio"], 4)
        assert stored[r["id"]]["ratio"] == want, r["id"]
        assert stored[r["id"]]["source"] == r["source"], r["id"]


def test_an_excluded_figure_is_counted_apart():
    """A case marked ``excluded`` (bench/planner_residuals.py) is listed and counted as
    excluded, never in n, median or worst: two AMD held-out figures at ratios 2 and 0.5 (factors
    2 and 2) and one excluded at 10 give n 2, median 2, worst 2, excluded 1."""
    bench = _bench()
    rows = [{"regime": "amd", "split": "held-out", "ratio": r, "excluded": why}
            for r, why in ((2.0, ""), (0.5, ""), (10.0, "warm-up in a concurrency-1 TTFT"))]
    held = bench.summary(rows)["amd"]["heldOut"]
    assert held == {"n": 2, "missing": 0, "excluded": 1, "median": 2.0, "worst": 2.0}
    assert "~1" in bench.table(bench.summary(rows))


def test_the_bench_marks_the_inconsistent_held_out_figures():
    """The two held-out AMD figures the bench excludes, each with its reason: a TTFT median not
    monotonic in concurrency (8K/1K c16: 1,347 ms between 481 ms at c1 and 499 ms at c64) and an
    unexplained concurrency-1 TTFT (EAGLE on DP8: median 1,249 ms, 2.6x a loaded launch's)."""
    rows = {r["id"]: r for r in _bench().residuals()}
    excluded = {i for i, r in rows.items() if r["excluded"]}
    assert excluded == {"cookbook-v31-mi300x-tp8-8k1k-c16-ttft",
                        "cookbook-v3-mi300x-dp8-eagle-c1-ttft"}
    assert all(rows[i]["split"] == "held-out" for i in excluded)


def test_issue_25s_target_holds_in_every_regime():
    """Issue 25's done-when: in every regime of the bench the median error is within 1.2x and
    the worst within 1.5x (TTFT included), on the held-out figures and on all of them."""
    table = json.loads(ERRORS_FILE.read_text())["regimes"]
    for regime, row in table.items():
        for split in ("heldOut", "all"):
            r = row[split]
            if r["n"]:
                assert r["median"] <= 1.2 and r["worst"] <= 1.5, (regime, split, r)


def test_a_token_weighted_tpot_is_derived_from_the_runs_own_means():
    """moegen's TPOT is the mean time per output token over all tokens; bench_serving's "Mean
    TPOT" is a per-request mean, which variable output lengths (ShareGPT) bias upward. Every
    case that says ``stat: token-weighted`` derives it from the same run's published means:
    (mean E2E - mean TTFT) / (generated / requests - 1). Kimi-K2 DP4-EP4 on 8 x B200 at
    concurrency 100: (15,601.09 - 457.42) / (193,831 / 1,000 - 1) = 78.53 ms against a
    per-request mean of 97.23 ms (the run's mean ITL: 78.61 ms)."""
    cases = [c for c, _ in _bench().requests() if c["metric"].get("stat") == "token-weighted"]
    assert len(cases) == 24
    for c in cases:
        m = c["metric"]
        f = m["from"]
        derived = (f["meanE2eMs"] - f["meanTtftMs"]) / (f["generatedTokens"] / f["requests"] - 1)
        assert m["value"] == pytest.approx(derived, abs=0.006), c["id"]
        assert m["perRequestMean"] >= m["value"] - 0.5, c["id"]   # ShareGPT: per request higher
    k2 = next(c for c in cases if c["id"] == "cookbook-k2-b200-dp4ep4-c100-tpot")["metric"]
    assert (k2["value"], k2["perRequestMean"]) == (78.53, 97.23)


#: Per regime, the measured error (median, worst factor) over every figure and over the held-out
#: ones, as the bench measured it in session 6 (issue 25; its closing note has the table before
#: and after): every regime within issue 25's target, a median within 1.2x and a worst within
#: 1.5x, on the held-out figures as on all. The held-out set changed in session 6: InferenceX's
#: MI325X TPOT and output rate at concurrency 4 and 64 and the cookbook's DP8-EP8 run on MI300X
#: became development figures (bench/published_cases.yaml says why). Prefill's median over all
#: figures is 1.041x since chunks of different requests share steps (perf/terms.py ``prefill``;
#: its worst fell from 1.18x to 1.08x).
BANDS = {
    "tp-decode": ((1.03, 1.16), (1.04, 1.11)), "ep-decode": ((1.06, 1.35), (1.01, 1.01)),
    "prefill": ((1.05, 1.19), (1.12, 1.19)), "disaggregated-end-to-end": ((1.06, 1.06), None),
    "dp-attention-unified": ((1.02, 1.14), (1.14, 1.14)),
    "sparse-attention": ((1.03, 1.34), (1.20, 1.34)), "ttft": ((1.07, 1.36), (1.06, 1.36)),
    "amd": ((1.06, 1.35), (1.11, 1.35)),
}


def test_every_regime_within_its_stated_band():
    table = json.loads(ERRORS_FILE.read_text())["regimes"]
    for regime, bands in BANDS.items():
        for split, band in zip(("all", "heldOut"), bands):
            row = table[regime][split]
            if band is None:
                assert row["n"] == 0, (regime, split, row)
                continue
            assert row["n"] >= 1 and row["missing"] == 0, (regime, split, row)
            assert row["median"] <= band[0] and row["worst"] <= band[1], (regime, split, row)
    assert table["ttft-disaggregated"]["all"]["n"] == 0   # no published PD TTFT in the bench


def test_a_prediction_names_its_regime_and_its_error():
    """A PD deployment with DP16-EP16 decode on NVIDIA: TPOT is in the expert-parallel decode
    regime, TTFT in the disaggregated TTFT regime, which the bench has no figure of; the
    text quotes the cross-validated error the table holds (band: its worst factor)."""
    regimes = figure_regimes(unified=False, data=16, vendor="nvidia", sparse=False)
    assert regimes["tpotMs"].regime == "ep-decode"
    assert regimes["ttftMs"].describe() == \
        "time to first token (disaggregated) regime, no published figure in the bench"
    e = regime_error("ep-decode")
    assert e.describe() == (f"expert-parallel decode regime, cross-validated median error "
                            f"{e.median - 1:.0%}, band {e.worst - 1:.0%} ({e.n} figures from "
                            f"{e.sources} sources)")
    table = json.loads(ERRORS_FILE.read_text())["regimes"]["ep-decode"]["crossValidated"]
    assert (e.n, e.median, e.worst) == (table["n"], table["median"], table["worst"])


def test_gen_size_and_plan_quote_the_regime(capsys):
    assert run(["size", str(EXAMPLES / "s1-16xh20-pd.yaml"), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    dec = next(r for r in out["roles"] if r["name"] == "decode")["predicted"]
    assert dec["regimes"]["tpotMs"]["nearest"] == "ep-decode"
    assert run(["size", str(EXAMPLES / "s1-16xh20-pd.yaml")]) == 0
    assert "extrapolated beyond the expert-parallel decode regime (vllm 0.33.0 outside the " \
           "figures' 0.13.0)" in capsys.readouterr().out
    assert run(["plan", str(EXAMPLES / "plan" / "h20-16-seed000.yaml"), "--format",
                "json"]) == 0
    cand = json.loads(capsys.readouterr().out)["candidates"][0]
    assert set(cand["regimes"]) == {"ttftMs", "tpotMs", "totalTokensPerSec"}


def test_a_left_out_source_takes_its_terms_prior():
    """Leaving out the SGLang DeepSeek-V4 table, no other figure moves the W4A16 prefill
    efficiency (fitted to its V4-Flash Marlin cell only): the refit sets its prior, 1.0 (the
    BF16 prefill rate of the kernel's compute dtype), fit_constants.PRIORS."""
    import sys
    from generator.perf import terms
    shared("reference", "published-dev-4.yaml")   # the V4 table the source is found in
    sys.path.insert(0, str(ROOT / "bench"))
    cv = load_script("bench/cross_validate.py")
    group = next(k for k, (name, _, _) in enumerate(cv.fc.GROUPS) if "W4A16" in name)
    source = cv.bench.source_of(next(c for c, _ in cv.bench.requests()
                                     if c["id"].startswith("v02-")))
    restore = cv._snapshot()
    try:
        assert terms.W4A16_PREFILL == 0.219
        assert cv.refit_without(source, [group]) == []
        assert terms.W4A16_PREFILL == 1.0
    finally:
        restore()
    assert terms.W4A16_PREFILL == 0.219


def _request(**spec):
    from generator.spec.request import PlanRequest
    return PlanRequest.model_validate({"apiVersion": "moegen.dev/v1alpha1",
                                       "kind": "PlanRequest", "metadata": {"name": "t"},
                                       "spec": spec})


def test_a_configuration_is_compared_with_a_domain_in_words():
    """V4-Flash on 4 x H200 with SGLang 0.5.23, --moe-runner-backend marlin, MTP: family
    compressed attention, GPU nvidia hopper, Marlin's W4A16 kernel, speculative decoding.
    Against a domain of MLA figures on Blackwell with SGLang 0.5.6-0.5.15 and FP8 kernels, each
    of the five differs, in words."""
    from generator.perf.domain import descriptor, differences
    req = _request(model={"architecture": "deepseek-v4-flash", "weights": "mxfp4"},
                   engine={"name": "sglang", "version": "0.5.23"},
                   nodePools={"p": {"gpu": "H200-141GB", "gpusPerNode": 4, "nodes": 1}},
                   workload={"inputTokens": 1024, "outputTokens": 1024, "concurrency": 8},
                   speculative={"numSpeculativeTokens": 1},
                   roles=[{"name": "s", "mode": "unified", "nodePool": "p",
                           "parallel": {"tensor": 4},
                           "engineArgs": ["--moe-runner-backend", "marlin"]}])
    s = req.spec
    d = descriptor("sglang", "0.5.23", "mxfp4", s.nodePools, s.roles,
                   builtin_arch("deepseek-v4-flash"), True)
    assert (d.family, d.gpu, d.kernels, d.features) == (
        "compressed attention", "nvidia hopper", frozenset({"W4A16"}),
        frozenset({"speculative decoding"}))
    domain = {"families": ["MLA"], "gpus": ["nvidia blackwell"],
              "engines": {"sglang": ["0.5.6", "0.5.15"]}, "kernels": ["FP8"], "features": []}
    assert differences(d, domain) == [
        "model family compressed attention (the figures: MLA)",
        "GPU generation nvidia hopper (the figures: nvidia blackwell)",
        "sglang 0.5.23 outside the figures' 0.5.6-0.5.15",
        "MoE kernel W4A16 (the figures: FP8)",
        "speculative decoding (no figure of this regime has it)"]
    assert differences(d, domain | {"families": ["compressed attention"],
                                    "gpus": ["nvidia hopper"],
                                    "engines": {"sglang": ["0.5.1", "0.5.23"]},
                                    "kernels": ["W4A16"],
                                    "features": ["speculative decoding"]}) == []


def test_a_prediction_outside_its_regimes_domain_is_extrapolated(capsys):
    """gen size on S1 (vLLM 0.33.0, decode DP16-EP16 on H20): the expert-parallel decode
    regime's figures ran vLLM 0.13.0 only, so TPOT is extrapolated: the JSON says which regime
    it is nearest and what differs, and quotes the extrapolated band as worstError."""
    assert run(["size", str(EXAMPLES / "s1-16xh20-pd.yaml"), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    dec = next(r for r in out["roles"] if r["name"] == "decode")["predicted"]["regimes"]
    tpot = dec["tpotMs"]
    assert tpot["regime"] == EXTRAPOLATED and tpot["nearest"] == "ep-decode"
    assert "vllm 0.33.0 outside the figures' 0.13.0" in tpot["differs"]
    table = json.loads(ERRORS_FILE.read_text())
    assert tpot["worstError"] == round(table[EXTRAPOLATED]["band"] - 1, 3)
    assert tpot["figures"] == table[EXTRAPOLATED]["n"]


def test_the_bench_held_out_figures_fall_inside_the_band_moegen_prints():
    """Issue 32's bar on the figures never fitted (the bench's held-out split): at least 70 %
    fall inside the band moegen prints beside them (its regime's cross-validated band, or the
    extrapolated one outside the regime's domain) and the median error factor is at most
    1.3x."""
    import statistics
    bench = _bench()
    rows = [r for r in bench.residuals() if r["split"] == "held-out" and not r["excluded"]]
    factors = [max(r["ratio"], 1 / r["ratio"]) for r in rows]
    inside = [f <= placed(r["regime"], r["where"]).worst + 1e-9 for r, f in zip(rows, factors)]
    assert len(rows) >= 40
    assert sum(inside) >= 0.7 * len(rows)
    assert statistics.median(factors) <= 1.3


def test_published_dev_4_falls_inside_the_band_moegen_would_print_without_its_source(bench_rows):
    """Issue 32's bar on published-dev-4 (read beside the checkout), cross-validated: each
    figure predicted with its source left out (bench/cross_validation.json) against the band
    moegen prints for it without that source (its regime's band inside the other sources'
    domain, else the extrapolated band): at least 70 % inside and a median factor of at most
    1.3x."""
    import statistics
    bench, rows = bench_rows
    dev4 = {f"{e['id']}:{k}" for e in yaml.safe_load(
        shared("reference/published-dev-4.yaml").read_text())["performance"]
        for k in e["published"]}
    cv = bench.stored_cv()
    by_regime, extra, placed_ = bench.cross_validated(rows, cv)
    mine = [r for r in rows if r["id"] in dev4]
    assert len(mine) == len(dev4) == 15
    factors = [max(cv[r["id"]]["cvRatio"], 1 / cv[r["id"]]["cvRatio"]) for r in mine]
    bands = [extra["band"] if placed_[r["id"]] else by_regime[r["regime"]]["band"]
             for r in mine]
    inside = sum(f <= b + 1e-9 for f, b in zip(factors, bands))
    assert inside >= 0.7 * len(mine), (inside, len(mine))
    assert statistics.median(factors) <= 1.3
