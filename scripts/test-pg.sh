#!/usr/bin/env bash
# Runs the whole test suite on PostgreSQL, plus the tests that only make sense there (test/pg/):
# a throwaway cluster in a temporary directory, on a free loopback port, stopped by its pid when
# the tests end, pass or fail.
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
TEST_DATABASE_URL=$url node scripts/run-tests.mjs test test/pg
