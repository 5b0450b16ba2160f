#!/usr/bin/env bash
# floe benchmark: the cost of the audit trail's hash chain per audit event,
# and how fast the chain verifies. Against one floe's embedded PostgreSQL:
# pgbench inserts audit events (one per transaction, as floe writes them)
# with the chain's trigger on and then off, from 1 and from 8 clients (the
# head row serialises the commits); then `floe audit verify` reads the
# chain of every event written.
#   bench/trail.sh [SECONDS]      (default 15 per measurement)
# Needs a built floe (scripts/setup.sh) and PostgreSQL's pgbench.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-15}
floe=${FLOE_BIN:-build/server/floe}
port=${BENCH_PORT:-18183}
pgbin=$(dirname "$(ls /usr/lib/postgresql/*/bin/pgbench | sort -V | tail -1)")

source bench/start-floe.sh
start_floe "$port"
conn="host=$data/run port=5432 user=floe dbname=floe"
cat > "$data/event.sql" <<'SQL'
INSERT INTO audit_events (event, principal, request_id, namespace, table_name, details)
VALUES ('wap.hook-called', 'etl', 'bench', '{sales}', 'orders',
        '{"hook": "auditor", "status": 200, "verdict": "pass", "latency-ms": 12}');
SQL

measure() { # label, clients
	local tps
	tps=$("$pgbin/pgbench" -n -f "$data/event.sql" -c "$2" -j "$2" -T "$secs" "$conn" 2>/dev/null |
		awk '/^tps/ {print int($3)}')
	echo "   $1, $2 client(s): $tps events/s"
}

echo "== audit events written per second (one per transaction)"
for c in 1 8; do
	measure "with the chain" "$c"
	"$pgbin/psql" -qX "$conn" -c "ALTER TABLE audit_events DISABLE TRIGGER audit_events_chain"
	measure "without it   " "$c"
	"$pgbin/psql" -qX "$conn" -c "ALTER TABLE audit_events ENABLE TRIGGER audit_events_chain"
done

links=$("$pgbin/psql" -qXtA "$conn" -c "SELECT count(*) FROM audit_chain")
echo "== floe audit verify over $links links"
start=$(date +%s.%N)
FLOE_DATA_DIR="$data" "$floe" audit verify --data-dir="$data" > "$data/report.json" || true
end=$(date +%s.%N)
echo "   $(awk -v a="$start" -v b="$end" -v n="$links" \
	'BEGIN {printf "%.2f s, %d links/s", b - a, n / (b - a)}')"
echo "   (the events written without the chain show as unlinked: $(grep -c 'not in the chain' "$data/report.json" || true) listed)"
