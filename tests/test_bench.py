"""gen bench (issue 32 item 4): a Job running the engine's own benchmark client against the
deployment's entry point at the spec's traffic; valid Kubernetes, deterministic."""

from __future__ import annotations

import kubernetes_validate
import pytest
import yaml

from generator.calibration.config import configuration
from generator.cli import run
from tests.helpers import EXAMPLES, K8S_VERSION, ROOT

PD = EXAMPLES / "s1-16xh20-pd.yaml"            # vLLM 0.33.0, router, traffic 3500/1200
SGL = EXAMPLES / "s3-v4pro-pd-dp16.yaml"       # SGLang, traffic 3500/1500, 256 in flight


def _bench(capsys, spec, *extra) -> tuple[int, dict | None, str]:
    rc = run(["bench", str(spec), *map(str, extra)])
    cap = capsys.readouterr()
    return rc, (yaml.safe_load(cap.out) if rc == 0 else None), cap.err


def _arg(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


@pytest.fixture(scope="module")
def pd_job():
    """The PD example's Job (rendered once; the CLI's text is checked in its own test)."""
    from generator import pipeline
    from generator.manifests.bench import bench_plan
    from generator.targets.templates import render
    checked = pipeline.check(PD)
    plan = pipeline.deployment_plan(checked)
    text = render("bench-job.yaml.j2", plan=plan, b=bench_plan(checked.model, plan))
    return text, yaml.safe_load(text), checked


def test_the_job_is_valid_kubernetes(pd_job):
    _, job, _ = pd_job
    kubernetes_validate.validate(job, K8S_VERSION, strict=True)
    assert job["kind"] == "Job" and job["spec"]["backoffLimit"] == 0
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_vllm_client_at_the_spec_traffic_through_the_router(pd_job):
    _, job, checked = pd_job
    [c] = job["spec"]["template"]["spec"]["containers"]
    args = c["args"]
    assert c["image"] == "vllm/vllm-openai:v0.33.0"            # the engine's image
    assert args[:3] == ["vllm", "bench", "serve"]
    # the router Service in PD mode (router port 8080 in the example's rendered Service)
    assert _arg(args, "--base-url") == "http://dsv3-pd-router:8080"
    assert (_arg(args, "--random-input-len"), _arg(args, "--random-output-len")) == ("3500", "1200")
    assert _arg(args, "--dataset-name") == "random" and _arg(args, "--random-range-ratio") == "0.0"
    # decode sizing.concurrency 200 x 1 replica in flight; 5 prompts per slot: 1000
    assert (_arg(args, "--max-concurrency"), _arg(args, "--num-prompts")) == ("200", "1000")
    assert _arg(args, "--model") == "deepseek-ai/DeepSeek-V3"     # --served-model-name
    assert _arg(args, "--tokenizer") == "/models/DeepSeek-V3"     # the mounted weights
    assert "--ignore-eos" in args and "--save-result" in args
    key = configuration(checked.spec)["key"]
    assert _arg(args, "--metadata") == f"moegen.config={key}"
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert mounts["model"] == {"name": "model", "mountPath": "/models/DeepSeek-V3",
                               "readOnly": True}
    assert mounts["results"]["mountPath"] == "/results"
    # the result goes to the log (kubectl logs) and stays for kubectl cp (300 s)
    script = c["command"][2]
    assert "cat /results/dsv3-pd-bench.json" in script and script.endswith("sleep 300")


def test_the_read_only_client_has_a_writable_home_and_tmp(pd_job):
    """The client container's root filesystem is read-only (CONTROL_SECURITY) and it imports
    vLLM/SGLang, torch and transformers, whose caches resolve below ~ and whose temporary files
    go to tempfile.gettempdir() (which raises when no candidate is writable): as in the engine
    pods (generator/security.py TMP_MOUNT, HOME), /tmp is an emptyDir and HOME points into it."""
    _, job, _ = pd_job
    pod = job["spec"]["template"]["spec"]
    [c] = pod["containers"]
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert {"name": "HOME", "value": "/tmp"} in c["env"]
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]


def test_cli_is_deterministic_and_writes_a_file(pd_job, capsys, tmp_path):
    text, _, _ = pd_job
    rc, job, _ = _bench(capsys, PD)
    assert rc == 0 and yaml.safe_load(text) == job
    assert run(["bench", str(PD), "-o", str(tmp_path)]) == 0
    assert run(["bench", str(PD), "-o", str(tmp_path)]) == 0      # its own file is replaced
    assert (tmp_path / "bench-job.yaml").read_text() == text


def test_sglang_client_uses_random_ids_at_full_length(capsys):
    rc, job, _ = _bench(capsys, SGL, "--num-prompts", "64", "--request-rate", "8", "--keep", "0")
    assert rc == 0
    kubernetes_validate.validate(job, K8S_VERSION, strict=True)
    [c] = job["spec"]["template"]["spec"]["containers"]
    args = c["args"]
    assert args[:3] == ["python3", "-m", "sglang.benchmark.serving"]
    # random-ids: no ShareGPT download; range ratio 1.0: every length at its full value
    assert (_arg(args, "--dataset-name"), _arg(args, "--random-range-ratio")) == ("random-ids", "1.0")
    assert (_arg(args, "--random-input-len"), _arg(args, "--random-output-len")) == ("3500", "1500")
    assert (_arg(args, "--num-prompts"), _arg(args, "--request-rate")) == ("64", "8")
    assert _arg(args, "--output-file").endswith(".jsonl")
    assert _arg(args, "--tag").startswith("moegen.config=")
    assert c["command"][2].endswith("sleep 0")


def test_unified_role_is_reached_through_its_client_service(capsys, tmp_path):
    overlay = tmp_path / "t.yaml"
    overlay.write_text("spec:\n  traffic: {inputTokens: 1000, outputTokens: 100}\n")
    rc, job, _ = _bench(capsys, EXAMPLES / "s1-32xh20-unified.yaml", "-f", overlay)
    assert rc == 0
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    assert _arg(args, "--base-url") == "http://dsv3-dp32-serve-api:8000"
    assert _arg(args, "--max-concurrency") == "200"


def test_without_traffic_or_behind_a_gateway_it_says_what_is_missing(capsys):
    rc, _, err = _bench(capsys, EXAMPLES / "s1-32xh20-unified.yaml")
    assert rc == 2 and "set spec.traffic" in err
    rc, _, err = _bench(capsys, PD, "-f", ROOT / "overlays" / "inference-gateway.yaml")
    assert rc == 2 and "pass --url" in err and "'inference-gateway'" in err
    rc, job, _ = _bench(capsys, PD, "-f", ROOT / "overlays" / "inference-gateway.yaml",
                        "--url", "http://10.0.0.1:80/")
    assert rc == 0
    assert _arg(job["spec"]["template"]["spec"]["containers"][0]["args"],
                "--base-url") == "http://10.0.0.1:80"
