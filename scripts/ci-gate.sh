#!/usr/bin/env bash
# CI performance gate: runs a pinbench suite, compares it with a baseline result, writes Markdown
# and JUnit XML, and exits with `pinbench compare`'s code.
#
#   scripts/ci-gate.sh BASELINE.json [pinbench run args...]
#
# With no run arguments the built-in quick suite runs (`--backend host`, scenario files,
# `builtin:NAME` and `--set` go to `pinbench run`). Exit codes are compare's: 0 no gated
# regression, 1 at least one (or a failed case), 2 usage or input error, 3 missing baseline,
# incomparable results (or inconclusive under --strict); a run that cannot start exits with
# run's code (2, 3, 130).
#
# Environment:
#   PINBENCH             the pinbench executable (default: build/app/pinbench of this checkout)
#   GATE_OUT             output folder (default: pinbench-gate): current.json, compare.json,
#                        compare.md, junit.xml
#   COMPARE_ARGS         extra arguments for pinbench compare, e.g. "--threshold 10% --strict"
#   GITHUB_STEP_SUMMARY  when set (GitHub Actions), compare.md is appended to it
set -euo pipefail

if [[ $# -ge 1 && ($1 == -h || $1 == --help) ]]; then
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
if [[ $# -lt 1 ]]; then
  echo "usage: scripts/ci-gate.sh BASELINE.json [pinbench run args...] (--help for more)" >&2
  exit 2
fi
baseline=$1
shift

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PINBENCH=${PINBENCH:-$root/build/app/pinbench}
out=${GATE_OUT:-pinbench-gate}

if [[ ! -x $PINBENCH ]]; then
  echo "ci-gate: $PINBENCH is not an executable: build pinbench first, or set PINBENCH" >&2
  exit 2
fi
if [[ ! -f $baseline ]]; then
  echo "ci-gate: missing baseline: $baseline does not exist" \
       "(create it on the reference machine with: pinbench run [ARGS] --out $baseline)" >&2
  exit 3
fi
mkdir -p "$out"
# Files of an earlier gate must not pass for this one's.
rm -f "$out/current.json" "$out/compare.json" "$out/compare.md" "$out/junit.xml"

# A failed case (exit 1) still leaves a result: compare reports it as a failed case.
run_code=0
"$PINBENCH" run "$@" --quiet --out "$out/current.json" || run_code=$?
if [[ $run_code -ne 0 && $run_code -ne 1 ]]; then
  echo "ci-gate: pinbench run exited with $run_code: nothing to compare" >&2
  exit "$run_code"
fi

read -r -a extra <<<"${COMPARE_ARGS:-}"
code=0
"$PINBENCH" compare "$baseline" "$out/current.json" --out "$out/compare.json" \
  --md "$out/compare.md" --junit "$out/junit.xml" ${extra[@]+"${extra[@]}"} || code=$?

if [[ -n ${GITHUB_STEP_SUMMARY:-} && -f $out/compare.md ]]; then
  cat "$out/compare.md" >>"$GITHUB_STEP_SUMMARY"
fi
exit "$code"
