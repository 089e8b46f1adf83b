#!/bin/bash
# The GPU check in one script, for a machine with a CUDA device: build (with
# the benchmarks), run every GPU test, then the GPU benchmarks. Logs and
# results go to $OUT (default ./gpu_out).
#
#   benchmarks/gpu_check.sh            build, test, benchmark
#   SKIP_BENCH=1 benchmarks/gpu_check.sh
#
# Exits non-zero when a test fails; benchmarks are reported as measured.
set -u
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu_out}"
BUILD_DIR="${BUILD_DIR:-build-gpu}"
JOBS="${JOBS:-$(nproc)}"
PY="${PYTHON:-/usr/bin/python3}"
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN="mpirun --oversubscribe"
status=0
step() { echo "== $*" | tee -a "$OUT/summary.txt"; }

nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || true
step "build"
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DWITH_CUDA=ON \
  -DBUILD_BENCHMARKS=ON -DPython3_EXECUTABLE="$PY" > "$OUT/cmake.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$JOBS" > "$OUT/build.log" 2>&1 ||
  { tail -50 "$OUT/build.log"; exit 1; }

step "unit tests on the GPU (op equivalence, training, memory)"
"$BUILD_DIR/tests/fluid_cuda_tests" > "$OUT/gpu_unit_tests.log" 2>&1 ||
  status=1
tail -3 "$OUT/gpu_unit_tests.log" | tee -a "$OUT/summary.txt"
for np in 1 2; do
  step "mpi np$np on the GPU"
  $MPIRUN -np $np "$BUILD_DIR/tests/fluid_mpi_cuda_tests" \
    > "$OUT/mpi_cuda_np$np.log" 2>&1 || status=1
  tail -3 "$OUT/mpi_cuda_np$np.log" | tee -a "$OUT/summary.txt"
done
step "trainer --place cuda"
"$BUILD_DIR/bin/trainer" --model lenet --place cuda --epochs 1 \
  > "$OUT/trainer_cuda.log" 2>&1 || status=1
tail -2 "$OUT/trainer_cuda.log" | tee -a "$OUT/summary.txt"
step "python CUDAPlace"
PYTHONPATH="$BUILD_DIR/python" "$PY" -m pytest -q -p no:cacheprovider \
  tests/python/test_cuda.py > "$OUT/python_cuda.log" 2>&1 || status=1
tail -2 "$OUT/python_cuda.log" | tee -a "$OUT/summary.txt"

if [ -z "${SKIP_BENCH:-}" ]; then
  step "training throughput on one GPU (median of 3, interleaved)"
  for model in lenet mlp; do
    for batch in 64 512; do
      for rep in 1 2 3; do
        "$BUILD_DIR/benchmarks/train_bench" --model $model --place cuda:0 \
          --batch $batch --steps 500 --warmup 50 >> "$OUT/train_gpu.jsonl"
        "$PY" benchmarks/torch_train_bench.py --model $model --device cuda \
          --batch $batch --steps 500 --warmup 50 >> "$OUT/train_gpu.jsonl"
      done
    done
  done
  "$PY" - "$OUT/train_gpu.jsonl" <<'PYEOF' | tee -a "$OUT/summary.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
keys = sorted({(r["model"], r["batch"]) for r in rows})
print(f"{'model':6} {'batch':>5} {'fluid':>10} {'torch':>10} {'ratio':>6}")
for m, b in keys:
    f = statistics.median(r["samples_per_s"] for r in rows
                          if r["framework"] == "fluid" and r["model"] == m
                          and r["batch"] == b)
    t = statistics.median(r["samples_per_s"] for r in rows
                          if r["framework"] == "torch" and r["model"] == m
                          and r["batch"] == b)
    print(f"{m:6} {b:5d} {f:10.0f} {t:10.0f} {f / t:6.2f}")
PYEOF
  step "allreduce: c_allreduce (NCCL) vs ncclAllReduce"
  ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
  [ "$ngpu" -ge 1 ] || ngpu=1
  $MPIRUN -np "$ngpu" "$BUILD_DIR/benchmarks/nccl_allreduce_bw" \
    > "$OUT/nccl_allreduce_bw.txt" 2>&1 || true
  cat "$OUT/nccl_allreduce_bw.txt" | tee -a "$OUT/summary.txt"
fi
exit $status
