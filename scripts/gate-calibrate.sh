#!/usr/bin/env bash
# Calibrates the performance gate on this machine: how often it fails identical code (A/A) and
# how often it catches a known slowdown (A/B, the host backend's `--host-fault slow=P%`).
#
#   scripts/gate-calibrate.sh [pinbench run args...]
#
# Runs PAIRS+1 results of the suite (--repeat REPEAT each) and compares each with the next
# (A/A: any exit but 0 is a false alarm), then PAIRS results with the slowdown, each compared
# with one of the plain ones (A/B: exit 1 is a detection). Prints both rates, the metrics the
# slowdown was caught on, and the wall time of one gate (one run plus its comparison). With no
# run arguments the built-in quick suite runs on the host backend.
#
# Environment:
#   PINBENCH       the executable (default: build/app/pinbench of this checkout)
#   PAIRS          comparisons of each kind (default 10)
#   REPEAT         rounds per run (default 3: the recommended setting)
#   SLOW           the injected slowdown (default 20%)
#   COMPARE_ARGS   extra arguments for pinbench compare (default: none, the recommended settings)
#   CALIBRATE_OUT  folder for the results and comparisons (default: a temporary folder, removed)
set -euo pipefail

if [[ $# -ge 1 && ($1 == -h || $1 == --help) ]]; then
  sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PINBENCH=${PINBENCH:-$root/build/app/pinbench}
pairs=${PAIRS:-10}
repeat=${REPEAT:-3}
slow=${SLOW:-20%}
for v in "PAIRS=$pairs" "REPEAT=$repeat"; do
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

compare() {  # BASE CURRENT NAME: prints compare's exit code
  local code=0
  "$PINBENCH" compare "$1" "$2" --out "$out/$3.json" ${extra[@]+"${extra[@]}"} \
    >"$out/$3.txt" 2>&1 || code=$?
  echo "$code"
}

run_ms=0
timed_run() {
  local t0
  t0=$(date +%s%N)
  run "$@"
  run_ms=$((run_ms + ($(date +%s%N) - t0) / 1000000))
}

echo "gate-calibrate: $((2 * pairs + 1)) runs of: pinbench run ${run_args[*]} --repeat $repeat" >&2
false_alarms=0
timed_run "$out/plain-0.json"
for ((i = 1; i <= pairs; i++)); do
  timed_run "$out/plain-$i.json"
  code=$(compare "$out/plain-$((i - 1)).json" "$out/plain-$i.json" "aa-$i")
  echo "A/A $i: exit $code" >&2
  [[ $code -ne 0 ]] && false_alarms=$((false_alarms + 1))
done

detections=0
caught=()
for ((i = 1; i <= pairs; i++)); do
  timed_run "$out/slow-$i.json" --host-fault "slow=$slow"
  code=$(compare "$out/plain-$i.json" "$out/slow-$i.json" "ab-$i")
  # The table's list lines read "  regression: CASE METRIC: why".
  metrics=$(awk '$1 == "regression:" {sub(/:$/, "", $3); print $3}' "$out/ab-$i.txt" | sort -u |
    tr '\n' ' ')
  echo "A/B $i: exit $code; regressions in: ${metrics:-none}" >&2
  [[ $code -eq 1 ]] && detections=$((detections + 1))
  caught+=("$metrics")
done

gate_s=$((run_ms / (2 * pairs + 1) / 1000))
printf 'settings:     pinbench run %s --repeat %s; compare %s\n' "${run_args[*]}" "$repeat" \
  "${COMPARE_ARGS:-(defaults)}"
printf 'false alarms: %d of %d A/A comparisons\n' "$false_alarms" "$pairs"
printf 'detections:   %d of %d A/B comparisons (slow=%s)\n' "$detections" "$pairs" "$slow"
printf 'caught on:    %s\n' "$(printf '%s\n' "${caught[@]}" | tr ' ' '\n' | sort | uniq -c |
  sort -rn | awk 'NF == 2 {printf "%s (%d) ", $2, $1}')"
printf 'calibration:  %d s in all\n' "$((run_ms / 1000))"
printf 'one gate:     %d s (one run of the suite; compare takes about a second)\n' "$gate_s"
[[ -n ${CALIBRATE_OUT:-} ]] && printf 'files:        %s\n' "$out"
exit 0
