// CUDA kernels for softmax and softmax_grad over the last dim (schemas in
// softmax_op.cc). One block per row; the row max, sum and dot product are
// block reductions in a fixed order (deterministic run to run). The
// formulas are the CPU kernel's: Out = exp(X - max) * (1 / sum), and
// dX = (dOut - sum(dOut * Out)) * Out.
#include "ops/cuda/dense_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

// Rows and row length of the last-dim view of `t`.
void RowsCols(const Tensor& t, int64_t* rows, int64_t* cols) {
  const Shape& s = t.shape();
  *cols = s.rank() == 0 ? 1 : s[s.rank() - 1];
  *rows = *cols == 0 ? 0 : t.numel() / *cols;
}

template <typename T>
__global__ void SoftmaxRows(int64_t rows, int64_t d, const T* x, T* out) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * d;
    T* o = out + r * d;
    // The row's first element seeds every thread's max (and stands in for
    // the identity), so no infinity is needed.
    T mx = xr[0];
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x)
      mx = cuda::MaxOp()(mx, xr[c]);
    mx = cuda::BlockReduce(mx, cuda::MaxOp(), xr[0]);
    T sum = 0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
      const T e = exp(xr[c] - mx);
      o[c] = e;
      sum += e;
    }
    sum = cuda::BlockReduce(sum, cuda::SumOp(), T(0));
    const T inv = T(1) / sum;
    // Each thread scales the entries it wrote itself.
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) o[c] *= inv;
  }
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
  RowsCols(x, &rows, &d);
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
  const Tensor& out = ctx.Input("Out");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.shape() == out.shape(), "softmax_grad: Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " differs from Out '", ctx.InputName("Out"), "' ", out.shape());
  int64_t rows, d;
  RowsCols(out, &rows, &d);
  T* dp = dx->mutable_data<T>(ctx.place());
  if (rows == 0) return;
  const auto& dev = cuda::Dev(ctx);
  SoftmaxGradRows<T>
      <<<cuda::RowBlocks(rows), cuda::RowThreads(d), 0, dev.stream()>>>(
          rows, d, out.data<T>(), dout.data<T>(), dp);
  cuda::CheckLaunch();
}

}  // namespace

REGISTER_FLOAT_KERNELS(softmax, kCUDA, SoftmaxKernel);
REGISTER_FLOAT_KERNELS(softmax_grad, kCUDA, SoftmaxGradKernel);

}  // namespace ops
}  // namespace fluid
