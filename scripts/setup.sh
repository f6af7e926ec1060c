#!/usr/bin/env bash
# Shared set-up for run.sh and test.sh: install missing Debian packages, configure, build.
# Idempotent: a second call installs nothing and rebuilds only what changed.
# Environment: PINBENCH_SETUP_ONLY_PACKAGES=1 (install, then stop), PINBENCH_EXTRA_PACKAGES,
#              BUILD_DIR (default build), PINBENCH_CUDA (AUTO|ON|OFF, default AUTO),
#              CMAKE_BUILD_TYPE (default Release), PINBENCH_PORTABLE (default ON),
#              PINBENCH_WERROR (default ON, as in every preset),
#              JOBS (default: all cores).
# The defaults are the default preset's, and with nvcc present the gpu-carry preset's: the suite
# that test.sh runs tests the very binaries that are carried to a GPU machine.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$root/build}
JOBS=${JOBS:-$(nproc)}

need_pkgs=()
# PINBENCH_EXTRA_PACKAGES: more packages for scripts that need them (sanitize.sh, fuzz.sh: clang).
# libbenchmark-tools and python3-scipy: Google Benchmark's compare.py, which the suite runs on
# pinbench's google-benchmark exports (tests/scripts/test_trackers.sh).
# slurm-wlm and munge: a single-node Slurm that the suite starts itself (tests/scripts/test_slurm.sh:
# srun with and without PMIx, sbatch), with daemons of its own on its own sockets and ports.
# shellcheck disable=SC2086
for pkg in cmake g++ make ninja-build binutils ccache \
           libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev catch2 \
           openmpi-bin libopenmpi-dev libturbojpeg0-dev \
           libbenchmark-tools python3-scipy slurm-wlm munge \
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

# The default preset (Ninja, warnings as errors, Release, CUDA when nvcc is found, portable), in
# BUILD_DIR, with the environment's overrides.
# shellcheck source=scripts/preset-tree.sh
. "$root/scripts/preset-tree.sh"
if ! preset_tree_current "$BUILD_DIR"; then
  (cd "$root" && cmake --preset default --fresh -B "$BUILD_DIR" \
    -DPINBENCH_WERROR="${PINBENCH_WERROR:-ON}" \
    -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" \
    -DPINBENCH_CUDA="${PINBENCH_CUDA:-AUTO}" \
    -DPINBENCH_PORTABLE="${PINBENCH_PORTABLE:-ON}") >&2
fi
cmake --build "$BUILD_DIR" -j "$JOBS" >&2
