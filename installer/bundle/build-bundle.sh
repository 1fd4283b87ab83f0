#!/usr/bin/env bash
# Build the offline bundle vision-appliance-<version>.tar: everything an air-gapped host needs to install or upgrade
# the appliance with installer/install.sh, nothing fetched at install time. Inside, under vision-appliance-<version>/:
#   install.sh      the installer (run it as root from the unpacked bundle)
#   manifest.json   version, what each member holds, its size and sha256
#   SHA256SUMS      sha256sum -c format, checked by install.sh before it changes anything
#   app.tar         the release: the sources of config, protocol, inference, inference-server, control-plane,
#                   worker-agent and installer, their production node_modules (`npm ci --omit=dev`; the embedded
#                   PostgreSQL's binaries are one of them), the Node 24 binary as bin/node and models/*.onnx (the
#                   image embedder and the face detector, installer/models/build-models.sh: cached by content)
#   images/*.tar    `docker save` of vp-inference:latest (deployments' server) and, with --with-trainer, vp/trainer:latest
#   worker/vp-worker-<version>-linux-x64.tar.gz   the worker agent's distribution for GPU hosts
#                   (installer/dist/build-agent-dist.sh with this version, which its agents report): unpack it on a host
#                   and run its install-worker.sh, with --images pointing at this bundle's images/
# Each part is cached by content under $VP_BUNDLE_CACHE (default <repo>/.cache/bundle; the 3 last used of each kind are
# kept): node_modules by the package manifests, app.tar by everything in it, an image by its id and tags, the worker
# distribution by its files; the archive itself is not written again when its members are the same. Needs `npm ci` run
# first (the node binary) and the images built (installer/inference/build-inference-image.sh,
# installer/trainer/build-trainer-image.sh).
# Usage: installer/bundle/build-bundle.sh [--version V] [--out DIR] [--with-trainer]   prints the bundle's path last.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
node=$repo/node_modules/node/bin/node
log() { printf '[bundle] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
mib() { echo "$(($1 / 1024 / 1024)) MiB"; }
SECONDS=0

WORKSPACES=(config protocol inference inference-server control-plane worker-agent installer console)
version=
out=$PWD
images=(vp-inference:latest)
while [ $# -gt 0 ]; do
  case $1 in
    --version) version=${2:?--version needs a value}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --with-trainer) images+=(vp/trainer:latest); shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (--help)" ;;
  esac
done
[ -x "$node" ] || die "no $node: run npm ci first"
[ -z "$version" ] && version=$("$node" -p "require('$repo/package.json').version")-$(git -C "$repo" rev-parse --short=10 HEAD 2>/dev/null || echo local)
[[ $version =~ ^[A-Za-z0-9][A-Za-z0-9._+-]*$ ]] || die "--version: letters, digits and . _ + - only (it names files)"
case $(uname -m) in x86_64) arch=x64 ;; aarch64) arch=arm64 ;; *) die "unsupported architecture $(uname -m)" ;; esac
cache=${VP_BUNDLE_CACHE:-$repo/.cache/bundle}
mkdir -p "$cache/modules" "$cache/app" "$cache/images" "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/var/tmp}/vp-bundle.XXXXXX")
trap 'rm -rf "$work"' EXIT
digest() { sha256sum | cut -c1-16; }
# A cache entry is a directory named by the digest of its inputs; `entry KIND KEY` prints it and marks it used. Each
# kind keeps its three most recently used entries.
entry() {
  mkdir -p "$cache/$1"
  touch "$cache/$1/$2" 2>/dev/null || true
  echo "$cache/$1/$2"
}
prune_cache() {
  local kind
  for kind in modules app images; do
    ls -1t "$cache/$kind" | tail -n +4 | while read -r old; do rm -rf "${cache:?}/$kind/$old"; done
  done
  { ls -1t "$cache/dist"/*.tar.gz 2>/dev/null || true; } | tail -n +4 | while read -r old; do rm -f "$old" "$old.sha256" "$old.build"; done
}
# Fills the cache entry $1 with the file $2 made by the rest of the arguments (given the path to write), and its sha256.
cache_file() {
  local dir=$1 file=$2
  shift 2
  rm -rf "$dir.partial" && mkdir -p "$dir.partial"
  "$@" "$dir.partial/$file"
  sha256sum <"$dir.partial/$file" | cut -d' ' -f1 >"$dir.partial/sha256"
  rm -rf "$dir" && mv "$dir.partial" "$dir"
}

# 1. Production node_modules, keyed by what npm reads. The Node runtime ships once, as bin/node (its npm package
#    would add 190 MiB), and native builds for other platforms are left out.
manifests=(package.json package-lock.json .npmrc "${WORKSPACES[@]/%//package.json}")
modules_key=$( (cd "$repo" && cat "${manifests[@]}" && echo "$arch") | cat - "$here/build-bundle.sh" | digest)
modules=$(entry modules "$modules_key")
if [ ! -d "$modules/node_modules" ]; then
  log "npm ci --omit=dev (node_modules $modules_key)"
  stage=$work/modules
  mkdir -p "$stage"
  (cd "$repo" && tar -c "${manifests[@]}") | tar -x -C "$stage"
  (cd "$stage" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --omit=dev --prefer-offline --no-audit --no-fund --loglevel=error >&2) ||
    die "npm ci --omit=dev failed (above); with no registry reachable, run npm ci in the checkout first to fill npm's cache"
  rm -rf "$stage/node_modules/node" "$stage/node_modules/.bin/node"
  find "$stage/node_modules" -regextype posix-extended -type d -regex '.*/bin/napi-v[0-9]+/(darwin|win32)' -prune -exec rm -rf {} +
  find "$stage/node_modules" -regextype posix-extended -type d -regex '.*/bin/napi-v[0-9]+/linux/[^/]+' ! -name "$arch" -prune -exec rm -rf {} +
  rm -rf "$modules" && mkdir -p "$modules" && mv "$stage/node_modules" "$modules/"
fi

# 2. The release tree: the workspaces' files (in a git checkout: tracked or new, not ignored), node_modules, bin/node.
SOURCES=("${WORKSPACES[@]}" package.json package-lock.json LICENSE NOTICE README.md)
list_sources() {
  if [ "$(git -C "$repo" rev-parse --show-toplevel 2>/dev/null)" = "$repo" ]; then
    git -C "$repo" ls-files -z --cached --others --exclude-standard -- "${SOURCES[@]}"
  else
    find "${SOURCES[@]}" -name node_modules -prune -o -type f -print0
  fi
}
# The console ships built (console/dist, ignored by git; its build stamp matches the shipped sources, so an install,
# which has no Vite, serves it as it is): built here when its sources changed since the checkout's last build.
(cd "$repo" && "$node" --input-type=module -e "import { ensureConsoleBuilt } from './control-plane/src/console/console-build.ts';
  await ensureConsoleBuilt({ info() {}, warn(_, message) { console.error(message); } });") || die "the console could not be built (above)"
[ -f "$repo/console/dist/index.html" ] || die "no console/dist: run npm ci in the checkout first (it installs Vite)"
sources=$work/sources.list
(cd "$repo" && { list_sources; find console/dist -type f -print0; } | while IFS= read -r -d '' file; do [ -f "$file" ] && printf '%s\0' "$file"; done | sort -z) >"$sources"
models=$("$repo/installer/models/build-models.sh" | tail -n 1) || die "the models could not be built (above): run .ci/run or installer/trainer/build-trainer-env.sh first (it needs the trainer's Python)"
app_key=$( (cd "$repo" && xargs -0 sha256sum <"$sources" && sha256sum "$node") | cat - "$models/SHA256SUMS" <(echo "$modules_key") "$here/build-bundle.sh" | digest)
app=$(entry app "$app_key")
pack_app() {
  local tree=$work/app
  mkdir -p "$tree/bin"
  (cd "$repo" && tar -c --null -T "$sources") | tar -x -C "$tree"
  install -m 0755 "$node" "$tree/bin/node"
  install -D -m 0644 -t "$tree/models" "$models"/*.onnx
  cp -al "$modules/node_modules" "$tree/" 2>/dev/null || cp -a "$modules/node_modules" "$tree/"
  tar -C "$tree" --sort=name --owner=0 --group=0 --numeric-owner -cf "$1" .
}
[ -f "$app/app.tar" ] || { log "app.tar $app_key"; cache_file "$app" app.tar pack_app; }

# 3. The images, keyed by image id and tags: `docker save` keeps the tags, so `docker load` restores vp-inference:latest.
bundle=$work/vision-appliance-$version
mkdir -p "$bundle/images"
ln "$app/app.tar" "$bundle/app.tar" 2>/dev/null || cp "$app/app.tar" "$bundle/app.tar"
: >"$work/images.tsv"
save_image() {
  # shellcheck disable=SC2086 # the tags are words
  docker save -o "$1" $tags
  chmod 0644 "$1"
}
for image in "${images[@]}"; do
  id=$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null) ||
    die "no image $image: build it first ($( [[ $image == vp/trainer* ]] && echo installer/trainer/build-trainer-image.sh || echo installer/inference/build-inference-image.sh), as root)"
  tags=$(docker image inspect -f '{{join .RepoTags " "}}' "$image")
  saved=$(entry images "$(echo "$id $tags" | digest)")
  [ -f "$saved/image.tar" ] || { log "docker save $image ($id)"; cache_file "$saved" image.tar save_image; }
  name=${image%%:*}
  file=images/${name//\//-}.tar
  ln "$saved/image.tar" "$bundle/$file" 2>/dev/null || cp "$saved/image.tar" "$bundle/$file"
  printf '%s\t%s\t%s\t%s\t%s\n' "$file" "$image" "$id" "$tags" "$(cat "$saved/sha256")" >>"$work/images.tsv"
done
prune_cache

# 4. The worker agent's distribution, with the bundle's version (cached by content in its own cache folder).
mkdir -p "$bundle/worker"
agent_dist=$("$repo/installer/dist/build-agent-dist.sh" --version "$version" "$cache/dist" | tail -n 1)
worker=worker/$(basename "$agent_dist")
ln "$agent_dist" "$bundle/$worker" 2>/dev/null || cp "$agent_dist" "$bundle/$worker"

# 5. install.sh, the manifest and the checksums (the large members' digests come from the cache), then the archive,
#    unless the one at the target was made from the same members.
install -m 0755 "$repo/installer/install.sh" "$bundle/install.sh"
{
  printf '%s  install.sh\n' "$(sha256sum <"$bundle/install.sh" | cut -d' ' -f1)"
  printf '%s  app.tar\n' "$(cat "$app/sha256")"
  printf '%s  %s\n' "$(cut -d' ' -f1 "$agent_dist.sha256")" "$worker"
  cut -f1,5 "$work/images.tsv" | awk -F'\t' '{ print $2 "  " $1 }'
} >"$work/members"
target=$out/vision-appliance-$version.tar
bundle_key=$(cat "$work/members" "$work/images.tsv" "$here/write-manifest.ts" "$here/build-bundle.sh" <(echo "$version") | digest)
if [ -f "$target" ] && [ "$(cat "$target.key" 2>/dev/null)" = "$bundle_key" ]; then
  log "cached: $target"
else
  "$node" "$here/write-manifest.ts" "$bundle" "$version" "$arch" "$work/members" "$work/images.tsv" >"$bundle/manifest.json"
  { cat "$work/members"; printf '%s  manifest.json\n' "$(sha256sum <"$bundle/manifest.json" | cut -d' ' -f1)"; } | sort -k2 >"$bundle/SHA256SUMS"
  members=(install.sh manifest.json SHA256SUMS app.tar images worker)
  tar -C "$work" --owner=0 --group=0 --numeric-owner -cf "$target.partial" "${members[@]/#/vision-appliance-$version/}"
  mv "$target.partial" "$target"
  echo "$bundle_key" >"$target.key"
fi
log "app.tar $(mib "$(stat -c %s "$app/app.tar")")"
while IFS=$'\t' read -r file image _ _ _; do log "image $image $(mib "$(stat -c %s "$bundle/$file")")"; done <"$work/images.tsv"
log "$worker $(mib "$(stat -c %s "$bundle/$worker")")"
log "bundle $target: $(mib "$(stat -c %s "$target")") (${SECONDS}s)"
echo "$target"
