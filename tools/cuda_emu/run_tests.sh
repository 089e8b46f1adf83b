#!/usr/bin/env bash
# Runs the GPU tests under the CUDA emulation (build first with build.sh):
# the emulation's self-test, then every ctest of the build tree labelled
# gpu, in three steps by their other labels:
#   unit    gpu only (fluid_cuda_tests: the op, memory, registry and
#           training tests)
#   mpi     gpu and mpi (fluid_mpi_cuda_tests under mpirun -np 1 and -np 2)
#   python  gpu and python (tests/python/test_cuda.py)
# Logs go to $LOG_DIR (default $BUILD_DIR/logs); a summary line per step is
# printed. Exit status 1 when any step failed.
#   tools/cuda_emu/run_tests.sh [step ...]   steps: selftest unit mpi python
# CTEST_ARGS adds arguments to each ctest run (e.g. CTEST_ARGS='-R Conv2d').
set -uo pipefail
BUILD_DIR="${BUILD_DIR:-/tmp/build-emu}"
LOG_DIR="${LOG_DIR:-$BUILD_DIR/logs}"
mkdir -p "$LOG_DIR"

steps=("$@")
[ "${#steps[@]}" -eq 0 ] && steps=(selftest unit mpi python)

status=0
run() {  # run NAME COMMAND...
  local name="$1"; shift
  local log="$LOG_DIR/$name.log" start=$SECONDS
  "$@" >"$log" 2>&1
  local rc=$?
  # ctest's own count of the tests it ran and of those that skipped.
  local counts=""
  local total
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  if [ -n "$total" ]; then
    counts="; $total tests, $(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' \
      "$log") skipped"
  fi
  printf '%-9s %s (exit %d, %ds%s) log: %s\n' "$name" \
    "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "$rc" \
    $((SECONDS - start)) "$counts" "$log"
  [ $rc -eq 0 ] || status=1
}

gpu_ctest() {  # gpu_ctest LABEL-ARGS...: the gpu tests those labels select
  # shellcheck disable=SC2086  # CTEST_ARGS is a list of arguments
  ctest --test-dir "$BUILD_DIR" -V --no-tests=error -L '^gpu$' "$@" \
    ${CTEST_ARGS:-}
}

for step in "${steps[@]}"; do
  case "$step" in
    selftest) run selftest "$BUILD_DIR/cuda_emu_selftest" ;;
    unit) run unit gpu_ctest -LE '^(mpi|python)$' ;;
    mpi) run mpi gpu_ctest -L '^mpi$' ;;
    python) run python gpu_ctest -L '^python$' ;;
    *)
      echo "run_tests.sh: unknown step $step" >&2; exit 2 ;;
  esac
done
exit $status
