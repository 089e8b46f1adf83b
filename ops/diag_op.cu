// CUDA kernel for diag (schema and the CPU kernel in diag_op.cc).
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct DiagAt {
  int64_t n;
  const T* v;
  T* out;
  __device__ void operator()(int64_t i) const {
    out[i] = i / n == i % n ? v[i % n] : T(0);
  }
};

template <typename T>
void DiagKernel(const ExecutionContext& ctx) {
  const Tensor& d = ctx.Input("Diagonal");
  const int64_t n = d.numel();
  T* p = ctx.Output("Out")->mutable_data<T>(Shape({n, n}), ctx.place());
  cuda::ForEach(cuda::Dev(ctx), n * n, DiagAt<T>{n, d.data<T>(), p});
}

}  // namespace

REGISTER_FLOAT_KERNELS(diag, kCUDA, DiagKernel);
REGISTER_KERNEL(diag, kCUDA, int32_t, DiagKernel<int32_t>);
REGISTER_KERNEL(diag, kCUDA, int64_t, DiagKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
