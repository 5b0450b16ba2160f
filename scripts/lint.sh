#!/usr/bin/env bash
# Static analysis of floe's C sources (lib/ meta/ fileio/ hooks/ auth/ trail/ store/
# catalog/ server/); any finding fails the run:
#  - clang-tidy with the checks of .clang-tidy (bugprone-*, cert-err33-c,
#    concurrency-mt-unsafe), headers included;
#  - cppcheck (warning, portability, performance);
#  - scan-build (the clang static analyzer) over a build of its own in
#    build-scan/;
#  - clang-format-14 --dry-run --Werror over every .c and .h
#    (.clang-format).
#   scripts/lint.sh [BUILD_DIR]     (default build: its compile_commands.json)
# The tools come from scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${1:-build}
scan_dir=build-scan
folders=(lib meta fileio hooks auth trail store catalog server)
jobs=$(nproc 2>/dev/null || echo 2)

if [ ! -f "$build_dir/compile_commands.json" ]; then
	echo "lint: $build_dir/compile_commands.json is missing (run scripts/setup.sh $build_dir first)" >&2
	exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The compile commands of the source folders only (not the tests, not the
# generated header checks), for both clang-tidy and cppcheck.
python3 - "$build_dir/compile_commands.json" "$work/cdb" "$PWD" "${folders[@]}" <<'EOF'
import json, os, sys
src, out, root, folders = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
keep = []
for e in json.load(open(src)):
    path = os.path.realpath(os.path.join(e["directory"], e["file"]))
    rel = os.path.relpath(path, root)
    if rel.split(os.sep)[0] in folders and rel.endswith(".c"):
        e["file"] = path
        keep.append(e)
os.makedirs(out)
json.dump(keep, open(os.path.join(out, "compile_commands.json"), "w"), indent=1)
with open(os.path.join(out, "files"), "w") as f:
    for e in keep:
        f.write(e["file"] + "\n")
EOF

failed=0

echo "== clang-tidy ($(wc -l <"$work/cdb/files") files)"
if xargs -P "$jobs" -n 1 clang-tidy-14 -p "$work/cdb" --quiet --use-color=false \
	<"$work/cdb/files" >"$work/tidy.log" 2>&1; then
	echo "clang-tidy: no finding"
else
	grep -E '(warning|error):' "$work/tidy.log" | sed -E "s|^$PWD/||; s|^(build[^/]*/)?\.\./||" | sort -u || cat "$work/tidy.log"
	echo "clang-tidy: findings above"
	failed=1
fi

echo "== cppcheck"
if cppcheck --project="$work/cdb/compile_commands.json" --quiet -j "$jobs" \
	--enable=warning,portability,performance --inline-suppr --error-exitcode=1 \
	--include="$(pkg-config --variable=includedir jansson)/jansson.h" \
	--suppress=missingIncludeSystem --template='{file}:{line}:{column}: {severity}: {message} [{id}]' \
	2>"$work/cppcheck.log"; then
	echo "cppcheck: no finding"
else
	sed "s|^$PWD/||" "$work/cppcheck.log"
	echo "cppcheck: findings above"
	failed=1
fi

echo "== scan-build ($scan_dir)"
if [ ! -f "$scan_dir/build.ninja" ]; then
	scan-build-14 meson setup "$scan_dir" -Dtests=false >"$work/scan-setup.log" 2>&1 ||
		{ cat "$work/scan-setup.log"; exit 2; }
fi
ninja -C "$scan_dir" clean >/dev/null
rm -rf "$scan_dir/reports"
if scan-build-14 --status-bugs -o "$scan_dir/reports" ninja -C "$scan_dir" >"$work/scan.log" 2>&1; then
	echo "scan-build: no finding"
else
	grep -E 'warning:|error:|bugs? found' "$work/scan.log" | sed 's|^\.\./||' | sort -u || cat "$work/scan.log"
	echo "scan-build: findings above (the reports: scan-view $scan_dir/reports/*)"
	failed=1
fi

echo "== clang-format"
if find "${folders[@]}" tests -name '*.[ch]' -print0 |
	xargs -0 clang-format-14 --dry-run --Werror 2>"$work/format.log"; then
	echo "clang-format: every file is formatted"
else
	grep -E '^[^ ].*(warning|error):' "$work/format.log" | cut -d: -f1 | sort | uniq -c |
		sort -rn | awk '{print $2 ": " $1 " places"}'
	echo "clang-format: the files above differ from .clang-format (clang-format-14 -i FILE)"
	failed=1
fi

exit "$failed"
