#!/usr/bin/env bash
# floe benchmark: the change feed. What its outbox costs a commit (16
# clients committing to 16 tables with the feed's trigger on, then off),
# and how fast the events endpoint reads the events back (every event,
# page after page of 1,000, as a poller catching up would).
#   bench/feed.sh [DURATION]      (default 15s per measurement)
# Needs a built floe (scripts/setup.sh), wrk and PostgreSQL's psql.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-15s}
port=${BENCH_PORT:-18184}
pgbin=$(dirname "$(ls /usr/lib/postgresql/*/bin/psql | sort -V | tail -1)")
base=http://127.0.0.1:$port/v1

source bench/start-floe.sh
start_floe "$port"
conn="host=$data/run port=5432 user=floe dbname=floe"
schema='{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":false}]}'
curl -sf -X POST "$base/namespaces" -d '{"namespace":["bench"]}' >/dev/null
for i in $(seq 0 15); do
	curl -sf -X POST "$base/namespaces/bench/tables" -d "{\"name\":\"bench_t$i\",\"schema\":$schema}" >/dev/null
done

commits() { # label
	echo "== commits, 16 clients on 16 tables, $1"
	WRK_THREADS=2 TABLES=16 wrk --latency -t2 -c16 -d"$dur" -s bench/commit.lua "$base/" |
		grep -E "Requests/sec|^ +50%|^ +99%|status" | sed 's/^/   /'
}
commits "the feed's trigger on"
"$pgbin/psql" -qX "$conn" -c "ALTER TABLE tables DISABLE TRIGGER tables_feed"
commits "the feed's trigger off"
"$pgbin/psql" -qX "$conn" -c "ALTER TABLE tables ENABLE TRIGGER tables_feed"

total=$("$pgbin/psql" -qXtA "$conn" -c "SELECT count(*) FROM change_events")
echo "== reading $total events back, 1,000 a page"
python3 - "$base" "$total" <<'PY'
import json, sys, time, urllib.request
base, total = sys.argv[1], int(sys.argv[2])
token, n, pages = None, 0, 0
start = time.monotonic()
while True:
    body = {"page-size": 1000}
    if token:
        body["continuation-token"] = token
    req = urllib.request.Request(base + "/events", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    page = json.load(urllib.request.urlopen(req))
    if not page["events"]:
        break
    n += len(page["events"])
    pages += 1
    token = page["next-page-token"]
secs = time.monotonic() - start
print(f"   {n} events in {pages} pages, {secs:.2f} s: {n / secs:,.0f} events/s")
assert n == total, f"read {n} of {total} events"
PY
