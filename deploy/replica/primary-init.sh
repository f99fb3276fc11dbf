#!/bin/bash
# Runs once, when the `db` service initialises an empty data directory (/docker-entrypoint-initdb.d):
# a login role that may stream WAL to the `db-replica` service, allowed from the compose network.
# An existing data directory needs the same two steps by hand (docs/SCALING.md, "Replica set-up").
set -euo pipefail
if [ -z "${REPLICATION_PASSWORD:-}" ]; then
    echo "primary-init: REPLICATION_PASSWORD is not set; no replication role created"
    exit 0
fi
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -v pw="$REPLICATION_PASSWORD" <<'SQL'
CREATE ROLE replicator WITH REPLICATION LOGIN PASSWORD :'pw';
SQL
echo "host replication replicator all scram-sha-256" >> "$PGDATA/pg_hba.conf"
