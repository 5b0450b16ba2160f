#!/usr/bin/env bash
# Installs what is missing, builds floe, and runs every test:
#  - static analysis (scripts/lint.sh: clang-tidy, cppcheck, scan-build);
#  - on the normal build (warnings as errors): the unit tests, the soak
#    (three replicas on one PostgreSQL under mixed load), the failover
#    suite (a PostgreSQL primary killed under load and its standby
#    promoted, synchronous and asynchronous), a Patroni failover under
#    load and the libFuzzer targets;
#  - the threaded suites under ThreadSanitizer;
#  - on an AddressSanitizer + UBSan build that also counts coverage: the
#    unit tests, the integration tests (real PostgreSQL, real floe,
#    PyIceberg) and the line coverage they reach (gcovr), and two minutes
#    of schemathesis against the OpenAPI document;
#  - real Apache Spark against the sanitizer build;
#  - DuckDB, Trino and Apache Iceberg's REST Compatibility Kit against the
#    normal build (their downloads cached outside the clone);
#  - the docker images and compose deployment, built and run in a private
#    Docker engine (as root).
set -euo pipefail
cd "$(dirname "$0")/.."

# The integration suite runs once, on the sanitizer build, which also
# counts the coverage: every request it makes is checked for memory and
# undefined-behaviour errors and counted in the same run.
scripts/setup.sh --python build -Dwerror=true
scripts/setup.sh build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false \
	-Db_coverage=true

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

run_suite() {
	local build_dir=$1
	# A build with -Db_coverage=true counts afresh for this run.
	find "$build_dir" -name '*.gcda' -delete
	echo "== unit tests ($build_dir)"
	meson test -C "$build_dir" --suite unit --print-errorlogs
	echo "== integration tests ($build_dir)"
	# The sanitizer build runs a large metadata file several times slower:
	# its requests get three times the time (FLOE_TEST_TIME_SCALE).
	FLOE_TEST_TIME_SCALE=3 FLOE_BIN="$PWD/$build_dir/server/floe" \
		.venv/bin/python -m pytest tests/integration -q -p no:cacheprovider
	if [ -n "$(find "$build_dir" -name '*.gcno' -print -quit)" ]; then
		# The daemons write their counts when they exit on SIGTERM. Two
		# daemons exiting at the same moment can tear a count in a shared
		# counter file; gcov then prints a line gcovr cannot parse, which
		# is skipped (reported on stderr) rather than failing the run.
		echo "== coverage of the C sources by the unit and integration tests ($build_dir/coverage.txt)"
		gcovr --root . --filter '(lib|meta|fileio|hooks|auth|store|catalog|server)/' --exclude 'tests/' \
			--gcov-ignore-parse-errors \
			--print-summary -o "$build_dir/coverage.txt" "$build_dir"
	fi
	echo "== schemathesis against api-spec/openapi.yaml ($build_dir): no 5xx"
	FLOE_BIN="$PWD/$build_dir/server/floe" .venv/bin/python tests/schemathesis/run.py --seconds 120
}

# Static analysis (clang-tidy, cppcheck, scan-build): any finding fails.
echo "== static analysis (scripts/lint.sh)"
scripts/lint.sh build

# The OpenID provider the external-issuer tests start (tests/oidc:
# oidc-provider from the npm registry), cached outside the clone.
echo "== OpenID provider for the issuer tests (scripts/oidc-deps.sh)"
scripts/oidc-deps.sh >/dev/null
# The iceberg-js client tests/integration/test_icebergjs.py drives
# (tests/icebergjs: iceberg-js from the npm registry), cached the same way.
echo "== iceberg-js for the client tests (scripts/node-deps.sh tests/icebergjs)"
scripts/node-deps.sh tests/icebergjs driver.mjs >/dev/null
# versitygw, the second S3 server the s3:// warehouse tests run against
# (beside moto), built with the Go toolchain once per version into the
# same cache (about three minutes the first time on 2 cores).
echo "== versitygw for the s3:// warehouse tests (scripts/s3-deps.sh)"
scripts/s3-deps.sh >/dev/null

echo "== unit tests (build)"
meson test -C build --suite unit --print-errorlogs

# Three replicas on one PostgreSQL under mixed load for a bounded time
# (FLOE_SOAK_SECONDS, default 60): no lost acknowledged write, no 500.
echo "== soak (build)"
FLOE_BIN="$PWD/build/server/floe" .venv/bin/python -m pytest tests/soak -q -s -p no:cacheprovider

# A PostgreSQL primary with a standby, two floe replicas on libpq's
# multi-host URL, the primary killed under load and the standby promoted
# (synchronous and asynchronous): nothing acknowledged lost that
# PostgreSQL kept, answers a client can act on, the change feed exact.
echo "== failover (build)"
FLOE_BIN="$PWD/build/server/floe" .venv/bin/python -m pytest tests/failover -q -s -p no:cacheprovider

# floe on a PostgreSQL cluster Patroni runs (etcd, a leader and a
# synchronous standby): the leader's machine dies under steady commits
# from two replicas; no acknowledged commit lost, floe commits again after
# the promotion without a restart (tests/patroni, about a minute).
echo "== Patroni failover (build)"
scripts/ha-deps.sh
FLOE_BIN="$PWD/build/server/floe" .venv/bin/python -m pytest tests/patroni -q -s -p no:cacheprovider

# libFuzzer targets (tests/fuzz) built with clang, seeded from the
# fixtures, 30 s each: a crash fails the run and its input joins
# tests/fuzz/corpus/.
echo "== fuzz targets"
scripts/fuzz.sh 30

# ThreadSanitizer: the suites where threads meet against a TSan build:
# concurrent commits, idempotency claims, write-audit-publish and releases
# (their hook calls), the event dispatcher (subscriptions), the
# authorization watcher (a revoke crossing replicas) and the janitor's
# rounds. Any race report fails the run.
echo "== ThreadSanitizer (build-tsan)"
scripts/setup.sh build-tsan -Db_sanitize=thread -Dtests=false
tsan_logs=$(mktemp -d)
chmod 0777 "$tsan_logs"
TSAN_OPTIONS="halt_on_error=0 log_path=$tsan_logs/tsan" FLOE_BIN="$PWD/build-tsan/server/floe" \
	.venv/bin/python -m pytest tests/integration/test_concurrency.py \
	tests/integration/test_idempotency.py tests/integration/test_wap.py \
	tests/integration/test_releases.py tests/integration/test_subscriptions.py \
	tests/integration/test_decisions_kept.py \
	tests/integration/test_change_feed.py::test_janitor_removes_events_past_the_retention \
	tests/integration/test_history.py::test_janitor_forgets_drops_past_the_retention \
	tests/integration/test_locations.py::test_janitors_of_two_replicas_share_the_purges \
	-q -p no:cacheprovider
if compgen -G "$tsan_logs/tsan*" >/dev/null; then
	echo "ThreadSanitizer reported:"
	cat "$tsan_logs"/tsan*
	exit 1
fi
echo "ThreadSanitizer: no report"
rm -rf "$tsan_logs"
echo "== auth/ under threads, ThreadSanitizer (build-tsan/tests/stress_auth)"
TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/tests/tsan.supp" build-tsan/tests/stress_auth

run_suite build-asan

echo "== Spark engine tests (against the sanitizer build)"
scripts/spark-deps.sh
FLOE_BIN="$PWD/build-asan/server/floe" .venv/bin/python -m pytest tests/spark -q -p no:cacheprovider

# Trino's tarball and the kit's jars are downloaded once per machine into
# ${XDG_CACHE_HOME:-~/.cache}/floe (scripts/engine-deps.sh).
echo "== engine test downloads (scripts/engine-deps.sh: Trino, the REST Compatibility Kit)"
scripts/engine-deps.sh
echo "== DuckDB engine tests (build)"
FLOE_BIN="$PWD/build/server/floe" .venv/bin/python -m pytest tests/engines/test_duckdb.py tests/engines/test_duckdb_oidc.py -q -p no:cacheprovider
echo "== Trino engine tests (build)"
FLOE_BIN="$PWD/build/server/floe" .venv/bin/python -m pytest tests/engines/test_trino.py tests/engines/test_trino_oidc.py -q -p no:cacheprovider
echo "== Apache Iceberg REST Compatibility Kit (build)"
FLOE_BIN="$PWD/build/server/floe" .venv/bin/python -m pytest tests/engines/test_rck.py -q -p no:cacheprovider -rA

# The container deployment needs a Docker engine of its own, which only
# root can start; a non-root run says so and skips this last step.
echo "== docker deployment (docker/)"
if [ "$(id -u)" = 0 ]; then
	scripts/docker-test.sh
else
	echo "docker: skipped (run as root to build and run the images)"
fi
