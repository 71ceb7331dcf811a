"""roles[].engineArgs: every spelling of a derived flag is refused; API-server flags reach only
the pods that serve the API."""

from __future__ import annotations

import pytest

from generator import pipeline
from generator.engines.options import known_releases, release_options
from generator.engines.sglang import DERIVED_FLAGS as SGLANG_DERIVED
from generator.engines.vllm import DERIVED_FLAGS as VLLM_DERIVED
from tests.helpers import EXAMPLES, render_spec, vllm_deployment


@pytest.mark.parametrize("engine,derived", [("vllm", VLLM_DERIVED), ("sglang", SGLANG_DERIVED)])
def test_every_spelling_of_a_derived_flag_is_known_as_derived(engine, derived):
    """In every release, each alias of a derived option (--tp-size/--tensor-parallel-size, -tp,
    negations) resolves to a name the derived table holds."""
    for version in known_releases(engine):
        opts = release_options(engine, version)
        for flag in derived:
            if flag not in opts.options:
                continue
            for name in opts.names(flag):
                assert opts.names(name) & set(derived), (engine, version, flag, name)


def _check(tmp_path, spec, role: str, args: list[str]):
    overlay = tmp_path / "o.yaml"
    overlay.write_text("spec:\n  roles:\n    - name: %s\n      engineArgs: %s\n" % (role, args))
    return pipeline.check(spec, [overlay])


@pytest.mark.parametrize("args", [["--tp-size", "8"], ["--tensor-parallel-size", "8"],
                                  ["--ep", "8"], ["--dp-size", "2"], ["--grpc-mode"]])
def test_sglang_derived_aliases_refused(tmp_path, args):
    # S3's decode keeps its Humming runner (QNT030) beside the derived flag under test.
    checked = _check(tmp_path, EXAMPLES / "s3-v4pro-pd-dp16.yaml", "decode",
                     ["--moe-runner-backend", "humming", *args])
    assert [f.code for f in checked.findings if f.severity.value == "error"] == ["ENG005"]


def test_api_server_count_on_serving_pods_only(tmp_path):
    overlay = tmp_path / "o.yaml"
    overlay.write_text("spec:\n  roles:\n    - name: decode\n"
                       "      engineArgs: [--api-server-count, '4', --enable-prompt-tokens-details]\n")
    _, plan, _ = render_spec(EXAMPLES / "s1-16xh20-pd.yaml", [overlay])
    launch = next(r for r in plan.roles if r.name == "decode").launch
    leader, worker = launch.argv(0), launch.argv(1)
    assert "--api-server-count" in leader and leader[leader.index("--api-server-count") + 1] == "4"
    assert "--headless" in worker and "--api-server-count" not in worker
    assert "--enable-prompt-tokens-details" in leader and "--enable-prompt-tokens-details" in worker


@pytest.mark.parametrize("args", [["--api-server-count", "0"], ["-asc=0"]])
def test_zero_api_servers_refused(tmp_path, args):
    checked = _check(tmp_path, EXAMPLES / "s1-16xh20-pd.yaml", "decode", args)
    assert [f.code for f in checked.findings if f.severity.value == "error"] == ["ENG005"]


@pytest.mark.parametrize("args", [["--uds", "/tmp/s"], ["--ssl-keyfile", "k.pem"]])
def test_listener_flags_refused(tmp_path, args):
    checked = _check(tmp_path, EXAMPLES / "s1-16xh20-pd.yaml", "prefill", args)
    errors = [f for f in checked.findings if f.severity.value == "error"]
    assert [f.code for f in errors] == ["ENG005"] and "HTTP on serving.port" in errors[0].hint


# -- values (ENG006): the engines' parsers refuse them at start ---------------------------------

def test_values_the_parser_accepts_are_not_reported():
    from generator.engines.options import value_problem
    # vLLM 0.33.0 human_readable_int_or_auto: 25.6k = 25,600, 1K = 1,024, auto and -1.
    for v in ("131072", "25.6k", "1K", "auto", "-1"):
        assert value_problem("vllm", "0.33.0", "--max-model-len", v) is None, v
    assert value_problem("vllm", "0.33.0", "--max-model-len", "1.5K") is not None  # binary: ints
    assert value_problem("vllm", "0.33.0", "--gpu-memory-utilization", "0.9") is None
    assert value_problem("vllm", "0.33.0", "--max-lora-rank", "64") is None        # int choices
    assert value_problem("vllm", "0.33.0", "--max-lora-rank", "12")[1].startswith("one of: 1, 8")
    # _optional_type reads None: --tool-strict-level None is accepted.
    assert value_problem("vllm", "0.33.0", "--tool-strict-level", "None") is None
    # vLLM 0.11.0's kv cache dtypes (vllm-releases.json): nvfp4 arrived later.
    assert value_problem("vllm", "0.11.0", "--kv-cache-dtype", "nvfp4") is not None
    assert value_problem("vllm", "0.33.0", "--kv-cache-dtype", "nvfp4") is None
    # A release whose choices were not dumped: only the type is checked.
    assert value_problem("sglang", "0.5.10", "--dtype", "float99") is None
    assert value_problem("sglang", "0.5.10", "--max-running-requests", "many") is not None


def test_sglang_engine_args_values_refused(tmp_path):
    checked = _check(tmp_path, EXAMPLES / "s3-v4pro-pd-dp16.yaml", "decode",
                     ["--moe-runner-backend", "humming", "--schedule-policy", "fifo",
                      "--decode-log-interval", "lots"])
    errors = [f for f in checked.findings if f.severity.value == "error"]
    assert [f.code for f in errors] == ["ENG006", "ENG006"]
    assert "--schedule-policy 'fifo' is not one of its choices" in errors[0].message
    assert "lpm, random, fcfs" in errors[0].hint
    assert "--decode-log-interval 'lots' is not an integer" in errors[1].message


def test_imported_option_values_refused_and_not_dropped_silently(tmp_path, capsys):
    from generator.cli import run
    manifest = tmp_path / "dep.yaml"
    manifest.write_text(vllm_deployment(
        "/models/DeepSeek-R1",
        '--tensor-parallel-size, "8", --max-num-seqs, many, --dtype, float99,\n'
        "               --kv-cache-dtype, fp9, --max-model-len, lots, --gpu-memory-utilization, "
        "high,\n               --tool-call-parser", models_pvc=True))
    assert run(["validate", str(manifest)]) == 1
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if " error ENG006 " in ln]
    # Each at its option's line (args start at line 15: --max-num-seqs and --dtype on 15).
    assert [ln.split(":")[1] for ln in lines] == ["15", "15", "16", "16", "16", "17"]
    assert "IMP003" not in err and "IMP005" not in err   # errors now, not warnings
    spec = tmp_path / "s.yaml"
    assert run(["import", str(manifest), "-o", str(spec)]) == 1
    assert "not carried over (ENG006" in spec.read_text()
