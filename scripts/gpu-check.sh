#!/usr/bin/env bash
# Checks pinbench on a machine with an NVIDIA GPU in one command that fits the lent device:
# at most 420 s of wall time (GPU_CHECK_BUDGET, default 400 s of steps plus the summary) and at
# most 6 files in $OUT, none in a subfolder. It uses a build/ made elsewhere (the gpu-carry
# preset: Release, CUDA, stripped, needing only the C and C++ runtimes); nothing is built here.
#
#   scripts/gpu-check.sh              on the GPU machine: --backend cuda, GPU tests, torch peers
#   scripts/gpu-check.sh --rehearse   the very same steps on the host backend (GPU tests report
#                                     skipped, torch peers skip without torch): proves the flow,
#                                     the budgets and the file count anywhere
#
# Steps, each under its own budget (SIGINT at the budget: pinbench keeps what it measured):
#   env 15 s | GPU tests 90 | transfer 70 | references (check, export) 10 | allocator 45 | loader 55 | loader-peer pinned 15 |
#   multi (collective, data-parallel) 20 | torch transfer peer 55 | torch DataLoader peer 35
#   (then the summary, ~5 s)
# A failing step does not stop the others.
#
# Files in $OUT (default out/gpu-check):
#   summary.md     environment, step table, and the side-by-side tables (pinbench | torch)
#   env.txt        which python, torch, NCCL and NVML the check used, /dev/shm's size,
#                  nvidia-smi -q, pinbench info, ldd, the carried binaries' needs
#   gpu-tests.xml  the [gpu] suite, one run, JUnit (the summary has its tally and failures)
#   pinbench.json  every pinbench run of the check, one pinbench.result/1 document
#   torch.json     both PyTorch peers, one pinbench.result/1 document (absent without torch)
#   log.txt        every step's console output
#
# Exit: 0 every step passed (or was skipped with a reason), 1 a step failed, 2 no build.
# Environment: OUT, BUILD (default build), GPU_CHECK_BUDGET (seconds for the steps).
# The step_* functions run through "$0" __step NAME, which shellcheck cannot follow.
# shellcheck disable=SC2317
set -uo pipefail

# What the check runs with, for env.txt: python, torch (version, CUDA), NCCL (path, version),
# NVML (path) and the size of /dev/shm (the DataLoader peer's workers pass batches through it).
tools_used() {
  local py
  py=$(command -v python3 || true)
  echo "# python: ${py:-none}${py:+ ($(python3 --version 2>&1))}"
  if [[ -n $py ]]; then
    echo "# torch: $(timeout 30 python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available" if torch.cuda.is_available() else "unavailable")' 2>/dev/null || echo 'not importable')"
  fi
  local nccl=${PINBENCH_NCCL_LIBRARY:-}
  if [[ -n $nccl ]]; then
    local version="unknown (no python3 to ask it)"
    [[ -n $py ]] && version=$(python3 -c 'import ctypes, sys
v = ctypes.c_int()
ctypes.CDLL(sys.argv[1]).ncclGetVersion(ctypes.byref(v))
print("{}.{}.{}".format(v.value // 10000, v.value // 100 % 100, v.value % 100))' "$nccl" 2>&1 | tail -1)
    echo "# nccl: $nccl (PINBENCH_NCCL_LIBRARY), version $version"
  else
    echo "# nccl: PINBENCH_NCCL_LIBRARY unset: pinbench's own search (see pinbench info below)"
  fi
  # The file pinbench itself loaded (dladdr's path in `info`), not a guess from ldconfig: dlopen
  # prefers LD_LIBRARY_PATH, which containers often set.
  local nvml
  nvml=$("$PINBENCH" info --format json 2>/dev/null | python3 -c 'import json, sys
t = json.load(sys.stdin).get("telemetry", {})
print(t["library"] if t.get("available") else "none: " + t.get("reason", "?"))' 2>/dev/null ||
    echo "unknown (pinbench info or python3 failed)")
  echo "# nvml: $nvml"
  echo "# /dev/shm: $(df -h /dev/shm 2>/dev/null | awk 'NR == 2 {print $2 " size, " $4 " free"}' || true)"
}

# ---- the steps that are more than one command (run by run_step through "$0" __step NAME, so
# that each runs under `timeout`; they read the exported settings below) ---------------------
step_env() {
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# mode: $mode (backend $backend)"
  echo "# uname: $(uname -a)"
  echo "# git: $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
  tools_used
  for bin in "$PINBENCH" "$GPU_TESTS"; do
    [[ -x $bin ]] || continue
    echo "# $bin needs:"
    "$root/scripts/check-portable.sh" "$bin" 2>&1 || true
    echo "# ldd $bin:"
    ldd "$bin" 2>&1 || true
  done
  echo "# pinbench info:"
  "$PINBENCH" info 2>&1 || echo "(pinbench info failed: exit $?)"
  echo "# nvidia-smi -q:"
  timeout 10 nvidia-smi -q 2>&1 || echo "(nvidia-smi failed or is missing: exit $?)"
} >"$OUT/env.txt"

# The [gpu] suite once, as JUnit; exit 77 (no usable device) is a skip, never a pass.
step_gpu_tests() {
  if [[ ! -x "$GPU_TESTS" ]]; then
    echo "skipped: $GPU_TESTS is missing" | tee "$work/gpu-tests.why"
    return 77
  fi
  local rc=0
  "$GPU_TESTS" --reporter junit --out "$OUT/gpu-tests.xml" || rc=$?
  if [[ $rc == 77 ]]; then
    echo "skipped: no usable CUDA device (the [gpu] tests count as skipped, never passed)" \
      | tee "$work/gpu-tests.why"
    rm -f "$OUT/gpu-tests.xml"
  fi
  return "$rc"
}

# A PyTorch peer: SCRIPT ARGS...; skipped (77) in a rehearsal and where torch has no CUDA.
step_torch_peer() {
  local script=$1
  shift
  if [[ $mode == rehearse ]]; then
    echo "skipped: rehearsal (the peers measure a CUDA device only)" | tee "$work/$script.why"
    return 77
  fi
  if ! command -v python3 >/dev/null || ! timeout 30 python3 -c \
    'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    echo "skipped: python3 cannot import torch with CUDA" | tee "$work/$script.why"
    return 77
  fi
  # exec: the peer itself gets run_step's SIGTERM at the budget and writes what it measured
  # before the step ends (a bash in between would die at once and the merge would not wait).
  PYTHONUNBUFFERED=1 exec python3 "$root/scripts/peer/$script.py" "$@"
}

# The transfer result judged against references frozen from itself (it must pass: the device's
# name selects them), then exported for the trackers; nothing measured, a few seconds.
step_references() {
  [[ -f "$work/transfer.json" ]] || { echo "skipped: the transfer step wrote no result"; return 77; }
  "$PINBENCH" check --init "$work/transfer.json" --out "$work/refs.json" &&
    "$PINBENCH" check "$work/transfer.json" --reference "$work/refs.json" &&
    "$PINBENCH" export "$work/transfer.json" --format google-benchmark --out "$work/gbench.json"
}

if [[ ${1:-} == __step ]]; then
  name=$2
  shift 2
  "step_$name" "$@"
  exit $?
fi

mode=device
case "${1:-}" in
  "") ;;
  --rehearse) mode=rehearse ;;
  -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "gpu-check: unknown argument \"$1\" (expected --rehearse or nothing)" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# OUT and BUILD are taken from where the script was started; the steps then run from the root.
OUT=$(realpath -m "${OUT:-out/gpu-check}")
BUILD=$(realpath -m "${BUILD:-build}")
cd "$root" || exit 2
PINBENCH="$BUILD/app/pinbench"
GPU_TESTS="$BUILD/tests/pinbench_gpu_tests"
budget_total="${GPU_CHECK_BUDGET:-400}"
backend=cuda
[[ $mode == rehearse ]] && backend=host

if [[ ! -x "$PINBENCH" ]]; then
  echo "gpu-check: $PINBENCH is missing: build with 'cmake --preset gpu-carry && cmake --build --preset gpu-carry' first" >&2
  exit 2
fi
mkdir -p "$OUT"
# Only this script's files: an old run's leftovers would count against the 6 that come back.
rm -f "$OUT"/summary.md "$OUT"/env.txt "$OUT"/gpu-tests.xml "$OUT"/pinbench.json \
      "$OUT"/torch.json "$OUT"/log.txt
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
export mode backend root OUT work PINBENCH GPU_TESTS
log="$OUT/log.txt"
steps="$work/steps.tsv"
: >"$log"
: >"$steps"

started=$SECONDS
deadline=$((started + budget_total))
failed=0
say() { printf 'gpu-check: [%3ds] %s\n' "$((SECONDS - started))" "$*" | tee -a "$log" >&2; }

# NCCL before the first step, so that every step (the GPU tests' collective test too, which
# would otherwise find none and pass with a warning) uses the same one: PyTorch's wheel's
# whenever PINBENCH_NCCL_LIBRARY is unset (the NCCL the torch peers use too).
if [[ -z ${PINBENCH_NCCL_LIBRARY:-} ]] && command -v python3 >/dev/null; then
  nccl=$(timeout 30 python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null || true)
  [[ -n $nccl && -f $nccl ]] && export PINBENCH_NCCL_LIBRARY=$nccl
fi
own_search="the loader's own search (PINBENCH_NCCL_LIBRARY unset)"
say "NCCL: ${PINBENCH_NCCL_LIBRARY:-$own_search}"

# run_step NAME BUDGET CMD...: runs CMD under min(BUDGET, time left), SIGTERM at the limit (kept
# even when the script runs in the background, where SIGINT starts ignored) and SIGKILL 5 s later; output to log.txt; one row in the step table. Exit 77 means skipped.
run_step() {
  local name=$1 budget=$2
  shift 2
  local left=$((deadline - SECONDS)) limit t0 rc status
  limit=$((budget < left ? budget : left))
  if ((limit < 3)); then
    say "$name: skipped, the check's time is used up"
    printf '%s\tskipped: no time left\t0\t%s\n' "$name" "$budget" >>"$steps"
    return
  fi
  say "$name (budget ${limit} s)"
  t0=$SECONDS
  {
    echo "==== $name: $* ===="
    timeout -s TERM -k 5 "$limit" "$@" 2>&1
  } >>"$log"
  rc=$?
  case $rc in
    0) status=passed ;;
    77) status="skipped: $(grep -m1 -o 'skipped: .*' "$work/$name.why" 2>/dev/null | cut -c10- || true)" ;;
    124 | 137) status="budget reached: partial result kept" ;;
    # tune's exit 1 is an answer (no setting held the target), its result written.
    1) if [[ $name == tune-* && -s "$work/$name.json" ]]; then
         status="answered: no setting held the target (exit 1)"
       else
         status="FAILED (exit $rc)"; failed=1
       fi ;;
    *) status="FAILED (exit $rc)"; failed=1 ;;
  esac
  [[ $status == "skipped: " ]] && status="skipped"
  say "$name: $status ($((SECONDS - t0)) s)"
  printf '%s\t%s\t%s\t%s\n' "$name" "$status" "$((SECONDS - t0))" "$budget" >>"$steps"
}

# ---- 1. environment, 2. GPU tests ---------------------------------------------------------------
run_step env 15 "$0" __step env
run_step gpu-tests 90 "$0" __step gpu_tests

# ---- 3. pinbench on the device ---------------------------------------------------------------------
# Quick sampling: the device is fast and its time is scarce; every sample is still kept.
transfer_sampling=(--set sampling.warmup=2 --set sampling.min_samples=5 --set sampling.max_samples=40
                   --set sampling.min_time=20ms --set sampling.timeout=500ms)
allocator_sampling=(--set sampling.min_samples=3 --set sampling.max_samples=5 --set sampling.timeout=2s)
loader_sampling=(--set sampling.warmup=1 --set sampling.min_samples=2 --set sampling.max_samples=3
                 --set sampling.timeout=1s)
listing=$("$PINBENCH" list 2>>"$log")
builtins() { grep -Eo "builtin:$1-[A-Za-z0-9_-]+" <<<"$listing" | tr '\n' ' '; }

# A sample taken while the GPU throttled (power, heat) is taken again; the count is in each case.
# shellcheck disable=SC2046  # one word per scenario
run_step transfer 70 "$PINBENCH" run --backend "$backend" $(builtins transfer) \
  "${transfer_sampling[@]}" --discard-on-throttle --out "$work/transfer.json"
run_step references 10 "$0" __step references
# shellcheck disable=SC2046
run_step allocator 45 "$PINBENCH" run --backend "$backend" $(builtins allocator) \
  "${allocator_sampling[@]}" --out "$work/allocator.json"
# shellcheck disable=SC2046
run_step loader 55 "$PINBENCH" run --backend "$backend" $(builtins loader) \
  "${loader_sampling[@]}" --out "$work/loader.json"
# loader-peer again with pin_memory on, as the torch DataLoader peer runs on a CUDA device.
run_step loader-peer-pinned 15 "$PINBENCH" run --backend "$backend" builtin:loader-peer \
  --set pin_memory=true "${loader_sampling[@]}" --out "$work/loader-peer-pinned.json"

# Collectives and DataParallel vs DDP (NCCL found at the start); on a 1-GPU machine the
# multi-GPU cases are skipped with why, the 1-rank ones run.
# shellcheck disable=SC2046
run_step multi 20 "$PINBENCH" run --backend "$backend" $(builtins collective) $(builtins data-parallel) \
  "${allocator_sampling[@]}" --out "$work/multi.json"

# The questions answered on the device: the allocator setting that avoids a trace's OOM on a
# capped device (the answer confirmed with cudaMalloc), the loader settings that hold the target.
run_step tune-allocator 25 "$PINBENCH" tune allocator "$root/tests/data/traces/tune-fragmentation.json" \
  --capacity 1200MiB --backend "$backend" --budget 20s --out "$work/tune-allocator.json"
run_step tune-loader 40 "$PINBENCH" tune loader --cpu-per-sample 1ms --batch-size 16 \
  --step-time 10ms --target-busy 0.85 --backend "$backend" --budget 35s --out "$work/tune-loader.json"

# ---- 4. the PyTorch peers, in the same session ---------------------------------------------------
run_step torch_transfer 55 "$0" __step torch_peer torch_transfer --budget 40 \
  --out "$work/torch-transfer.json"
run_step torch_dataloader 35 "$0" __step torch_peer torch_dataloader --device cuda --pin-memory \
  --quick --out "$work/torch-dataloader.json"

# ---- 5. the files that come back -------------------------------------------------------------------
if command -v python3 >/dev/null; then
  report="$root/scripts/gpu_check_report.py"
  python3 "$report" merge "$OUT/pinbench.json" "$work/transfer.json" "$work/allocator.json" \
    "$work/loader.json" "$work/loader-peer-pinned.json" "$work/multi.json" \
    "$work/tune-allocator.json" "$work/tune-loader.json" 2>>"$log" || failed=1
  if [[ -f "$work/torch-transfer.json" || -f "$work/torch-dataloader.json" ]]; then
    python3 "$report" merge "$OUT/torch.json" "$work/torch-transfer.json" \
      "$work/torch-dataloader.json" 2>>"$log" || true
  fi
  rehearse_flag=()
  [[ $mode == rehearse ]] && rehearse_flag=(--rehearse)
  python3 "$report" summary "$OUT/summary.md" --steps "$steps" --pinbench "$OUT/pinbench.json" \
    --torch "$OUT/torch.json" --junit "$OUT/gpu-tests.xml" "${rehearse_flag[@]}" 2>>"$log" \
    || failed=1
else
  # No python3: keep the transfer result, and the step table as the summary.
  cp "$work/transfer.json" "$OUT/pinbench.json" 2>/dev/null || true
  { echo "# gpu-check summary (no python3: no tables)"; echo; cat "$steps"; } >"$OUT/summary.md"
fi

files=$(find "$OUT" -mindepth 1 | wc -l)
say "done in $((SECONDS - started)) s: $files file(s) in $OUT$([[ $mode == rehearse ]] && echo ' (rehearsal: host figures only)')"
if ((files > 6)); then
  say "more than 6 files in $OUT: the device returns at most 8, and the check promises 6"
  failed=1
fi
exit "$failed"
