#!/usr/bin/env bash
# Build the worker agent's distribution, vp-worker-<version>-linux-x64.tar.gz: what a GPU host runs the agent with,
# no source checkout and no npm there. One folder, vp-worker-<version>/, holding
#   bin/node, bin/vp-worker   Node 24 (the binary of npm's `node` package this checkout installed) and the agent's
#                             command line on it
#   worker-agent/ protocol/ inference/ inference-server/ config/ node_modules/
#                             the agent's sources and their production packages only (installer/stage-packages.ts)
#   install-worker.sh, vp-worker.service   the one command on a host and the systemd unit it writes
#   lib/host-checks.sh        the host checks install-worker.sh shares with the appliance's install.sh
#   VERSION, BUILD            the appliance's version (--version; default package.json's) and the hash of all of the above
# Cached by content: rebuilt only when what it would hold changes; the same inputs give the same bytes (sorted names,
# fixed times and owners), so the archive's .sha256 beside it is stable. Needs `npm ci` run first.
# Usage: installer/dist/build-agent-dist.sh [--version V] [OUT_DIR]   (default .cache/dist); prints the archive's path
# last. The offline bundle builds it with the bundle's version, which the agent reports to the control plane.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
node_bin=$repo/node_modules/node/bin/node
log() { printf '[agent-dist] %s\n' "$*" >&2; }
SECONDS=0
[ -x "$node_bin" ] || { log "no $node_bin: run npm ci first"; exit 1; }
version=$("$node_bin" -p "require('$repo/package.json').version")
if [ "${1:-}" = --version ]; then
  version=${2:?--version needs a value}
  shift 2
fi
[[ $version =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]] || { log "--version: letters, digits and . _ + - only (it names files)"; exit 1; }
out=$(mkdir -p "${1:-$repo/.cache/dist}" && cd "${1:-$repo/.cache/dist}" && pwd)
name=vp-worker-$version
archive=$out/$name-linux-x64.tar.gz

work=$(mktemp -d "${TMPDIR:-/tmp}/vp-agent-dist.XXXXXX")
trap 'rm -rf "$work"' EXIT
dist=$work/$name
"$node_bin" "$repo/installer/stage-packages.ts" @vp/worker-agent "$dist" >&2
install -D -m 0755 "$node_bin" "$dist/bin/node"
install -m 0755 "$here/vp-worker.sh" "$dist/bin/vp-worker"
install -m 0755 "$here/install-worker.sh" "$dist/install-worker.sh"
install -D -m 0644 "$repo/installer/lib/host-checks.sh" "$dist/lib/host-checks.sh"
install -m 0644 "$here/vp-worker.service" "$dist/vp-worker.service"
echo "$version" >"$dist/VERSION"

# Every file's mode and bytes, every link's target, and this script: what the archive's bytes follow from.
build=$( (cd "$dist" && find . -type f -printf '%m %p\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum &&
  find . -type l -printf '%p %l\n' | sort) | cat - "$here/build-agent-dist.sh" | sha256sum | cut -c1-16)
if [ -f "$archive" ] && [ "$(cat "$archive.build" 2>/dev/null)" = "$build" ]; then
  log "cached: $archive (build $build, $(($(stat -c %s "$archive") / 1024 / 1024)) MiB)"
  echo "$archive"
  exit 0
fi
echo "$build" >"$dist/BUILD"
tar --sort=name --mtime=2024-01-01T00:00:00Z --owner=0 --group=0 --numeric-owner --mode=u+rwX,go+rX,go-w \
  -C "$work" -c "$name" | gzip -n -6 >"$work/archive.tar.gz"
mv "$work/archive.tar.gz" "$archive"
(cd "$out" && sha256sum "$(basename "$archive")") >"$archive.sha256"
# Last: until it is written, the next run builds again.
echo "$build" >"$archive.build"
log "built $archive (build $build) in ${SECONDS}s: $(($(stat -c %s "$archive") / 1024 / 1024)) MiB, $(du -sm "$dist" | cut -f1) MiB unpacked"
echo "$archive"
