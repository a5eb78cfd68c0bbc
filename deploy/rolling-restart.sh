#!/usr/bin/env bash
# Restarts the Shiplog instances one at a time (after an upgrade of /opt/shiplog, say): each is
# stopped (SIGTERM: it drains, see README "Several instances behind HAProxy"), started, and waited
# for until it is ready and HAProxy has had time to put it back (two checks, 500 ms apart), before
# the next. Stops at the first instance that does not become ready within a minute.
#   deploy/rolling-restart.sh 3001 3002 3003
set -euo pipefail
[ "$#" -gt 0 ] || set -- 3001 3002 3003
for port in "$@"; do
  echo "restarting shiplog@$port"
  systemctl restart "shiplog@$port"
  ready=
  for _ in $(seq 1 120); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$port/health/ready"; then ready=1; break; fi
    sleep 0.5
  done
  if [ -z "$ready" ]; then
    echo "shiplog@$port is not ready after a minute: stopping here" >&2
    exit 1
  fi
  sleep 2
done
