#!/bin/sh
# One-shot (docker-compose --profile citus): registers the workers with the coordinator, and the
# password the coordinator uses to reach them, once every node answers. Idempotent.
set -eu
export PGPASSWORD="$POSTGRES_PASSWORD"
for host in citus-coordinator $CITUS_WORKERS; do
  until pg_isready -h "$host" -U "$POSTGRES_USER" -d "$POSTGRES_DB" >/dev/null 2>&1; do sleep 1; done
  psql -h "$host" -U "$POSTGRES_USER" -d "$POSTGRES_DB" -v ON_ERROR_STOP=1 -qc \
    "CREATE EXTENSION IF NOT EXISTS citus; CREATE EXTENSION IF NOT EXISTS vector" || true
done
run() { psql -h citus-coordinator -U "$POSTGRES_USER" -d "$POSTGRES_DB" -v ON_ERROR_STOP=1 -qAtc "$1"; }
# Node-to-node connections authenticate with this password (pg_dist_authinfo, every node: 0).
run "INSERT INTO pg_dist_authinfo (nodeid, rolename, authinfo) VALUES (0, '$POSTGRES_USER', 'password=$POSTGRES_PASSWORD') ON CONFLICT DO NOTHING"
run "SELECT citus_set_coordinator_host('citus-coordinator', 5432)"
for host in $CITUS_WORKERS; do
  if [ -z "$(run "SELECT 1 FROM pg_dist_node WHERE nodename = '$host'")" ]; then
    run "SELECT citus_add_node('$host', 5432)"
  fi
done
run "SELECT nodename, nodeport FROM pg_dist_node ORDER BY groupid"
