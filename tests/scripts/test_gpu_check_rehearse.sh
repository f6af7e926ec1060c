#!/usr/bin/env bash
# scripts/gpu-check.sh --rehearse holds to what the device check promises: exit 0, at most 6
# files in $OUT and none in a subfolder, within 420 s, a summary.md that says it is a rehearsal
# and has the side-by-side tables, and one result document with every pinbench step's scenarios.
#   test_gpu_check_rehearse.sh BUILD_DIR OUT_DIR
set -uo pipefail
build=$1 out=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fail() { echo "test_gpu_check_rehearse: $*" >&2; [[ -f $out/log.txt ]] && tail -40 "$out/log.txt" >&2; exit 1; }

rm -rf "$out"
t0=$SECONDS
OUT=$out BUILD=$build "$root/scripts/gpu-check.sh" --rehearse
rc=$?
wall=$((SECONDS - t0))
echo "test_gpu_check_rehearse: exit $rc in $wall s"
((rc == 0)) || fail "gpu-check.sh --rehearse exited $rc"
((wall < 420)) || fail "took $wall s, over the device's 420 s"

files=$(find "$out" -mindepth 1 | wc -l)
((files <= 6)) || fail "$files entries in $out (at most 6): $(find "$out" -mindepth 1 -printf '%f ')"
deep=$(find "$out" -mindepth 1 -type d | wc -l)
((deep == 0)) || fail "subfolders in $out"
for f in summary.md env.txt pinbench.json log.txt; do
  [[ -s $out/$f ]] || fail "$f is missing or empty"
done
for tool in '# python: ' '# torch: ' '# nccl: ' '# nvml: ' '# /dev/shm: '; do
  grep -q "^$tool" "$out/env.txt" || fail "env.txt does not say which ${tool:2} the check used"
done
[[ ! -e $out/gpu-tests.xml ]] || fail "gpu-tests.xml without a device: the [gpu] tests must report skipped"

grep -q 'REHEARSAL on the host backend' "$out/summary.md" || fail "summary.md does not say it is a rehearsal"
for heading in 'Bandwidth by size' 'holds the caller' 'caching vs raw' 'device was busy' 'GPU tests'; do
  grep -q "$heading" "$out/summary.md" || fail "summary.md lacks the \"$heading\" table"
done
grep -q 'gpu-tests	skipped: no usable CUDA device' <(python3 - "$out/summary.md" <<'PY'
import re, sys
for line in open(sys.argv[1]):
    m = re.match(r"\| (gpu-tests) \| ([^|]*) \|", line)
    if m: print(m.group(1) + "\t" + m.group(2).strip())
PY
) || fail "the step table does not show the GPU tests as skipped"

python3 - "$out/pinbench.json" <<'PY' || fail "pinbench.json does not hold every step's scenarios"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["schema"] == "pinbench.result/1", doc["schema"]
assert doc["environment"]["backend"] == "host", doc["environment"]["backend"]
kinds = {s["kind"] for s in doc["scenarios"]}
assert kinds == {"transfer", "allocator", "loader", "collective", "data_parallel"}, kinds
names = [s["name"] for s in doc["scenarios"]]
assert "transfer-size" in names and names.count("loader-peer") == 2, names
size = next(s for s in doc["scenarios"] if s["name"] == "transfer-size")
small = [c for c in size["cases"] if c["params"]["bytes"] == "4KiB" and c["status"] == "ok"]
assert small and all(c["info"]["copies_per_sample"] == 16 for c in small), small[:1]
PY
"$build/app/pinbench" report "$out/pinbench.json" --md - --quiet >/dev/null \
  || fail "pinbench report cannot read the merged pinbench.json"
echo "test_gpu_check_rehearse: passed ($files files, $wall s)"
