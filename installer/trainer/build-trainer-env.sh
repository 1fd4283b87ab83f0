#!/usr/bin/env bash
# Build the host trainer environment used by the worker's process runtime.
# Usage: installer/trainer/build-trainer-env.sh [VENV_DIR]   (default: <repo>/.venv-trainer)
# Idempotent: apt packages are installed only when missing, and the pip step is skipped when the
# venv was already built from the same inputs (stamp = hash of this directory's inputs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=$(realpath -m "${1:-$here/../../.venv-trainer}")
log() { printf '[trainer-env] %s\n' "$*"; }
SECONDS=0

stamp=$(cat "$here"/{apt-packages.txt,requirements.txt,requirements-export.txt,constraints.txt,setup-env.sh,probe-exporters.py} |
  sha256sum | cut -c1-16)
if [ "$(cat "$venv/.trainer-stamp" 2>/dev/null)" = "$stamp" ] && "$venv/bin/yolo" version >/dev/null 2>&1; then
  log "up to date: $venv (inputs $stamp)"
  exit 0
fi

mapfile -t pkgs < <(grep -Ev '^[[:space:]]*(#|$)' "$here/apt-packages.txt")
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "apt: installing ${missing[*]}"
  sudo=(); [ "$(id -u)" = 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  # Retry after an index refresh: stale lists are the usual cause of a failed install.
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" ||
    { "${sudo[@]}" apt-get update && "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; }
else
  log "apt: all packages present"
fi

"$here/setup-env.sh" "$venv"
echo "$stamp" >"$venv/.trainer-stamp"
log "done in ${SECONDS}s: $venv — jobs run $venv/bin/yolo (offline env in $venv/trainer.env)"
