"""gen diff's lines on requests in flight are engine- and topology-specific (a new user's
trial, day 42). Before, every engine and topology got vLLM's recovery and a router::

    $ gen diff s3-v4pro-pd-dp16.yaml (SGLang 0.5.22 -> 0.5.23)
    prefill ... in flight: each stopped pod leaves the router's list, ... (prefill holds a request
      for one prompt: the longest prefill finishes; decode recomputes a prompt whose KV it could
      not pull: kv_load_failure_policy recompute)
    $ gen diff s1-32xh20-unified.yaml (vLLM 0.32.0 -> 0.33.0; one unified role, no router)
    serve ... in flight: each stopped pod leaves the router's list, waits 10 s (preStop), ...

SGLang 0.5.23 python/sglang/srt/disaggregation/decode.py: a decode whose KV transfer fails
(``DecodeTransferQueue.pop_transferred``, ``KVPoll.Failed``) or whose handshake fails
(``_update_handshake_waiters``) aborts the request with ``prepare_abort(...,
HTTPStatus.INTERNAL_SERVER_ERROR)``: the client gets a 500, nothing is recomputed. With no
router in front, a stopped pod leaves its Service's endpoints (a terminating pod is not ready).
"""

from __future__ import annotations

from generator.output.rollout_report import text
from generator.rollout import compare, side
from tests.helpers import EXAMPLES, ROOT

OVERLAYS = ROOT / "tests"


def _diff(spec, old_overlay):
    a, fa = side(spec, [old_overlay])
    b, fb = side(spec)
    assert a.model is not None and b.model is not None, fa + fb
    return compare(a, b)


def _in_flight(diff, role):
    out = text(diff)
    head = next(i for i, x in enumerate(out.splitlines()) if x.startswith(f"  {role} ("))
    return next(x for x in out.splitlines()[head:] if x.startswith("    in flight:"))


def test_sglang_decode_aborts_a_request_whose_kv_it_could_not_pull():
    d = _diff(EXAMPLES / "s3-v4pro-pd-dp16.yaml", OVERLAYS / "diff" / "sglang-0.5.22.yaml")
    line = _in_flight(d, "prefill")
    assert "kv_load_failure_policy" not in line and "recompute" not in line
    assert "SGLang's decode aborts the request (HTTP 500)" in line
    assert "leaves the router's list" in line            # smg is rendered in front of PD roles


def test_vllm_decode_still_recomputes():
    d = _diff(EXAMPLES / "s1-16xh20-pd.yaml", OVERLAYS / "execution" / "overlays" / "vllm-0.32.yaml")
    assert "decode recomputes a prompt whose KV it could not pull: kv_load_failure_policy " \
        "recompute" in _in_flight(d, "prefill")


def test_a_unified_role_without_router_leaves_its_service():
    d = _diff(EXAMPLES / "s1-32xh20-unified.yaml",
              OVERLAYS / "execution" / "overlays" / "vllm-0.32.yaml")
    line = _in_flight(d, "serve")
    assert "router" not in line
    assert line.startswith("    in flight: each stopped pod leaves the endpoints of its Service "
                           "(dsv3-dp32-serve-api)")
