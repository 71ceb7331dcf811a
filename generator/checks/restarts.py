"""Rules of the restart model (generator/facts/restarts.py, generator/facts/lws.py
restart_policy): what a group does while its pods still start, and what a survivor does when its
peer restarts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..engines.network import nic_family
from ..errors import Severity
from ..facts import lws
from ..facts.nixl import ImageNixl, fixed_in, image_nixl
from ..facts.restarts import PeerRestart, crashes
from .registry import Context, Hit, W, role_path, rule

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..deployment import Deployment
    from ..roles import RoleInput

#: Notice: what moegen could not check (errors.py Severity).
N = Severity.NOTICE
LWS_PATH = ("spec", "platform", "lws")


def _multi_pod_lws(ctx: Context):
    """(index, role) of the roles rendered as LeaderWorkerSets of several pods per group."""
    if ctx.spec.spec.target.name != "kubernetes":
        return
    for i, r in ctx.role_items():
        if r.layout.multi_pod and ctx.spec.spec.roles[i].workload in ("lws", "pod-per-rank"):
            yield i, r


def _pods(roles) -> str:
    return ", ".join(f"{r.name!r} ({len(r.layout.pods)} pods)" for _, r in roles)


@rule("RST001", W, "groups of several pods are not re-created while a pod still starts",
      "kubernetes-sigs/lws#726 (RecreateGroupOnPodRestart re-creates a group whose pods still "
      "pull the image: a restart loop), kubernetes-sigs/lws#1048 (no backoff); "
      "kubernetes-sigs/lws@v0.7.0:pkg/controllers/pod_controller.go:201-237 (no other policy "
      "before v0.8.0); generator/facts/lws.py restart_policy")
def _restart_loop(ctx: Context):
    platform = ctx.spec.spec.platform
    cfg = platform.lws if platform is not None else None
    if cfg is None or not lws.known(cfg.version) or cfg.restartPolicy is not None \
            or lws.has(cfg.version, "recreateGroupAfterStartAnnotation"):
        return
    roles = list(_multi_pod_lws(ctx))
    if roles:
        yield Hit((*LWS_PATH, "version"),
                  f"LeaderWorkerSet {cfg.version} re-creates a whole group as soon as one of "
                  f"its containers restarts, pods still pulling the image included: a group of "
                  f"{_pods(roles)} whose pods start at different speeds loops (the started "
                  "engines time out waiting for their peers and take the pulling pods down "
                  "with them)",
                  f"upgrade LWS to {lws.since('recreateGroupAfterStart')} (moegen then renders "
                  f"RecreateGroupAfterStart; {lws.since('recreateGroupAfterStartAnnotation')}: "
                  "its annotation), or pre-pull the engine image on the pool's nodes")


def pd_crashes(ctx: Deployment) -> Iterator[tuple[int, RoleInput, PeerRestart]]:
    """(index of the survivor role, role, row) of each restart-model row whose survivor
    crashes, for the roles of a prefill/decode deployment (a :class:`Context` or the
    :class:`~generator.deployment.Deployment` gen diff compares). The rule that reports a row
    in gen validate: :data:`CRASH_RULE` by engine."""
    modes = {r.mode for _, r in ctx.role_items()}
    if ctx.dialect is None or not {"prefill", "decode"} <= modes:
        return
    engine, version = ctx.spec.spec.engine.name, ctx.spec.spec.engine.version
    nic = nic_family(ctx.spec.spec.network.rdma)
    nixl = image_nixl(engine, version, ctx.spec.spec.engine.image)
    for i, r in ctx.role_items():
        connector = r.kv_transfer.connector if r.kv_transfer is not None else None
        # NIXL's backend: the user's SGLang variable, else the NIC's (moegen renders it), else
        # NIXL's default UCX (SGLang 0.5.23 python/sglang/srt/environ.py
        # SGLANG_DISAGGREGATION_NIXL_BACKEND; vLLM nixl/base_worker.py backends ["UCX"]).
        env = {**ctx.spec.spec.network.env, **ctx.spec.spec.roles[i].env}
        backend = env.get("SGLANG_DISAGGREGATION_NIXL_BACKEND") if engine == "sglang" else None
        backend = backend or (nic.nixl_backend if nic is not None else "UCX")
        for row in crashes(engine, version, connector, backend.upper()):
            if row.pair == "prefill-decode" and row.survivor == r.mode \
                    and not (row.nixl_race and nixl.fixed):
                yield i, r, row


def _nixl_said(ctx: Context, row: PeerRestart) -> str:
    """What the finding says of the image's NIXL for a row of NIXL's race (the assumption
    where moegen does not know it)."""
    if not row.nixl_race:
        return ""
    s = ctx.spec.spec
    nixl: ImageNixl = image_nixl(s.engine.name, s.engine.version, s.engine.image)
    if nixl.release is None:
        return (f"; moegen does not know the NIXL in {s.engine.image} and assumed one before "
                f"{fixed_in()}, the first release with the fix")
    return f"; the image runs {nixl.describe()}, before {fixed_in()} ({nixl.source})"


def _crash_hits(ctx: Context):
    """A finding per prefill/decode role whose survivor side crashes (the restart model)."""
    for i, r, row in pd_crashes(ctx):
        yield Hit(role_path(i, "kvTransfer", "connector"),
                  f"role {r.name!r} ({ctx.spec.spec.engine.name} "
                  f"{ctx.spec.spec.engine.version}, {row.transport}): when a {row.restarted} "
                  f"instance restarts or is re-created ({row.restarted} pods rolled, evicted, "
                  f"crashed), {row.behaviour}: one {row.restarted} restart takes down every "
                  f"{row.survivor} instance it had exchanged KV with, and their groups "
                  f"cold-start again ({row.source.split(' ', 1)[0]}{_nixl_said(ctx, row)})",
                  row.remedy)


@rule("RST010", W, "a decode restart does not crash SGLang's prefill (NIXL)",
      "smg-project/smg#2503 (open); SGLang 0.5.23 python/sglang/srt/disaggregation/nixl/"
      "conn.py _add_remote_peer (the old agent of the address stays registered); "
      "generator/facts/restarts.py",
      engines=("sglang",))
def _sglang_nixl(ctx: Context):
    yield from _crash_hits(ctx)


@rule("RST011", N, "a prefill restart does not crash vLLM's decode (NIXL)",
      "vllm-project/vllm#49238; vLLM 0.33.0 vllm/distributed/kv_transfer/kv_connector/v1/nixl/"
      "base_worker.py _track_remote_engine_replacement; ai-dynamo/nixl#1986 (the UCX race, "
      "fixed by ai-dynamo/nixl PR#1987 in NIXL 1.5.0, which vLLM 0.33.0's connector requires: "
      "a notice where the image's NIXL is older or not known); generator/facts/nixl.py, "
      "generator/facts/restarts.py",
      engines=("vllm",))
def _vllm_nixl(ctx: Context):
    yield from _crash_hits(ctx)


#: The rule that reports a crashing survivor in gen validate, by engine (gen diff quotes it).
CRASH_RULE = {"sglang": "RST010", "vllm": "RST011"}
