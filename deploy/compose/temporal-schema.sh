#!/bin/sh
# Temporal's two databases at the schema this server version ships (temporal-sql-tool, in the
# admin-tools image). Each step is idempotent: an existing database is kept, setup-schema only
# starts versioning a fresh one, update-schema applies what is missing.
set -eu
SCHEMA=${SCHEMA_DIR:-/etc/temporal/schema/postgresql/v12}
for pair in temporal:temporal temporal_visibility:visibility; do
  db=${pair%%:*}
  tool() { temporal-sql-tool --plugin "$DB" --ep "$POSTGRES_SEEDS" -p "$DB_PORT" -u "$POSTGRES_USER" --pw "$POSTGRES_PWD" --db "$db" "$@"; }
  tool create-database
  tool setup-schema -v 0.0
  tool update-schema -d "$SCHEMA/${pair#*:}/versioned"
  echo "temporal-schema: database $db is at the current schema"
done
