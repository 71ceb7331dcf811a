"""The rule catalogue's own contract: every rule's source can be opened by a user running
``gen rules``, names its upstream project AND release, and every rule has a failing example.

Sources (``unresolved``):

A source resolves when it names at least one of: a file of this repository that exists
(``docs/...``, ``generator/...``, ``schemas/...``), an upstream issue or pull request, an upstream
file at a release, or a URL. Paths outside the repository (the team's ``shared/`` folder,
``SPEC.md``/``BRIEF.md``) never resolve for a user.

Forms, checked on every source (``badly_formed``):

* An upstream file names its project and release in one of these ways:

  1. ``owner/repo@ref:path[:line[-line]]``, ``ref`` a tag or a commit:
     ``vllm-project/vllm@v0.33.0:vllm/config/parallel.py``,
     ``deepseek-ai/DeepEP@0b32c55:csrc/kernels/legacy/launch.cuh``;
  2. the project and its release in words before the path: ``vLLM 0.33 vllm/config/parallel.py``,
     ``SGLang 0.5.23 python/sglang/srt/server_args.py``, ``vllm-router 0.1.17
     py_src/vllm_router/router_args.py``, ``kubernetes-sigs/lws@v0.10.0 pkg/...``. The project
     named last before a path must carry the release (so ``vLLM 0.33 a.py; b.py`` covers both
     files, ``vLLM 0.33 a.py; SGLang c.py`` does not cover ``c.py``); a range or lower bound
     (``SGLang 0.5.6-0.5.23``, ``vLLM >= 0.28.0``) names a release too;
  3. the release right after the path (up to three words between), in parentheses or after
     ``at`` / ``@``: ``vllm/config/parallel.py (0.33.0)``, ``csrc/kernels/legacy/launch.cuh
     (0b32c55)``, ``config/crd/bases/x.yaml at 84436a9``.

  A line number (``path:123`` or ``path:120-130``) is one read at that release: for vLLM 0.33.0
  and SGLang 0.5.23, whose code is in the engines venv, ``test_cited_engine_files_exist`` opens
  every file cited at those releases (in rule sources, and in ``owner/repo@tag:path`` form in
  docs/ and generator/) and checks the file and the lines exist.

  A file is a path with a slash and an extension (``.py .go .rs .cuh .cu .cpp .hpp .h .json .md
  .yaml .yml .lua .toml``), or a bare code file name (``server_args.py``); paths of this
  repository (``docs/``, ``generator/``, ``schemas/``, ``tests/``, ``tools/``, ``templates/``)
  and files inside URLs are not upstream files.
* An issue or pull request is ``owner/repo#number`` (``owner/repo PR#number`` is accepted):
  ``sgl-project/sglang#7720``, ``vllm-project/vllm#32136``. A bare ``#123``, ``vllm#123`` or
  ``PR#123`` is refused: the reader cannot tell which repository it is in.
* Publications and documentation pages are URLs; facts that are moegen's own design decisions
  cite the doc of this repository that explains them (``docs/design.md``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from generator.checks import RULES
from tests.helpers import ROOT

REPO_PATH = re.compile(r"(?<![/\w.-])((?:docs|generator|schemas|tests|tools|templates)/[\w./-]*\w)")
URL = re.compile(r"https?://[^\s;,)]+")
#: owner/repo@ref:path[:line[-line]] (form 1).
PINNED_FILE = re.compile(r"(?<![\w.-])[A-Za-z0-9][\w.-]*/[\w.-]+@[\w.+-]+:[\w./+-]*[\w]"
                         r"(?::\d+(?:-\d+)?)?")
#: An issue or pull request of a named repository.
ISSUE = re.compile(r"(?<![\w.-])[A-Za-z0-9][\w.-]*/[\w.-]+(?:#| PR#)\d+")
ANY_NUMBER_REF = re.compile(r"[\w./-]*#\d+")
EXTENSIONS = r"(?:py|go|rs|cuh|cu|cpp|hpp|h|json|md|yaml|yml|lua|toml)"
UPSTREAM_FILE = re.compile(r"(?<![\w./-])(?:[\w.-]+/)+[\w.-]+\." + EXTENSIONS + r"(?![\w])"
                           r"|(?<![\w./-])[\w-]+\.(?:py|go|rs|cuh|cu|cpp|hpp)(?![\w])")
#: Projects named in words (case as written upstream) and owner/repo.
PROJECT_WORDS = ("vLLM", "vllm-router", "SGLang", "smg", "sglang-router", "DeepEP", "LWS",
                 "Mooncake", "NCCL", "NVSHMEM", "PyTorch", "KEDA", "Kueue", "Kubernetes",
                 "FlashInfer", "DeepGEMM", "NIXL", "MoRI", "huggingface_hub", "llm-d",
                 "Prometheus", "Gloo", "CNI", "Multus")
OWNER_REPO = r"(?:[a-z0-9][a-z0-9-]*|ROCm|NVIDIA|NVIDIA-NeMo|LMCache|inclusionAI)/[\w.-]+"
RELEASE = (r"v?\d+\.\d+(?:\.\d+|\.x)?(?:\.?post\d+|rc\d+|-(?:alpha|beta|rc)[.\d]*)?"
           r"(?:\s*-\s*v?\d+\.\d+(?:\.\d+|\.x)?)?")
COMMIT = r"(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}"
MENTION = re.compile(r"(?<![\w./-])(?:" + OWNER_REPO + "|" + "|".join(map(re.escape, PROJECT_WORDS))
                     + r")(?![\w/-])(?P<release>@[\w.+-]+|\s+(?:>=\s*|≥\s*)?(?:" + RELEASE
                     + r")(?![\w]))?")
LINE = re.compile(r":(\d+)(?:-(\d+))?")
TRAILING_RELEASE = re.compile(r"(?::\d+(?:-\d+)?)?(?:\s+[\w.:]+){0,3}?\s*(?:\(\s*|\s+at\s+|\s*@\s*)(?P<release>"
                              + RELEASE + "|" + COMMIT + r")(?![\w])")
PINNED_PARTS = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)@(?P<ref>[\w.+-]+):(?P<path>[\w./+-]*[\w])"
                          r"(?::(?P<first>\d+)(?:-(?P<last>\d+))?)?")


def _blank(text: str, pattern: re.Pattern) -> str:
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def citations(source: str) -> list[tuple[str, str | None, str | None, tuple[int, ...]]]:
    """Every upstream file ``source`` cites, as (path, project, release, lines): ``project`` is
    ``owner/repo`` or the project's name as written, ``release`` a tag, version or commit;
    both None when the source does not say (a form error)."""
    out = []
    for m in PINNED_PARTS.finditer(source):
        lines = tuple(int(x) for x in (m.group("first"), m.group("last")) if x)
        out.append((m.group("path"), m.group("repo"), m.group("ref"), lines))
    text = _blank(_blank(source, URL), PINNED_FILE)
    mentions = list(MENTION.finditer(_blank(_blank(text, UPSTREAM_FILE), ISSUE)))
    for f in UPSTREAM_FILE.finditer(text):
        path = f.group(0)
        if REPO_PATH.fullmatch(path) or path.startswith(("docs/", "generator/")):
            continue
        line = LINE.match(text, f.end())
        lines = tuple(int(x) for x in line.groups() if x) if line else ()
        before = [m for m in mentions if m.end() <= f.start()]
        project = before[-1].group(0).split("@")[0].split()[0] if before else None
        after = TRAILING_RELEASE.match(text, f.end())
        if after:
            out.append((path, project, after.group("release"), lines))
        elif before and before[-1].group("release"):
            release = before[-1].group("release").lstrip("@").replace(">=", "").replace("≥", "")
            out.append((path, project, release.strip(), lines))
        else:
            out.append((path, project, None, lines))
    return out


def badly_formed(source: str) -> list[str]:
    """Citations in ``source`` that do not name their project and release (the module's forms)."""
    problems = []
    text = _blank(_blank(source, URL), PINNED_FILE)
    issues = [(m.start(), m.end()) for m in ISSUE.finditer(text)]
    for ref in ANY_NUMBER_REF.finditer(text):
        if not any(s <= ref.end() - 1 < e for s, e in issues):
            problems.append(f"{ref.group(0)!r}: an issue is cited as owner/repo#number")
    for path, project, release, _ in citations(source):
        if release is None:
            problems.append(f"{path}: {project or 'no project'} without a release before it, "
                            "no (release) after it")
    return problems


def unresolved(source: str) -> list[str]:
    """Why ``source`` does not resolve or is not of an accepted form (empty when it is fine)."""
    problems = []
    if "shared/" in source or re.search(r"(?<![/\w])(SPEC|BRIEF)\.md", source):
        problems.append("cites a file outside the repository")
    text = _blank(_blank(source, URL), PINNED_FILE)
    repo_paths = REPO_PATH.findall(text)
    for path in repo_paths:
        if not (ROOT / path).exists():
            problems.append(f"{path} does not exist in the repository")
    upstream = [f for f in UPSTREAM_FILE.findall(text) if not REPO_PATH.fullmatch(f)]
    if not (repo_paths or ISSUE.search(text) or URL.search(source) or PINNED_FILE.search(source)
            or upstream):
        problems.append("names no repository file, upstream file, issue or URL")
    return problems + badly_formed(source)


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_source_resolves(rule):
    assert not unresolved(rule.source), (rule.code, rule.source, unresolved(rule.source))


@pytest.mark.parametrize("source", [
    "SPEC.md §2 (catalog ids)", "shared/research/field-failures.md #10", "moegen loader",
    "docs/no-such-file.md", "the engines do this",
    # files without a release, issues without their repository
    "vllm/config/parallel.py", "vLLM vllm/config/parallel.py: EP size = TP x DP",
    "SGLang python/sglang/srt/server_args.py", "deepseek-ai/DeepEP csrc/kernels/legacy/launch.cuh",
    "vLLM 0.33 vllm/config/parallel.py; SGLang python/sglang/srt/server_args.py",
    "vLLM 0.33 vllm/config/parallel.py; sglang#6017", "vllm#32136", "sglang PR#5014",
    "DeepEP#165 (see docs/spec.md)", "server_args.py (--context-length)",
])
def test_the_check_rejects_unopenable_sources(source):
    assert unresolved(source)


@pytest.mark.parametrize("source", [
    "vllm-project/vllm@v0.33.0:vllm/config/parallel.py", "vllm-project/vllm@v0.33.0:vllm/envs.py:714",
    "sgl-project/sglang#7720", "vllm-project/vllm#32136, kvcache-ai/Mooncake#1382",
    "aws-samples/aws-do-eks PR#50", "vllm/config/parallel.py (0.33.0)",
    "vLLM 0.33 vllm/config/parallel.py: enable_eplb requires --enable-expert-parallel",
    "SGLang 0.5.23 python/sglang/srt/arg_groups/moe_hook.py; token_dispatcher/deepep.py",
    "SGLang 0.5.6-0.5.23 python/sglang/srt/batch_overlap/single_batch_overlap.py",
    "vLLM >= 0.28.0 hashes it (vllm/distributed/kv_transfer/kv_connector/v1/nixl/metadata.py)",
    "deepseek-ai/DeepEP csrc/kernels/legacy/launch.cuh (0b32c55) SWITCH_RANKS",
    "kubernetes-sigs/lws@v0.10.0 pkg/utils/pod/pod_utils.go", "docs/spec.md §2",
    "kubernetes-sigs/gateway-api-inference-extension config/crd/bases/x.yaml at 84436a9",
    "vLLM 0.33.0 vllm/distributed/eplb/policy/default.py:130 asserts it",
    "https://keda.sh/docs/2.16/scalers/prometheus/ (serverAddress is required)",
])
def test_the_check_accepts_the_documented_forms(source):
    assert not unresolved(source), unresolved(source)


#: Codes whose failing examples are unit tests (loader, planner, conformance) rather than invalid
#: cases: test file -> codes it asserts on (each must appear there as a quoted string).
UNIT_TESTED = {"tests/test_load.py": None, "tests/test_rules.py": None, "tests/test_planner.py": None,
               "tests/test_preflight.py": None, "tests/test_evaluate.py": None,
               "tests/test_autoscaling.py": None, "tests/test_import.py": None,
               "tests/test_import_reference.py": None, "tests/test_calibration.py": None,
               "tests/test_families.py": None, "tests/test_inputs.py": None,
               "tests/test_waivers.py": None, "tests/test_addresses.py": None,
               "tests/test_images.py": None, "tests/test_ray_executor.py": None, "tests/test_diff.py": None,
               "tests/test_hygiene.py": None,
               "tests/test_kv_partition.py": None,
               "tests/test_hostile_inputs.py": None,
               "tests/test_engine_default_admission.py": None,
               "tests/test_model_unknown.py": None}


def _case_codes() -> set[str]:
    """Codes an invalid case (tests/invalid) or a field case (tests/field) expects."""
    codes = set()
    for case in [*(ROOT / "tests" / "invalid").glob("*/case.yaml"),
                 *(ROOT / "tests" / "field").glob("*/case.yaml")]:
        meta = yaml.safe_load(case.read_text())
        codes |= {e["code"] for e in meta.get("expect") or []}
        codes |= set(meta.get("warnings") or [])
    return codes


def test_every_rule_has_a_failing_example():
    """A code counts when an invalid or field case expects it, or a unit test asserts on it by
    name."""
    covered = _case_codes()
    unit = " ".join((ROOT / f).read_text() for f in UNIT_TESTED)
    covered |= {r.code for r in RULES if f'"{r.code}"' in unit}
    # SCH001 is the fallback for a pydantic error the generated schema does not catch: it cannot
    # fire while the schema is generated from the same models (test_cli.py schema tests).
    missing = sorted(r.code for r in RULES if r.code not in covered and r.code != "SCH001")
    assert missing == [], "rules without a failing example"


#: Where the engines venv keeps each project's package, and how a cited path maps into it.
ENGINE_RELEASES = {"vllm": ("0.33.0", "vllm-project/vllm"), "sglang": ("0.5.23", "sgl-project/sglang")}
ENGINE_WORDS = {"vLLM": "vllm", "vllm-project/vllm": "vllm", "SGLang": "sglang",
                "sgl-project/sglang": "sglang"}


def _engine_release(project: str | None, release: str | None) -> str | None:
    """'vllm' / 'sglang' when (project, release) names the release the engines venv holds."""
    engine = ENGINE_WORDS.get(project or "")
    if engine is None or release is None:
        return None
    want = ENGINE_RELEASES[engine][0]
    return engine if release.lstrip("v") in (want, want.rsplit(".", 1)[0]) else None


def _pinned_in(text: str) -> list[tuple[str, str, str, tuple[int, ...]]]:
    out = []
    for m in PINNED_PARTS.finditer(text):
        lines = tuple(int(x) for x in (m.group("first"), m.group("last")) if x)
        out.append((m.group("path"), m.group("repo"), m.group("ref"), lines))
    return out


def _engine_citations() -> list[tuple[str, str, str, tuple[int, ...]]]:
    """(where, engine, path, lines) of every citation of a file at the venv's engine releases."""
    found = []
    for rule in RULES:
        for path, project, release, lines in citations(rule.source):
            engine = _engine_release(project, release)
            if engine:
                found.append((f"rule {rule.code}", engine, path, lines))
    texts = sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "generator").rglob("*.py"))
    for f in texts:
        for path, project, release, lines in _pinned_in(f.read_text()):
            engine = _engine_release(project, release)
            if engine:
                found.append((str(f.relative_to(ROOT)), engine, path, lines))
    return found


def _package_files(site: Path, engine: str) -> dict[str, Path]:
    return {str(p.relative_to(site)): p for p in (site / engine).rglob("*.py")}


def test_cited_engine_files_exist():
    """Every file cited at vLLM 0.33.0 or SGLang 0.5.23 exists in that release (the engines venv
    holds both), and every cited line is inside the file. A path may be shortened to its tail
    when the release is named in words (``SGLang 0.5.23 ... arg_groups/moe_hook.py``); in
    ``owner/repo@tag:path`` form it is the repository path (SGLang's under ``python/``)."""
    from tests.conformance.runner import require_engines

    py = require_engines()
    [site] = (py.parent.parent / "lib").glob("python3*/site-packages")
    files = {e: _package_files(site, e) for e in ENGINE_RELEASES}
    cited = _engine_citations()
    assert len(cited) > 150, "the citations were not found"   # rules and docs cite ~200
    missing = []
    for where, engine, path, lines in cited:
        if not path.endswith(".py"):
            continue
        rel = path[len("python/"):] if path.startswith("python/") else path
        if rel in files[engine]:
            hits = [files[engine][rel]]
        else:
            hits = [p for k, p in files[engine].items() if k.endswith("/" + rel)]
        if not hits:
            missing.append(f"{where}: {engine} {ENGINE_RELEASES[engine][0]} has no {path}")
            continue
        length = max(len(h.read_text().splitlines()) for h in hits)
        if any(n > length for n in lines):
            missing.append(f"{where}: {path} has {length} lines, cited {lines}")
    assert missing == []
