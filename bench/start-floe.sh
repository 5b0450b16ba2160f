# Sourced by the benchmark scripts: start_floe PORT [FLOE OPTION...]
# starts floe (FLOE_BIN, default build/server/floe) with its embedded
# PostgreSQL on a fresh data directory ($data), listening on 127.0.0.1:PORT
# without authentication, waits until it is ready, and stops it and
# removes $data when the script exits. $pid is floe's process.
start_floe() {
	local port=$1
	shift
	data=$(mktemp -d /tmp/floe-bench.XXXXXX)
	chmod 755 "$data"
	"${FLOE_BIN:-build/server/floe}" --data-dir="$data" --listen=127.0.0.1:"$port" \
		--log-level=warn --auth=none "$@" 2> "$data/floe.log" &
	pid=$!
	trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$data"' EXIT
	for _ in $(seq 100); do
		curl -sf "http://127.0.0.1:$port/ready" >/dev/null && return 0
		sleep 0.2
	done
	echo "floe did not become ready; its log:" >&2
	cat "$data/floe.log" >&2
	return 1
}
