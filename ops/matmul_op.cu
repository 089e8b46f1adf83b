// CUDA kernels for matmul and matmul_grad (schemas in matmul_op.cc):
// Out = alpha * op(X) op(Y) by cuBLAS, one strided-batched call for rank-3
// operands (a rank-2 operand is shared by the batch: stride 0). The
// gradient of a shared operand sums over the batch in batch order, as the
// CPU kernel does. The 16-bit types go through cublasGemmEx, summed in
// float32 (a shared operand's gradient too, rounded once).
#include "ops/cuda/dense_helpers.cuh"
#include "ops/cuda/half_gemm.cuh"
#include "ops/half_math.h"
#include "ops/matmul_dims.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
void MatMulKernel(const ExecutionContext& ctx) {
  T* out = cuda::OutputData<T>(ctx, "Out");
  const MatMulArgs a = ReadMatMulArgs(ctx);
  const MatMulDims& d = a.dims;
  if constexpr (IsHalfType<T>::value) {
    cuda::HalfBatchedGemm(cuda::Dev(ctx), a.trans_x, a.trans_y, d.batch, d.m,
                          d.n, d.k, a.alpha, a.x.data<T>(), a.x_stride,
                          a.y.data<T>(), a.y_stride, out, d.m * d.n);
  } else {
    cuda::BatchedGemmAnyK(cuda::Dev(ctx), a.trans_x, a.trans_y, d.batch, d.m,
                          d.n, d.k, static_cast<T>(a.alpha), a.x.data<T>(),
                          a.x_stride, a.y.data<T>(), a.y_stride, out);
  }
}

// The products are listed in ReadMatMulGradArgs (matmul_op.cc).
template <typename T>
void MatMulGradKernel(const ExecutionContext& ctx) {
  const MatMulGradArgs a = ReadMatMulGradArgs(ctx);
  auto product = [&](const MatMulGradProduct& p, T* c) {
    if constexpr (IsHalfType<T>::value) {
      cuda::HalfBatchedGemm(cuda::Dev(ctx), p.trans_a, p.trans_b,
                            a.fwd.dims.batch, p.m, p.n, p.k, a.fwd.alpha,
                            p.a->data<T>(), p.a_stride, p.b->data<T>(),
                            p.b_stride, c, p.c_stride);
    } else {
      cuda::BatchedGemmInto(
          cuda::Dev(ctx), p.trans_a, p.trans_b, a.fwd.dims.batch, p.m, p.n, p.k,
          static_cast<T>(a.fwd.alpha), p.a->data<T>(), p.a_stride,
          p.b->data<T>(), p.b_stride, c, p.c_stride);
    }
  };
  if (T* c = cuda::OutputData<T>(ctx, GradSlot("X"))) product(a.dx, c);
  if (T* c = cuda::OutputData<T>(ctx, GradSlot("Y"))) product(a.dy, c);
}

}  // namespace

REGISTER_FLOAT_KERNELS(matmul, kCUDA, MatMulKernel);
REGISTER_HALF_KERNELS(matmul, kCUDA, MatMulKernel);
REGISTER_FLOAT_KERNELS(matmul_grad, kCUDA, MatMulGradKernel);
REGISTER_HALF_KERNELS(matmul_grad, kCUDA, MatMulGradKernel);

}  // namespace ops
}  // namespace fluid
