// CUDA kernels for mul and mul_grad (schemas in mul_op.cc): X and Y are
// flattened to matrices at x_num_col_dims / y_num_col_dims and multiplied
// by cuBLAS.
#include "ops/cuda/dense_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

struct MulDims {
  int64_t m, k, n;
};

MulDims GetMulDims(const ExecutionContext& ctx, const Tensor& x,
                   const Tensor& y) {
  const int xn = ctx.Attr<int32_t>("x_num_col_dims");
  const int yn = ctx.Attr<int32_t>("y_num_col_dims");
  return {x.shape().Product(0, xn), x.shape().Product(xn, x.shape().rank()),
          y.shape().Product(yn, y.shape().rank())};
}

template <typename T>
void MulKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  T* out = cuda::OutputData<T>(ctx, "Out");
  const MulDims d = GetMulDims(ctx, x, y);
  cuda::GemmAnyK(cuda::Dev(ctx), false, false, d.m, d.n, d.k, T(1), x.data<T>(),
                 y.data<T>(), T(0), out);
}

template <typename T>
void MulGradKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const MulDims d = GetMulDims(ctx, x, y);
  const auto& dev = cuda::Dev(ctx);
  if (T* dx = cuda::OutputData<T>(ctx, GradSlot("X"))) {
    // dX[m,k] = dOut[m,n] * Y[k,n]^T
    cuda::GemmAnyK(dev, false, true, d.m, d.k, d.n, T(1), dout.data<T>(),
                   y.data<T>(), T(0), dx);
  }
  if (T* dy = cuda::OutputData<T>(ctx, GradSlot("Y"))) {
    // dY[k,n] = X[m,k]^T * dOut[m,n]
    cuda::GemmAnyK(dev, true, false, d.k, d.n, d.m, T(1), x.data<T>(),
                   dout.data<T>(), T(0), dy);
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(mul, kCUDA, MulKernel);
REGISTER_FLOAT_KERNELS(mul_grad, kCUDA, MulGradKernel);

}  // namespace ops
}  // namespace fluid
