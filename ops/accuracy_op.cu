// CUDA kernel for accuracy (schema and shape inference in accuracy_op.cc).
//
// One block: each warp takes rows in turn, its lanes scan the row's classes
// and the warp combines their best (score, index) pairs (k = 1), or their
// counts of scores ranking before the label's (k > 1); the per-warp counts
// are then added. Integer counts make the result exact and deterministic.
//
// The CPU kernel rejects a label outside [0, C). The labels live in device
// memory here, and checking them would need a copy back and a
// synchronisation on every step; such a row instead counts as a miss (no
// prediction equals it) and no memory outside the scores is read.
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/topk_op.h"

namespace fluid {
namespace ops {
namespace {

constexpr int kAccuracyThreads = 512;

// A candidate for a row's prediction; index < 0 is "none yet".
template <typename T>
struct Best {
  T score;
  int64_t index;
};

// The CPU scans a row keeping `best` and moving it to j when
// row[j] > row[best]. Without NaNs that is the largest score, lowest index
// among ties, which combines in any order. A NaN never wins a comparison, so
// NaN scores are skipped here, and a NaN at index 0 (which the scan never
// leaves) is handled by the caller.
template <typename T>
__device__ Best<T> Better(Best<T> a, Best<T> b) {
  if (a.index < 0) return b;
  if (b.index < 0) return a;
  if (b.score > a.score || (b.score == a.score && b.index < a.index)) return b;
  return a;
}

template <typename T>
__device__ Best<T> WarpBest(Best<T> v) {
  for (int offset = 16; offset > 0; offset /= 2) {
    Best<T> other;
    other.score = __shfl_down_sync(0xffffffffu, v.score, offset);
    other.index = __shfl_down_sync(0xffffffffu, v.index, offset);
    v = Better(v, other);
  }
  return v;
}

// k > 1: whether the row's label is in its top k (InTopK, split over the
// lanes of a warp); the result is valid in lane 0.
template <typename T>
__device__ bool WarpInTopK(const T* row, int64_t classes, int64_t label,
                           int64_t k, int lane) {
  const bool valid = label >= 0 && label < classes;
  long long before = 0;
  if (valid)
    for (int64_t j = lane; j < classes; j += 32)
      before += RanksBefore(row[j], j, row[label], label);
  for (int offset = 16; offset > 0; offset /= 2)
    before += __shfl_down_sync(0xffffffffu, before, offset);
  return valid && before < k;
}

template <typename T>
__global__ void AccuracyKernel(const T* scores, const int64_t* label,
                               int64_t rows, int64_t classes, int64_t k,
                               T* accuracy, int64_t* correct_out,
                               int64_t* total_out) {
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  long long correct = 0;  // counted by lane 0 of each warp
  for (int64_t r = warp; r < rows; r += warps) {
    const T* row = scores + r * classes;
    if (k > 1) {
      const bool in = WarpInTopK(row, classes, label[r], k, lane);
      if (lane == 0) correct += in;
      continue;
    }
    Best<T> best{T(0), -1};
    for (int64_t j = lane; j < classes; j += 32) {
      const T s = row[j];
      if (s == s) best = Better(best, Best<T>{s, j});
    }
    best = WarpBest(best);
    if (lane == 0) {
      const bool first_nan = classes > 0 && row[0] != row[0];
      const int64_t predicted = first_nan || best.index < 0 ? 0 : best.index;
      // A label outside [0, classes) matches no prediction.
      correct += predicted == label[r];
    }
  }
  correct = cuda::BlockReduce(correct, cuda::SumOp(), 0LL);
  if (threadIdx.x == 0) {
    *accuracy =
        rows > 0 ? static_cast<T>(correct) / static_cast<T>(rows) : T(0);
    if (correct_out != nullptr) *correct_out = correct;
    if (total_out != nullptr) *total_out = rows;
  }
}

template <typename T>
void AccuracyCudaKernel(const ExecutionContext& ctx) {
  const Tensor& out = ctx.Input("Out");
  const Tensor& label = ctx.Input("Label");
  const int64_t rows = out.shape()[0], classes = out.shape()[1];
  T* accuracy = cuda::OutputData<T>(ctx, "Accuracy");
  int64_t* correct = cuda::OutputData<int64_t>(ctx, "Correct");
  int64_t* total = cuda::OutputData<int64_t>(ctx, "Total");
  AccuracyKernel<T><<<1, kAccuracyThreads, 0, cuda::Dev(ctx).stream()>>>(
      out.data<T>(), label.data<int64_t>(), rows, classes,
      int64_t{ctx.Attr<int32_t>("k")}, accuracy, correct, total);
  cuda::CheckLaunch();
}

}  // namespace

REGISTER_FLOAT_KERNELS(accuracy, kCUDA, AccuracyCudaKernel);

}  // namespace ops
}  // namespace fluid
