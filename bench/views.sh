#!/usr/bin/env bash
# floe benchmark: loadView and replaceView (the view commit) beside
# loadTable and table commits, against one floe with its embedded
# PostgreSQL, driven by wrk from the same machine. Tables and views are
# measured in one run, one after the other, so their ratio holds even on a
# busy machine.
#   bench/views.sh [DURATION]      (default 15s per measurement)
# Needs a built floe (scripts/setup.sh) and wrk (apt-get install wrk).
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-15s}
port=${BENCH_PORT:-18182}
base=http://127.0.0.1:$port/v1

source bench/start-floe.sh
start_floe "$port"

schema='{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":false},{"id":2,"name":"v","type":"string","required":false}]}'
version='{"version-id":1,"timestamp-ms":0,"schema-id":0,"summary":{"engine-name":"spark"},"default-namespace":["bench"],"representations":[{"type":"sql","dialect":"spark","sql":"SELECT id, v FROM bench.small WHERE id > 0"}]}'
curl -sf -X POST "$base/namespaces" -d '{"namespace":["bench"]}' >/dev/null
curl -sf -X POST "$base/namespaces/bench/tables" -d "{\"name\":\"small\",\"schema\":$schema}" >/dev/null
curl -sf -X POST "$base/namespaces/bench/views" \
	-d "{\"name\":\"small_view\",\"schema\":$schema,\"view-version\":$version}" >/dev/null
for i in $(seq 0 15); do
	curl -sf -X POST "$base/namespaces/bench/tables" -d "{\"name\":\"bench_t$i\",\"schema\":$schema}" >/dev/null
	curl -sf -X POST "$base/namespaces/bench/views" \
		-d "{\"name\":\"bench_v$i\",\"schema\":$schema,\"view-version\":$version}" >/dev/null
done

measure() { # name, wrk arguments...
	local name=$1
	shift
	echo "== $name"
	wrk --latency "$@" | grep -E "Requests/sec|^ +50%|^ +99%|status|Non-2xx" | sed 's/^/   /'
}

for c in 8 64; do
	measure "loadTable small, $c connections" -t2 -c$c -d$dur "$base/namespaces/bench/tables/small"
	measure "loadView, $c connections" -t2 -c$c -d$dur "$base/namespaces/bench/views/small_view"
done
WRK_THREADS=2 TABLES=16 measure "table commits, 16 clients on 16 tables" -t2 -c16 -d$dur \
	-s bench/commit.lua "$base/"
WRK_THREADS=2 TABLES=16 TABLE_PREFIX=bench_v KIND=views measure \
	"replaceView, 16 clients on 16 views" -t2 -c16 -d$dur -s bench/commit.lua "$base/"
