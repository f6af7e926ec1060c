#!/usr/bin/env bash
# Runs a ThreadSanitizer-instrumented test binary (ctest's loader_tsan): "$@" is the command.
# TSan maps its shadow memory at fixed addresses. On kernels that randomise mmap with more bits
# (vm.mmap_rnd_bits above 28 or so) than the toolchain's TSan expects, the process dies before
# main with "FATAL: ThreadSanitizer: unexpected memory mapping". That says nothing about the
# code under test, so the run is then repeated once with address space randomisation turned off
# for this process only (setarch -R, no privileges needed). Any other outcome, a TSan report
# included, is passed on unchanged.
set -u
log=$(mktemp "${TMPDIR:-/tmp}/pinbench-tsan.XXXXXX") || exit 1
trap 'rm -f "$log"' EXIT

"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ] && grep -q "unexpected memory mapping" "$log"; then
  echo "run_tsan.sh: TSan could not lay out its shadow memory under this kernel's ASLR" \
       "(vm.mmap_rnd_bits=$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo '?'));" \
       "running again under setarch -R" >&2
  setarch "$(uname -m)" -R "$@"
  rc=$?
fi
exit "$rc"
