"""Where the engines keep their compile and JIT caches, and the variables that move them into
the role's cache volume (``pod.cache``; docs/platform-facts.md §1 has every source).

Without them the caches live in the container's writable layer and every restart of a group
recompiles for 10-30 minutes (sglang#29170, dynamo#10695).

The volume is mounted at :data:`CACHE_MOUNT`; each role writes below a directory keyed by engine
release, GPU and layout (:func:`cache_root`), so a cache built by another release, GPU or layout
is never read back. The caches key their entries by GPU architecture and compiler version
themselves (Triton, DeepGEMM, FlashInfer, torch.compile with its default AOT artifact); the key
directory also keeps vLLM's per-node ``gpu_p2p_access_cache_for_<devices>.json`` apart.

vLLM (vllm/envs.py, 0.33.0):

* ``VLLM_CACHE_ROOT``: torch.compile artifacts (``torch_compile_cache/``; vLLM points
  TORCHINDUCTOR_CACHE_DIR inside it), FlashInfer autotune results, model info.
* ``DG_JIT_CACHE_DIR``: DeepGEMM kernels (deepseek-ai/DeepGEMM csrc/jit/compiler.hpp; vLLM sets
  it under VLLM_CACHE_ROOT only when unset, vllm/utils/deep_gemm.py).
* ``TRITON_CACHE_DIR`` (triton/knobs.py), ``FLASHINFER_WORKSPACE_BASE`` (flashinfer/jit/env.py:
  kernels under ``<base>/.cache/flashinfer/<version>/<arch>``), ``CUDA_CACHE_PATH`` (the CUDA
  driver's PTX JIT cache, CUDA environment variables documentation).

SGLang (sglang/srt/environ.py, 0.5.23):

* ``SGLANG_CACHE_DIR`` (from 0.5.12): its torch.compile cache; from 0.5.18 ``import sglang``
  also points Triton, Inductor, CUDA and FlashInfer below it unless they are set.
* ``SGLANG_DG_CACHE_DIR`` (from 0.5.3; ``SGL_DG_CACHE_DIR`` before): SGLang overwrites
  DG_JIT_CACHE_DIR with it (layers/deep_gemm_wrapper/compile_utils.py), so DG_JIT_CACHE_DIR
  alone has no effect.
* ``TRITON_CACHE_DIR``, ``TORCHINDUCTOR_CACHE_DIR``, ``CUDA_CACHE_PATH``,
  ``FLASHINFER_WORKSPACE_BASE`` set explicitly, for the releases before 0.5.18.
"""

from __future__ import annotations

import re

from ..facts.versions import parse_version
from ..layout import RoleLayout

#: Mount path of the cache volume in the engine container.
CACHE_MOUNT = "/var/cache/moegen"
#: Every variable :func:`cache_env` may set (derived: rule NET003 warns on overrides).
CACHE_ENV_KEYS = ("VLLM_CACHE_ROOT", "DG_JIT_CACHE_DIR", "TRITON_CACHE_DIR",
                  "FLASHINFER_WORKSPACE_BASE", "CUDA_CACHE_PATH", "SGLANG_CACHE_DIR",
                  "SGLANG_DG_CACHE_DIR", "SGL_DG_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")


def cache_root(engine: str, version: str, gpu: str, layout: RoleLayout) -> str:
    """The role's cache directory: ``<mount>/<engine>-<version>/<gpu>/tp<T>-dp<D>-pp<P>[-ep]``."""
    ep = "-ep" if layout.expert_parallel else ""
    key = f"tp{layout.tensor}-dp{layout.data}-pp{layout.pipeline}{ep}"
    release = re.sub(r"[^A-Za-z0-9._-]", "_", f"{engine}-{version}")
    return f"{CACHE_MOUNT}/{release}/{gpu}/{key}"


def cache_env(engine: str, version: str, root: str) -> list[tuple[str, str]]:
    """The variables that put ``engine`` ``version``'s caches below ``root`` (module docstring)."""
    common = [("TRITON_CACHE_DIR", f"{root}/triton"),
              ("FLASHINFER_WORKSPACE_BASE", f"{root}/flashinfer"),
              ("CUDA_CACHE_PATH", f"{root}/cuda")]
    if engine == "vllm":
        return [("VLLM_CACHE_ROOT", f"{root}/vllm"), ("DG_JIT_CACHE_DIR", f"{root}/deep_gemm"),
                *common]
    v = parse_version(version)
    out = []
    if v >= (0, 5, 12):
        out.append(("SGLANG_CACHE_DIR", f"{root}/sglang"))
    out.append(("SGLANG_DG_CACHE_DIR" if v >= (0, 5, 3) else "SGL_DG_CACHE_DIR",
                f"{root}/deep_gemm"))
    return [*out, *common, ("TORCHINDUCTOR_CACHE_DIR", f"{root}/inductor")]
