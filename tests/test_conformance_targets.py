"""Conformance of the platform targets: the argv each target's pods run AFTER the controller's
injection, through the engines' real parsers and configuration objects (engines venv).

How each pod's argv is obtained (the controllers' facts: generator/facts/controllers.py, read
from their tagged source):

* kserve: the preset's ``vllm serve /mnt/models`` line as KServe v0.20.0 renders it from the
  LLMInferenceService (its typed parallelism, model name, grace period), the access-log and
  shutdown arguments of the pinned vLLM release, then ``VLLM_ADDITIONAL_ARGS`` as the preset's
  ``eval`` splits it (:func:`kserve_argv`);
* rbg, aibrix: the rendered launcher script itself, run by ``/bin/sh`` with the environment the
  controller injects (RBG_LWP_* / POD_GROUP_INDEX, PODSET_NAME, STORM_SERVICE_NAME) and the
  template's own, against stub ``vllm``/``python3``/``getent``/``find`` that record the argv
  (:func:`launched_argv`);
* dynamo: the worker's args plus the rank flags the operator injects for ``multinode`` (the
  extracted flag lists), ``dynamo.vllm``'s own ``--disaggregation-mode`` consumed as Dynamo's
  parser does; vLLM then parses the rest with its engine-argument parser only
  (:func:`dynamo_argv`).

Cases pinned to releases the venv does not hold (Dynamo's bundled vLLM 0.26.0 / SGLang 0.5.16)
are checked against those releases' option lists instead.
"""

from __future__ import annotations

import json
import re
import shlex
import stat
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
import yaml

from generator.catalog import GPUS
from generator.engines.options import release_options
from generator.facts import controllers
from generator.targets import kserve
from tests.conformance.runner import build_engine_configs, check_commands, require_engines
from tests.helpers import model_config
from tests.test_conformance_engine_config import CAPABILITY, DEVICE, VENV_RELEASES
from tests.test_targets import IDS, render_case

POD_IP, LEADER_IP = "10.0.0.11", "10.0.0.10"
LEADER_HOST = "leader.example"


# --- KServe: the preset's command from the facts ----------------------------------------------

def _preset(spec: dict, key: str) -> str:
    pd = "prefill" in spec
    work = spec["prefill"] if key == "prefill" else spec
    kind = "" if not pd else ("prefill-" if key == "prefill" else "decode-")
    return f"kserve-config-llm-{kind}{'worker-data-parallel' if 'worker' in work else 'template'}"


def kserve_argv(obj: dict, key: str, kind: str, pod: int, rel: str, vllm: tuple[int, ...]
                ) -> list[str]:
    """The argv of pod ``pod`` of workload ``key`` (``decode``/``unified`` = spec, ``prefill``)
    and template ``kind`` (``template``: the leader or single pod, ``worker``) of a rendered
    LLMInferenceService, as KServe ``rel``'s preset command builds it."""
    spec = obj["spec"]
    work = spec["prefill"] if key == "prefill" else spec
    c = controllers.value("kserve", rel, "presets", _preset(spec, key), kind)
    par = work.get("parallelism", {})
    pod_spec = work[kind]
    env = {e["name"]: e.get("value") for e in pod_spec["containers"][0]["env"]}
    name, ns = spec["model"]["name"], obj["metadata"]["namespace"]
    values = {
        "--served-model-name": [name, f"publishers/{ns}/models/{name}"][:c["servedNames"]],
        "--port": [str(c["port"])],
        "--api-server-count": [env.get("VLLM_API_SERVER_COUNT") or str(c.get("apiServerCount"))],
        "--tensor-parallel-size": [str(par["tensor"])] if "tensor" in par else None,
        "--enable-expert-parallel": [] if par.get("expert") else None,
        "--data-parallel-size": [str(par.get("data", 1))],
        "--data-parallel-size-local": [str(par.get("dataLocal", 1))],
        "--data-parallel-address": [LEADER_IP],
        "--data-parallel-rpc-port": [str(par.get("dataRPCPort", c.get("dataRPCPort")))],
        "--data-parallel-start-rank": [str(pod * par.get("dataLocal", 1))],
        "--headless": [],
    }
    argv = list(c["program"])
    for flag in c["flags"]:
        if values[flag] is not None:
            argv += [flag, *values[flag]]
    # ACCESS_LOG_ARGS (vLLM >= 0.16.0) and SHUTDOWN_TIMEOUT_ARGS (>= 0.18.0): the preset script.
    argv += (["--disable-access-log-for-endpoints", "/health,/metrics,/ping"]
             if vllm >= (0, 16, 0) else ["--disable-uvicorn-access-log"])
    if vllm >= (0, 18, 0):
        tgps = pod_spec.get("terminationGracePeriodSeconds", 60)
        argv += ["--shutdown-timeout", str(max(0, tgps - c["preStopSleep"] - min(5, tgps)))]
    return argv + shlex.split(env["VLLM_ADDITIONAL_ARGS"])


def _kserve(name: str, files: dict, plan) -> list[dict]:
    obj = yaml.safe_load(files["llminferenceservice.yaml"])
    rel = controllers.normalise("kserve", None)
    vllm = tuple(int(x) for x in plan.dialect.split(".")[:3])
    out = []
    for rp in plan.roles:
        key = "prefill" if rp.mode == "prefill" else "spec"
        work = obj["spec"]["prefill"] if key == "prefill" else obj["spec"]
        for pod in range(len(rp.launch.per_pod)):
            kind = "template" if pod == 0 else "worker"
            # The preset script's own variables (its argument string, the API-server count)
            # are read by the script, not by vLLM.
            script = set(controllers.value("kserve", rel, "presets", _preset(obj["spec"], key),
                                           kind)["variables"]) | {kserve.API_SERVER_COUNT}
            env = {e["name"]: e["value"] for e in work[kind]["containers"][0]["env"]
                   if "value" in e and e["name"] not in script}
            out.append({"id": f"{name}/{rp.name}/pod{pod}", "mode": rp.mode,
                        "argv": kserve_argv(obj, key, kind, pod, rel, vllm), "env": env})
    return out


# --- RBG / AIBrix: run the rendered launcher ---------------------------------------------------

_STUB = """#!/bin/sh
# Records the argv of the exec'd engine; python3 -c (the leader's port check) succeeds.
if [ "$(basename "$0")" = python3 ] && [ "$1" = -c ]; then exit 0; fi
exec "$MOEGEN_REAL_PYTHON" -c 'import json, os, sys; json.dump([os.path.basename(sys.argv[1]), *sys.argv[2:]], open(os.environ["MOEGEN_ARGV_OUT"], "w"))' "$0" "$@"
"""


def _stubs(tmp: Path) -> Path:
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in (("vllm", _STUB), ("python3", _STUB),
                       ("getent", f"#!/bin/sh\necho '{LEADER_IP} {LEADER_HOST}'\n"),
                       ("find", "#!/bin/sh\nexit 0\n")):
        path = bin_dir / name
        path.write_text(body)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def _expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion of an env value."""
    return re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)),
                  value)


def launched_argv(container: dict, injected: dict[str, str], tmp: Path) -> list[str]:
    """Run ``container``'s launcher with the env the controller injects first (``injected``)
    and the container's own after it; return the argv it exec's."""
    env: dict[str, str] = dict(injected)
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = _expand(e["value"], env)
        elif e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "status.podIP":
            env[e["name"]] = POD_IP
    out = tmp / "argv.json"
    bin_dir = _stubs(tmp)
    env.update(PATH=f"{bin_dir}:/usr/bin:/bin", MOEGEN_ARGV_OUT=str(out),
               MOEGEN_REAL_PYTHON=sys.executable)
    command = container["command"]
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and out.exists(), proc.stderr
    return json.loads(out.read_text())


def _group(name: str, files: dict, plan, target: str, tmp: Path) -> list[dict]:
    envs = {e.role: dict(e.items) for e in plan.env_files}
    out = []
    if target == "rbg":
        obj = yaml.safe_load(files["rolebasedgroup.yaml"])
        rel = controllers.normalise("rbg", None)
        index, leader = (controllers.value("rbg", rel, "env", k)
                         for k in ("workerIndex", "leaderAddress"))
        for role in obj["spec"]["roles"]:
            rp = next((r for r in plan.roles if r.name == role["name"]), None)
            if rp is None:
                continue   # the router role
            lwp = role.get("leaderWorkerPattern")
            for pod in range(len(rp.launch.per_pod)):
                tmpl = (lwp["leaderTemplatePatch"] if pod == 0 else lwp["template"]) if lwp \
                    else role["standalonePattern"]["template"]
                injected = {index: str(pod), leader: LEADER_HOST} if lwp else {}
                argv = launched_argv(tmpl["spec"]["containers"][0], injected, tmp)
                out.append({"id": f"{name}/{rp.name}/pod{pod}", "mode": rp.mode, "argv": argv,
                            "env": envs[rp.name]})
    else:
        obj = yaml.safe_load(files["stormservice.yaml"])
        rel = controllers.normalise("aibrix", None)
        keys = {k: controllers.value("aibrix", rel, "env", k)
                for k in ("groupIndex", "groupSize", "podSetName", "serviceName")}
        for role in obj["spec"]["template"]["spec"]["roles"]:
            rp = next(r for r in plan.roles if r.name == role["name"])
            size = role.get("podGroupSize", 1)
            for pod in range(size):
                injected = {keys["podSetName"]: f"{plan.name}-roleset-abcde-{rp.name}-0a1b2c-0",
                            keys["serviceName"]: plan.name}
                if "podGroupSize" in role:
                    injected |= {keys["groupIndex"]: str(pod), keys["groupSize"]: str(size)}
                argv = launched_argv(role["template"]["spec"]["containers"][0], injected, tmp)
                out.append({"id": f"{name}/{rp.name}/pod{pod}", "mode": rp.mode, "argv": argv,
                            "env": envs[rp.name]})
    return out


# --- Dynamo: the operator's injection from the facts ------------------------------------------

def dynamo_argv(component: dict, engine: str, pod: int, gpus: int, rel: str) -> list[str]:
    """The worker's command line on pod ``pod`` of a component after the operator's injection
    (ai-dynamo/dynamo backend_vllm.go / backend_sglang.go as the facts list them)."""
    main = component["podTemplate"]["spec"]["containers"][0]
    args = list(main["args"])
    nodes = component.get("multinode", {}).get("nodeCount", 1)
    if nodes > 1 and engine == "vllm":
        def value(flag: str) -> int:
            return int(args[args.index(flag) + 1]) if flag in args else 1
        world = value("--tensor-parallel-size") * value("--pipeline-parallel-size")
        if world > gpus:
            args += ["--distributed-executor-backend", "mp", "--nnodes", str(nodes),
                     "--master-addr", LEADER_HOST,
                     "--master-port", str(controllers.value("dynamo", rel, "vllm", "mpMasterPort")),
                     "--node-rank", str(pod)] + (["--headless"] if pod else [])
        else:
            local = gpus // world
            args += ["--data-parallel-hybrid-lb"]
            if "--data-parallel-size" not in args:
                args += ["--data-parallel-size", str(local * nodes)]
            args += ["--data-parallel-size-local", str(local),
                     "--data-parallel-start-rank", str(local * pod),
                     "--data-parallel-address", LEADER_HOST, "--data-parallel-rpc-port",
                     str(controllers.value("dynamo", rel, "vllm", "dataParallelRPCPort"))]
    elif nodes > 1:
        port = controllers.value("dynamo", rel, "sglang", "distInitPort")
        args += ["--dist-init-addr", f"{LEADER_HOST}:{port}", "--nnodes", str(nodes),
                 "--node-rank", str(pod)]
    return [*main["command"], *args]



def _dynamo(name: str, files: dict, plan, checked) -> list[dict]:
    obj = yaml.safe_load(files["dynamographdeployment.yaml"])
    rel = controllers.normalise("dynamo", checked.spec.spec.target.version)
    engine = plan.engine
    envs = {e.role: dict(e.items) for e in plan.env_files}
    out = []
    for c in obj["spec"]["components"]:
        if c["type"] == "frontend":
            continue
        rp = next(r for r in plan.roles if r.name == c["name"])
        pool = checked.spec.spec.nodePools[
            next(r for r in checked.spec.spec.roles if r.name == rp.name).nodePool]
        gpus = c["podTemplate"]["spec"]["containers"][0]["resources"]["limits"][
            GPUS[pool.gpu].resource]
        for pod in range(c.get("multinode", {}).get("nodeCount", 1)):
            argv = dynamo_argv(c, engine, pod, gpus, rel)
            out.append({"id": f"{name}/{rp.name}/pod{pod}", "mode": rp.mode, "argv": argv,
                        "env": envs[rp.name]})
    return out


def _strip_dynamo(argv: list[str]) -> list[str]:
    """What dynamo.vllm's own parser consumes (``--disaggregation-mode X``) removed, and the
    ``python3 -m dynamo.vllm`` program: the engine arguments vLLM's parser sees."""
    out, skip = [], False
    for a in argv[3:]:
        if skip:
            skip = False
            continue
        if a == "--disaggregation-mode":
            skip = True
            continue
        out.append(a)
    return out


# --- all target pods --------------------------------------------------------------------------

def target_pods(tmp: Path) -> list[dict]:
    """{"id", "target", "engine", "version", "mode", "argv", "env", "case"} of every pod of
    every golden target case."""
    out = []
    for name in IDS:
        checked, plan, files = render_case(name)
        target = checked.spec.spec.target.name
        if target == "kserve":
            pods = _kserve(name, files, plan)
        elif target == "dynamo":
            pods = _dynamo(name, files, plan, checked)
        else:
            pods = _group(name, files, plan, target, tmp)
        for p in pods:
            out.append({**p, "target": target, "engine": plan.engine,
                        "version": checked.dialect.version, "case": name})
    return out


@pytest.fixture(scope="module")
def pods(tmp_path_factory) -> list[dict]:
    return target_pods(tmp_path_factory.mktemp("launch"))


def test_every_target_pod_has_an_argv(pods) -> None:
    """Every platform and both engines are covered; RBG/AIBrix pods run exactly the argv the
    kubernetes target's launcher runs (the controllers inject env, no flags)."""
    assert {p["target"] for p in pods} == {"kserve", "rbg", "dynamo", "aibrix"}
    assert {(p["target"], p["engine"]) for p in pods} >= {
        ("kserve", "vllm"), ("rbg", "vllm"), ("rbg", "sglang"), ("aibrix", "vllm"),
        ("aibrix", "sglang"), ("dynamo", "vllm"), ("dynamo", "sglang")}
    for p in pods:
        if p["target"] in ("rbg", "aibrix"):
            _, plan, _ = render_case(p["case"])
            role, pod = p["id"].split("/")[1], int(p["id"].rsplit("pod", 1)[1])
            launch = next(r for r in plan.roles if r.name == role).launch
            want = launch.argv(pod, substitute=True)
            assert p["argv"] == want, p["id"]


def test_kserve_pods_take_the_presets_rank_flags(pods) -> None:
    """S1's decode on KServe: the preset adds the data-parallel flags from the typed
    parallelism (DP16 over 2 pods of 8: start ranks 0 and 2 x 8 / 2 = 8), moegen's memory plan
    rides in VLLM_ADDITIONAL_ARGS, and no flag of moegen's appears twice."""
    decode = {p["id"]: p["argv"] for p in pods if p["case"] == "kserve-s1"
              and "/decode/" in p["id"]}
    for pod, argv in enumerate((decode["kserve-s1/decode/pod0"], decode["kserve-s1/decode/pod1"])):
        flags = [a for a in argv if a.startswith("--")]
        assert len(flags) == len(set(flags)), flags
        assert argv[argv.index("--data-parallel-start-rank") + 1] == str(8 * pod)
        assert argv[argv.index("--data-parallel-size") + 1] == "16"
        assert argv[argv.index("--max-num-seqs") + 1] == "13"   # moegen's, via the env var
        assert ("--headless" in argv) == (pod == 1)
        # moegen's grace period for S1: preStop 10 + drain 66 (1.5 x the predicted mean request,
        # 20.666 s + 1200 x 19.4 ms = 43.95 s, generator/durations.py) + teardown 15 + 5 = 96;
        # KServe's shutdownTimeout = tgps 96 - its preStop 15 - min(5, 96) = 76 (config_merge.go)
        assert argv[argv.index("--shutdown-timeout") + 1] == "76"


def _vllm_commands(pods: list[dict]) -> list[dict]:
    out = []
    for p in pods:
        if p["engine"] != "vllm" or p["version"] != VENV_RELEASES["vllm"]:
            continue
        if p["target"] == "dynamo":
            out.append({"id": p["id"], "argv": _strip_dynamo(p["argv"]), "parser": "engine",
                        "env": p["env"]})
        else:
            out.append({"id": p["id"], "argv": p["argv"], "env": p["env"]})
    return out


def test_every_target_vllm_argv_parses(pods) -> None:
    """vLLM 0.33.0's own parser accepts every target's vLLM pod argv (Dynamo's: the engine
    argument parser dynamo.vllm uses); the env holds only VLLM_* vLLM reads."""
    require_engines()
    commands = _vllm_commands(pods)
    assert {c["id"].split("-")[0] for c in commands} == {"kserve", "rbg", "aibrix", "dynamo"}
    results = check_commands("vllm", commands)
    failed = [f"{r['id']}: {r['error']}" for r in results if not r["ok"]]
    assert not failed, "\n".join(failed)
    unknown = [f"{r['id']}: {r['unknown_env']}" for r in results if r["unknown_env"]]
    assert not unknown, "\n".join(unknown)
    # The engine-only parser refuses an API-server flag: what dynamo.vllm would refuse.
    dyn = next(c for c in commands if c.get("parser") == "engine")
    [bad] = check_commands("vllm", [{**dyn, "id": "dynamo-port", "argv": [*dyn["argv"],
                                                                          "--port", "8000"]}])
    assert not bad["ok"]


def test_every_target_sglang_argv_parses(pods) -> None:
    """SGLang 0.5.23's ServerArgs parser (what dynamo.sglang also uses) accepts every target's
    SGLang pod argv."""
    require_engines()
    commands = []
    for p in pods:
        if p["engine"] == "sglang" and p["version"] == VENV_RELEASES["sglang"]:
            argv = p["argv"]
            if p["target"] == "dynamo":   # python3 -m dynamo.sglang: the same ServerArgs parser
                argv = ["python3", "-m", "sglang.launch_server", *argv[3:]]
            commands.append({"id": p["id"], "argv": argv})
    assert {c["id"].split("-")[0] for c in commands} == {"rbg", "aibrix", "dynamo"}
    results = check_commands("sglang", commands)
    failed = [f"{r['id']}: {r['error']}" for r in results if not r["ok"]]
    assert not failed, "\n".join(failed)


def test_other_releases_use_only_their_options(pods) -> None:
    """Pods pinned to releases the venv does not hold (Dynamo's bundled vLLM 0.26.0, SGLang
    0.5.16): every option is one of that release's (its parser dump)."""
    checked = 0
    for p in pods:
        if p["version"] == VENV_RELEASES[p["engine"]]:
            continue
        options = release_options(p["engine"], p["version"]).options
        argv = _strip_dynamo(p["argv"]) if p["target"] == "dynamo" and p["engine"] == "vllm" \
            else p["argv"][3:]
        unknown = [a.split("=")[0] for a in argv if a.startswith("--")
                   and a.split("=")[0] not in options]
        assert not unknown, (p["id"], unknown)
        checked += 1
    assert checked >= 4


def test_target_engine_configs_build(pods) -> None:
    """vLLM's configuration objects (create_engine_config) build from every target's vLLM
    argv, and prefill's and decode's NIXL compatibility hashes agree per case; SGLang's
    ServerArgs resolve on every target's SGLang argv."""
    require_engines()
    for engine in ("vllm", "sglang"):
        items, modes = [], defaultdict(list)
        for p in pods:
            if p["engine"] != engine or p["version"] != VENV_RELEASES[engine]:
                continue
            checked, _, _ = render_case(p["case"])
            role = next(r for r in checked.spec.spec.roles if r.name == p["id"].split("/")[1])
            pool = checked.spec.spec.nodePools[role.nodePool]
            gpu = GPUS[pool.gpu]
            argv = p["argv"]
            if p["target"] == "dynamo":
                argv = (["vllm", "serve", *_strip_dynamo(argv)] if engine == "vllm"
                        else ["python3", "-m", "sglang.launch_server", *argv[3:]])
                if engine == "vllm":
                    k = argv.index("--model")
                    argv = argv[:2] + [argv[k + 1]] + argv[2:k] + argv[k + 2:]
            rdma = checked.spec.spec.network.rdma
            items.append({"id": p["id"], "engine": engine, "argv": argv,
                          "env": {k: v for k, v in p["env"].items()
                                  if k.startswith(("VLLM_", "SGLANG_"))},
                          "model_config": model_config(checked),
                          "gpu": {"name": DEVICE[gpu.id], "total_bytes": gpu.hbm_mib * 2**20,
                                  "capability": CAPABILITY[gpu.generation],
                                  "count": pool.gpusPerNode},
                          "ib_devices": list(rdma.devices) if rdma else []})
            modes[p["case"]].append((p["id"], p["mode"]))
        results = {r["id"]: r for r in build_engine_configs(engine, items)}
        bad = {i: r["error"] for i, r in results.items() if not r["ok"]}
        assert not bad, bad
        if engine == "vllm":
            pairs = 0
            for case, ids in modes.items():
                hashes = {m: {results[i]["nixl_hash"] for i, mm in ids if mm == m}
                          for m in ("prefill", "decode")}
                if not all(hashes.values()) or None in hashes["prefill"] | hashes["decode"]:
                    continue
                pairs += 1
                assert len(hashes["prefill"] | hashes["decode"]) == 1, (case, hashes)
            assert pairs >= 3
