"""Which public field failures each rule covers (``gen rules``).

The cases are ``tests/field/<case>/case.yaml`` (format: tests/field/README.md); the package
cannot read ``tests/`` at run time, so ``tools/index_field_cases.py`` writes the index shipped
in ``generator/checks/data/field_cases.json`` and ``tests/test_field.py`` fails when it is stale.

``FIELD_CASES``: rule code -> [{"case": name, "class": failure class, "source": [repo#n, ...]}].
``RENDERED_CASES``: the cases prevented by what moegen renders (no rule), each with its ``fix``.
"""

from __future__ import annotations

import json

from ..resources import package_text

_INDEX = json.loads(package_text("checks", "data", "field_cases.json"))
FIELD_CASES: dict[str, list[dict]] = _INDEX["rules"]
RENDERED_CASES: list[dict] = _INDEX["rendered"]
