#!/bin/sh
# `vp-worker` of the worker distribution: the Node 24 beside it runs the agent's TypeScript sources (no npm, no
# checkout). Found through any symlink to it (/usr/local/bin/vp-worker → /opt/vp-worker/current/bin/vp-worker).
# The agent reports the distribution's VERSION (the appliance release it came with) to the control plane.
dist=$(dirname "$(dirname "$(readlink -f "$0")")")
if [ -f "$dist/VERSION" ]; then
  VP_AGENT_VERSION=$(cat "$dist/VERSION")
  export VP_AGENT_VERSION
fi
exec "$dist/bin/node" "$dist/worker-agent/src/main.ts" "$@"
