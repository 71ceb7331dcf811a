"""Regimes of the performance model: which regime a predicted figure is in, the shipped error
table is what the bench measures, and every regime's measured error within its stated band
(bench/planner_residuals.py over bench/published_cases.yaml; issue 25's target is a median
within 1.2x and a worst within 1.5x in every regime)."""

from __future__ import annotations

import json

import pytest

from generator.perf.regimes import (ERRORS_FILE, REGIMES, classify, figure_regimes,
                                        regime_error, sparse_attention)
from generator.catalog import builtin_arch
from generator.cli import run
from tests.helpers import EXAMPLES, load_script


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


def test_the_shipped_error_table_is_what_the_bench_measures():
    """generator/perf/data/regime-errors.json = bench/planner_residuals.py's summary
    (refresh: python bench/planner_residuals.py --write)."""
    bench = _bench()
    shipped = json.loads(ERRORS_FILE.read_text())["regimes"]
    assert shipped == bench.summary(bench.residuals())
    assert set(shipped) == set(REGIMES)


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
#: became development figures (bench/published_cases.yaml says why).
BANDS = {
    "tp-decode": ((1.03, 1.16), (1.04, 1.11)), "ep-decode": ((1.06, 1.35), (1.01, 1.01)),
    "prefill": ((1.04, 1.19), (1.12, 1.19)), "disaggregated-end-to-end": ((1.06, 1.06), None),
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
    """gen size on S1 (PD, DP16-EP16 decode on H20): TPOT is in the expert-parallel decode
    regime, TTFT in the disaggregated TTFT regime, which the bench has no figure of; the
    text quotes the measured error the table holds."""
    regimes = figure_regimes(unified=False, data=16, vendor="nvidia", sparse=False)
    assert regimes["tpotMs"].regime == "ep-decode"
    assert regimes["ttftMs"].describe() == \
        "time to first token (disaggregated) regime, no published figure in the bench"
    e = regime_error("ep-decode")
    assert e.describe().startswith(
        f"expert-parallel decode regime, bench median error {e.median - 1:.0%}, worst ")


def test_gen_size_and_plan_quote_the_regime(capsys):
    assert run(["size", str(EXAMPLES / "s1-16xh20-pd.yaml"), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    dec = next(r for r in out["roles"] if r["name"] == "decode")["predicted"]
    assert dec["regimes"]["tpotMs"]["regime"] == "ep-decode"
    assert dec["regimes"]["tpotMs"]["figures"] == regime_error("ep-decode").n
    assert run(["size", str(EXAMPLES / "s1-16xh20-pd.yaml")]) == 0
    assert "expert-parallel decode regime, bench median error" in capsys.readouterr().out
    assert run(["plan", str(EXAMPLES / "plan" / "h20-16-seed000.yaml"), "--format",
                "json"]) == 0
    cand = json.loads(capsys.readouterr().out)["candidates"][0]
    assert set(cand["regimes"]) == {"ttftMs", "tpotMs", "totalTokensPerSec"}
