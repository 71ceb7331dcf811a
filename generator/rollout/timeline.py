"""How a rollout unfolds over time: per role, how many instances of the old and of the new
revision serve, from the moment its controller starts until it is done.

Each controller as its source says (the bounds are what moegen renders; times are upper
bounds: a pod stops within ``stop_s`` = preStop + the engine's drain, and is ready within its
startup budget ``start_s``):

* LeaderWorkerSet (kubernetes-sigs/lws@v0.10.0:pkg/controllers/leaderworkerset_controller.go
  ``rollingUpdateParameters``, ``rollingUpdatePartition``, ``calculateRollingUpdateReplicas``):
  more replicas are created first (new revision), fewer are removed first; then groups are
  replaced from the highest index down, ``maxUnavailable + maxSurge`` at a time, each deleted
  and re-created in place (its pods stop, then start); with ``maxSurge`` the surge groups (new
  revision) start first and are deleted once every group is updated and ready.
* StatefulSet (Kubernetes apps/v1 RollingUpdate): one pod at a time, highest ordinal first,
  deleted then re-created.
* Deployment (Kubernetes apps/v1 RollingUpdate): ``maxSurge`` new pods start, then as many old
  ones are deleted, until all are new; capacity never drops below ``replicas - maxUnavailable``.
* DisaggregatedSet: its controller's planner (:mod:`.disaggregated`) moves every role of the set
  together; a scale-up step waits for the new groups' readiness, a drain step for the old
  groups to stop.

Argo CD applies sync waves in order and waits for each wave to be healthy (with the health
checks of docs/argocd.md); ``kubectl apply -k`` applies everything at once: roles that share a
wave roll together either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .disaggregated import all_steps


@dataclass(frozen=True)
class RolePlan:
    """What one role's rollout needs to know.

    Attributes:
        role, mode: the role (mode prefill, decode, unified, or "" for the router).
        controller: ``lws``, ``statefulset``, ``deployment`` or ``disaggregatedset``.
        old, new: instances before and after (0: the workload is new / removed).
        restarts: the rolled template changed (every instance is replaced).
        surge, unavailable: the rolling update bounds, instances.
        stop_s: deletion to gone (preStop + drain), s; start_s: creation to ready, s.
        wave: the Argo CD sync wave.
    """

    role: str
    mode: str
    controller: str
    old: int
    new: int
    restarts: bool
    surge: int
    unavailable: int
    stop_s: float
    start_s: float
    wave: int = 0


@dataclass(frozen=True)
class Segment:
    """From ``start`` to ``end`` (s), ``old`` instances of the old revision and ``new`` of the
    new one serve (an instance serves from ready until its deletion)."""

    start: float
    end: float
    old: int
    new: int

    @property
    def serving(self) -> int:
        return self.old + self.new


@dataclass
class Timeline:
    """One role's rollout: its segments from ``begin`` to ``end`` (before: ``plan.old`` old
    instances; after: ``plan.new`` new ones)."""

    plan: RolePlan
    begin: float
    end: float
    segments: list[Segment] = field(default_factory=list)

    def at(self, t: float) -> tuple[int, int]:
        """(old, new) serving at time ``t``."""
        if t < self.begin:
            return self.plan.old, 0
        for s in self.segments:
            if s.start <= t < s.end:
                return s.old, s.new
        return (0, self.plan.new) if self.plan.restarts else (self.plan.new, 0)

    @property
    def fewest(self) -> int:
        """The fewest instances serving at any time of the rollout."""
        return min([s.serving for s in self.segments] + [min(self.plan.old, self.plan.new)
                                                         if not self.segments else 10**9])

    def below(self, floor: int) -> float:
        """Seconds with fewer than ``floor`` instances serving."""
        return sum(s.end - s.start for s in self.segments if s.serving < floor)


class _Clock:
    """Accumulates segments: ``hold(duration)`` keeps the current counts for that long."""

    def __init__(self, t0: float, old: int, new: int) -> None:
        self.t, self.old, self.new = t0, old, new
        self.segments: list[Segment] = []

    def hold(self, duration: float) -> None:
        if duration > 0:
            self.segments.append(Segment(self.t, self.t + duration, self.old, self.new))
            self.t += duration


def role_timeline(p: RolePlan, t0: float) -> Timeline:
    """The rollout of one role (not a DisaggregatedSet's: :func:`set_timelines`) started at
    ``t0`` (module docstring)."""
    c = _Clock(t0, p.old, 0)
    if not p.restarts:
        if p.new > p.old:                       # scale up: the new instances start cold
            c.hold(p.start_s)
        c.old = p.new
        return Timeline(p, t0, c.t, c.segments)
    if p.old == 0:                              # a new workload
        c.hold(p.start_s)
        c.new = p.new
        return Timeline(p, t0, c.t, c.segments)
    if p.controller == "deployment":
        return _deployment(p, c, t0)
    keep = min(p.old, p.new)
    if p.new < p.old:                           # fewer replicas: the highest ones go first
        c.old = keep
    surge = min(p.surge, p.new) if p.controller == "lws" else 0
    extra = max(0, p.new - p.old)
    if surge or extra:                          # surge and added groups start first
        c.hold(p.start_s)
        c.new = surge + extra
    step = max(1, surge + (p.unavailable if p.controller == "lws" else 1))
    left = keep
    while left > 0:
        b = min(step, left)
        c.old -= b
        c.hold(p.stop_s + p.start_s)            # deleted, then re-created in place
        c.new += b
        left -= b
    c.new = p.new                               # surge groups deleted once all are updated
    return Timeline(p, t0, c.t, c.segments)


def _deployment(p: RolePlan, c: _Clock, t0: float) -> Timeline:
    """A Deployment: new pods start ``maxSurge`` at a time (old ones stay until they are
    ready), old ones are deleted ``maxUnavailable`` at a time beforehand when there is no
    surge."""
    surge, unavailable = max(0, p.surge), max(0, p.unavailable)
    left_old, made = p.old, 0
    while made < p.new:
        cut = min(unavailable, left_old) if surge == 0 else 0
        c.old -= cut
        left_old -= cut
        b = min(max(1, surge + cut), p.new - made)
        c.hold(p.start_s)
        c.new += b
        made += b
        gone = min(left_old, max(0, c.old + c.new - p.new))
        c.old -= gone
        left_old -= gone
    c.old = 0
    return Timeline(p, t0, c.t, c.segments)


def set_timelines(plans: list[RolePlan], t0: float) -> list[Timeline]:
    """The roles of one DisaggregatedSet rolled together by its controller's planner
    (:func:`.disaggregated.all_steps`): a step that adds new groups holds the slowest start,
    one that removes old groups the slowest stop."""
    start = max(p.start_s for p in plans)
    stop = max(p.stop_s for p in plans)
    if not any(p.restarts for p in plans):
        return [role_timeline(p, t0) for p in plans]
    steps = all_steps([p.old for p in plans], [p.new for p in plans],
                      [(p.surge, p.unavailable) for p in plans])
    t = t0
    segs: list[list[Segment]] = [[] for _ in plans]
    for (old_a, new_a), (old_b, new_b) in zip(steps, steps[1:]):
        grows = any(nb > na for na, nb in zip(new_a, new_b))
        # The step's removals take effect at once; its additions serve after their start.
        duration = start if grows else stop
        for i in range(len(plans)):
            segs[i].append(Segment(t, t + duration, old_b[i], new_a[i]))
        t += duration
    return [Timeline(p, t0, t, s) for p, s in zip(plans, segs)]


def boundaries(timelines: list[Timeline]) -> list[float]:
    """Every time at which some role's serving counts change, sorted."""
    out = {0.0}
    for tl in timelines:
        out.add(tl.begin)
        out.add(tl.end)
        for s in tl.segments:
            out.update((s.start, s.end))
    return sorted(out)
