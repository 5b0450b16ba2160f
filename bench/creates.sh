#!/usr/bin/env bash
# floe benchmark: createTable as the catalog grows. For each catalog size,
# the catalog is filled to that many tables (1,000 to a namespace, rows
# written straight into floe's relations with the metadata of a table
# created through the API: its triggers run), then wrk creates new tables
# from 1 client and from 8, each for the given duration.
#   bench/creates.sh [DURATION] [SIZES]   (default 10s, "1000 10000")
# Needs a built floe (scripts/setup.sh), wrk and PostgreSQL's psql.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
sizes=${2:-1000 10000}
port=${BENCH_PORT:-18185}
pgbin=$(dirname "$(ls /usr/lib/postgresql/*/bin/psql | sort -V | tail -1)")
base=http://127.0.0.1:$port/v1

source bench/start-floe.sh
start_floe "$port"
conn="host=$data/run port=5432 user=floe dbname=floe"
schema='{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":false}]}'
curl -sf -X POST "$base/namespaces" -d '{"namespace":["bench"]}' >/dev/null
curl -sf -X POST "$base/namespaces/bench/tables" -d "{\"name\":\"seed\",\"schema\":$schema}" >/dev/null
warehouse=$(curl -sf "$base/namespaces/bench/tables/seed" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["location"].rsplit("/", 2)[0])')

fill() { # to this many tables in all
	"$pgbin/psql" -qX -v ON_ERROR_STOP=1 -v n="$1" -v wh="$warehouse" "$conn" <<'SQL'
SELECT count(*) AS have FROM tables \gset
INSERT INTO namespaces (levels)
SELECT ARRAY['bulk' || g] FROM generate_series(0, (:n - 1) / 1000) g ON CONFLICT DO NOTHING;
INSERT INTO tables (namespace_id, name, table_uuid, location, metadata_location, metadata, version)
SELECT ns.id, 'b' || i, gen_random_uuid(), :'wh' || '/bulk' || (i / 1000) || '/b' || i,
       :'wh' || '/bulk' || (i / 1000) || '/b' || i || '/metadata/00000-bulk.metadata.json',
       src.metadata, 1
FROM generate_series(:have, :n - 1) i
JOIN namespaces ns ON ns.levels = ARRAY['bulk' || (i / 1000)]
CROSS JOIN (SELECT metadata FROM tables WHERE name = 'seed') src
ON CONFLICT DO NOTHING;
ANALYZE tables;
SQL
}

for n in $sizes; do
	fill "$n"
	for c in 1 8; do
		have=$("$pgbin/psql" -qXtA "$conn" -c "SELECT count(*) FROM tables")
		echo "== createTable, $c client(s), $have tables"
		RUN="n${n}c${c}t" wrk --latency -t$((c < 2 ? 1 : 2)) -c"$c" -d"$dur" -s bench/create.lua "$base/" |
			grep -E "Requests/sec|^ +50%|^ +99%|status|Non-2xx" | sed 's/^/   /'
	done
done
