#!/usr/bin/env bash
# scripts/gpu-check.sh --rehearse holds to what the device check promises: exit 0, at most 6
# files in $OUT and none in a subfolder, within 420 s, a summary.md that says it is a rehearsal
# and has the side-by-side tables, and one result document with every pinbench step's scenarios.
# The allocator-peer step's plumbing too: with pinbench's own snapshots standing in for
# PyTorch's, every setting replayed on both runs and compared equal, the OOM tuned and its
# answer replayed without one, all of it in pinbench.json and the summary (said to be a
# rehearsal), within the step's 45 s, and no torch.json.
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
grep -q 'allocator: PyTorch vs pinbench' "$out/summary.md" ||
  fail "summary.md lacks the \"allocator: PyTorch vs pinbench\" table"
grep -q "Rehearsal on pinbench's own snapshots: no PyTorch ran" "$out/summary.md" ||
  fail "summary.md does not say the allocator comparison is a rehearsal on pinbench's own snapshots"
[[ ! -e $out/torch.json ]] || fail "torch.json written by a rehearsal: no PyTorch ran"
python3 - "$out/summary.md" <<'PY' || fail "the allocator-peer step did not pass within its 45 s"
import re, sys
rows = [re.match(r"\| allocator-peer \| ([^|]*) \| (\d+) \| (\d+) \|", line)
        for line in open(sys.argv[1])]
row = next((m for m in rows if m), None)
assert row, "no allocator-peer row in the step table"
status, seconds, budget = row.group(1).strip(), int(row.group(2)), int(row.group(3))
print(f"allocator-peer: {status} in {seconds} s (budget {budget} s)")
assert status == "passed" and budget == 45 and seconds <= budget, row.group(0)
PY
python3 - "$out/pinbench.json" <<'PY' || fail "pinbench.json does not hold the allocator-peer step's replays and verdicts"
import json, sys
doc = json.load(open(sys.argv[1]))
peer = doc["allocator_peer"]
assert peer["reference"] == "stand-in", peer["reference"]
labels = ["defaults", "expandable", "max-split-64", "roundup-4", "gc-0.6-fraction-0.9", "gc-0.6",
          "oom-defaults"]
got = [c["label"] for c in peer["comparisons"]]
assert sorted(got) == sorted(labels), got
for c in peer["comparisons"]:
    assert c["ok"] and c["reference"] == "stand-in", c["verdict"]
    assert sorted(c["runs"]) == ["host", "host-as-device"], c["runs"]
    assert all(r["equal"] for r in c["stats"] if r["decides"]), c["stats"]
    assert len([r for r in c["stats"] if r["decides"]]) == 12, c["stats"]
    assert c["reference_decisions"] > 0, c
gc = next(c for c in peer["comparisons"] if c["label"] == "gc-0.6")
assert gc["memory_fraction"] and gc["config"] == "garbage_collection_threshold:0.6", gc
gc9 = next(c for c in peer["comparisons"] if c["label"] == "gc-0.6-fraction-0.9")
assert gc9["memory_fraction"] == 0.9, gc9
oom = next(c for c in peer["comparisons"] if c["label"] == "oom-defaults")
assert oom["reference_ooms"] >= 1, oom
assert len(peer["oom_checks"]) == 1 and peer["oom_checks"][0]["ok"], peer["oom_checks"]
check = peer["oom_checks"][0]
assert check["answer_kind"] in ("export", "no-setting"), check
assert check["answer_kind"] != "export" or check["after"]["num_ooms"] == 0, check
names = {s["name"] for s in doc["scenarios"]}
for label in labels:
    assert f"allocator-peer-{label}" in names and f"allocator-peer-{label}-host" in names, label
    assert f"allocator-peer-own-{label}" in names, label
assert any(t.get("inputs", {}).get("memory_fraction") == oom["memory_fraction"]
           for t in doc.get("tunes", [])), "the allocator-peer tune is not merged"
PY
"$build/app/pinbench" report "$out/pinbench.json" --md - --quiet >/dev/null \
  || fail "pinbench report cannot read the merged pinbench.json"
echo "test_gpu_check_rehearse: passed ($files files, $wall s)"
