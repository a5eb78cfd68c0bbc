#!/usr/bin/env bash
# Runs the whole test suite on PostgreSQL, plus the tests that only make sense there (test/pg/),
# on a throwaway cluster (scripts/with-pg-cluster.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/with-pg-cluster.sh node scripts/run-tests.mjs test test/pg
