#!/bin/sh
# Entry point of the test PostgreSQL image: on first start (an empty
# $PGDATA) run initdb with POSTGRES_USER as the superuser and
# POSTGRES_PASSWORD as its password, create POSTGRES_DB, and open the server
# to the network with scram-sha-256; then run the command (postgres).
set -eu

if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ]; then
		echo "docker-entrypoint: POSTGRES_PASSWORD must be set" >&2
		exit 1
	fi
	user=${POSTGRES_USER:-postgres}
	db=${POSTGRES_DB:-$user}
	pwfile=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
	initdb --pgdata="$PGDATA" --username="$user" --pwfile="$pwfile" \
		--auth-local=trust --auth-host=scram-sha-256 --encoding=UTF8 --locale=C.UTF-8 >/dev/null
	rm -f "$pwfile"
	echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
	echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"

	# A server on the Unix socket only, so that nobody connects over the
	# network (and no health check passes) before the database exists.
	pg_ctl --pgdata="$PGDATA" --options="-c listen_addresses=''" --wait --silent start
	if [ "$db" != postgres ]; then
		echo 'CREATE DATABASE :"db";' |
			psql --quiet --no-psqlrc --set=ON_ERROR_STOP=1 --username="$user" \
				--dbname=postgres --set=db="$db"
	fi
	pg_ctl --pgdata="$PGDATA" --mode=fast --wait --silent stop
	echo "docker-entrypoint: initialised $PGDATA (user $user, database $db)"
fi

exec "$@"
