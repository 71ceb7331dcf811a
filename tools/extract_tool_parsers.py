"""Extract the tool-call parsers each vLLM release registers into package data.

``vllm serve --enable-auto-tool-choice --tool-call-parser NAME`` refuses to start when NAME is
not registered (vLLM 0.33.0 vllm/entrypoints/common/cli_args.py ``validate_api_server_args``:
``KeyError("invalid tool call parser")``); the option itself takes any string (no argparse
choices, so engine-options.json cannot hold them). The names are the keys of
``_TOOL_PARSERS_TO_REGISTER`` in ``vllm/tool_parsers/__init__.py``, read statically (AST) from
each release's installed sources, and written to ``generator/engines/data/tool-parsers.json``.
SGLang's ``--tool-call-parser`` has argparse choices (engine-options.json: ENG006 checks them).

Sources: the releases installed on this machine (the engines venv: vLLM 0.33.0; the CPU
runtime: vLLM 0.32.0; ``--site DIR`` adds another site-packages). ``tests/test_data_drift.py``
re-runs the extraction where those are present.

Usage: python tools/extract_tool_parsers.py [--site DIR ...] [OUT_JSON]
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "generator" / "engines" / "data" / "tool-parsers.json"
REGISTRY = "vllm/tool_parsers/__init__.py"
#: The environments whose vLLM is read (docs/conformance.md: .ci/engines-venv.sh,
#: .ci/cpu-runtime-venv.sh).
VENVS = (Path.home() / ".cache" / "moegen" / "engines-venv-v1",
         Path.home() / ".cache" / "moegen" / "cpu-runtime-v1")


def sites(extra: list[Path] = ()) -> list[Path]:
    """The site-packages directories that hold a vLLM release."""
    found = [p for v in VENVS for p in sorted(v.glob("lib/python3*/site-packages"))]
    return [s for s in [*found, *extra] if (s / REGISTRY).is_file()]


def release_of(site: Path) -> str:
    meta = next(site.glob("vllm-*.dist-info"))
    return meta.name[len("vllm-"):-len(".dist-info")].split("+")[0]


def parsers(site: Path) -> tuple[list[str], int]:
    """The registered names and the line of the registry dict."""
    tree = ast.parse((site / REGISTRY).read_text())
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if getattr(target, "id", None) == "_TOOL_PARSERS_TO_REGISTER":
            return sorted(k.value for k in node.value.keys), node.lineno
    raise LookupError(f"{site / REGISTRY}: no _TOOL_PARSERS_TO_REGISTER")


def render(found: list[Path]) -> str:
    out = {}
    for site in found:
        names, line = parsers(site)
        release = release_of(site)
        out[release] = {"parsers": names,
                        "source": f"vLLM {release} {REGISTRY}:{line} (_TOOL_PARSERS_TO_REGISTER)"}
    data = {"about": "vLLM tool-call parsers registered per release, read by "
                     "tools/extract_tool_parsers.py", "vllm": dict(sorted(out.items()))}
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    extra = []
    while "--site" in argv:
        i = argv.index("--site")
        extra.append(Path(argv[i + 1]))
        argv = argv[:i] + argv[i + 2:]
    out = Path(argv[0]) if argv else DEFAULT_OUT
    out.write_text(render(sites(extra)))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
