"""What a platform's controller puts into the engine container that the manifest does not
show, so the engine command can be read as the pods run it.

KServe LLMInferenceService: the user's ``template``/``worker`` containers are merged (by name,
``main``) over the LLMInferenceServiceConfig presets, whose main container runs, through
``eval`` (so ``$VLLM_ADDITIONAL_ARGS`` is split as shell words, quotes honoured)::

    vllm serve /mnt/models --served-model-name NAME publishers/NS/models/NAME --port P
      [--api-server-count ${VLLM_API_SERVER_COUNT:-8}]   (pods that serve the API)
      [--enable-expert-parallel] [--tensor-parallel-size T] --data-parallel-size D
      --data-parallel-size-local DL --data-parallel-address $DP_ADDRESS
      --data-parallel-rpc-port 5555 --data-parallel-start-rank $START_RANK [--headless]
      ... $VLLM_ADDITIONAL_ARGS "$@"

for data-parallel sections (``IsDataParallel``: ``parallelism.data`` or ``dataLocal``; the others run
``vllm serve /mnt/models --served-model-name NAME --port P [--tensor-parallel-size T]
$VLLM_ADDITIONAL_ARGS "$@"``, config-llm-template.yaml and its prefill/decode variants)
(kserve/kserve@v0.20.0 config/llmisvcconfig/config-llm-worker-data-parallel.yaml,
config-llm-decode-worker-data-parallel.yaml (``--port 8001``: the routing sidecar listens on
8000), config-llm-prefill-worker-data-parallel.yaml, config-llm-template.yaml). The presets'
image is ``ghcr.io/llm-d/llm-d-cuda:v0.8.0``, whose vLLM release the tag does not state.
"""

from __future__ import annotations

from .shell import ShellError, run_script, runtime

#: Variables the presets read into the command line (read into the role's fields with it).
KSERVE_COMMAND_ENV = ("VLLM_ADDITIONAL_ARGS", "VLLM_API_SERVER_COUNT")


def kserve_argv(w, launch, toks: list[str], origin: list[tuple]) -> tuple[list[str], list]:
    """The preset's ``vllm serve`` command for workload ``w`` (a KServe section) with the user's
    container ``args`` appended (``"$@"``) and ``$VLLM_ADDITIONAL_ARGS`` split as ``eval``
    does; origins point at ``spec.parallelism`` and at the env value."""
    par, model = w.extra.get("parallelism") or {}, w.extra.get("model") or {}
    ppath = (*w.path, "parallelism") if par else w.path
    name = str(model.get("name") or w.group or w.name)
    serves = launch_index(launch) == 0
    argv = ["vllm", "serve", "/mnt/models", "--served-model-name", name,
            "--port", "8001" if w.mode == "decode" else "8000"]
    if not (par.get("data") or par.get("dataLocal")):
        # Not data parallel (ParallelismSpec.IsDataParallel: data or dataLocal > 0): the
        # single-node templates, config-llm-template.yaml / -prefill- / -decode-template.yaml
        # ("vllm serve ... [--tensor-parallel-size T] ${VLLM_ADDITIONAL_ARGS} $@"; their
        # access-log, shutdown and KV-offload arguments depend on the image's vLLM release).
        if par.get("tensor"):
            argv += ["--tensor-parallel-size", str(par["tensor"])]
        return _additional(launch, argv, [ppath] * len(argv), ppath, toks, origin)
    if serves:
        argv += ["--api-server-count", launch.env.get("VLLM_API_SERVER_COUNT") or "8"]
    if par.get("expert"):
        argv += ["--enable-expert-parallel"]
    if par.get("tensor"):
        argv += ["--tensor-parallel-size", str(par["tensor"])]
    argv += ["--data-parallel-size", str(par.get("data") or 1),
             "--data-parallel-size-local", str(par.get("dataLocal") or 1),
             "--data-parallel-address", runtime("DP_ADDRESS"),
             "--data-parallel-rpc-port", str(par.get("dataRPCPort") or 5555),
             "--data-parallel-start-rank", runtime("START_RANK")]
    if not serves:
        argv += ["--headless"]
    return _additional(launch, argv, [ppath] * len(argv), ppath, toks, origin)


def _additional(launch, argv: list[str], origins: list, ppath: tuple, toks: list[str],
                origin: list) -> tuple[list[str], list]:
    """``$VLLM_ADDITIONAL_ARGS`` split as ``eval`` does, then the container's ``args``."""
    extra = launch.env.get("VLLM_ADDITIONAL_ARGS")
    if isinstance(extra, str) and extra.strip():
        try:
            cmds = run_script("exec x " + extra, launch.env)
            words = list(cmds[0].argv[1:]) if cmds else []
        except ShellError:
            words = extra.split()
        argv += words
        origins += [launch.env_locations.get("VLLM_ADDITIONAL_ARGS", ppath)] * len(words)
    argv += toks
    origins += origin
    return argv, origins


def launch_index(launch) -> int:
    """The pod index of a KServe container (0 for ``template``, 1 for ``worker``)."""
    return 1 if "worker" in launch.cpath else 0
