#!/usr/bin/env bash
# vision-appliance: the installed appliance's service command (install.sh links it as /usr/local/sbin/vision-appliance).
#   vision-appliance status              the release, whether it runs and is ready, the base URL
#   vision-appliance start|stop|restart  the control plane and its embedded PostgreSQL
#   vision-appliance rollback            back to the release an upgrade replaced (the database migrated down first)
#   vision-appliance vpctl ARGS...       the operator CLI as the service user, with the appliance's settings
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"

usage() { sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; }

[ $# -gt 0 ] || { usage; exit 2; }
[ "$(id -u)" = 0 ] || fail "run it as root"
[ -n "$(release_of current)" ] || fail "no release is installed under $PREFIX: run install.sh from a bundle"
command=$1
shift
case $command in
  status)
    current=$(release_of current)
    previous=$(release_of previous)
    say "release:  $(basename "$current")${previous:+ (previous: $(basename "$previous"))}"
    say "service:  $(uses_systemd && echo "systemd unit $SERVICE" || echo "background process, pid file $PID_FILE")"
    if ! is_running; then
      say "state:    stopped"
      exit 3
    fi
    if is_ready "$current"; then
      say "state:    running, ready at $(base_url)"
    else
      say "state:    running, not ready (log: $(where_logs))"
      exit 1
    fi
    ;;
  start)
    start_service
    wait_ready "$(release_of current)" || exit 1
    say "ready at $(base_url)"
    ;;
  stop) stop_service ;;
  restart)
    stop_service
    start_service
    wait_ready "$(release_of current)" || exit 1
    say "ready at $(base_url)"
    ;;
  rollback) rollback ;;
  vpctl)
    current=$(release_of current)
    cd "$current"
    as_service_user "$current/bin/node" installer/src/vpctl.ts "$@"
    ;;
  -h | --help | help) usage ;;
  *)
    usage >&2
    exit 2
    ;;
esac
