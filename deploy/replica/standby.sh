#!/bin/sh
# Entry point of the `db-replica` service: a streaming hot standby of `db`.
# First start: a base backup of the primary with -R (standby.signal and primary_conninfo written);
# later starts reuse the data directory and resume streaming where they stopped.
set -eu
: "${REPLICATION_PASSWORD:?set REPLICATION_PASSWORD in .env (the same for db and db-replica)}"
export PGPASSWORD="$REPLICATION_PASSWORD"
PRIMARY_HOST="${PRIMARY_HOST:-db}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    until pg_isready -h "$PRIMARY_HOST" -U replicator -d postgres -q; do
        echo "standby: waiting for $PRIMARY_HOST"
        sleep 2
    done
    pg_basebackup -h "$PRIMARY_HOST" -U replicator -D "$PGDATA" -X stream -R -c fast --progress
    chmod 700 "$PGDATA"
fi
# hot_standby_feedback: long searches on the replica are not cancelled by the primary's vacuum.
exec postgres -c hot_standby=on -c hot_standby_feedback=on -c max_standby_streaming_delay=30s \
    -c shared_buffers="${REPLICA_SHARED_BUFFERS:-512MB}"
