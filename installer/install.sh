#!/usr/bin/env bash
# Install the Vision Platform appliance on this Debian/Ubuntu host, or upgrade it, from the offline bundle this script
# sits in (installer/bundle/build-bundle.sh builds it; nothing is downloaded). As root:
#   tar xf vision-appliance-<version>.tar && vision-appliance-<version>/install.sh [--port N] [--public-url URL]
#   install.sh --rollback        back to the release the last upgrade replaced (vision-appliance rollback)
#   install.sh --restore DIR --backup-key FILE   a new install that starts from a backup (vpctl backup DIR on the
#                                old server; FILE: its backup key, backup-key in that server's DATA_DIR)
#   install.sh --gpu-host NAME   this host runs jobs too (its GPUs, or CPU): the bundle's worker agent is installed and
#                                enrolled as host NAME; later runs of install.sh upgrade it. It is in the pool that
#                                runs every workspace's jobs: without Docker here its process runtime cannot keep them
#                                apart, and runs only with --allow-shared-process-runtime (install-worker.sh's)
# It checks the bundle's checksums and the host, creates the user vision, unpacks the release into
# /opt/vision-appliance/releases/<version> (`current` links to the running one), writes /etc/vision-appliance/appliance.env
# (mode 0600, with a generated SIGNING_SECRET that is never printed), loads the bundle's images into Docker when there
# is one, starts the control plane with its embedded PostgreSQL as vision (a systemd unit, or a background process
# where systemd does not run this host) and waits for /api/ready. Run again, it keeps the settings and the data; run
# from a newer bundle, it upgrades: the new release starts with its migrations, the previous one is kept.
set -euo pipefail
started=$SECONDS
bundle=$(cd "$(dirname "$0")" && pwd)

usage() { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; }
die() {
  printf 'install.sh: %s\n' "$*" >&2
  exit 1
}

port= public_url= rollback= restore= backup_key= gpu_host= allow_shared=
while [ $# -gt 0 ]; do
  case $1 in
    --port) port=${2:-}; shift 2 || die "--port needs a number" ;;
    --public-url) public_url=${2:-}; shift 2 || die "--public-url needs a URL" ;;
    --rollback) rollback=1; shift ;;
    --restore) restore=${2:-}; shift 2 || die "--restore needs the backup's folder" ;;
    --backup-key) backup_key=${2:-}; shift 2 || die "--backup-key needs the backup key's file" ;;
    --gpu-host) gpu_host=${2:-}; shift 2 || die "--gpu-host needs the host's name" ;;
    --allow-shared-process-runtime) allow_shared=yes; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option $1 (--help)" ;;
  esac
done
[ -z "$port" ] || [[ $port =~ ^[0-9]+$ && $port -ge 1 && $port -le 65535 ]] || die "--port: a number from 1 to 65535"
[ -z "$public_url" ] || [[ $public_url =~ ^https?://[^[:space:]]+$ ]] || die "--public-url: an http(s) URL, the address clients and worker hosts use"
[ -z "$gpu_host" ] || [[ $gpu_host =~ ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ ]] || die "--gpu-host: 1-63 lowercase letters, digits or hyphens"
[ "$(id -u)" = 0 ] || die "run it as root (sudo $0)"
if [ -n "$restore" ]; then
  [ -f "$restore/backup.json" ] || die "--restore $restore: no backup.json there (a folder vpctl backup wrote, complete)"
  restore=$(cd "$restore" && pwd)
  [ -n "$backup_key" ] || die "--restore needs --backup-key FILE: the key the backup was made with (backup-key in the old server's DATA_DIR), kept apart from the backup"
  [ -f "$backup_key" ] || die "--backup-key $backup_key: no such file"
  backup_key=$(cd "$(dirname "$backup_key")" && pwd)/$(basename "$backup_key")
fi
if [ -n "$rollback" ]; then
  exec /opt/vision-appliance/current/installer/appliance/vision-appliance.sh rollback
fi
[ -f "$bundle/manifest.json" ] && [ -f "$bundle/app.tar" ] ||
  die "no manifest.json and app.tar beside it: run the install.sh of an unpacked bundle (installer/bundle/build-bundle.sh builds one)"

say() { printf '%s\n' "$*"; }
step() { say "==> $*"; }
# Reads a top-level string of manifest.json as build-bundle.sh prints it (two-space indent, one field a line).
manifest() { sed -n "s/^  \"$1\": \"\\(.*\\)\",\$/\\1/p" "$bundle/manifest.json"; }

step "Checking the bundle (sha256 of every member)"
(cd "$bundle" && sha256sum --check --quiet --strict SHA256SUMS) ||
  die "the bundle is damaged or incomplete (the files above do not match SHA256SUMS): copy vision-appliance-*.tar again and unpack it"
version=$(manifest version)
[ -n "$version" ] || die "manifest.json names no version"
# The installer's functions ship in the release; read from the (checked) archive before anything is unpacked.
# shellcheck source=appliance/lib.sh
source <(tar -xOf "$bundle/app.tar" --occurrence=1 ./installer/appliance/lib.sh)
# shellcheck source=lib/host-checks.sh
source <(tar -xOf "$bundle/app.tar" --occurrence=1 ./installer/lib/host-checks.sh)
current_step=
trap 'printf "install.sh: failed at \"%s\" (above); fix that and run install.sh again: it keeps what is done\n" "$current_step" >&2' ERR
step() {
  current_step=$*
  say "==> $*"
}

# A bundle older than the installed release would start on a database its code does not know.
current=$(release_of current)
[ -z "$restore" ] || [ -z "$current" ] ||
  die "--restore: this host runs release $(basename "$current") already; a backup restores only into a new install (vpctl restore refuses a database that holds anything)"
if [ -n "$current" ] && [[ $(manifest lastMigration) < $(manifest_field "$current" lastMigration) ]]; then
  die "this bundle ($version) is older than the running $(basename "$current"), whose database schema is newer: to go back to the previous release, run: vision-appliance rollback"
fi

# ---- host checks: every problem is listed, then the install stops if one of them makes it impossible -------------
problems=0
ok() { printf '  ok    %s\n' "$*"; }
caution() { printf '  warn  %s\n' "$*"; }
problem() {
  printf '  FAIL  %s\n' "$*"
  problems=$((problems + 1))
}
mib_free() {
  local dir=$1
  until [ -d "$dir" ]; do dir=$(dirname "$dir"); done
  df -Pk "$dir" | awk 'NR == 2 { print int($4 / 1024) }'
}
listening() {
  local hex
  hex=$(printf ':%04X' "$1")
  awk -v port="$hex" '$4 == "0A" && substr($2, length($2) - 4) == port { found = 1 } END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
bytes_of() { stat -c %s "$@" | awk '{ total += $1 } END { print int(total / 1048576) }'; }

step "Checking this host"
# shellcheck disable=SC1091
os=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown} ${ID:-} ${ID_LIKE:-}")
case " $os " in
  *" debian "* | *" ubuntu "*) ok "OS: ${os% * *}" ;;
  *) caution "OS: ${os% * *}: made for Debian 12+ and Ubuntu 22.04+; it may work here" ;;
esac
arch=$(manifest arch)
[ "$(host_arch)" = "$arch" ] && ok "CPU architecture: $arch" || problem "CPU architecture: this host is $(uname -m), the bundle is for $arch: build the bundle on an $(host_arch) machine"
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ print $2 }')
if [ -n "$glibc" ] && [ "$(printf '2.28\n%s\n' "$glibc" | sort -V | head -n 1)" = 2.28 ]; then ok "glibc $glibc"; else problem "glibc ${glibc:-not found}: Node 24 needs 2.28 or later (Debian 10+, Ubuntu 20.04+)"; fi
cpus=$(nproc)
[ "$cpus" -ge 4 ] && ok "CPUs: $cpus" || caution "CPUs: $cpus: 4 or more recommended (image ingest and predict use them)"
memory=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
if [ "$memory" -lt 2048 ]; then problem "memory: $memory MiB: at least 2 GiB needed (8 GiB recommended)"
elif [ "$memory" -lt 8192 ]; then caution "memory: $memory MiB: 8 GiB recommended"
else ok "memory: $memory MiB"; fi
data_dir=$(setting DATA_DIR "$DEFAULT_DATA_DIR")
need=$(($(bytes_of "$bundle/app.tar") + 1024))
free_release=$(mib_free "$PREFIX")
[ "$free_release" -ge "$need" ] && ok "disk for the release ($PREFIX): $free_release MiB free" ||
  problem "disk: $free_release MiB free for $PREFIX, the release needs $need MiB: free some space"
free_data=$(mib_free "$data_dir")
[ "$free_data" -ge 20480 ] && ok "disk for data ($data_dir): $free_data MiB free" ||
  caution "disk for data ($data_dir): $free_data MiB free: datasets and models need room, 20 GiB or more recommended"
# A port the running appliance holds is free for this run, which replaces it.
running=$(is_running && echo 1 || true)
app_port=${port:-$(setting PORT 3000)}
if [ -n "$running" ] && [ "$app_port" = "$(setting PORT 3000)" ]; then ok "port $app_port (API): the running appliance's"
elif listening "$app_port"; then problem "port $app_port is in use by another program: stop it, or install with --port N"
else ok "port $app_port (API) free"; fi
if [ -z "$(setting DATABASE_URL)" ]; then
  pg_port=$(setting EMBEDDED_PG_PORT 54329)
  if [ -n "$running" ]; then ok "port $pg_port (embedded PostgreSQL): the running appliance's"
  elif listening "$pg_port"; then problem "port $pg_port (embedded PostgreSQL, loopback) is in use: stop that program or set EMBEDDED_PG_PORT in $ENV_FILE"
  else ok "port $pg_port (embedded PostgreSQL) free"; fi
fi
if uses_systemd; then
  ok "systemd: the control plane runs as the unit $SERVICE"
elif command -v setpriv >/dev/null && command -v setsid >/dev/null; then
  caution "no systemd (a container?): the control plane runs as a background process (pid file $PID_FILE, log $LOG_FILE, rotated at $((LOG_MAX_BYTES / 1048576)) MiB, $LOG_KEEP older ones kept); after a reboot start it with: vision-appliance start"
else
  problem "neither systemd nor setpriv and setsid (util-linux): apt-get install util-linux"
fi
docker_ok=
case $(docker_engine_state) in
  missing) caution "no Docker engine: the control plane does not need one, but deployments and GPU jobs on this host do, and the bundle's images load into it: apt-get install docker.io, then run install.sh again" ;;
  stopped) caution "Docker is installed but its engine does not answer: start it (systemctl start docker) and run install.sh again to load the images" ;;
  running)
    docker_ok=1
    ok "Docker engine $(docker version -f '{{.Server.Version}}' 2>/dev/null)"
    ;;
esac
gpus=$(nvidia_gpu_count)
if [ "$gpus" -gt 0 ]; then
  if driver=$(nvidia_driver); then
    ok "NVIDIA driver ${driver% *}, ${driver#* } GPU(s)"
  else
    caution "$gpus NVIDIA GPU(s) but no working driver (nvidia-smi): install it (Debian: apt-get install nvidia-driver; Ubuntu: ubuntu-drivers install), reboot, run install.sh again"
  fi
  if [ -n "$docker_ok" ]; then
    if nvidia_container_toolkit; then
      ok "NVIDIA container toolkit (nvidia-container-runtime-hook)"
    else
      caution "no NVIDIA container toolkit (nvidia-container-runtime-hook): containers get no GPU. Install nvidia-container-toolkit, then: nvidia-ctk runtime configure --runtime=docker && systemctl restart docker"
    fi
  fi
else
  ok "no NVIDIA GPU on this host"
fi
[ "$problems" -eq 0 ] || die "$problems problem(s) above (FAIL) stop the install; nothing was changed"

# ---- the install ---------------------------------------------------------------------------------------------------
step "Service user $SERVICE_USER and directories"
getent group "$SERVICE_USER" >/dev/null || groupadd --system "$SERVICE_USER"
getent passwd "$SERVICE_USER" >/dev/null ||
  useradd --system --gid "$SERVICE_USER" --home-dir "$data_dir" --no-create-home --shell /usr/sbin/nologin "$SERVICE_USER"
install -d -m 0755 "$PREFIX" "$PREFIX/releases"
install -d -m 0750 "$(dirname "$ENV_FILE")"
install -d -m 0750 -o "$SERVICE_USER" -g "$SERVICE_USER" "$data_dir"

step "Settings ($ENV_FILE)"
settings_before=$(cat "$ENV_FILE" 2>/dev/null || true)
set_setting() {
  awk -v key="$1" -v value="$2" '$0 ~ "^" key "=" { if (!done) print key "=" value; done = 1; next } { print } END { if (!done) print key "=" value }' \
    "$ENV_FILE" >"$ENV_FILE.new"
  mv "$ENV_FILE.new" "$ENV_FILE"
}
umask 077
if [ ! -f "$ENV_FILE" ]; then
  cat >"$ENV_FILE" <<EOF
# Settings of the Vision Platform appliance, read by its service at start: KEY=value, one a line, no quotes.
# Every setting is described in $PREFIX/current/config/example.env. install.sh wrote this file and keeps it on
# re-runs and upgrades; after a change run: vision-appliance restart
PORT=3000
HOST=0.0.0.0
DATA_DIR=$data_dir
EMBEDDED_PG_PORT=54329
NODE_ENV=production
# image decoding in many threads would otherwise keep a malloc arena per thread (README, Memory)
MALLOC_ARENA_MAX=2
# a decoded image's pixels go back to the system when freed (README, Memory)
MALLOC_MMAP_THRESHOLD_=131072
# the control plane's compiled modules, kept between starts so that it starts faster (README, Memory)
NODE_COMPILE_CACHE=$data_dir/.cache/node-compile-cache
# The address clients and worker hosts use (install.sh --public-url); unset: http://<this host's name>:PORT
# PUBLIC_BASE_URL=https://vision.example.internal
EOF
  say "wrote $ENV_FILE"
fi
# Installs from before it was a setting get it on their next upgrade.
[ -n "$(setting MALLOC_MMAP_THRESHOLD_)" ] || set_setting MALLOC_MMAP_THRESHOLD_ 131072
[ -n "$(setting NODE_COMPILE_CACHE)" ] || set_setting NODE_COMPILE_CACHE "$data_dir/.cache/node-compile-cache"
[ -n "$(setting SIGNING_SECRET)" ] || set_setting SIGNING_SECRET "$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')"
[ -z "$port" ] || set_setting PORT "$port"
[ -z "$public_url" ] || set_setting PUBLIC_BASE_URL "$public_url"
chown root:root "$ENV_FILE"
chmod 0600 "$ENV_FILE"
umask 022
if [ -n "$running" ] && [ "$(cat "$ENV_FILE")" != "$settings_before" ]; then
  say "the settings changed: the running control plane stops, to start with them"
  stop_service
fi
(as_service_user test -w "$data_dir") ||
  die "the user $SERVICE_USER cannot write DATA_DIR $data_dir: every directory above it must be searchable by it (chmod o+x)"

release=$PREFIX/releases/$version
step "Release $version ($release)"
app_sha=$(awk '$2 == "app.tar" { print $1 }' "$bundle/SHA256SUMS")
if [ -d "$release" ]; then
  [ "$(cat "$release/.app-sha256" 2>/dev/null)" = "$app_sha" ] ||
    die "release $version is installed with other contents: build the new bundle with another --version"
  say "already unpacked"
else
  partial=$PREFIX/releases/.$version.partial
  rm -rf "$partial"
  mkdir -p "$partial"
  tar -xf "$bundle/app.tar" -C "$partial"
  cp "$bundle/manifest.json" "$partial/bundle-manifest.json"
  echo "$app_sha" >"$partial/.app-sha256"
  mv -T "$partial" "$release"
fi

if [ -n "$docker_ok" ]; then
  step "Docker images"
  # "file" and "id" of each image, as manifest.json lists them.
  awk -F'"' '$2 == "file" && $4 ~ /^images\// { file = $4 } $2 == "id" { print file, $4 }' "$bundle/manifest.json" |
    while read -r file id; do
      if docker image inspect "$id" >/dev/null 2>&1; then say "$file: loaded already"; else docker load -i "$bundle/$file"; fi
    done
fi

step "Service"
ln -sfn "$PREFIX/current/installer/appliance/vision-appliance.sh" /usr/local/sbin/vision-appliance
if uses_systemd; then
  unit=$(
    cat <<EOF
[Unit]
Description=Vision Platform appliance: the control plane and its embedded PostgreSQL
After=network-online.target
Wants=network-online.target

[Service]
User=$SERVICE_USER
Group=$SERVICE_USER
EnvironmentFile=$ENV_FILE
WorkingDirectory=$PREFIX/current
ExecStart=$PREFIX/current/bin/node --max-semi-space-size=4 control-plane/src/main.ts
Restart=on-failure
RestartSec=5
# 78: a setting that cannot work (the log says which); starting again would not help.
RestartPreventExitStatus=78
# SIGTERM to the control plane alone: it drains its requests and stops its PostgreSQL itself.
KillMode=mixed
TimeoutStopSec=$STOP_TIMEOUT_SECONDS
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
EOF
  )
  if [ "$(cat "$UNIT_FILE" 2>/dev/null)" != "$unit" ]; then
    printf '%s\n' "$unit" >"$UNIT_FILE"
    systemctl daemon-reload
  fi
  systemctl enable --quiet "$SERVICE"
fi

if [ -n "$restore" ]; then
  step "Restoring the backup in $restore"
  (as_service_user test -r "$restore/backup.json") || die "the user $SERVICE_USER cannot read $restore: chown -R $SERVICE_USER $restore (or make it readable), then run install.sh again"
  # The old server's backup key becomes this install's: its own backups are made with it too.
  install -m 0600 -o "$SERVICE_USER" "$backup_key" "$data_dir/backup-key"
  (cd "$release" && as_service_user "$release/bin/node" installer/src/vpctl.ts restore "$restore") ||
    die "the restore failed (above): nothing was started; fix what it says and run install.sh --restore again"
fi

step "Starting release $version"
activate "$version"

# The single-machine case: this host runs jobs too. Its agent comes from the bundle like any GPU host's, enrolled with
# a token the operator CLI makes here; once installed (its settings exist), every run of a newer bundle upgrades it.
worker_dist=$(cd "$bundle" && ls worker/vp-worker-*.tar.gz 2>/dev/null | head -n 1)
worker_settings=/etc/vp-worker/config.json
if [ -n "$worker_dist" ] && { [ -n "$gpu_host" ] || [ -f "$worker_settings" ]; }; then
  step "Worker agent on this host"
  agent_args=(--server "$(base_url)" --images "$bundle/images")
  [ -z "$allow_shared" ] || agent_args+=(--allow-shared-process-runtime)
  if ! grep -q '"workerKey"' "$worker_settings" 2>/dev/null; then
    [ -n "$gpu_host" ] || die "this host's worker agent is not enrolled ($worker_settings holds no key): run install.sh --gpu-host NAME"
    token=$(vision-appliance vpctl hosts connect "$gpu_host" 2>/dev/null) ||
      die "vision-appliance vpctl hosts connect $gpu_host failed: is the name taken? (vision-appliance vpctl hosts list)"
    agent_args+=(--token "$token")
  fi
  agent_dir=$(mktemp -d)
  tar -xzf "$bundle/$worker_dist" -C "$agent_dir"
  "$agent_dir"/vp-worker-*/install-worker.sh "${agent_args[@]}" || { rm -rf "$agent_dir"; die "the worker agent's install failed (above)"; }
  rm -rf "$agent_dir"
fi

key_file=$(setting DATA_DIR "$DEFAULT_DATA_DIR")/initial-api-key
say ""
say "The Vision Platform appliance $version is ready at $(base_url)/api (installed in $((SECONDS - started)) s)."
if [ -f "$key_file" ]; then
  say "The first owner's API key is in $key_file (mode 0600): keep it somewhere safe, then delete the file."
else
  say "The first owner's key file was deleted after use; create keys with: vision-appliance vpctl keys create --help"
fi
say "Settings: $ENV_FILE. Logs: $(where_logs). Service: vision-appliance status|start|stop|restart|rollback"
if [ -n "$worker_dist" ]; then
  say ""
  say "GPU hosts (this one: install.sh --gpu-host NAME): copy $bundle/$worker_dist and $bundle/images/ there and, as root:"
  say "  tar -xzf $(basename "$worker_dist") && $(basename "$worker_dist" -linux-x64.tar.gz)/install-worker.sh --server $(base_url) --token TOKEN --images IMAGES_DIR"
  say "with a TOKEN from: vision-appliance vpctl hosts connect HOST_NAME. Hosts enrolled before take the same command"
  say "without --token to upgrade their agent; vision-appliance vpctl hosts list shows which agent each host runs."
fi
