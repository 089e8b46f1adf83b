// CUDA kernels for mul and mul_grad (schemas in mul_op.cc): X and Y are
// flattened to matrices at x_num_col_dims / y_num_col_dims and multiplied
// by cuBLAS (16-bit types: cublasGemmEx, summed in float32).
#include "ops/cuda/dense_helpers.cuh"
#include "ops/cuda/half_gemm.cuh"
#include "ops/half_math.h"

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

// C [m, n] = op(A) op(B) (+ C when `accumulate`: cuBLAS's beta).
template <typename T>
void Product(const CUDADeviceContext& dev, bool ta, bool tb, int64_t m,
             int64_t n, int64_t k, const T* a, const T* b, T* c,
             bool accumulate = false) {
  if constexpr (IsHalfType<T>::value) {
    cuda::HalfGemm<T, T>(dev, ta, tb, m, n, k, 1.0f, a, b,
                         accumulate ? 1.0f : 0.0f, c);
  } else {
    cuda::GemmAnyK(dev, ta, tb, m, n, k, T(1), a, b, T(accumulate ? 1 : 0), c);
  }
}

template <typename T>
void MulKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& y = ctx.Input("Y");
  T* out = cuda::OutputData<T>(ctx, "Out");
  const MulDims d = GetMulDims(ctx, x, y);
  Product(cuda::Dev(ctx), false, false, d.m, d.n, d.k, x.data<T>(), y.data<T>(),
          out);
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
    Product(dev, false, true, d.m, d.k, d.n, dout.data<T>(), y.data<T>(), dx);
  }
  if (T* dy = cuda::OutputData<T>(ctx, GradSlot("Y"))) {
    // dY[k,n] = X[m,k]^T * dOut[m,n] (+ YGradIn: in place when it is dY's
    // own var, the pipeline's accumulation over micro-batches)
    const bool accumulate = ctx.HasInput("YGradIn");
    if (accumulate) {
      const Tensor& acc = ctx.Input("YGradIn");
      if (acc.data<T>() != dy)
        FLUID_CUDA_CHECK(cudaMemcpyAsync(dy, acc.data<T>(), acc.bytes(),
                                         cudaMemcpyDeviceToDevice,
                                         dev.stream()));
    }
    Product(dev, true, false, d.k, d.n, d.m, x.data<T>(), dout.data<T>(), dy,
            accumulate);
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(mul, kCUDA, MulKernel);
REGISTER_HALF_KERNELS(mul, kCUDA, MulKernel);
REGISTER_FLOAT_KERNELS(mul_grad, kCUDA, MulGradKernel);
REGISTER_HALF_KERNELS(mul_grad, kCUDA, MulGradKernel);

}  // namespace ops
}  // namespace fluid
