#!/usr/bin/env bash
# clang-tidy over lib/ and app/ with the checks of .clang-tidy (bug finders, performance traps, a
# few modernize checks); any finding is an error. It reads the compile commands of the asan tree
# (build-asan/: clang, the same version as clang-tidy), built first when needed: that tree is a
# unity build, so clang-tidy parses each module's sources once, as one translation unit, not each
# file with all of its headers again.
# Usage: scripts/lint.sh [-- RUN-CLANG-TIDY-ARGS...]   (e.g. -- -fix)
# Environment: JOBS (default: all cores).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=${JOBS:-$(nproc)}
extra=()
if [ $# -gt 0 ]; then
  [ "$1" = -- ] || { echo "usage: scripts/lint.sh [-- RUN-CLANG-TIDY-ARGS...]" >&2; exit 2; }
  shift
  extra=("$@")
fi

PINBENCH_SETUP_ONLY_PACKAGES=1 PINBENCH_EXTRA_PACKAGES="clang libclang-rt-14-dev clang-tidy python3" \
  "$root/scripts/setup.sh"
tidy=$(command -v run-clang-tidy-14 || command -v run-clang-tidy || true)
[ -n "$tidy" ] || { echo "lint: run-clang-tidy not found (Debian: clang-tidy)" >&2; exit 1; }

build=$root/build-asan
cd "$root"
# shellcheck source=scripts/preset-tree.sh
. "$root/scripts/preset-tree.sh"
preset_tree_current "$build" || cmake --preset asan --fresh >&2
# The precompiled headers and generated sources that the commands name must exist.
cmake --build "$build" -j "$JOBS" >&2

# The translation units of lib/ and app/: their unity sources (or their own files, in a tree
# configured without unity builds). Findings are reported in pinbench's own files only.
files=("^$build/(lib|app)/.*/Unity/" "^$root/(lib|app)/.*\\.cpp$")
units=$(grep -cE '"file": "('"$build"'/(lib|app)/.*/Unity/|'"$root"'/(lib|app)/.*\.cpp")' \
          "$build/compile_commands.json" || true)
echo "lint: clang-tidy on lib/ and app/: $units translation units, $JOBS at a time" >&2
log=$build/lint.log
if "$tidy" -p "$build" -j "$JOBS" -quiet -header-filter="^($root|$build/lib/modules)/" \
     "${extra[@]}" "${files[@]}" >"$log" 2>&1; then
  echo "lint: clean" >&2
else
  # The findings once each (a header's repeats in every unit that includes it), colours off.
  sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^/.*: (warning|error): ' | sort -u >&2 || true
  echo "lint: FAILED: the findings above (the whole log: ${log#"$root"/})" >&2
  exit 1
fi
