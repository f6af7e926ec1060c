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
#   multi (collective, data-parallel) 20 | tune allocator 25 | tune loader 40 | torch transfer peer 55 |
#   torch DataLoader peer 35 | allocator peer (PyTorch's caching allocator vs pinbench's, exactly) 45
#   (then the summary, ~5 s). The budgets add up to more than GPU_CHECK_BUDGET: each step gets
#   the smaller of its own and the time left, and one with under 3 s left is skipped and says so.
# A failing step does not stop the others.
#
# Files in $OUT (default out/gpu-check):
#   summary.md     environment, step table, and the side-by-side tables (pinbench | torch)
#   env.txt        which python, torch, NCCL and NVML the check used, /dev/shm's size,
#                  nvidia-smi -q, pinbench info, ldd, the carried binaries' needs
#   gpu-tests.xml  the [gpu] suite, one run, JUnit (the summary has its tally and failures)
#   pinbench.json  every pinbench run of the check, one pinbench.result/1 document
#   torch.json     the PyTorch peers (transfer, DataLoader, allocator), one pinbench.result/1
#                  document (absent without torch)
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

# The allocator peer: PyTorch's own caching allocator replays the peer traces, one process per
# setting (PYTORCH_CUDA_ALLOC_CONF is read when CUDA starts; they run side by side), each writing
# its memory_stats() and the snapshot it recorded from the first request; pinbench replays every
# snapshot on the device's backend and on the host; compare_allocator.py then wants every
# statistic equal to PyTorch's, the same segment decisions (segment_alloc/free/map/unmap and
# their sizes), pinbench's own check reproduced, and both backends alike. Then the OOM: PyTorch
# runs out of memory under a 600 MiB cap (--stop-at-oom dumps the snapshot as an OOM handler
# would), `pinbench tune allocator` answers from that snapshot, and PyTorch replays the trace
# again with the answer under the same memory fraction: no OOM, or tune said no setting avoids
# it. A rehearsal runs no PyTorch: pinbench's own snapshot of each trace (`pinbench run
# --snapshot X.pickle`, host) stands in for PyTorch's, through the very same replays, comparison
# and tune, and the summary says it compares pinbench with itself.
# Settings: label|PYTORCH_CUDA_ALLOC_CONF|limit: empty (set_per_process_memory_fraction never
# called), a fraction (0.9) or a cap (800MiB: the fraction cap / the device's total, the same
# limit on any GPU). garbage_collection_threshold is armed only under a fraction below 1 (PyTorch
# 2.10+), and collects only near it: under 0.9 of a large GPU this trace never starts a
# collection (the armed-but-idle path), under an 800 MiB cap it does.
allocator_peer_settings=(
  "defaults||"
  "expandable|expandable_segments:True|"
  "max-split-64|max_split_size_mb:64|"
  "roundup-4|roundup_power2_divisions:4|"
  "gc-0.6-fraction-0.9|garbage_collection_threshold:0.6|0.9"
  "gc-0.6|garbage_collection_threshold:0.6|800MiB"
)
allocator_peer_oom="oom-defaults||600MiB"
# The device an emulated run stands for in a rehearsal (the host backend has no total to read).
allocator_peer_host_memory=8GiB

# info.<key> of a reference's one case, one line each ("" for none; a float as Python's repr).
reference_info() {
  python3 - "$@" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))["scenarios"][0]["cases"][0]["info"]
for key in sys.argv[2:]:
    v = info.get(key)
    print("" if v is None else repr(v) if isinstance(v, float) else v)
PY
}

# One reference for the label: PyTorch's replay (the peer), or in a rehearsal pinbench's own run
# of the trace and its snapshot. LABEL TRACE CONF LIMIT [PEER OPTIONS...]; writes
# $dir/LABEL.torch.json (or .standin.json) and $dir/LABEL.pickle.
allocator_reference() {
  local label=$1 trace=$2 conf=$3 limit=$4
  shift 4
  local capping=()
  if [[ $limit == *.* ]]; then
    capping=(--memory-fraction "$limit")
  elif [[ -n $limit ]]; then
    capping=(--memory-cap "$limit")
  fi
  if [[ $mode == rehearse ]]; then
    # A fraction given as such (the OOM's rerun) is passed through; pinbench cannot stop at an
    # OOM, so --stop-at-oom is dropped (its run goes on past the OOM, which tune's replay sees).
    local extra=() a
    for a in "$@"; do [[ $a == --stop-at-oom ]] || extra+=("$a"); done
    python3 "$peer_dir/compare_allocator.py" trace-scenario "$trace" --name "allocator-peer-own-$label" \
      --device-memory "$allocator_peer_host_memory" --config "$conf" "${capping[@]}" "${extra[@]}" \
      --out "$dir/scenario-own-$label.json" &&
      "$PINBENCH" run --backend host "$dir/scenario-own-$label.json" --out "$dir/own-$label.json" \
        --snapshot "$dir/$label.pickle" -q &&
      python3 "$peer_dir/compare_allocator.py" stand-in "$dir/own-$label.json" "$dir/$label.pickle" \
        --label "$label" --out "$dir/$label.standin.json"
  else
    PYTHONUNBUFFERED=1 python3 "$peer_dir/torch_allocator.py" "$trace" --conf "$conf" "${capping[@]}" \
      "$@" --label "$label" --snapshot "$dir/$label.pickle" --out "$dir/$label.torch.json"
  fi
}

step_allocator_peer() {
  if ! command -v python3 >/dev/null; then
    echo "skipped: no python3" | tee "$work/allocator-peer.why"
    return 77
  fi
  local traces="$root/tests/data/traces" failed=0 s label conf limit trace rc i
  peer_dir="$root/scripts/peer"
  dir="$work/allocator-peer"
  mkdir -p "$dir"
  local kind=torch device_run=$backend
  # The two replays' names in the comparison: the device's backend, and the host.
  [[ $device_run == host ]] && device_run=host-as-device
  if [[ $mode == rehearse ]]; then
    kind=standin
    echo "rehearsal: no PyTorch; pinbench's own snapshot of each trace stands in for PyTorch's"
  fi
  # 1. The references, side by side (each its own process: PyTorch reads the setting at start).
  local -a pids=() labels=() refs=()
  for s in "${allocator_peer_settings[@]}" "$allocator_peer_oom"; do
    IFS='|' read -r label conf limit <<<"$s"
    trace="$traces/peer-settings.json"
    local stop=()
    if [[ $s == "$allocator_peer_oom" ]]; then
      trace="$traces/peer-oom.json" stop=(--stop-at-oom)
    fi
    allocator_reference "$label" "$trace" "$conf" "$limit" "${stop[@]}" &
    pids+=("$!") labels+=("$label")
  done
  local unavailable=0
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}"
    rc=$?
    if ((rc == 3)); then
      unavailable=$((unavailable + 1))
    elif ((rc != 0)); then
      echo "allocator-peer: ${labels[$i]}: the reference failed (exit $rc)"
      failed=1
    fi
  done
  if ((unavailable == ${#pids[@]})); then
    echo "skipped: python3 cannot import torch with CUDA" | tee "$work/allocator-peer.why"
    return 77
  fi
  ((unavailable == 0)) || { echo "allocator-peer: $unavailable reference(s) found no torch with CUDA"; failed=1; }
  for label in "${labels[@]}"; do
    [[ -s $dir/$label.$kind.json ]] && refs+=("$dir/$label.$kind.json")
  done
  ((${#refs[@]} > 0)) || { echo "allocator-peer: no reference was written"; return 1; }

  # 2. pinbench replays every snapshot on the device's backend and on the host, 3. compares.
  local -a device_scenarios host_scenarios
  mapfile -t device_scenarios < <(python3 "$peer_dir/compare_allocator.py" replay-scenarios \
    "${refs[@]}" --out-dir "$dir/scenarios-device")
  mapfile -t host_scenarios < <(python3 "$peer_dir/compare_allocator.py" replay-scenarios \
    "${refs[@]}" --out-dir "$dir/scenarios-host" --name-suffix=-host)
  if ((${#device_scenarios[@]} != ${#refs[@]} || ${#host_scenarios[@]} != ${#refs[@]})); then
    echo "allocator-peer: a reference gave no replay scenario"
    failed=1
  fi
  # Never an empty list: `pinbench run` of no scenario runs the built-in quick suite.
  if ((${#device_scenarios[@]} > 0)); then
    "$PINBENCH" run --backend "$backend" "${device_scenarios[@]}" \
      --out "$work/allocator-peer-device.json" --snapshot "$dir/replay-device.snapshots.json" -q ||
      failed=1
  fi
  if ((${#host_scenarios[@]} > 0)); then
    "$PINBENCH" run --backend host "${host_scenarios[@]}" --out "$work/allocator-peer-host.json" \
      --snapshot "$dir/replay-host.snapshots.json" -q || failed=1
  fi
  python3 "$peer_dir/compare_allocator.py" compare --reference "${refs[@]}" \
    --pinbench "$device_run" "$work/allocator-peer-device.json" "$dir/replay-device.snapshots.json" \
    --pinbench host "$work/allocator-peer-host.json" "$dir/replay-host.snapshots.json" \
    --out "$work/allocator-peer-compare.json" || failed=1

  # 4. The OOM: tune answers from the snapshot PyTorch dumped at it, on the device's capacity and
  # the same memory fraction; the answer is replayed in PyTorch again.
  IFS='|' read -r label conf limit <<<"$allocator_peer_oom"
  local before="$dir/$label.$kind.json" tune="$work/tune-allocator-peer.json"
  [[ -s $before ]] || { echo "allocator-peer: no OOM reference ($before)"; return 1; }
  local -a oom answer after=()
  mapfile -t oom < <(reference_info "$before" snapshot device_total_bytes memory_fraction)
  "$PINBENCH" tune allocator "${oom[0]}" --capacity "${oom[1]}" --memory-fraction "${oom[2]}" \
    --backend "$backend" --budget 15s --out "$tune"
  rc=$?
  # Exit 1 is an answer too (no setting avoids the OOM), its result written.
  if ! ((rc == 0 || rc == 1)) || [[ ! -s $tune ]]; then
    echo "allocator-peer: tune failed (exit $rc)"
    failed=1
  fi
  mapfile -t answer < <(python3 "$peer_dir/compare_allocator.py" answer "$tune")
  if [[ ${answer[0]:-} == export ]]; then
    echo "allocator-peer: tune's answer: PYTORCH_CUDA_ALLOC_CONF=\"${answer[1]}\", memory fraction ${answer[2]:-${oom[2]}}"
    if allocator_reference oom-answer "$traces/peer-oom.json" "${answer[1]}" "" \
      --memory-fraction "${answer[2]:-${oom[2]}}"; then
      after=(--after "$dir/oom-answer.$kind.json")
    else
      failed=1
    fi
  fi
  python3 "$peer_dir/compare_allocator.py" oom-check --before "$before" --tune "$tune" "${after[@]}" \
    --out "$work/allocator-peer-oom.json" || failed=1
  return "$failed"
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
run_step allocator-peer 45 "$0" __step allocator_peer

# ---- 5. the files that come back -------------------------------------------------------------------
if command -v python3 >/dev/null; then
  report="$root/scripts/gpu_check_report.py"
  # The allocator peer's pinbench runs (a rehearsal's own runs of the traces too) and its
  # verdicts (pinbench.allocator-peer/1: merged as the result's "allocator_peer" block).
  shopt -s nullglob
  own_runs=("$work"/allocator-peer/own-*.json)
  torch_allocator=("$work"/allocator-peer/*.torch.json)
  shopt -u nullglob
  python3 "$report" merge "$OUT/pinbench.json" "$work/transfer.json" "$work/allocator.json" \
    "$work/loader.json" "$work/loader-peer-pinned.json" "$work/multi.json" \
    "$work/tune-allocator.json" "$work/tune-loader.json" "$work/allocator-peer-device.json" \
    "$work/allocator-peer-host.json" "$work/tune-allocator-peer.json" "${own_runs[@]}" \
    "$work/allocator-peer-compare.json" "$work/allocator-peer-oom.json" 2>>"$log" || failed=1
  if [[ -f "$work/torch-transfer.json" || -f "$work/torch-dataloader.json" ]] ||
    ((${#torch_allocator[@]} > 0)); then
    python3 "$report" merge "$OUT/torch.json" "$work/torch-transfer.json" \
      "$work/torch-dataloader.json" "${torch_allocator[@]}" 2>>"$log" || true
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
