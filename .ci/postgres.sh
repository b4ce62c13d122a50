#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the session tests (tests read MEDHX_TEST_POSTGRES_URL).
#   bash .ci/postgres.sh          # install if missing, init + start on 127.0.0.1:18550, create db medhx;
#                                 # prints the URL as the last line of stdout
#   bash .ci/postgres.sh stop     # stop it and remove its data dir
# Env: MEDHX_PG_PORT (18550), MEDHX_PG_DIR (/tmp/medhx-pg-$MEDHX_PG_PORT).
set -euo pipefail
PORT=${MEDHX_PG_PORT:-18550}
DIR=${MEDHX_PG_DIR:-/tmp/medhx-pg-$PORT}
URL="postgresql://postgres@127.0.0.1:$PORT/medhx"

find_bin() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [[ -n "$found" && -x "$found/pg_ctl" ]]; then echo "$found"; return; fi
  if command -v pg_ctl >/dev/null 2>&1; then dirname "$(readlink -f "$(command -v pg_ctl)")"; fi
}

BIN=$(find_bin)
if [[ -z "$BIN" ]]; then
  echo "postgres.sh: installing postgresql" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  BIN=$(find_bin)
fi
[[ -n "$BIN" ]] || { echo "postgres.sh: pg_ctl not found after install" >&2; exit 1; }

# initdb refuses to run as root: run the server as the postgres user then.
as_pg() {
  if [[ $(id -u) -eq 0 ]]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

if [[ "${1:-}" == "stop" ]]; then
  if [[ -f "$DIR/PG_VERSION" ]]; then as_pg "$BIN/pg_ctl" -D "$DIR" -m immediate stop >&2 || true; fi
  rm -rf "$DIR"
  exit 0
fi

if [[ ! -f "$DIR/PG_VERSION" ]]; then
  mkdir -p "$DIR"
  [[ $(id -u) -eq 0 ]] && { id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres; chown postgres "$DIR"; }
  chmod 700 "$DIR"
  as_pg "$BIN/initdb" -D "$DIR" -U postgres --auth=trust --encoding=UTF8 >&2
fi
if ! as_pg "$BIN/pg_ctl" -D "$DIR" status >/dev/null 2>&1; then
  # Socket in the data dir: /var/run/postgresql may not exist or belong to another cluster.
  as_pg "$BIN/pg_ctl" -D "$DIR" -l "$DIR/server.log" -w -t 60 \
    -o "-h 127.0.0.1 -p $PORT -k $DIR -c fsync=off -c max_connections=50" start >&2
fi
if ! as_pg "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='medhx'" | grep -q 1; then
  as_pg "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U postgres medhx
fi
echo "$URL"
