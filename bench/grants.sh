#!/usr/bin/env bash
# Token grants per second: POST /v1/oauth/tokens by client credentials,
# as an engine asks for a token per session (Trino: per catalog session,
# one per table when it walks information_schema). Measured for the first
# start's admin client and for a client made through the management API,
# with wrk at 1 and 8 connections; run it with the old and the new binary
# (FLOE_BIN) to compare.
#   bench/grants.sh [DURATION]      (default 10s per measurement)
# Needs a built floe (scripts/setup.sh) and wrk (apt-get install wrk).
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
floe=${FLOE_BIN:-build/server/floe}
port=${BENCH_PORT:-18183}
base=http://127.0.0.1:$port/v1
data=$(mktemp -d /tmp/floe-bench-grants.XXXXXX)
chmod 755 "$data"
"$floe" --data-dir="$data" --listen=127.0.0.1:$port --log-level=warn --auth=floe \
	2> "$data/floe.log" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break
	sleep 0.2
done

token_of() { # CLIENT_ID SECRET -> an access token
	curl -sf "$base/oauth/tokens" -d grant_type=client_credentials -d client_id="$1" \
		--data-urlencode client_secret="$2" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'
}

admin=$(cat "$data/auth/admin-credential")
token=$(token_of "${admin%%:*}" "${admin#*:}")
client=$(curl -sf -H "Authorization: Bearer $token" -H "Content-Type: application/json" \
	"http://127.0.0.1:$port/management/v1/principals" -d '{"name":"bench-etl","kind":"client"}' |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["credential"])')

for who in admin client; do
	cred=$admin
	[ "$who" = client ] && cred=$client
	for c in 1 8; do
		echo "== $who client, $c connection(s)"
		CLIENT_ID=${cred%%:*} CLIENT_SECRET=${cred#*:} \
			wrk -t1 -c$c -d"$dur" --latency -s bench/grant.lua "$base/oauth/tokens" |
			grep -E "Requests/sec|^ +(50|99)%|not answered"
	done
done
