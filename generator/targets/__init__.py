"""Targets: what a deployment plan becomes on a platform, behind one small interface.

A target is a module-level object with a ``name``, :meth:`Target.findings` (what of the
deployment the platform cannot express, as findings) and :meth:`Target.render` (the plan as
``{relative path: text}``; templates only substitute and loop, :mod:`.templates`). The one
writer (:mod:`generator.emit`) writes what ``render`` returns. ``kubernetes`` (LeaderWorkerSets,
StatefulSets and a kustomize base: :mod:`.kubernetes`) is the default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..deployment import Deployment
    from ..errors import Finding
    from ..manifests.plan import DeploymentPlan


class Target(Protocol):
    """One output platform."""

    #: ``spec.target`` / ``gen render --target`` value.
    name: str

    def findings(self, deployment: Deployment) -> list[Finding]:
        """What of ``deployment`` this platform cannot express (errors), or renders differently
        (warnings); empty when it expresses all of it."""
        ...

    def render(self, plan: DeploymentPlan) -> dict[str, str]:
        """Every output file of ``plan`` (POSIX relative path -> text), sorted by path."""
        ...


#: Target name -> module path (imported on first use: a policy check imports no templates).
TARGETS = {"kubernetes": "generator.targets.kubernetes"}
DEFAULT_TARGET = "kubernetes"


def target_for(name: str = DEFAULT_TARGET) -> Target:
    """The target called ``name``.

    Raises:
        KeyError: no such target (the spec's schema lists the names, so a checked spec never
            names one that does not exist).
    """
    from importlib import import_module
    return import_module(TARGETS[name]).TARGET
