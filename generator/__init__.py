"""moegen: declarative deployments of DeepSeek-class MoE models on Kubernetes.

The command is ``gen`` (:mod:`generator.cli`). The library API is the pipeline:
:func:`check` (load + every rule) and :func:`render` (plan + files of a spec that passed).
"""

from .pipeline import Checked, check, render

__all__ = ["Checked", "check", "render"]
