#!/usr/bin/env bash
# Build (once) a venv holding checkov, the policy suite platform teams run over Kubernetes
# manifests (tests/test_checkov.py runs its Kubernetes checks over every rendered tree;
# docs/security.md). Its own venv, not `pip install '.[test]'`: checkov 3.3.30 brings ~100
# packages (~290 MB, 2-3 min to install here) and pins packaging<24, which would downgrade the
# project venv's packaging.
#
# Idempotent: the marker is written after a smoke test, and records the recipe (change the pin and
# the venv is rebuilt). Progress goes to stderr; the last line on stdout is the checkov executable.
#
#   MOEGEN_CHECKOV_VENV   venv location (default: $HOME/.cache/moegen/checkov-venv-v1)
set -euo pipefail

VENV="${MOEGEN_CHECKOV_VENV:-$HOME/.cache/moegen/checkov-venv-v1}"
MARKER="$VENV/.moegen-checkov-ok"
PIN="checkov==3.3.30"
SPEC="v1 $PIN"

log() { echo "[checkov-venv] $*" >&2; }

venv_ok() {
  [[ -f "$MARKER" && -x "$VENV/bin/checkov" ]] && [[ "$(head -n1 "$MARKER")" == "$SPEC" ]]
}

if venv_ok; then
  log "reusing $VENV"
  echo "$VENV/bin/checkov"
  exit 0
fi
mkdir -p "$(dirname "$VENV")"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$VENV.lock"
  flock 9
fi
if venv_ok; then
  log "reusing $VENV (built by another run)"
  echo "$VENV/bin/checkov"
  exit 0
fi

start=$(date +%s)
log "building $VENV (fresh)"
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --progress-bar off \
  --quiet "$PIN" >&2
log "smoke test"
got="$("$VENV/bin/checkov" --version)"
[[ "$got" == "${PIN#checkov==}" ]] || { log "want ${PIN#checkov==}, got $got"; exit 1; }
{ echo "$SPEC"; date -u +%FT%TZ; "$VENV/bin/python" -m pip freeze --disable-pip-version-check; } > "$MARKER.tmp"
mv "$MARKER.tmp" "$MARKER"
log "done in $(( $(date +%s) - start ))s, $(du -sh "$VENV" | cut -f1)"
echo "$VENV/bin/checkov"
