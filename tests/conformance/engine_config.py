"""Build the engines' own configuration objects from rendered command lines, on a CPU.

Deeper than parsing (``vllm_parse.py`` / ``sglang_parse.py``): the engines' cross-field checks run
(heads % TP, max-model-len vs the model, EPLB rules, DP/CP/attention-DP divisibility, speculative
method vs model, ...), with the model's real ``config.json`` and a fake GPU node shaped like the
role's pool. Runs under the engines venv's python (see .ci/engines-venv.sh), never under the
project's. Adapted from the CPU spike of 2026-11-30 (vLLM 0.33.0, SGLang 0.5.23).

stdin:  {"items": [{"id": str, "engine": "vllm" | "sglang", "argv": [...], "env": {...},
                    "model_config": {...HF config.json...},
                    "gpu": {"name": str, "total_bytes": int, "capability": [9, 0], "count": 8},
                    "ib_devices": [...]}]}
stdout: {"engine": ..., "version": ..., "results": [{"id", "ok", "error", "checked": [...],
          "nixl_hash": str | null}]}

What runs, per engine (each result's ``checked`` names it):

* vLLM: the ``vllm serve`` parser (make_arg_parser), ``EngineArgs.from_cli_args(args)
  .create_engine_config(headless=...)`` -- a real ``VllmConfig`` with ModelConfig (from the
  config.json), ParallelConfig, CacheConfig, SchedulerConfig, SpeculativeConfig,
  KVTransferConfig validation -- then, for NixlConnector roles, vLLM's own
  ``compute_nixl_compatibility_hash`` (nixl/metadata.py). The attention backend is chosen on the
  GPU at model build, which does not run here: the hash is computed with ``FLASHMLA`` for every
  role (moegen's rule PD010 keeps prefill and decode on one GPU generation, which picks one
  backend).
* SGLang: ``ServerArgs.add_cli_args`` + ``from_cli_args``, then ``resolve_once()`` (the
  arg_groups/*_hook.py pipeline: parallel, DP attention, CP, MoE/DeepEP, speculative, PD,
  memory hooks) and ``check_server_args()``. CUDA kernel packages (sgl_kernel, flashinfer,
  deep_gemm, pynvml) are stubs, so hooks that only probe those packages pass here;
  /sys/class/infiniband lists the RDMA devices the spec gives the pod.

Not checked here (the engines decide it at model build or in the workers): attention backend
and block size, EPLB divisibility (vLLM fused_moe/expert_map_manager.py), DeepEP/NIXL
availability, memory fit -- moegen's own rules cover those.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.abc
import importlib.machinery
import io
import json
import os
import sys
import tempfile
import traceback
import types
import warnings
from contextlib import redirect_stderr

#: The GPU the fake platform reports; replaced per item before its config is built.
GPU = {"name": "NVIDIA H20", "total_bytes": 150_754_820_096, "capability": [9, 0], "count": 8}
#: The RDMA devices the pod exposes under /sys/class/infiniband (the spec's network.rdma.devices).
IB_DEVICES: list[str] = []
IB_SYSFS = "/sys/class/infiniband"


class ParseError(Exception):
    pass


def _raising_exit(status=0, message=None):
    raise ParseError((message or f"argparse exited with status {status}").strip())


def _capture_stdout():
    """Point fd 1 (and sys.stdout) at stderr; return a writer for the real stdout."""
    real = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return real


def _model_dir(root: str, config: dict) -> str:
    """One directory per distinct config.json (prefill and decode share it: the NIXL hash
    includes the model path)."""
    text = json.dumps(config, sort_keys=True)
    path = os.path.join(root, hashlib.sha256(text.encode()).hexdigest()[:12])
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        f.write(text)
    return path


# --- vLLM ------------------------------------------------------------------------------------

def _install_fake_vllm_platform() -> None:
    """A CUDA platform that answers from :data:`GPU` (vLLM 0.33 NonNvmlCudaPlatform subclass)."""
    def stub(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        sys.modules[name] = m
        return m

    def unavailable(*a, **k):
        raise RuntimeError("CUDA kernel stub called during a CPU-only config check")

    stub("vllm._C_stable_libtorch")
    stub("vllm.vllm_flash_attn", __path__=[], flash_attn_varlen_func=unavailable,
         get_scheduler_metadata=unavailable, compile_flash_attn_varlen_func_from_specs=None,
         is_fa_version_supported=lambda v, device=None: v == 3,
         fa_version_unsupported_reason=lambda v, device=None: None if v == 3 else "stub")
    import vllm.platforms as platforms
    from vllm.platforms.cuda import NonNvmlCudaPlatform
    from vllm.platforms.interface import DeviceCapability

    class FakeNode(NonNvmlCudaPlatform):
        @classmethod
        def get_device_capability(cls, device_id=0):
            return DeviceCapability(major=GPU["capability"][0], minor=GPU["capability"][1])

        @classmethod
        def get_device_name(cls, device_id=0):
            return GPU["name"]

        @classmethod
        def get_device_total_memory(cls, device_id=0):
            return GPU["total_bytes"]

        @classmethod
        def device_count(cls):
            return GPU["count"]

        @classmethod
        def is_fully_connected(cls, ids):
            return True

    platforms._current_platform = FakeNode()
    import vllm._custom_ops as ops
    ops.cutlass_scaled_mm_supports_fp8 = lambda cap: cap >= 89
    ops.cutlass_scaled_mm_supports_block_fp8 = lambda cap: cap >= 90
    import vllm.triton_utils as triton_utils
    if not triton_utils.HAS_TRITON:  # give the placeholder triton a real Config for sm90 filters
        from triton.runtime.autotuner import Config
        triton_utils.triton.Config = Config


def _vllm_checker():
    _install_fake_vllm_platform()
    from vllm.distributed.kv_transfer.kv_connector.v1.nixl.metadata import (
        compute_nixl_compatibility_hash,
    )
    from vllm.engine.arg_utils import EngineArgs
    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = make_arg_parser(FlexibleArgumentParser())
    parser.exit = _raising_exit  # type: ignore[method-assign]

    def check(item: dict, model_dir: str) -> dict:
        argv = list(item["argv"])
        assert argv[:2] == ["vllm", "serve"], argv[:2]
        flags = ["--model", model_dir] + argv[3:] + ["--skip-tokenizer-init"]
        with redirect_stderr(io.StringIO()):
            args = parser.parse_args(flags)
        args.model = getattr(args, "model_tag", None) or args.model
        cfg = EngineArgs.from_cli_args(args).create_engine_config(
            headless=bool(getattr(args, "headless", False)))
        out = {"checked": ["vllm serve parser", "EngineArgs.create_engine_config"],
               "nixl_hash": None}
        kvt = cfg.kv_transfer_config
        if kvt is not None and kvt.kv_connector == "NixlConnector":
            out["nixl_hash"] = compute_nixl_compatibility_hash(cfg, "FLASHMLA")
            out["checked"].append("compute_nixl_compatibility_hash")
        return out

    import vllm
    return check, vllm.__version__


# --- SGLang ----------------------------------------------------------------------------------

class _Anything:
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()

    def __call__(self, *a, **k):
        return a[0] if len(a) == 1 and callable(a[0]) and not k else _Anything()

    def __mro_entries__(self, bases):
        return (object,)


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """CUDA-kernel packages SGLang imports once it believes CUDA is present."""

    PREFIXES = ("sgl_kernel", "flashinfer", "deep_gemm", "pynvml")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.PREFIXES:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        m = _StubModule(spec.name)
        m.__path__ = []
        return m

    def exec_module(self, module):
        pass


def _install_fake_sglang_node() -> None:
    import transformers  # noqa: F401 - decides "no torchvision" before the stub exists
    import transformers.image_utils  # noqa: F401
    for name in ("torchvision", "torchvision.transforms", "torchvision.transforms.functional",
                 "torchvision.transforms.v2", "torchvision.io", "torchvision.ops"):
        sys.modules.setdefault(name, _StubModule(name))
    import torch
    import torch.cuda

    def props(device=None):
        return types.SimpleNamespace(
            name=GPU["name"], total_memory=GPU["total_bytes"], major=GPU["capability"][0],
            minor=GPU["capability"][1], multi_processor_count=78, uuid="GPU-00000000",
            L2_cache_size=52_428_800)

    torch.version.cuda = "12.9"
    fakes = {
        "is_available": lambda: True, "device_count": lambda: GPU["count"],
        "current_device": lambda: 0, "set_device": lambda d: None,
        "get_device_capability": lambda d=None: tuple(GPU["capability"]),
        "get_device_name": lambda d=None: GPU["name"], "get_device_properties": props,
        "mem_get_info": lambda d=None: (GPU["total_bytes"] - 2**30, GPU["total_bytes"]),
        "is_bf16_supported": lambda *a, **k: True,
    }
    for name, fn in fakes.items():
        setattr(torch.cuda, name, fn)
    sys.meta_path.insert(0, _StubFinder())
    # SGLang checks --disaggregation-ib-device against the pod's /sys/class/infiniband
    # (arg_groups/validation_hook.py): answer with the devices the spec gives the pod.
    isdir, listdir = os.path.isdir, os.listdir
    os.path.isdir = lambda p: (str(p) == IB_SYSFS and bool(IB_DEVICES)) or isdir(p)
    os.listdir = lambda p=".": list(IB_DEVICES) if str(p) == IB_SYSFS else listdir(p)


def _sglang_checker():
    _install_fake_sglang_node()
    from sglang.srt.server_args import ServerArgs
    parser = argparse.ArgumentParser(prog="sglang.launch_server")
    ServerArgs.add_cli_args(parser)
    parser.exit = _raising_exit  # type: ignore[method-assign]

    def check(item: dict, model_dir: str) -> dict:
        argv = list(item["argv"])
        assert argv[1:3] == ["-m", "sglang.launch_server"], argv[:3]
        flags = argv[3:]
        flags[flags.index("--model-path") + 1] = model_dir
        with redirect_stderr(io.StringIO()):
            raw = parser.parse_args(flags)
        args = ServerArgs.from_cli_args(raw)
        args.resolve_once()
        args.check_server_args()
        return {"checked": ["ServerArgs.from_cli_args", "ServerArgs.resolve_once",
                            "ServerArgs.check_server_args"], "nixl_hash": None}

    import sglang
    return check, sglang.__version__


# --- driver ----------------------------------------------------------------------------------

def child(engine: str) -> int:
    real = _capture_stdout()
    warnings.simplefilter("ignore")
    items = json.load(sys.stdin)["items"]
    root = tempfile.mkdtemp(prefix="moegen-models-")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("VLLM_CACHE_ROOT", os.path.join(root, "vllm-cache"))   # per run: two runs share no cache
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
    check, version = (_vllm_checker if engine == "vllm" else _sglang_checker)()
    results = []
    for item in items:
        GPU.update(item["gpu"])
        IB_DEVICES[:] = item.get("ib_devices", [])
        res = {"id": item["id"], "ok": False, "error": "", "checked": [], "nixl_hash": None}
        saved = {k: os.environ.get(k) for k in item.get("env", {})}
        os.environ.update(item.get("env", {}))
        try:
            res.update(check(item, _model_dir(root, item["model_config"])))
            res["ok"] = True
        except BaseException as e:  # noqa: BLE001 - report every failure per item
            res["error"] = f"{type(e).__name__}: {e}".split("\n    For further")[0][:2000]
            traceback.print_exc(file=sys.stderr)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        results.append(res)
    json.dump({"engine": engine, "version": version, "results": results}, real)
    real.write("\n")
    real.flush()
    return 0


if __name__ == "__main__":
    sys.exit(child(sys.argv[1]))
