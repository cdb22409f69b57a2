#!/usr/bin/env bash
# Make a PostgreSQL server answer for Recursor's tests; print its SQLAlchemy URL.
#
#   scripts/postgres.sh [start]   install, initialize and start (idempotent); print the URL
#   scripts/postgres.sh url       print the URL only
#   scripts/postgres.sh stop      stop the private server (fast shutdown)
#   scripts/postgres.sh restart   stop then start it (the database-restart test uses this)
#
# RECURSOR_PG_PORT (55432) and RECURSOR_PG_HOME give a second private cluster: the
# database-restart test runs its own on another port, so that restarting it disturbs no
# other test that uses the shared one.
#
# When RECURSOR_TEST_POSTGRES_URL is unset or names Recursor's own server, install Debian's
# `postgresql` package if missing and run a private cluster in $RECURSOR_PG_HOME
# (/var/lib/recursor-postgres), owned by the `postgres` user, listening on 127.0.0.1:55432 and
# a unix socket in $RECURSOR_PG_HOME/run only, with trust authentication for those local
# connections (a test server: never expose it). It holds a role and a database `recursor`;
# the role may create databases, since each test gets a fresh one. Any other URL (an existing
# server) is only checked, never touched.
set -euo pipefail
PORT="${RECURSOR_PG_PORT:-55432}"
HOME_DIR="${RECURSOR_PG_HOME:-/var/lib/recursor-postgres}"
DATA="$HOME_DIR/data"
SOCKETS="$HOME_DIR/run"
LOG="$HOME_DIR/server.log"
OURS="postgresql+psycopg://recursor@127.0.0.1:$PORT/recursor"
url="${RECURSOR_TEST_POSTGRES_URL:-$OURS}"
action="${1:-start}"

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
as_postgres() {  # run a command as the cluster's owner
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi
}

bindir() {  # the newest installed server's bin directory
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$dir" ] && [ -x "$dir/pg_ctl" ] && echo "$dir"
}

answers() {  # does our server accept connections?
  local bin
  bin=$(bindir) || return 1
  "$bin/pg_isready" -q -h 127.0.0.1 -p "$PORT" -t 2
}

install_server() {
  bindir >/dev/null && return 0
  echo "installing Debian packages: postgresql" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq postgresql >/dev/null
}

init_cluster() {
  as_postgres test -f "$DATA/PG_VERSION" && return 0
  local bin
  bin=$(bindir)
  $sudo mkdir -p "$HOME_DIR" "$SOCKETS"
  $sudo chown postgres:postgres "$HOME_DIR" "$SOCKETS"
  $sudo chmod 700 "$HOME_DIR"
  as_postgres "$bin/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 \
    --locale=C.UTF-8 >/dev/null
  as_postgres tee -a "$DATA/postgresql.conf" >/dev/null <<CONF
# Written by Recursor's scripts/postgres.sh: a private test server, local connections only.
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$SOCKETS'
max_connections = 200
CONF
  as_postgres tee "$DATA/pg_hba.conf" >/dev/null <<'HBA'
# Written by Recursor's scripts/postgres.sh: trust only the unix socket and loopback.
local all all              trust
host  all all 127.0.0.1/32 trust
HBA
}

start_server() {
  answers && return 0
  local bin
  bin=$(bindir)
  $sudo mkdir -p "$SOCKETS"
  $sudo chown postgres:postgres "$SOCKETS"
  as_postgres "$bin/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null || {
    echo "PostgreSQL did not start; its log ($LOG):" >&2
    $sudo tail -20 "$LOG" >&2
    exit 1
  }
}

ensure_role() {  # the `recursor` role and database, created once
  local bin psql
  bin=$(bindir)
  psql=("$bin/psql" -h "$SOCKETS" -p "$PORT" -U postgres -d postgres -qtAX)
  if [ -z "$(as_postgres "${psql[@]}" -c "SELECT 1 FROM pg_roles WHERE rolname='recursor'")" ]
  then
    as_postgres "${psql[@]}" -c "CREATE ROLE recursor LOGIN CREATEDB" >/dev/null
  fi
  if [ -z "$(as_postgres "${psql[@]}" -c "SELECT 1 FROM pg_database WHERE datname='recursor'")" ]
  then
    as_postgres "${psql[@]}" -c "CREATE DATABASE recursor OWNER recursor" >/dev/null
  fi
}

stop_server() {
  local bin
  bin=$(bindir) || return 0
  as_postgres test -f "$DATA/PG_VERSION" || return 0
  as_postgres "$bin/pg_ctl" -D "$DATA" -m fast -w status >/dev/null 2>&1 || return 0
  as_postgres "$bin/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null
}

if [ "$url" != "$OURS" ]; then  # someone else's server: check it answers, touch nothing
  [ "$action" = "url" ] && { echo "$url"; exit 0; }
  if [ "$action" != "start" ]; then
    echo "RECURSOR_TEST_POSTGRES_URL names another server; $action only manages ours" >&2
    exit 2
  fi
  libpq="${url/+psycopg/}"
  if ! psql "$libpq" -qtAXc "SELECT 1" >/dev/null 2>&1; then
    echo "no PostgreSQL answers at RECURSOR_TEST_POSTGRES_URL=$url" >&2
    exit 1
  fi
  echo "$url"
  exit 0
fi

case "$action" in
  url) ;;
  start) install_server; init_cluster; start_server; ensure_role ;;
  stop) stop_server ;;
  restart) stop_server; start_server ;;
  *) echo "usage: $0 [start|url|stop|restart]" >&2; exit 2 ;;
esac
[ "$action" = "stop" ] || echo "$url"
