"""tools/mine_known_bad.py: candidate rows for generator/facts/known_bad.py from an engine's
history (a clone with release tags) or from its released packages (unpacked trees)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT

_spec = importlib.util.spec_from_file_location("mine_known_bad",
                                               ROOT / "tools" / "mine_known_bad.py")
mine = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mine)

ATTN = "vllm/models/deepseek_v4/attention.py"


def _git(repo: Path, *args: str, date: str = "2026-06-10T12:00:00+00:00") -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org",
               GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def _commit(repo: Path, path: str, text: str, message: str, date: str) -> str:
    f = repo / path
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(text)
    _git(repo, "add", path)
    _git(repo, "commit", "-q", "-m", message, date=date)
    return _git(repo, "rev-parse", "HEAD")


def test_watched_paths() -> None:
    """The DeepSeek-class code is watched, the rest is not (SGLang's package is under python/)."""
    assert mine.watched("vllm", ATTN)
    assert mine.watched("vllm", "vllm/model_executor/models/deepseek_v2.py")
    assert mine.watched("vllm", "vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py")
    assert not mine.watched("vllm", "vllm/model_executor/models/llama.py")
    assert not mine.watched("vllm", "docs/models/deepseek.md")   # not .py, not the package
    assert mine.watched("sglang", "python/sglang/srt/speculative/eagle_worker_v2.py")
    assert mine.watched("sglang", "sglang/srt/layers/attention/nsa_backend.py")
    assert not mine.watched("sglang", "python/sglang/srt/models/qwen3.py")


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A repository with tags v0.32.0 and v0.33.0 and four commits between them: one fix of a
    watched file (kept), one fix of an unwatched file, one feature of a watched file and one
    merge-free fix after v0.33.0 (outside every supported pair)."""
    repo = tmp_path_factory.mktemp("vllm")
    _git(repo, "init", "-q", "-b", "main")
    _commit(repo, ATTN, "assert kv.startswith('fp8')\n", "DSv4 attention", "2026-05-01T00:00:00Z")
    _git(repo, "tag", "v0.32.0")
    shas = {
        "fix": _commit(repo, ATTN, "if kv == 'auto':\n    kv = 'fp8'\n",
                       "[Bugfix] DSv4: map --kv-cache-dtype auto to fp8 (#45091)",
                       "2026-06-10T08:00:00Z"),
        "docs": _commit(repo, "docs/deepseek.md", "x\n", "[Bugfix] fix the docs",
                        "2026-06-11T08:00:00Z"),
        "feature": _commit(repo, "vllm/model_executor/models/deepseek_v2.py", "y\n",
                           "Add DSv2 LoRA", "2026-06-12T08:00:00Z"),
    }
    _git(repo, "commit", "-q", "--amend", "-m", "Add DSv2 LoRA\n\nno fix here", date="2026-06-12T08:00:00Z")
    _git(repo, "tag", "v0.33.0")
    _commit(repo, ATTN, "z\n", "[Bugfix] later", "2026-07-01T00:00:00Z")
    return repo, shas


def test_git_mode_keeps_fix_commits_of_watched_files(clone) -> None:
    """Only the [Bugfix] commit touching the DSv4 attention between the tags is a candidate: its
    first release is 0.33.0 (the oldest supported tag containing it), its date the author date,
    its refs the #numbers of its message."""
    repo, shas = clone
    rows = mine.mine_git(repo, "vllm")
    assert rows == [("vllm", "0.33.0", "0.32.0", shas["fix"][:12], "2026-06-10", ATTN, "#45091",
                     "[Bugfix] DSv4: map --kv-cache-dtype auto to fp8 (#45091)")]


def test_releases_mode_and_deterministic_output(tmp_path: Path) -> None:
    """Between two unpacked releases: an added comment naming an issue, an added fix comment and
    a removed refusal are candidates; an unwatched file and unchanged files are not. Written
    twice, the TSV is byte-identical."""
    for version, text in (("0.32.0", "x = 1\nassert kv.startswith('fp8'), (\n"
                                     "    'DeepseekV4 only supports fp8 kv-cache')\n"),
                          ("0.33.0", "x = 1\n# see #47174\nif kv == 'auto':  # fixes a crash\n"
                                     "    kv = 'fp8'\n")):
        f = tmp_path / version / ATTN
        f.parent.mkdir(parents=True)
        f.write_text(text)
        other = tmp_path / version / "vllm/model_executor/models/llama.py"
        other.parent.mkdir(parents=True, exist_ok=True)
        other.write_text(f"# fix {version}\n")
    rows = mine.mine_releases(tmp_path, "vllm")
    assert sorted((r[3], r[6], r[7].split(":")[0]) for r in rows) == [
        (f"{ATTN}:2", "", "removed-check"),
        (f"{ATTN}:2", "#47174", "ref"),
        (f"{ATTN}:3", "", "comment"),
    ]
    assert {r[1:3] for r in rows} == {("0.33.0", "0.32.0")}
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    mine.write(rows, a)
    mine.write(list(reversed(rows)), b)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_text().splitlines()[0].split("\t") == list(mine.HEADER)


def test_review_reads_verdicts_first_then_classes(tmp_path: Path) -> None:
    """A hand-read verdict wins over a class; an Ascend path is rejected by the platform class;
    a candidate neither covers stays open."""
    rows = [("sglang", "0.5.4", "0.5.3", "sglang/srt/layers/attention/nsa_backend.py:225", "",
             "sglang/srt/layers/attention/nsa_backend.py", "", "removed-check: assert spec"),
            ("sglang", "0.5.9", "0.5.8", "sglang/srt/hardware_backend/npu/x.py:1", "",
             "sglang/srt/hardware_backend/npu/x.py", "", "comment: # fix npu"),
            ("vllm", "0.20.0", "0.19.1", "vllm/distributed/eplb/eplb_state.py:583", "",
             "vllm/distributed/eplb/eplb_state.py", "", "comment: # will hang")]
    candidates, read = tmp_path / "c.tsv", tmp_path / "read.tsv"
    mine.write(rows, candidates)
    read.write_text("engine\tfirst_release\tcommit\tverdict\treason\n"
                    "sglang\t0.5.4\tsglang/srt/layers/attention/nsa_backend.py:225\trow\tNSA x MTP\n")
    got = {r[2]: r[4:] for r in mine.review(candidates, read)}
    assert got == {
        "sglang/srt/layers/attention/nsa_backend.py:225": ("row", "read", "NSA x MTP"),
        "sglang/srt/hardware_backend/npu/x.py:1": ("rejected", "class:platform",
                                                   mine.CLASSES[0][2]),
        "vllm/distributed/eplb/eplb_state.py:583": ("open", "", ""),
    }
