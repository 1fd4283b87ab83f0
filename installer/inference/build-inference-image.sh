#!/usr/bin/env bash
# Build the Docker image of deployments' inference server, vp-inference:<content-hash> (also tagged
# vp-inference:latest), without any container registry, in two cached steps:
#   base  vp-inference-base:<hash of this script>: debootstrap a Debian rootfs from the mirror in this host's apt
#         sources, Debian's ffmpeg (cameras) and Node 24 (the binary of npm's `node` package this checkout installed);
#         rebuilt only when this script changes.
#   app   the server and its runtime packages (installer/stage-packages.ts) copied onto the base and committed;
#         rebuilt only when what was staged changes (seconds).
# Needs `npm ci` run first. Usage (root): installer/inference/build-inference-image.sh   prints the tag last.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
suite=bookworm
node_bin=$repo/node_modules/node/bin/node
log() { printf '[inference-image] %s\n' "$*" >&2; }
SECONDS=0
[ -x "$node_bin" ] || { log "no $node_bin: run npm ci first"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/vp-inference.XXXXXX")
root=$work/rootfs
cleanup() {
  for m in dev proc; do mountpoint -q "$root/$m" && umount -l "$root/$m"; done
  docker rm -f "vp-inference-stage-$$" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

"$node_bin" "$repo/installer/stage-packages.ts" @vp/inference-server "$work/stage" >&2
cp "$node_bin" "$work/node"
hash=$( (cd "$work" && find stage node -type f -print0 | sort -z | xargs -0 sha256sum && find stage -type l -printf '%p %l\n' | sort) |
  cat - "$here/build-inference-image.sh" | sha256sum | cut -c1-12)
tag=vp-inference:$hash
latest=${VP_INFERENCE_LATEST_TAG-vp-inference:latest}
tag_latest() { if [ -n "$latest" ]; then docker tag "$tag" "$latest"; fi; }
if docker image inspect "$tag" >/dev/null 2>&1; then
  log "cached: $tag"
  tag_latest
  echo "$tag"
  exit 0
fi

# By content only (not the checkout's path): every clone of the same commit shares the base.
base=vp-inference-base:$(cat "$here/build-inference-image.sh" "$node_bin" | sha256sum | cut -c1-12)
if ! docker image inspect "$base" >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || { log "must run as root (debootstrap, chroot)"; exit 1; }
  command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap
  # The host's own apt targets for $suite: what this host already trusts, nothing hard-coded.
  entries=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Identifier: Packages' |
    awk -v re="^$suite(-updates|-security)?\$" '$2 ~ re' | sort -u |
    awk '{ key = $1 " " $2; comps[key] = comps[key] (comps[key] == "" ? "" : " ") $3 } END { for (k in comps) print k, comps[k] }')
  mirror=$(awk -v s="$suite" '$2 == s { print $1; exit }' <<<"$entries")
  [ -n "$mirror" ] || { log "no '$suite' apt source on this host"; exit 1; }
  log "debootstrap $suite (minbase) from $mirror"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  awk '{ print "deb", $0 }' <<<"$entries" >"$root/etc/apt/sources.list"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mount -t proc proc "$root/proc"
  mount --bind /dev "$root/dev"
  in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
  log "apt: ffmpeg ca-certificates"
  in_root apt-get update -qq
  in_root apt-get install -y -qq --no-install-recommends ffmpeg ca-certificates >"$work/apt.log" 2>&1 || { tail -30 "$work/apt.log" >&2; exit 1; }
  in_root apt-get clean
  umount -l "$root/dev" "$root/proc"
  install -m 0755 "$work/node" "$root/usr/local/bin/node"
  rm -rf "$root"/var/lib/apt/lists/* "$root"/usr/share/{doc,man,info}/*
  : >"$root/etc/resolv.conf"
  log "docker import $base"
  tar --numeric-owner -C "$root" -c . | docker import --change 'ENV LANG=C.UTF-8' - "$base" >/dev/null
fi

log "app layer on $base"
printf '#!/bin/sh\nexec /usr/local/bin/node /opt/vp/inference-server/src/main.ts "$@"\n' >"$work/vp-inference-server"
chmod 0755 "$work/vp-inference-server"
stage=vp-inference-stage-$$
docker create --name "$stage" "$base" /bin/true >/dev/null
docker cp "$work/stage" "$stage:/opt/vp"
docker cp "$work/vp-inference-server" "$stage:/usr/local/bin/vp-inference-server"
docker commit \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_ENV=production' \
  --change "LABEL vp.inference.inputs=$hash" \
  --change 'WORKDIR /tmp' \
  --change 'EXPOSE 8080' \
  --change 'CMD ["vp-inference-server"]' \
  "$stage" "$tag" >/dev/null
tag_latest
size=$(docker image inspect -f '{{.Size}}' "$tag")
log "built $tag${latest:+ (+ $latest)} in ${SECONDS}s, $((size / 1024 / 1024)) MiB"
echo "$tag"
