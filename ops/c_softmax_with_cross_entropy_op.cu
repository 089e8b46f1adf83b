// CUDA kernels for c_softmax_with_cross_entropy and its gradient (schemas,
// shape inference and the collectives in c_softmax_with_cross_entropy_op.cc):
// the forward pass of CSoftmaxForward with the row passes as kernels, the
// data kept on the device (the row statistics are reduced over the ring
// from device memory, as c_allreduce reduces a device tensor). One block
// per row for the row max and the exp sums, reductions in a fixed order
// (deterministic run to run), the same formulas as the CPU kernels.
//
// As the CUDA kernels of softmax_with_cross_entropy, these do not check the
// labels (they live in device memory; a check would need a copy back and a
// synchronisation on every step): a row whose label is outside [0, C) and
// not ignore_index gets loss 0 and gradient 0, on every rank alike, and no
// memory outside the row is read. Validate labels on the host (or run the
// CPU kernel) to catch bad data.
#include <limits>

#include "ops/c_softmax_with_cross_entropy_op.h"
#include "ops/cuda/dense_helpers.cuh"
#include "ops/label_helpers.h"

namespace fluid {
namespace ops {
namespace {

// max = the max of each row of the block; `lowest` (the lowest T) for an
// empty block, so that the max over the ring is the other blocks'.
template <typename T>
__global__ void RowMaxRows(int64_t rows, int64_t classes, T lowest, const T* x,
                           T* max) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * classes;
    T m = lowest;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x)
      m = cuda::MaxOp()(m, row[c]);
    m = cuda::BlockReduce(m, cuda::MaxOp(), lowest);
    if (threadIdx.x == 0) max[r] = m;
  }
}

// softmax = exp(x - max) on each row of the block, sum its row sums, target
// the shifted logit of the label when the block holds it (else 0).
template <typename T>
__global__ void ShiftedExpRows(int64_t rows, int64_t classes, int64_t start,
                               int64_t ignore, const T* x, const int64_t* label,
                               const T* max, T* softmax, T* sum, T* target) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * classes;
    T* s = softmax + r * classes;
    const T m = max[r];
    T acc = 0;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) {
      const T e = exp(row[c] - m);
      s[c] = e;
      acc += e;
    }
    acc = cuda::BlockReduce(acc, cuda::SumOp(), T(0));
    if (threadIdx.x == 0) {
      const int64_t l = label[r], at = l - start;
      sum[r] = acc;
      target[r] = l != ignore && at >= 0 && at < classes ? row[at] - m : T(0);
    }
  }
}

// softmax *= 1 / sum on each row; loss = log(sum) - target on the rows
// whose label selects a class of the whole row (`whole` classes), else 0.
template <typename T>
__global__ void NormaliseRows(int64_t rows, int64_t classes, int64_t whole,
                              int64_t ignore, const int64_t* label,
                              const T* sum, const T* target, T* softmax,
                              T* loss) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T total = sum[r];
    const T inv = T(1) / total;
    T* s = softmax + r * classes;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) s[c] *= inv;
    if (threadIdx.x == 0)
      loss[r] = LabelSelectsClass(label[r], whole, ignore)
                    ? log(total) - target[r]
                    : T(0);
  }
}

// The row passes of CSoftmaxForward, on the context's stream.
struct CudaPasses {
  template <typename T>
  static void RowMax(const ExecutionContext& ctx, const ClassBlock& b,
                     const T* x, T* max) {
    if (b.rows == 0) return;
    RowMaxRows<T><<<cuda::RowBlocks(b.rows), cuda::RowThreads(b.classes), 0,
                    cuda::Dev(ctx).stream()>>>(
        b.rows, b.classes, std::numeric_limits<T>::lowest(), x, max);
    cuda::CheckLaunch();
  }

  template <typename T>
  static void ShiftedExp(const ExecutionContext& ctx, const ClassBlock& b,
                         const T* x, const int64_t* label, const T* max,
                         T* softmax, T* sum, T* target) {
    if (b.rows == 0) return;
    ShiftedExpRows<T><<<cuda::RowBlocks(b.rows), cuda::RowThreads(b.classes), 0,
                        cuda::Dev(ctx).stream()>>>(b.rows, b.classes, b.start,
                                                   b.ignore, x, label, max,
                                                   softmax, sum, target);
    cuda::CheckLaunch();
  }

  template <typename T>
  static void Normalise(const ExecutionContext& ctx, const ClassBlock& b,
                        const int64_t* label, const T* sum, const T* target,
                        T* softmax, T* loss) {
    if (b.rows == 0) return;
    NormaliseRows<T><<<cuda::RowBlocks(b.rows), cuda::RowThreads(b.classes), 0,
                       cuda::Dev(ctx).stream()>>>(
        b.rows, b.classes, b.whole_classes, b.ignore, label, sum, target,
        softmax, loss);
    cuda::CheckLaunch();
  }
};

// An element of Logits@GRAD: Softmax * g, minus g at the label when this
// block holds it, g = Loss@GRAD of its row; 0 on a row whose label selects
// no class of the whole row.
template <typename T>
struct CSoftmaxGradAt {
  const T* softmax;
  const int64_t* label;
  const T* dloss;
  T* dlogits;
  int64_t classes, start, whole, ignore;
  __device__ void operator()(int64_t idx) const {
    const int64_t i = idx / classes, j = idx - i * classes;
    const int64_t l = label[i];
    if (!LabelSelectsClass(l, whole, ignore)) {
      dlogits[idx] = T(0);
      return;
    }
    const T g = dloss[i];
    const T v = softmax[idx] * g;
    dlogits[idx] = l - start == j ? v - g : v;
  }
};

template <typename T>
void CSoftmaxCudaKernel(const ExecutionContext& ctx) {
  CSoftmaxForward<T, CudaPasses>(ctx, ReadClassBlock(ctx, "Logits", false));
}

template <typename T>
void CSoftmaxGradCudaKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("Logits"))) return;
  const ClassBlock b = ReadClassBlock(ctx, "Softmax", false);
  T* dx = cuda::OutputData<T>(ctx, GradSlot("Logits"));
  cuda::ForEach(
      cuda::Dev(ctx), b.rows * b.classes,
      CSoftmaxGradAt<T>{ctx.Input("Softmax").data<T>(),
                        ctx.Input("Label").data<int64_t>(),
                        ctx.Input(GradSlot("Loss")).data<T>(), dx, b.classes,
                        b.start, b.whole_classes, b.ignore});
}

}  // namespace

REGISTER_FLOAT_KERNELS(c_softmax_with_cross_entropy, kCUDA, CSoftmaxCudaKernel);
REGISTER_FLOAT_KERNELS(c_softmax_with_cross_entropy_grad, kCUDA,
                       CSoftmaxGradCudaKernel);

}  // namespace ops
}  // namespace fluid
