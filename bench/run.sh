#!/usr/bin/env bash
# floe benchmark: loadTable and commit throughput against a real floe with
# its embedded PostgreSQL, driven by wrk from the same machine.
#   bench/run.sh [DURATION]      (default 15s per measurement)
# Needs a built floe (scripts/setup.sh) and wrk (apt-get install wrk).
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-15s}
port=${BENCH_PORT:-18181}
base=http://127.0.0.1:$port/v1

source bench/start-floe.sh
start_floe "$port" ${FLOE_BENCH_ARGS:-}

schema='{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":false},{"id":2,"name":"v","type":"string","required":false}]}'
curl -sf -X POST "$base/namespaces" -d '{"namespace":["bench"]}' >/dev/null
curl -sf -X POST "$base/namespaces/bench/tables" -d "{\"name\":\"small\",\"schema\":$schema}" >/dev/null
curl -sf -X POST "$base/namespaces/bench/tables" -d "{\"name\":\"hot0\",\"schema\":$schema}" >/dev/null
for i in $(seq 0 15); do
	curl -sf -X POST "$base/namespaces/bench/tables" -d "{\"name\":\"bench_t$i\",\"schema\":$schema}" >/dev/null
done
# A table with 10,000 snapshots, added 1,000 per commit; main is the last.
curl -sf -X POST "$base/namespaces/bench/tables" -d "{\"name\":\"big\",\"schema\":$schema}" >/dev/null
python3 bench/snapshots.py "$base/namespaces/bench/tables/big" 10000 1000
# 1,000 tables in a namespace of their own, for listTables.
curl -sf -X POST "$base/namespaces" -d '{"namespace":["list"]}' >/dev/null
seq -f "%04g" 0 999 | xargs -P4 -I{} curl -sf -o /dev/null -X POST "$base/namespaces/list/tables" \
	-d "{\"name\":\"table_{}\",\"schema\":$schema}"
big="$base/namespaces/bench/tables/big"
for q in "" "?snapshots=refs"; do
	plain=$(curl -sf -o /dev/null -w '%{size_download}' "$big$q")
	gz=$(curl -sf -o /dev/null -H 'Accept-Encoding: gzip' -w '%{size_download}' "$big$q")
	echo "   loadTable 10k snapshots$q: $plain bytes plain, $gz bytes gzip"
done

measure() { # name, wrk arguments...
	local name=$1
	shift
	echo "== $name"
	wrk --latency "$@" | grep -E "Requests/sec|^ +50%|^ +99%|status|Non-2xx" | sed 's/^/   /'
}

for c in 8 64; do
	measure "loadTable small, $c connections" -t2 -c$c -d$dur "$base/namespaces/bench/tables/small"
	measure "loadTable 10k snapshots ?snapshots=refs, $c connections" -t2 -c$c -d$dur "$base/namespaces/bench/tables/big?snapshots=refs"
	measure "loadTable 10k snapshots (all), $c connections" -t2 -c$c -d$dur "$base/namespaces/bench/tables/big"
	measure "loadTable 10k snapshots (all), gzip, $c connections" -t2 -c$c -d$dur \
		-H "Accept-Encoding: gzip" "$base/namespaces/bench/tables/big"
done
# Per table, one unpaged answer of 1,000 names against ten pages of 100.
measure "listTables, 1,000 tables in one answer, 8 connections" -t2 -c8 -d$dur \
	"$base/namespaces/list/tables"
measure "listTables, first page of 100 of 1,000 tables, 8 connections" -t2 -c8 -d$dur \
	"$base/namespaces/list/tables?pageToken=&pageSize=100"
WRK_THREADS=2 TABLES=16 measure "commits, 16 clients on 16 tables" -t2 -c16 -d$dur -s bench/commit.lua "$base/"
WRK_THREADS=2 TABLES=1 TABLE_PREFIX=hot measure "commits, 8 clients on one hot table" -t2 -c8 -d$dur -s bench/commit.lua "$base/"
# Every hot-table commit that answered 200 must be in the table: each
# wrk thread's property holds its last committed counter value.
curl -sf "$base/namespaces/bench/tables/hot0" | python3 bench/hot_table.py
