"""moegen: declarative deployments of DeepSeek-class MoE models on Kubernetes.

The command is ``gen`` (:mod:`generator.cli`). The library API is the pipeline:
:func:`check` (load + every rule) and :func:`render` (plan + files of a spec that passed).
They are imported on first use, so that importing one module of the package stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__all__ = ["Checked", "check", "render"]

if TYPE_CHECKING:
    from .pipeline import Checked, check, render


def __getattr__(name: str):
    if name in __all__:
        from . import pipeline
        return getattr(pipeline, name)
    raise AttributeError(f"module 'generator' has no attribute {name!r}")
