"""The CPU runtime, and THE list of what the execution tier changes in a rendered pod to run it here.

This module is the only place where anything rendered is changed. ``substitute(pod, ...)`` applies
exactly the substitutions below and records each one it applied on the pod (``pod.changes``;
``Cluster.substitutions()`` prints them, the tests echo them). Anything not listed runs as
rendered: the launcher script, every engine and router flag, every env value, ports, probes.

| # | what | why |
|---|---|---|
| S1 | a volumeMount's ``mountPath`` (other than ``/dev/shm``) -> a host directory, in argv and env, as a whole path component and in one pass: the model PVC -> the tiny checkpoint, an emptyDir -> a per-pod directory (kept over a container restart, new for a new pod) | no volumes here; nothing may write outside the test's work directory |
| S2 | ``/dev/shm`` (a ``medium: Memory`` emptyDir) -> a private tmpfs of its ``sizeLimit`` in the pod's mount namespace | the launcher empties /dev/shm at start; on a shared host that would hit every process |
| S3 | ``vllm serve ... --host <podIP>`` | the rendered engine binds 0.0.0.0; the pods share one network namespace here |
| S4 | ``vllm serve ... --kv-cache-memory-bytes 64 MiB`` | on CPU ``--gpu-memory-utilization`` is a fraction of host RAM, checked against free memory at start-up (vllm-project/vllm@v0.32.0: vllm/v1/worker/cpu_worker.py); an explicit KV size replaces it. 64 MiB holds 29127 tokens of the tiny model (2 layers x 576 x 2 bytes = 2304 B/token), above the rendered --max-model-len 8192 |
| S5 | ``vllm serve ... --enforce-eager`` where the command has ``--enable-expert-parallel`` | on CPU torch.compile traces the fused-MoE forward and fails on the EP all-gather's data-dependent sizes (vllm-project/vllm@v0.32.0: vllm/model_executor/layers/fused_moe/modular_kernel.py) |
| S6 | ``PYTHONPATH=tests/execution/cpu_ep_plugin`` where the command has ``--enable-expert-parallel`` | the CPU communicator lacks the collectives EP calls (vllm-project/vllm#57837); a test plugin fills them in |
| S7 | ``GLOO_SOCKET_IFNAME`` / ``NCCL_SOCKET_IFNAME`` -> ``lo``; ``VLLM_HOST_IP=<podIP>`` | the rendered NIC (eth0) does not exist here; ``VLLM_HOST_IP`` is what vLLM's ``get_ip()`` finds in a pod |
| S8 | ``VLLM_CPU_OMP_THREADS_BIND=<core>`` | one core per pod, round robin (a pod's "node"); vLLM's ``auto`` binding would reserve cores per engine |
| S9 | router: ``KUBECONFIG`` = the harness's kubeconfig (its rendered ``--service-discovery`` flags run as rendered, against the harness's API server: kubelet.py, apiserver.py); ``--host``/``--prometheus-host 0.0.0.0`` -> the router pod's IP | no in-cluster API server here: the router's Kubernetes watcher (kube-rs reads ``KUBECONFIG`` before the in-cluster configuration) lists and watches the harness's pods, which follow deletions and new addresses as a cluster's do |
| S10 | bench Job (``gen bench``): ``--base-url http://<Service>:<port>`` -> ``http://<podIP>:<targetPort>`` of the first pod the Service selects | no cluster DNS or Service proxy here; the same Service, selector and target port |
| S11 | ``PYTHONPATH`` + ``tests/execution/cpu_nixl_plugin`` where the command names ``NixlConnector`` | NIXL's UCX progress thread polls with a 0 ms timeout (ai-dynamo/nixl@v1.4.0: src/api/python/_api.py:230 ``pthrDelay = 0``, src/plugins/ucx/ucx_backend.cpp:331): every idle engine holds a core busy, half of a 2-core machine per engine; a test plugin sets 1 ms |

The container image's environment (``PATH`` = the runtime venv first, ``HOME`` = the pod
directory, ``HF_HUB_OFFLINE=1``, ``VLLM_NO_USAGE_STATS=1``, ``DO_NOT_TRACK=1``) stands in for
what ``vllm/vllm-openai`` and ``vllm/vllm-router`` set; the wrappers of S3-S5 sit first on PATH.
Besides, ``kubelet.py`` gives every pod process its harness marker ``MOEGEN_EXEC_POD`` (how the
harness finds the pod's processes; nothing in the pod reads it).
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
BUILD_SCRIPT = REPO / ".ci" / "cpu-runtime-venv.sh"
MARKER_NAME = ".moegen-cpu-runtime-ok"  # written by .ci/cpu-runtime-venv.sh after its smoke test
EP_PLUGIN = HERE / "cpu_ep_plugin"
NIXL_PLUGIN = HERE / "cpu_nixl_plugin"
#: S4: 64 MiB of KV cache per engine (see the table).
KV_CACHE_BYTES = 64 * 2**20
#: The rendered images' default environment, as far as these processes need one.
IMAGE_ENV = {"HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
             "PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8"}


@dataclass(frozen=True)
class Runtime:
    """The CPU runtime venv (``.ci/cpu-runtime-venv.sh``)."""

    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def bin(self) -> Path:
        return self.venv / "bin"


def runtime_venv() -> Path:
    env = os.environ.get("MOEGEN_CPU_RUNTIME_VENV")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "moegen" / "cpu-runtime-v1"


def find_runtime() -> Runtime | None:
    """The CPU runtime, or None if absent or never finished (no marker)."""
    venv = runtime_venv()
    if (venv / MARKER_NAME).is_file() and (venv / "bin" / "python").exists():
        return Runtime(venv)
    return None


def absent_reason() -> str:
    return ("!!! EXECUTION TIER NOT RUN: no finished CPU runtime at "
            f"{runtime_venv()} (marker {MARKER_NAME} missing). The rendered pods were NOT started "
            f"with the real engine and router. Build it with `bash {BUILD_SCRIPT.relative_to(REPO)}` "
            "(~2.5 min, ~2.8 GB; MOEGEN_CPU_RUNTIME_VENV puts it elsewhere). !!!")


def substitute(pod, cluster, model_dir: Path) -> None:
    """Apply S1-S11 to ``pod`` (its rendered argv/env -> argv/env), recording each change."""
    argv, env = list(pod.rendered_argv), dict(pod.rendered_env)
    changes = pod.changes
    pod_dir = cluster.work / "pods" / pod.name
    script = " ".join(argv)

    # S1, S2: volumes. All mount paths are replaced in one pass, each only as a whole path
    # component (``/tmp`` must not touch ``/tmpfs`` nor a host path already put in for another
    # mount, such as a checkpoint directory under the machine's /tmp).
    targets: dict[str, str] = {}
    for vm in pod.container.get("volumeMounts", []):
        vol = pod.volumes[vm["name"]]
        mp = vm["mountPath"]
        if mp == "/dev/shm":
            size = (vol.get("emptyDir") or {}).get("sizeLimit", "64Mi")
            pod.shm_size = re.sub(r"([KMGT])i$", lambda m: m.group(1).lower(), size)
            changes.append(f"S2 /dev/shm: private tmpfs, size {size}")
            continue
        if "persistentVolumeClaim" in vol:
            host = str(model_dir)
        elif "emptyDir" in vol:
            host = str(pod_dir / "volumes" / vm["name"])
        else:
            raise NotImplementedError(f"{pod.name}: volume {vm['name']} {vol} is not emulated")
        pod.mounts[mp] = host
        targets[mp] = host
    if targets:
        pattern = re.compile("|".join(re.escape(m) for m in sorted(targets, key=len, reverse=True))
                             + r"(?=/|$|[^\w.-])")
        for mp, host in targets.items():
            one = re.compile(re.escape(mp) + r"(?=/|$|[^\w.-])")
            in_argv = any(one.search(a) for a in argv)
            hit_env = [k for k, v in env.items() if one.search(v)]
            where = ", ".join(x for x in ("argv" if in_argv else "",
                                          f"env {','.join(hit_env)}" if hit_env else "") if x)
            name = next(vm["name"] for vm in pod.container["volumeMounts"] if vm["mountPath"] == mp)
            changes.append(f"S1 volume {name} {mp} -> {host} ({where or 'not referenced'})")
        sub = lambda text: pattern.sub(lambda m: targets[m.group(0)], text)  # noqa: E731
        argv = [sub(a) for a in argv]
        env = {k: sub(v) for k, v in env.items()}

    wrap_dir = pod_dir / "bin"
    path = [str(wrap_dir), str(cluster.runtime.bin), "/usr/local/bin", "/usr/bin", "/bin"]
    if "vllm serve" in script:
        extra = ["--host", pod.ip, "--kv-cache-memory-bytes", str(KV_CACHE_BYTES)]
        changes.append(f"S3 vllm serve: + --host {pod.ip}")
        changes.append(f"S4 vllm serve: + --kv-cache-memory-bytes {KV_CACHE_BYTES}")
        if "--enable-expert-parallel" in script:
            extra.append("--enforce-eager")
            changes.append("S5 vllm serve: + --enforce-eager (expert parallel on CPU)")
            env["PYTHONPATH"] = str(EP_PLUGIN)
            changes.append(f"S6 + PYTHONPATH={EP_PLUGIN.relative_to(REPO)} (EP collectives, vllm#57837)")
        if "NixlConnector" in script:
            env["PYTHONPATH"] = os.pathsep.join(x for x in (env.get("PYTHONPATH"), str(NIXL_PLUGIN)) if x)
            changes.append(f"S11 + PYTHONPATH {NIXL_PLUGIN.relative_to(REPO)} (NIXL progress thread "
                           "polls every 1 ms, not in a busy loop)")
        _wrapper(wrap_dir / "vllm", cluster.runtime.bin / "vllm", "serve", extra)
        for k in ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"):
            if k in env and env[k] != "lo":
                changes.append(f"S7 {k} {env[k]} -> lo")
                env[k] = "lo"
        env["VLLM_HOST_IP"] = pod.ip
        env["VLLM_CPU_OMP_THREADS_BIND"] = str(pod.core)
        changes.append(f"S7 + VLLM_HOST_IP={pod.ip}")
        changes.append(f"S8 + VLLM_CPU_OMP_THREADS_BIND={pod.core}")
    if argv and argv[0] == "vllm-router":
        argv, note = _router_host(argv, pod)
        if "--service-discovery" in argv:
            env["KUBECONFIG"] = str(cluster.root.kubeconfig)
            note = f"KUBECONFIG={cluster.root.kubeconfig} (its service discovery watches the " \
                f"harness's API server); {note}"
        changes.append(f"S9 router: {note}")
    if "--base-url" in argv and "bench" in argv:
        argv, note = _service_url(argv, cluster)
        changes.append(f"S10 bench: {note}")
    env.update(IMAGE_ENV, PATH=":".join(path), HOME=str(pod_dir))
    pod.argv, pod.env = argv, env


def _wrapper(path: Path, real: Path, subcommand: str, extra: list[str]) -> None:
    """An executable ``path`` that runs ``real`` with ``extra`` appended after ``subcommand``'s
    arguments (later flags win in vLLM's argument parser)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n"
                    f'if [ "$1" = {subcommand} ]; then exec {shlex.quote(str(real))} "$@" {shlex.join(extra)}; fi\n'
                    f'exec {shlex.quote(str(real))} "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _router_host(argv: list[str], pod) -> tuple[list[str], str]:
    """S9: ``--host``/``--prometheus-host 0.0.0.0`` -> the router pod's address."""
    out, i = [argv[0]], 1
    while i < len(argv):
        if argv[i] in ("--host", "--prometheus-host") and i + 1 < len(argv) and argv[i + 1] == "0.0.0.0":
            out += [argv[i], pod.ip]
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out, f"0.0.0.0 -> {pod.ip}"


def _service_url(argv: list[str], cluster) -> tuple[list[str], str]:
    """S10: ``--base-url http://<Service>:<port>`` -> the address of a pod the Service selects."""
    i = argv.index("--base-url") + 1
    m = re.fullmatch(r"http://([a-z0-9-]+):(\d+)", argv[i])
    if m is None:
        return argv, f"--base-url {argv[i]} kept (not a Service URL)"
    [svc] = [d for d in cluster.docs if d["kind"] == "Service" and d["metadata"]["name"] == m.group(1)]
    sp = next(p for p in svc["spec"]["ports"] if str(p["port"]) == m.group(2))
    pods = [q for q in cluster.pods.values()
            if all(q.labels.get(k) == v for k, v in svc["spec"]["selector"].items())]
    if not pods:
        raise NotImplementedError(f"Service {m.group(1)} selects no pod of this cluster")
    url = f"http://{pods[0].ip}:{pods[0].port(sp.get('targetPort', sp['port']))}"
    return argv[:i] + [url] + argv[i + 1:], f"--base-url {argv[i]} -> {url} (pod {pods[0].name})"
