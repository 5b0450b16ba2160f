#!/usr/bin/env bash
# Fails when a file of server/ other than the gate (gate.c) and the route
# table's demands (routes.c) asks an authorization question itself: every
# route's privileges are the route table's, checked by the one gate before
# its handler runs (docs/auth.md "What each route asks for").
#   gate.sh SOURCE_ROOT
set -euo pipefail
cd "$1"
pattern='\b(authz_check|authz_check_listing|access_check|access_check_all|access_check_commit|access_check_listing|access_check_ns_create|gate_demand)[[:space:]]*\('
if found=$(grep -nE "$pattern" server/*.c | grep -vE '^server/(gate|routes)\.c:'); then
	echo "server files that decide access by themselves (the gate's to do):"
	echo "$found"
	exit 1
fi
echo "only the gate decides access in server/"
if found=$(grep -nE '\bMUT\b' server/routes.c | grep -vE '#define|\bMUT \| IDEM\b'); then
	echo "route table rows that change the catalog without IDEM (their answer in the change's transaction):"
	echo "$found"
	exit 1
fi
echo "every mutating route records its answer in its change's transaction"
