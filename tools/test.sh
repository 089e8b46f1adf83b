#!/usr/bin/env bash
# The full test suite: installs what it needs, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-2}" \
  --timeout 900
