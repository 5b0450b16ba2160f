#!/usr/bin/env bash
# Installs the OpenID provider floe's external-issuer tests start
# (tests/oidc: the oidc-provider package from the npm registry, the version
# tests/oidc/package-lock.json pins) into a cache outside the clone, with
# scripts/node-deps.sh, and prints the path of the provider's script.
#
#   scripts/oidc-deps.sh          # prints the path of the provider's script
#
# Environment:
#   FLOE_ENGINES_CACHE  the cache (default: ${XDG_CACHE_HOME:-~/.cache}/floe)
set -euo pipefail
exec "$(dirname "$0")/node-deps.sh" tests/oidc provider.mjs
