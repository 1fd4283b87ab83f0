# shellcheck shell=bash
# Shared by install.sh and the vision-appliance command (sourced): where an installed appliance lives, its settings,
# how its control plane is started and stopped, and how one release replaces another.
#
# The control plane runs as the user vision with its embedded PostgreSQL (one process tree, the database under
# DATA_DIR): as a systemd unit when systemd runs this host, else (a container, CI) as a background process started
# with setsid, with a pid file and a log file kept within a size (rotating_log). Not compose: no registry can be
# reached for a PostgreSQL image, and the embedded database needs none.

PREFIX=/opt/vision-appliance
ENV_FILE=/etc/vision-appliance/appliance.env
SERVICE=vision-appliance
SERVICE_USER=vision
UNIT_FILE=/etc/systemd/system/$SERVICE.service
PID_FILE=/run/vision-appliance/control-plane.pid
LOG_FILE=/var/log/vision-appliance/control-plane.log
# LOG_FILE stays within LOG_MAX_BYTES; older output is in LOG_FILE.1 (the newest) to LOG_FILE.$LOG_KEEP.
LOG_MAX_BYTES=$((16 * 1024 * 1024))
LOG_KEEP=3
DEFAULT_DATA_DIR=/var/lib/vision-appliance
READY_TIMEOUT_SECONDS=${VP_READY_TIMEOUT_SECONDS:-300}
STOP_TIMEOUT_SECONDS=90

say() { printf '%s\n' "$*"; }
warn() { printf 'warning: %s\n' "$*" >&2; }
fail() {
  printf 'error: %s\n' "$*" >&2
  exit 1
}

# A setting from appliance.env (KEY=value lines; the last one wins), else the default $2.
setting() {
  local value
  value=$(sed -n "s/^$1=//p" "$ENV_FILE" 2>/dev/null | tail -n 1)
  printf '%s' "${value:-${2:-}}"
}

uses_systemd() { [ -d /run/systemd/system ]; }

# The release a link of $PREFIX (current, previous) points at, as a path; empty when there is none.
release_of() { readlink -e "$PREFIX/$1" 2>/dev/null || true; }

# A top-level field of the manifest.json a release was installed from.
manifest_field() { "$1/bin/node" -p 'JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"))[process.argv[2]]' "$1/bundle-manifest.json" "$2"; }

# Points the link $PREFIX/$1 at the release directory $2 (atomically: a new link renamed over the old one).
point() {
  ln -sfn "releases/$(basename "$2")" "$PREFIX/.$1.new"
  mv -T "$PREFIX/.$1.new" "$PREFIX/$1"
}

# Runs "$@" as the service user with appliance.env's settings and nothing else of this shell's environment. Its
# KEY=value lines are taken literally, as systemd's EnvironmentFile takes unquoted values. Replaces the calling
# (sub)shell: `( as_service_user cmd )` for a command to wait for.
as_service_user() {
  local env=(PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 "HOME=$(setting DATA_DIR "$DEFAULT_DATA_DIR")") line
  while IFS= read -r line; do
    [[ $line =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] && env+=("$line")
  done <"$ENV_FILE"
  exec setpriv --reuid="$SERVICE_USER" --regid="$SERVICE_USER" --init-groups env -i "${env[@]}" "$@"
}

# The background control plane's pid, if it runs (a pid reused by another program does not count).
background_pid() {
  local pid
  pid=$(cat "$PID_FILE" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] && grep -qa 'control-plane/src/main.ts' "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

is_running() {
  if uses_systemd; then systemctl is-active --quiet "$SERVICE"; else background_pid >/dev/null; fi
}

start_service() {
  if uses_systemd; then
    systemctl start "$SERVICE"
    return
  fi
  background_pid >/dev/null && return 0
  local release
  release=$(release_of current)
  mkdir -p "$(dirname "$PID_FILE")" "$(dirname "$LOG_FILE")"
  # setsid: a session of its own, so it outlives this shell; exec all the way down, so $! is node's own pid. Its output
  # goes through a process substitution, not a pipe (`a | b &` would make $! the pid of b), to rotating_log.
  (cd "$release" && as_service_user setsid "$release/bin/node" --max-semi-space-size=4 "$release/control-plane/src/main.ts") </dev/null > >(rotating_log "$release") 2>&1 &
  echo $! >"$PID_FILE"
}

# Appends its input to LOG_FILE, rotated at LOG_MAX_BYTES while the control plane runs, for months maybe (the release
# $1's installer/appliance/rotating-log.ts says how). It runs as root, who owns the log, in a session of its own like
# the control plane (a Ctrl-C or a closed terminal of the shell that started it would otherwise end it), and ends when
# the control plane's output does; what it says itself (it cannot start) is appended to LOG_FILE.
rotating_log() {
  # shellcheck disable=SC2094 # LOG_FILE is an argument here, not read
  exec setsid "$1/bin/node" "$1/installer/appliance/rotating-log.ts" "$LOG_FILE" "$LOG_MAX_BYTES" "$LOG_KEEP" >/dev/null 2>>"$LOG_FILE"
}

stop_service() {
  if uses_systemd; then
    systemctl stop "$SERVICE"
    return
  fi
  local pid waited=0
  pid=$(background_pid) || { rm -f "$PID_FILE"; return 0; }
  # SIGTERM: it drains requests, then stops its PostgreSQL; past the timeout its whole process group is killed.
  kill -TERM "$pid"
  while background_pid >/dev/null && [ $waited -lt $((STOP_TIMEOUT_SECONDS * 10)) ]; do
    sleep 0.1
    waited=$((waited + 1))
  done
  if background_pid >/dev/null; then
    warn "the control plane did not stop within ${STOP_TIMEOUT_SECONDS}s: killed"
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$PID_FILE"
}

service_log_tail() {
  if uses_systemd; then journalctl -u "$SERVICE" -n 30 --no-pager >&2 || true; else tail -n 30 "$LOG_FILE" >&2 || true; fi
}

where_logs() { if uses_systemd; then echo "journalctl -u $SERVICE"; else echo "$LOG_FILE"; fi; }

# The address clients use: PUBLIC_BASE_URL, else HOST:PORT with this host's name for a HOST that listens everywhere
# (what the control plane itself assumes).
base_url() {
  local host port
  host=$(setting HOST 0.0.0.0)
  port=$(setting PORT 3000)
  case $host in 0.0.0.0 | :: | '[::]') host=$(uname -n) ;; esac
  setting PUBLIC_BASE_URL "http://$host:$port"
}

ready_url() {
  local host
  host=$(setting HOST 0.0.0.0)
  case $host in 0.0.0.0) host=127.0.0.1 ;; :: | '[::]') host='[::1]' ;; *:*) host="[$host]" ;; esac
  echo "http://$host:$(setting PORT 3000)/api/ready"
}

# Whether /api/ready answers 200, asked by the release $1's own node (curl may not be installed).
is_ready() { "$1/bin/node" -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$(ready_url)"; }

# Waits until the release $1 is ready; fails, showing the end of the log, when it stops or is not ready in time.
wait_ready() {
  local deadline=$((SECONDS + READY_TIMEOUT_SECONDS))
  until is_ready "$1"; do
    if ! is_running || [ $SECONDS -ge $deadline ]; then
      warn "$(ready_url) did not answer (the control plane $(is_running && echo "is not ready after ${READY_TIMEOUT_SECONDS}s" || echo stopped)); the end of its log:"
      service_log_tail
      return 1
    fi
    sleep 0.2
  done
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }
seconds_since() { local ms=$(($(now_ms) - $1)); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }

# Makes releases/$1 the one that runs. First install: start it. Re-run: make sure it runs. Upgrade: stop the running
# release, start this one (its migrations run at start, under their advisory lock), keep the old one as `previous`,
# and say how long no API was ready; should the new one not get ready, the old one is started again.
activate() {
  local new=$PREFIX/releases/$1 old began
  old=$(release_of current)
  if [ "$old" = "$new" ]; then
    start_service
    wait_ready "$new" || fail "release $1 does not get ready (log above); fix what it says and run install.sh again"
    return
  fi
  began=$(now_ms)
  [ -n "$old" ] && stop_service
  point current "$new"
  start_service
  if ! wait_ready "$new"; then
    [ -n "$old" ] || fail "release $1 does not get ready (log above); fix what it says and run install.sh again"
    stop_service
    point current "$old"
    start_service
    wait_ready "$old" || true
    fail "release $1 did not get ready (log above), so $(basename "$old") runs again; its database was left as it was (migrations run in one transaction)"
  fi
  if [ -n "$old" ]; then
    point previous "$old"
    say "upgraded $(basename "$old") -> $1: downtime $(seconds_since "$began") s (no ready API from stopping the old release to the new one's ready)"
    prune_releases
  fi
}

# Releases other than the current and the previous one are removed.
prune_releases() {
  local keep=("$(release_of current)" "$(release_of previous)") dir
  for dir in "$PREFIX"/releases/*/; do
    dir=${dir%/}
    [ "$dir" = "${keep[0]}" ] || [ "$dir" = "${keep[1]}" ] || rm -rf "$dir"
  done
}

# Back to the previous release: the running (newer) release's migrator migrates the database down to the previous
# release's last migration, then `current` points at the previous release again and it starts.
rollback() {
  local cur prev target began
  cur=$(release_of current)
  prev=$(release_of previous)
  [ -n "$prev" ] || fail "no previous release to go back to (an upgrade keeps one)"
  [ "$prev" != "$cur" ] || fail "the previous release is the current one: nothing to go back to"
  target=$(manifest_field "$prev" lastMigration)
  say "rolling back $(basename "$cur") -> $(basename "$prev"); the database goes back to $target"
  began=$(now_ms)
  stop_service
  if ! (cd "$cur" && as_service_user "$cur/bin/node" installer/src/vpctl.ts migrate --down-to "$target"); then
    start_service
    fail "the database could not be migrated down to $target (above); $(basename "$cur") was started again"
  fi
  point current "$prev"
  point previous "$cur"
  start_service
  wait_ready "$prev" || fail "release $(basename "$prev") does not get ready (log above)"
  say "rolled back to $(basename "$prev"): downtime $(seconds_since "$began") s"
}
