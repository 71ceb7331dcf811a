"""Rules about the engine pods: memory limits and the image."""

from __future__ import annotations

import re

from ..pods import shm_gib
from .registry import Context, E, Hit, W, role_path, rule


@rule("POD001", E, "the pod memory limit holds /dev/shm",
      "Kubernetes charges memory-backed emptyDir to the container limit; production-stack#276")
def _shm_limit(ctx: Context):
    for i, _ in ctx.role_items():
        role = ctx.spec.spec.roles[i]
        if role.pod is None or role.pod.memory is None:
            continue
        limit_gib = _quantity_gib(role.pod.memory)
        shm = shm_gib(role)
        if limit_gib <= shm:
            yield Hit(role_path(i, "pod", "memory"),
                      f"memory limit {role.pod.memory} ({limit_gib:.1f} GiB) does not exceed "
                      f"/dev/shm {shm} GiB, which is charged to it",
                      f"raise pod.memory well above {shm}Gi, or lower pod.shmSizeGiB")


def _quantity_gib(q: str) -> float:
    """A Kubernetes memory quantity (``512Gi``, ``1Ti``, bytes) in GiB."""
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    for suffix, mult in units.items():
        if q.endswith(suffix):
            return float(q[: -len(suffix)]) * mult / 2**30
    return float(q) / 2**30


#: The release in an image tag (``v0.33.0``, ``0.5.23-cu129``).
_TAG_VERSION = re.compile(r"v?(\d+\.\d+\.\d+)")


@rule("ENG002", W, "the image tag names the engine version the flags are rendered for",
      "vllm-ascend#9144 (flags rendered for one release, image of another; "
      "docs/field-failures.md #23)")
def _image_version(ctx: Context):
    eng = ctx.spec.spec.engine
    repo = eng.image.rsplit(":", 1)[0].lower() if ":" in eng.image.rsplit("/", 1)[-1] else eng.image.lower()
    other = {"vllm": "sglang", "sglang": "vllm"}[eng.name]
    if other in repo and eng.name not in repo:
        yield Hit(("spec", "engine", "image"),
                  f"image {eng.image!r} looks like a {other} image but engine.name is {eng.name}",
                  f"use a {eng.name} image, or set engine.name: {other}")
        return
    tag = eng.image.rsplit("/", 1)[-1].partition(":")[2].split("@")[0]
    if tag in ("", "latest", "nightly", "main") and "@" not in eng.image:
        yield Hit(("spec", "engine", "image"),
                  f"image {eng.image!r} has no pinned tag: the flags are rendered for "
                  f"{eng.name} {eng.version}, the image may be another release",
                  f"pin the tag of {eng.version} (or a digest)")
        return
    m = _TAG_VERSION.match(tag)
    if m and m.group(1) != eng.version.split("+")[0][: len(m.group(1))]:
        yield Hit(("spec", "engine", "image"),
                  f"image tag {tag!r} suggests {eng.name} {m.group(1)}, but the flags are rendered "
                  f"for engine.version {eng.version}",
                  "make engine.version match the image")
