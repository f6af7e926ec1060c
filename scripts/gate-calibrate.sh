#!/usr/bin/env bash
# Calibrates the performance gate on this machine: how often it fails identical code (A/A) and
# how often it catches a known slowdown (A/B, the host backend's `--host-fault slow=P%`).
#
#   scripts/gate-calibrate.sh [pinbench run args...]
#
# Runs PAIRS+HISTORY results of the suite (--repeat REPEAT each) and compares each with the
# HISTORY runs before it (A/A: any exit but 0 is a false alarm), then PAIRS results with the
# slowdown, each compared with the same baselines as the A/A comparison of its number (A/B:
# exit 1 is a detection). Prints both rates, the metrics the slowdown was caught on, and the
# wall time of one run of the suite (a gate is one run and a comparison of about a second).
# With no run arguments the built-in quick suite runs on the host backend.
#
# Environment:
#   PINBENCH       the executable (default: build/app/pinbench of this checkout)
#   PAIRS          comparisons of each kind (default 10)
#   HISTORY        baseline results per comparison (default 3, a history; 1: one file)
#   REPEAT         rounds per run (default 3: the recommended setting)
#   SLOW           the injected slowdown (default 20%)
#   COMPARE_ARGS   extra arguments for pinbench compare (default: none, the recommended settings)
#   CALIBRATE_OUT  folder for the results and comparisons (default: a temporary folder, removed);
#                  results already there are used again, so other PAIRS and HISTORY settings
#                  can be judged on the same runs
set -euo pipefail

if [[ $# -ge 1 && ($1 == -h || $1 == --help) ]]; then
  sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PINBENCH=${PINBENCH:-$root/build/app/pinbench}
pairs=${PAIRS:-10}
history=${HISTORY:-3}
repeat=${REPEAT:-3}
slow=${SLOW:-20%}
for v in "PAIRS=$pairs" "REPEAT=$repeat" "HISTORY=$history"; do
  if [[ ! ${v#*=} =~ ^[1-9][0-9]*$ ]]; then
    echo "gate-calibrate: ${v%%=*} must be a positive count, got \"${v#*=}\"" >&2
    exit 2
  fi
done
if [[ ! -x $PINBENCH ]]; then
  echo "gate-calibrate: $PINBENCH is not an executable: build pinbench first, or set PINBENCH" >&2
  exit 2
fi
run_args=("$@")
[[ ${#run_args[@]} -eq 0 ]] && run_args=(--backend host)

if [[ -n ${CALIBRATE_OUT:-} ]]; then
  out=$CALIBRATE_OUT
  mkdir -p "$out"
else
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
read -r -a extra <<<"${COMPARE_ARGS:-}"

run() {  # FILE [extra run args...]
  local file=$1
  shift
  local code=0
  "$PINBENCH" run "${run_args[@]}" "$@" --repeat "$repeat" --quiet --out "$file" >/dev/null ||
    code=$?
  if [[ $code -ne 0 && $code -ne 1 ]]; then
    echo "gate-calibrate: pinbench run exited with $code" >&2
    exit "$code"
  fi
}

compare_with() {  # BASE [--baseline FILE]... -- CURRENT NAME: prints compare's exit code
  local base=() code=0
  while [[ $1 != -- ]]; do
    base+=("$1")
    shift
  done
  shift
  "$PINBENCH" compare "${base[@]}" "$1" --out "$out/$2.json" ${extra[@]+"${extra[@]}"} \
    >"$out/$2.txt" 2>&1 || code=$?
  echo "$code"
}

run_ms=0
runs=0
timed_run() {  # FILE [extra run args...]: skipped when FILE is there already
  [[ -f $1 ]] && return 0
  local t0
  t0=$(date +%s%N)
  run "$@"
  run_ms=$((run_ms + ($(date +%s%N) - t0) / 1000000))
  runs=$((runs + 1))
}

# The baseline of comparison K: the HISTORY plain runs before plain run K+HISTORY-1.
baseline=()
set_baseline() {
  local k=$1 j
  baseline=("$out/plain-$((k - 1)).json")
  for ((j = k; j < k + history - 1; j++)); do baseline+=(--baseline "$out/plain-$j.json"); done
}

echo "gate-calibrate: $((2 * pairs + history)) runs of: pinbench run ${run_args[*]} --repeat $repeat" >&2
false_alarms=0
for ((i = 0; i < pairs + history; i++)); do timed_run "$out/plain-$i.json"; done
for ((k = 1; k <= pairs; k++)); do
  set_baseline "$k"
  code=$(compare_with "${baseline[@]}" -- "$out/plain-$((k + history - 1)).json" "aa-$k")
  echo "A/A $k: exit $code" >&2
  [[ $code -ne 0 ]] && false_alarms=$((false_alarms + 1))
done

detections=0
caught=()
for ((k = 1; k <= pairs; k++)); do
  timed_run "$out/slow-$k.json" --host-fault "slow=$slow"
  set_baseline "$k"
  code=$(compare_with "${baseline[@]}" -- "$out/slow-$k.json" "ab-$k")
  # The table's list lines read "  regression: CASE METRIC: why".
  metrics=$(awk '$1 == "regression:" {sub(/:$/, "", $3); print $3}' "$out/ab-$k.txt" | sort -u |
    tr '\n' ' ')
  echo "A/B $k: exit $code; regressions in: ${metrics:-none}" >&2
  [[ $code -eq 1 ]] && detections=$((detections + 1))
  caught+=("$metrics")
done

printf 'settings:     pinbench run %s --repeat %s; compare with %s baseline result(s) %s\n' \
  "${run_args[*]}" "$repeat" "$history" "${COMPARE_ARGS:-(defaults)}"
printf 'false alarms: %d of %d A/A comparisons\n' "$false_alarms" "$pairs"
printf 'detections:   %d of %d A/B comparisons (slow=%s)\n' "$detections" "$pairs" "$slow"
printf 'caught on:    %s\n' "$(printf '%s\n' "${caught[@]}" | tr ' ' '\n' | sort | uniq -c |
  sort -rn | awk 'NF == 2 {printf "%s (%d) ", $2, $1}')"
printf 'calibration:  %d s in all\n' "$((run_ms / 1000))"
if ((runs > 0)); then
  printf 'one run:      %d s (the suite, --repeat %s)\n' "$((run_ms / runs / 1000))" "$repeat"
fi
[[ -n ${CALIBRATE_OUT:-} ]] && printf 'files:        %s\n' "$out"
exit 0
