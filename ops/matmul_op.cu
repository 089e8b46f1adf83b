// CUDA kernels for matmul and matmul_grad (schemas in matmul_op.cc):
// Out = alpha * op(X) op(Y) by cuBLAS, one strided-batched call for rank-3
// operands (a rank-2 operand is shared by the batch: stride 0). The
// gradient of a shared operand sums over the batch in batch order, as the
// CPU kernel does.
#include "ops/cuda/dense_helpers.cuh"
#include "ops/matmul_dims.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void MatMulKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  T* out = cuda::OutputData<T>(ctx, "Out");
  const bool tx = ctx.Attr<bool>("transpose_X");
  const bool ty = ctx.Attr<bool>("transpose_Y");
  const T alpha = static_cast<T>(ctx.Attr<float>("alpha"));
  const MatMulDims d = GetMatMulDims(ctx, x, y);
  const int64_t m = d.m, n = d.n, k = d.k;
  cuda::BatchedGemmAnyK(cuda::Dev(ctx), tx, ty, d.batch, m, n, k, alpha,
                        x.data<T>(), d.x_batched ? m * k : 0, y.data<T>(),
                        d.y_batched ? k * n : 0, out);
}

// With G = dOut and the stored (untransposed) X and Y:
//   Out = X Y      : dX = G Y^T     dY = X^T G
//   Out = X^T Y    : dX = Y G^T     dY = X G
//   Out = X Y^T    : dX = G Y       dY = G^T X
//   Out = X^T Y^T  : dX = Y^T G^T   dY = G^T X^T
// each times alpha. A shared (rank-2) operand's gradient sums over the
// batch.
template <typename T>
void MatMulGradKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const bool tx = ctx.Attr<bool>("transpose_X");
  const bool ty = ctx.Attr<bool>("transpose_Y");
  const T alpha = static_cast<T>(ctx.Attr<float>("alpha"));
  const MatMulDims d = GetMatMulDims(ctx, x, y);
  const int64_t m = d.m, n = d.n, k = d.k;
  const int64_t out_numel = (d.x_batched || d.y_batched ? d.batch : 1) * m * n;
  FLUID_ENFORCE(dout.numel() == out_numel, "matmul_grad: Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " does not match the product of X '", ctx.InputName("X"), "' ",
                x.shape(), " and Y '", ctx.InputName("Y"), "' ", y.shape());
  const int64_t xs = d.x_batched ? m * k : 0;
  const int64_t ys = d.y_batched ? k * n : 0;
  const int64_t gs = m * n;
  const T* xp = x.data<T>();
  const T* yp = y.data<T>();
  const T* gp = dout.data<T>();
  const auto& dev = cuda::Dev(ctx);
  const int64_t b = d.batch;
  if (T* p = cuda::OutputData<T>(ctx, GradSlot("X"))) {
    if (!tx && !ty) {
      cuda::BatchedGemmInto(dev, false, true, b, m, k, n, alpha, gp, gs, yp, ys,
                            p, xs);
    } else if (tx && !ty) {
      cuda::BatchedGemmInto(dev, false, true, b, k, m, n, alpha, yp, ys, gp, gs,
                            p, xs);
    } else if (!tx && ty) {
      cuda::BatchedGemmInto(dev, false, false, b, m, k, n, alpha, gp, gs, yp,
                            ys, p, xs);
    } else {
      cuda::BatchedGemmInto(dev, true, true, b, k, m, n, alpha, yp, ys, gp, gs,
                            p, xs);
    }
  }
  if (T* p = cuda::OutputData<T>(ctx, GradSlot("Y"))) {
    if (!tx && !ty) {
      cuda::BatchedGemmInto(dev, true, false, b, k, n, m, alpha, xp, xs, gp, gs,
                            p, ys);
    } else if (tx && !ty) {
      cuda::BatchedGemmInto(dev, false, false, b, k, n, m, alpha, xp, xs, gp,
                            gs, p, ys);
    } else if (!tx && ty) {
      cuda::BatchedGemmInto(dev, true, false, b, n, k, m, alpha, gp, gs, xp, xs,
                            p, ys);
    } else {
      cuda::BatchedGemmInto(dev, true, true, b, n, k, m, alpha, gp, gs, xp, xs,
                            p, ys);
    }
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(matmul, kCUDA, MatMulKernel);
REGISTER_FLOAT_KERNELS(matmul_grad, kCUDA, MatMulGradKernel);

}  // namespace ops
}  // namespace fluid
