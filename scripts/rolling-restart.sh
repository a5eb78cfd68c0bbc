#!/usr/bin/env bash
# The rolling-restart test (test/rolling-restart.ts): HAProxy and three instances on a throwaway
# PostgreSQL cluster in a temporary directory, on a free loopback port, stopped by its pid when the
# run ends, pass or fail. Needs Debian's haproxy and postgresql packages.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
cleanup() {
  scripts/pg-test-cluster.sh stop "$dir" || true
  rm -rf "$dir"
}
trap cleanup EXIT
url=$(scripts/pg-test-cluster.sh start "$dir" "$port")
echo "PostgreSQL test cluster: $url"
node scripts/build-if-changed.mjs
TEST_DATABASE_URL=$url node --import tsx test/rolling-restart.ts
