#!/usr/bin/env bash
# pinbench in the trackers' tools, end to end on the host backend: two small runs exported as
# Google Benchmark's JSON and read by Google Benchmark's own compare.py (Debian's
# libbenchmark-tools, with python3-scipy); bmf and github-action-benchmark exports of the shape
# their trackers read; then references frozen from a run (check --init) pass that run, catch a
# run with every copy four times as slow (against bounds of +-50%), do not apply to another
# device, and a malformed file is refused. Exit 77 (skipped) where compare.py or a Python with
# scipy is missing.
# Usage: test_trackers.sh PINBENCH WORK_DIR
set -euo pipefail
pinbench=$1
work=$2
compare_py=/usr/share/benchmark/compare.py

python_with_scipy=""
for py in /usr/bin/python3 python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import scipy' 2>/dev/null; then
    python_with_scipy=$py
    break
  fi
done
if [ ! -f "$compare_py" ] || [ -z "$python_with_scipy" ]; then
  echo "test_trackers: SKIPPED: needs $compare_py and a python3 with scipy (Debian: libbenchmark-tools python3-scipy; scripts/setup.sh installs them)"
  exit 77
fi

rm -rf "$work"
mkdir -p "$work"
cd "$work"
fail() { echo "test_trackers: FAILED: $*" >&2; exit 1; }

# Pinned copies of 4 MiB, blocking and non_blocking: a few seconds a run on two cores.
quick=(--backend host --set memory=pinned --set bytes=4MiB --set sampling.min_samples=8
       --set sampling.max_samples=12 --set sampling.min_time=0s --set sampling.warmup=1 -q)
"$pinbench" run builtin:transfer-modes "${quick[@]}" --out a.json >/dev/null
"$pinbench" run builtin:transfer-modes "${quick[@]}" --out b.json >/dev/null

# ---- Google Benchmark: compare.py reads two exports and lists pinbench's cases.
"$pinbench" export a.json --format google-benchmark --out a-gbench.json -q
"$pinbench" export b.json --format google-benchmark --out b-gbench.json -q
"$pinbench" export a.json --format google-benchmark --out a-again.json -q
cmp -s a-gbench.json a-again.json || fail "two exports of one result differ"
"$python_with_scipy" "$compare_py" --no-color benchmarks a-gbench.json b-gbench.json >compare.txt 2>&1 ||
  { cat compare.txt >&2; fail "compare.py benchmarks exited $?"; }
grep -q '^transfer-modes/mode=blocking/copy_time ' compare.txt ||
  { cat compare.txt >&2; fail "compare.py did not list transfer-modes/mode=blocking/copy_time"; }
grep -q 'copy_time_median' compare.txt || fail "compare.py listed no aggregate"
grep -q 'U Test' compare.txt || fail "compare.py ran no U test on the repetitions"

# ---- bmf: an object of objects whose leaves all have a numeric value; github-action-benchmark:
# two arrays whose items all have name, unit and value.
"$pinbench" export a.json --format bmf --out a-bmf.json -q
"$pinbench" export a.json --format github-action-benchmark --out a-gab -q
python3 - <<'EOF' || fail "bmf or github-action-benchmark export has the wrong shape"
import json, numbers
bmf = json.load(open("a-bmf.json"))
assert isinstance(bmf, dict) and bmf, bmf
for bench, measures in bmf.items():
    assert isinstance(measures, dict) and measures, bench
    for name, leaf in measures.items():
        assert isinstance(leaf["value"], numbers.Number), (bench, name)
        assert leaf["lower_value"] <= leaf["value"] <= leaf["upper_value"], (bench, name)
for side in ("bigger", "smaller"):
    items = json.load(open(f"a-gab-{side}.json"))
    assert isinstance(items, list) and items, side
    for item in items:
        assert isinstance(item["name"], str) and isinstance(item["unit"], str), item
        assert isinstance(item["value"], numbers.Number), item
        assert "backend: host (emulated)" in item["extra"], item
EOF

# ---- references: frozen from a, they pass a; a run four times as slow is outside (exit 1, a
# metric named); another device's references do not apply (3); a malformed file is refused (2).
"$pinbench" check --init a.json --widen 2 >refs.json
status=0
"$pinbench" check a.json --reference refs.json >pass.txt || status=$?
[ "$status" = 0 ] || { cat pass.txt >&2; fail "check of the frozen run itself exited $status"; }
# A's spread sets the bounds --init writes, and on a loaded machine (a sanitizer tree beside
# other jobs) a's quartiles can be ten times apart: the slow run is judged against a's values
# with bounds fixed at +-50%, so that a run four times as slow is outside however noisy a was.
python3 - <<'EOF' || fail "refs.json has no references to tighten"
import json
refs = json.load(open("refs.json"))
items = refs["systems"][0]["references"]
assert items, refs
for item in items:
    item["lower"], item["upper"] = -0.5, 0.5
json.dump(refs, open("refs-tight.json", "w"), indent=2)
EOF
"$pinbench" run builtin:transfer-modes "${quick[@]}" --host-fault slow=300% --out slow.json >/dev/null
status=0
"$pinbench" check slow.json --reference refs-tight.json --junit slow-junit.xml >slow.txt 2>&1 || status=$?
[ "$status" = 1 ] || { cat slow.txt >&2; fail "check of a run four times as slow exited $status, not 1"; }
grep -Eq 'outside: mode=[a-z_]+ (bandwidth|copy_time|host_call_time): ' slow.txt ||
  { cat slow.txt >&2; fail "the slow check named no metric"; }
grep -q '<failure type="outside"' slow-junit.xml || fail "the JUnit file holds no failure"
sed 's/"device": "[^"]*"/"device": "NVIDIA H200"/' refs.json >other-device.json
status=0
"$pinbench" check a.json --reference other-device.json >other.txt 2>&1 || status=$?
[ "$status" = 3 ] || { cat other.txt >&2; fail "references for another device exited $status, not 3"; }
printf '{"schema": "pinbench.references/1", "systems": [{"select": {}, "references": [{"scenario": "transfer-modes", "metric": "bandwidth", "value": "fast", "unit": "GB/s"}]}]}\n' >bad.json
status=0
"$pinbench" check a.json --reference bad.json 2>bad.txt || status=$?
[ "$status" = 2 ] || fail "a malformed REFS exited $status, not 2"
grep -q 'bad.json: systems\[0\].references\[0\].value: expected a number' bad.txt ||
  { cat bad.txt >&2; fail "the malformed REFS's error names no JSON path"; }

echo "test_trackers: ok (compare.py listed $(grep -c '^transfer-modes/' compare.txt) rows)"
