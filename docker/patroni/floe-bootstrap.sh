#!/bin/sh
# Patroni's post_bootstrap: run once, on the leader, when the cluster is
# made. $1 is a connection string of the superuser. Makes floe's login
# role and the database it owns (floe runs its migrations on first start).
set -eu
: "${FLOE_POSTGRES_PASSWORD:?the floe role needs a password}"
psql -v ON_ERROR_STOP=1 -v pw="$FLOE_POSTGRES_PASSWORD" "$1" <<'SQL'
CREATE ROLE floe LOGIN PASSWORD :'pw';
CREATE DATABASE floe OWNER floe;
SQL
