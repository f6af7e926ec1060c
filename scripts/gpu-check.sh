#!/usr/bin/env bash
# Checks pinbench on a machine with an NVIDIA GPU, from the repository root, using a build/ made
# elsewhere (this machine need not have the -dev packages, so nothing is rebuilt here):
#   1. environment (nvidia-smi -q, pinbench info)   2. the [gpu] test suite (JUnit + console)
#   3. pinbench's transfer, allocator and loader scenarios on --backend cuda
#   4. the PyTorch transfer and DataLoader peers, when torch has CUDA
# Everything lands in ${OUT:-out/gpu-check} (at most 12 files). Each part runs under a timeout
# and a failing part does not stop the others; the exit code says whether all passed
# (0 all passed, 1 something failed, 2 no build to check).
#
# Environment: OUT (output folder), BUILD (default build), GPU_CHECK_SANITIZER=1 to also run the
# GPU tests under compute-sanitizer (memcheck with leak check; slower).
set -euo pipefail

OUT="${OUT:-out/gpu-check}"
BUILD="${BUILD:-build}"
PINBENCH="$BUILD/app/pinbench"
GPU_TESTS="$BUILD/tests/pinbench_gpu_tests"
SCENARIOS=(transfer-size transfer-modes transfer-overlap transfer-pin-on-the-fly)

started=$SECONDS
step() { printf 'gpu-check: [%3ds] %s\n' "$((SECONDS - started))" "$*"; }

if [[ ! -x "$PINBENCH" ]]; then
  echo "gpu-check: $PINBENCH is missing: build pinbench first (see scripts/gpu-check.sh header)" >&2
  exit 2
fi
mkdir -p "$OUT"
runs_log="$OUT/runs.log"
: >"$runs_log"

# ---- 1. environment ---------------------------------------------------------------------------
step "environment -> $OUT/env.txt, $OUT/pinbench-info.json"
{
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# uname: $(uname -a)"
  echo "# git: $(git describe --always --dirty 2>/dev/null || echo unknown)"
  echo "# ldd $PINBENCH:"
  ldd "$PINBENCH" 2>&1 || true
  echo "# nvidia-smi -q:"
  timeout 30 nvidia-smi -q 2>&1 || echo "(nvidia-smi failed or is missing: exit $?)"
} >"$OUT/env.txt"
info_status=ok
if ! timeout 30 "$PINBENCH" info --format json >"$OUT/pinbench-info.json" 2>>"$runs_log"; then
  info_status="failed"
  step "pinbench info failed (tolerated; see runs.log)"
fi

# ---- 2. GPU tests -------------------------------------------------------------------------------
tests_status=missing
if [[ -x "$GPU_TESTS" ]]; then
  step "GPU tests (JUnit) -> $OUT/gpu-tests.xml"
  junit_rc=0
  timeout 120 "$GPU_TESTS" --reporter junit --out "$OUT/gpu-tests.xml" >/dev/null 2>&1 || junit_rc=$?
  step "GPU tests (console) -> $OUT/gpu-tests.log"
  console_rc=0
  timeout 120 "$GPU_TESTS" --durations yes >"$OUT/gpu-tests.log" 2>&1 || console_rc=$?
  case "$console_rc" in
    0) tests_status=passed ;;
    77) tests_status="skipped (no usable CUDA device)" ;;
    124) tests_status="timed out" ;;
    *) tests_status="FAILED (exit $console_rc)" ;;
  esac
  [[ "$junit_rc" == "$console_rc" ]] || tests_status+=" (JUnit run: exit $junit_rc)"
  if [[ "${GPU_CHECK_SANITIZER:-0}" == 1 ]]; then
    if command -v compute-sanitizer >/dev/null 2>&1; then
      step "GPU tests under compute-sanitizer (memcheck, leak check) -> appended to gpu-tests.log"
      san_rc=0
      {
        echo
        echo "==== compute-sanitizer --tool memcheck --leak-check full ===="
        timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 99 \
          "$GPU_TESTS" "~*overlap*" 2>&1
      } >>"$OUT/gpu-tests.log" || san_rc=$?
      tests_status+="; sanitizer: $([[ $san_rc == 0 ]] && echo clean || echo "exit $san_rc")"
    else
      tests_status+="; sanitizer: compute-sanitizer not found"
    fi
  fi
  step "GPU tests: $tests_status"
else
  step "$GPU_TESTS is missing: GPU tests not run"
fi

# ---- 3. pinbench transfer scenarios on cuda ------------------------------------------------------
run_status="not run"
listing=""
if listing=$(timeout 30 "$PINBENCH" list 2>>"$runs_log"); then
  chosen=()
  for s in "${SCENARIOS[@]}"; do
    if grep -Eq "(^|[^A-Za-z0-9_-])${s}([^A-Za-z0-9_-]|\$)" <<<"$listing"; then chosen+=("builtin:$s"); fi
  done
else
  step "pinbench list failed; trying every transfer scenario"
  chosen=()
  for s in "${SCENARIOS[@]}"; do chosen+=("builtin:$s"); done
fi
if ((${#chosen[@]} > 0)); then
  step "pinbench run ${chosen[*]} --backend cuda -> $OUT/transfer-cuda.json"
  run_rc=0
  {
    echo "==== pinbench run ${chosen[*]} --backend cuda ===="
    timeout 240 "$PINBENCH" run "${chosen[@]}" --backend cuda --out "$OUT/transfer-cuda.json" 2>&1
  } >>"$runs_log" || run_rc=$?
  case "$run_rc" in
    0) run_status="ok (${#chosen[@]} scenarios)" ;;
    124) run_status="timed out" ;;
    *) run_status="FAILED (exit $run_rc)" ;;
  esac
else
  run_status="skipped: pinbench list shows none of ${SCENARIOS[*]}"
fi
step "pinbench run: $run_status"

# ---- 3b. pinbench allocator scenarios on cuda ------------------------------------------------------
alloc_status="not run"
alloc_chosen=()
if [[ -n "$listing" ]]; then
  while read -r name; do alloc_chosen+=("$name"); done < <(grep -Eo 'builtin:allocator-[A-Za-z0-9_-]+' <<<"$listing")
fi
if ((${#alloc_chosen[@]} > 0)); then
  step "pinbench run ${alloc_chosen[*]} --backend cuda -> $OUT/allocator-cuda.json"
  alloc_rc=0
  {
    echo "==== pinbench run ${alloc_chosen[*]} --backend cuda ===="
    timeout 180 "$PINBENCH" run "${alloc_chosen[@]}" --backend cuda --out "$OUT/allocator-cuda.json" 2>&1
  } >>"$runs_log" || alloc_rc=$?
  case "$alloc_rc" in
    0) alloc_status="ok (${#alloc_chosen[@]} scenarios)" ;;
    124) alloc_status="timed out" ;;
    *) alloc_status="FAILED (exit $alloc_rc)" ;;
  esac
fi
step "pinbench allocator run: $alloc_status"

# ---- 3c. pinbench loader scenarios on cuda ---------------------------------------------------------
# Every built-in loader scenario, then loader-peer again with pin_memory on, as the torch peer
# runs it on a CUDA device (the built-in keeps it off so that a CPU build of torch can match it).
loader_status="not run"
loader_chosen=()
if [[ -n "$listing" ]]; then
  while read -r name; do loader_chosen+=("$name"); done < <(grep -Eo 'builtin:loader-[A-Za-z0-9_-]+' <<<"$listing")
fi
if ((${#loader_chosen[@]} > 0)); then
  step "pinbench run ${loader_chosen[*]} --backend cuda -> $OUT/loader-cuda.json"
  loader_rc=0
  {
    echo "==== pinbench run ${loader_chosen[*]} --backend cuda ===="
    timeout 150 "$PINBENCH" run "${loader_chosen[@]}" --backend cuda --out "$OUT/loader-cuda.json" 2>&1
    echo "==== pinbench run builtin:loader-peer --backend cuda --set pin_memory=true ===="
    timeout 90 "$PINBENCH" run builtin:loader-peer --backend cuda --set pin_memory=true \
      --out "$OUT/loader-peer-cuda.json" 2>&1
  } >>"$runs_log" || loader_rc=$?
  case "$loader_rc" in
    0) loader_status="ok (${#loader_chosen[@]} scenarios + loader-peer pinned)" ;;
    124) loader_status="timed out" ;;
    *) loader_status="FAILED (exit $loader_rc)" ;;
  esac
fi
step "pinbench loader run: $loader_status"

# ---- 4. the PyTorch peers --------------------------------------------------------------------------
torch_status="skipped: python3 not found"
if command -v python3 >/dev/null 2>&1; then
  if timeout 60 python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' \
    >/dev/null 2>&1; then
    step "torch peer -> $OUT/torch-transfer.json"
    torch_rc=0
    {
      echo "==== python3 scripts/peer/torch_transfer.py ===="
      PYTHONUNBUFFERED=1 timeout 180 python3 scripts/peer/torch_transfer.py \
        --out "$OUT/torch-transfer.json" 2>&1
    } >>"$runs_log" || torch_rc=$?
    case "$torch_rc" in
      0) torch_status=ok ;;
      124) torch_status="timed out" ;;
      *) torch_status="FAILED (exit $torch_rc)" ;;
    esac
    step "torch DataLoader peer -> $OUT/torch-dataloader.json"
    loader_peer_rc=0
    {
      echo "==== python3 scripts/peer/torch_dataloader.py --device cuda --pin-memory ===="
      PYTHONUNBUFFERED=1 timeout 120 python3 scripts/peer/torch_dataloader.py --device cuda \
        --pin-memory --out "$OUT/torch-dataloader.json" 2>&1
    } >>"$runs_log" || loader_peer_rc=$?
    [[ "$loader_peer_rc" == 0 ]] || torch_status+="; DataLoader peer FAILED (exit $loader_peer_rc)"
  else
    torch_status="skipped: python3 cannot import torch with CUDA"
  fi
fi
step "torch peer: $torch_status"

# ---- summary ------------------------------------------------------------------------------------
{
  echo "gpu-check summary ($(date -u +%Y-%m-%dT%H:%M:%SZ), $((SECONDS - started)) s)"
  echo "  device:        $(timeout 10 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || echo unknown)"
  echo "  pinbench info: $info_status"
  echo "  GPU tests:     $tests_status"
  if [[ -f "$OUT/gpu-tests.xml" ]]; then
    echo "                 $(grep -o '<testsuite [^>]*' "$OUT/gpu-tests.xml" | grep -Eo '(tests|failures|errors)="[0-9]+"' | tr '\n' ' ')"
  fi
  echo "  pinbench run:  $run_status"
  echo "  allocator run: $alloc_status"
  echo "  loader run:    $loader_status"
  echo "  torch peer:    $torch_status"
  # Median bandwidth side by side, where both tools measured the same copy.
  if command -v python3 >/dev/null 2>&1 && [[ -f "$OUT/transfer-cuda.json" || -f "$OUT/torch-transfer.json" ]]; then
    timeout 30 python3 - "$OUT/transfer-cuda.json" "$OUT/torch-transfer.json" <<'PY' || true
import json, sys

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def medians(doc, mode_default):
    out = {}
    for s in (doc or {}).get("scenarios", []):
        for c in s.get("cases", []):
            p = c.get("params", {})
            bw = c.get("metrics", {}).get("bandwidth", {}).get("summary", {}).get("median")
            if bw is None or c.get("status") != "ok":
                continue
            key = (p.get("direction", "h2d"), p.get("memory"), p.get("mode", mode_default), str(p.get("bytes")))
            out.setdefault(key, bw)
    return out

pb = medians(load(sys.argv[1]), "non_blocking")
th = medians(load(sys.argv[2]), "non_blocking")
keys = sorted(set(pb) | set(th), key=lambda k: (k[0], str(k[1]), k[2], k[3]))
if keys:
    print("  median bandwidth, GB/s (pinbench | torch):")
    for k in keys:
        a = f"{pb[k]:8.2f}" if k in pb else "       -"
        b = f"{th[k]:8.2f}" if k in th else "       -"
        print(f"    {k[0]:3} {str(k[1]):14} {k[2]:12} {k[3]:>7}  {a} | {b}")
PY
  fi
  # The DataLoader side by side: samples/s per case id, pinbench's loader-peer vs torch's.
  if command -v python3 >/dev/null 2>&1 && [[ -f "$OUT/loader-peer-cuda.json" || -f "$OUT/torch-dataloader.json" ]]; then
    timeout 30 python3 - "$OUT/loader-peer-cuda.json" "$OUT/torch-dataloader.json" <<'PY' || true
import json, sys

def rates(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    out = {}
    for s in doc.get("scenarios", []):
        for c in s.get("cases", []):
            m = c.get("metrics", {}).get("samples_per_s", {}).get("summary", {}).get("median")
            if m is not None and c.get("status") == "ok":
                out[c.get("id")] = m
    return out

pb, th = rates(sys.argv[1]), rates(sys.argv[2])
if pb or th:
    print("  loader samples/s, median (pinbench | torch DataLoader):")
    for k in sorted(set(pb) | set(th)):
        a = f"{pb[k]:10.0f}" if k in pb else "         -"
        b = f"{th[k]:10.0f}" if k in th else "         -"
        print(f"    {k:45} {a} | {b}")
PY
  fi
} | tee "$OUT/summary.txt"

case "$tests_status" in passed*) ;; *) exit 1 ;; esac
case "$run_status" in ok*) ;; *) exit 1 ;; esac
case "$alloc_status" in ok* | "not run") ;; *) exit 1 ;; esac
case "$loader_status" in ok* | "not run") ;; *) exit 1 ;; esac
case "$torch_status" in ok | skipped*) ;; *) exit 1 ;; esac
exit 0
