"""Write ``generator/checks/data/field_cases.json``: which public field cases each rule covers.

The field cases live in ``tests/field/<case>/case.yaml`` (format: tests/field/README.md); the
package cannot read ``tests/`` at run time, so this index ships with it and ``gen rules`` reads
it. ``tests/test_field.py::test_field_index_is_current`` fails when a case is added, removed or
its ``rules:`` change without re-running::

    python tools/index_field_cases.py

Output shape: ``{"rules": {CODE: [CASE, ...]}, "rendered": [CASE, ...]}`` with ``CASE =
{"case": name, "class": cls, "source": [repo#n, ...]}`` (``rendered``: the cases moegen prevents
by what it renders, ``rules: []``, with their ``fix``); codes and cases sorted, so the file is
byte-identical on re-run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
FIELD = ROOT / "tests" / "field"
OUT = ROOT / "generator" / "checks" / "data" / "field_cases.json"


def index(field: Path = FIELD) -> str:
    """The index text for the cases under ``field`` (JSON, sorted, trailing newline)."""
    rules: dict[str, list[dict]] = {}
    rendered: list[dict] = []
    for case in sorted(field.glob("*/case.yaml")):
        meta = yaml.safe_load(case.read_text(encoding="utf-8"))
        source = meta.get("source") or []
        entry = {"case": case.parent.name, "class": meta.get("class"),
                 "source": [str(s) for s in (source if isinstance(source, list) else [source])]}
        for code in sorted(set(meta.get("rules") or [])):
            rules.setdefault(code, []).append(entry)
        if not meta.get("rules"):
            rendered.append({**entry, "fix": str(meta.get("fix") or "")})
    doc = {"rules": dict(sorted(rules.items())), "rendered": rendered}
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def main() -> int:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(index(), encoding="utf-8")
    print(f"{OUT.relative_to(ROOT)}: {len(json.loads(OUT.read_text())['rules'])} rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
