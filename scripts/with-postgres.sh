#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL server on 127.0.0.1 and
# RIPCORD_TEST_POSTGRES pointing at it; installs PostgreSQL from Debian's
# packages first when it is missing (needs root, as on CI). The server is
# stopped and its data removed when the command ends.
#
# For tests the server does not flush to disk (fsync, synchronous_commit
# and full_page_writes off): faster, and a test never survives a power cut.
# Benchmarks that claim durable figures set WITH_POSTGRES_DURABLE=1 for a
# server with PostgreSQL's durable defaults.
set -euo pipefail

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

if [ -z "$(pg_bin)" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "with-postgres: PostgreSQL is not installed; run as root or: sudo apt-get install -y postgresql" >&2
    exit 1
  fi
  echo "with-postgres: installing PostgreSQL (Debian package)..." >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
BIN=$(pg_bin)

DIR=$(mktemp -d /tmp/ripcord-pg.XXXXXX)
RUN=()
if [ "$(id -u)" = 0 ]; then
  chown postgres "$DIR"
  RUN=(runuser -u postgres --)
fi
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 55432)

stop() {
  "${RUN[@]}" "$BIN/pg_ctl" -D "$DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$DIR"
}
trap stop EXIT

"${RUN[@]}" "$BIN/initdb" --auth=trust --no-sync -U postgres -D "$DIR/data" >/dev/null
OPTS="-c listen_addresses=127.0.0.1 -p $PORT -k $DIR -c max_connections=400"
MODE="durable"
if [ "${WITH_POSTGRES_DURABLE:-}" != 1 ]; then
  OPTS="$OPTS -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  MODE="not durable: fsync off, for tests"
fi
"${RUN[@]}" "$BIN/pg_ctl" -D "$DIR/data" -w -l "$DIR/log" -o "$OPTS" start >/dev/null
echo "with-postgres: PostgreSQL $("$BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PORT ($MODE)" >&2

export RIPCORD_TEST_POSTGRES="postgres://postgres@127.0.0.1:$PORT/postgres?sslmode=disable"
"$@"
