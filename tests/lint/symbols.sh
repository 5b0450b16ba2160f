#!/usr/bin/env bash
# Fails when one global symbol is defined by two of floe's static
# libraries: the linker would take whichever it meets first and call it
# for both, without a word (a function of one layer and an array of
# another once shared a name this way).
#   symbols.sh LIBRARY...
set -euo pipefail
dups=$(for lib in "$@"; do
	nm --defined-only -g "$lib" 2>/dev/null | awk 'NF == 3 && $2 != "U" { print $3 }' | sort -u
done | sort | uniq -d)
if [ -n "$dups" ]; then
	echo "global symbols defined in more than one library:"
	echo "$dups"
	exit 1
fi
echo "every global symbol is defined once across $# libraries"
