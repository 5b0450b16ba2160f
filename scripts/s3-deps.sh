#!/usr/bin/env bash
# Builds versitygw, the second S3-compatible server floe's s3:// warehouse
# tests run against (beside moto's server mode), with the Go toolchain, once
# per version, into a cache outside the clone, and prints the binary's path.
# A second run with the same version builds nothing.
#
#   scripts/s3-deps.sh            # prints the path of the versitygw binary
#
# The build downloads the module and its dependencies from the Go module
# proxy (into Go's own module cache) and compiles them: about three minutes
# on a 2-core machine the first time, nothing afterwards.
#
# Environment:
#   FLOE_ENGINES_CACHE  the cache (default: ${XDG_CACHE_HOME:-~/.cache}/floe);
#                       the binary goes to its subfolder versitygw/VERSION
#   GO                  the Go toolchain (default: go on PATH, else
#                       /usr/local/go/bin/go); versitygw needs Go 1.25 or later
set -euo pipefail
cd "$(dirname "$0")/.."

MODULE=github.com/versity/versitygw
VERSION=v1.8.0

CACHE=${FLOE_ENGINES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/floe}
DIR=$CACHE/versitygw/$VERSION
BIN=$DIR/versitygw

if [[ -x $BIN ]]; then
	echo "$BIN"
	exit 0
fi

GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
[[ -x $GO ]] || { echo "s3-deps: the Go toolchain (1.25 or later) is required to build versitygw" >&2; exit 1; }

# One build at a time: test runs may start together on one machine.
mkdir -p "$DIR"
exec 9>"$DIR.lock"
flock 9
if [[ ! -x $BIN ]]; then
	echo "s3-deps: building $MODULE@$VERSION into $DIR" >&2
	start=$(date +%s)
	tmp=$(mktemp -d "$DIR/build.XXXXXX")
	# No debug information: a smaller binary, and a faster link.
	GOBIN=$tmp GOFLAGS=-mod=mod CGO_ENABLED=0 \
		"$GO" install -trimpath -ldflags='-s -w' "$MODULE/cmd/versitygw@$VERSION" >&2
	mv -f "$tmp/versitygw" "$BIN"
	rmdir "$tmp"
	echo "s3-deps: built in $(($(date +%s) - start)) s" >&2
fi
echo "$BIN"
