"""The restart model: for each pair of components moegen renders, what the survivor does when its
peer restarts or is re-created, by the source at each release (issue 34; docs/design.md §12).

A row names the pair, the engine and KV transport it applies to (None: any), which side
restarts, what the survivor does (``outcome``: ``recovers`` - it keeps serving and takes the new
peer; ``crashes`` - its process dies, the kubelet restarts it and the LeaderWorkerSet re-creates
its group, a cold start of minutes), the engine releases it holds for (``first``/``fixed``: the
first release with the behaviour and the first without; None: every release moegen supports, or
none yet) and where that was read. Rules read the ``crashes`` rows (generator/checks/restarts.py);
the ``recovers`` rows document the pairs that need nothing rendered.

What the platform can express: the engines rendezvous only at start, so a pod that restarts
takes its whole group with it (generator/facts/lws.py restart_policy); nothing in Kubernetes,
LeaderWorkerSet or DisaggregatedSet restarts one role because another restarted (a
DisaggregatedSet couples rollouts, not failures: kubernetes-sigs/lws site/content/en/docs/
concepts/disaggregatedset/_index.md). A survivor that crashes restarts by itself (its container
exits); where it survives moegen relies on its readiness to leave the pool and on the
``EngineGroupRestarts`` alert (generator/manifests/monitoring.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from .versions import parse_version

RECOVERS, CRASHES = "recovers", "crashes"


@dataclass(frozen=True)
class PeerRestart:
    """One pair x restart of the restart model (see the module docstring); ``remedy``: what
    the user can do about a crashing survivor (a rule's hint); ``nixl_backend``: the NIXL
    backend the row holds for (None: any; the crashes are in NIXL's UCX backend, which moegen
    does not select on EFA: generator/engines/network.py NICS); ``nixl_race``: the crash is
    NIXL's UCX race (:data:`NIXL_RACE`), gone where the image's NIXL has its fix
    (generator/facts/nixl.py: the checks leave the row out there)."""

    pair: str
    engine: str | None
    transport: str | None
    restarted: str
    survivor: str
    outcome: str
    behaviour: str
    source: str
    remedy: str = ""
    first: str | None = None
    fixed: str | None = None
    nixl_backend: str | None = None
    nixl_race: bool = False

    def holds(self, engine: str, version: str, transport: str | None,
              nixl_backend: str | None = None) -> bool:
        """The row applies to ``engine`` at ``version`` with KV transport ``transport`` (over
        NIXL backend ``nixl_backend``)."""
        if self.engine is not None and self.engine != engine:
            return False
        if self.transport is not None and self.transport != transport:
            return False
        if self.nixl_backend is not None and self.nixl_backend != nixl_backend:
            return False
        v = parse_version(version)
        if self.first is not None and v < parse_version(self.first):
            return False
        return self.fixed is None or v < parse_version(self.fixed)


#: NIXL's UCX backend race behind both NIXL crashes: after a peer restarts on the same address,
#: the survivor loads the new agent's metadata while UCX's error callback force-closes the old
#: agent's endpoints; ``ucp_ep_rkey_unpack`` then runs on a closed endpoint and segfaults instead
#: of returning NIXL_ERR_REMOTE_DISCONNECT (ai-dynamo/nixl#1986). Fixed by ai-dynamo/nixl PR#1987
#: (commit 3e3e083, 2026-07-29): not in any release through 1.4.1, in 1.5.0 and 1.5.1 (their
#: wheels' UCX plugin no longer imports the callback's ucp_ep_close_nb); vLLM 0.33.0's connector
#: refuses NIXL < 1.5.0. Per release: generator/facts/data/nixl.json (tools/extract_nixl.py).
NIXL_RACE = ("ai-dynamo/nixl#1986, fixed by ai-dynamo/nixl PR#1987 in NIXL 1.5.0 "
             "(ai-dynamo/nixl@v1.4.0:src/plugins/ucx/ucx_utils.cpp:106 still force-closes the "
             "endpoint in the error callback; generator/facts/data/nixl.json per release)")

RESTARTS: tuple[PeerRestart, ...] = (
    PeerRestart(
        "prefill-decode", "sglang", "nixl", restarted="decode", survivor="prefill",
        outcome=CRASHES,
        behaviour="the decode comes back on the same address with a new NIXL agent and "
        "registers with the prefill's bootstrap server; the prefill's bootstrap thread adds the "
        "new agent (_add_remote_peer -> add_remote_agent) while the old agent of that address "
        "is still registered, and UCX fails to bring the endpoint up: \"Fatal Python error: "
        "Segmentation fault\" in the prefill",
        source="smg-project/smg#2503 (SGLang 0.5.18, NIXL 1.3.0, open); SGLang 0.5.23 "
        "python/sglang/srt/disaggregation/nixl/conn.py _add_remote_peer (adds the new agent, "
        "never removes the previous one of the address); the crash is in NIXL's UCX backend "
        "bringing up the new endpoint, the class of ai-dynamo/nixl#1986 (whether its fix, "
        "in NIXL 1.5.0, covers this path is not verified: the row holds at every NIXL)",
        nixl_backend="UCX",
        remedy="use kvTransfer.connector: mooncake on both roles (a restarted decode "
        "re-registers under a new session: mooncake/conn.py _publish_peer_registration), or "
        "roll decode and prefill in one window and watch moegen's EngineGroupRestarts alert"),
    PeerRestart(
        "prefill-decode", "sglang", "nixl", restarted="prefill", survivor="decode",
        outcome=RECOVERS,
        behaviour="SGLang's decode loads no prefill agent (only the prefill adds NIXL peers: "
        "it writes into the decode's registered buffers); the decode's heartbeat checker marks "
        "the lost prefill failed, fails its rooms and drops the cached bootstrap info, so the "
        "next request registers with the new prefill",
        source="SGLang 0.5.23 python/sglang/srt/disaggregation/nixl/conn.py (add_remote_agent "
        "only in NixlKVManager._add_remote_peer, the prefill side); python/sglang/srt/"
        "disaggregation/common/conn.py _handle_node_failure"),
    PeerRestart(
        "prefill-decode", "sglang", "mooncake", restarted="decode", survivor="prefill",
        outcome=RECOVERS,
        behaviour="a restarted decode re-registers under a new Mooncake session id; the "
        "registration lifts any blacklist of it and the old session is dropped after its idle "
        "timeout",
        source="SGLang 0.5.23 python/sglang/srt/disaggregation/mooncake/conn.py "
        "_publish_peer_registration, _run_one_probe_pass"),
    PeerRestart(
        "prefill-decode", "vllm", "nixl", restarted="prefill", survivor="decode",
        outcome=CRASHES,
        behaviour="the new prefill instance comes up on the same address with a new engine id; "
        "the decode handshakes with it and loads its NIXL metadata before it releases the "
        "replaced engine's agents, while UCX closes the old endpoints: one decode worker "
        "segfaults in loadRemoteMD and the decode instance restarts",
        source="vllm-project/vllm#49238 (vLLM 0.25.0/0.25.1, NIXL 1.3.1); vLLM 0.33.0 "
        "vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py "
        "_track_remote_engine_replacement, _cleanup_remote_engines (a replaced engine is "
        "released after the new handshake); " + NIXL_RACE,
        nixl_backend="UCX", nixl_race=True,
        remedy="run NIXL >= 1.5.0 (ai-dynamo/nixl PR#1987; vLLM 0.33.0 requires it), or expect "
        "decode restarts after each prefill restart: roll prefill and decode in one window and "
        "watch moegen's EngineGroupRestarts alert"),
    PeerRestart(
        "prefill-decode", "vllm", "nixl", restarted="decode", survivor="prefill",
        outcome=RECOVERS,
        behaviour="in pull mode only the decode loads the peer's agent (the handshake runs on "
        "the decode side); the prefill keeps serving and the lost decode's blocks are freed "
        "when its requests expire",
        source="vLLM 0.33.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py "
        "_nixl_handshake (decode side); tests/field/vllm-nixl-abort-timeout-expiry"),
    PeerRestart(
        "router-engine", None, None, restarted="engine", survivor="router",
        outcome=RECOVERS,
        behaviour="vllm-router and smg health-check their workers by the pod's stable DNS name "
        "(or re-discover the pod by label); a restarting engine fails its checks and is "
        "routed around until it answers again",
        source="generator/engines/routers.py (static URLs by pod name, discovery by label); "
        "vllm-router 0.1.17 src/routers/http/pd_router.rs, smg v1.9.0 model_gateway/src/"
        "health.rs"),
    PeerRestart(
        "routing sidecar-engine", None, None, restarted="engine", survivor="routing sidecar",
        outcome=RECOVERS,
        behaviour="the engine container restarts inside the pod; the pod is not Ready until "
        "the engine's readiness probe passes again, so the InferencePool leaves it out; the "
        "native sidecar keeps running and proxies to localhost again",
        source="https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/; "
        "llm-d/llm-d-router@v0.10.0:pkg/sidecar/proxy/options.go:399"),
    PeerRestart(
        "endpoint picker-pool", None, None, restarted="engine", survivor="endpoint picker",
        outcome=RECOVERS,
        behaviour="the picker scores the pool's Ready pods only; an engine pod that restarts "
        "leaves the pool until Ready, and a re-created one joins by label",
        source="https://gateway-api-inference-extension.sigs.k8s.io/ (InferencePool selects "
        "pods by label); generator/engines/gateway.py"),
)


def crashes(engine: str, version: str, transport: str | None,
            nixl_backend: str | None = None) -> list[PeerRestart]:
    """The rows whose survivor crashes, for ``engine`` at ``version`` over ``transport`` (and
    NIXL backend ``nixl_backend``)."""
    return [r for r in RESTARTS if r.outcome == CRASHES
            and r.holds(engine, version, transport, nixl_backend)]
