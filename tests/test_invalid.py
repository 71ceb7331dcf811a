"""The corpus of invalid specs: each case names the exact findings it must produce.

``tests/invalid/<case>/case.yaml``:

* ``spec:`` an example (path from the repository root) with ``overlay:`` text merged over it,
  or ``inline`` with the whole document in ``inline:``;
* ``expect:`` the error findings, each with ``code`` and optionally ``file`` (basename), ``line``
  and ``contains`` (strings that must appear in the message or hint); ``warnings:`` the warning
  codes. Both sets must match exactly, so a case also proves that nothing else fires.

Every case also runs through the CLI: exit 1 and no traceback.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from generator import pipeline
from generator.cli import run
from tests.helpers import ROOT, materialise_case

INVALID = ROOT / "tests" / "invalid"
CASES = sorted(p.parent for p in INVALID.glob("*/case.yaml"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_invalid_case(case: Path, tmp_path: Path, capsys) -> None:
    spec, overlays, meta = materialise_case(case, tmp_path)
    checked = pipeline.check(spec, overlays)
    errors = [f for f in checked.findings if f.severity.value == "error"]
    want = Counter(e["code"] for e in meta["expect"])
    got = Counter(f.code for f in errors)
    assert got == want, "\n".join(map(str, checked.findings))
    warnings = Counter(f.code for f in checked.findings if f.severity.value == "warning")
    assert warnings == Counter(meta.get("warnings", [])), "\n".join(map(str, checked.findings))
    for exp in meta["expect"]:
        match = [f for f in errors if f.code == exp["code"]]
        f = match[0]
        if "file" in exp:
            assert Path(f.location.file).name == exp["file"], f
        if "line" in exp:
            assert f.location.line == exp["line"], f
        for text in exp.get("contains", []):
            assert any(text in (g.message + " " + g.hint) for g in match), (text, match)
        assert f.path.startswith("$"), f
    args = ["validate", str(spec)] + [a for o in overlays for a in ("-f", str(o))]
    text = spec.read_text(errors="replace")
    if "InferenceDeployment" not in text and "moegen.dev/" not in text:
        # Nothing in it says it is a spec (an alias bomb, a list): gen validate, which also takes
        # serving manifests and skips other YAML (issue #24), skips it, and then has checked
        # nothing (INP001, issue #31; --allow-empty accepts that).
        assert run(args) == 1
        err = capsys.readouterr().err
        assert "1 file skipped" in err and "error INP001" in err
        assert run([*args, "--allow-empty"]) == 0
        return
    assert run(args) == (1 if want else 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    for code in want:
        assert code in err
