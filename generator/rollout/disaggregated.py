"""The DisaggregatedSet controller's rollout planner, step by step, as in
kubernetes-sigs/lws@v0.10.0:pkg/controllers/disaggregatedset/planner.go (``ComputeAllSteps``,
``ComputeNextStep`` and their helpers, the same names below): every role of the set moves from
its old revision to the new one together, new groups scaled up along
``ceil(i x target / steps)`` and old ones drained along ``old - floor(i x old / steps)``, each
step changing either the old or the new groups, within ``old + new <= target + maxSurge`` and
``new + old >= target - maxUnavailable`` per role, and no role's old revision drained to zero
while another's still serves unless every role can (``applyOrphanPrevention``).

A state is ``(old, new)``: per role, its groups of the old and of the new revision.
"""

from __future__ import annotations

import math

State = tuple[tuple[int, ...], tuple[int, ...]]


def _batch(surge: int, unavailable: int) -> int:
    return surge if surge > 0 else max(1, unavailable)


def _total_steps(initial: list[int], target: list[int], cfg: list[tuple[int, int]]) -> int:
    return max((-(-max(a, b, 0) // _batch(*c)) for a, b, c in zip(initial, target, cfg)),
               default=0)


def _next_new(target: list[int], current: list[int], steps: int) -> list[int]:
    if steps == 0:
        return list(target)
    idx = min([steps] + [steps if t == 0 else int(c * steps / t)
                         for c, t in zip(current, target)])
    nxt = idx + 1
    return [max(min(math.ceil(nxt * t / steps), t), c) for t, c in zip(target, current)]


def _next_old(initial: list[int], current: list[int], steps: int) -> list[int]:
    if steps == 0:
        return [0] * len(initial)
    idx = max([0] + [0 if s == 0 else int((s - c) * steps / s)
                     for s, c in zip(initial, current) if s != 0])
    nxt = idx + 1
    return [min(max(0, s - math.floor(nxt * s / steps)), c) for s, c in zip(initial, current)]


def _can_drain_all(new: list[int], initial: list[int], target: list[int],
                   cfg: list[tuple[int, int]]) -> bool:
    return all(not (i >= t) or n >= t - c[1] for n, i, t, c in zip(new, initial, target, cfg))


def _orphan_prevention(nxt_old: list[int], new: list[int], initial: list[int],
                       target: list[int], cfg: list[tuple[int, int]]) -> None:
    live = [k for k, i in enumerate(initial) if i != 0]
    to_zero = [k for k in live if nxt_old[k] == 0]
    if not to_zero or len(to_zero) == len(live):
        return
    if _can_drain_all(new, initial, target, cfg):
        for k in range(len(nxt_old)):
            nxt_old[k] = 0
        return
    for k in to_zero:
        nxt_old[k] = 1


def next_step(initial: list[int], old: list[int], new: list[int], target: list[int],
              cfg: list[tuple[int, int]]) -> State | None:
    """The planner's next state from ``(old, new)``, or None when the rollout is done
    (``cfg``: per role ``(maxSurge, maxUnavailable)``)."""
    if all(o == 0 and n >= t for o, n, t in zip(old, new, target)):
        return None
    steps = _total_steps(initial, target, cfg)
    if steps == 0:
        return None
    expected = [min(i, o) for i, o in zip(initial, old)]
    if any(o > e for o, e in zip(old, expected)):
        return tuple(expected), tuple(new)
    if all(n >= t for n, t in zip(new, target)):
        return tuple([0] * len(initial)), tuple(new)
    nxt_new = _next_new(target, new, steps)
    min_old = [max(0, t - c[1] - n) if i >= t else 0
               for i, t, c, n in zip(initial, target, cfg, new)]
    if any(x > n for x, n in zip(nxt_new, new)) and all(
            t == 0 or o + x <= t + c[0] for o, x, t, c in zip(old, nxt_new, target, cfg)):
        return tuple(old), tuple(nxt_new)
    drained = [max(x, m) for x, m in zip(_next_old(initial, old, steps), min_old)]
    _orphan_prevention(drained, new, initial, target, cfg)
    if any(d < o for d, o in zip(drained, old)):
        return tuple(drained), tuple(new)
    forced = []
    for o, x, t, c, i in zip(old, nxt_new, target, cfg, initial):
        d = max(0, min(o, t + c[0] - x))
        if i >= t:
            d = max(d, max(0, t - c[1] - x))
        forced.append(d)
    if any(d < o for d, o in zip(forced, old)):
        _orphan_prevention(forced, nxt_new, initial, target, cfg)
        return tuple(forced), tuple(nxt_new)
    return None


def all_steps(initial: list[int], target: list[int], cfg: list[tuple[int, int]]) -> list[State]:
    """Every state of the rollout from ``(initial, 0)`` to ``(0, target)``, as
    ``ComputeAllSteps`` simulates it (at most ``2 x max replicas + 10`` steps)."""
    old, new = list(initial), [0] * len(initial)
    out: list[State] = [(tuple(old), tuple(new))]
    for _ in range(max(initial + target + [0]) * 2 + 10):
        step = next_step(initial, old, new, target, cfg)
        if step is None:
            break
        out.append(step)
        old, new = list(step[0]), list(step[1])
    return out
