#!/usr/bin/env bash
# Set up (packages, configure, build), then the stages, each timed:
#   suite  the whole test suite through ctest, on the default build (the binaries carried to a
#          GPU machine); it also records which tests start threads (tests/thread_record/)
#   asan   the suite under AddressSanitizer + UBSan (scripts/sanitize.sh asan: clang, build-asan/,
#          which also holds the libFuzzer targets)
#   fuzz   each fuzz target for PINBENCH_FUZZ_SECONDS (scripts/fuzz.sh, build-asan/)
#   lint   clang-format over every C++ file, then clang-tidy on lib/ and app/ (scripts/lint.sh,
#          .clang-format, .clang-tidy; build-asan/'s commands)
#   tsan   under ThreadSanitizer, the tests that the suite saw start a thread (all of them when
#          the suite stage did not run in this call) (scripts/sanitize.sh tsan, build-tsan/)
# Tests that need a GPU are reported as skipped when no CUDA device is usable. Builds go through
# ccache when it is installed (setup.sh installs it); a summary of each stage's time, and of the
# cache, closes the run.
# Extra arguments go to every ctest run (e.g. scripts/test.sh -R scenario).
# Environment: PINBENCH_STAGES (default "suite asan fuzz lint tsan": pick a subset for a quicker
#              loop, e.g. PINBENCH_STAGES=suite), PINBENCH_FUZZ_SECONDS (default 8 per target:
#              the five targets share the 40 s four had),
#              BUILD_DIR, JOBS (build jobs, default: the cores), CTEST_JOBS (default: 2 x JOBS).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
all_stages="suite asan fuzz lint tsan"
stages=" ${PINBENCH_STAGES:-$all_stages} "
for s in $stages; do
  case " $all_stages " in
    *" $s "*) ;;
    *) echo "test.sh: PINBENCH_STAGES: unknown stage \"$s\" (expected one of: $all_stages)" >&2; exit 2 ;;
  esac
done

start_all=$(date +%s)
elapsed() { echo "$(( $(date +%s) - $1 )) s"; }
summary=()
status=0
ran() { summary+=("$(printf '%-6s %-10s %s' "$1:" "$2" "($(elapsed "$3"))")"); }

# Every package any stage needs, once, before the first stage: clang and its sanitizer and
# fuzzer runtimes (asan, fuzz), clang-tidy and clang-format (lint), python3 (tsan's test selection, script tests),
# chromium (the suite renders the report and compare pages in it: scripts/check-report.sh).
PINBENCH_SETUP_ONLY_PACKAGES=1 \
  PINBENCH_EXTRA_PACKAGES="clang libclang-rt-14-dev clang-tidy clang-format python3 chromium" \
  "$root/scripts/setup.sh"
ccache_counts() {  # "hits misses" so far, from ccache's statistics
  command -v ccache >/dev/null 2>&1 || { echo "0 0"; return; }
  ccache --print-stats 2>/dev/null | awk -F'\t' '
    $1=="direct_cache_hit"||$1=="preprocessed_cache_hit"{h+=$2} $1=="cache_miss"{m+=$2}
    END{print h+0, m+0}'
}
read -r hits0 misses0 <<<"$(ccache_counts)"

BUILD_DIR=${BUILD_DIR:-$root/build}
# Twice as many tests as cores at once: many tests spend their time waiting (signals, timeouts,
# child processes), and every test holds on a busy machine. [timing] tests still run alone.
export CTEST_JOBS=${CTEST_JOBS:-$(( 2 * ${JOBS:-$(nproc)} ))}
thread_record=""
if [[ "$stages" == *" suite "* ]]; then
  t0=$(date +%s)
  ok=1
  "$root/scripts/setup.sh" || ok=0
  if [ "$ok" = 1 ]; then
    # Record the tests whose processes start a thread, for the tsan stage.
    preload=()
    if [ -f "$BUILD_DIR/tests/libpinbench_record_threads.so" ]; then
      thread_record="$BUILD_DIR/tests/threads-started.txt"
      rm -f "$thread_record"
      preload=("LD_PRELOAD=$BUILD_DIR/tests/libpinbench_record_threads.so"
               "PINBENCH_THREAD_RECORD=$thread_record")
    fi
    (cd "$BUILD_DIR" && env "${preload[@]}" ctest --output-on-failure -j "$CTEST_JOBS" \
       --timeout 300 "$@") || ok=0
  fi
  if [ "$ok" = 1 ]; then ran suite passed "$t0"; else ran suite FAILED "$t0"; status=1; thread_record=""; fi
fi

if [[ "$stages" == *" asan "* ]]; then
  t0=$(date +%s)
  if "$root/scripts/sanitize.sh" asan -- "$@"; then ran asan clean "$t0"; else ran asan FAILED "$t0"; status=1; fi
fi

if [[ "$stages" == *" fuzz "* ]]; then
  t0=$(date +%s)
  if "$root/scripts/fuzz.sh" "${PINBENCH_FUZZ_SECONDS:-8}"; then
    ran fuzz "no crash" "$t0"
  else
    ran fuzz FAILED "$t0"; status=1
  fi
fi

if [[ "$stages" == *" lint "* ]]; then
  t0=$(date +%s)
  if "$root/scripts/lint.sh"; then ran lint clean "$t0"; else ran lint FAILED "$t0"; status=1; fi
fi

if [[ "$stages" == *" tsan "* ]]; then
  t0=$(date +%s)
  if [ -n "$thread_record" ] && [ -s "$thread_record" ]; then
    export PINBENCH_TSAN_THREAD_RECORD=$thread_record
  else
    echo "test.sh: tsan: no record of thread-starting tests from a suite stage in this call: the whole suite runs under TSan" >&2
  fi
  if "$root/scripts/sanitize.sh" tsan -- "$@"; then ran tsan clean "$t0"; else ran tsan FAILED "$t0"; status=1; fi
fi

echo "test.sh: $( [ "$status" = 0 ] && echo passed || echo FAILED ) in $(elapsed "$start_all")" >&2
for line in "${summary[@]}"; do echo "  $line" >&2; done
if command -v ccache >/dev/null 2>&1; then
  read -r hits1 misses1 <<<"$(ccache_counts)"
  echo "  ccache: $((hits1 - hits0)) compilations from the cache, $((misses1 - misses0)) compiled" >&2
fi
exit "$status"
