"""gen diff's KV-handshake factors against vLLM's own compatibility hash (issue 33).

generator/rollout/compat.py says a prefill of one revision and a decode of another fail their
NIXL handshake when they differ in a factor of ``compute_nixl_compatibility_hash`` (vLLM 0.33.0
vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py). Here each change of S1 is
rendered, its decode command built into vLLM's own configuration in the engines venv
(tests/conformance/engine_config.py), and the engine's hash of the old and the new decode must
differ exactly when gen diff says the pair would mismatch. The release factor cannot be varied
(the venv holds one vLLM), nor the model path (the checker serves its own copy of the config);
the others can: the KV-cache dtype and the speculative config (prefill carries decode's); and
changes that touch none of them (an engine variable, the router) must keep the hash. One
engines-venv run for all (vLLM's import is most of it).
"""

from __future__ import annotations

import pytest
import yaml

from generator.rollout.compat import handshake, mismatch
from tests.conformance.runner import build_engine_configs, require_engines
from tests.helpers import EXAMPLES, render_spec
from tests.test_conformance_engine_config import engine_item

S1 = EXAMPLES / "s1-16xh20-pd.yaml"
#: change name -> overlay, and whether the NIXL hash must change
CHANGES = {
    "kv-cache-auto": ({"spec": {"serving": {"kvCacheDtype": "auto"}}}, True),
    "no-mtp": ({"spec": {"roles": [{"name": "decode", "speculative": None}]}}, True),
    "engine-variable": ({"spec": {"network": {"env": {"ROLLOUT_REVISION": "2"}}}}, False),
    "router-policy": ({"spec": {"router": {"policy": "cache_aware"}}}, False),
}


@pytest.fixture(scope="module")
def hashes(tmp_path_factory):
    """Per change (and the base): the engine's NIXL hash of decode's leader, and gen diff's
    handshake of the decode role."""
    require_engines()
    tmp = tmp_path_factory.mktemp("handshake")
    variants = {"base": []}
    for name, (overlay, _) in CHANGES.items():
        path = tmp / f"{name}.yaml"
        path.write_text(yaml.safe_dump(overlay))
        variants[name] = [path]
    items, keys = [], {}
    for name, overlays in variants.items():
        checked, plan, _ = render_spec(S1, overlays)
        i = next(j for j, r in enumerate(plan.roles) if r.mode == "decode")
        items.append(engine_item(name, checked, plan, i, 0))
        keys[name] = handshake(checked.model, i)
    results = {r["id"]: r for r in build_engine_configs("vllm", items)}
    assert all(r["ok"] for r in results.values()), {i: r["error"] for i, r in results.items()}
    return {n: (results[n]["nixl_hash"], keys[n]) for n in variants}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_gen_diff_mismatch_is_the_engine_hash_mismatch(hashes, change):
    base_hash, base_key = hashes["base"]
    new_hash, new_key = hashes[change]
    assert base_key.checked and new_key.checked        # vLLM 0.33.0, NixlConnector
    differs = mismatch(base_key, new_key)
    assert (new_hash != base_hash) == CHANGES[change][1], (change, base_hash, new_hash)
    assert bool(differs) == CHANGES[change][1], (change, differs)
