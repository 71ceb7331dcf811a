"""Which engine release an image runs, read through the table of ``data/images.json``.

An image tag is the release of whoever publishes the image: ``vllm/vllm-openai:v0.26.0`` is
vLLM 0.26.0, ``nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.0`` is Dynamo 1.3.0 (which pins vLLM
0.25.1), ``ghcr.io/llm-d/llm-d-cuda:v0.8.0`` is llm-d 0.8.0 (vLLM 0.23.0), and
``registry.corp/ml/vllm-h20:v2.4.1`` is a release of someone's own numbering. The table
(written by ``tools/extract_images.py`` from the publishers' tagged sources, every row citing
its source) maps image repository + tag -> engine + release; the engines' own images (and their
registry mirrors, matched by the last path component) name the release in the tag. Anything
else is "unknown": moegen then says how to state it (``--engine-version``, or the annotation
:data:`ANNOTATION` on the object) and judges at a release it assumes, every release-dependent
finding a warning that names it (generator/importer/__init__.py ``check_imported``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache

from ..resources import package_text

#: The annotation that states the engine release a workload's image runs (on the workload
#: object or its pod template), for images whose tag moegen cannot read.
ANNOTATION = "moegen.dev/engine-version"

#: A release in an engine image's tag: ``v0.33.0``, ``0.26.0-gpu-py312-...``,
#: ``v0.5.6.post1-cu129-amd64`` -> ``0.5.6.post1``, ``v0.11.1rc1`` (a build flavour after ``-`` or
#: ``+`` is not part of it).
_TAG = re.compile(r"^v?(\d+\.\d+\.\d+(?:\.post\d+|\.\d+|rc\d+)?)(?:[-+].*)?$")
#: A custom Dynamo runtime build named after its engine: ``...-vllm0.33.0``, ``-sglang0.5.23``.
_DYNAMO_SUFFIX = r"-{engine}v?(\d+\.\d+\.\d+(?:\.post\d+)?)$"


@dataclass(frozen=True)
class ImageRelease:
    """What moegen reads from an image reference.

    Attributes:
        image: the reference as written.
        engine: ``vllm`` / ``sglang`` when the table says which engine the image runs.
        release: the engine release it bundles, or None (unknown).
        source: where that comes from (a table row's ``owner/repo@ref:path:line``, an issue,
            a documentation URL); "" when unknown.
        how: one line for a finding: how the release was read.
    """

    image: str
    engine: str | None
    release: str | None
    source: str = ""
    how: str = ""


@cache
def _data() -> dict:
    return json.loads(package_text("facts", "data", "images.json"))


def rows() -> list[dict]:
    """The table's image rows (repository, tag, engine, release, source; Dynamo's: nixl)."""
    return list(_data()["images"])


def split(image: str) -> tuple[str, str]:
    """``docker.io/vllm/vllm-openai:v0.26.0@sha256:..`` -> (``vllm/vllm-openai``, ``v0.26.0``):
    the repository without Docker Hub's implicit host and ``library/``, and the tag (``""``
    without one)."""
    ref = image.strip().split("@", 1)[0]
    repo, _, tag = ref.rpartition(":")
    if not repo or "/" in tag:
        repo, tag = ref, ""
    for prefix in ("docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        if repo.startswith(prefix):
            repo = repo[len(prefix):]
    return repo.removeprefix("library/"), tag


def _same_repo(a: str, b: str) -> bool:
    return split(a)[0].lower() == split(b)[0].lower()


def read(image: str, engine: str | None = None) -> ImageRelease:
    """The engine release ``image`` runs (``engine``: the engine its command runs, when known).

    Order: a table row (repository + tag); a custom Dynamo runtime build named ``-<engine><X>``;
    an engine's own image, whose tag is the release; else unknown (``release`` None).
    """
    repo, tag = split(image)
    for row in _data()["images"]:
        if _same_repo(repo, row["repository"]) and tag == row["tag"] \
                and engine in (None, row["engine"]):
            return ImageRelease(image, row["engine"], row["release"], row["source"],
                                f"{image} bundles {row['engine']} {row['release']} "
                                f"({row['source']})")
    name = repo.rsplit("/", 1)[-1].lower()
    if engine is not None and name == f"{engine}-runtime":
        m = re.search(_DYNAMO_SUFFIX.format(engine=engine), tag)
        if m:
            return ImageRelease(image, engine, m.group(1), "tools/extract_images.py",
                                f"{image}: a Dynamo runtime build named after {engine} "
                                f"{m.group(1)}")
    for row in _data()["engineImages"]:
        if name == row["name"] and engine in (None, row["engine"]):
            m = _TAG.match(tag)
            if m:
                return ImageRelease(image, row["engine"], m.group(1), row["source"],
                                    f"the tag of {image} names {row['engine']} {m.group(1)}")
            return ImageRelease(image, row["engine"], None, row["source"],
                                f"{image}: the tag {tag or '(none)'} names no release")
    return ImageRelease(image, None, None, "", f"{image} is not in moegen's image table")


def preset_image(platform: str, release: str | None = None) -> tuple[str, str] | None:
    """The engine image a platform's presets run (KServe's LLMInferenceServiceConfig) at
    ``release`` (None: the newest read) and its source, or None."""
    rows = [p for p in _data()["presets"] if p["platform"] == platform
            and (release is None or p["release"].removeprefix("v") == release.removeprefix("v"))]
    return (rows[-1]["image"], rows[-1]["source"]) if rows else None


def dynamo_release(image: str) -> str | None:
    """The Dynamo release of a Dynamo runtime image the table holds (``vllm-runtime:1.3.0`` ->
    ``1.3.0``), else None (its wrapper's options are then read at main: importer/argv.py)."""
    repo, tag = split(image)
    for row in _data()["images"]:
        if "/ai-dynamo/" in row["repository"] and _same_repo(repo, row["repository"]) \
                and tag == row["tag"]:
            return tag
    return None
