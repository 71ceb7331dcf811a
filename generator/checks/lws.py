"""Rules about the LeaderWorkerSet release the cluster runs (``spec.platform.lws``) and the
DisaggregatedSet output. The release table and its sources: generator/facts/lws.py."""

from __future__ import annotations

from ..engines.routers import discovery_supported, rendered_router
from ..facts import lws
from ..naming import MAX_CONTROLLER, MAX_LABEL
from .names import highest_group
from .registry import Context, E, Hit, role_path, rule

LWS_PATH = ("spec", "platform", "lws")


def _lws(ctx: Context):
    platform = ctx.spec.spec.platform
    return platform.lws if platform is not None else None


def _known(ctx: Context):
    """platform.lws when its version is one moegen knows (else None: LWS001 reports it)."""
    cfg = _lws(ctx)
    return cfg if cfg is not None and lws.known(cfg.version) else None


@rule("LWS001", E, "platform.lws.version is a LeaderWorkerSet release moegen knows",
      "generator/facts/lws.py (release lines v0.3-v0.10 from kubernetes-sigs/lws; "
      "kubernetes-sigs/lws#116: startupPolicy and maxSurge, which moegen renders, since v0.3.0)")
def _known_version(ctx: Context):
    cfg = _lws(ctx)
    if cfg is None or lws.known(cfg.version):
        return
    v = lws.parse(cfg.version)
    if v is not None and v[:2] < lws.KNOWN_LINES[0]:
        msg = (f"LeaderWorkerSet {cfg.version} predates v{lws.OLDEST}: its API has no "
               "spec.startupPolicy and no rollingUpdateConfiguration.maxSurge, which moegen's "
               "LeaderWorkerSets set")
        hint = f"upgrade the LWS controller to v{lws.OLDEST} or later"
    else:
        msg = (f"LeaderWorkerSet {cfg.version} is not a release moegen knows "
               f"(v{lws.OLDEST} to v{lws.NEWEST} lines); its features are not guessed")
        hint = f"name a release from v{lws.OLDEST} to v{lws.NEWEST} the cluster's API matches"
    yield Hit((*LWS_PATH, "version"), msg, hint)


@rule("LWS002", E, "Volcano gang scheduling needs a LeaderWorkerSet release with it",
      "generator/facts/lws.py volcanoGang (keps/407-gang-scheduling; kubernetes-sigs/lws#630: "
      "gangSchedulingManagement.schedulerProvider in v0.7.0)")
def _volcano(ctx: Context):
    cfg = _known(ctx)
    sched = ctx.spec.spec.platform.scheduler if cfg is not None else None
    if sched is not None and sched.kind == "volcano" and not lws.has(cfg.version, "volcanoGang"):
        yield Hit(("spec", "platform", "scheduler", "kind"),
                  f"platform.scheduler.kind volcano needs the LWS controller's gang scheduling "
                  f"(gangSchedulingManagement, since {lws.since('volcanoGang')}); "
                  f"LeaderWorkerSet {cfg.version} makes no PodGroups",
                  f"upgrade LWS to {lws.since('volcanoGang')}, or use kueue or default")


@rule("LWS003", E, "restartPolicy RecreateGroupAfterStart needs a LeaderWorkerSet release with it",
      "generator/facts/lws.py recreateGroupAfterStart (kubernetes-sigs/lws site docs "
      "concepts/leaderworkerset/failure-handling: restartPolicy in 0.9+, annotation in 0.8)")
def _after_start(ctx: Context):
    cfg = _known(ctx)
    if cfg is not None and cfg.restartPolicy == "RecreateGroupAfterStart" \
            and not lws.has(cfg.version, "recreateGroupAfterStartAnnotation"):
        yield Hit((*LWS_PATH, "restartPolicy"),
                  f"LeaderWorkerSet {cfg.version} has no RecreateGroupAfterStart (annotation "
                  f"since {lws.since('recreateGroupAfterStartAnnotation')}, restartPolicy value "
                  f"since {lws.since('recreateGroupAfterStart')})",
                  "use RecreateGroupOnPodRestart, or upgrade LWS")


@rule("LWS004", E, "a DisaggregatedSet needs a LeaderWorkerSet release that bundles it",
      "generator/facts/lws.py disaggregatedSet (kubernetes-sigs/lws site docs "
      "concepts/disaggregatedset: bundled in LWS from v0.9.0)")
def _ds_version(ctx: Context):
    cfg = _known(ctx)
    if cfg is not None and cfg.disaggregatedSet and not lws.has(cfg.version, "disaggregatedSet"):
        yield Hit((*LWS_PATH, "disaggregatedSet"),
                  f"LeaderWorkerSet {cfg.version} has no DisaggregatedSet (since "
                  f"{lws.since('disaggregatedSet')})",
                  "render separate LeaderWorkerSets (disaggregatedSet: false), or upgrade LWS")


@rule("LWS005", E, "a DisaggregatedSet holds 2 to 10 roles, each a LeaderWorkerSet",
      "kubernetes-sigs/lws@v0.10.0:api/disaggregatedset/v1/disaggregatedset_types.go:108-109 "
      "(roles: MinItems=2, MaxItems=10; each role embeds a LeaderWorkerSet template)")
def _ds_roles(ctx: Context):
    cfg = _lws(ctx)
    if cfg is None or not cfg.disaggregatedSet:
        return
    roles = ctx.spec.spec.roles
    if not lws.DS_MIN_ROLES <= len(roles) <= lws.DS_MAX_ROLES:
        yield Hit(("spec", "roles"),
                  f"a DisaggregatedSet has {lws.DS_MIN_ROLES} to {lws.DS_MAX_ROLES} roles; "
                  f"the spec has {len(roles)}",
                  "use disaggregatedSet with prefill and decode roles")
    for i, role in enumerate(roles):
        if role.workload == "statefulset":
            yield Hit(role_path(i, "workload"),
                      f"role {role.name!r} is a StatefulSet; a DisaggregatedSet role is a "
                      "LeaderWorkerSet",
                      "set workload: lws (or pod-per-rank)")


@rule("LWS006", E, "with a DisaggregatedSet the router selects its engines by label",
      "kubernetes-sigs/lws@v0.10.0:site/content/en/docs/concepts/disaggregatedset/_index.md "
      "(child LeaderWorkerSets are <set>-<slice>-<revision>-<role>, the revision changes on "
      "every rollout: select by label, never by name)")
def _ds_router(ctx: Context):
    cfg = _lws(ctx)
    spec = ctx.spec.spec
    if cfg is None or not cfg.disaggregatedSet or rendered_router(spec) != "deployment":
        return
    connector = next((r.kv_transfer.connector for _, r in ctx.role_items()
                      if r.mode == "prefill" and r.kv_transfer is not None), "")
    ports = {r.serving.port for _, r in ctx.role_items() if r.mode in ("prefill", "decode")}
    if not spec.router.discovery:
        yield Hit(("spec", "router", "discovery"),
                  "router.discovery is false: the router would dial pods by name, and the "
                  "DisaggregatedSet's pod names change with every rollout",
                  "set router.discovery: true")
    elif not discovery_supported(spec.engine.name, connector):
        yield Hit(("spec", "router", "kind"),
                  f"vllm-router with the {connector} connector reads a static list of pod URLs; "
                  "the DisaggregatedSet's pod names change with every rollout",
                  "use the NIXL connector, router kind inference-gateway, or separate "
                  "LeaderWorkerSets")
    elif len(ports) > 1:
        yield Hit(("spec", "roles"),
                  f"prefill and decode serve on different ports ({sorted(ports)}); the router "
                  "discovers one port, so it would dial pods by name",
                  "give the roles one serving.port")


@rule("LWS007", E, "DisaggregatedSet child names fit Kubernetes limits",
      "kubernetes-sigs/lws@v0.10.0:pkg/utils/disaggregatedset/utils.go (<set>-<slice>-<8-char "
      "revision>-<role>, Service <lws>-prv), "
      "kubernetes-sigs/lws@v0.10.0:pkg/utils/pod/pod_utils.go (pods <lws>-<group>-<index>); "
      "Kubernetes: hostnames <= 63, controller names + 11 <= 63; an autoscaled role's highest "
      "group is maxReplicas - 1 (docs/spec.md §6.2)")
def _ds_names(ctx: Context):
    cfg = _lws(ctx)
    if cfg is None or not cfg.disaggregatedSet:
        return
    base = ctx.spec.metadata.name
    for i, r in ctx.role_items():
        role = ctx.spec.spec.roles[i]
        child = lws.ds_child_name(base, role.name)
        controller = f"{child}-{highest_group(ctx, i, r)}"
        pod = f"{controller}-{len(r.layout.pods) - 1}"
        for what, name, limit in (("pod", pod, MAX_LABEL),
                                  ("controller", controller, MAX_CONTROLLER),
                                  ("Service", child + lws.DS_PRIVATE_SERVICE_SUFFIX, MAX_LABEL)):
            if len(name) > limit:
                yield Hit(("metadata", "name"),
                          f"DisaggregatedSet {what} name {name!r} of role {role.name!r} (x: "
                          f"the revision hash) is {len(name)} characters; the limit is {limit}",
                          f"shorten metadata.name or the role name by {len(name) - limit}")
                break
