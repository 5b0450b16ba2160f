#!/usr/bin/env bash
# Installs what floe needs on a Debian 12 machine and builds it.
#   scripts/setup.sh [--python] [BUILD_DIR [MESON_OPTION...]]
# --python also prepares the tests: their virtual environment in .venv, the
# static analysers and gcovr.
set -euo pipefail
cd "$(dirname "$0")/.."

want_python=0
if [ "${1:-}" = "--python" ]; then
	want_python=1
	shift
fi
build_dir=${1:-build}
shift || true

packages=(build-essential pkg-config meson ninja-build
	libmicrohttpd-dev libjansson-dev libpq-dev libcurl4-openssl-dev
	libssl-dev zlib1g-dev libcriterion-dev postgresql postgresql-contrib curl)
if [ "$want_python" = 1 ]; then
	packages+=(python3 python3-venv python3-pip)
	# scripts/lint.sh's analysers and the coverage report of scripts/test.sh.
	packages+=(clang-14 clang-tidy-14 clang-tools-14 clang-format-14 cppcheck gcovr)
	# Spark (tests/spark) runs on Java 17; keep a JDK already on the machine.
	command -v java >/dev/null || packages+=(openjdk-17-jre-headless)
	# The engine tests (tests/engines) fetch Trino and Iceberg's REST
	# Compatibility Kit from Maven Central with Maven.
	packages+=(maven)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "$want_python" = 1 ]; then
	if [ ! -x .venv/bin/python ]; then
		python3 -m venv .venv
	fi
	stamp=.venv/.requirements.sha
	sum=$(cat tests/requirements.txt tests/spark/requirements.txt tests/engines/requirements.txt | sha256sum | cut -d' ' -f1)
	if [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
		.venv/bin/pip install -q --upgrade pip
		.venv/bin/pip install -q -r tests/requirements.txt -r tests/spark/requirements.txt \
			-r tests/engines/requirements.txt
		echo "$sum" > "$stamp"
	fi
fi

if [ ! -f "$build_dir/build.ninja" ]; then
	meson setup "$build_dir" "$@"
else
	meson configure "$build_dir" "$@" >/dev/null
fi
ninja -C "$build_dir"
