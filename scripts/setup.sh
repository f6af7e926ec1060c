#!/usr/bin/env bash
# Shared set-up for run.sh and test.sh: install missing Debian packages, configure, build.
# Idempotent: a second call installs nothing and rebuilds only what changed.
# Environment: PINBENCH_SETUP_ONLY_PACKAGES=1 (install, then stop), PINBENCH_EXTRA_PACKAGES,
#              BUILD_DIR (default build), PINBENCH_CUDA (AUTO|ON|OFF, default AUTO),
#              CMAKE_BUILD_TYPE (default RelWithDebInfo), JOBS (default: all cores).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$root/build}
JOBS=${JOBS:-$(nproc)}

need_pkgs=()
# PINBENCH_EXTRA_PACKAGES: more packages for scripts that need them (fuzz.sh: clang).
# shellcheck disable=SC2086
for pkg in cmake g++ make libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev catch2 \
           ${PINBENCH_EXTRA_PACKAGES:-}; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_pkgs+=("$pkg")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "setup: installing ${need_pkgs[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >&2
fi

# Scripts that build other trees (sanitize.sh, fuzz.sh) want the packages only.
[ "${PINBENCH_SETUP_ONLY_PACKAGES:-0}" = 1 ] && exit 0

if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" \
    -DPINBENCH_CUDA="${PINBENCH_CUDA:-AUTO}" >&2
fi
cmake --build "$BUILD_DIR" -j "$JOBS" >&2
