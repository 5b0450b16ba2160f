#!/usr/bin/env bash
# The cost of authentication: floe's CPU time per request (user + system,
# from /proc) for the same wrk load, once with --auth=none and once with a
# bearer token floe verifies (the verified-token cache answers all but the
# first request). GET /v1/config asks for no privilege, so its difference
# is the token's cost; loadTable adds the privilege check (TABLE_READ),
# answered from the decisions floe keeps after the first request.
#   bench/auth.sh [DURATION]      (default 15s per measurement)
# Needs a built floe (scripts/setup.sh) and wrk (apt-get install wrk).
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-15s}
floe=${FLOE_BIN:-build/server/floe}
port=${BENCH_PORT:-18182}
base=http://127.0.0.1:$port/v1
tick=$(getconf CLK_TCK)

cpu() { # the CPU seconds of process $1 so far, in clock ticks
	awk '{print $14 + $15}' "/proc/$1/stat"
}

run() { # auth mode
	local mode=$1 data pid token="" h=()
	data=$(mktemp -d /tmp/floe-bench-auth.XXXXXX)
	chmod 755 "$data"
	"$floe" --data-dir="$data" --listen=127.0.0.1:$port --log-level=warn --auth="$mode" \
		2> "$data/floe.log" &
	pid=$!
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break
		sleep 0.2
	done
	if [ "$mode" = floe ]; then
		local cred
		cred=$(cat "$data/auth/admin-credential")
		token=$(curl -sf "$base/oauth/tokens" -d grant_type=client_credentials \
			-d client_id="${cred%%:*}" --data-urlencode client_secret="${cred#*:}" |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
		h=(-H "Authorization: Bearer $token")
	fi
	curl -sf "${h[@]}" -X POST "$base/namespaces" -d '{"namespace":["bench"]}' >/dev/null
	curl -sf "${h[@]}" -X POST "$base/namespaces/bench/tables" \
		-d '{"name":"small","schema":{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":false}]}}' >/dev/null
	local before after out reqs what
	for what in config namespaces/bench/tables/small; do
		before=$(cpu $pid)
		out=$(wrk -t2 -c8 -d"$dur" "${h[@]}" "$base/$what")
		after=$(cpu $pid)
		reqs=$(echo "$out" | awk '/requests in/ {print $1}')
		echo "$out" | grep -E "Requests/sec|Non-2xx" | sed "s|^|   $mode $what: |"
		python3 -c "print('   $mode $what: %.1f us of floe CPU per request (%d requests)' % (($after - $before) / $tick * 1e6 / $reqs, $reqs))"
	done
	kill -TERM $pid
	wait $pid 2>/dev/null || true
	rm -rf "$data"
}

echo "== GET /v1/config and loadTable small, 8 connections, --auth=none"
run none
echo "== the same with a bearer token (--auth=floe, the admin client)"
run floe
