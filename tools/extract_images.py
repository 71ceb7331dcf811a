"""Extract which engine release each serving image bundles into package data.

An image tag is the release of whoever publishes the image: ``vllm/vllm-openai:v0.26.0`` is vLLM
0.26.0, but ``nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.0`` is Dynamo 1.3.0 and
``ghcr.io/llm-d/llm-d-cuda:v0.8.0`` is llm-d 0.8.0. moegen judges a manifest at the engine release
its image runs (generator/facts/images.py), so this table maps image (repository + tag) -> engine
+ release, every row with the source it was read from, and writes
``generator/facts/data/images.json``. ``tests/test_data_drift.py`` re-runs the extraction when
the git mirrors are at hand and fails when the committed file drifts.

Sources (``--mirrors DIR``, default ``../.mirror`` beside the checkout, or $MOEGEN_MIRRORS;
``<owner>+<name>/repo`` git directories, read with ``git show``):

* Dynamo runtime images (``nvcr.io/nvidia/ai-dynamo/{vllm,sglang}-runtime:<release>``): the
  maintainers' table of backend pins per release (docs/fern/pages/reference/general/
  compatibility.mdx, "Backend engine pins per Dynamo release": SGLang, vLLM and the NIXL of each
  backend's image), read at the mirror's main (the release tags are not in the mirror; the fork
  wxsms/dynamo carries upstream's main). NOT main's pyproject.toml at the commit before its
  ``version`` moves past the release: the release branch is cut days before that bump, and
  main's engine pins move in between (1.2.0 pins vLLM 0.20.1 / SGLang 0.5.11 per the table and
  the pyproject.toml that declares 1.2.0 with them; main before the 1.3.0 bump had 0.21.0 /
  0.5.12.post1).
* KServe's LLMInferenceServiceConfig presets (``config/llmisvcconfig/*.yaml`` at each release tag
  v0.17.0 and later): the engine image every preset runs, so an LLMInferenceService that names no
  image is read as running it.
* llm-d images (``ghcr.io/llm-d/llm-d-cuda`` and its accelerator variants): llm-d builds vLLM from
  a commit (docker/common-versions ``VLLM_COMMIT_SHA``), not a release; the release it tracks is
  the one the maintainers' component table names (LLM_D below, each row citing it).
* The engines' own images (``vllm/vllm-openai``, ``lmsysorg/sglang`` and their mirrors): the tag
  is the release (ENGINE_IMAGES below); no row per tag.

Usage: python tools/extract_images.py [--mirrors DIR] [OUT_JSON]
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "generator" / "facts" / "data" / "images.json"

#: mirror directory -> the upstream repository cited.
MIRRORS = {"wxsms+dynamo": "ai-dynamo/dynamo", "kserve+kserve": "kserve/kserve"}

#: Dynamo releases read (each names the runtime images of both engines).
DYNAMO_RELEASES = ("0.9.0", "1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0")
#: ... and their patch releases (an image per release: the pins table has both).
DYNAMO_IMAGE_RELEASES = ("0.9.0", "0.9.1", "1.0.0", "1.0.1", "1.0.2", "1.1.0", "1.1.1", "1.2.0",
                         "1.2.1", "1.3.0", "1.3.1", "1.4.0")
DYNAMO_IMAGE = "nvcr.io/nvidia/ai-dynamo/{engine}-runtime"
#: KServe releases whose presets are read (LLMInferenceServiceConfig from v0.17.0 on).
KSERVE_RELEASES = ("v0.17.0", "v0.18.0", "v0.18.1", "v0.19.0", "v0.20.0")

#: llm-d images and the vLLM release the maintainers' component table of each llm-d release
#: names (llm-d builds vLLM from a commit: docker/common-versions VLLM_COMMIT_SHA).
#: Releases before the component table: the vLLM commit the image's Dockerfile builds (v0.3.x:
#: the v0.11.0 release commit) or the release docker/common-versions pins (v0.9.0).
LLM_D = (
    ("ghcr.io/llm-d/llm-d-cuda", "v0.3.0", "vllm", "0.11.0",
     "llm-d/llm-d@v0.3.0:docker/Dockerfile.cuda:388 (vLLM commit f71952c1, the v0.11.0 "
     "release; llm-d/llm-d#291)"),
    ("ghcr.io/llm-d/llm-d-cuda", "v0.3.1", "vllm", "0.11.0",
     "llm-d/llm-d@v0.3.1:docker/Dockerfile.cuda:286 (vLLM commit b8b302cd, the moved v0.11.0 "
     "tag; llm-d/llm-d#365)"),
    ("ghcr.io/llm-d/llm-d-gke", "v0.3.0", "vllm", "0.11.0",
     "llm-d/llm-d@v0.3.0:docker/Dockerfile.gke:195"),   # the wheel vllm-0.11.0+cu129
    ("ghcr.io/llm-d/llm-d-cuda", "v0.8.0", "vllm", "0.23.0",
     "llm-d/llm-d#1819 (Components v0.8.0: llm-d-cuda v0.8.0, vLLM v0.23.0, CUDA 13.0.2)"),
    ("ghcr.io/llm-d/llm-d-cuda", "v0.9.0", "vllm", "0.26.0",
     "llm-d/llm-d@1aecf03:docker/common-versions (VLLM_COMMIT_SHA 568afb3a, the v0.26.0 "
     "release: 'pin versions for release v0.9.0', llm-d/llm-d#2206)"),
    ("ghcr.io/llm-d/llm-d-xpu", "v0.9.0", "vllm", "0.26.0",
     "llm-d/llm-d@cc4fbfd:docker/common-versions:26"),   # vllm/vllm-openai-xpu:v0.26.0
)

#: Repositories whose tag is the engine release (``v0.33.0``, ``v0.5.6.post1-cu129``,
#: ``0.26.0-gpu-py312-...``), matched by the last path component so that a registry mirror of
#: the same image reads the same: engine, last component, source.
ENGINE_IMAGES = (
    ("vllm", "vllm-openai", "https://docs.vllm.ai/en/stable/deployment/docker.html "
     "(vllm/vllm-openai:v<release>)"),
    ("vllm", "vllm-openai-rocm", "https://docs.vllm.ai/en/stable/deployment/docker.html "
     "(vllm/vllm-openai-rocm:v<release>)"),
    ("vllm", "vllm", "https://github.com/aws/deep-learning-containers/blob/master/"
     "available_images.md (deep-learning-containers/vllm:<release>-gpu-...)"),
    ("sglang", "sglang", "https://docs.sglang.ai/get_started/install.html "
     "(lmsysorg/sglang:v<release>-cu129-amd64)"),
)


class Mirror:
    """One git mirror: files at a ref, cited ``owner/repo@ref:path:line``."""

    def __init__(self, mirrors: Path, name: str) -> None:
        self.repo = MIRRORS[name]
        self.git = mirrors / name / "repo"
        if not self.git.is_dir():
            raise FileNotFoundError(f"no git mirror {self.git}")

    def run(self, *args: str) -> str:
        return subprocess.run(["git", f"--git-dir={self.git}", *args], check=True,
                              capture_output=True, text=True).stdout

    def text(self, ref: str, path: str) -> str:
        return self.run("show", f"{ref}:{path}")

    def cite(self, ref: str, path: str, line: int) -> str:
        at = ref[:7] if re.fullmatch(r"[0-9a-f]{40}", ref) else ref
        return f"{self.repo}@{at}:{path}:{line}"


_VERSION_LINE = re.compile(r'^version = "([^"]+)"', re.M)


def dynamo_cuts(m: Mirror) -> dict[str, str]:
    """Dynamo release -> the commit of its branch cut (the parent of the first commit on
    main's first-parent history whose pyproject.toml ``version`` is past the release; an
    approximation: the branch is cut some days before that bump. tools/extract_wrappers.py)."""
    commits = m.run("log", "--format=%H", "--first-parent", "--reverse", "main", "--",
                    "pyproject.toml").split()
    cuts: dict[str, str] = {}
    previous = None
    for c in commits:
        found = _VERSION_LINE.search(m.text(c, "pyproject.toml"))
        version = found.group(1) if found else None
        if previous is not None and version != previous and previous not in cuts:
            cuts[previous] = m.run("rev-parse", f"{c}^").strip()
        previous = version
    return cuts


#: The maintainers' table of pins per Dynamo release (read at the mirror's main).
DYNAMO_TABLE = "docs/fern/pages/reference/general/compatibility.mdx"
#: ``| v1.2.0 | stable | 0.5.11 | 1.3.0rc14 | 0.20.1 | 1.0.1 / 0.10.1 / 0.10.1 | 1.20.0 |``:
#: release, type, SGLang, TensorRT-LLM, vLLM, NIXL (SGLang / TensorRT-LLM / vLLM image).
_PIN_ROW = re.compile(r"^\| v(\S+) \| (stable|patch) \| (\S+) \| \S+ \| (\S+) \| "
                      r"(\S+) / \S+ / (\S+) \|")


def dynamo_rows(m: Mirror) -> list[dict]:
    """One row per Dynamo release in DYNAMO_IMAGE_RELEASES and engine: the engine release and the
    NIXL release its runtime image bundles, cited at the table's line."""
    ref = m.run("rev-parse", "main").strip()
    pins: dict[str, tuple[int, dict[str, str], dict[str, str]]] = {}
    for n, line in enumerate(m.text(ref, DYNAMO_TABLE).splitlines(), 1):
        hit = _PIN_ROW.match(line)
        if hit:
            release, _, sgl, vllm, nixl_sgl, nixl_vllm = hit.groups()
            pins.setdefault(release, (n, {"sglang": sgl, "vllm": vllm},
                                      {"sglang": nixl_sgl, "vllm": nixl_vllm}))
    rows = []
    for release in DYNAMO_IMAGE_RELEASES:
        if release not in pins:
            raise LookupError(f"{m.cite(ref, DYNAMO_TABLE, 1)}: no row for Dynamo {release}")
        n, engines, nixl = pins[release]
        for engine in ("vllm", "sglang"):
            rows.append({"repository": DYNAMO_IMAGE.format(engine=engine), "tag": release,
                         "engine": engine, "release": engines[engine], "nixl": nixl[engine],
                         "source": m.cite(ref, DYNAMO_TABLE, n),
                         "via": f"Dynamo {release} pins {engine}=={engines[engine]} "
                                f"(NIXL {nixl[engine]})"})
    return rows


#: An llm-d engine image (not its router, sidecar, tokenizer or latency predictor).
_IMAGE_LINE = re.compile(r"image:\s*(\S+/llm-d(?:-(?:cuda|dev|rocm|xpu|cpu|hpu|aws|gke))?:\S+)")


def kserve_presets(m: Mirror) -> list[dict]:
    """The engine image of KServe's LLMInferenceServiceConfig presets at each release (every
    preset names the same one; the first line that names it is cited)."""
    out = []
    for tag in KSERVE_RELEASES:
        files = sorted(p for p in m.run("ls-tree", "--name-only", f"{tag}:config/llmisvcconfig")
                       .split() if p.endswith(".yaml"))
        seen: dict[str, str] = {}
        for name in files:
            path = f"config/llmisvcconfig/{name}"
            for n, line in enumerate(m.text(tag, path).splitlines(), 1):
                hit = _IMAGE_LINE.search(line)
                if hit:
                    seen.setdefault(hit.group(1), m.cite(tag, path, n))
        if len(seen) != 1:
            raise LookupError(f"kserve {tag}: presets name {sorted(seen)} (expected one image)")
        (image, source), = seen.items()
        out.append({"platform": "kserve", "release": tag, "image": image, "source": source})
    return out


def render(mirrors: Path) -> str:
    """The JSON text of the table (sorted, deterministic)."""
    rows = dynamo_rows(Mirror(mirrors, "wxsms+dynamo"))
    rows += [{"repository": r, "tag": t, "engine": e, "release": v, "source": s,
              "via": f"{r.rsplit('/', 1)[-1]} {t}: vLLM {v}"} for r, t, e, v, s in LLM_D]
    rows.sort(key=lambda r: (r["repository"], r["tag"]))
    data = {
        "about": "Image (repository + tag) -> the engine release it bundles, read by "
                 "tools/extract_images.py; every row names its source.",
        "images": rows,
        "presets": kserve_presets(Mirror(mirrors, "kserve+kserve")),
        "engineImages": [{"engine": e, "name": n, "source": s} for e, n, s in ENGINE_IMAGES],
    }
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def mirrors_dir() -> Path:
    """Where the git mirrors are ($MOEGEN_MIRRORS, else ``.mirror`` beside the checkout)."""
    env = os.environ.get("MOEGEN_MIRRORS")
    return Path(env) if env else ROOT.parent / ".mirror"


def cli(argv: list[str], default_out: Path, render_fn) -> int:
    """``[--mirrors DIR] [OUT_JSON]``: write ``render_fn(mirrors)`` (shared by the tools that
    read the git mirrors)."""
    mirrors = mirrors_dir()
    if "--mirrors" in argv:
        i = argv.index("--mirrors")
        mirrors = Path(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    out = Path(argv[0]) if argv else default_out
    out.write_text(render_fn(mirrors))
    print(f"wrote {out}")
    return 0


def main(argv: list[str]) -> int:
    return cli(argv, DEFAULT_OUT, render)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
