"""The routing components' releases moegen knows, read from their own tagged sources.

``generator/engines/data/router-releases.json`` is written by ``tools/extract_routers.py``
(docs/routing.md "Releases"): per llm-d-router release (the endpoint picker and the routing
sidecar, formerly llm-d-inference-scheduler) the images, the registered plugin types with their
stability, deprecation and parameter fields, the EndpointPickerConfig group, the feature gates,
both programs' flags and the InferencePool CRD of the Gateway API Inference Extension it pins;
per vllm-router and smg release the router's options with their defaults.

``spec.router.version`` picks a release of the rendered kind (``COMPONENT``); unset, the newest.
An unknown release is refused with the list (rule RTR010), never guessed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from ..resources import package_text
from ..facts.versions import parse_version

#: Router kind -> the component whose releases it renders.
COMPONENT = {"inference-gateway": "llm-d-router", "vllm-router": "vllm-router", "smg": "smg"}


@cache
def _data() -> dict:
    return json.loads(package_text("engines", "data", "router-releases.json"))


def known(component: str) -> list[str]:
    """The releases of ``component`` (``llm-d-router`` | ``vllm-router`` | ``smg``), oldest
    first (``"0.10.0"``: without the tag's ``v``)."""
    return sorted(_data()[component], key=parse_version)


def normalise(version: str) -> str:
    """``"v0.10.0"`` -> ``"0.10.0"`` (tags carry a ``v``, releases in the data do not)."""
    return version[1:] if version[:1] in "vV" else version


def facts(component: str, version: str | None) -> dict:
    """The extracted facts of one release (the newest for ``None``).

    Raises:
        KeyError: the release is unknown (rule RTR010 refuses it before rendering).
    """
    return _data()[component][normalise(version) if version else known(component)[-1]]


def resolve(kind: str, version: str | None) -> str:
    """The release a router kind renders: ``version`` normalised, or the newest known."""
    return normalise(version) if version else known(COMPONENT[kind])[-1]


@dataclass(frozen=True)
class Plugin:
    """One registered plugin type of an endpoint-picker release.

    ``stability``: ``alpha`` | ``beta`` | ``stable`` (from v0.10.0; ``unversioned`` before);
    ``deprecated``: None, or ``{"since", "removal", "replacement"}`` (values may be None when
    the release marks the type deprecated without them); ``parameters``: JSON field -> Go type
    (a dict for a nested struct), ``{}`` for none, None when the extractor could not read them;
    ``source``: where the type is registered.
    """

    type: str
    stability: str
    deprecated: dict | None
    parameters: dict | None
    source: str


class PickerRelease:
    """An llm-d-router release as the inference-gateway renderer needs it."""

    def __init__(self, version: str):
        self.version = version
        self.facts = facts("llm-d-router", version)

    @property
    def tag(self) -> str:
        return "v" + self.version

    def image(self, which: str) -> str:
        """``epp`` or ``sidecar``: ``repository:tag`` (Makefile EPP_IMAGE / SIDECAR_IMAGE)."""
        img = self.facts["images"][which]
        return f"{img['repository']}:{img['tag']}"

    @property
    def config_api(self) -> str:
        return self.facts["config"]["apiVersion"]

    def plugin(self, name: str) -> Plugin | None:
        p = self.facts["plugins"].get(name)
        if p is None:
            return None
        return Plugin(name, p["stability"], p.get("deprecated"), p["parameters"], p["source"])

    def current(self, name: str) -> bool:
        """``name`` is registered and not deprecated in this release."""
        p = self.plugin(name)
        return p is not None and p.deprecated is None

    @property
    def feature_gates(self) -> list[str]:
        return list(self.facts["featureGates"])

    @property
    def strict_parameters(self) -> bool:
        """Plugin parameters decode with DisallowUnknownFields (llm-d-router#1134, v0.9.0)."""
        return bool(self.facts["strictParameters"])

    @property
    def experimental_flag(self) -> bool:
        """The picker refuses alpha plugins without ``--allow-experimental-plugins``."""
        return bool(self.facts["experimentalPluginsFlag"])

    def epp_flag(self, name: str) -> dict | None:
        return self.facts["eppFlags"].get(name)

    def refused(self, flag: str) -> str | None:
        """Where the picker's ``Validate`` refuses ``flag`` when it is set at all (the metric
        flags from GIE v1.4.0 / llm-d-router 0.7.0: "deprecated and cannot be used"; the picker
        exits at start), else None."""
        f = self.epp_flag(flag)
        return f.get("refused") if f else None

    @property
    def metrics_collector(self) -> dict:
        """``{"default": "legacy" | "datalayer", "gate", "source"}``: legacy reads the metric
        flags' names (vLLM's by default); the data layer's extractor picks an engine's metric
        names by :attr:`engine_label` (vLLM's for a pod without it)."""
        return self.facts["metricsCollector"]

    @property
    def engine_label(self) -> dict | None:
        """``{"key", "source"}``: the pod label that names a pod's engine to the metrics
        extractor (``inference.networking.k8s.io/engine-type``, ``llm-d.ai/engine-type`` from
        0.9.0), None where the release has no extractor."""
        return self.facts.get("engineLabel")

    def sidecar_flag(self, name: str) -> dict | None:
        return self.facts["sidecar"]["flags"].get(name)

    def sidecar_current(self, name: str) -> bool:
        f = self.sidecar_flag(name)
        return f is not None and "deprecated" not in f

    @property
    def kv_connectors(self) -> list[str]:
        return list(self.facts["sidecar"]["kvConnectors"])

    @property
    def pool_ports(self) -> dict:
        """InferencePool ``spec.targetPorts`` bounds of the pinned CRD ({minItems, maxItems,
        unique})."""
        return self.facts["inferencePool"]["inference.networking.k8s.io"]["targetPorts"]

    @property
    def metrics_selection(self) -> dict | None:
        """How the picker reads a metric family with several series (``selection``,
        ``source``)."""
        return self.facts.get("metricsScraper")


class RouterRelease:
    """A vllm-router or smg release: its options and their defaults."""

    def __init__(self, component: str, version: str):
        self.component, self.version = component, version
        self.facts = facts(component, version)

    def has(self, option: str) -> bool:
        return option in self.facts["flags"]

    def default(self, option: str):
        return self.facts["flags"][option]["default"]

    def source(self, option: str) -> str:
        return f"{self.facts['source']}:{self.facts['flags'][option]['line']}"
