"""Golden output trees: every example and every tests/golden/<case> renders byte-for-byte.

A case directory holds ``case.yaml`` (``spec:`` path relative to the repository, optional
``overlays:`` list relative to the case directory) and the expected tree in ``expected/``.
Examples get a case automatically (``examples/<name>.yaml`` -> ``tests/golden/<name>/``).
Refresh after an intended change with ``MOEGEN_UPDATE_GOLDEN=1 pytest tests/test_golden.py``
and review the diff.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from generator.emit import diff_tree, write_tree
from tests.helpers import ROOT, example_specs, render_spec

GOLDEN = ROOT / "tests" / "golden"


def cases() -> list[tuple[str, Path, list[Path]]]:
    out = []
    for spec in example_specs():
        out.append((spec.stem, spec, []))
    for case in sorted(GOLDEN.glob("*/case.yaml")):
        meta = yaml.safe_load(case.read_text())
        overlays = [case.parent / o for o in meta.get("overlays", [])]
        out.append((case.parent.name, ROOT / meta["spec"], overlays))
    return out


@pytest.mark.parametrize("name,spec,overlays", cases(), ids=[c[0] for c in cases()])
def test_golden_tree(name: str, spec: Path, overlays: list[Path]) -> None:
    _, _, files = render_spec(spec, overlays)
    expected = GOLDEN / name / "expected"
    if os.environ.get("MOEGEN_UPDATE_GOLDEN"):
        if expected.exists():
            shutil.rmtree(expected)
        write_tree(expected, files)
    assert expected.is_dir(), f"no golden tree for {name}: run with MOEGEN_UPDATE_GOLDEN=1"
    drift = diff_tree(expected, files)
    assert not drift, "\n".join(drift)


def test_every_golden_dir_is_a_case() -> None:
    """A stale golden directory (example renamed or removed) is an error, not dead weight."""
    names = {c[0] for c in cases()}
    dirs = {p.name for p in GOLDEN.iterdir() if p.is_dir()}
    assert dirs <= names, f"stale golden directories: {sorted(dirs - names)}"
