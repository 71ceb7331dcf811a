#!/usr/bin/env bash
# Build (once) a CPU-only venv holding the REAL argument parsers and configuration objects of the
# engines moegen targets:
#   torch 2.13.0 (CPU wheel from local disk), vllm 0.33.0, sglang 0.5.23, smg 1.13.0, sglang-router 0.3.2,
#   vllm-router 0.1.17 (the vLLM PD router; its RouterArgs parser is pure Python).
# Engine/router packages are installed with --no-deps, followed by just the modules their CLI code
# imports (docs/conformance.md, "The engines venv": what runs on it and why each pin).
#
# Idempotent: a marker file is written only after a smoke test builds every parser, so a
# half-finished venv is thrown away and rebuilt. All progress goes to stderr; the last line on
# stdout is the venv's python.
#
#   MOEGEN_ENGINES_VENV   venv location (default: $HOME/.cache/moegen/engines-venv-v1)
#   MOEGEN_ENGINES_PYTHON interpreter to create it with (default: python3.11, else python3; must be 3.11)
set -euo pipefail

VENV="${MOEGEN_ENGINES_VENV:-$HOME/.cache/moegen/engines-venv-v1}"
MARKER="$VENV/.moegen-engines-ok"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

TORCH_PIN="torch==2.13.0"
ENGINE_PINS=(vllm==0.33.0 sglang==0.5.23 sglang-router==0.3.2 smg==1.13.0 vllm-router==0.1.17)
# Import-time deps of the engines' CLI modules, installed --no-deps (pins: docs/conformance.md).
DEPS=(
  packaging huggingface_hub regex pydantic pydantic_core typing-inspection annotated-types numpy
  cbor2 psutil pyzmq urllib3 "transformers>=5.16.1,<5.21.0" tqdm httpx2 httpcore2 truststore h11
  idna pyyaml "safetensors>=0.8.0" "tokenizers>=0.23.2" aiohttp multidict attrs yarl propcache
  aiohappyeyeballs aiosignal frozenlist requests certifi openai-harmony openai sniffio anyio msgspec
  cloudpickle pillow pybase64 cachetools uvloop py-cpuinfo "fastapi>=0.133.0,<0.137.0" starlette
  annotated-doc prometheus_client partial_json_parser "xgrammar==0.2.8" "apache-tvm-ffi==0.1.11"
  llguidance orjson triton ipython traitlets pygments
  # what building the engines' configuration objects imports (tests/conformance/engine_config.py;
  # docs/conformance.md, "Running the engines' code on a CPU")
  "compressed-tensors==0.17.0" einops loguru dill sentencepiece gguf
)
# The marker records the recipe; change the recipe and the venv is rebuilt.
SPEC="v1 ${TORCH_PIN} ${ENGINE_PINS[*]} ${DEPS[*]}"

log() { echo "[engines-venv] $*" >&2; }

smoke() {
  # Versions, then one known-good command through each real checker (all four parsers).
  "$VENV/bin/python" - >&2 <<'PY'
import importlib.metadata as md
want = {"torch": "2.13.0", "vllm": "0.33.0", "sglang": "0.5.23", "smg": "1.13.0", "sglang-router": "0.3.2", "vllm-router": "0.1.17"}
for dist, v in want.items():
    got = md.version(dist)
    assert got.split("+")[0] == v, f"{dist}: want {v}, got {got}"
import torch  # the CPU wheel imports
print("versions ok:", want)
PY
  local conf="$HERE/../tests/conformance"
  "$VENV/bin/python" "$conf/vllm_parse.py" >"$VENV/.smoke-vllm.json" <<'JSON'
{"commands": [{"id": "smoke", "argv": ["vllm", "serve", "/models/m", "--data-parallel-size", "2",
  "--enable-expert-parallel", "--enable-eplb", "--eplb-config", "{\"num_redundant_experts\": 32}"]}]}
JSON
  "$VENV/bin/python" "$conf/sglang_parse.py" >"$VENV/.smoke-sglang.json" <<'JSON'
{"commands": [
  {"id": "server", "argv": ["python3", "-m", "sglang.launch_server", "--model-path", "/models/m", "--tp-size", "2"]},
  {"id": "smg", "argv": ["python3", "-m", "smg.launch_router", "--pd-disaggregation", "--prefill", "http://p:30000", "8998", "--decode", "http://d:30000"]},
  {"id": "sglang_router", "argv": ["python3", "-m", "sglang_router.launch_router", "--pd-disaggregation", "--prefill", "http://p:30000", "--decode", "http://d:30000"]}]}
JSON
  "$VENV/bin/python" "$conf/vllm_router_parse.py" >"$VENV/.smoke-vllm-router.json" <<'JSON'
{"commands": [{"id": "pd", "argv": ["vllm-router", "--vllm-pd-disaggregation", "--prefill", "http://p:8000", "--decode", "http://d:8000"]}]}
JSON
  "$VENV/bin/python" - "$VENV/.smoke-vllm.json" "$VENV/.smoke-sglang.json" "$VENV/.smoke-vllm-router.json" >&2 <<'PY'
import json, sys
for path in sys.argv[1:]:
    doc = json.load(open(path))
    bad = [r for r in doc["results"] if not r["ok"]]
    assert doc["results"] and not bad, f"{path}: {bad}"
    print("smoke ok:", doc["engine"], doc["version"], [r["id"] for r in doc["results"]])
PY
}

WHAT="the engines venv"
# shellcheck source=venv-common.sh
. "$(dirname "$0")/venv-common.sh"
PIP=("$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --progress-bar off)

# 1. torch: plain pip takes the CPU wheel lying on disk (find-links /opt/wheels, also set in the
#    machine's pip config). PyPI's own torch 2.13.0 is a multi-GB CUDA build: warn if we got that.
FIND_LINKS=()
[[ -d /opt/wheels ]] && FIND_LINKS=(--find-links /opt/wheels)
"${PIP[@]}" "${FIND_LINKS[@]}" "$TORCH_PIN" >&2
"$VENV/bin/python" -c 'import torch, sys; v = torch.__version__; print("torch", v, file=sys.stderr); "+cpu" in v or print("[engines-venv] WARNING: torch is not the CPU build", file=sys.stderr)'

# 2. engines and routers, without their (GPU-heavy) dependency trees. One at a time, in this
#    order: the sglang-router wheel also ships an `smg` console script, and the `smg` package,
#    installed last, must own it.
for pin in "${ENGINE_PINS[@]}"; do
  "${PIP[@]}" --no-deps "$pin" >&2
done
# 3. what their CLI modules import.
"${PIP[@]}" --no-deps "${DEPS[@]}" >&2

log "smoke test"
smoke
{ echo "$SPEC"; date -u +%FT%TZ; "$VENV/bin/python" -m pip freeze --disable-pip-version-check; } > "$MARKER.tmp"
mv "$MARKER.tmp" "$MARKER"
log "done in $(( $(date +%s) - start ))s, $(du -sh "$VENV" | cut -f1)"
echo "$VENV/bin/python"
