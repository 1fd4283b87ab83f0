#!/bin/sh
# `vp-worker` of the worker distribution: the Node 24 beside it runs the agent's TypeScript sources (no npm, no
# checkout). Found through any symlink to it (/usr/local/bin/vp-worker → /opt/vp-worker/current/bin/vp-worker).
dist=$(dirname "$(dirname "$(readlink -f "$0")")")
exec "$dist/bin/node" "$dist/worker-agent/src/main.ts" "$@"
