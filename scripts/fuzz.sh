#!/usr/bin/env bash
# Builds the libFuzzer targets (the asan preset's tree, build-asan/: clang, ASan + UBSan, where
# scripts/sanitize.sh asan runs the suite; the `fuzz` build preset builds only the targets) and
# runs each for SECONDS (as many at once as there are cores), then prints executions, corpus size
# and crashes.
# Usage: scripts/fuzz.sh SECONDS [TARGET...]   targets: scenario json_trace csv_trace pickle
#                                                alloc_conf
# The working corpus (build-asan/corpus/TARGET) grows from run to run; it starts from the seeds
# of fuzz/seeds.txt and tests/data/fuzz/TARGET/. Exit 1 when a target crashed, 2 on bad usage.
# Environment: JOBS (build jobs, default: all cores), FUZZ_JOBS (targets at once, default: the
# cores), FUZZ_RSS_MB (default 2048).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
all_targets=(scenario json_trace csv_trace pickle alloc_conf)

usage() {
  echo "usage: scripts/fuzz.sh SECONDS [TARGET...]  (targets: ${all_targets[*]})" >&2
  exit 2
}
[ $# -ge 1 ] || usage
seconds=$1
shift
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || usage
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz: unknown target \"$t\"" >&2; usage; }
done

# clang and its runtime libraries (libFuzzer, the sanitizers) besides the usual packages.
PINBENCH_SETUP_ONLY_PACKAGES=1 PINBENCH_EXTRA_PACKAGES="clang libclang-rt-14-dev" "$root/scripts/setup.sh"

build=$root/build-asan
cd "$root"
# shellcheck source=scripts/preset-tree.sh
. "$root/scripts/preset-tree.sh"
preset_tree_current "$build" || cmake --preset asan --fresh >&2
cmake --build --preset fuzz -j "${JOBS:-$(nproc)}" >&2

# The seeds of one target, copied into one directory (fuzz/seeds.txt lists them by pattern).
stage_seeds() {
  local target=$1 dir=$2 t pattern f
  rm -rf "$dir"
  mkdir -p "$dir"
  while read -r t pattern; do
    [ "$t" = "$target" ] || continue  # comments and other targets
    for f in $root/$pattern; do
      [ -f "$f" ] && cp "$f" "$dir/$(basename "$(dirname "$f")")-$(basename "$f")"
    done
  done <"$root/fuzz/seeds.txt"
  for f in "$root/tests/data/fuzz/$target"/*; do
    [ -f "$f" ] && cp "$f" "$dir/regression-$(basename "$f")"
  done
  return 0
}

# One target: stage its seeds, fuzz, and leave two lines for the summary in logs/TARGET.result:
# the figures, then the new reproducers ("" when none).
fuzz_target() {
  local t=$1 corpus=$build/corpus/$1 seeds=$build/seeds/$1 artifacts=$build/artifacts/$1
  local log=$build/logs/$1.log marker=$build/logs/.$1.start rc=0 runs corpus_size new_artifacts crashes
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  stage_seeds "$t" "$seeds"
  touch "$marker"
  echo "fuzz: $t for ${seconds}s (log: ${log#"$root"/})" >&2
  "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb="${FUZZ_RSS_MB:-2048}" \
    -print_final_stats=1 -dict="$root/fuzz/$t.dict" -artifact_prefix="$artifacts/" \
    "$corpus" "$seeds" >"$log" 2>&1 || rc=$?
  # libFuzzer's last words: "Done N runs in S second(s)", or stat::number_of_executed_units.
  runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n1)
  [ -n "$runs" ] || runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -n1)
  [ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -n1)
  corpus_size=$(find "$corpus" -type f | wc -l)
  new_artifacts=$(find "$artifacts" -type f -newer "$marker" \
                    \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
  crashes=$(printf '%s' "$new_artifacts" | grep -c . || true)
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
    crashes=1  # it stopped without leaving a reproducer (say, killed): see the log
    new_artifacts="(no reproducer: see ${log#"$root"/})"
  fi
  { printf '%-11s executions %10s  corpus %6s  crashes %s\n' "$t" "${runs:-?}" "$corpus_size" "$crashes"
    printf '%s\n' "$new_artifacts" | tr '\n' ' '; echo; } >"$build/logs/$t.result"
}

# libFuzzer runs one thread: as many targets at once as there are cores, so that the stage takes
# SECONDS per round of targets rather than per target. Each still gets SECONDS of its own.
parallel=${FUZZ_JOBS:-$(nproc)}
for t in "${targets[@]}"; do
  rm -f "$build/logs/$t.result"
  fuzz_target "$t" &
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
done
wait

summary=()
crashed=()
for t in "${targets[@]}"; do
  if [ ! -s "$build/logs/$t.result" ]; then
    summary+=("$(printf '%-11s did not finish (see build-asan/logs/%s.log)' "$t" "$t")")
    crashed+=("$t: (no result: see build-asan/logs/$t.log)")
    continue
  fi
  { read -r line; read -r new_artifacts || true; } <"$build/logs/$t.result"
  summary+=("$line")
  [ -z "${new_artifacts// /}" ] || crashed+=("$t: $new_artifacts")
done

echo "fuzz: ${seconds}s per target (build-asan/, clang + ASan + UBSan)"
printf '%s\n' "${summary[@]}"
if [ ${#crashed[@]} -gt 0 ]; then
  echo "fuzz: CRASHED. Reproducers:" >&2
  printf '  %s\n' "${crashed[@]}" >&2
  cat >&2 <<'TXT'
Reproduce one with build-asan/fuzz/fuzz_TARGET FILE (the log under build-asan/logs/ has the
report). Once fixed, keep it as a regression that the normal test suite replays:
  cp FILE tests/data/fuzz/TARGET/SHORT-NAME   (tests/fuzz/replay_test.cpp, tag [fuzz])
TXT
  exit 1
fi
