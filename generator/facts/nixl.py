"""The NIXL inside an engine image, and whether it has the fix of NIXL's UCX restart race
(``data/nixl.json``, written by ``tools/extract_nixl.py``; the restart model's NIXL rows,
generator/facts/restarts.py, hold only where it is missing).

What moegen reads, in order: a Dynamo runtime image's NIXL (the maintainers' pins table per
release, ``data/images.json`` via tools/extract_images.py); else the NIXL release the engine's
connector requires at start (vLLM 0.33.0 refuses NIXL < 1.5.0: ``check_nixl_version`` in
vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_worker.py), which holds for the later
releases too; else nothing: the NIXL is unknown and the caller says what it assumed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from ..resources import package_text
from . import images
from .versions import parse_version


@cache
def _data() -> dict:
    return json.loads(package_text("facts", "data", "nixl.json"))


@dataclass(frozen=True)
class ImageNixl:
    """The NIXL an image runs, as far as moegen reads it.

    Attributes:
        release: the NIXL release (``at_least``: its lower bound), or None (unknown).
        at_least: ``release`` is the connector's floor, not the bundled release.
        fixed: the release (every release from the floor on) has the race's fix; None unknown.
        source: where ``release`` was read ("" when unknown).
    """

    release: str | None
    at_least: bool = False
    fixed: bool | None = None
    source: str = ""

    def describe(self) -> str:
        """``NIXL 1.3.2`` / ``NIXL >= 1.5.0`` / ``an unknown NIXL`` for a finding."""
        if self.release is None:
            return "an unknown NIXL"
        return f"NIXL {'>= ' if self.at_least else ''}{self.release}"


def fixed_in() -> str:
    """The first NIXL release the table holds with the fix (``1.5.0``)."""
    return min((r["release"] for r in _data()["releases"] if r["fixed"]), key=parse_version)


def fix() -> str:
    """The fix, cited: ``ai-dynamo/nixl PR#1987``."""
    return _data()["fix"]["pr"]


def _fixed(release: str, at_least: bool) -> bool | None:
    """Whether NIXL ``release`` (or every release from it on) has the fix; None when the table
    does not hold the release."""
    if at_least:
        return parse_version(release) >= parse_version(fixed_in())
    row = next((r for r in _data()["releases"] if r["release"] == release), None)
    return row["fixed"] if row is not None else None


def image_nixl(engine: str, version: str, image: str | None) -> ImageNixl:
    """The NIXL of ``image`` running ``engine`` at release ``version`` (the image's own
    release where its tag names one; see the module docstring); never raises."""
    if image:
        repo, tag = images.split(image)
        for row in images.rows():
            if row.get("nixl") and row["engine"] == engine and tag == row["tag"] \
                    and repo.lower() == images.split(row["repository"])[0].lower():
                return ImageNixl(row["nixl"], False, _fixed(row["nixl"], False), row["source"])
        # the release the image runs where its tag says (an image older than the spec's
        # engine.version runs its own connector: ENG002)
        version = images.read(image, engine).release or version
    v = parse_version(version)
    floors = [r for r in _data()["engineFloors"]
              if r["engine"] == engine and parse_version(r["release"]) <= v]
    if floors:
        last = max(floors, key=lambda r: parse_version(r["release"]))
        if last["nixlMin"]:
            return ImageNixl(last["nixlMin"], True, _fixed(last["nixlMin"], True),
                             last["source"])
    return ImageNixl(None)
