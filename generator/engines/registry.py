"""Engine dialects by name: one place that maps ``engine.name`` + ``engine.version`` to a
:class:`~generator.engines.base.Dialect`.

Supported ranges (docs/spec.md §2): vLLM 0.11.0 up to the 0.33.x series, SGLang 0.5.x; a version
inside a range uses the dialect of the greatest known release not above it, any other version is
refused (:class:`~generator.facts.versions.UnsupportedVersion`).
"""

from __future__ import annotations

from ..facts.versions import UnsupportedVersion
from . import sglang, vllm
from .base import Dialect

#: Engine name -> its dialect module (each has ``dialect(requested)``).
ENGINES = {"vllm": vllm, "sglang": sglang}
#: A release to suggest when a pinned version is not supported (the newest each dialect knows).
EXAMPLE_VERSION = {"vllm": "0.33.0", "sglang": "0.5.23"}
#: How people write the engine names.
LABELS = {"vllm": "vLLM", "sglang": "SGLang"}


def dialect_for(name: str, version: str) -> Dialect:
    """The dialect of engine ``name`` for the pinned ``version``.

    Raises:
        UnsupportedVersion: ``version`` is outside the engine's supported ranges (the message
            names the engine and the ranges; ``hint`` suggests a release).
    """
    try:
        return ENGINES[name].dialect(version)
    except UnsupportedVersion as exc:
        raise UnsupportedVersion(f"{LABELS[name]} {exc}",
                                 hint=f"pin a supported release, e.g. {EXAMPLE_VERSION[name]}") from None
