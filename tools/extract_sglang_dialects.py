"""Extract the per-release SGLang facts moegen needs into package data.

Sources (dumped from SGLang's own parsers; the product may not read shared/ at run time):
``shared/reference/engines/sglang-flags-by-version.json`` (option names of every release
0.4.10.post2 .. 0.5.23) and ``sglang-0.5.23-cli.json`` (choices and defaults of 0.5.23).
Writes ``generator/engines/data/sglang-releases.json``; ``tests/test_data_drift.py`` fails when
the committed file drifts.

Usage: python tools/extract_sglang_dialects.py [REFERENCE_DIR] [OUT_JSON]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SRC = ROOT.parent / "shared" / "reference" / "engines"
DEFAULT_OUT = ROOT / "generator" / "engines" / "data" / "sglang-releases.json"

#: Options moegen renders or checks for (current and removed spellings).
TRACKED = [
    "--model-path", "--served-model-name", "--host", "--port", "--tp-size", "--dp-size",
    "--ep-size", "--pp-size", "--enable-dp-attention", "--attn-cp-size", "--attn-dp-size",
    "--moe-a2a-backend", "--deepep-mode", "--enable-deepep-moe", "--enable-ep-moe",
    "--enable-eplb", "--ep-num-redundant-experts", "--eplb-rebalance-num-iterations",
    "--expert-distribution-recorder-buffer-size", "--disaggregation-mode",
    "--disaggregation-transfer-backend", "--disaggregation-ib-device",
    "--disaggregation-bootstrap-port", "--nnodes", "--node-rank", "--dist-init-addr",
    "--speculative-algorithm", "--speculative-num-steps", "--speculative-eagle-topk",
    "--speculative-num-draft-tokens", "--mem-fraction-static", "--cuda-graph-max-bs",
    "--cuda-graph-max-bs-decode", "--disable-cuda-graph", "--chunked-prefill-size",
    "--max-running-requests", "--kv-cache-dtype", "--context-length", "--trust-remote-code",
    "--moe-dense-tp-size", "--enable-dp-lm-head", "--enable-prefill-cp", "--cp-strategy",
]
#: Options whose 0.5.23 choices moegen checks values against.
CHOICES = ["--moe-a2a-backend", "--deepep-mode", "--disaggregation-transfer-backend",
           "--kv-cache-dtype", "--disaggregation-mode", "--cp-strategy"]


def extract(src: Path) -> dict:
    """``{"source", "releases": {version: [tracked options]}, "choices": {...}}``."""
    by_version = json.loads((src / "sglang-flags-by-version.json").read_text())
    cli = json.loads((src / "sglang-0.5.23-cli.json").read_text())
    choices = {}
    for entry in cli:
        for opt in entry["opts"]:
            if opt in CHOICES:
                choices[opt] = entry["choices"]
    releases = {v: sorted(o for o in opts if o in TRACKED)
                for v, opts in by_version.items() if v.startswith("0.5.")}
    return {"source": "every SGLang release's own launch_server parser (option names of 0.4.10.post2"
                      "-0.5.23; choices of 0.5.23), dumped by the team and extracted by "
                      "tools/extract_sglang_dialects.py",
            "releases": releases, "choices_0.5.23": choices}


def render(src: Path) -> str:
    """The exact bytes the committed data file must hold."""
    return json.dumps(extract(src), indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    src = Path(argv[1]) if len(argv) > 1 else DEFAULT_SRC
    out = Path(argv[2]) if len(argv) > 2 else DEFAULT_OUT
    out.write_text(render(src))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
