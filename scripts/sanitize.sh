#!/usr/bin/env bash
# Builds pinbench instrumented and runs the test suite under it:
#   asan: AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer (clang, build-asan; the
#         same tree holds the libFuzzer targets that scripts/fuzz.sh runs)
#   tsan: ThreadSanitizer (clang, build-tsan: clang compiles the instrumented tree in a third of
#         the time g++ takes)
# Usage: scripts/sanitize.sh [asan] [tsan] [-- CTEST-ARGS...]   (no name = both)
# Every executable is instrumented, the pinbench binary that the CLI tests start included, and
# every report ends the process that made it with exit code 66, so it fails the test that ran it.
# There are no suppression files: a report is a bug to fix, not to hide. Both trees are unity
# builds (the asan and tsan presets): a third of the compile time.
# Environment: JOBS (default: all cores), CTEST_JOBS (tests at once, default JOBS),
#   PINBENCH_TSAN_THREAD_RECORD=FILE: under TSan, run only the tests that FILE (written by the
#   plain suite, see scripts/test.sh) names as starting a thread, and the non-Catch tests.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=${JOBS:-$(nproc)}

kinds=()
ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    asan|tsan) kinds+=("$1") ;;
    --) shift; ctest_args=("$@"); break ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "sanitize.sh: unknown argument \"$1\" (expected asan, tsan or -- CTEST-ARGS)" >&2; exit 2 ;;
  esac
  shift
done
[ ${#kinds[@]} -eq 0 ] && kinds=(asan tsan)

# Packages first (the same list as every build, and clang for asan), without building the
# default tree.
PINBENCH_SETUP_ONLY_PACKAGES=1 PINBENCH_EXTRA_PACKAGES="clang libclang-rt-14-dev python3" \
  "$root/scripts/setup.sh"

# detect_leaks: LeakSanitizer runs at every exit (the CLI tests' pinbench processes included).
# detect_stack_use_after_return and check_initialization_order catch what the defaults do not.
# halt_on_error + a distinct exitcode: the first report fails its test, whatever the test says.
asan_env=(
  "ASAN_OPTIONS=detect_leaks=1:exitcode=66:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:abort_on_error=0"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=66"
  "LSAN_OPTIONS=exitcode=66"
  # Sanitized code runs 2x to 15x slower: tests that bound a duration (SIGINT must end a run
  # within a second) scale their bound by this factor.
  "PINBENCH_TEST_TIME_SCALE=3"
)
tsan_env=(
  "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:exitcode=66"
  "PINBENCH_TEST_TIME_SCALE=8"
)

# shellcheck source=scripts/preset-tree.sh
. "$root/scripts/preset-tree.sh"

run_kind() {
  local kind=$1 dir="$root/build-$1"
  echo "sanitize.sh: $kind: configure and build ($dir)" >&2
  if ! preset_tree_current "$dir"; then
    (cd "$root" && cmake --preset "$kind" --fresh >&2) || return 1
  fi
  # Explicit returns: set -e does not apply inside a function called as an if condition, and a
  # failed build must not go on to report a suite of NOT_BUILT tests.
  cmake --build "$dir" -j "$JOBS" >&2 || return 1
  local env_vars=()
  if [ "$kind" = asan ]; then env_vars=("${asan_env[@]}"); else env_vars=("${tsan_env[@]}"); fi
  # TSan maps its shadow memory at fixed addresses. Kernels that randomise mmap with more bits
  # than the toolchain's TSan expects (vm.mmap_rnd_bits above 28) make every instrumented
  # process die before main with "unexpected memory mapping", which says nothing about the code.
  # setarch -R turns address space randomisation off for ctest and everything it starts.
  local launcher=()
  if [ "$kind" = tsan ] && [ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)" -gt 28 ]; then
    launcher=(setarch "$(uname -m)" -R)
  fi
  local select=()
  if [ "$kind" = tsan ] && [ -n "${PINBENCH_TSAN_THREAD_RECORD:-}" ]; then
    local numbers
    numbers=$("$root/scripts/threaded-tests.py" "$dir" "$PINBENCH_TSAN_THREAD_RECORD") || return 1
    select=(-I "$numbers")
    echo "sanitize.sh: $kind: running the tests that start threads" >&2
  else
    echo "sanitize.sh: $kind: running the whole suite" >&2
  fi
  (cd "$dir" && env "${env_vars[@]}" "${launcher[@]}" \
     ctest --output-on-failure -j "${CTEST_JOBS:-$JOBS}" --timeout 900 "${select[@]}" "${ctest_args[@]}")
}

status=0
for kind in "${kinds[@]}"; do
  if ! run_kind "$kind"; then
    echo "sanitize.sh: $kind: FAILED (see the report above; the first lines name the bug)" >&2
    status=1
  else
    echo "sanitize.sh: $kind: clean" >&2
  fi
done
exit "$status"
