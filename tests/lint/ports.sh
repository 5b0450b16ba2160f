#!/usr/bin/env bash
# Fails when a file of catalog/ includes the header of store/, fileio/ or
# hooks/ itself instead of ports.h: the unit tests link fakes of exactly
# what ports.h declares, so a way around it would be a way around them.
#   ports.sh SOURCE_ROOT
set -euo pipefail
cd "$1"
pattern='^#include "(store|fileio|hooks|backend|s3sign)\.h"'
if found=$(grep -nE "$pattern" catalog/*.[ch] | grep -v '^catalog/ports\.h:'); then
	echo "catalog files that pass by ports.h:"
	echo "$found"
	exit 1
fi
echo "catalog reaches store, fileio and hooks through ports.h only"
