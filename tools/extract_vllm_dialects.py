"""Extract the per-release vLLM facts moegen needs into package data.

Source: ``shared/reference/engines/vllm-dialects.yaml`` (dumped from every vLLM release's own
``make_arg_parser``, config dataclasses and ``envs.py``, 0.11.0 .. 0.33.0). The product may not
read ``shared/`` at run time, so this script writes the subset it uses to
``generator/engines/data/vllm-releases.json``. ``tests/test_data_drift.py`` fails when the
committed file drifts from the reference.

Usage: python tools/extract_vllm_dialects.py [REFERENCE_YAML] [OUT_JSON]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SRC = ROOT.parent / "shared" / "reference" / "engines" / "vllm-dialects.yaml"
DEFAULT_OUT = ROOT / "generator" / "engines" / "data" / "vllm-releases.json"


def _env_default(rel: dict, name: str):
    entry = rel["env"].get(name)
    if entry is None:
        return None
    return {"default": entry.get("default")}


def extract(src: Path) -> dict:
    """Return ``{"source": ..., "releases": {version: facts}}`` from the reference YAML."""
    doc = yaml.safe_load(src.read_text())
    out: dict = {}
    for version in doc["releases_all"]:
        rel = doc["releases"][version]
        flags = sorted(
            opt for entry in rel["flags"].values() if entry for opt in entry["opts"]
        )
        a2a = rel["all2all"]
        flag = a2a.get("flag") or {}
        env = a2a.get("env") or {}
        eplb = rel["eplb"]
        kvt = rel["kv_transfer"]
        out[version] = {
            "options": flags,
            "boolNegation": rel["boolean_negation"]["style"],
            "all2all": {
                "flagChoices": sorted(flag.get("choices") or []),
                "envName": env.get("name"),
                "envChoices": sorted(env.get("choices") or []),
                "howToSet": a2a["how_to_set"],
            },
            "eplb": {
                "legacyFlags": any(eplb["legacy_flags_present"].values()),
                "configJson": bool(eplb["eplb_config_json_accepted"]),
                "configKeys": sorted(eplb["config_keys"]),
            },
            "kvTransfer": {
                "keys": sorted(kvt["keys"]),
                "roles": sorted(kvt["kv_role_values"]),
                "connectors": sorted(kvt["registered_connectors"]),
                "nixlSideChannelPort": kvt.get("nixl_side_channel_port"),
            },
            "speculativeMethods": sorted(rel["speculative"]["method_values"]),
            "kvCacheDtypes": sorted(rel["kv_cache_dtype"]["values"]),
            "gpuMemoryUtilizationDefault": rel["gpu_memory_utilization"]["default"],
            "multinodeFlags": bool(rel["data_parallel"]["multinode_flags_present"]),
            "env": {
                name: _env_default(rel, name)
                for name in (
                    "VLLM_ALL2ALL_BACKEND",
                    "VLLM_NIXL_SIDE_CHANNEL_HOST",
                    "VLLM_NIXL_SIDE_CHANNEL_PORT",
                    "VLLM_MOONCAKE_BOOTSTRAP_PORT",
                    "VLLM_ENGINE_READY_TIMEOUT_S",
                    "VLLM_USE_DEEP_GEMM",
                    "VLLM_DEEPEP_BUFFER_SIZE_MB",
                    "VLLM_DEEPEP_LOW_LATENCY_USE_MNNVL",
                    "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS",
                )
            },
        }
    return {
        "source": "every vLLM release's own vllm serve parser and sources (0.11.0-0.33.0), dumped "
                  "by the team and extracted by tools/extract_vllm_dialects.py",
        "releases": out,
    }


def render(src: Path) -> str:
    """The exact bytes the committed data file must hold."""
    return json.dumps(extract(src), indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    src = Path(argv[1]) if len(argv) > 1 else DEFAULT_SRC
    out = Path(argv[2]) if len(argv) > 2 else DEFAULT_OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(src))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
