// CUDA kernels for softmax and softmax_grad over the last dim (schemas in
// softmax_op.cc). One block per row; the row max, sum and dot product are
// block reductions in a fixed order (deterministic run to run). The
// formulas are the CPU kernel's: Out = exp(X - max) * (1 / sum), and
// dX = (dOut - sum(dOut * Out)) * Out.
#include "ops/cuda/dense_helpers.cuh"
#include "ops/softmax_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
__global__ void SoftmaxRows(int64_t rows, int64_t d, const T* x, T* out) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x)
    cuda::BlockSoftmaxRow(x + r * d, d, out + r * d);
}

template <typename T>
__global__ void SoftmaxGradRows(int64_t rows, int64_t d, const T* y, const T* g,
                                T* dx) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* yr = y + r * d;
    const T* gr = g + r * d;
    T dot = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) dot += gr[c] * yr[c];
    dot = cuda::BlockReduce(dot, cuda::SumOp(), T(0));
    T* dr = dx + r * d;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x)
      dr[c] = (gr[c] - dot) * yr[c];
  }
}

template <typename T>
void SoftmaxKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  T* out = cuda::OutputData<T>(ctx, "Out");
  int64_t rows, d;
  SoftmaxRowsCols(x, &rows, &d);
  if (rows == 0) return;
  const auto& dev = cuda::Dev(ctx);
  SoftmaxRows<T>
      <<<cuda::RowBlocks(rows), cuda::RowThreads(d), 0, dev.stream()>>>(
          rows, d, x.data<T>(), out);
  cuda::CheckLaunch();
}

template <typename T>
void SoftmaxGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const SoftmaxGradArgs a = ReadSoftmaxGradArgs(ctx);
  T* dp = dx->mutable_data<T>(ctx.place());
  if (a.rows == 0) return;
  const auto& dev = cuda::Dev(ctx);
  SoftmaxGradRows<T>
      <<<cuda::RowBlocks(a.rows), cuda::RowThreads(a.cols), 0, dev.stream()>>>(
          a.rows, a.cols, a.out.data<T>(), a.dout.data<T>(), dp);
  cuda::CheckLaunch();
}

}  // namespace

REGISTER_FLOAT_KERNELS(softmax, kCUDA, SoftmaxKernel);
REGISTER_FLOAT_KERNELS(softmax_grad, kCUDA, SoftmaxGradKernel);

}  // namespace ops
}  // namespace fluid
