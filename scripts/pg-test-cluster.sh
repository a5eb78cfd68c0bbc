#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the test suite: initdb into a temporary directory, listening
# on 127.0.0.1 only, on its own port, fsync off. Prints the DATABASE_URL to use.
#   scripts/pg-test-cluster.sh start DIR PORT   -> prints postgres://shiplog@127.0.0.1:PORT/shiplog
#   scripts/pg-test-cluster.sh stop DIR         -> stops the server by the pid in DIR/data/postmaster.pid
set -euo pipefail

bindir() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/initdb" ]; then echo "$d"; return; fi
  done
  echo "PostgreSQL server binaries not found: apt-get install -y postgresql" >&2
  exit 1
}

# The server refuses to run as root; run it as the postgres user then.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cmd=${1:-}
dir=${2:?usage: $0 start|stop DIR [PORT]}
case "$cmd" in
  start)
    port=${3:?usage: $0 start DIR PORT}
    bin=$(bindir)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    as_owner "$bin/initdb" -D "$dir/data" -U shiplog --auth=trust --encoding=UTF8 --locale=C >"$dir/initdb.log" 2>&1
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" start >/dev/null
    as_owner "$bin/createdb" -h 127.0.0.1 -p "$port" -U shiplog shiplog
    echo "postgres://shiplog@127.0.0.1:$port/shiplog"
    ;;
  stop)
    pidfile="$dir/data/postmaster.pid"
    if [ -f "$pidfile" ]; then
      pid=$(head -n 1 "$pidfile")
      kill -INT "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
    ;;
  *)
    echo "usage: $0 start DIR PORT | stop DIR" >&2
    exit 2
    ;;
esac
