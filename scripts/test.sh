#!/usr/bin/env bash
# Set up (packages, configure, build), then run the whole test suite through ctest, then the
# same suite under AddressSanitizer+UBSan and under ThreadSanitizer (scripts/sanitize.sh), then
# each fuzz target for a short time (scripts/fuzz.sh).
# Tests that need a GPU are reported as skipped when no CUDA device is usable.
# Extra arguments go to every ctest run (e.g. scripts/test.sh -R scenario).
# Environment: PINBENCH_STAGES (default "suite asan tsan fuzz": pick a subset for a quicker
#              loop, e.g. PINBENCH_STAGES=suite), PINBENCH_FUZZ_SECONDS (default 10 per target),
#              BUILD_DIR, JOBS.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
stages=" ${PINBENCH_STAGES:-suite asan tsan fuzz} "
for s in $stages; do
  case "$s" in
    suite|asan|tsan|fuzz) ;;
    *) echo "test.sh: PINBENCH_STAGES: unknown stage \"$s\" (expected suite, asan, tsan, fuzz)" >&2; exit 2 ;;
  esac
done

elapsed() { echo "$(( $(date +%s) - $1 )) s"; }
summary=()
status=0

if [[ "$stages" == *" suite "* ]]; then
  t0=$(date +%s)
  "$root/scripts/setup.sh"
  BUILD_DIR=${BUILD_DIR:-$root/build}
  if (cd "$BUILD_DIR" && ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 300 "$@"); then
    summary+=("suite: passed ($(elapsed "$t0"))")
  else
    summary+=("suite: FAILED ($(elapsed "$t0"))"); status=1
  fi
fi

for kind in asan tsan; do
  [[ "$stages" == *" $kind "* ]] || continue
  t0=$(date +%s)
  if "$root/scripts/sanitize.sh" "$kind" -- "$@"; then
    summary+=("$kind: clean ($(elapsed "$t0"))")
  else
    summary+=("$kind: FAILED ($(elapsed "$t0"))"); status=1
  fi
done

if [[ "$stages" == *" fuzz "* ]]; then
  t0=$(date +%s)
  if "$root/scripts/fuzz.sh" "${PINBENCH_FUZZ_SECONDS:-10}"; then
    summary+=("fuzz: no crash ($(elapsed "$t0"))")
  else
    summary+=("fuzz: FAILED ($(elapsed "$t0"))"); status=1
  fi
fi

echo "test.sh:" >&2
for line in "${summary[@]}"; do echo "  $line" >&2; done
exit "$status"
