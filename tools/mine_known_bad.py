#!/usr/bin/env python3
"""Mine candidate rows for ``generator/facts/known_bad.py`` from the engines' own history.

A candidate is a change between two releases moegen supports that touches the code of a
DeepSeek-class feature (the model files of DeepSeek V2/V3/V3.2/V4 and Kimi, MLA and NSA attention
backends, DeepEP and the other all-to-all backends, EPLB, MTP/EAGLE speculative decoding, the NIXL
and Mooncake connectors, DP attention, the CPU/GPU platform code: :data:`WATCH`) and looks like a
fix. A candidate is NOT a row: a maintainer reads the code at the first release with the defect
and at the first without it, writes down the configuration that triggers it, and only then adds a
``KnownBad`` row (or records why the candidate is rejected: ``docs/known-bad.md``).

Two sources, one output shape:

``git``: a clone of the engine's repository with its release tags (``git clone
https://github.com/vllm-project/vllm``, ``.../sgl-project/sglang``)::

    python tools/mine_known_bad.py git --repo ../vllm --engine vllm --out bench/known_bad/git-vllm.tsv

walks ``git log v<a>..v<b>`` for each pair of consecutive supported releases (``generator/engines``
``known_versions()``), keeps the non-merge commits whose subject reads as a fix (:data:`FIX_SUBJECT`)
and that touch a watched file, and lists commit, author date, the first release tag containing it
(``git tag --contains``), the watched files touched and the issue/PR numbers its message links.

``releases``: the released packages themselves, when no clone is at hand (each release's wheel,
``pip download --no-deps --only-binary :all: vllm==V -d DIR``; unpack the watched files with
``unpack``)::

    python tools/mine_known_bad.py unpack --engine sglang --into /tmp/trees DIR/sglang-*.whl
    python tools/mine_known_bad.py releases --engine sglang --trees /tmp/trees \
        --out bench/known_bad/releases-sglang.tsv

diffs every watched file that both of two consecutive releases ship and keeps a changed line
that names an upstream issue or PR, a comment that reads as a fix (:data:`FIX_COMMENT`), or a
removed ``assert``/``raise`` that refused a configuration (:data:`REFUSAL`). Its "commit" column is the release pair, its date column
is empty (a wheel carries no commit dates).

Output: TSV, one candidate a line, sorted (engine, first release containing it, file, line/commit),
so a re-run over the same input is byte-identical. Nothing is fetched by this script.
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: Paths (relative to the package root: ``vllm/...``, ``sglang/...``; SGLang's repository keeps
#: the package under ``python/``) whose changes are mined: the DeepSeek-class features moegen
#: renders. A ``.py`` file matches when any pattern is found in its path.
WATCH: dict[str, re.Pattern[str]] = {
    "vllm": re.compile(
        r"^vllm/(?:.*(?:deepseek|kimi)"
        r"|.*(?:mla|deep_?ep|deepgemm|deep_gemm|all2all|eplb|mtp|eagle|nixl|mooncake|sparse_attn)"
        r"|platforms/(?:cpu|cuda|interface)\.py"
        r"|distributed/kv_transfer/"
        r"|distributed/device_communicators/(?:symm_mem|all_reduce_utils|cuda_communicator)\.py"
        r"|envs\.py$)"),
    "sglang": re.compile(
        r"^sglang/srt/(?:.*(?:deepseek|kimi)"
        r"|.*(?:mla|nsa|deep_?ep|deepgemm|deep_gemm|eplb|expert_location|mtp|nextn|eagle|"
        r"speculative/|nixl|mooncake|dp_attention|dsv4|deepseek)"
        r"|platforms/|disaggregation/)"),
}

#: A commit subject that reads as a fix (vLLM's ``[Bugfix]`` prefix, SGLang's ``fix:``/``Fix``).
FIX_SUBJECT = re.compile(
    r"\[bug ?fix\]|\[fix\]|\bfix(?:e[sd])?\b|\bhotfix\b|\bcrash|\bhang|\bdeadlock|\bregression"
    r"|\bsegfault|\billegal (?:memory|address)|\bnan\b|\bwrong\b|\bincorrect\b|\brevert\b",
    re.IGNORECASE)
#: An issue or PR number: ``#1234``, ``issues/1234``, ``pull/1234``.
REF = re.compile(r"(?:github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/|(?<![\w&])#)(\d{3,6})\b")
#: A comment line that reads as a fix or a workaround of an upstream defect.
FIX_COMMENT = re.compile(
    r"#.*\b(?:fix(?:es|ed)?|bug|workaround|WAR|hang|hangs|deadlocks?|crash(?:es)?|segfaults?|"
    r"illegal (?:memory|address)|regression)\b", re.IGNORECASE)
#: A removed check: an assertion or a raise (a refusal or a crash taken out) ...
CHECK = re.compile(r"^\s*(?:assert\b|raise\b)")
#: ... whose statement (its line and the three after it) names a configuration it refused.
REFUSAL = re.compile(r"\bsupport|\bonly\b|not implemented", re.IGNORECASE)

HEADER = ("engine", "first_release", "previous_release", "commit", "date", "files", "refs",
          "what")
REVIEW_HEADER = ("engine", "first_release", "commit", "what", "verdict", "how", "reason")


def releases(engine: str) -> list[str]:
    """The releases moegen supports for ``engine``, oldest first (its dialect tables)."""
    from generator.engines import sglang, vllm
    from generator.facts.versions import parse_version
    known = (vllm if engine == "vllm" else sglang).known_versions()
    return sorted(known, key=parse_version)


def watched(engine: str, path: str) -> bool:
    """``path`` (repository- or package-relative) is a watched ``.py`` file of ``engine``."""
    rel = path[len("python/"):] if engine == "sglang" and path.startswith("python/") else path
    return rel.endswith(".py") and WATCH[engine].search(rel) is not None


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def _first_tag(repo: Path, commit: str, order: list[str]) -> str:
    """The oldest supported release whose tag contains ``commit`` ("" when none does)."""
    tags = set(_git(repo, "tag", "--contains", commit).split())
    return next((v for v in order if f"v{v}" in tags), "")


def mine_git(repo: Path, engine: str) -> list[tuple[str, ...]]:
    """Candidate rows from the history of a clone at ``repo`` (see the module docstring): the
    pairs of consecutive supported releases whose ``v<release>`` tags the clone has.

    Raises:
        subprocess.CalledProcessError: ``repo`` is not a git repository.
    """
    tags = set(_git(repo, "tag", "--list", "v*").split())
    order = [v for v in releases(engine) if f"v{v}" in tags]
    rows: dict[str, tuple[str, ...]] = {}
    for prev, cur in zip(order, order[1:]):
        log = _git(repo, "log", "--no-merges", "--name-only", "--format=%x00%H%x1f%as%x1f%s%x1f%b%x1e",
                   f"v{prev}..v{cur}")
        for entry in log.split("\x00")[1:]:
            head, _, names = entry.partition("\x1e")
            commit, date, subject, body = head.split("\x1f", 3)
            files = sorted(f for f in names.split() if watched(engine, f))
            if commit in rows or not files or not FIX_SUBJECT.search(subject):
                continue
            refs = sorted({int(n) for n in REF.findall(subject + "\n" + body)})
            first = _first_tag(repo, commit, order) or cur
            rows[commit] = (engine, first, order[order.index(first) - 1] if first in order[1:]
                            else prev, commit[:12], date, " ".join(files),
                            " ".join(f"#{n}" for n in refs), subject.strip())
    return list(rows.values())


def unpack(engine: str, wheel: Path, into: Path) -> Path:
    """Extract the watched ``.py`` files of a release wheel into ``into/<version>/`` (the
    version read from the wheel's name, ``vllm-0.22.0-cp38-abi3-...whl``). Returns that
    directory."""
    version = wheel.name.split("-")[1]
    out = into / version
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if watched(engine, name):
                target = out / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(z.read(name))
    return out


def _line_candidates(old: list[str], new: list[str]) -> list[tuple[int, str, str]]:
    """(line in ``new``, kind, text) of the fix-like lines of the diff ``old`` -> ``new``."""
    out = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for j in range(j1, j2):
            line = new[j]
            if REF.search(line):
                out.append((j + 1, "ref", line.strip()))
            elif FIX_COMMENT.search(line):
                out.append((j + 1, "comment", line.strip()))
        kept = {n.strip() for n in new[j1:j2]}
        for i in range(i1, i2):
            statement = " ".join(s.strip() for s in old[i:i + 4])
            if CHECK.match(old[i]) and old[i].strip() not in kept and REFUSAL.search(statement):
                out.append((j1 + 1, "removed-check", statement))
    return out


def mine_releases(trees: Path, engine: str) -> list[tuple[str, ...]]:
    """Candidate rows from the unpacked release trees ``trees/<version>/`` (see ``unpack``).
    Releases without a tree are skipped (the pair spans them)."""
    order = [v for v in releases(engine) if (trees / v).is_dir()]
    rows = []
    for prev, cur in zip(order, order[1:]):
        a, b = trees / prev, trees / cur
        names = sorted(n for n in {p.relative_to(b).as_posix() for p in b.rglob("*.py")}
                       if watched(engine, n))
        for name in names:
            new = (b / name).read_text(encoding="utf-8", errors="replace").splitlines()
            old_path = a / name
            if not old_path.is_file():   # a new file fixes nothing of the release before it
                continue
            old = old_path.read_text(encoding="utf-8", errors="replace").splitlines()
            if old == new:
                continue
            for line, kind, text in _line_candidates(old, new):
                refs = sorted({int(n) for n in REF.findall(text)})
                rows.append((engine, cur, prev, f"{name}:{line}", "", name,
                             " ".join(f"#{n}" for n in refs), f"{kind}: {text[:160]}"))
    return rows


#: Triage classes of a candidate that no row can come from, each (name, pattern over the file
#: and the candidate text, reason). A candidate no class and no reading covers stays ``open``.
def _any(*alternatives: str) -> re.Pattern[str]:
    return re.compile("|".join(alternatives), re.IGNORECASE)


CLASSES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("platform", _any("npu", "ascend", "xpu", "hpu", "tpu", "pallas", "mlu", "musa",
                      r"platforms/cpu\.py", "risc-?v", "on CPU", "gfx1250"),
     "a platform moegen does not render (its GPUs: NVIDIA Ampere to Blackwell, AMD CDNA3/4)"),
    ("model", _any("deepseek_ocr", "deepseek_vl", "kimi_vl", "kimi_k25", "kimi_k3", "kimi_audio",
                   "qwen", "exaone", "step3", "inkling", "minimax", "mistral", "llama", "nemotron",
                   "dots", "glm", "gemma", "deepseek_v41", "DSV41", "mimo", "ernie", "hunyuan",
                   "longcat", "multimodal", "vision", "modalit", "video"),
     "a model moegen does not serve (families deepseek_v2, deepseek_v3 with kimi_k2, "
     "deepseek_v32, deepseek_v4)"),
    ("feature", _any("dflash", "dspark", "ngram", "frozen_kv", "multi_layer_eagle", "encode_server",
                     "encode_receiver", "encoder", "mamba", "hybrid", "ssm", "lora", "moriio",
                     "offload", "hicache", "mooncake/store", "mooncake_store", "pool_host",
                     "example_", "simple_cpu", "multi_connector", "kv_offload", r"\bDBO\b",
                     "ubatch", "two_batch", r"\bTBO\b", "UNIFIED_KV_FP8", "MASKED_GEMM_FAST_ACT",
                     "MEGA_MOE", "mega_moe", "MegaMoE", "deepep_v2", "nixl_ep", "NixlEP",
                     "flashinfer_nvlink", "checkpoint_(prepare|restore)", "fault.tolerance",
                     "elastic", "staging", "DSPARK", "topk > 1", "topk = 1",
                     "speculative_eagle_topk", "round-robin", "turboquant", "draft models",
                     "parallel drafting", "M-RoPE", r"V0\b", "VLLM_USE_V1", "use_v1", "sliding",
                     "return_logprob", "transformers_utils/configs/eagle", "eagle3",
                     "HND to NHD", "enable_permute", "block size post", "kv_buffer"),
     "a feature, kernel option or engine mode moegen does not render (see docs/known-bad.md)"),
    ("vllm-cp", _any(r"vllm/.*(\bDCP\b|dcp_|decode_context|\bPCP\b|pcp|context_parallel"
                     r"|cp_kv_cache)"),
     "vLLM context parallelism: moegen does not render it (rule LAY004; the flags are derived, "
     "ENG005)"),
    ("wording", _any(r"comment: .*\bfix(?:ed|es)?\b[- ](?:size|byte|layout|window|capacity|order|"
                     r"sleep|root|per model|schedule|to |region|stride|the trailing|where|count|"
                     r"point|extent|block|config|128|16-head|sequence|length|alignment|grid|"
                     r"\w+-width|address|slab)", r"comment: .*\bfixed\b(?! in| by| upstream)"),
     "not a defect: 'fixed' means constant here"),
)


def read_verdicts(path: Path) -> dict[tuple[str, str, str], tuple[str, str]]:
    """Hand-read verdicts: TSV ``engine, first_release, commit, verdict, reason`` (``commit`` as
    in the candidates file; ``verdict`` row / rejected / deferred). Missing file: none."""
    out: dict[tuple[str, str, str], tuple[str, str]] = {}
    if not path.is_file():
        return out
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        if line.strip():
            engine, first, commit, verdict, reason = line.split("\t")
            out[(engine, first, commit)] = (verdict, reason)
    return out


def review(candidates: Path, read: Path) -> list[tuple[str, ...]]:
    """Each candidate of ``candidates`` (a file this script wrote) with its verdict: a hand-read
    one from ``read`` (``read_verdicts``) first, else the first :data:`CLASSES` entry whose
    pattern matches its file or text (rejected), else ``open``. Rows: engine, first_release,
    commit, what, verdict, how (``read`` or ``class:NAME``), reason."""
    verdicts = read_verdicts(read)
    rows = []
    for line in candidates.read_text(encoding="utf-8").splitlines()[1:]:
        engine, first, _prev, commit, _date, files, _refs, what = line.split("\t")
        key = (engine, first, commit)
        if key in verdicts:
            verdict, reason = verdicts[key]
            rows.append((engine, first, commit, what, verdict, "read", reason))
            continue
        hit = next(((name, reason) for name, pat, reason in CLASSES
                    if pat.search(files + " " + what)), None)
        rows.append((engine, first, commit, what) + (("rejected", f"class:{hit[0]}", hit[1])
                                                     if hit else ("open", "", "")))
    return rows


def write(rows: list[tuple[str, ...]], out: Path | None) -> None:
    """Rows as TSV (header first), sorted by engine, release, files, commit/line."""
    from generator.facts.versions import parse_version

    def key(r: tuple[str, ...]) -> tuple:
        line = r[3].rsplit(":", 1)
        return (r[0], parse_version(r[1]), r[5], line[0],
                int(line[1]) if len(line) == 2 and line[1].isdigit() else 0, r[7])
    text = "\n".join("\t".join(c.replace("\t", " ") for c in row)
                     for row in [HEADER, *sorted(rows, key=key)]) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring). Returns the exit status."""
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("git", help="mine a clone's history between supported release tags")
    g.add_argument("--repo", type=Path, required=True)
    r = sub.add_parser("releases", help="mine unpacked release trees")
    r.add_argument("--trees", type=Path, required=True)
    v = sub.add_parser("review", help="verdicts for a candidates file (read.tsv, then CLASSES)")
    v.add_argument("candidates", type=Path)
    v.add_argument("--read", type=Path, required=True)
    v.add_argument("--out", type=Path, default=None)
    u = sub.add_parser("unpack", help="extract the watched files of release wheels")
    u.add_argument("--into", type=Path, required=True)
    u.add_argument("wheels", type=Path, nargs="+")
    for s in (g, r, u):
        s.add_argument("--engine", choices=sorted(WATCH), required=True)
    for s in (g, r):
        s.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if args.cmd == "review":
        rows = review(args.candidates, args.read)
        text = "\n".join("\t".join(r) for r in [REVIEW_HEADER, *rows]) + "\n"
        if args.out is None:
            sys.stdout.write(text)
        else:
            args.out.write_text(text, encoding="utf-8")
        counts: dict[str, int] = {}
        for r in rows:
            counts[r[4]] = counts.get(r[4], 0) + 1
        print(" ".join(f"{k}={counts[k]}" for k in sorted(counts)), file=sys.stderr)
        return 0
    if args.cmd == "unpack":
        for wheel in args.wheels:
            print(unpack(args.engine, wheel, args.into))
        return 0
    rows = (mine_git(args.repo, args.engine) if args.cmd == "git"
            else mine_releases(args.trees, args.engine))
    write(rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
