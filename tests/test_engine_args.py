"""roles[].engineArgs: every spelling of a derived flag is refused; API-server flags reach only
the pods that serve the API."""

from __future__ import annotations

import pytest

from generator import pipeline
from generator.engines.options import known_releases, release_options
from generator.engines.sglang import DERIVED_FLAGS as SGLANG_DERIVED
from generator.engines.vllm import DERIVED_FLAGS as VLLM_DERIVED
from tests.helpers import EXAMPLES, render_spec


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
