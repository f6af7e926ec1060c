#!/usr/bin/env bash
# Set up (packages, configure, build), then run the whole test suite through ctest.
# Tests that need a GPU are reported as skipped when no CUDA device is usable.
# Extra arguments go to ctest (e.g. scripts/test.sh -R scenario).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
BUILD_DIR=${BUILD_DIR:-$root/build}
cd "$BUILD_DIR"
ctest --output-on-failure -j "${JOBS:-$(nproc)}" --timeout 300 "$@"
