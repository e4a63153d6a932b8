#!/usr/bin/env bash
# Idempotent: installs Debian's postgresql if missing, starts a private cluster on 127.0.0.1,
# creates a database, and prints its connection URL on stdout (everything else goes to stderr).
#   export RELAY_TEST_POSTGRES_URL="$(scripts/ci/postgres.sh)"
# Env: RELAY_PG_DIR (default /tmp/relay-pg), RELAY_PG_PORT (default 54329), RELAY_PG_DB (relay_test).
set -euo pipefail
DIR="${RELAY_PG_DIR:-/tmp/relay-pg}"
PORT="${RELAY_PG_PORT:-54329}"
DB="${RELAY_PG_DB:-relay_test}"
USER_NAME="relay"
PASSWORD="relay"

log() { echo "postgres.sh: $*" >&2; }

find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && { echo "$d"; return 0; }
  done
  return 1
}

BIN="$(find_bin || true)"
if [ -z "$BIN" ]; then
  log "installing postgresql (apt-get)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  BIN="$(find_bin)"
fi

# initdb/postgres refuse to run as root: use the postgres system user then.
RUN=()
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home "$DIR" postgres
  RUN=(runuser -u postgres --)
fi
mkdir -p "$DIR"
[ "$(id -u)" -eq 0 ] && chown postgres "$DIR"

if [ ! -f "$DIR/data/PG_VERSION" ]; then
  log "initdb in $DIR/data"
  PWFILE="$DIR/pw"; echo "$PASSWORD" > "$PWFILE"; [ "$(id -u)" -eq 0 ] && chown postgres "$PWFILE"
  "${RUN[@]}" "$BIN/initdb" -D "$DIR/data" -U "$USER_NAME" --pwfile="$PWFILE" -A scram-sha-256 >&2
  rm -f "$PWFILE"
fi

if ! "${RUN[@]}" "$BIN/pg_ctl" -D "$DIR/data" status >/dev/null 2>&1; then
  log "starting on 127.0.0.1:$PORT"
  "${RUN[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -w -o "-h 127.0.0.1 -p $PORT -k $DIR" start >&2
fi

export PGPASSWORD="$PASSWORD"
if ! "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" -d postgres -tAc "select 1 from pg_database where datname='$DB'" | grep -q 1; then
  log "creating database $DB"
  "$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" "$DB" >&2
fi
echo "postgres://$USER_NAME:$PASSWORD@127.0.0.1:$PORT/$DB"
