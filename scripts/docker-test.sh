#!/usr/bin/env bash
# End-to-end test of floe's container deployment (docker/): installs what is
# missing (docker.io, docker-compose, debootstrap), starts a private Docker
# engine of its own, makes the base image debian:bookworm-slim without a
# registry (debootstrap + docker import), and runs tests/docker/test_compose.py:
# build, docker compose up, REST commits, write-audit-publish through the
# auditor service, restarts, docker compose down -v; then
# tests/docker/test_compose_s3.py: the deployment on an s3:// warehouse
# (docker/docker-compose.s3.yml), PyIceberg holding no storage credentials
# writing and reading with those floe vends; then tests/docker/test_compose_ha.py:
# the "ha" profile, floe-ha on a Patroni cluster whose leader is killed
# under commits. Always stops the engine
# and cleans up. Run as root. The last line is "docker: N passed, N failed".
#
#   scripts/docker-test.sh              # all three tests
#   scripts/docker-test.sh s3           # only test_compose_s3.py (or: compose, only test_compose.py;
#                                       # ha, only test_compose_ha.py)
#
# FLOE_DOCKER_CACHE (default .cache/docker) keeps the engine's images
# between runs (the base image, the build layers): a second run skips
# debootstrap and most of the build. Delete the folder to start cold.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
started=$(date +%s)
run_compose=1 run_s3=1 run_ha=1
if [ $# -gt 0 ]; then
	run_compose=0 run_s3=0 run_ha=0
	for t in "$@"; do
		case $t in
		compose) run_compose=1 ;;
		s3) run_s3=1 ;;
		ha) run_ha=1 ;;
		*)
			echo "docker-test: unknown test '$t' (compose, s3, ha)" >&2
			echo "docker: 0 passed, 1 failed"
			exit 2
			;;
		esac
	done
fi

if [ "$(id -u)" != 0 ]; then
	echo "docker-test: run as root (it starts a Docker engine of its own)" >&2
	echo "docker: 0 passed, 1 failed"
	exit 1
fi

packages=(docker.io docker-compose debootstrap iptables python3 curl ca-certificates)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "docker-test: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cache=${FLOE_DOCKER_CACHE:-$repo/.cache/docker}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
exec 9>"$cache/.lock"
if ! flock -n 9; then
	echo "docker-test: another docker test is using $cache" >&2
	echo "docker: 0 passed, 1 failed"
	exit 1
fi

# Short paths: the engine's sockets live under the exec root.
run=$(mktemp -d /tmp/floe-docker.XXXXXX)
export DOCKER_HOST="unix://$run/docker.sock"
# `docker compose` runs docker-compose through docker/compose-plugin.sh,
# unless a Compose v2 plugin is installed system-wide.
export DOCKER_CONFIG="$run/config"
mkdir -p "$DOCKER_CONFIG/cli-plugins"
if ! docker compose version >/dev/null 2>&1; then
	install -m 755 docker/compose-plugin.sh "$DOCKER_CONFIG/cli-plugins/docker-compose"
fi
unset COMPOSE_PROJECT_NAME COMPOSE_FILE
dockerd_pid=""
test_pid=""
ip_forward=""
result="$run/result"
log="$run/commands.log"

unmount_under() {
	local m
	awk -v d="$1" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r |
		while read -r m; do
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		done
}

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

stop_pid() { # PID SECONDS: SIGTERM, then SIGKILL after SECONDS
	local pid=$1 i
	alive "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < $2 * 10; i++)); do
		alive "$pid" || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	sleep 0.5
}

cleanup() {
	local rc=$? passed=0 failed=0 containerd_pid=""
	set +e
	trap - EXIT INT TERM
	if alive "$test_pid"; then
		kill -TERM "$test_pid" 2>/dev/null
		wait "$test_pid" 2>/dev/null
	fi
	if alive "$dockerd_pid"; then
		docker compose -f docker/docker-compose.yml --profile tools --profile ha down -v --remove-orphans --timeout 10 \
			>>"$log" 2>&1
		# images replaced by builds a week ago or earlier (newer ones are the build cache)
		docker image prune -f --filter until=168h >>"$log" 2>&1
	fi
	containerd_pid=$(cat "$run/exec/containerd/containerd.pid" 2>/dev/null)
	stop_pid "$dockerd_pid" 30
	wait "$dockerd_pid" 2>/dev/null
	stop_pid "$containerd_pid" 10
	unmount_under "$run"
	unmount_under "$cache/data"
	if [ -s "$run/iptables.rules" ]; then
		iptables-restore <"$run/iptables.rules"
		echo "$ip_forward" >/proc/sys/net/ipv4/ip_forward
	fi
	if [ -s "$result" ]; then
		read -r passed failed <"$result"
	fi
	if [ "$rc" != 0 ] && [ "$failed" = 0 ]; then
		failed=1
		tail -n 40 "$log" 2>/dev/null
		[ -f "$run/dockerd.log" ] && tail -n 20 "$run/dockerd.log"
	fi
	if [ "$failed" != 0 ]; then
		# every command's output, for a look afterwards
		cp "$log" "$cache/last-commands.log" 2>/dev/null
		cp "$run/dockerd.log" "$cache/last-dockerd.log" 2>/dev/null
		echo "docker-test: the commands' output is in $cache/last-commands.log"
	fi
	rm -rf "$run"
	echo "docker-test: $(($(date +%s) - started))s"
	echo "docker: $passed passed, $failed failed"
	[ "$failed" = 0 ] && [ "$rc" = 0 ] && exit 0
	exit 1
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A leftover of an interrupted run (a killed engine) would keep the data root busy.
unmount_under "$cache/data"

# The engine adds firewall rules and turns on IP forwarding (with a DROP
# policy for forwarded packets); the cleanup puts both back as they were.
iptables-save >"$run/iptables.rules"
ip_forward=$(cat /proc/sys/net/ipv4/ip_forward)

echo "docker-test: starting a private Docker engine (data root $cache/data)"
# In a session of its own, so that a Ctrl-C on this script reaches the
# engine only through the cleanup (which first takes the deployment down).
# No default bridge: compose makes its own networks, and builds use the
# host's network (build.network in the compose file).
setsid dockerd --host "$DOCKER_HOST" --data-root "$cache/data" --exec-root "$run/exec" \
	--pidfile "$run/docker.pid" --bridge none --log-level warn \
	>"$run/dockerd.log" 2>&1 </dev/null &
dockerd_pid=$!
for ((i = 0; i < 120; i++)); do
	docker info >/dev/null 2>&1 && break
	if ! alive "$dockerd_pid"; then
		echo "docker-test: dockerd exited:" >&2
		tail -n 20 "$run/dockerd.log" >&2
		exit 1
	fi
	sleep 0.5
done
docker info >/dev/null

bash tests/docker/base-image.sh "$cache/base"

rc=0
p1=0 f1=0 p2=0 f2=0
if [ "$run_compose" = 1 ]; then
	echo "docker-test: running tests/docker/test_compose.py"
	# In the background, so that INT and TERM are handled at once (bash runs a
	# trap only after the foreground command ends).
	python3 tests/docker/test_compose.py --result "$run/result-compose" --log "$log" &
	test_pid=$!
	wait "$test_pid" || rc=1
	read -r p1 f1 <"$run/result-compose" 2>/dev/null || { p1=0 f1=1; }
fi
if [ "$run_s3" = 1 ]; then
	# The same deployment on an s3:// warehouse (docker/docker-compose.s3.yml),
	# its counts added to the first test's.
	echo "docker-test: running tests/docker/test_compose_s3.py"
	python3 tests/docker/test_compose_s3.py --result "$run/result-s3" --log "$log" &
	test_pid=$!
	wait "$test_pid" || rc=1
	read -r p2 f2 <"$run/result-s3" 2>/dev/null || { p2=0 f2=1; }
fi
p3=0 f3=0
if [ "$run_ha" = 1 ]; then
	# The "ha" profile: floe-ha on a Patroni cluster, its leader killed
	# under commits (tests/docker/test_compose_ha.py).
	echo "docker-test: running tests/docker/test_compose_ha.py"
	python3 tests/docker/test_compose_ha.py --result "$run/result-ha" --log "$log" &
	test_pid=$!
	wait "$test_pid" || rc=1
	read -r p3 f3 <"$run/result-ha" 2>/dev/null || { p3=0 f3=1; }
fi
echo "$((p1 + p2 + p3)) $((f1 + f2 + f3))" >"$result"
exit "$rc"
