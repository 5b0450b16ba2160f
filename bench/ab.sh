#!/usr/bin/env bash
# Two floe binaries side by side, in one sitting: loadTable and commits as
# bench/run.sh measures them, with authentication off and on, each binary
# started afresh for each round and the rounds interleaved (A B, then B A),
# so a machine that slows down slows both. Prints each round's figures,
# then each binary's median and the ratio B/A.
#   bench/ab.sh OLD_BINARY NEW_BINARY [DURATION] [ROUNDS]   (default 10s, 3)
# Needs wrk (apt-get install wrk). A figure is requests a second (higher is
# better) and floe's CPU time per request from /proc (lower is better).
set -euo pipefail
cd "$(dirname "$0")/.."
a=${1:?old binary}
b=${2:?new binary}
dur=${3:-10s}
rounds=${4:-3}
port=${BENCH_PORT:-18183}
base=http://127.0.0.1:$port/v1
tick=$(getconf CLK_TCK)
results=$(mktemp)
trap 'rm -f "$results"' EXIT

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# measure LABEL BINARY-TAG PID WRK-ARGS...: one wrk run, one result line.
measure() {
	local label=$1 tag=$2 pid=$3
	shift 3
	local before after out rps reqs
	before=$(cpu "$pid")
	out=$(wrk "$@")
	after=$(cpu "$pid")
	rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
	reqs=$(echo "$out" | awk '/requests in/ {print $1}')
	if echo "$out" | grep -q "Non-2xx"; then
		echo "   $tag $label: answers that are not 2xx:" >&2
		echo "$out" | grep "Non-2xx" >&2
	fi
	python3 -c "print('$label|$tag|%s|%.1f' % ('$rps', ($after - $before) / $tick * 1e6 / $reqs))" \
		>>"$results"
	python3 -c "print('   %-4s %-34s %9s req/s %7.1f us CPU/req' % ('$tag', '$label', '$rps', ($after - $before) / $tick * 1e6 / $reqs))"
}

one() { # binary tag auth
	local bin=$1 tag=$2 auth=$3 data pid h=() schema
	data=$(mktemp -d /tmp/floe-bench-ab.XXXXXX)
	chmod 755 "$data"
	"$bin" --data-dir="$data" --listen=127.0.0.1:$port --log-level=warn --auth="$auth" \
		2>"$data/floe.log" &
	pid=$!
	for _ in $(seq 150); do
		curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break
		sleep 0.2
	done
	if [ "$auth" = floe ]; then
		local cred token
		cred=$(cat "$data/auth/admin-credential")
		token=$(curl -sf "$base/oauth/tokens" -d grant_type=client_credentials \
			-d client_id="${cred%%:*}" --data-urlencode client_secret="${cred#*:}" |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
		h=(-H "Authorization: Bearer $token")
	fi
	schema='{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":false}]}'
	curl -sf "${h[@]}" -X POST "$base/namespaces" -d '{"namespace":["bench"]}' >/dev/null
	curl -sf "${h[@]}" -X POST "$base/namespaces/bench/tables" \
		-d "{\"name\":\"small\",\"schema\":$schema}" >/dev/null
	for i in $(seq 0 15); do
		curl -sf "${h[@]}" -X POST "$base/namespaces/bench/tables" \
			-d "{\"name\":\"bench_t$i\",\"schema\":$schema}" >/dev/null
	done
	measure "loadTable, auth=$auth, 8 conn" "$tag" $pid -t2 -c8 -d"$dur" "${h[@]}" \
		"$base/namespaces/bench/tables/small"
	measure "loadTable, auth=$auth, 64 conn" "$tag" $pid -t2 -c64 -d"$dur" "${h[@]}" \
		"$base/namespaces/bench/tables/small"
	WRK_THREADS=2 TABLES=16 measure "commits, auth=$auth, 16 conn" "$tag" $pid -t2 -c16 \
		-d"$dur" -s bench/commit.lua "${h[@]}" "$base/"
	kill -TERM $pid
	wait $pid 2>/dev/null || true
	rm -rf "$data"
}

# Odd rounds run A first, even rounds B first (A B B A ...), so neither
# binary always has the machine as the other left it.
for r in $(seq "$rounds"); do
	echo "== round $r"
	for auth in none floe; do
		if [ $((r % 2)) = 1 ]; then
			one "$a" A "$auth"
			one "$b" B "$auth"
		else
			one "$b" B "$auth"
			one "$a" A "$auth"
		fi
	done
done

echo "== medians of $rounds rounds (A: $a, B: $b)"
python3 - "$results" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, tag, rps, us = line.strip().split("|")
    rows.setdefault(label, {}).setdefault(tag, []).append((float(rps), float(us)))
print("   %-34s %10s %10s %6s   %9s %9s %6s" % ("", "A req/s", "B req/s", "B/A", "A us/req", "B us/req", "B/A"))
for label, by in rows.items():
    ra = statistics.median(x[0] for x in by["A"]); rb = statistics.median(x[0] for x in by["B"])
    ua = statistics.median(x[1] for x in by["A"]); ub = statistics.median(x[1] for x in by["B"])
    print("   %-34s %10.0f %10.0f %6.3f   %9.1f %9.1f %6.3f" % (label, ra, rb, rb / ra, ua, ub, ub / ua))
EOF
