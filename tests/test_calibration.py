"""gen calibrate and the calibration hook (issue 32 items 5): reading the engines' own benchmark
results and start-up logs, per-term-group factors, profiles applied only where they were
measured (CAL001), and the issue's done-when: a run whose TPOT is twice the prediction makes the
next prediction of that configuration within 10 % of it."""

from __future__ import annotations

import json

import pytest
import yaml

from generator import pipeline
from generator.calibration.results import read_results
from generator.cli import run
from tests.helpers import EXAMPLES

PD = EXAMPLES / "s1-16xh20-pd.yaml"   # traffic 3500/1200, decode sizing.concurrency 200 x 1


@pytest.fixture(scope="module")
def model_prediction():
    """The uncalibrated prediction of the PD example (the figures the synthetic run is built
    from: the test's input, not its expected output)."""
    checked = pipeline.check(PD)
    assert checked.ok
    pred = pipeline.performance(checked)
    return pred.roles["prefill"], pred.roles["decode"], pred.output_tps


def _vllm_result(ttft: float, tpot: float, out_tps: float, **extra) -> dict:
    """A `vllm bench serve --save-result` document (keys of vLLM 0.33.0
    vllm/benchmarks/serve.py): 1000 requests of 3500/1200 tokens, 200 in flight."""
    return {"date": "20260101-000000", "backend": "openai", "model_id": "deepseek-ai/DeepSeek-V3",
            "num_prompts": 1000, "request_rate": "inf", "burstiness": 1.0,
            "max_concurrency": 200, "duration": 200.0, "completed": 1000, "failed": 0,
            "total_input_tokens": 3_500_000, "total_output_tokens": 1_200_000,
            "request_throughput": 5.0, "output_throughput": out_tps,
            "total_token_throughput": out_tps * (3500 + 1200) / 1200,
            "mean_ttft_ms": ttft, "median_ttft_ms": ttft, "p99_ttft_ms": 2 * ttft,
            "mean_tpot_ms": tpot, "median_tpot_ms": tpot, "p99_tpot_ms": tpot, **extra}


@pytest.fixture(scope="module")
def doubled(model_prediction, tmp_path_factory):
    """gen calibrate on one run whose TPOT is twice the prediction (TTFT and output tokens/s as
    predicted): the profile file and gen calibrate's exit code."""
    pre, dec, out_tps = model_prediction
    tmp = tmp_path_factory.mktemp("cal")
    result = tmp / "run.json"
    result.write_text(json.dumps(_vllm_result(pre.ttft_ms, 2 * dec.tpot_ms, out_tps)))
    profile = tmp / "profile.yaml"
    rc = run(["calibrate", str(result), "--spec", str(PD), "-o", str(profile)])
    return rc, profile, tmp


def test_tpot_twice_the_prediction_calibrates_the_next_prediction(model_prediction, doubled):
    _, dec, _ = model_prediction
    rc, profile, _ = doubled
    assert rc == 0
    measured = 2 * dec.tpot_ms
    # before: the model's TPOT is half the measurement, 50 % off
    assert abs(dec.tpot_ms / measured - 1) == pytest.approx(0.5)
    # factor = measured / predicted = 2 x TPOT / TPOT = 2; one run: residual 0
    doc = yaml.safe_load(profile.read_text())
    assert doc["spec"]["factors"]["tpot"] == {"factor": 2.0, "runs": 1, "residual": 0.0}
    # TTFT and output tokens/s measured as predicted: factors 1 (within the 0.1 ms / 0.1
    # tokens/s the prediction is rounded to)
    assert doc["spec"]["factors"]["ttft"]["factor"] == pytest.approx(1.0, abs=1e-4)
    assert doc["spec"]["factors"]["output"]["factor"] == pytest.approx(1.0, abs=1e-4)
    checked = pipeline.check(PD, calibration=profile)
    after = pipeline.performance(checked).roles["decode"]
    # after: 2 x TPOT (rounded to 0.1 ms) = the measurement, within 10 %
    assert abs(after.tpot_ms / measured - 1) <= 0.10
    assert after.tpot_ms == pytest.approx(round(2 * dec.tpot_ms, 1))
    # each calibrated figure says so: factor, runs, residual, profile
    cal = after.to_json()["calibration"]
    assert cal["figures"]["tpotMs"] == {"factor": 2.0, "runs": 1, "residual": 0.0}
    assert cal["profile"] == "profile dsv3-pd"
    assert not [f for f in checked.findings if f.code.startswith("CAL")]


def test_calibrated_figures_are_shown_as_such(doubled, capsys):
    _, profile, _ = doubled
    assert run(["size", str(PD), "--calibration", str(profile)]) == 0
    text = capsys.readouterr().out
    tpot = next(line for line in text.splitlines() if line.strip().startswith("TPOT"))
    assert "calibrated x2.00 on 1 run, residual 0% (profile dsv3-pd)" in tpot


def test_a_profile_of_another_gpu_is_not_applied(model_prediction, doubled, tmp_path):
    _, dec, _ = model_prediction
    _, profile, _ = doubled
    doc = yaml.safe_load(profile.read_text())
    for r in doc["spec"]["configuration"]["roles"]:
        r["gpu"] = "H200-141GB"
    other = tmp_path / "h200.yaml"
    other.write_text(yaml.safe_dump(doc))
    checked = pipeline.check(PD, calibration=other)
    assert pipeline.performance(checked).roles["decode"].tpot_ms == dec.tpot_ms   # the model's
    [f] = [f for f in checked.findings if f.code.startswith("CAL")]
    assert (f.code, f.severity.value, f.location.file) == ("CAL001", "warning", "--calibration")
    assert "GPU H20-141GB, H20-96GB, not H200-141GB" in f.message
    assert "not applied" in f.message


def test_spec_calibration_is_relative_to_the_spec_and_notes_other_traffic(doubled, tmp_path):
    _, profile, _ = doubled
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "p.yaml").write_text(profile.read_text())
    overlay = tmp_path / "o.yaml"
    overlay.write_text("spec:\n  calibration: profiles/p.yaml\n"
                       "  traffic: {inputTokens: 1000, outputTokens: 1200}\n")
    checked = pipeline.check(PD, [overlay])
    assert checked.ok, [str(f) for f in checked.findings]
    assert checked.calibration is not None and checked.calibration.factors["tpot"].value == 2.0
    [f] = [f for f in checked.findings if f.code.startswith("CAL")]
    assert (f.code, f.severity.value, f.location.line) == ("CAL003", "notice", 2)
    assert ("measured at 3500/1200 tokens at concurrency 200; this spec predicts at 1000/1200 "
            "tokens at concurrency 200") in f.message


def test_a_missing_profile_is_an_error_at_the_field(tmp_path):
    overlay = tmp_path / "o.yaml"
    overlay.write_text("spec:\n  calibration: nowhere.yaml\n")
    checked = pipeline.check(PD, [overlay])
    [f] = [f for f in checked.findings if f.code.startswith("CAL")]
    assert (f.code, f.path, f.location.line) == ("CAL002", "$.spec.calibration", 2)
    assert not checked.ok


def test_runs_of_another_configuration_are_skipped(model_prediction, doubled, capsys):
    pre, dec, out_tps = model_prediction
    _, _, tmp = doubled
    other = tmp / "other.json"
    other.write_text(json.dumps(_vllm_result(pre.ttft_ms, dec.tpot_ms, out_tps,
                                             **{"moegen.config": "0123456789ab"})))
    assert run(["calibrate", str(other), "--spec", str(PD)]) == 2   # nothing left to fit
    err = capsys.readouterr().err
    assert "CAL005" in err and "stored configuration 0123456789ab" in err


def test_results_and_logs_are_read(tmp_path):
    sglang = tmp_path / "sglang.jsonl"
    # SGLang 0.5.23 python/sglang/benchmark/serving.py: one JSON line per run
    line = {"tag": "moegen.config=abcdefabcdef", "backend": "sglang-oai",
            "dataset_name": "random-ids", "request_rate": float("inf"), "max_concurrency": None,
            "completed": 100, "total_input_tokens": 100_000, "total_output_tokens": 50_000,
            "output_throughput": 2500.0, "total_throughput": 7500.0, "mean_ttft_ms": 300.0,
            "median_ttft_ms": 250.0, "p99_ttft_ms": 900.0, "mean_tpot_ms": 20.0,
            "concurrency": 31.5}
    sglang.write_text(json.dumps(line) + "\n" + json.dumps({**line, "mean_tpot_ms": 22.0}) + "\n")
    vlog = tmp_path / "prefill.log"
    vlog.write_text(
        "(EngineCore pid=7) INFO 01-01 00:00:01 [gpu_model_runner.py:5089] Model loading took "
        "80.99 GiB memory and 41.2 seconds\n"
        "(EngineCore pid=7) INFO 01-01 00:00:09 [kv_cache_utils.py:1148] GPU KV cache size: "
        "1,234,567 tokens, Maximum concurrency for 32,768 tokens per request: 37.68x\n")
    slog = tmp_path / "decode.log"
    slog.write_text("[2026-01-01 00:00:00] Load weight end. elapsed=40.00 s, type=DeepseekV3For"
                    "CausalLM, avail mem=15.00 GB, mem usage=79.50 GB.\n"
                    "[2026-01-01 00:00:05] KV Cache is allocated. dtype: torch.float8_e4m3fn, "
                    "#tokens: 654321, KV size: 8.00 GB\n")
    bad = tmp_path / "notes.txt"
    bad.write_text("nothing measured here\n")
    res = read_results([str(sglang), f"prefill={vlog}", f"decode={slog}", str(bad)])
    a, b = res.runs
    assert (a.client, a.config, a.file, b.file) == (
        "sglang bench_serving", "abcdefabcdef", f"{sglang}:1", f"{sglang}:2")
    # 100,000 / 100 = 1000 input and 50,000 / 100 = 500 output tokens per request; open loop:
    # the measured mean in flight
    assert (a.input_tokens, a.output_tokens, a.concurrency) == (1000, 500, 31.5)
    assert (a.ttft_mean, a.ttft_median, a.ttft_p99, a.tpot_mean, b.tpot_mean) == \
        (300.0, 250.0, 900.0, 20.0, 22.0)
    m1, m2 = res.memory
    assert (m1.engine, m1.role, m1.weights_gib, m1.kv_tokens) == ("vllm", "prefill", 80.99, 1234567)
    assert (m2.engine, m2.role, m2.weights_gib, m2.kv_tokens) == ("sglang", "decode", 79.5, 654321)
    [f] = res.findings
    assert (f.code, f.location.file) == ("CAL004", str(bad))


def test_a_vllm_result_inside_the_bench_jobs_log_is_read(tmp_path):
    """The bench Job prints the result between marker lines (kubectl logs job/NAME > FILE)."""
    obj = _vllm_result(100.0, 10.0, 1000.0, max_concurrency=None, request_rate=4.0,
                       request_throughput=4.0)
    log = tmp_path / "job.log"
    log.write_text("INFO starting\n=== moegen bench result /results/x.json\n" + json.dumps(obj)
                   + "\n\n=== end of moegen bench result\n")
    [r] = read_results([str(log)]).runs
    # open loop without a concurrency bound: Little's law, 4 req/s x (100 ms + 10 ms x 1199)
    # = 4 x 12.09 s = 48.36 in flight
    assert r.concurrency == pytest.approx(4 * (0.100 + 0.010 * 1199))
    assert r.file == f"{log}:3"


FIXED = EXAMPLES / "plan" / "h20-96-fixed-layout.yaml"   # SGLang, R1 FP8, P TP8 + D DP16 EP, MTP 1
#: The configuration of that request's layout, written out (docs/calibration.md): the decode role
#: drafts the request's 1 speculative token, the prefill none.
FIXED_CONF = {
    "key": "hand-written",
    "model": {"architecture": "deepseek-r1", "weights": "fp8"},
    "engine": {"name": "sglang", "version": "0.5.6.post1"},
    "roles": [{"name": "prefill", "mode": "prefill", "gpu": "H20-96GB", "gpusPerNode": 8,
               "replicas": 1, "parallel": {"tensor": 8, "data": 1, "pipeline": 1,
                                           "expert": False}, "draftTokens": 0},
              {"name": "decode", "mode": "decode", "gpu": "H20-96GB", "gpusPerNode": 8,
               "replicas": 1, "parallel": {"tensor": 1, "data": 16, "pipeline": 1,
                                           "expert": True}, "draftTokens": 1}]}


def _profile(tmp_path, conf: dict, name: str) -> str:
    doc = {"apiVersion": "moegen.dev/v1alpha1", "kind": "CalibrationProfile",
           "metadata": {"name": name},
           "spec": {"configuration": conf,
                    "factors": {"tpot": {"factor": 2.0, "runs": 1, "residual": 0.0},
                                "output": {"factor": 2.0, "runs": 1, "residual": 0.0}},
                    "runs": [{"file": "run.json", "client": "sglang bench_serving",
                              "traffic": {"inputTokens": 4096, "outputTokens": 1536,
                                          "concurrency": 768},
                              "predicted": {"tpotMs": 21.1}, "measured": {"tpotMs": 42.2}}]}}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_gen_plan_calibrates_the_candidate_of_the_profiles_layout(tmp_path, capsys):
    assert run(["plan", str(FIXED), "--format", "json"]) == 0
    [model] = json.loads(capsys.readouterr().out)["candidates"]
    assert run(["plan", str(FIXED), "--format", "json",
                "--calibration", _profile(tmp_path, FIXED_CONF, "fixed")]) == 0
    [cal] = json.loads(capsys.readouterr().out)["candidates"]
    # TPOT x 2 and output tokens/s / 2 (each rounded once: 0.1 ms, 1 token/s)
    assert cal["tpotMs"] == pytest.approx(2 * model["tpotMs"], abs=0.1)
    assert cal["outputTokensPerSec"] == pytest.approx(model["outputTokensPerSec"] / 2, abs=1)
    assert cal["ttftMs"] == model["ttftMs"]                    # no ttft factor in the profile
    assert cal["calibration"]["factors"]["tpot"] == {"factor": 2.0, "runs": 1, "residual": 0.0}
    other = {**FIXED_CONF, "engine": {"name": "sglang", "version": "0.5.23"}}
    assert run(["plan", str(FIXED), "--format", "json",
                "--calibration", _profile(tmp_path, other, "newer")]) == 0
    cap = capsys.readouterr()
    [same] = json.loads(cap.out)["candidates"]
    assert same["tpotMs"] == model["tpotMs"] and "calibration" not in same
    assert "CAL001" in cap.err and "engine sglang 0.5.6.post1, not sglang 0.5.23" in cap.err


def test_gen_calibrate_prints_predicted_vs_measured(model_prediction, doubled, capsys):
    _, dec, _ = model_prediction
    _, _, tmp = doubled
    assert run(["calibrate", str(tmp / "run.json"), "--spec", str(PD),
                "-o", str(tmp / "again.yaml")]) == 0
    out = capsys.readouterr().out
    rows = {line.split("  ")[1].strip(): line.split() for line in out.splitlines()
            if line.startswith("  TPOT") or line.startswith("  TTFT p99")}
    # TPOT: predicted, measured = 2 x predicted, measured / predicted = 2.00
    assert rows["TPOT mean ms"][-3:] == [f"{dec.tpot_ms:,.1f}", f"{2 * dec.tpot_ms:,.1f}", "2.00"]
    # p99 is measured only (the model predicts mean and median)
    assert rows["TTFT p99 ms"][-3:-1] == ["-", f"{2 * model_prediction[0].ttft_ms:,.1f}"]
    assert "tpot    x2.000 on 1 run, residual 0.0%" in out


def test_gen_report_shows_the_calibration(doubled, capsys):
    _, profile, _ = doubled
    assert run(["report", str(PD), "--format", "json", "--calibration", str(profile)]) == 0
    page = json.loads(capsys.readouterr().out)
    dec = page["prediction"]["roles"]["decode"]
    assert dec["calibration"]["figures"]["tpotMs"]["factor"] == 2.0
