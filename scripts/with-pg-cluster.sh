#!/usr/bin/env bash
# Runs a command against a throwaway PostgreSQL cluster: one in a temporary directory, on a free
# loopback port, its address in TEST_DATABASE_URL, stopped by its pid when the command ends, pass
# or fail. Builds first when the sources changed (the command may start the built server).
#   scripts/with-pg-cluster.sh node scripts/run-tests.mjs test test/pg
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
TEST_DATABASE_URL=$url "$@"
