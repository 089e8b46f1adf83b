#!/usr/bin/env bash
# The full test suite: installs what it needs, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# Sources as .clang-format writes them (tools/check_format.sh --fix).
tools/check_format.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-2}" \
  --timeout 900

# The transpiler alone, in a build with MPI and the ops switched off: it is
# a pure function on programs and must stay buildable and testable so.
cmake -S . -B build-transpiler -DCMAKE_BUILD_TYPE=Release \
  -DPython3_EXECUTABLE=/usr/bin/python3 -DWITH_MPI=OFF -DWITH_OPS=OFF \
  -DWITH_CUDA=OFF -DWITH_PYTHON=OFF >/dev/null
cmake --build build-transpiler -j "${JOBS:-2}"
ctest --test-dir build-transpiler --output-on-failure -j "${JOBS:-2}"

# The GPU tests once more, against the CUDA emulation (tools/cuda_emu): the
# CUDA kernels compiled for the host, so that every one of them runs even
# where no GPU is visible. Its own build tree, build-emu/.
BUILD_DIR=build-emu tools/cuda_emu/build.sh
BUILD_DIR=build-emu tools/cuda_emu/run_tests.sh
