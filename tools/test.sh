#!/usr/bin/env bash
# The full test suite: installs what it needs, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-2}" \
  --timeout 900

# The GPU tests once more, against the CUDA emulation (tools/cuda_emu): the
# CUDA kernels compiled for the host, so that every one of them runs even
# where no GPU is visible. Its own build tree, build-emu/.
BUILD_DIR=build-emu tools/cuda_emu/build.sh
BUILD_DIR=build-emu tools/cuda_emu/run_tests.sh
