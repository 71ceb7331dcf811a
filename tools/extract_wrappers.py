"""Extract the options of Dynamo's engine wrappers per Dynamo release into package data.

``python -m dynamo.vllm`` and ``python -m dynamo.sglang`` (the worker CLIs of Dynamo's runtime
images) take the engine's own options plus their own: the runtime group every worker shares
(``components/src/dynamo/common/configuration/groups/runtime_args.py``: namespace, endpoint,
discovery, ``--connector``, ``--dyn-tool-call-parser`` ...) and the backend's group
(``components/src/dynamo/{vllm,sglang}/backend_args.py``: ``--disaggregation-mode`` ...), which
the wrapper consumes and never passes to the engine (``components/src/dynamo/vllm/args.py``
builds the parser from ``DynamoRuntimeArgGroup`` + ``DynamoVllmArgGroup`` + vLLM's
``AsyncEngineArgs``). The importer must know them to read an engine command as the engine sees
it (generator/importer/argv.py). Each option is read with its arity from the AST of its
declaration (``add_negatable_bool_argument``: a flag and its ``--no-`` form; ``add_argument``
with ``action="store_true"``: a flag; ``nargs`` ``+``/``*``: a list; else one value; an
``obsolete_flag`` is the same option's former name), at each
Dynamo release's branch cut (tools/extract_images.py ``dynamo_cuts``) and at the main commit
the importer's facts were first read at (2a6da14, for runtime images that are not a release),
written to ``generator/facts/data/wrappers.json``. ``tests/test_data_drift.py`` re-runs it when
the mirror is at hand.

Usage: python tools/extract_wrappers.py [--mirrors DIR] [OUT_JSON]
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# mirrors_dir is re-exported: tests/test_data_drift.py finds the mirrors through this module.
from extract_images import (  # noqa: E402, F401
    DYNAMO_RELEASES, Mirror, cli, dynamo_cuts, mirrors_dir)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "generator" / "facts" / "data" / "wrappers.json"
#: The commit of main whose wrapper options the importer read first (no release yet).
MAIN = "2a6da14c83617f5412caba5777dbf0e2399e9c5f"
GROUPS = {"common": "components/src/dynamo/common/configuration/groups/runtime_args.py",
          "vllm": "components/src/dynamo/vllm/backend_args.py",
          "sglang": "components/src/dynamo/sglang/backend_args.py"}


def options(source: str) -> dict[str, tuple[str, int]]:
    """``--flag`` -> (arity: one | flag | list, line) of every option ``source`` declares."""
    out: dict[str, tuple[str, int]] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        fn = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        kw = {k.arg: k.value for k in node.keywords}
        name = kw.get("flag_name")
        if fn not in ("add_argument", "add_negatable_bool_argument") \
                or not isinstance(name, ast.Constant):
            continue
        action, nargs = kw.get("action"), kw.get("nargs")
        if fn == "add_negatable_bool_argument" or (
                isinstance(action, ast.Constant) and action.value in ("store_true",
                                                                      "store_false")):
            arity = "flag"
        elif isinstance(nargs, ast.Constant) and nargs.value in ("+", "*"):
            arity = "list"
        else:
            arity = "one"
        out[name.value] = (arity, node.lineno)
        old = kw.get("obsolete_flag")   # the option's former name, still accepted
        if isinstance(old, ast.Constant) and isinstance(old.value, str):
            out[old.value] = (arity, node.lineno)
    return out


def release_options(m: Mirror, ref: str) -> dict:
    out: dict = {}
    for group, path in GROUPS.items():
        found = options(m.text(ref, path))
        out[group] = {"options": {k: v[0] for k, v in sorted(found.items())},
                      "source": m.cite(ref, path, min(v[1] for v in found.values()))}
    return out


def render(mirrors: Path) -> str:
    m = Mirror(mirrors, "wxsms+dynamo")
    cuts = dynamo_cuts(m)
    releases = {r: release_options(m, cuts[r]) for r in DYNAMO_RELEASES}
    releases["main"] = release_options(m, MAIN)
    data = {"about": "Options of Dynamo's engine wrappers (python -m dynamo.vllm / "
                     "dynamo.sglang) per Dynamo release, read by tools/extract_wrappers.py",
            "dynamo": releases}
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    return cli(argv, DEFAULT_OUT, render)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
