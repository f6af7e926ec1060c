#!/usr/bin/env bash
# CI performance gate: measures, compares with a baseline, writes Markdown and JUnit XML, and
# exits with `pinbench compare`'s code. Two ways:
#
#   scripts/ci-gate.sh BASELINE [pinbench run args...]
#       runs the suite (--repeat GATE_REPEAT, a process per round) and compares it with
#       BASELINE: a result file, or a folder of them (the last runs of main: the gate takes
#       the run-to-run noise from them).
#   scripts/ci-gate.sh --ab OLD_PINBENCH NEW_PINBENCH [pinbench run args...]
#       A/B on one runner, for those without a quiet baseline machine: runs the two binaries
#       alternately, GATE_ROUNDS processes each (old, new, new, old, old, ...: drift of the
#       machine falls on both), each process one round, and compares old's rounds with new's.
#
# With no run arguments the built-in quick suite runs (`--backend host`, scenario files,
# `builtin:NAME` and `--set` go to `pinbench run`). Exit codes are compare's: 0 no gated
# regression, 1 at least one (or a failed case), 2 usage or input error, 3 missing baseline,
# incomparable results (or inconclusive under --strict); a run that cannot start exits with
# run's code (2, 3, 130).
#
# Environment:
#   PINBENCH             the pinbench executable (default: build/app/pinbench of this checkout);
#                        it also compares in --ab mode
#   GATE_OUT             output folder (default: pinbench-gate): current.json (or old/ and new/
#                        with one result per round), compare.json, compare.md, junit.xml
#   GATE_REPEAT          rounds of the current run against a baseline (default 3)
#   GATE_ROUNDS          processes per binary in --ab mode (default 3)
#   COMPARE_ARGS         extra arguments for pinbench compare, e.g. "--threshold 10% --strict"
#   GITHUB_STEP_SUMMARY  when set (GitHub Actions), compare.md is appended to it
set -euo pipefail

usage() { sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'; }
if [[ $# -ge 1 && ($1 == -h || $1 == --help) ]]; then
  usage
  exit 0
fi
if [[ $# -lt 1 ]]; then
  echo "usage: scripts/ci-gate.sh BASELINE [pinbench run args...]" \
       "| --ab OLD_PINBENCH NEW_PINBENCH [pinbench run args...] (--help for more)" >&2
  exit 2
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PINBENCH=${PINBENCH:-$root/build/app/pinbench}
out=${GATE_OUT:-pinbench-gate}

executable() {
  if [[ ! -x $1 ]]; then
    echo "ci-gate: $1 is not an executable: build pinbench first, or set PINBENCH" >&2
    exit 2
  fi
}

count() {  # NAME VALUE: a positive round count, or exit 2
  if [[ ! $2 =~ ^[1-9][0-9]*$ ]]; then
    echo "ci-gate: $1 must be a positive count, got \"$2\"" >&2
    exit 2
  fi
}

# One measurement: BINARY OUT_FILE [run args...]. A failed case (exit 1) still leaves a result:
# compare reports it as a failed case; anything else stops the gate with run's code.
measure() {
  local binary=$1 file=$2
  shift 2
  local code=0
  "$binary" run "$@" --quiet --out "$file" || code=$?
  if [[ $code -ne 0 && $code -ne 1 ]]; then
    echo "ci-gate: $binary run exited with $code: nothing to compare" >&2
    exit "$code"
  fi
}

mode=baseline
if [[ $1 == --ab ]]; then
  if [[ $# -lt 3 ]]; then
    echo "usage: scripts/ci-gate.sh --ab OLD_PINBENCH NEW_PINBENCH [pinbench run args...]" >&2
    exit 2
  fi
  mode=ab
  old=$2
  new=$3
  shift 3
  executable "$old"
  executable "$new"
  rounds=${GATE_ROUNDS:-3}
  count GATE_ROUNDS "$rounds"
else
  baseline=$1
  shift
  repeat=${GATE_REPEAT:-3}
  count GATE_REPEAT "$repeat"
  if [[ ! -e $baseline ]]; then
    echo "ci-gate: missing baseline: $baseline does not exist" \
         "(create it on the reference machine with: pinbench run --repeat $repeat [ARGS] --out $baseline)" >&2
    exit 3
  fi
fi
executable "$PINBENCH"

mkdir -p "$out"
# Files of an earlier gate must not pass for this one's.
rm -rf "$out/current.json" "$out/old" "$out/new" "$out/compare.json" "$out/compare.md" \
  "$out/junit.xml"

if [[ $mode == ab ]]; then
  mkdir -p "$out/old" "$out/new"
  for ((r = 1; r <= rounds; r++)); do
    # ABBA order: a machine that drifts one way during the gate favours neither binary.
    if ((r % 2 == 1)); then
      measure "$old" "$out/old/round-$r.json" "$@"
      measure "$new" "$out/new/round-$r.json" "$@"
    else
      measure "$new" "$out/new/round-$r.json" "$@"
      measure "$old" "$out/old/round-$r.json" "$@"
    fi
  done
  base_side=$out/old
  current_side=$out/new
else
  measure "$PINBENCH" "$out/current.json" --repeat "$repeat" "$@"
  base_side=$baseline
  current_side=$out/current.json
fi

read -r -a extra <<<"${COMPARE_ARGS:-}"
code=0
"$PINBENCH" compare "$base_side" "$current_side" --out "$out/compare.json" \
  --md "$out/compare.md" --junit "$out/junit.xml" ${extra[@]+"${extra[@]}"} || code=$?

if [[ -n ${GITHUB_STEP_SUMMARY:-} && -f $out/compare.md ]]; then
  cat "$out/compare.md" >>"$GITHUB_STEP_SUMMARY"
fi
exit "$code"
