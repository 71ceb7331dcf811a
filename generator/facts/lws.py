"""LeaderWorkerSet releases and the features moegen renders with them (``spec.platform.lws``,
docs/spec.md §6.2).

Each feature names the first LWS release that has it and the upstream source that says so
(kubernetes-sigs/lws: its Go types, site docs, release issues and pull requests). moegen knows
the release lines in :data:`KNOWN_LINES`; a patch release of a known line has the line's API
(LWS cuts patch releases from its ``release-X.Y`` branch with fixes only: .github/ISSUE_TEMPLATE/
new-release.md). A version outside them is refused (rule LWS001) rather than guessed.

Without ``platform.lws`` moegen renders what it always did (it then assumes a release with
everything it renders: startupPolicy, maxSurge, exclusive placement, >= v0.3.0).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Release lines (major, minor) whose API moegen has checked. Before v0.3.0 the LeaderWorkerSet
#: had neither ``startupPolicy`` nor ``rolloutStrategy.rollingUpdateConfiguration.maxSurge``,
#: both of which moegen renders (kubernetes-sigs/lws#116, the v0.3.0 release requirements:
#: "RollingUpdate with MaxSurge support #3", "Add a new start policy API #135").
KNOWN_LINES: tuple[tuple[int, int], ...] = (
    (0, 3), (0, 4), (0, 5), (0, 6), (0, 7), (0, 8), (0, 9), (0, 10))
OLDEST = "0.3.0"
NEWEST = "0.10.0"
VERSION_PATTERN = r"^v?[0-9]+\.[0-9]+\.[0-9]+$"


@dataclass(frozen=True)
class Feature:
    """A LeaderWorkerSet feature: what it is, the first release with it, the source."""

    what: str
    since: tuple[int, int, int]
    source: str


#: Per-feature first release (the table of docs/spec.md §6.2).
FEATURES: dict[str, Feature] = {
    "startupPolicy": Feature(
        "spec.startupPolicy (LeaderCreated | LeaderReady)", (0, 3, 0),
        "kubernetes-sigs/lws#116 (v0.3.0 requirements: start policy API #135), "
        "kubernetes-sigs/lws#150; api/leaderworkerset/v1/leaderworkerset_types.go "
        "(+kubebuilder:validation:Enum={LeaderCreated,LeaderReady})"),
    "maxSurge": Feature(
        "spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge", (0, 3, 0),
        "kubernetes-sigs/lws#116 (v0.3.0 requirements: MaxSurge support #3), "
        "kubernetes-sigs/lws#98"),
    "subGroupPolicy": Feature(
        "spec.leaderWorkerTemplate.subGroupPolicy.subGroupSize and the "
        "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology annotation", (0, 3, 0),
        "kubernetes-sigs/lws#116 (v0.3.0 requirements: subgroup support #115), "
        "keps/115-Subgroup-support"),
    "exclusiveTopology": Feature(
        "the leaderworkerset.sigs.k8s.io/exclusive-topology annotation (pod affinity on the "
        "group-key label)", (0, 3, 0),
        "kubernetes-sigs/lws#67 (exclusive placement documented in March 2024, before "
        "v0.3.0); api/leaderworkerset/v1/leaderworkerset_types.go ExclusiveKeyAnnotationKey"),
    "volcanoGang": Feature(
        "gang scheduling by the controller (Configuration gangSchedulingManagement."
        "schedulerProvider: volcano, a PodGroup per group)", (0, 7, 0),
        "keps/407-gang-scheduling; kubernetes-sigs/lws#630 (v0.7.0 installed with "
        "gangSchedulingManagement.schedulerProvider=volcano)"),
    "volumeClaimTemplates": Feature(
        "spec.leaderWorkerTemplate.volumeClaimTemplates", (0, 8, 0),
        "keps/622-volume-claim-templates; kubernetes-sigs/lws#633 (opened 2025-08-28, after "
        "v0.7.0 shipped: lws#630), kubernetes-sigs/lws#738 (release v0.8.0)"),
    "recreateGroupAfterStartAnnotation": Feature(
        "RecreateGroupAfterStart behaviour through the annotation "
        "leaderworkerset.sigs.k8s.io/experimental-recreate-group-after-start", (0, 8, 0),
        "site/content/en/docs/concepts/leaderworkerset/failure-handling/_index.md "
        "(\"On version 0.8, this feature can be enabled via annotation\")"),
    "recreateGroupAfterStart": Feature(
        "spec.leaderWorkerTemplate.restartPolicy RecreateGroupAfterStart", (0, 9, 0),
        "site/content/en/docs/concepts/leaderworkerset/failure-handling/_index.md "
        "(\"On version 0.9+, this feature is enabled via the restartPolicy field\"); "
        "kubernetes-sigs/lws#744 (0.9.0 roadmap: graduate RecreateGroupAfterStart to API)"),
    "surgeWithoutUnavailable": Feature(
        "rollingUpdateConfiguration maxSurge > 0 with maxUnavailable 0 (the leader StatefulSet "
        "gets maxUnavailable = maxSurge + maxUnavailable; surge groups are kept until the "
        "rolled group is ready)", (0, 9, 0),
        "kubernetes-sigs/lws#776, kubernetes-sigs/lws PR#781 and PR#778 (commits d4d6b17, "
        "d275e0a: first tagged in v0.9.0); pkg/controllers/leaderworkerset_controller.go "
        "calculateRollingUpdateReplicas"),
    "disaggregatedSet": Feature(
        "DisaggregatedSet (disaggregatedset.x-k8s.io/v1: roles of LeaderWorkerSets)",
        (0, 9, 0),
        "site/content/en/docs/concepts/disaggregatedset/_index.md (\"bundled in LWS from "
        "v0.9.0\"); api/disaggregatedset/v1/disaggregatedset_types.go"),
    "disaggregatedSetSlices": Feature(
        "DisaggregatedSet spec.slices, spec.placementPolicy, roles[].scaling.mode External "
        "(DisaggregatedSetRoleScaler)", (0, 10, 0),
        "kubernetes-sigs/lws#1006 (\"all three fields plus the disaggregatedsetrolescalers "
        "CRD are in v0.10.0 and absent from v0.9.0\")"),
}

#: The RecreateGroupAfterStart annotation of LWS v0.8 (api/leaderworkerset/v1/
#: leaderworkerset_types.go RecreateGroupAfterStartAnnotationKey).
RECREATE_AFTER_START_ANNOTATION = "leaderworkerset.sigs.k8s.io/experimental-recreate-group-after-start"

#: The group restart policies (api/leaderworkerset/v1/leaderworkerset_types.go).
ON_POD_RESTART, AFTER_START = "RecreateGroupOnPodRestart", "RecreateGroupAfterStart"

#: What the controller does when a pod of a group restarts a container or is deleted, per release
#: (pkg/controllers/pod_controller.go handleRestartPolicy, read at each tag):
#:
#: * v0.3.0-v0.7.x, RecreateGroupOnPodRestart (the only recreating policy): it deletes the leader
#:   at once (foreground), so the whole group is re-created, pods still pulling their image
#:   included. A group whose pods start at different speeds (a large engine image, a node that
#:   pulls slowly) loops: the started pods time out waiting for their peers, restart, and take
#:   the pulling ones down with them (kubernetes-sigs/lws#726; 30 re-creations in 90 s without
#:   backoff, kubernetes-sigs/lws#1048). kubernetes-sigs/lws@v0.7.0:pkg/controllers/
#:   pod_controller.go:201-237.
#: * v0.8.x: the same, unless the LeaderWorkerSet carries :data:`RECREATE_AFTER_START_ANNOTATION`:
#:   then a restart while any pod of the group is Pending (or the group has fewer pods than its
#:   size: ``pendingPodsInGroup``) is left to the kubelet, and the group is re-created once every
#:   pod has started (kubernetes-sigs/lws PR#725; kubernetes-sigs/lws@v0.8.0:pkg/controllers/
#:   pod_controller.go:201-225, 296).
#: * v0.9.0 and later: ``restartPolicy: RecreateGroupAfterStart`` does that (the annotation still
#:   honoured: kubernetes-sigs/lws PR#757; kubernetes-sigs/lws@v0.10.0:pkg/controllers/
#:   pod_controller.go:204-226, 338-361).
#:
#: moegen's choice (:func:`restart_policy`): a group of one pod has no peer that could still be
#: pending, so the policies act alike and it keeps RecreateGroupOnPodRestart; a group of several
#: pods gets RecreateGroupAfterStart where the declared release has it (the field from v0.9, the
#: annotation on v0.8). Without ``platform.lws`` the release is unknown and an older CRD would
#: refuse the enum value, so it keeps RecreateGroupOnPodRestart (declare the release to get the
#: choice; rule RST001 warns on a declared release that has none). Caveat of AfterStart: a pod that stays
#: Pending (no capacity for a replacement) also holds off the re-creation of its group
#: (kubernetes-sigs/lws#1056); the survivors' engines then fail on the lost peer and the kubelet
#: restarts them until the pod is placed.


def restart_policy(version: str | None, explicit: str | None,
                   multi_pod: bool) -> tuple[str, dict[str, str]]:
    """(``leaderWorkerTemplate.restartPolicy``, LeaderWorkerSet annotations) of one role's
    LeaderWorkerSet: ``explicit`` (``platform.lws.restartPolicy``) when set, else the choice by
    release and group shape described above. ``version``: ``platform.lws.version`` (None: not
    declared). RecreateGroupAfterStart on v0.8 is the annotation over the default policy."""
    policy = explicit
    if policy is None:
        policy = AFTER_START if multi_pod and version is not None and known(version) and has(
            version, "recreateGroupAfterStartAnnotation") else ON_POD_RESTART
    if policy == ON_POD_RESTART:
        return ON_POD_RESTART, {}
    if has(version, "recreateGroupAfterStart"):
        return AFTER_START, {}
    return ON_POD_RESTART, {RECREATE_AFTER_START_ANNOTATION: "true"}


def parse(version: str) -> tuple[int, int, int] | None:
    """``"0.7.0"`` or ``"v0.7.0"`` -> ``(0, 7, 0)``; None if it is no release number."""
    if not re.match(VERSION_PATTERN, version):
        return None
    major, minor, patch = version.lstrip("v").split(".")
    return int(major), int(minor), int(patch)


def known(version: str) -> bool:
    """The version is a release of a line moegen knows (:data:`KNOWN_LINES`)."""
    v = parse(version)
    return v is not None and v[:2] in KNOWN_LINES


def has(version: str | None, feature: str) -> bool:
    """The release has ``feature`` (no version declared: moegen's defaults, every feature it
    renders without ``platform.lws``; an unknown version: False, LWS001 reports it)."""
    if version is None:
        return True
    v = parse(version)
    return v is not None and v[:2] in KNOWN_LINES and v >= FEATURES[feature].since


def since(feature: str) -> str:
    """The first release with ``feature``, as ``v0.9.0``."""
    return "v" + ".".join(map(str, FEATURES[feature].since))


#: DisaggregatedSet (kubernetes-sigs/lws api/disaggregatedset/v1/disaggregatedset_types.go,
#: pkg/utils/disaggregatedset/utils.go): child LeaderWorkerSets are named
#: ``<set>-<slice>-<revision>-<role>`` (v0.10; v0.9 without ``<slice>-``) with an 8-character
#: revision hash that changes on every rollout; the controller adds a headless Service
#: ``<lws>-prv`` per child. Pods carry the set's labels (name, role, revision, slice) on top of
#: the template's own, so Services and routers select pods by label, never by name.
DS_API = "disaggregatedset.x-k8s.io/v1"
DS_REVISION_CHARS = 8
DS_PRIVATE_SERVICE_SUFFIX = "-prv"
DS_MIN_ROLES, DS_MAX_ROLES = 2, 10
DS_NAME_LABEL = "disaggregatedset.x-k8s.io/name"
DS_ROLE_LABEL = "disaggregatedset.x-k8s.io/role"


def ds_child_name(base: str, role: str) -> str:
    """The longest name a child LeaderWorkerSet of role ``role`` gets (slice 0, a revision hash
    of :data:`DS_REVISION_CHARS` characters; ``x`` stands for the hash)."""
    return f"{base}-0-{'x' * DS_REVISION_CHARS}-{role}"
