#!/usr/bin/env bash
# First the layout: every C and C++ file git tracks (lib/, app/, tests/, fuzz/, cmake/) laid out as
# .clang-format says (clang-format --dry-run -Werror; `scripts/lint.sh --fix-format` rewrites
# them). Then clang-tidy over lib/ and app/ with the checks of .clang-tidy (bug finders, performance traps, a
# few modernize checks); any finding is an error. It reads the compile commands of the asan tree
# (build-asan/: clang, the same version as clang-tidy), built first when needed: that tree is a
# unity build, so clang-tidy parses each module's sources once, as one translation unit, not each
# file with all of its headers again.
# Usage: scripts/lint.sh [--fix-format] [-- RUN-CLANG-TIDY-ARGS...]   (e.g. -- -fix)
# Environment: JOBS (default: all cores).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=${JOBS:-$(nproc)}
extra=()
fix_format=0
if [ "${1:-}" = --fix-format ]; then
  fix_format=1
  shift
fi
if [ $# -gt 0 ]; then
  [ "$1" = -- ] || { echo "usage: scripts/lint.sh [--fix-format] [-- RUN-CLANG-TIDY-ARGS...]" >&2; exit 2; }
  shift
  extra=("$@")
fi

PINBENCH_SETUP_ONLY_PACKAGES=1 \
  PINBENCH_EXTRA_PACKAGES="clang libclang-rt-14-dev clang-tidy clang-format python3" \
  "$root/scripts/setup.sh"

# The layout. clang-format 14, the version of Debian's clang tools here: another version may
# lay the same code out differently.
format=$(command -v clang-format-14 || command -v clang-format || true)
[ -n "$format" ] || { echo "lint: clang-format not found (Debian: clang-format)" >&2; exit 1; }
mapfile -t sources < <(git -C "$root" ls-files '*.cpp' '*.hpp' '*.cu' '*.h' '*.c' | grep -v '^tests/data/')
if [ "$fix_format" = 1 ]; then
  (cd "$root" && "$format" -i --style=file "${sources[@]}")
  echo "lint: ${#sources[@]} files formatted" >&2
else
  format_log=$(mktemp)
  if ! (cd "$root" && "$format" --dry-run -Werror --style=file "${sources[@]}") 2>"$format_log"; then
    # Each file once, with the first line that differs.
    grep -E ': error: ' "$format_log" | sort -t: -k1,1 -u | cut -d: -f1,2 | sed -n '1,20p' >&2 || true
    rm -f "$format_log"
    echo "lint: FAILED: the files above are not laid out as .clang-format says" \
         "(scripts/lint.sh --fix-format rewrites them)" >&2
    exit 1
  fi
  rm -f "$format_log"
  echo "lint: ${#sources[@]} files laid out as .clang-format says" >&2
fi
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
