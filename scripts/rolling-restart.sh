#!/usr/bin/env bash
# The rolling-restart test (test/rolling-restart.ts): HAProxy and three instances on a throwaway
# PostgreSQL cluster (scripts/with-pg-cluster.sh). Needs Debian's haproxy and postgresql packages.
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/with-pg-cluster.sh node --import tsx test/rolling-restart.ts
