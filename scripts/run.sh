#!/usr/bin/env bash
# Set up (packages, configure, build) and run pinbench. No arguments: `pinbench run`, the
# built-in quick suite. Arguments go to pinbench: scripts/run.sh list, scripts/run.sh info, ...
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
BUILD_DIR=${BUILD_DIR:-$root/build}
if [ $# -eq 0 ]; then set -- run; fi
exec "$BUILD_DIR/app/pinbench" "$@"
