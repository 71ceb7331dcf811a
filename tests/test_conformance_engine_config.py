"""Engine-config conformance: the engines' own configuration objects, built from what we render.

For every example, golden case and rendered field fix (tests/field) pinned to the releases in
the engines venv (vLLM 0.33.0,
SGLang 0.5.23), every role's leader command and one worker command are turned into the engine's
configuration objects on a CPU with a fake GPU node shaped like the role's pool
(tests/conformance/engine_config.py says exactly what runs: vLLM ``create_engine_config`` and
``compute_nixl_compatibility_hash``; SGLang ``ServerArgs.resolve_once`` + ``check_server_args``).
Then, for every vLLM deployment with NIXL, prefill's and decode's compatibility hashes must be
equal: a mismatch means the KV handshake is refused at run time (the speculative config, the
KV dtype, the model and the engine version are in the hash).

Cases pinned to other releases are covered by the per-release option lists (test_flags.py) and
are listed as not config-checked.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from generator.catalog import GPUS
from tests.conformance.runner import build_engine_configs, require_engines
from tests.helpers import ROOT, materialise_case, model_config, render_spec
from tests.test_golden import cases


def _field_render_cases():
    """The field cases whose fix is a rendered command (tests/field/*/case.yaml with
    ``render:`` and no expected error): (name, spec, overlays)."""
    import tempfile
    from pathlib import Path

    import yaml
    out = []
    for case in sorted((ROOT / "tests" / "field").glob("*/case.yaml")):
        meta = yaml.safe_load(case.read_text())
        if not meta.get("render") or meta.get("expect"):
            continue
        text = case.read_text()
        if "name: vllm" in text and "connector: mooncake" in text:
            continue   # vLLM's MooncakeConnector imports uvicorn, which the engines venv lacks
        spec, overlays, _ = materialise_case(case.parent, Path(tempfile.mkdtemp()))
        out.append((f"field/{case.parent.name}", spec, overlays))
    return out

#: The releases the engines venv holds (.ci/engines-venv.sh).
VENV_RELEASES = {"vllm": "0.33.0", "sglang": "0.5.23"}
#: Device names and compute capabilities the fake node reports per GPU generation.
DEVICE = {"H20-96GB": "NVIDIA H20", "H20-141GB": "NVIDIA H20", "H100-80GB": "NVIDIA H100 80GB HBM3",
          "H800-80GB": "NVIDIA H800", "H200-141GB": "NVIDIA H200", "B200-180GB": "NVIDIA B200",
          "GB200-186GB": "NVIDIA GB200"}
CAPABILITY = {"hopper": [9, 0], "blackwell": [10, 0]}


def engine_item(item_id: str, checked, plan, i: int, pod: int) -> dict:
    """The engines venv's item for pod ``pod`` of role ``i`` of a rendered deployment: its
    command, its engine variables, the model's config and a fake node shaped like its pool."""
    role_spec, role = checked.spec.spec.roles[i], plan.roles[i]
    envs = {e.role: dict(e.items) for e in plan.env_files}
    pool = checked.spec.spec.nodePools[role_spec.nodePool]
    gpu = GPUS[pool.gpu]
    rdma = checked.spec.spec.network.rdma
    return {
        "id": item_id, "engine": plan.engine, "argv": role.launch.argv(pod, substitute=True),
        "env": {k: v for k, v in envs[role.name].items() if k.startswith(("VLLM_", "SGLANG_"))},
        "model_config": model_config(checked),
        "gpu": {"name": DEVICE[gpu.id], "total_bytes": gpu.hbm_mib * 2**20,
                "capability": CAPABILITY[gpu.generation], "count": pool.gpusPerNode},
        "ib_devices": list(rdma.devices) if rdma else [],
    }


def _items(engine: str) -> tuple[list[dict], dict[str, list[tuple[str, str]]], list[str]]:
    """(items, per case the (item id, role mode) list, cases not checked)."""
    items, by_case, skipped = [], defaultdict(list), []
    for name, spec, overlays in [*cases(), *_field_render_cases()]:
        checked, plan, _ = render_spec(spec, overlays)
        if plan.engine != engine:
            continue
        if checked.dialect.version != VENV_RELEASES[engine]:
            skipped.append(f"{name} ({engine} {checked.dialect.version})")
            continue
        for i, role in enumerate(plan.roles):
            for pod in sorted({0, len(role.launch.per_pod) - 1}):
                item_id = f"{name}/{role.name}/pod{pod}"
                items.append(engine_item(item_id, checked, plan, i, pod))
                by_case[name].append((item_id, role.mode))
    return items, by_case, skipped


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_engine_configs_build(engine: str, capsys) -> None:
    require_engines()
    items, by_case, skipped = _items(engine)
    assert items, f"no {engine} case is pinned to {VENV_RELEASES[engine]}"
    control = None
    if engine == "vllm":
        # Negative control: S1's prefill without the decode's MTP config (what moegen rendered
        # before prefill carried it) must hash differently, or the hash check proves nothing.
        prefill = next(i for i in items if i["id"] == "s1-16xh20-pd/prefill/pod0")
        argv = list(prefill["argv"])
        k = argv.index("--speculative-config")
        control = dict(prefill, id="control/s1-prefill-without-mtp", argv=argv[:k] + argv[k + 2:])
        items = items + [control]
    results = {r["id"]: r for r in build_engine_configs(engine, items)}
    if control is not None:
        assert results[control["id"]]["ok"], results[control["id"]]["error"]
        assert results[control["id"]]["nixl_hash"] != \
            results["s1-16xh20-pd/decode/pod0"]["nixl_hash"]
    # The engines venv has no Ray, as an image built from vLLM 0.33.0's wheel alone (vLLM >=
    # 0.18.0 does not depend on ray): vLLM's own ParallelConfig refuses the Ray executor there,
    # which is what LAY016/LAY017 say (.ci/engines-venv.sh pins no ray).
    ray = {i for i in results if "--distributed-executor-backend" in
           next(x["argv"] for x in items if x["id"] == i)}
    assert bool(ray) == (engine == "vllm")   # tests/golden/s1-ray-prefill
    assert all("Failed to import Ray" in (results[i]["error"] or "") for i in ray), \
        {i: results[i]["error"] for i in ray}
    bad = {i: r["error"] for i, r in results.items() if not r["ok"] and i not in ray}
    assert not bad, bad
    checked = sorted({c for r in results.values() for c in r["checked"]})
    with capsys.disabled():
        print(f"\n[{engine} {VENV_RELEASES[engine]}] {len(items) - bool(control)} commands built "
              "into engine "
              f"configs ({', '.join(checked)}); not config-checked (other releases): "
              f"{', '.join(skipped) or 'none'}")
    if engine == "vllm":
        assert "compute_nixl_compatibility_hash" in checked
        pairs = 0
        for name, ids in by_case.items():
            hashes = {mode: {results[i]["nixl_hash"] for i, m in ids if m == mode}
                      for mode in ("prefill", "decode")}
            if None in hashes["prefill"] | hashes["decode"] or not all(hashes.values()):
                continue  # not a NIXL PD deployment
            pairs += 1
            assert len(hashes["prefill"] | hashes["decode"]) == 1, (
                f"{name}: prefill and decode NIXL compatibility hashes differ: the handshake "
                f"would be refused ({hashes})")
        assert pairs >= 3, "expected several NIXL prefill/decode pairs among the cases"
