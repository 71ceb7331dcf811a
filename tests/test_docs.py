"""docs/ holds what users and maintainers read (spec, routing, Argo CD, platform facts, moegen's
design notes, the conformance tier): no copy of a research note, every page reachable from
README.md or AGENTS.md, and nothing in the repository citing a page that was removed.

Research notes (the team's ``shared/research/`` and its brief) are cited at their upstream
sources instead (tests/test_catalogue.py checks the forms); a doc here that repeats one of them
line for line is a copy.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.helpers import ROOT, shared

DOCS = sorted((ROOT / "docs").glob("*.md"))
#: The research notes that were once copied into docs/ (issue 22), and the team's brief.
REMOVED = ("anchors-k8s.md", "anchors-k8s-2.md", "anchors-planner.md", "brief.md",
           "field-failures.md", "engines.md")
#: A line of prose long enough that two documents sharing it share a sentence, not a phrase.
LONG = 60
#: More shared long lines than this and a doc is a copy (a doc may quote a log line or two).
SHARED_LINES_ALLOWED = 3


def _long_lines(text: str) -> set[str]:
    return {" ".join(line.split()) for line in text.splitlines() if len(line.strip()) >= LONG}


def test_docs_are_the_expected_pages():
    names = {d.name for d in DOCS}
    assert {"spec.md", "routing.md", "argocd.md", "platform-facts.md", "design.md",
            "conformance.md", "v4-kv.md"} <= names
    assert names.isdisjoint(REMOVED)


def test_no_doc_is_a_copy_of_a_research_note():
    research = sorted(shared("research").glob("*.md")) + [shared("BRIEF.md")]
    notes = {n.name: _long_lines(n.read_text()) for n in research}
    research_names = {n.name for n in research}
    for doc in DOCS:
        assert doc.name not in research_names - {"SPEC.md"}, f"{doc.name} has a research note's name"
        mine = _long_lines(doc.read_text())
        for name, lines in notes.items():
            common = mine & lines
            assert len(common) <= SHARED_LINES_ALLOWED, (doc.name, name, sorted(common)[:5])


def test_the_copy_check_finds_a_copy(tmp_path):
    """The measure above flags a research note copied with a header line added."""
    note = sorted(shared("research").glob("*.md"))[0].read_text()
    copy = "<!-- kept with the code -->\n" + note
    assert len(_long_lines(copy) & _long_lines(note)) > SHARED_LINES_ALLOWED


def _links_to(doc_name: str, text: str) -> bool:
    return re.search(r"(?<![\w-])(?:docs/)?" + re.escape(doc_name) + r"\b", text) is not None


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_doc_is_linked(doc):
    """Reachable from README.md or AGENTS.md, or from another doc that is."""
    entry = (ROOT / "README.md").read_text() + (ROOT / "AGENTS.md").read_text()
    reached = {d.name for d in DOCS if _links_to(d.name, entry)}
    while True:
        more = {d.name for d in DOCS if d.name not in reached
                and any(_links_to(d.name, (ROOT / "docs" / r).read_text()) for r in reached)}
        if not more:
            break
        reached |= more
    assert doc.name in reached


def test_nothing_cites_a_removed_doc():
    try:
        tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):   # an unpacked sdist: every file
        tracked = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                   if not {".git", ".venv", "__pycache__"} & set(p.parts)]
    pattern = re.compile(r"docs/(?:" + "|".join(re.escape(n) for n in REMOVED) + r")")
    here = "tests/test_docs.py"
    hits = []
    for rel in tracked:
        path = ROOT / rel
        if rel == here or not path.is_file() or path.suffix in (".png", ".gz"):
            continue
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        hits += [f"{rel}: {m.group(0)}" for m in pattern.finditer(text)]
    assert hits == []
