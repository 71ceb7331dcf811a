"""What the command line adds where a manifest is silent (``gen validate``/``gen import``
``--gpu``, ``--engine-version``, ``--model-config``, ``--model``): a module of its own, so the command line
reads it without loading the importer."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Options:
    """What the command line adds where a manifest is silent: ``--gpu``, ``--engine-version``,
    ``--model-config`` (a path, relative to the current directory), ``--model`` (a catalog
    model id)."""

    gpu: str | None = None
    engine_version: str | None = None
    model_config: str | None = None
    model: str | None = None
