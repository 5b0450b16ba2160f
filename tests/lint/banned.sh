#!/usr/bin/env bash
# Fails when a C source of floe calls a function the style bans: unbounded
# string functions, strtok (hidden state), ato* (no error report) and
# strerror (not thread-safe: use log_strerror or strerror_r).
#   banned.sh SOURCE_ROOT
set -euo pipefail
cd "$1"
pattern='\b(sprintf|vsprintf|strcpy|strcat|strtok|strtok_r|strerror|atoi|atol|atoll|gets)[[:space:]]*\('
if found=$(grep -nE "$pattern" lib/*.[ch] meta/*.[ch] fileio/*.[ch] hooks/*.[ch] auth/*.[ch] store/*.[ch] catalog/*.[ch] server/*.[ch] tests/unit/*.c tests/unit/fakes/*.c tests/fuzz/*.c); then
	echo "banned functions in use:"
	echo "$found"
	exit 1
fi
echo "no banned function in use"
