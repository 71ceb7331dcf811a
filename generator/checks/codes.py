"""Codes raised outside the rule functions (loader, schema, pipeline, capacity planner), listed
so that ``gen rules`` shows the whole catalogue. Each names the module that raises it."""

from __future__ import annotations

from ..errors import Severity
from .registry import E, W, external

N = Severity.NOTICE

for _code, _sev, _summary, _source in (
    ("LOAD001", E, "the file exists and is readable", "generator/spec/load.py"),
    ("LOAD002", E, "the file is at most 1 MiB", "generator/spec/load.py (hostile input)"),
    ("LOAD003", E, "the file is UTF-8 text", "generator/spec/load.py (hostile input)"),
    ("LOAD004", E, "one YAML document per file", "generator/spec/load.py"),
    ("LOAD005", E, "no YAML anchors, aliases or merge keys in a spec or overlay; a manifest's "
     "aliases (which kubectl resolves) expand to at most 2^20 nodes",
     "generator/spec/load.py, generator/spec/events.py (alias bombs)"),
    ("LOAD006", E, "no custom YAML tags", "generator/spec/load.py (unsafe tags)"),
    ("LOAD007", E, "nesting depth at most 64", "generator/spec/load.py (hostile input)"),
    ("LOAD008", E, "the file is valid YAML", "https://yaml.org/spec/1.2.2/"),
    ("LOAD009", E, "no duplicate keys", "https://yaml.org/spec/1.2.2/ (mapping keys are unique)"),
    ("LOAD010", E, "the document is a mapping", "docs/spec.md §2"),
    ("LOAD011", E, "model.config is a readable JSON object", "docs/spec.md §2 (config:)"),
    ("LOAD012", W, "an overlay's new named item is not a typo of an existing one",
     "docs/spec.md §2 (overlays: lists of named objects merge by name)"),
    ("LOAD013", E, "an overlay names each item of a list once",
     "docs/spec.md §2 (overlays: lists of named objects merge by name; a name given twice "
     "would merge twice into one item)"),
    ("LOAD014", E, "mapping keys are scalars",
     "generator/spec/load.py (Kubernetes objects have string keys: a {{X}} template "
     "placeholder parses as a mapping key; https://yaml.org/spec/1.2.2/)"),
    ("INP001", E, "gen validate checked something: a spec or a serving workload moegen reads "
                  "(--allow-empty accepts inputs with nothing to check)",
     "docs/design.md §10; generator/inputs.py (nothing_checked)"),
    ("INP002", N, "an engine moegen finds and does not read is reported as not checked (under "
                  "a kind it does not read: RayCluster, RayClusterFleet, Pod, Job, Knative "
                  "Service, other CRDs; a script that does not start it as a command; a second "
                  "engine container in a pod)",
     "docs/design.md §10; generator/importer/unread.py, generator/importer/launch.py, "
     "generator/importer/build.py"),
    ("INP003", E, "every local file a kustomization names exists (kustomize build fails "
                  "otherwise)",
     "https://kubectl.docs.kubernetes.io/references/kustomize/kustomization/resource/ "
     "(each entry is a file, a directory or a remote target, accumulateResources fails on "
     "anything else); "
     "generator/inputs.py (missing_kustomized)"),
    ("SKP001", W, "a skip (# moegen:skip=CODE, moegen.dev/skip) gives its reason",
     "docs/design.md §10; generator/waivers.py"),
    ("SKP002", W, "a skip names a rule code and suppresses a finding (no stale waivers)",
     "docs/design.md §10; generator/waivers.py (like ruff's unused-noqa RUF100: "
     "https://docs.astral.sh/ruff/rules/unused-noqa/)"),
    ("IMP001", E, "a serving workload's engine command can be found",
     "generator/importer/launch.py (vllm serve, python -m vllm.entrypoints.openai.api_server, "
     "python -m sglang.launch_server, sglang serve, the Dynamo wrappers)"),
    ("IMP002", E, "the launch script and the engine's --config file can be read",
     "generator/importer/shell.py (POSIX Shell Command Language); SGLang 0.5.23 "
     "python/sglang/srt/utils/server_args_config_parser.py (--config YAML)"),
    ("IMP003", W, "every engine option and pod value fits the spec",
     "generator/importer/engine.py (values only the running pod knows, out-of-range sizes)"),
    ("IMP004", N, "a pod that requests RDMA names its devices (NCCL_IB_HCA), else moegen's RDMA "
     "checks do not run (a notice: NCCL and UCX use every device the pod sees)",
     "generator/importer/pods.py; NCCL env docs (NCCL_IB_HCA unset: every IB/RoCE device "
     "found) https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"),
    ("IMP005", W, "the engine's options are ones moegen models",
     "generator/importer/engine.py (load-balancing modes, listeners, connectors and "
     "speculative methods moegen renders: generator/engines/vllm.py, generator/engines/sglang.py)"),
    ("IMP006", W, "the engine command uses only variables the pod sets",
     "POSIX Shell Command Language 2.6.2 (an unset parameter expands to nothing); "
     "generator/importer/shell.py"),
    ("IMP007", W, "VLLM_ALL2ALL_BACKEND is read only by vLLM before 0.16.0",
     "vLLM 0.33.0 vllm/envs.py (no VLLM_ALL2ALL_BACKEND; the backend is "
     "--all2all-backend, vllm/config/parallel.py); generator/engines/data/vllm-releases.json "
     "(envChoices through 0.15.1)"),
    ("IMP008", W, "the engine image names its release",
     "generator/importer/build.py (image tags of vllm/vllm-openai and lmsysorg/sglang)"),
    ("IMP025", E, "the annotation moegen.dev/engine-version states a release (MAJOR.MINOR.PATCH)",
     "docs/design.md §10 (an unknown release is refused); generator/importer/assemble.py "
     "(the annotation is ignored and the release read from the image, else assumed: IMP008)"),
    ("IMP009", E, "pods x GPUs per pod give the ranks the engine asks for",
     "vLLM 0.33.0 vllm/v1/engine/utils.py (the DP handshake waits for every rank); "
     "SGLang 0.5.23 python/sglang/srt/server_args.py (compute_world_size: dp x tp x pp "
     "without attention DP); SGLang 0.5.23 python/sglang/srt/runtime_context.py "
     "(derive_attn_tp_size: tp // attn_dp); generator/importer/ranks.py"),
    ("IMP010", W, "the weights come from a volume, not a download at start",
     "docs/spec.md §2 (model.path, model.volume); generator/importer/build.py"),
    ("IMP011", W, "the model is in moegen's catalog (or --model-config gives it)",
     "generator/catalog/__init__.py (ARCHITECTURES)"),
    ("IMP012", N, "the GPU is stated (node selector, node affinity or --gpu), else the "
     "deployment checks are not run (a notice: the manifest may be sound)",
     "generator/importer/pods.py (nvidia.com/gpu.product: NVIDIA/k8s-device-plugin GPU "
     "feature discovery; cloud.google.com/gke-accelerator: "
     "https://cloud.google.com/kubernetes-engine/docs/how-to/gpus)"),
    ("IMP013", E, "metadata.namespace is a namespace name",
     "Kubernetes namespace names are RFC 1123 labels: "
     "kubernetes/apimachinery@v0.31.0:pkg/util/validation/validation.go (IsDNS1123Label); "
     "https://kubernetes.io/docs/concepts/overview/working-with-objects/names/#dns-label-names"),
    ("IMP014", W, "env values use $(NAME), which Kubernetes expands, not ${NAME}",
     "kubernetes/kubernetes@v1.31.0:third_party/forked/golang/expansion/expand.go; "
     "https://kubernetes.io/docs/tasks/inject-data-application/define-interdependent-environment-variables/"),
    ("IMP015", W, "vLLM's kv_role matches the role (kv_producer / kv_consumer)",
     "vLLM 0.33.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl/connector.py (kv_both is "
     "deprecated: judged at the release the image runs, from 0.23.0 on (vLLM 0.23.0 "
     "vllm/distributed/kv_transfer/kv_connector/v1/nixl/connector.py:98), "
     "generator/importer/assemble.py KV_BOTH_DEPRECATED)"),
    ("IMP016", W, "a memory-backed /dev/shm has a sizeLimit",
     "Kubernetes emptyDir (medium Memory: the files count against the container's memory "
     "limit; sizeLimit bounds it) https://kubernetes.io/docs/concepts/storage/volumes/#emptydir"),
    ("IMP017", W, "the engine container that serves the API has probes",
     "https://kubernetes.io/docs/concepts/configuration/liveness-readiness-startup-probes/ "
     "(without a readinessProbe a container is ready once it starts; without a livenessProbe "
     "a hung process is not restarted); generator/importer/pods.py"),
    ("IMP018", E, "an engine command is a list of words, not one string without a shell",
     "https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/ "
     "(command is the program and its arguments, executed without a shell); "
     "generator/importer/launch.py"),
    ("IMP019", W, "the containers beside the engine (sidecars, init containers) run pinned images",
     "https://kubernetes.io/docs/concepts/containers/images/#image-pull-policy (a tag is "
     "mutable: pin a digest; :latest or no tag pulls Always) and "
     "https://kubernetes.io/docs/concepts/configuration/overview/#container-images (avoid "
     ":latest in production); generator/importer/hygiene.py"),
    ("IMP020", W, "a container sets each environment variable once",
     "kubernetes/kubernetes@v1.32.0:pkg/kubelet/kubelet_pods.go (makeEnvironmentVariables: the "
     "env list is applied in order into one map, the last definition wins); "
     "generator/importer/hygiene.py"),
    ("IMP021", W, "the engine container that serves the API has a liveness probe beside its "
                  "readiness/startup probe",
     "https://kubernetes.io/docs/concepts/configuration/liveness-readiness-startup-probes/ "
     "(a failing readinessProbe only removes the pod from Service endpoints; only a "
     "livenessProbe restarts a hung container); generator/importer/hygiene.py"),
    ("IMP022", W, "no package is installed by the container's command at every start",
     "https://pip.pypa.io/en/stable/cli/pip_install/ (pip install resolves against the index "
     "at run time; --no-index installs from local files only); a restart or group re-creation "
     "runs the command again; generator/importer/hygiene.py"),
    ("IMP023", E, "every container of a Deployment/StatefulSet/LWS pod names a valid image",
     "https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#Container "
     "(image is optional only in workload templates, for config management to fill in; a Pod "
     "needs one); distribution/reference@v0.6.0:regexp.go (the reference grammar; the kubelet "
     "reports InvalidImageName for what does not parse); generator/importer/hygiene.py"),
    ("IMP024", E, "a hostNetwork pod that dials its rendezvous peer by name uses dnsPolicy "
                  "ClusterFirstWithHostNet",
     "https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/#pod-s-dns-policy "
     "(a hostNetwork pod with ClusterFirst falls back to the node's resolver); SGLang 0.5.23 "
     "python/sglang/srt/server_args.py (--dist-init-addr); generator/importer/hygiene.py"),
    ("IMP026", E, "the engine container is a valid Kubernetes Container (command and args are "
     "lists of strings, no unknown fields)",
     "https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#Container; "
     "generator/spec/data/k8s-objects.json (Kubernetes 1.32.0 OpenAPI, from "
     "tools/extract_k8s_schemas.py)"),
    ("IMP027", N, "a label or annotation of a multi-pod role's leader template that its worker "
                  "template lacks is reported as left out (roles[].pod.labels go on every pod)",
     "docs/spec.md §6 (pod labels, annotations: every engine pod); "
     "GoogleCloudPlatform/kubernetes-engine-samples@2b5036514162a489145c5e5570bc320efbcb37bf:"
     "ai-ml/llm-multihost-gpus/vllm-deepseek-r1-A3.yaml (its Service selects the leader's "
     "role: leader); "
     "generator/importer/pods.py"),
    ("IMP028", N, "SGLang's --enable-prefill-cp is read as the engine resolves it: the CP group "
                  "tp // (attn_dp x dp) for the DeepSeek family, with the DeepEP all-to-all it "
                  "forces; else nothing (dropped, said)",
     "SGLang 0.5.23 python/sglang/srt/arg_groups/fields/parallel.py (attn_cp_size default 1), "
     "python/sglang/srt/arg_groups/model_overrides/deepseek_v2.py (_deepseek_family_overrides: "
     "MLA and DSA, attn_cp_size = tp_size // attn_dp_size; MLA and DSA zigzag: "
     "moe_a2a_backend deepep, ep_size = tp_size, moe_dense_tp_size 1), "
     "python/sglang/srt/arg_groups/model_override_base.py (context_parallel_attn_dp_size: "
     "attn_dp_size x dp_size), "
     "python/sglang/srt/arg_groups/deepseek_v4_hook.py (validate_deepseek_v4_cp); "
     "generator/importer/prefill_cp.py"),
    ("IMP030", E, "SGLang starts with the prefill context parallelism the command asks for",
     "SGLang 0.5.23 python/sglang/srt/arg_groups/parallel_hook.py (--cp-strategy must be set; "
     "DeepSeek V3.2 refuses zigzag), "
     "python/sglang/srt/arg_groups/model_overrides/deepseek_v2.py (DSA: tp_size <= 8), "
     "python/sglang/srt/arg_groups/deepseek_v4_hook.py (zigzag needs NPU; one attention DP "
     "group; tp_size <= 8), python/sglang/srt/arg_groups/model_override_base.py "
     "(context_parallel_attn_dp_size); generator/importer/prefill_cp.py"),
    ("IMP029", N, "a Deployment imported as workload: statefulset rolls one pod at a time "
                  "without its surge",
     "Kubernetes apps/v1 DeploymentStrategy (RollingUpdate, maxSurge and maxUnavailable 25% "
     "by default: https://kubernetes.io/docs/concepts/workloads/controllers/deployment/"
     "#rolling-update-deployment) against StatefulSet RollingUpdate (one pod at a time: "
     "https://kubernetes.io/docs/tutorials/stateful-application/basic-stateful-set/"
     "#rolling-update); generator/importer/ranks.py"),
    ("NET100", E, "every connection of the rendering reaches a listener that accepts it",
     "generator/manifests/addresses.py (the address model: each client's address and port "
     "against each listener's bind address, per target; raised by generator/pipeline.py; "
     "llm-d/llm-d-router@v0.10.0:pkg/sidecar/proxy/options.go:399, the sidecar dials its "
     "engine at localhost)"),
    ("POOL006", N, "every pool's GPU is stated; with gpu: unknown the checks that read the GPU "
     "do not run (a notice; an error for gen render, size and report, which need it)",
     "docs/spec.md §2 (nodePools.<pool>.gpu: unknown); generator/pipeline.py"),
    ("SCH001", E, "the spec matches the schema", "schemas/inferencedeployment.schema.json"),
    ("SCH002", E, "no unknown fields",
     "schemas/inferencedeployment.schema.json (additionalProperties: false)"),
    ("SCH003", E, "required fields are present", "schemas/inferencedeployment.schema.json"),
    ("SCH004", E, "enumerated fields take a listed value",
     "schemas/inferencedeployment.schema.json"),
    ("SCH005", E, "fields have the right type", "schemas/inferencedeployment.schema.json"),
    ("SCH006", E, "numbers and sizes are in range", "schemas/inferencedeployment.schema.json"),
    ("SCH007", E, "strings match their format", "schemas/inferencedeployment.schema.json"),
    ("SCH008", E, "map keys are valid names", "schemas/inferencedeployment.schema.json"),
    ("VER001", E, "the engine version is in a supported range",
     "docs/spec.md §2 (vLLM 0.11.0-0.33.x, SGLang 0.5.x); generator/engines/registry.py"),
    ("MOD002", E, "model.config is a supported architecture family",
     "generator/catalog/readers.py (READERS: one reader per family)"),
    ("MOD003", E, "model.config has the fields moegen needs", "generator/catalog/readers.py"),
    ("MOD008", N, "the model is stated; with model.architecture: unknown only the checks that "
     "do not read the model run (a notice; an error for gen render, size, report and the other "
     "commands that need it)",
     "docs/spec.md §2 (model.architecture: unknown); generator/checks/registry.py (MODEL_FREE); "
     "generator/pipeline.py"),
    ("PLN001", E, "a PlanRequest gives concurrency or requestsPerSecond, not both",
     "docs/spec.md §5 (workload)"),
    ("PLN002", E, "a PlanRequest's fixed roles are one prefill + one decode, or one unified",
     "docs/spec.md §5.1; generator/perf/evaluate.py"),
    ("PLN003", E, "a fixed layout's maxModelLen holds the workload's requests",
     "docs/spec.md §5.1; the engines refuse longer requests (vLLM and SGLang max model length)"),
    ("PLN004", E, "DSpark drafting is planned on SGLang 0.5.16+ with DeepSeek-V4 only",
     "SGLang 0.5.16 server_args.py (--speculative-dspark-block-size); sgl-project/sglang#29538"),
    ("PLN005", E, "a PlanRequest's requests fit the model's context",
     "the model's config.json max_position_embeddings (the engines' default and ceiling of "
     "max model length: vLLM 0.33.0 vllm/config/model.py, SGLang 0.5.23 "
     "python/sglang/srt/configs/model_config.py)"),
    ("PRF030", W, "the predicted TTFT is a steady state, not a queue that grows without bound "
                  "(gen size, gen report)",
     "generator/perf/predict.py QUEUE_BOUND (M/D/1 wait at the 0.95 utilisation clamp of "
     "generator/perf/loop.py: 10.5x the unloaded TTFT); beyond it the closed loop "
     "overflows (Little's law: concurrency = rate x (TTFT + OSL x TPOT))"),
    ("CAL001", W, "a calibration profile is applied only to the configuration it was measured on "
                  "(model, GPU, engine release, layout)",
     "generator/calibration/profile.py differences; docs/calibration.md"),
    ("CAL002", E, "spec.calibration / --calibration is a readable CalibrationProfile",
     "generator/calibration/profile.py read_calibration; docs/calibration.md"),
    ("CAL003", Severity.NOTICE, "a calibration profile measured at other lengths or "
                                "concurrency is applied as measured",
     "generator/calibration/profile.py calibration_for; docs/calibration.md"),
    ("CAL004", E, "gen calibrate's inputs are benchmark results or engine logs with memory lines",
     "generator/calibration/results.py (vLLM 0.33.0 vllm/benchmarks/serve.py --save-result; "
     "SGLang 0.5.23 python/sglang/benchmark/serving.py --output-file)"),
    ("CAL005", W, "a benchmark run is of the deployment gen calibrate is given",
     "generator/cli_calibrate.py (the configuration key the gen bench Job stores with "
     "each run: vLLM 0.33.0 vllm/benchmarks/serve.py --metadata, SGLang 0.5.23 "
     "python/sglang/benchmark/serving.py --tag)"),
    ("PRE001", E, "the CRDs the output needs are installed (gen preflight)",
     "generator/preflight.py (apiextensions.k8s.io/v1 CustomResourceDefinitions)"),
    ("PRE002", E, "each pool's nodeSelector matches its nodes (gen preflight)",
     "generator/preflight.py"),
    ("PRE003", E, "the nodes' GPUs are the pool's (gen preflight; a warning without labels)",
     "generator/preflight.py (NVIDIA gpu-feature-discovery labels nvidia.com/gpu.product, "
     "nvidia.com/gpu.memory)"),
    ("PRE004", E, "nodes' allocatable resources hold the pods (gen preflight)",
     "generator/preflight.py (Kubernetes node status.allocatable)"),
    ("PRE005", E, "the namespace exists (gen preflight)", "generator/preflight.py"),
    ("PRE006", E, "PersistentVolumeClaims exist with a shared access mode (gen preflight)",
     "generator/preflight.py (Kubernetes PersistentVolumeClaim accessModes)"),
    ("PRE007", E, "the PriorityClass and ServiceAccount exist (gen preflight)",
     "generator/preflight.py"),
    ("PRE008", E, "the Kueue LocalQueue exists (gen preflight)",
     "generator/preflight.py (https://kueue.sigs.k8s.io/docs/concepts/local_queue/)"),
    ("PRE009", E, "the API server keeps podAffinity matchLabelKeys (platform.topology; gen "
                  "preflight)",
     "generator/preflight.py; Kubernetes KEP-3633 (MatchLabelKeysInPodAffinity beta, on by "
     "default, from 1.31)"),
    ("PRE010", E, "the API server accepts every rendered object in a server-side dry run (gen "
                  "preflight --dry-run)",
     "generator/preflight.py (kubectl apply --server-side --dry-run=server: "
     "kubernetes/kubernetes@v1.32.0:staging/src/k8s.io/kubectl/pkg/cmd/apply/apply.go; "
     "https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run)"),
    ("PRE011", E, "the endpoint is a Kubernetes API server: GET /version answers its version "
                  "(gen preflight)",
     "generator/preflight.py (kubernetes-client/python@v37.0.2:kubernetes/client/api/"
     "version_api.py: GET /version/ returns VersionInfo with gitVersion)"),
    ("ROL005", Severity.NOTICE, "a rollout that restarts one side of a prefill/decode pair "
                                "does not crash the other (gen diff; RST010/RST011's severity)",
     "generator/facts/restarts.py (the restart model: vllm-project/vllm#49238, "
     "smg-project/smg#2503); generator/rollout/compare.py _peer_crashes"),
):
    external(_code, _sev, _summary, _source)

# spec.target: what each platform target cannot express (errors) or replaces (warnings), raised
# by the target's findings (generator/targets; the controller facts and their sources:
# generator/facts/data/controllers.json, tools/extract_controllers.py).
for _code, _sev, _summary, _source in (
    ("TGT001", E, "spec.target.version is a controller release moegen knows",
     "generator/facts/controllers.py (the releases read by tools/extract_controllers.py: KServe "
     "v0.20.0, RBG v0.7.0 and v0.8.0-alpha.5, Dynamo 1.4.0, AIBrix v0.7.0)"),
    ("TGT002", E, "the target's controller runs the engine",
     "generator/targets/common.py (KServe's presets run vLLM only: kserve/kserve@v0.20.0 "
     "config/llmisvcconfig/config-llm-template.yaml; Dynamo backendFramework sglang/vllm/trtllm: "
     "ai-dynamo/dynamo@e147cee:deploy/operator/api/v1beta1/dynamographdeployment_types.go)"),
    ("TGT003", E, "spec.target options belong to the target that has them",
     "generator/targets/common.py, generator/targets/kubernetes.py (image, clusterTopology and "
     "packDomain are Dynamo's; version names a platform controller's release)"),
    ("TGT004", E, "the Ray executor renders on target kubernetes only",
     "generator/targets/common.py (moegen starts the Ray cluster in its own launcher: the "
     "leader's ray start --head, the workers' ray start --address, as vLLM's "
     "vllm-project/vllm@v0.8.5:examples/online_serving/multi-node-serving.sh does; the platform "
     "targets' pods run the controller's command, which moegen does not model with Ray)"),
    ("TGT010", E, "an LLMInferenceService on KServe's presets expresses the deployment",
     "generator/targets/kserve.py (kserve/kserve@v0.20.0 pkg/controller/v1alpha2/llmisvc/"
     "config_merge.go: the well-known presets; llm_inference_service_validation.go: a worker "
     "needs data parallelism; the decode presets' routing sidecar speaks NIXL)"),
    ("TGT011", W, "what KServe replaces or ignores (router, monitoring, autoscaling metric, "
                  "platform.lws, a root image)",
     "generator/targets/kserve.py (kserve/kserve@v0.20.0 pkg/apis/serving/v1alpha2/"
     "llm_inference_service_types.go: router.scheduler, scaling.wva.keda)"),
    ("TGT020", E, "a RoleBasedGroup expresses the deployment",
     "generator/targets/common.py group_findings, generator/targets/rbg.py "
     "(sgl-project/rbg@v0.8.0-alpha.5 api/workloads/v1alpha2/rolebasedgroup_types.go)"),
    ("TGT021", W, "what RBG ignores (autoscaling, platform.lws, rollouts in the restart alert)",
     "generator/targets/common.py group_findings (sgl-project/rbg@v0.8.0-alpha.5 "
     "api/workloads/v1alpha2/rolebasedgroup_types.go: RoleInstanceSet roles)"),
    ("TGT030", E, "a DynamoGraphDeployment expresses the deployment",
     "generator/targets/dynamo.py (ai-dynamo/dynamo@e147cee deploy/operator/internal/dynamo/"
     "backend_vllm.go, backend_sglang.go: the operator's rank flags)"),
    ("TGT031", W, "what Dynamo replaces or ignores (router, monitoring, autoscaling, gang "
                  "scheduling, platform.lws)",
     "generator/targets/dynamo.py (ai-dynamo/dynamo@e147cee deploy/operator/internal/dynamo/"
     "component_frontend.go: python3 -m dynamo.frontend)"),
    ("TGT032", E, "engine.version is the release the Dynamo runtime image bundles",
     "generator/targets/dynamo.py (ai-dynamo/dynamo@e147cee pyproject.toml: vllm==0.26.0, "
     "sglang==0.5.16 in the 1.4.0 runtime images)"),
    ("TGT040", E, "a StormService expresses the deployment",
     "generator/targets/aibrix.py (vllm-project/aibrix@v0.7.0 pkg/controller/podset/"
     "podset_controller.go: one template per pod group, names shortened at 63)"),
    ("TGT041", W, "what AIBrix ignores (autoscaling, platform.lws, rollouts in the restart alert)",
     "generator/targets/common.py group_findings (vllm-project/aibrix@v0.7.0 "
     "pkg/controller/roleset/podset_rollsyncer.go)"),
    ("TGT042", W, "an AIBrix pod group outlives an engine restart in one of its pods",
     "generator/targets/aibrix.py (vllm-project/aibrix@v0.7.0:pkg/controller/podset/"
     "podset_controller.go:229-262: pods are replaced only when one is missing)"),
    ("ROL001", W, "a change does not take every instance of a role down at once (gen diff)",
     "generator/rollout/timeline.py (kubernetes-sigs/lws@v0.10.0:pkg/controllers/"
     "leaderworkerset_controller.go rollingUpdateParameters: maxUnavailable groups at a time, "
     "surge groups first); generator/lifecycle.py rollout"),
    ("ROL002", W, "scaling a role's GPUs per instance also sets its sizing.concurrency "
                  "(gen diff)",
     "docs/spec.md §2 (sizing.concurrency: sequences per instance, spread over its "
     "data-parallel ranks; the rendered --max-num-seqs follows it)"),
    ("ROL003", W, "prefill and decode of different revisions do not pair during a rollout "
                  "when their KV handshake differs (gen diff)",
     "vLLM 0.33.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py "
     "(compute_nixl_compatibility_hash); generator/rollout/compat.py"),
    ("ROL004", Severity.NOTICE, "prefill and decode of different revisions pair over a "
                                "transfer that checks no release (gen diff)",
     "SGLang 0.5.23 python/sglang/srt/disaggregation/mooncake/conn.py (positional ZMQ "
     "messages, no release check); generator/rollout/compat.py"),
    ("ROL005", Severity.NOTICE, "a rollout that restarts one side of a prefill/decode pair "
                                "does not crash the other (gen diff; RST010/RST011's severity)",
     "generator/facts/restarts.py (the restart model: vllm-project/vllm#49238, "
     "smg-project/smg#2503); generator/rollout/compare.py _peer_crashes"),
):
    external(_code, _sev, _summary, _source)
