#!/usr/bin/env bash
# A parameter sweep from the shell: one `pinbench run` per value of one --set key, one result
# file per point, then all points merged into one long-format CSV (one header).
#
# Usage: scripts/sweep.sh [--out-dir DIR] SCENARIO KEY VALUE... [-- RUN-ARGS...]
#
#   scripts/sweep.sh builtin:transfer-size bytes 64KiB 1MiB 16MiB -- --set direction=h2d
#   scripts/sweep.sh builtin:loader-workers num_workers 0 1 2 4 8 -- --backend host
#   scripts/sweep.sh --out-dir split scenarios/my.json config \
#       "" max_split_size_mb:128 expandable_segments:True
#
# SCENARIO is anything `pinbench run` takes (a file, a directory, builtin:NAME); KEY any param
# (dotted for nested ones: dataset.sample_bytes) or sampling key. A --set of KEY replaces the
# scenario's matrix axis of that name, so every point runs the remaining matrix at that value.
# RUN-ARGS after `--` go to every run (--backend, --seed, more --set ...).
#
# Writes DIR/KEY=VALUE.json per point (default DIR: sweep-KEY) and DIR/sweep.csv: the rows of
# `pinbench report POINT.json --csv -` for every point, the header once. Its columns hold the
# params, so the swept value is a column of its own; load it with any data frame library, e.g.
#   python3 -c 'import pandas as p; print(p.read_csv("sweep-bytes/sweep.csv")
#               .query("metric==\"bandwidth\"")[["case","bytes","median"]])'
# Uses $PINBENCH, else build/app/pinbench. Exit: 0, or 1 when a point had a failed case (the
# other points are still run and merged), or pinbench's code when a run could not start.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pinbench=${PINBENCH:-$root/build/app/pinbench}

usage() { sed -n '5p' "${BASH_SOURCE[0]}" | sed 's/^# //' >&2; exit 2; }

out_dir=
if [[ ${1:-} == --out-dir ]]; then
  [[ $# -ge 2 ]] || usage
  out_dir=$2
  shift 2
fi
[[ $# -ge 3 ]] || usage
scenario=$1
key=$2
shift 2
values=()
while [[ $# -gt 0 && $1 != -- ]]; do
  values+=("$1")
  shift
done
[[ ${1:-} == -- ]] && shift
run_args=("$@")
[[ ${#values[@]} -gt 0 ]] || usage
[[ -x $pinbench ]] || { echo "sweep: no pinbench at $pinbench (build it or set PINBENCH)" >&2; exit 2; }
out_dir=${out_dir:-sweep-$key}

# Check every point before running any: a typo in KEY or a VALUE fails now, not halfway.
sets=()
for ((i = 0; i < ${#run_args[@]}; i++)); do
  case ${run_args[i]} in
    --set) sets+=(--set "${run_args[i + 1]:-}"); i=$((i + 1)) ;;
    --set=*) sets+=("${run_args[i]}") ;;
  esac
done
for v in "${values[@]}"; do
  "$pinbench" validate "$scenario" --set "$key=$v" "${sets[@]}" --quiet ||
    { echo "sweep: $key=$v is not valid for $scenario" >&2; exit 2; }
done

mkdir -p "$out_dir"
status=0
files=()
for v in "${values[@]}"; do
  # A value may hold a slash (a path): keep file names flat.
  file=$out_dir/$key=${v//\//_}.json
  echo "sweep: $key=$v -> $file" >&2
  rc=0
  "$pinbench" run "$scenario" --set "$key=$v" "${run_args[@]}" --quiet --out "$file" \
    >/dev/null || rc=$?
  case $rc in
    0) ;;
    1) status=1 ;;  # a failed case: the result is written, the sweep goes on
    *) echo "sweep: pinbench run failed for $key=$v (exit $rc)" >&2; exit "$rc" ;;
  esac
  files+=("$file")
done

# Merge: each point's long-format CSV, the header kept from the first point only. Points of
# one scenario share their columns; a differing header would misalign the rows, so it stops.
csv=$out_dir/sweep.csv
tmp=$csv.tmp.$$
trap 'rm -f "$tmp"' EXIT
header=
for f in "${files[@]}"; do
  point=$("$pinbench" report "$f" --csv - --quiet)
  first=${point%%$'\n'*}
  if [[ -z $header ]]; then
    header=$first
    printf '%s\n' "$header" >"$tmp"
  elif [[ $first != "$header" ]]; then
    echo "sweep: $f has other CSV columns than the first point; not merged" >&2
    exit 2
  fi
  if [[ $point == *$'\n'* ]]; then printf '%s\n' "${point#*$'\n'}" >>"$tmp"; fi
done
mv "$tmp" "$csv"
trap - EXIT
echo "sweep: ${#files[@]} point(s) in $out_dir, merged CSV: $csv" >&2
exit "$status"
