#!/usr/bin/env bash
# Builds the project with its CUDA code compiled for the host against the
# CUDA emulation (tools/cuda_emu), in a build tree of its own.
#   tools/cuda_emu/build.sh [cmake target ...]
# Default targets: what run_tests.sh runs -- cuda_emu_selftest and what the
# ctests labelled gpu need (fluid_cuda_tests, fluid_mpi_cuda_tests, the Python
# package). ALL=1 builds everything.
# BUILD_DIR (default /tmp/build-emu), JOBS (default 2), CMAKE_ARGS.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
SRC="$(cd "$HERE/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-/tmp/build-emu}"
JOBS="${JOBS:-2}"
case "$(realpath -m "$BUILD_DIR")" in
  "$SRC/build" | "$SRC")
    echo "build.sh: $BUILD_DIR is the project's own build tree" >&2
    exit 1 ;;
esac

export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$SRC}"
cmake -S "$HERE" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
  -DPython3_EXECUTABLE=/usr/bin/python3 -DFLUID_SOURCE_DIR="$SRC" \
  ${CMAKE_ARGS:-} >/dev/null

if [ "$#" -gt 0 ]; then
  targets=("$@")
elif [ "${ALL:-0}" = 1 ]; then
  targets=(all)
else
  targets=(cuda_emu_selftest fluid_cuda_tests fluid_mpi_cuda_tests fluid_python)
fi
for t in "${targets[@]}"; do
  cmake --build "$BUILD_DIR" -j "$JOBS" --target "$t"
done
