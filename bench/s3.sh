#!/usr/bin/env bash
# floe benchmark: commit latency and commits/s with an s3:// warehouse on an
# S3-compatible server on loopback, next to the same commits on a file://
# warehouse, one after the other on the same machine.
#   bench/s3.sh [DURATION] [WAREHOUSES...]     (default 15s; local moto versitygw)
# Each warehouse gets a floe of its own with its embedded PostgreSQL: local
# (file://, the metadata file fsynced), moto (moto's server mode, from the
# Python environment .venv) or versitygw (built by scripts/s3-deps.sh, its
# buckets on the local disk). Needs a built floe (scripts/setup.sh) and wrk.
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-15s}
shift || true
kinds=("$@")
[[ ${#kinds[@]} -gt 0 ]] || kinds=(local moto versitygw)
floe=${FLOE_BIN:-build/server/floe}
python=${PYTHON:-.venv/bin/python}
port=${BENCH_PORT:-18181}
s3port=${BENCH_S3_PORT:-18282}
key=bench-key
secret=bench-secret
region=us-east-1
base=http://127.0.0.1:$port/v1
schema='{"type":"struct","fields":[{"id":1,"name":"id","type":"long","required":false}]}'

pids=()
dirs=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
	for d in "${dirs[@]}"; do rm -rf "$d"; done
	dirs=()
}
trap cleanup EXIT

wait_port() { # port
	for _ in $(seq 150); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.2
	done
	echo "nothing listens on port $1" >&2
	return 1
}

start_s3() { # kind data-dir
	case $1 in
	moto)
		"$python" -m moto.server -H 127.0.0.1 -p "$s3port" >/dev/null 2>&1 &
		pids+=($!)
		;;
	versitygw)
		local bin
		bin=$(scripts/s3-deps.sh)
		mkdir -p "$2/buckets"
		ROOT_ACCESS_KEY_ID=$key ROOT_SECRET_ACCESS_KEY=$secret "$bin" \
			--port "127.0.0.1:$s3port" --region $region --keep-alive --quiet posix "$2/buckets" >/dev/null 2>&1 &
		pids+=($!)
		;;
	esac
	wait_port "$s3port"
	# (S3 wants the payload's hash in a header of its own; this one is the
	# empty body's.)
	curl -sf -X PUT --aws-sigv4 "aws:amz:$region:s3" --user "$key:$secret" \
		-H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" \
		"http://127.0.0.1:$s3port/bench-bucket" >/dev/null
}

measure() { # name, wrk arguments...
	local name=$1
	shift
	echo "== $name"
	wrk --latency "$@" | grep -E "Requests/sec|^ +50%|^ +99%|status|Non-2xx" | sed 's/^/   /'
}

for kind in "${kinds[@]}"; do
	data=$(mktemp -d /tmp/floe-bench.XXXXXX)
	chmod 755 "$data"
	dirs+=("$data")
	env=()
	if [[ $kind != local ]]; then
		start_s3 "$kind" "$data"
		env=(FLOE_WAREHOUSE=s3://bench-bucket/wh FLOE_S3_ENDPOINT=http://127.0.0.1:$s3port
			FLOE_S3_REGION=$region FLOE_S3_PATH_STYLE=true
			AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret)
	fi
	env "${env[@]}" "$floe" --data-dir="$data/floe" --listen=127.0.0.1:$port --log-level=warn \
		--auth=none ${FLOE_BENCH_ARGS:-} 2> "$data/floe.log" &
	pids+=($!)
	for _ in $(seq 150); do
		curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break
		sleep 0.2
	done
	curl -sf -X POST "$base/namespaces" -d '{"namespace":["bench"]}' >/dev/null
	for t in hot0 one0 $(seq -f "bench_t%g" 0 15); do
		curl -sf -X POST "$base/namespaces/bench/tables" -d "{\"name\":\"$t\",\"schema\":$schema}" >/dev/null
	done
	echo "#### warehouse: $kind"
	WRK_THREADS=1 TABLES=1 TABLE_PREFIX=one measure "$kind: commits, 1 client on one table" -t1 -c1 -d$dur -s bench/commit.lua "$base/"
	WRK_THREADS=2 TABLES=16 measure "$kind: commits, 16 clients on 16 tables" -t2 -c16 -d$dur -s bench/commit.lua "$base/"
	WRK_THREADS=2 TABLES=1 TABLE_PREFIX=hot measure "$kind: commits, 8 clients on one hot table" -t2 -c8 -d$dur -s bench/commit.lua "$base/"
	curl -sf "$base/namespaces/bench/tables/hot0" | python3 bench/hot_table.py
	cleanup
done
