"""``gen bench``: a Kubernetes Job that runs the engine's own benchmark client against the
deployment's entry point at the spec's traffic (docs/calibration.md).

The client ships in the engine image: vLLM's ``vllm bench serve`` (vLLM 0.33.0
vllm/benchmarks/serve.py) and SGLang's ``python -m sglang.benchmark.serving`` (SGLang 0.5.23
python/sglang/benchmark/serving.py; ``sglang.bench_serving`` is its deprecated alias there). Both
run the random dataset at the spec's mean lengths (``spec.traffic``; no dataset download:
vLLM's ``random`` draws token ids; SGLang's ``random-ids`` does, where its ``random`` samples
ShareGPT text and downloads it, python/sglang/benchmark/datasets/random.py), a closed loop of
the decoding roles' ``sizing.concurrency`` x replicas requests in flight (the load the prediction
is for), ``--ignore-eos`` (vLLM; SGLang ignores EOS unless ``--disable-ignore-eos``) so every
request generates its output length, and the tokenizer of the mounted weights.

The result is written to ``/results`` (an emptyDir) and printed to the pod's log between marker
lines, so ``kubectl logs job/<name>`` carries it (``gen calibrate`` reads such a log), and the
pod stays up ``keep_s`` seconds for ``kubectl cp <pod>:/results``. Each run stores moegen's
configuration key (vLLM ``--metadata``, SGLang ``--tag``) so ``gen calibrate`` can tell a run of
another configuration (CAL005).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from ..calibration.config import configuration
from ..calibration.results import CONFIG_KEY
from ..deployment import Deployment
from ..engines.routers import rendered_router
from ..errors import UsageError
from .. import security
from ..naming import L_COMPONENT, L_INSTANCE, L_ROLE, client_service
from .plan import CONTROL_SECURITY, DeploymentPlan

#: Where the client writes its result (an emptyDir).
RESULT_DIR = "/results"
#: Marker lines around the result in the pod's log (generator/calibration/results.py reads
#: every JSON line of a log, the markers are for people).
BEGIN, END = "=== moegen bench result", "=== end of moegen bench result"
#: Client pod requests (= limits): the client is one asyncio process that tokenizes the random
#: prompts up front and streams every response; 4 cores and 8 GiB hold the tokenizer and
#: thousands of streams (vLLM 0.33.0 vllm/benchmarks/serve.py: one aiohttp session).
BENCH_RESOURCES = {"cpu": "4", "memory": "8Gi", "ephemeral-storage": "2Gi"}
#: Prompts per request in flight: each of the ``concurrency`` slots serves this many requests in
#: turn, so the first and last wave (ramp-up, drain) are a fifth of the run.
PROMPTS_PER_SLOT = 5
#: Seconds the client waits for the entry point after its own start, on top of the engines'
#: startup budget (the Job may be applied together with the deployment).
READY_MARGIN_S = 120
#: The images run Hugging Face's libraries offline: the tokenizer is the mounted weights', and
#: nothing is downloaded (huggingface_hub environment variables,
#: https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables).
BENCH_ENV = {"HF_HUB_OFFLINE": "1", "HOME": security.HOME}
#: The client's root filesystem is read-only (CONTROL_SECURITY) and it imports the engine,
#: torch and transformers, whose caches resolve below ``~`` and whose temporary files go to
#: ``tempfile.gettempdir()`` (it raises "No usable temporary directory found" when no candidate
#: is writable: https://docs.python.org/3/library/tempfile.html#tempfile.gettempdir): the
#: engine pods' /tmp emptyDir with ``HOME`` in it (generator/security.py TMP_MOUNT), MiB.
BENCH_TMP_MIB = 512


@dataclass(frozen=True)
class BenchPlan:
    """The bench Job: every value of ``templates/bench-job.yaml.j2``."""

    name: str
    namespace: str
    labels: dict[str, str]
    image: str
    command: list[str]
    args: list[str]
    env: list[dict[str, str]]
    volumes: list[dict[str, Any]]
    mounts: list[dict[str, Any]]
    url: str
    entry: str
    result_file: str
    concurrency: int
    num_prompts: int
    input_tokens: int
    output_tokens: int
    keep_s: int
    resources: dict[str, Any] = field(default_factory=dict)
    security_context: dict[str, Any] = field(default_factory=dict)
    image_pull_secrets: list[dict[str, str]] = field(default_factory=list)


def entry_point(model: Deployment, plan: DeploymentPlan, url: str | None) -> tuple[str, str]:
    """``(base URL, what it is)`` of the deployment's entry point: the router Service in
    prefill/decode mode, else the first API role's client Service; ``url`` (``gen bench
    --url``) replaces it. Raises UsageError behind an inference gateway without ``url`` (the
    Gateway's address belongs to its implementation: its ``status.addresses``)."""
    if url:
        return url.rstrip("/"), "the URL given with --url"
    spec = model.spec.spec
    kind = rendered_router(spec)
    if kind == "gateway":
        ref = spec.router.gateway.parentRef
        raise UsageError(f"the entry point is the Gateway {ref.name!r}, whose address depends on "
                         "its implementation: pass --url http://ADDRESS[:PORT] (kubectl get "
                         f"gateway {ref.name} -o jsonpath='{{.status.addresses[0].value}}')")
    if kind == "deployment" and plan.router is not None:
        return f"http://{plan.router.name}:{plan.router.port}", f"router Service {plan.router.name}"
    names = {s.name: s for s in plan.services if not s.headless}
    for role in spec.roles:
        svc = names.get(client_service(plan.name, role.name))
        if svc is not None:
            return f"http://{svc.name}:{svc.ports[0]['port']}", f"client Service {svc.name}"
    raise UsageError("the deployment renders no entry point (no router and no client Service): "
                     "pass --url")


def traffic(model: Deployment) -> tuple[int, int, int]:
    """``(input tokens, output tokens, concurrency)`` the spec's prediction is for; raises
    UsageError without ``spec.traffic`` or a sized decoding role."""
    s = model.spec.spec
    if s.traffic is None:
        raise UsageError("set spec.traffic (inputTokens, outputTokens): the lengths the "
                         "benchmark sends")
    unsized = [r.name for r in s.roles if r.mode != "prefill"
               and (r.sizing is None or r.sizing.concurrency is None)]
    if unsized:
        raise UsageError(f"set roles[].sizing.concurrency on {', '.join(unsized)}: the "
                         "requests in flight the benchmark holds")
    # The deployment model's load: the stated one, or the engine's default (engine-default).
    conc = sum(r.replicas * (ri.concurrency if ri is not None else 1)
               for r, ri in zip(s.roles, model.roles) if r.mode != "prefill")
    return s.traffic.inputTokens, s.traffic.outputTokens, conc


def client_args(engine: str, url: str, served: str, tokenizer: str, lengths: tuple[int, int],
                concurrency: int, prompts: int, rate: float | None, ready_s: int,
                result: str, key: str) -> list[str]:
    """The benchmark client's command line (flags of vLLM 0.33.0 vllm/benchmarks/serve.py and
    vllm/benchmarks/datasets/datasets.py; SGLang 0.5.23 python/sglang/benchmark/serving.py)."""
    isl, osl = lengths
    rate_s = "inf" if rate is None else f"{rate:g}"
    if engine == "vllm":
        return ["vllm", "bench", "serve", "--backend", "openai", "--base-url", url,
                "--endpoint", "/v1/completions", "--model", served, "--tokenizer", tokenizer,
                "--dataset-name", "random", "--random-input-len", str(isl),
                "--random-output-len", str(osl), "--random-range-ratio", "0.0",
                "--num-prompts", str(prompts), "--max-concurrency", str(concurrency),
                "--request-rate", rate_s, "--ignore-eos", "--seed", "0",
                "--ready-check-timeout-sec", str(ready_s), "--save-result",
                "--result-dir", RESULT_DIR, "--result-filename", result.rsplit("/", 1)[1],
                "--metadata", f"{CONFIG_KEY}={key}"]
    # SGLang: --random-range-ratio 1.0 draws every length at its full value (lengths are
    # uniform in [full x ratio, full]: python/sglang/benchmark/datasets/common.py).
    return ["python3", "-m", "sglang.benchmark.serving", "--backend", "sglang-oai",
            "--base-url", url, "--model", tokenizer, "--served-model-name", served,
            "--tokenizer", tokenizer, "--dataset-name", "random-ids",
            "--random-input-len", str(isl), "--random-output-len", str(osl),
            "--random-range-ratio", "1.0", "--num-prompts", str(prompts),
            "--max-concurrency", str(concurrency), "--request-rate", rate_s, "--seed", "0",
            "--ready-check-timeout-sec", str(ready_s), "--output-file", result,
            "--tag", f"{CONFIG_KEY}={key}"]


def bench_plan(model: Deployment, plan: DeploymentPlan, *, url: str | None = None,
               num_prompts: int | None = None, request_rate: float | None = None,
               keep_s: int = 300) -> BenchPlan:
    """The bench Job of a deployment that passed every check (see the module docstring).
    Raises UsageError when the spec has no traffic to send or no reachable entry point."""
    spec = model.spec
    s = spec.spec
    isl, osl, conc = traffic(model)
    base, entry = entry_point(model, plan, url)
    name = f"{plan.name}-bench"
    ext = "json" if s.engine.name == "vllm" else "jsonl"
    result = f"{RESULT_DIR}/{name}.{ext}"
    prompts = num_prompts or max(PROMPTS_PER_SLOT * conc, 10)
    startup = max((h.startup_s for h in model.host if h is not None), default=0)
    args = client_args(s.engine.name, base, s.model.name, s.model.path, (isl, osl), conc,
                       prompts, request_rate, startup + READY_MARGIN_S, result,
                       configuration(spec)["key"])
    script = (f'set -e; "$@"; echo {shlex.quote(BEGIN + " " + result)}; '
              f"cat {shlex.quote(result)}; echo; echo {shlex.quote(END)}; sleep {int(keep_s)}")
    volumes = [{"name": "results", "emptyDir": {"sizeLimit": "1Gi"}},
               {"name": "tmp", "emptyDir": {"sizeLimit": f"{BENCH_TMP_MIB}Mi"}}]
    mounts = [{"name": "results", "mountPath": RESULT_DIR},
              {"name": "tmp", "mountPath": security.TMP_MOUNT}]
    if s.model.volume is not None:
        volumes.append({"name": "model", **s.model.volume.sources()})
        mounts.append({"name": "model", "mountPath": s.model.path, "readOnly": True})
    env = [{"name": k, "value": v} for k, v in sorted(BENCH_ENV.items())]
    labels = {**plan.labels, L_COMPONENT: "bench", L_ROLE: "bench", L_INSTANCE: plan.name}
    pod = s.pod
    return BenchPlan(
        name=name, namespace=plan.namespace, labels=labels, image=s.engine.image,
        command=["/bin/sh", "-c", script, "moegen-bench"], args=args, env=env,
        volumes=volumes, mounts=mounts, url=base, entry=entry, result_file=result,
        concurrency=conc, num_prompts=prompts, input_tokens=isl, output_tokens=osl,
        keep_s=int(keep_s),
        resources={"requests": dict(BENCH_RESOURCES), "limits": dict(BENCH_RESOURCES)},
        security_context=dict(CONTROL_SECURITY),
        image_pull_secrets=[{"name": n} for n in (pod.imagePullSecrets or [])] if pod else [])
