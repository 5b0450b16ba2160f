#!/usr/bin/env bash
# Fails when a file of server/ other than the start-up wiring includes a
# header of store/: the server reaches the store through catalog/ only
# (its ports), and only main.c and embedpg.c (the daemon's start-up) and
# auditcli.c (the `floe audit` command's own) make pools, run migrations
# or set up roles. A run-time thread that needs the database (the
# database watch, the listener of authorization changes) lives in
# catalog/, and the server only starts it.
#   startup.sh SOURCE_ROOT
set -euo pipefail
cd "$1"
pattern='^#include "store(_[a-z]+)?\.h"'
if found=$(grep -nE "$pattern" server/*.[ch] | grep -vE '^server/(main|embedpg|auditcli)\.c:'); then
	echo "server files that reach the store without catalog/:"
	echo "$found"
	exit 1
fi
echo "only the start-up wiring of server/ includes the store"
