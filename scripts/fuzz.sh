#!/usr/bin/env bash
# Builds floe's libFuzzer targets with clang (tests/fuzz/), seeds each from
# the test fixtures and runs it for a bounded time. A crash fails the run
# and its input is copied into tests/fuzz/corpus/<target>/, where it stays
# (commit it with the fix) and is replayed on every later run.
#   scripts/fuzz.sh [SECONDS_PER_TARGET]        (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-${FUZZ_SECONDS:-30}}
build_dir=build-fuzz

need=(clang-14 libclang-rt-14-dev)
missing=()
for p in "${need[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -f "$build_dir/build.ninja" ]; then
	CC=clang-14 meson setup "$build_dir" -Dfuzz=true -Dtests=false \
		-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized
fi
ninja -C "$build_dir"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 tests/fuzz/seed.py tests/fixtures "$work/seeds"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
failed=0
run_target() {
	local t=$1
	local corpus=$work/corpus/$t kept=tests/fuzz/corpus/$t
	mkdir -p "$corpus" "$work/artifacts/$t"
	cp "$work/seeds/$t"/* "$corpus"/ 2>/dev/null || true
	[ -d "$kept" ] && cp "$kept"/* "$corpus"/ 2>/dev/null || true
	if "$build_dir/tests/fuzz/$t" "$corpus" -max_total_time="$seconds" -max_len=65536 \
		-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$work/artifacts/$t/" >"$work/$t.log" 2>&1; then
		echo "fuzz: $t: $(grep -m1 -E '^stat::number_of_executed_units' "$work/$t.log" | awk '{print $2}') runs, no failure"
	else
		echo "fuzz: $t FAILED; its log:"
		tail -n 60 "$work/$t.log"
		mkdir -p "$kept"
		cp "$work/artifacts/$t"/* "$kept"/ 2>/dev/null || true
		echo "fuzz: the failing input is now in $kept/ (commit it with the fix)"
		return 1
	fi
}
targets=(fuzz_ident fuzz_create_table fuzz_commit fuzz_hook_spec fuzz_router fuzz_location fuzz_jwt
	fuzz_form fuzz_s3xml fuzz_view)
# Two at a time: the machine has two cores.
pids=()
for t in "${targets[@]}"; do
	run_target "$t" & pids+=($!)
	if [ "${#pids[@]}" -ge 2 ]; then
		wait "${pids[0]}" || failed=1
		pids=("${pids[@]:1}")
	fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
exit "$failed"
