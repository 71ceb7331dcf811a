"""``gen explain``: every value of the merged spec and the file:line that set it."""

from __future__ import annotations

import json

from ..spec.load import LoadedSpec, json_path


def explain(loaded: LoadedSpec, prefix: str = "$") -> str:
    """``$.path = value    file:line`` for every leaf of the merged spec under ``prefix``."""
    lines = []

    def walk(node, path):
        if isinstance(node, dict) and node:
            for key, value in node.items():
                walk(value, (*path, key))
        elif isinstance(node, list) and node and all(isinstance(v, (dict, list)) for v in node):
            for i, value in enumerate(node):
                walk(value, (*path, i))
        else:
            jp = json_path(path)
            if jp.startswith(prefix):
                loc = loaded.provenance.locate(path)
                lines.append((jp, json.dumps(node), f"{loc.file}:{loc.line}"))

    walk(loaded.data, ())
    width = max((len(a) + len(b) for a, b, _ in lines), default=0) + 3
    return "".join(f"{a} = {b}".ljust(width) + f"  {c}\n" for a, b, c in lines)
