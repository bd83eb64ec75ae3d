#!/bin/sh
# First start: initdb with POSTGRES_USER as superuser (password auth over TCP) and POSTGRES_DB
# (default: the user's name), as the official image does. Then postgres, as user postgres.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
as_pg() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
mkdir -p "$PGDATA" /run/postgresql
chown postgres:postgres "$PGDATA" /run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
  chown postgres "$pw"
  as_pg initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" -E UTF8 --no-locale --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pw"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$POSTGRES_DB" != postgres ]; then
    as_pg pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
    as_pg psql -q -U "$POSTGRES_USER" -d postgres -c "CREATE DATABASE \"$POSTGRES_DB\"" >/dev/null
    as_pg pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  fi
  echo "postgres-entrypoint: initialised $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)"
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" -c listen_addresses='*'
