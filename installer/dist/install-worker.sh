#!/usr/bin/env bash
# Installs the worker agent on a GPU host from this unpacked distribution and enrolls the host; run as root:
#   ./install-worker.sh --server URL --token TOKEN [--images DIR] [--runtime docker|process] [--venv DIR] [--share DIR]...
#                       [--no-systemd] [--reenroll] [--allow-shared-process-runtime]
# URL and TOKEN are what `vpctl hosts connect NAME` printed (the token also fixes the host's workspace and region).
# It checks the host, creates the service user, installs the agent as <prefix>/<version> with <prefix>/current pointing
# at it (earlier versions stay, for a rollback), loads the trainer and inference images from DIR, writes the agent's
# settings, enrolls, and enables the systemd unit when systemd runs the machine (else prints how to start the agent).
# Running it again is safe: a host already enrolled with URL whose worker key the control plane still takes is not
# enrolled again (--reenroll: with a new TOKEN, e.g. from `vpctl hosts rotate NAME`); a refused key (the host was
# disconnected, or enrolled again elsewhere) is replaced by enrolling TOKEN, and without a TOKEN it fails saying what to
# run. An identical installed version is kept, and the service is restarted.
# --venv DIR: the trainer's Python environment for the process runtime (installer/trainer/build-trainer-env.sh), saved
# as processVenv: its bin/ comes first on the jobs' PATH. Without one, a process-runtime host cannot train or export.
# --share DIR (repeatable) lets the control plane list and read DIR, read-only, for storage integrations of the local
# provider (sharedFolders; given again, it replaces the list, absent it keeps it).
# --allow-shared-process-runtime lets a process-runtime agent run on a host of the appliance-wide pool (a host connected
# without a workspace), whose jobs are every workspace's: the process runtime cannot keep them apart (one OS user, no
# filesystem or network isolation), so without it such an agent refuses the pool and stops (allowSharedProcessRuntime).
# The agent runs as root with the Docker runtime, else as the system user vp-worker (created). Paths and the user come
# from the environment, so it also installs for an unprivileged user (tests; run `vp-worker run` yourself, --no-systemd):
#   VP_WORKER_PREFIX (/opt/vp-worker)  VP_WORKER_CONFIG (/etc/vp-worker/config.json)  VP_WORKER_WORK_DIR (/var/lib/vp-worker)
#   VP_WORKER_BIN_DIR (/usr/local/bin)  VP_WORKER_SYSTEMD_DIR (/etc/systemd/system)  VP_WORKER_USER (as above; you,
#   when not root)  VP_WORKER_RUNTIME (docker when its engine runs here, else process; --runtime wins)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/host-checks.sh
source "$here/lib/host-checks.sh"
log() { printf '[vp-worker] %s\n' "$*"; }
warn() { printf '[vp-worker] WARNING: %s\n' "$*" >&2; }
fail() { printf '[vp-worker] FAILED: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '2,4p' "$0" | sed 's/^# //'; exit 2; }

server='' token='' images='' venv='' runtime=${VP_WORKER_RUNTIME:-} systemd=yes reenroll=no shares=() allow_shared=no
while [ $# -gt 0 ]; do
  case $1 in
    --server) server=${2:?--server needs a URL}; shift 2 ;;
    --token) token=${2:?--token needs the enrollment token}; shift 2 ;;
    --images) images=${2:?--images needs a directory}; shift 2 ;;
    --runtime) runtime=${2:?--runtime needs docker or process}; shift 2 ;;
    --venv) venv=${2:?--venv needs a directory}; shift 2 ;;
    --share) shares+=("${2:?--share needs a folder}"); shift 2 ;;
    --no-systemd) systemd=no; shift ;;
    --reenroll) reenroll=yes; shift ;;
    --allow-shared-process-runtime) allow_shared=yes; shift ;;
    -h | --help) usage ;;
    *) printf 'unknown argument: %s\n' "$1" >&2; usage ;;
  esac
done
[ -n "$server" ] || usage
server=${server%/}
case $runtime in '' | docker | process) ;; *) fail "--runtime must be docker or process, not '$runtime'" ;; esac
for share in "${shares[@]}"; do
  case $share in /*) ;; *) fail "--share $share: must be an absolute path" ;; esac
  case $share in *,*) fail "--share $share: a folder with a comma in its path cannot be shared" ;; esac
  [ -d "$share" ] || fail "--share $share is not a folder"
done
[ -z "$venv" ] || [ -d "$venv" ] || fail "--venv $venv is not a folder"
[ -z "$venv" ] || venv=$(cd "$venv" && pwd)

version=$(cat "$here/VERSION")
build=$(cat "$here/BUILD")
prefix=${VP_WORKER_PREFIX:-/opt/vp-worker}
config=${VP_WORKER_CONFIG:-/etc/vp-worker/config.json}
work_dir=${VP_WORKER_WORK_DIR:-/var/lib/vp-worker}
bin_dir=${VP_WORKER_BIN_DIR:-/usr/local/bin}
unit_dir=${VP_WORKER_SYSTEMD_DIR:-/etc/systemd/system}
me=$(id -un)
node=$here/bin/node

# Reads and writes the agent's JSON settings with the bundled Node: the file holds the worker key, so mode 0600, and
# it is replaced through a rename, never left half written.
config_get() { "$node" -e 'try { process.stdout.write(String(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[process.argv[2]] ?? "")) } catch {}' "$config" "$1"; }
# Why DIR cannot be the trainer's environment of the process runtime, for its user; nothing when it can.
trainer_venv_problem() {
  local dir=$1 as=(env)
  [ "$(id -u)" != 0 ] || [ "$user" = root ] || as=(runuser -u "$user" --)
  "${as[@]}" test -x "$dir/bin/python" || { echo "$dir/bin/python is missing or not executable for $user: not a Python virtual environment"; return; }
  "${as[@]}" "$dir/bin/python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("ultralytics") is None)' 2>/dev/null ||
    { echo "$dir holds no ultralytics: not the trainer's environment"; return; }
  "${as[@]}" test -x "$dir/bin/vp-probe-exporters" || echo "$dir/bin/vp-probe-exporters is missing: this host would report no export formats"
}
config_set() {
  "$node" -e '
    const fs = require("fs");
    const [file, ...pairs] = process.argv.slice(1);
    const settings = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : {};
    for (const pair of pairs) settings[pair.slice(0, pair.indexOf("="))] = pair.slice(pair.indexOf("=") + 1);
    fs.writeFileSync(`${file}.tmp`, `${JSON.stringify(settings, null, 2)}\n`, { mode: 0o600 });
    fs.chmodSync(`${file}.tmp`, 0o600);
    fs.renameSync(`${file}.tmp`, file);' "$config" "$@" || fail "cannot write $config (is it valid JSON?)"
}

# --- the host ---------------------------------------------------------------------------------------------------
[ "$(uname -s)/$(host_arch)" = Linux/x64 ] || fail "this distribution is for Linux x86_64, not $(uname -s)/$(uname -m)"
if [ "$(id -u)" != 0 ] && [ "${VP_WORKER_USER:-$me}" != "$me" ]; then
  fail "run as root (sudo) to install for $VP_WORKER_USER, or install for yourself: VP_WORKER_PREFIX, VP_WORKER_CONFIG, VP_WORKER_WORK_DIR and VP_WORKER_BIN_DIR in your directories, and --no-systemd"
fi
"$node" --version >/dev/null 2>&1 || fail "the bundled Node 24 does not run here ($("$node" --version 2>&1 | head -1)); it needs glibc 2.28 or newer (Debian 10, Ubuntu 20.04 or later)"
reason=$("$node" -e 'fetch(`${process.argv[1]}/api/health`).then((r) => { if (!r.ok) { console.log(`HTTP ${r.status}`); process.exit(1) } }, (e) => { console.log(e.cause?.message ?? e.message); process.exit(1) })' "$server") ||
  fail "cannot reach the control plane at $server ($reason): check the URL (the one vpctl hosts connect printed) and that this host reaches it"
log "control plane: $server answers"

if [ -z "$runtime" ]; then
  case $(docker_engine_state) in
    missing)
      runtime=process
      warn "no Docker engine: jobs run as plain processes of the agent's user (no images, no isolation, no memory limits). Training then needs the trainer's Python environment (--venv DIR). For containers: apt-get install docker.io, then run this again."
      ;;
    stopped) fail "Docker is installed but its engine does not answer (docker info): start it (systemctl enable --now docker), or pass --runtime process" ;;
    running) runtime=docker ;;
  esac
elif [ "$runtime" = docker ] && [ "$(docker_engine_state)" != running ]; then
  fail "--runtime docker: the Docker engine does not answer (docker info); install docker.io and start it (systemctl enable --now docker)"
fi
log "runtime: $runtime"

gpus=$(nvidia_gpu_count)
if [ "$gpus" -gt 0 ]; then
  if driver=$(nvidia_driver); then
    log "GPUs: ${driver#* } NVIDIA GPU(s), driver ${driver% *}"
  else
    warn "$gpus NVIDIA GPU(s) but no working driver (nvidia-smi failed): install the NVIDIA driver (e.g. apt-get install nvidia-driver) and reboot; until then this host reports no GPUs and gets CPU jobs only"
  fi
  if [ "$runtime" = docker ] && ! nvidia_container_toolkit; then
    warn "no NVIDIA container toolkit (nvidia-container-runtime-hook): containers get no GPU. Install nvidia-container-toolkit, then: nvidia-ctk runtime configure --runtime=docker && systemctl restart docker"
  fi
else
  log "GPUs: none (CPU jobs only)"
fi

# --- the service user --------------------------------------------------------------------------------------------
# The process runtime's agent and jobs run as a system user of their own. The Docker runtime's agent runs as root: the
# Docker socket is as good as root on this host whoever holds it; its jobs' containers run as nobody, and it hands each
# job's work dir to them.
if [ -n "${VP_WORKER_USER:-}" ]; then
  user=$VP_WORKER_USER
elif [ "$(id -u)" != 0 ]; then
  user=$me
elif [ "$runtime" = docker ]; then
  user=root
else
  user=vp-worker
fi
if ! id "$user" >/dev/null 2>&1; then
  useradd --system --home-dir "$work_dir" --no-create-home --shell /usr/sbin/nologin "$user" || fail "cannot create user $user (useradd)"
  log "created system user $user"
fi
if [ "$runtime" = docker ] && [ "$user" != root ] && ! id -nG "$user" | tr ' ' '\n' | grep -qx docker; then
  usermod -aG docker "$user" || fail "cannot add $user to the docker group (usermod)"
  log "added $user to the docker group (it reaches /var/run/docker.sock)"
fi

# --- the files ---------------------------------------------------------------------------------------------------
target=$prefix/$version
mkdir -p "$prefix" "$bin_dir" || fail "cannot create $prefix and $bin_dir: run as root, or set VP_WORKER_PREFIX and VP_WORKER_BIN_DIR"
if [ "$(cat "$target/BUILD" 2>/dev/null)" = "$build" ]; then
  log "installed: $target (build $build, unchanged)"
else
  rm -rf "$target.new" "$target.old"
  cp -a "$here/." "$target.new"
  [ ! -e "$target" ] || mv "$target" "$target.old"
  mv "$target.new" "$target"
  rm -rf "$target.old"
  log "installed: $target (build $build)"
fi
ln -sfn "$version" "$prefix/current.new" && mv -T "$prefix/current.new" "$prefix/current"
ln -sfn "$prefix/current/bin/vp-worker" "$bin_dir/vp-worker"
install -d -m 0700 -o "$user" "$(dirname "$config")" || fail "cannot create $(dirname "$config"): run as root, or set VP_WORKER_CONFIG"
install -d -m 0750 -o "$user" "$work_dir" || fail "cannot create $work_dir: run as root, or set VP_WORKER_WORK_DIR"

# --- images ------------------------------------------------------------------------------------------------------
settings=("runtime=$runtime" "workDir=$work_dir")
if [ -n "$images" ]; then
  [ -d "$images" ] || fail "--images $images is not a directory"
  [ -f "$images/vp-trainer.tar" ] || [ -f "$images/vp-inference.tar" ] || fail "--images $images holds neither vp-trainer.tar nor vp-inference.tar"
  if [ "$runtime" != docker ]; then
    warn "--images skipped: the process runtime runs no images"
  else
    for kind in trainer inference; do
      file=$images/vp-$kind.tar
      [ -f "$file" ] || continue
      loaded=$(docker load -i "$file") || fail "docker load -i $file failed (above): is the file complete? Compare its checksum with the bundle's"
      # The agent is pinned to the content-hash tag rather than :latest.
      tags=$(sed -n 's/^Loaded image: //p' <<<"$loaded")
      tag=$(grep -v ':latest$' <<<"$tags" | head -1 || true)
      tag=${tag:-$(head -1 <<<"$tags")}
      [ -n "$tag" ] || fail "$file holds no tagged image"
      settings+=("${kind}Image=$tag")
      log "image: $tag"
    done
  fi
fi
if [ ${#shares[@]} -gt 0 ]; then
  settings+=("sharedFolders=$(IFS=,; echo "${shares[*]}")")
  log "shared folders (read-only): ${shares[*]}"
  if [ "$(id -u)" = 0 ] && [ "$user" != root ]; then
    for share in "${shares[@]}"; do
      runuser -u "$user" -- test -r "$share" -a -x "$share" || warn "$user cannot read $share: the control plane will be refused until it can (chgrp/chmod, or an ACL)"
    done
  fi
fi
if [ "$runtime" != process ]; then
  [ -z "$venv" ] || warn "--venv skipped: the $runtime runtime runs the trainer image"
else
  venv=${venv:-$(config_get processVenv)}
  if [ -z "$venv" ]; then
    warn "no trainer environment (--venv DIR): training and export jobs fail here until you run this again with --venv DIR (the trainer's Python environment: installer/trainer/build-trainer-env.sh); deployments still run"
  elif problem=$(trainer_venv_problem "$venv") && [ -n "$problem" ]; then
    fail "the trainer environment $venv (--venv): $problem (installer/trainer/build-trainer-env.sh builds it)"
  else
    settings+=("processVenv=$venv")
    log "trainer environment: $venv"
  fi
fi
if [ "$allow_shared" = yes ]; then
  settings+=("allowSharedProcessRuntime=true")
  [ "$runtime" = docker ] || warn "--allow-shared-process-runtime: if this host is in the appliance-wide pool, every workspace's jobs run here as one user, able to read one another's files"
fi
config_set "${settings[@]}"
if [ "$runtime" = docker ]; then
  [ -n "$(config_get trainerImage)" ] || warn "no trainer image: training and export jobs cannot run here until you run this again with --images DIR (vp-trainer.tar from the offline bundle)"
  inference_image=$(config_get inferenceImage)
  docker image inspect "${inference_image:-vp-inference:latest}" >/dev/null 2>&1 || warn "no inference image (${inference_image:-vp-inference:latest}): no deployments are placed here until you run this again with --images DIR (vp-inference.tar)"
fi

# --- enrollment --------------------------------------------------------------------------------------------------
# A key stored for this server is kept while the control plane takes it (asked without connecting as the agent); a
# refused one is replaced by enrolling the token.
enroll=yes
if [ "$reenroll" = no ] && [ "$(config_get server)" = "$server" ] && [ -n "$(config_get workerKey)" ]; then
  name=$(config_get hostName)
  verdict=0
  answer=$("$target/bin/vp-worker" check --config "$config" 2>&1) || verdict=$?
  if [ "$verdict" = 3 ]; then
    [ -n "$token" ] ||
      fail "$server refuses the worker key in $config (host ${name:-NAME}: disconnected, or enrolled again elsewhere). On the appliance run vpctl hosts rotate ${name:-NAME} (or vpctl hosts connect ${name:-NAME} [--workspace W] when vpctl hosts list no longer lists it), then run this again with the --token it prints"
    log "$server refuses the worker key in $config (host ${name:-NAME}): enrolling with the token"
  else
    [ "$verdict" = 0 ] || warn "the worker key could not be checked, so it is kept: ${answer#vp-worker: }"
    enroll=no
    log "enrolled: already, as host $name${token:+ (the token was not used: --reenroll to enroll with it instead)}"
  fi
fi
if [ "$enroll" = yes ]; then
  [ -n "$token" ] || fail "--token is needed to enroll: run vpctl hosts connect NAME (or vpctl hosts rotate NAME) on the appliance"
  "$target/bin/vp-worker" enroll --server "$server" --token "$token" --config "$config" ||
    fail "enrollment refused (above). A token is single use and lasts 10 minutes: get a new one with vpctl hosts rotate NAME"
fi
chown "$user" "$config"
chmod 0600 "$config"

# --- the service -------------------------------------------------------------------------------------------------
run_command="$bin_dir/vp-worker run --config $config"
if [ "$systemd" = yes ] && [ -d /run/systemd/system ]; then
  sed -e "s|@USER@|$user|" -e "s|@PREFIX@|$prefix|" -e "s|@CONFIG@|$config|" "$target/vp-worker.service" >"$unit_dir/vp-worker.service.new"
  mv "$unit_dir/vp-worker.service.new" "$unit_dir/vp-worker.service"
  systemctl daemon-reload
  systemctl enable --quiet vp-worker.service
  systemctl restart vp-worker.service
  sleep 3
  systemctl is-active --quiet vp-worker.service ||
    fail "vp-worker.service did not stay up: journalctl -u vp-worker -n 50 says why"
  log "service: vp-worker.service enabled and running (journalctl -u vp-worker -f to follow it)"
else
  [ "$systemd" = no ] || warn "systemd does not run this machine: no service was installed"
  if [ "$user" = "$me" ]; then log "start the agent (restart it after an upgrade): $run_command"; else log "start the agent (restart it after an upgrade): sudo -u $user $run_command"; fi
fi
log "done: vp-worker $version on $server"
