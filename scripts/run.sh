#!/usr/bin/env bash
# Installs what is missing, builds floe, and runs it with its embedded
# PostgreSQL on 127.0.0.1:8181 (data in ./floe-data). Extra arguments are
# passed to floe (see floe --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
exec build/server/floe "$@"
