"""Extract which vLLM releases read each environment variable moegen tracks into package data.

A variable a release no longer reads is silently ignored (the setting has no effect; from the
release that reports unknown VLLM_* variables it is a startup warning). Source: the team's dump
of every release's ``vllm/envs.py`` (``shared/reference/engines/vllm-dialects.yaml``,
``releases.<version>.env``: the variables of its scope, with their defaults evaluated, null
where the release does not define it; 0.11.0 .. 0.33.0, every PyPI release), written as
``generator/engines/data/vllm-envs.json``: per variable, the releases that read it.
``tests/test_data_drift.py`` fails when the committed file drifts from the dump.

Usage: python tools/extract_vllm_envs.py [REFERENCE_YAML] [OUT_JSON]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SRC = ROOT.parent / "shared" / "reference" / "engines" / "vllm-dialects.yaml"
DEFAULT_OUT = ROOT / "generator" / "engines" / "data" / "vllm-envs.json"


def render(src: Path) -> str:
    doc = yaml.safe_load(src.read_text())
    releases = list(doc["releases_all"])
    names = sorted({n for v in releases for n in doc["releases"][v]["env"]})
    table = {n: [v for v in releases if doc["releases"][v]["env"].get(n) is not None]
             for n in names}
    data = {"about": "vLLM environment variables (moegen's scope) and the releases whose "
                     "vllm/envs.py reads each, from every release's envs.py "
                     "(tools/extract_vllm_envs.py)",
            "releases": releases, "reads": table}
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    src = Path(argv[0]) if argv else DEFAULT_SRC
    out = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT
    out.write_text(render(src))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
