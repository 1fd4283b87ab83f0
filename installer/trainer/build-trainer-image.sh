#!/usr/bin/env bash
# Build the Docker trainer image vp/trainer:<content-hash> (also tagged vp/trainer:latest) without
# any container registry: debootstrap a Debian rootfs from the mirror in this host's apt sources,
# install the same apt packages + pinned venv as the host env (setup-env.sh), then `docker import`.
# Usage (root): installer/trainer/build-trainer-image.sh      prints the image tag on the last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
suite=bookworm
log() { printf '[trainer-image] %s\n' "$*" >&2; }
SECONDS=0

inputs=(setup-env.sh apt-packages.txt requirements.txt requirements-export.txt constraints.txt probe-exporters.py)
hash=$(cat "$here/build-trainer-image.sh" "${inputs[@]/#/$here/}" |
  sha256sum | cut -c1-12)
tag=vp/trainer:$hash
# The moving tag the Docker runtime uses; VP_TRAINER_LATEST_TAG= (empty) builds without moving it, e.g. beside a CI run.
latest=${VP_TRAINER_LATEST_TAG-vp/trainer:latest}
tag_latest() { if [ -n "$latest" ]; then docker tag "$tag" "$latest"; fi; }
if docker image inspect "$tag" >/dev/null 2>&1; then
  log "cached: $tag"
  tag_latest
  echo "$tag"
  exit 0
fi
[ "$(id -u)" = 0 ] || { log "must run as root (debootstrap, chroot)"; exit 1; }
command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y debootstrap

# "URI SUITE COMPONENTS" for every enabled $suite* entry of the host's apt config (deb822 and
# one-line formats). The mirror is whatever this host already trusts; nothing is hard-coded.
apt_entries() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && awk -v RS= -v re="^$suite(-updates|-security)?\$" '{
      t = u = s = c = ""; en = "yes"; n = split($0, L, "\n")
      for (i = 1; i <= n; i++) {
        if (L[i] ~ /^[ \t]*#/ || index(L[i], ":") == 0) continue
        k = tolower(substr(L[i], 1, index(L[i], ":") - 1)); v = substr(L[i], index(L[i], ":") + 1)
        gsub(/^[ \t]+|[ \t]+$/, "", v)
        if (k == "types") t = v; else if (k == "uris") u = v; else if (k == "suites") s = v
        else if (k == "components") c = v; else if (k == "enabled") en = tolower(v)
      }
      if (t !~ /(^| )deb( |$)/ || en == "no") next
      nu = split(u, U, " "); ns = split(s, S, " ")
      for (a = 1; a <= nu; a++) for (b = 1; b <= ns; b++) if (S[b] ~ re) print U[a], S[b], c
    }' "$f"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] && awk -v re="^$suite(-updates|-security)?\$" '$1 == "deb" {
      i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
      if ($(i + 1) ~ re) { c = ""; for (j = i + 2; j <= NF; j++) c = c " " $j; print $i, $(i + 1), substr(c, 2) }
    }' "$f"
  done
  return 0
}
entries=$(apt_entries)
mirror=$(awk -v s="$suite" '$2 == s { print $1; exit }' <<<"$entries")
[ -n "$mirror" ] || { log "no '$suite' entry in /etc/apt/sources*"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/vp-trainer.XXXXXX")
root=$work/rootfs
cleanup() {
  for m in dev proc; do mountpoint -q "$root/$m" && umount -l "$root/$m"; done
  rm -rf "$work"
}
trap cleanup EXIT

log "debootstrap $suite (minbase) from the host's apt mirror"
debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log" >&2; exit 1; }
awk '{ print "deb", $0 }' <<<"$entries" >"$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
# A clean environment for the chroot; the host's CA bundle is lent for the build only, so pip also
# works behind a TLS-inspecting proxy, and proxy variables are passed through.
mkdir -p "$root/tmp/trainer-setup"
cp "${inputs[@]/#/$here/}" "$root/tmp/trainer-setup/"
cp /etc/ssl/certs/ca-certificates.crt "$root/tmp/trainer-setup/ca.crt"
in_root() {
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    DEBIAN_FRONTEND=noninteractive PIP_CERT=/tmp/trainer-setup/ca.crt PIP_NO_CACHE_DIR=1 \
    ${http_proxy:+http_proxy=$http_proxy} ${https_proxy:+https_proxy=$https_proxy} \
    ${no_proxy:+no_proxy=$no_proxy} "$@"
}

log "apt: $(grep -Ev '^[[:space:]]*(#|$)' "$here/apt-packages.txt" | tr '\n' ' ')"
in_root apt-get update -qq
# shellcheck disable=SC2046
in_root apt-get install -y -qq --no-install-recommends $(grep -Ev '^[[:space:]]*(#|$)' "$here/apt-packages.txt") \
  >"$work/apt.log" 2>&1 || { tail -30 "$work/apt.log" >&2; exit 1; }
log "venv /opt/trainer"
in_root /bin/bash /tmp/trainer-setup/setup-env.sh /opt/trainer >&2

log "trimming rootfs"
# Jobs run as an unprivileged user (the Docker runtime's, or an arbitrary --user): ultralytics' settings, its dataset
# and weights caches and matplotlib's (pre-built) cache stay writable to it, each container writing its own copy (a
# layer of its own: nothing one job caches there reaches another); fontconfig gets a cache location (XDG_CACHE_HOME
# below) that is not under an unwritable $HOME.
chmod -R a+rwX "$root/opt/trainer/yolo-config"
in_root apt-get clean
rm -rf "$root"/tmp/trainer-setup "$root"/var/lib/apt/lists/* "$root"/usr/share/{doc,man,info}/* \
  "$root"/root/.cache
: >"$root/etc/resolv.conf"
umount -l "$root/dev" "$root/proc"

log "docker import $tag"
tar --numeric-owner -C "$root" -c . | docker import \
  --change 'ENV PATH=/opt/trainer/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV YOLO_CONFIG_DIR=/opt/trainer/yolo-config' \
  --change 'ENV YOLO_OFFLINE=1' \
  --change 'ENV YOLO_AUTOINSTALL=false' \
  --change 'ENV MPLCONFIGDIR=/opt/trainer/yolo-config/matplotlib' \
  --change 'ENV XDG_CACHE_HOME=/tmp/.cache' \
  --change "LABEL vp.trainer.inputs=$hash" \
  --change 'WORKDIR /tmp' \
  --change 'CMD ["yolo", "version"]' \
  - "$tag" >/dev/null
tag_latest
size=$(docker image inspect -f '{{.Size}}' "$tag")
log "built $tag${latest:+ (+ $latest)} in ${SECONDS}s, $((size / 1024 / 1024)) MiB"
echo "$tag"
