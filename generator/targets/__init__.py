"""Targets: what a deployment plan becomes on a platform, behind one small interface.

A target is a module-level object with a ``name``, :meth:`Target.findings` (what of the
deployment the platform cannot express, as findings), :meth:`Target.address_form` (what the
address model, generator/manifests/addresses.py, reads of its rendering) and
:meth:`Target.render` (the plan as
``{relative path: text}``; templates only substitute and loop, :mod:`.templates`). The one
writer (:mod:`generator.emit`) writes what ``render`` returns. ``spec.target.name`` (or ``gen
render --target``) chooses one:

* ``kubernetes`` (the default: LeaderWorkerSets, StatefulSets and a kustomize base,
  :mod:`.kubernetes`);
* ``kserve`` (an LLMInferenceService on KServe's vLLM presets, :mod:`.kserve`), ``rbg`` (an
  SGLang RoleBasedGroup, :mod:`.rbg`), ``dynamo`` (an NVIDIA DynamoGraphDeployment,
  :mod:`.dynamo`), ``aibrix`` (an AIBrix StormService, :mod:`.aibrix`): each keeps what its
  controller injects (rank flags, environment, ports: generator/facts/controllers.py, read from
  the controller's tagged source) out of what moegen renders, so nothing is derived twice.

:mod:`.common` holds what the platform targets share.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..deployment import Deployment
    from ..errors import Finding
    from ..manifests.addresses import AddressForm
    from ..manifests.plan import DeploymentPlan


class Target(Protocol):
    """One output platform."""

    #: ``spec.target`` / ``gen render --target`` value.
    name: str

    def findings(self, deployment: Deployment) -> list[Finding]:
        """What of ``deployment`` this platform cannot express (errors), or renders differently
        (warnings); empty when it expresses all of it."""
        ...

    def address_form(self, deployment: Deployment) -> AddressForm:
        """How this platform renders what the address model reads (which connections its
        controller makes instead of moegen's, how the engine's arguments reach it):
        generator/manifests/addresses.py."""
        ...

    def render(self, plan: DeploymentPlan, deployment: Deployment) -> dict[str, str]:
        """Every output file of ``plan`` (POSIX relative path -> text), sorted by path;
        ``deployment`` is the model the plan was built from (a checked one: ``findings`` found
        no error), for what a platform's object says beside the plan (the model source, the
        typed parallelism)."""
        ...


#: Target name -> module path (imported on first use: a policy check imports no templates).
TARGETS = {"kubernetes": "generator.targets.kubernetes",
           "kserve": "generator.targets.kserve",
           "rbg": "generator.targets.rbg",
           "dynamo": "generator.targets.dynamo",
           "aibrix": "generator.targets.aibrix"}
DEFAULT_TARGET = "kubernetes"


def target_for(name: str = DEFAULT_TARGET) -> Target:
    """The target called ``name``.

    Raises:
        KeyError: no such target (the spec's schema lists the names, so a checked spec never
            names one that does not exist).
    """
    from importlib import import_module
    return import_module(TARGETS[name]).TARGET
