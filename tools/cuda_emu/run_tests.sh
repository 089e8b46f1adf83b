#!/usr/bin/env bash
# Runs the GPU tests under the CUDA emulation (build first with build.sh):
# the emulation's self-test, the CUDA tests of fluid_unit_tests,
# fluid_mpi_cuda_tests under mpirun -np 1 and -np 2, and
# tests/python/test_cuda.py. Logs go to $LOG_DIR (default $BUILD_DIR/logs);
# a summary line per step is printed. Exit status 1 when any step failed.
#   tools/cuda_emu/run_tests.sh [step ...]   steps: selftest unit mpi1 mpi2 python
# GTEST_FILTER overrides the unit-test filter ('*Cuda*:*cuda*').
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
SRC="$(cd "$HERE/../.." && pwd)"
BUILD_DIR="${BUILD_DIR:-/tmp/build-emu}"
LOG_DIR="${LOG_DIR:-$BUILD_DIR/logs}"
mkdir -p "$LOG_DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
TESTS="$BUILD_DIR/fluid/tests"

steps=("$@")
[ "${#steps[@]}" -eq 0 ] && steps=(selftest unit mpi1 mpi2 python)

status=0
run() {  # run NAME COMMAND...
  local name="$1"; shift
  local start=$SECONDS
  "$@" >"$LOG_DIR/$name.log" 2>&1
  local rc=$?
  printf '%-9s %s (exit %d, %ds) log: %s\n' "$name" \
    "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "$rc" \
    $((SECONDS - start)) "$LOG_DIR/$name.log"
  [ $rc -eq 0 ] || status=1
}

for step in "${steps[@]}"; do
  case "$step" in
    selftest)
      run selftest "$BUILD_DIR/cuda_emu_selftest" ;;
    unit)
      run unit "$TESTS/fluid_unit_tests" \
        --gtest_filter="${GTEST_FILTER:-*Cuda*:*cuda*}" ;;
    mpi1)
      run mpi1 mpirun --allow-run-as-root --oversubscribe -np 1 \
        "$TESTS/fluid_mpi_cuda_tests" ;;
    mpi2)
      run mpi2 mpirun --allow-run-as-root --oversubscribe -np 2 \
        "$TESTS/fluid_mpi_cuda_tests" ;;
    python)
      run python env PYTHONPATH="$BUILD_DIR/python" \
        FLUID_PYTHONPATH="$BUILD_DIR/python" \
        FLUID_TRAINER="$BUILD_DIR/bin/trainer" \
        /usr/bin/python3 -m pytest -v -p no:cacheprovider \
        "$SRC/tests/python/test_cuda.py" ;;
    *)
      echo "run_tests.sh: unknown step $step" >&2; exit 2 ;;
  esac
done
exit $status
