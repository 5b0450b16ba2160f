#!/usr/bin/env bash
# Installs the OpenID provider floe's external-issuer tests start
# (tests/oidc: the oidc-provider package from the npm registry, the version
# tests/oidc/package-lock.json pins) into a cache outside the clone, with
# `npm ci`, so that a second run on the machine downloads nothing. The
# provider's script is copied beside its modules, where Node.js finds them,
# under a name of its content, so that checkouts with other versions of it
# can share the cache.
#
#   scripts/oidc-deps.sh          # prints the path of the provider's script
#
# Environment:
#   FLOE_ENGINES_CACHE  the cache (default: ${XDG_CACHE_HOME:-~/.cache}/floe)
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${FLOE_ENGINES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/floe}
DIR=$CACHE/oidc
STAMP=$DIR/.lock.sha

command -v node >/dev/null || { echo "oidc-deps: node (Node.js 20 or later) is required" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
[[ $major -ge 20 ]] || { echo "oidc-deps: Node.js $major is too old for oidc-provider (20 or later)" >&2; exit 1; }

# One install at a time: test runs may start together on one machine.
mkdir -p "$DIR"
exec 9>"$DIR.lock"
flock 9

sum=$(cat tests/oidc/package.json tests/oidc/package-lock.json | sha256sum | cut -d' ' -f1)
if [[ "$(cat "$STAMP" 2>/dev/null)" != "$sum" ]]; then
	echo "oidc-deps: oidc-provider (tests/oidc/package-lock.json) into $DIR" >&2
	rm -f "$STAMP"
	cp tests/oidc/package.json tests/oidc/package-lock.json "$DIR/"
	(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error >&2)
	echo "$sum" > "$STAMP"
fi
script=$DIR/provider-$(sha256sum tests/oidc/provider.mjs | cut -c1-16).mjs
if [[ ! -f "$script" ]]; then
	cp tests/oidc/provider.mjs "$script.$$"
	mv -f "$script.$$" "$script"
fi
echo "$script"
