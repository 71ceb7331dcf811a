"""Extract the per-release facts of the platform controllers moegen renders for into package data.

The targets of ``spec.target`` (generator/targets: KServe, RBG, Dynamo, AIBrix) hand moegen's
pods to a controller that injects rank flags, environment and ports of its own. What each
controller release injects, its API version and the fields its CRD has are read here from the
controller's tagged source (git mirrors of the upstream repositories, no work tree: ``git show
<ref>:<path>``), every fact with the file and line it comes from, and written to
``generator/facts/data/controllers.json``. ``tests/test_data_drift.py`` re-runs the extraction
when the mirrors are at hand and fails when the committed file drifts.

Sources (``--mirrors DIR``, default ``../.mirror`` beside the checkout, or $MOEGEN_MIRRORS;
``<owner>+<name>/repo`` git directories):

* kserve/kserve v0.20.0: config/llmisvcconfig (the LLMInferenceServiceConfig presets),
  pkg/controller/v1alpha2/llmisvc, config/crd/full/llmisvc;
* sgl-project/rbg v0.7.0 (the stable release) and v0.8.0-alpha.5: api/workloads, pkg/discovery,
  pkg/reconciler, config/crd/bases;
* ai-dynamo/dynamo 1.4.0: the release/1.4.0 branch point (commit e147cee, the parent of
  c13fdcec6 "bump version to 1.5.0 post 1.4.0 branch cut"; read from the fork wxsms/dynamo
  whose main carries the upstream commits, the release tag is not in the mirror):
  deploy/operator, components/src/dynamo, pyproject.toml;
* vllm-project/aibrix v0.7.0: pkg/controller, config/crd/orchestration.

Usage: python tools/extract_controllers.py [--mirrors DIR] [OUT_JSON]
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "generator" / "facts" / "data" / "controllers.json"


def mirrors_dir() -> Path:
    """Where the git mirrors are ($MOEGEN_MIRRORS, else ``.mirror`` beside the checkout)."""
    env = os.environ.get("MOEGEN_MIRRORS")
    return Path(env) if env else ROOT.parent / ".mirror"


#: target -> (upstream repository cited, mirror directory, {release: git ref}).
SOURCES = {
    "kserve": ("kserve/kserve", "kserve+kserve", {"v0.20.0": "v0.20.0"}),
    "rbg": ("sgl-project/rbg", "sgl-project+rbg", {"v0.7.0": "v0.7.0",
                                                     "v0.8.0-alpha.5": "v0.8.0-alpha.5"}),
    "dynamo": ("ai-dynamo/dynamo", "wxsms+dynamo",
               {"1.4.0": "e147ceeac0563354f530b9624d0fc90ccfa6952a"}),
    "aibrix": ("vllm-project/aibrix", "vllm-project+aibrix", {"v0.7.0": "v0.7.0"}),
}


class Source:
    """One controller release: reads files at its ref and cites ``repo@release:path:line``."""

    def __init__(self, target: str, release: str, mirrors: Path) -> None:
        self.repo, mirror, refs = SOURCES[target]
        self.release, self.ref = release, refs[release]
        self.git = mirrors / mirror / "repo"
        if not self.git.is_dir():
            raise FileNotFoundError(f"no git mirror {self.git}")

    def commit(self) -> str:
        """The full commit the release's ref names."""
        return subprocess.run(["git", f"--git-dir={self.git}", "rev-parse", f"{self.ref}^{{commit}}"],
                              check=True, capture_output=True, text=True).stdout.strip()

    def text(self, path: str) -> str:
        """The file ``path`` at the release."""
        return subprocess.run(["git", f"--git-dir={self.git}", "show", f"{self.ref}:{path}"],
                              check=True, capture_output=True, text=True).stdout

    def cite(self, path: str, line: int | None = None) -> str:
        """``repo@tag:path[:line]`` (a release read at a commit: ``repo@<short commit>``)."""
        at = self.ref[:7] if re.fullmatch(r"[0-9a-f]{40}", self.ref) else self.ref
        return f"{self.repo}@{at}:{path}" + (f":{line}" if line else "")

    def find(self, path: str, pattern: str, after: int = 0) -> tuple[int, re.Match]:
        """The first line (1-based, after line ``after``) of ``path`` matching ``pattern``.

        Raises:
            LookupError: no line matches (the source moved: the facts must be re-read).
        """
        rx = re.compile(pattern)
        for n, line in enumerate(self.text(path).splitlines(), 1):
            if n > after:
                m = rx.search(line)
                if m:
                    return n, m
        raise LookupError(f"{self.cite(path)}: no line matches {pattern!r}")

    def fact(self, path: str, pattern: str, group: int | str = 1, after: int = 0,
             cast=str) -> dict:
        """``{"value": <group of the first match>, "source": <citation>}``."""
        n, m = self.find(path, pattern, after)
        return {"value": cast(m.group(group if m.re.groups else 0)),
                "source": self.cite(path, n)}

    def crd(self, path: str, fields: dict[str, list[str]]) -> dict:
        """API group, kind, served versions, the storage version, and per object path of
        ``fields`` (dotted, under the storage version's ``spec``) the property names there."""
        doc = yaml.safe_load(self.text(path))
        versions = [v["name"] for v in doc["spec"]["versions"] if v.get("served", True)]
        storage = next(v for v in doc["spec"]["versions"] if v.get("storage"))
        out = {"name": doc["metadata"]["name"],
               "group": doc["spec"]["group"], "kind": doc["spec"]["names"]["kind"],
               "versions": versions, "storage": storage["name"], "source": self.cite(path),
               "properties": {}}
        spec = storage["schema"]["openAPIV3Schema"]["properties"]["spec"]
        for name, parts in fields.items():
            node = spec
            for part in parts:
                node = node["properties"][part]
                if node.get("type") == "array":
                    node = node["items"]
            out["properties"][name] = sorted(node.get("properties", {}))
        return out


# --- KServe ----------------------------------------------------------------------------------

#: The well-known LLMInferenceServiceConfig presets moegen's vLLM roles map to:
#: preset -> (file, pod templates in the preset: spec key path).
KSERVE_PRESETS = {
    "kserve-config-llm-template": ("config-llm-template.yaml", {"template": ("template",)}),
    "kserve-config-llm-decode-template": ("config-llm-decode-template.yaml",
                                          {"template": ("template",)}),
    "kserve-config-llm-prefill-template": ("config-llm-prefill-template.yaml",
                                           {"template": ("prefill", "template")}),
    "kserve-config-llm-worker-data-parallel": (
        "config-llm-worker-data-parallel.yaml",
        {"template": ("template",), "worker": ("worker",)}),
    "kserve-config-llm-decode-worker-data-parallel": (
        "config-llm-decode-worker-data-parallel.yaml",
        {"template": ("template",), "worker": ("worker",)}),
    "kserve-config-llm-prefill-worker-data-parallel": (
        "config-llm-prefill-worker-data-parallel.yaml",
        {"template": ("prefill", "template"), "worker": ("prefill", "worker")}),
}
_FLAG = re.compile(r"(?<![\w$-])(--[a-z][a-z0-9-]*)")


def _serve_line(script: str) -> tuple[int, str]:
    """(0-based line of ``exec vllm serve`` in ``script``, the command up to its closing quote)."""
    lines = script.splitlines()
    start = next(i for i, ln in enumerate(lines) if "exec vllm serve" in ln)
    end = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith('$@"'))
    return start, "\n".join(lines[start:end + 1])


def _kserve_container(src: Source, file: str, keys: tuple[str, ...]) -> dict:
    path = f"config/llmisvcconfig/{file}"
    text = src.text(path)
    node = yaml.safe_load(text)["spec"]
    for k in keys:
        node = node[k]
    main = next(c for c in node["containers"] if c["name"] == "main")
    script = main["command"][2]
    start, serve = _serve_line(script)
    # The script's first line in the file: the command's block scalar.
    first = script.splitlines()[0]
    lines = text.splitlines()
    base = next(n for n, ln in enumerate(lines, 1) if ln.strip() == first.strip()
                and n > _line_of_keys(lines, keys))
    serve_line = base + start
    flags = []
    for line in serve.splitlines():
        if "EnableTLS" in line:       # the TLS flags: only with the global enableTLS (off)
            continue
        flags += _FLAG.findall(line.split("#")[0])
    names = re.search(r'--served-model-name ((?:"[^"]*" ?)+)', serve)
    rpc = re.search(r"\{\{ else \}\}(\d+)\{\{- end \}\}", serve)
    api = re.search(r"--api-server-count \$\{VLLM_API_SERVER_COUNT:-(\d+)\}", serve)
    port = re.search(r"--port (\d+)", serve)
    model = re.search(r"exec vllm serve\s*\\?\s*(/\S+)", serve)
    env = {e["name"]: e.get("value") for e in main.get("env", []) if "value" in e}
    out = {
        "source": src.cite(path, serve_line),
        "program": ["vllm", "serve", model.group(1)],
        "flags": flags,
        "servedNames": len(re.findall(r'"[^"]*"', names.group(1))),
        "port": int(port.group(1)),
        "containerPort": main["ports"][0]["containerPort"],
        "env": env,
        "preStopSleep": int(main["lifecycle"]["preStop"]["exec"]["command"][-1]),
        "variables": re.findall(r"\$\{([A-Z_]+)\}", serve),
        "startupProbe": {k: main["startupProbe"][k] for k in ("periodSeconds", "failureThreshold")}
        if "startupProbe" in main else None,
        "capabilities": main["securityContext"].get("capabilities", {}).get("add", []),
        "runAsNonRoot": {"value": main["securityContext"].get("runAsNonRoot", False),
                         "source": src.cite(path, next(
                             n for n, ln in enumerate(lines, 1)
                             if n > serve_line and "runAsNonRoot" in ln))},
    }
    if rpc:
        out["dataRPCPort"] = int(rpc.group(1))
    if api:
        out["apiServerCount"] = int(api.group(1))
    sidecars = [c for c in node.get("initContainers", []) if c["name"] == "llm-d-routing-sidecar"]
    if sidecars:
        args = dict(a.lstrip("-").split("=", 1) for a in sidecars[0]["command"][1:]
                    if a.startswith("--") and "=" in a)
        n = next(n for n, ln in enumerate(lines, 1) if "/app/pd-sidecar" in ln)
        out["sidecar"] = {"port": int(args["port"]), "enginePort": int(args["vllm-port"]),
                          "kvConnector": args["kv-connector"], "source": src.cite(path, n)}
    return out


def _line_of_keys(lines: list[str], keys: tuple[str, ...]) -> int:
    """1-based line of the last key of ``keys`` in a preset file (nested under spec)."""
    n = 0
    for depth, key in enumerate(keys, 1):
        pattern = re.compile(r"^" + " " * (2 * depth) + re.escape(key) + r":")
        n = next(i for i, ln in enumerate(lines, 1) if i > n and pattern.match(ln))
    return n


def _kserve_pod_labels(src: Source) -> dict:
    """The label keys the controller puts on the workload pods and selects them by
    (singleNodeLabels + component + llm-d role): ``spec.labels`` must not override them
    (PropagateMap overwrites the template's labels)."""
    node = "pkg/controller/v1alpha2/llmisvc/workload_single_node.go"
    consts = src.text("pkg/constants/constants.go")
    n, _ = src.find(node, r"^func \(r \*LLMISVCReconciler\) singleNodeLabels")
    body = "\n".join(src.text(node).splitlines()[n:n + 8])
    names = re.findall(r"constants\.(\w+LabelKey):", body)
    names += ["KServeComponentLabelKey", "LLMDRoleLabelKey"]
    keys = sorted(re.search(rf'\b{k}\s*= "([^"]+)"', consts).group(1) for k in names)
    return {"value": keys, "source": src.cite(node, n)}


def kserve(src: Source) -> dict:
    """KServe LLMInferenceService: API, presets (what each injects), the webhook's rules."""
    merge = "pkg/controller/v1alpha2/llmisvc/config_merge.go"
    valid = "pkg/apis/serving/v1alpha2/llm_inference_service_validation.go"
    types = "pkg/apis/serving/v1alpha2/llm_inference_service_types.go"
    presets = {}
    for name, (file, templates) in KSERVE_PRESETS.items():
        presets[name] = {kind: _kserve_container(src, file, keys)
                         for kind, keys in templates.items()}
    return {
        "repository": src.repo, "commit": src.commit(),
        "crd": src.crd("config/crd/full/llmisvc/serving.kserve.io_llminferenceservices.yaml",
                       {"spec": [], "workload": ["prefill"], "parallelism": ["parallelism"],
                        "router": ["router"], "scheduler": ["router", "scheduler"],
                        "scaling": ["scaling"], "wva": ["scaling", "wva"],
                        "keda": ["scaling", "wva", "keda"], "model": ["model"]}),
        "presets": presets,
        "wellKnown": src.fact(merge, r"^var (WellKnownDefaultConfigs) = "),
        "pipelinePresetsUnshipped": src.fact(
            merge, r"(FIXME move those presets to well-known when they're finally known)"),
        "workerNeedsDataOrPipeline": src.fact(
            valid, r'"(when worker is specified, parallelism must be configured for either data '
                   r'parallelism or pipeline parallelism)"'),
        "dataLocalWithData": src.fact(valid, r'"(dataLocal must be set when data is set)"'),
        "shutdownTimeout": src.fact(merge, r"(max\(0, tgps - preStop - min\(5, tgps\)\))"),
        "workerSize": src.fact("pkg/apis/serving/v1alpha2/llm_inference_service_types_func.go",
                               r"(p\.Data / p\.DataLocal)"),
        "tlsDefault": {"value": False, "source": src.cite(
            "pkg/apis/serving/v1beta1/configmap.go",
            src.find("pkg/apis/serving/v1beta1/configmap.go",
                     r"EnableLLMInferenceServiceTLS bool")[0])},
        "pvcMount": src.fact("pkg/controller/v1alpha2/llmisvc/workload_storage.go",
                             r"(func \(r \*LLMISVCReconciler\) attachPVCModelArtifact)"),
        "kedaScaling": src.fact(types, r"^type (KEDAScalingSpec) struct"),
        "podLabels": _kserve_pod_labels(src),
        "engines": {"value": ["vllm"], "source": src.cite(
            "config/llmisvcconfig/config-llm-template.yaml",
            src.find("config/llmisvcconfig/config-llm-template.yaml", r"exec vllm serve")[0])},
    }


# --- RBG -------------------------------------------------------------------------------------

def rbg(src: Source) -> dict:
    """RoleBasedGroup: API, the env its leader/worker pattern injects, names, the policy."""
    env = "api/workloads/constants/env.go"
    labels = "api/workloads/constants/label.go"
    helper = "api/workloads/v1alpha2/helper.go"
    builder = "pkg/discovery/env_builder.go"
    sets = "pkg/reconciler/roleinstanceset_reconciler.go"
    return {
        "repository": src.repo, "commit": src.commit(),
        "crd": src.crd("config/crd/bases/workloads.x-k8s.io_rolebasedgroups.yaml",
                       {"spec": [], "role": ["roles"],
                        "leaderWorkerPattern": ["roles", "leaderWorkerPattern"],
                        "standalonePattern": ["roles", "standalonePattern"]}),
        "policyCrd": src.crd("config/crd/bases/workloads.x-k8s.io_coordinatedpolicies.yaml",
                             {"spec": [], "policy": ["policies"],
                              "strategy": ["policies", "strategy"],
                              "rollingUpdate": ["policies", "strategy", "rollingUpdate"],
                              "scaling": ["policies", "strategy", "scaling"]}),
        "env": {
            "leaderAddress": src.fact(env, r'EnvRBGLeaderAddress = "([A-Z_]+)"'),
            "workerIndex": src.fact(env, r'EnvRBGIndex = "([A-Z_]+)"'),
            "groupSize": src.fact(env, r'EnvRBGSize = "([A-Z_]+)"'),
            "instanceName": src.fact(env, r'EnvRBGRoleInstanceName = "([A-Z_]+)"'),
            "prefix": src.fact(env, r'EnvRBGPrefix = "([A-Z_]+)"'),
        },
        "leaderAddressValue": src.fact(builder, r'Value: fmt\.Sprintf\("(\$\(%s\)-0\.%s\.%s)"'),
        "lwpInjectedLeader": src.fact(sets, r'leaderPodReconciler\.SetInjectors\((.*)\)'),
        "lwpInjectedWorker": src.fact(sets, r'workerPodReconciler\.SetInjectors\((.*)\)'),
        "userEnvLast": src.fact("pkg/discovery/injector.go",
                                r"(4\.\s+user vars .*)"),
        "componentIndexLabel": src.fact(labels, r'ComponentIndexLabelKey = RBGPrefix \+ "([a-z-]+)"'),
        "labelPrefix": src.fact("api/workloads/constants/constants.go", r'RBGPrefix\s+= "([a-z0-9./-]+)"'),
        "serviceName": src.fact(helper, r'svcName := fmt\.Sprintf\("([^"]+)"'),
        "workloadName": src.fact(helper, r'workloadName := fmt\.Sprintf\("([^"]+)"'),
        "policySameName": src.fact("internal/controller/workloads/rolebasedgroup_controller.go",
                                   r"(Fetch CoordinatedPolicy CR with the same name and namespace)"),
        "defaultWorkload": src.fact("api/workloads/v1alpha2/rolebasedgroup_types.go",
                                    r"(return constants\.RoleInstanceSetWorkloadType // default)"),
        "restartPolicy": src.fact("api/workloads/v1alpha2/rolebasedgroup_types.go",
                                  r'RecreateRoleInstanceOnPodRestart RestartPolicyType = "(\w+)"'),
        "engines": {"value": ["vllm", "sglang"], "source": src.cite(
            "api/workloads/v1alpha2/rolebasedgroup_types.go",
            src.find("api/workloads/v1alpha2/rolebasedgroup_types.go",
                     r"Template \*corev1\.PodTemplateSpec")[0])},
    }


# --- Dynamo ----------------------------------------------------------------------------------

def dynamo(src: Source) -> dict:
    """DynamoGraphDeployment: API, bundled engines, what the operator injects per backend."""
    vllm = "deploy/operator/internal/dynamo/backend_vllm.go"
    sgl = "deploy/operator/internal/dynamo/backend_sglang.go"
    consts = "deploy/operator/internal/consts/consts.go"
    worker = "deploy/operator/internal/dynamo/component_worker.go"
    dp_start, _ = src.find(vllm, r"^func injectDataParallelLaunchFlags")
    mp_start, _ = src.find(vllm, r"^func injectMpDistributedLaunchFlags")
    dp_flags = sorted(set(re.findall(r'"(--[a-z-]+)"', "\n".join(
        src.text(vllm).splitlines()[dp_start:dp_start + 50]))))
    worker_env = re.findall(r'Name:\s+"([A-Z_]+)"', src.text(worker))
    sys_env = src.find(worker, r'Name:\s+"DYN_SYSTEM_ENABLED"')[0]
    return {
        "repository": src.repo, "commit": src.commit(),
        "crd": src.crd("deploy/operator/config/crd/bases/nvidia.com_dynamographdeployments.yaml",
                       {"spec": [], "component": ["components"],
                        "multinode": ["components", "multinode"],
                        "compilationCache": ["components", "compilationCache"],
                        "topologyConstraint": ["components", "topologyConstraint"],
                        "specTopologyConstraint": ["topologyConstraint"]}),
        "version": src.fact("pyproject.toml", r'^version = "([0-9.]+)"'),
        "bundled": {
            "vllm": src.fact("pyproject.toml", r'"vllm\[[a-z,]+\]==([0-9.]+)"'),
            "sglang": src.fact("pyproject.toml", r'"sglang\[[a-z]+\]==([0-9.]+)"'),
        },
        "runtimeImage": {
            "vllm": src.fact("recipes/deepseek-r1/vllm/disagg/deploy_hopper_16gpu.yaml",
                             r"image: (nvcr\.io/nvidia/ai-dynamo/vllm-runtime):"),
            "sglang": src.fact("recipes/deepseek-r1/sglang/disagg-16gpu/deploy.yaml",
                               r"image: (nvcr\.io/nvidia/ai-dynamo/sglang-runtime):"),
        },
        "modules": {
            "vllm": src.fact("recipes/deepseek-r1/vllm/disagg/deploy_hopper_16gpu.yaml",
                             r"- (dynamo\.vllm)$"),
            "sglang": src.fact("recipes/deepseek-r1/sglang/disagg-16gpu/deploy.yaml",
                               r"- (dynamo\.sglang)$"),
        },
        "vllmDisaggregationFlag": src.fact("components/src/dynamo/vllm/backend_args.py",
                                           r'flag_name="(--disaggregation-mode)"'),
        "vllmEngineParser": src.fact("components/src/dynamo/vllm/args.py",
                                     r"(AsyncEngineArgs\.add_cli_args\(vllm_parser, "
                                     r"async_args_only=False\))"),
        "sglangServerParser": src.fact("components/src/dynamo/sglang/args.py",
                                       r"(ServerArgs\.add_cli_args\(sglang_only_parser\))"),
        "vllm": {
            "dataParallelFlags": {"value": dp_flags, "source": src.cite(vllm, dp_start + 1)},
            "dataParallelRPCPort": src.fact(vllm, r'dataParallelRPCPort\s+= "(\d+)"', cast=int),
            "dataParallelWhen": src.fact(vllm, r"(return getWorldSize\(expandedArgs\)\*"
                                               r"dataParallelSize > containerGPUs)"),
            "tensorMultinodeWhen": src.fact(vllm, r"(return getWorldSize\(expandedArgs\) > "
                                                  r"containerGPUs)"),
            "mpFlags": src.fact(vllm, r'mpFlags := fmt\.Sprintf\("(%s mp --nnodes %d '
                                      r'--master-addr %s --master-port %s)"', after=mp_start),
            "mpWorkerFlags": src.fact(vllm, r'mpFlags \+= fmt\.Sprintf\(" (--node-rank %s '
                                            r'--headless)"', after=mp_start),
            "mpMasterPort": src.fact(consts, r'VLLMMpMasterPort = "(\d+)"', cast=int),
            "mpSince": src.fact("deploy/operator/internal/features/compatibility/gates.go",
                                r'MinOriginVersion: \*semver\.MustParse\("([0-9.]+)"\)'),
            "nixlSideChannelHost": src.fact(vllm, r"Name: (commonconsts\.VLLMNixlSideChannelHostEnvVar)"),
            "cacheRoot": src.fact(vllm, r'Name:\s+"(VLLM_CACHE_ROOT)"'),
            "workerProbesRemoved": src.fact(vllm, r"(container\.LivenessProbe = nil)"),
        },
        "sglang": {
            "flags": src.fact(sgl, r'flags := fmt\.Sprintf\("(--dist-init-addr %s --nnodes %d '
                                   r'--node-rank %s)"'),
            "distInitPort": src.fact(sgl, r'SglangPort = "(\d+)"', cast=int),
            "compilationCache": src.fact(sgl, r'"status", "(partial-support)"'),
        },
        "systemPort": src.fact(consts, r"DynamoSystemPort\s+= (\d+)", cast=int),
        "workerEnv": {"value": worker_env, "source": src.cite(worker, sys_env)},
        "sharedMemoryDefault": src.fact(consts, r'DefaultSharedMemorySize\s+= "([0-9A-Za-z]+)"'),
        "cacheMountDefault": src.fact(consts, r'DefaultVLLMCacheMountPoint = "([^"]+)"'),
        "mainContainer": src.fact("deploy/operator/api/v1beta1/dynamocomponentdeployment_types.go",
                                  r'include a container named "(main)"'),
        "runtimeVersionOverride": src.fact(
            "deploy/operator/api/v1beta1/dynamocomponentdeployment_types.go",
            r"(RuntimeVersionOverride declares the Dynamo runtime compatibility version)"),
        "engines": {"value": ["vllm", "sglang"], "source": src.cite(
            "deploy/operator/api/v1beta1/dynamographdeployment_types.go",
            src.find("deploy/operator/api/v1beta1/dynamographdeployment_types.go",
                     r"\+kubebuilder:validation:Enum=sglang;vllm;trtllm")[0])},
    }


# --- AIBrix ----------------------------------------------------------------------------------

def aibrix(src: Source) -> dict:
    """StormService: API, the env the PodSet controller injects (and drops), names."""
    consts = "pkg/controller/constants/stormservice.go"
    podset = "pkg/controller/podset/podset_controller.go"
    return {
        "repository": src.repo, "commit": src.commit(),
        "crd": src.crd("config/crd/orchestration/orchestration.aibrix.ai_stormservices.yaml",
                       {"spec": [], "template": ["template"], "roleSet": ["template", "spec"],
                        "role": ["template", "spec", "roles"]}),
        "env": {
            "groupIndex": src.fact(consts, r'PodSetIndexEnvKey\s+= "([A-Z_]+)"'),
            "groupSize": src.fact(consts, r'PodSetSizeEnvKey\s+= "([A-Z_]+)"'),
            "podSetName": src.fact(consts, r'PodSetNameEnvKey\s+= "([A-Z_]+)"'),
            "serviceName": src.fact(consts, r'StormServiceNameEnvKey = "([A-Z_]+)"'),
        },
        "dropsUserEnv": src.fact(podset, r'"(PodSet %s: dropping user-defined env var %q as it '
                                         r'conflicts with a built-in env var)"'),
        "builtInsFirst": src.fact(podset, r"(builtInEnvs = append\(builtInEnvs, env\))"),
        "podName": src.fact(podset, r'pod\.Name = utils\.Shorten\(fmt\.Sprintf\("([^"]+)"'),
        "subdomain": src.fact(podset, r"pod\.Spec\.Subdomain = (podSet\.Labels\[constants\."
                                      r"StormServiceNameLabelKey\])"),
        "headlessService": src.fact("pkg/controller/stormservice/sync.go",
                                    r"(ClusterIP:\s+corev1\.ClusterIPNone)"),
        "groupIndexLabel": src.fact(consts, r'PodGroupIndexLabelKey\s+= "([a-z./-]+)"'),
        "roleNameLabel": src.fact(consts, r'RoleNameLabelKey\s+= "([a-z-]+)"'),
        "nameLimit": src.fact("pkg/controller/util/orchestration/util.go",
                              r"maxLength := (\d+)", cast=int),
        "roleSetName": src.fact("pkg/controller/stormservice/rolesetoperations.go",
                                r'GenerateName: utils\.Shorten\(fmt\.Sprintf\("([^"]+)"'),
        "podSetName": src.fact("pkg/controller/roleset/podset_rollsyncer.go",
                               r'podSet\.Name = utils\.Shorten\(fmt\.Sprintf\("([^"]+)"'),
        "templateHashLength": src.fact("pkg/utils/hash/hash.go", r"return hash\[:(\d+)\]",
                                       cast=int),
        "engines": {"value": ["vllm", "sglang"], "source": src.cite(
            "api/orchestration/v1alpha1/roleset_types.go",
            src.find("api/orchestration/v1alpha1/roleset_types.go", r"PodGroupSize")[0])},
    }


EXTRACTORS = {"kserve": kserve, "rbg": rbg, "dynamo": dynamo, "aibrix": aibrix}


def extract(mirrors: Path, targets: tuple[str, ...] = tuple(SOURCES)) -> dict:
    """``{target: {"repository": ..., "releases": {release: facts}}}`` for ``targets``."""
    out = {}
    for target in targets:
        repo, _, refs = SOURCES[target]
        out[target] = {"repository": repo, "releases": {
            release: EXTRACTORS[target](Source(target, release, mirrors)) for release in refs}}
    return out


def render(mirrors: Path) -> str:
    """The JSON text of :func:`extract` (sorted keys, two-space indent, trailing newline)."""
    doc = {"about": "Per-release facts of the platform controllers, read from their tagged "
                    "source by tools/extract_controllers.py; every fact names its file:line.",
           "targets": extract(mirrors)}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    args = list(argv)
    mirrors = mirrors_dir()
    if args[:1] == ["--mirrors"]:
        mirrors, args = Path(args[1]), args[2:]
    out = Path(args[0]) if args else DEFAULT_OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(mirrors), encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
