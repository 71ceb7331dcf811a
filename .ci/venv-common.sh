# Shared by .ci/engines-venv.sh and .ci/cpu-runtime-venv.sh (sourced after they set VENV,
# MARKER, SPEC, WHAT and log): reuse a venv whose marker records the same recipe, else take the
# build lock (one builder at a time; re-check after the wait), pick a Python 3.11 (the CPU torch
# wheel on disk is cp311) and create a fresh venv. Prints the venv's python and exits on reuse.

venv_ok() {
  [[ -f "$MARKER" && -x "$VENV/bin/python" ]] && [[ "$(head -n1 "$MARKER")" == "$SPEC" ]] \
    && "$VENV/bin/python" -c '' 2>/dev/null
}

if venv_ok; then
  log "reusing $VENV"
  echo "$VENV/bin/python"
  exit 0
fi

mkdir -p "$(dirname "$VENV")"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$VENV.lock"
  flock 9
fi
if venv_ok; then
  log "reusing $VENV (built by another run)"
  echo "$VENV/bin/python"
  exit 0
fi

PY_BOOT="${MOEGEN_ENGINES_PYTHON:-}"
if [[ -z "$PY_BOOT" ]]; then
  if command -v python3.11 >/dev/null 2>&1; then PY_BOOT=python3.11; else PY_BOOT=python3; fi
fi
"$PY_BOOT" -c 'import sys; assert sys.version_info[:2] == (3, 11), "%s needs Python 3.11 (the CPU torch wheel on disk is cp311), got %s" % (sys.argv[1], sys.version)' "$WHAT" >&2

start=$(date +%s)
log "building $VENV (fresh)"
rm -rf "$VENV"
"$PY_BOOT" -m venv "$VENV"
