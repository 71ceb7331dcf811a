"""Whether a prefill of one revision and a decode of another can pair (the KV handshake), and
which of a role's caches a new pod starts without.

KV handshake, per engine release and connector:

* vLLM, NixlConnector, >= 0.13.0: the handshake compares a hash of the factors of
  ``compute_nixl_compatibility_hash`` (vLLM 0.33.0
  vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py): the vLLM version, the NIXL
  connector version, the model (the path served), its dtype, KV heads, head size and layers,
  the attention backend, the KV-cache dtype, whether the hybrid KV-cache manager runs, the
  EAGLE/MTP speculative config (from 0.28.0) and the transfer mode; a mismatch raises in the
  handshake (nixl/base_worker.py "NIXL compatibility hash mismatch") and decode, with the
  rendered ``kv_load_failure_policy: recompute`` (generator/engines/vllm.py), computes the
  prompt itself. moegen compares the factors a spec sets: the release, the model path, the
  checkpoint format (dtype), the KV-cache dtype and the speculative method.
* vLLM's MooncakeConnector and SGLang's Mooncake and NIXL transfers carry no release or
  layout check (SGLang 0.5.23 python/sglang/srt/disaggregation/mooncake/conn.py: positional
  ZMQ messages, ``KVArgsRegisterInfo.from_zmq``; common/conn.py warns that "Mixed SGLang
  versions may wait for the KV release timeout"): a mixed pair is not refused, and whether it
  transfers correctly is not known (a notice).

A request whose KV a decode cannot pull (its prefill stopped, or a mixed pair failed the
handshake), :func:`kv_failure`: vLLM >= 0.13.0 does what the rendered ``kv_load_failure_policy``
says (recompute on decode unless the spec says fail: generator/engines/vllm.py); SGLang's decode
aborts it with HTTP 500 and recomputes nothing (SGLang 0.5.23
python/sglang/srt/disaggregation/decode.py: ``DecodeTransferQueue.pop_transferred`` on a failed
transfer and ``DecodePreallocQueue._update_handshake_waiters`` on a failed handshake call
``prepare_abort(..., HTTPStatus.INTERNAL_SERVER_ERROR)``).

Caches (generator/engines/caches.py): a role's compile and JIT caches live in its cache volume
below a directory keyed by engine release, GPU and layout. An emptyDir volume starts empty in
every new pod; a persistent volume keeps them for a re-created pod unless the key changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..deployment import Deployment
from ..engines.caches import cache_root
from ..engines.routers import rendered_router
from ..facts.versions import parse_version
from ..naming import client_service
from ..pods import effective_pod

#: What a stopped pod leaves, by what is rendered in front of the engines
#: (generator/engines/routers.py rendered_router): the router Deployment drops a worker that is
#: not Ready from its list, the endpoint picker one the InferencePool no longer selects, a
#: Service a terminating pod from its endpoints (Kubernetes EndpointSlice ``ready`` false).
FRONT = {"deployment": "the router's list",
         "gateway": "the InferencePool's endpoints (the endpoint picker's list)"}
#: First vLLM release with the NIXL compatibility hash (generator/engines/vllm.py table).
NIXL_HASH_SINCE = (0, 13, 0)


@dataclass(frozen=True)
class Handshake:
    """What the KV handshake of a role's engines compares: ``factors`` (name -> value) when the
    connector checks them, else ``checked`` False and ``what`` says which transfer it is."""

    checked: bool
    what: str
    factors: tuple[tuple[str, str], ...] = ()


def handshake(model, i: int) -> Handshake | None:
    """The handshake of role ``i`` of deployment model ``model`` (None: it moves no KV). The
    factors are listed for every transfer (what a pair of revisions differs in); ``checked``
    says whether the engine compares them."""
    spec = model.spec.spec
    role = spec.roles[i]
    r = model.roles[i]
    if r is None or r.kv_transfer is None or role.mode not in ("prefill", "decode"):
        return None
    connector = r.kv_transfer.connector
    engine, version = spec.engine.name, spec.engine.version
    what = f"{'vLLM' if engine == 'vllm' else 'SGLang'} {version} {connector}"
    checked = engine == "vllm" and connector == "nixl" \
        and parse_version(version) >= NIXL_HASH_SINCE
    dialect = model.dialect
    spec_method = ""
    if r.speculative is not None and (not checked or (
            dialect is not None and getattr(dialect, "nixl_hash_covers_speculative", False))):
        spec_method = r.speculative.method
    factors = (("release", f"{engine} {version}"), ("model", spec.model.path),
               ("weights", spec.model.weights),
               ("KV-cache dtype", r.serving.kvCacheDtype or "auto"),
               ("speculative", spec_method or "none"))
    return Handshake(checked, what, factors)


def mismatch(a: Handshake | None, b: Handshake | None) -> list[str]:
    """The factors two sides of a pair differ in (``a`` of one revision, ``b`` of the other);
    empty when they agree or either moves no KV."""
    if a is None or b is None:
        return []
    x, y = dict(a.factors), dict(b.factors)
    return [f"{k} {x.get(k)} / {y.get(k)}" for k in x if x.get(k) != y.get(k)]


def cache_note(old_model, new_model, i_old: int | None, i_new: int) -> str:
    """Which caches role ``i_new`` of ``new_model`` starts without in a new pod."""
    spec = new_model.spec.spec
    role = spec.roles[i_new]
    r = new_model.roles[i_new]
    if r is None:
        return ""
    pool = spec.nodePools[role.nodePool]
    root = cache_root(spec.engine.name, spec.engine.version, pool.gpu, r.layout)
    persistent = effective_pod(spec, role).cache.volume is not None
    old_root = None
    if old_model is not None and i_old is not None and old_model.roles[i_old] is not None:
        o = old_model.spec.spec
        old_root = cache_root(o.engine.name, o.engine.version,
                              o.nodePools[o.roles[i_old].nodePool].gpu,
                              old_model.roles[i_old].layout)
    key = root.split("/", 4)[-1]
    if not persistent:
        return f"compile and JIT caches ({key}) start empty in every new pod (emptyDir)"
    if old_root is not None and old_root != root:
        return (f"cache key {old_root.split('/', 4)[-1]} -> {key}: the "
                "persistent cache volume holds nothing for the new key, it compiles cold")
    return "the persistent cache volume keeps the compiled kernels (same key)"


def kv_failure(model: Deployment | None) -> str:
    """What ``model``'s decode does with a request whose KV it could not pull (module
    docstring), as a clause; "" without a model."""
    if model is None:
        return ""
    spec = model.spec.spec
    if spec.engine.name == "sglang":
        return "SGLang's decode aborts the request (HTTP 500), recomputing nothing"
    if model.dialect is None or not getattr(model.dialect, "kv_load_failure_policy", False):
        return (f"vLLM {spec.engine.version} has no kv_load_failure_policy (from 0.13.0), so "
                "decode does not recompute a prompt whose KV it could not pull")
    decode = next((r for r in spec.roles if r.mode == "decode"), None)
    policy = decode.kvTransfer.loadFailurePolicy if decode is not None and \
        decode.kvTransfer is not None else None
    if policy == "fail":
        return "decode fails a request whose KV it could not pull (kv_load_failure_policy fail)"
    return "decode recomputes a prompt whose KV it could not pull: kv_load_failure_policy " \
        "recompute"


def front(model: Deployment | None, role: str, mode: str) -> str:
    """Where a stopped pod of ``role`` (``mode``) stops getting requests from (:data:`FRONT`):
    its router, else its client Service's endpoints."""
    if model is None or mode not in ("prefill", "decode", "unified"):
        return "the Service"
    rendered = rendered_router(model.spec.spec)
    if rendered in FRONT:
        return FRONT[rendered]
    return f"the endpoints of its Service ({client_service(model.spec.metadata.name, role)})"
