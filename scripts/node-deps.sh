#!/usr/bin/env bash
# Installs the npm packages one folder of floe's tests needs (FOLDER's
# package.json, at the versions its package-lock.json pins) into a cache
# outside the clone, with `npm ci`, so that a second run on the machine
# downloads nothing. The folder's script is copied beside the modules, where
# Node.js finds them, under a name of its content, so that checkouts with
# other versions of it can share the cache.
#
#   scripts/node-deps.sh tests/oidc provider.mjs      # prints the script's path
#   scripts/node-deps.sh tests/icebergjs driver.mjs
#
# The folders: tests/oidc (the OpenID provider the external-issuer tests
# start; scripts/oidc-deps.sh) and tests/icebergjs (the iceberg-js client).
#
# Environment:
#   FLOE_ENGINES_CACHE  the cache (default: ${XDG_CACHE_HOME:-~/.cache}/floe);
#                       FOLDER's packages go to its subfolder of FOLDER's name
set -euo pipefail
cd "$(dirname "$0")/.."

[[ $# -eq 2 ]] || { echo "usage: scripts/node-deps.sh FOLDER SCRIPT" >&2; exit 2; }
SRC=${1%/}
SCRIPT=$2
NAME=$(basename "$SRC")
[[ -f $SRC/package.json && -f $SRC/package-lock.json && -f $SRC/$SCRIPT ]] ||
	{ echo "node-deps: $SRC needs package.json, package-lock.json and $SCRIPT" >&2; exit 2; }

CACHE=${FLOE_ENGINES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/floe}
DIR=$CACHE/$NAME
STAMP=$DIR/.lock.sha

command -v node >/dev/null || { echo "node-deps: node (Node.js 20 or later) is required" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
[[ $major -ge 20 ]] || { echo "node-deps: Node.js $major is too old for $SRC (20 or later)" >&2; exit 1; }

# One install at a time: test runs may start together on one machine.
mkdir -p "$DIR"
exec 9>"$DIR.lock"
flock 9

sum=$(cat "$SRC/package.json" "$SRC/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ "$(cat "$STAMP" 2>/dev/null)" != "$sum" ]]; then
	echo "node-deps: $SRC/package-lock.json into $DIR" >&2
	rm -f "$STAMP"
	cp "$SRC/package.json" "$SRC/package-lock.json" "$DIR/"
	(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error >&2)
	echo "$sum" > "$STAMP"
fi
script=$DIR/${SCRIPT%.*}-$(sha256sum "$SRC/$SCRIPT" | cut -c1-16).${SCRIPT##*.}
if [[ ! -f "$script" ]]; then
	cp "$SRC/$SCRIPT" "$script.$$"
	mv -f "$script.$$" "$script"
fi
echo "$script"
