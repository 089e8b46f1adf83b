// CUDA kernels for fill_constant and fill_zeros_like (schemas in
// fill_constant_op.cc).
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct Fill {
  T* out;
  T value;
  __device__ void operator()(int64_t i) const { out[i] = value; }
};

template <typename T>
void FillConstantKernel(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  T* p = out->mutable_data<T>(ctx.place());
  cuda::ForEach(cuda::Dev(ctx), out->numel(),
                Fill<T>{p, static_cast<T>(ctx.Attr<float>("value"))});
}

// All-zero bytes are 0 (+0.0) for every registered dtype.
template <typename T>
void FillZerosLikeKernel(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  T* p = out->mutable_data<T>(ctx.place());
  cuda::ZeroAsync(cuda::Dev(ctx), p, sizeof(T) * out->numel());
}

}  // namespace

REGISTER_FLOAT_KERNELS(fill_constant, kCUDA, FillConstantKernel);
REGISTER_KERNEL(fill_constant, kCUDA, int32_t, FillConstantKernel<int32_t>);
REGISTER_KERNEL(fill_constant, kCUDA, int64_t, FillConstantKernel<int64_t>);
REGISTER_KERNEL(fill_constant, kCUDA, float16, FillConstantKernel<float16>);
REGISTER_KERNEL(fill_constant, kCUDA, bfloat16, FillConstantKernel<bfloat16>);
REGISTER_FLOAT_KERNELS(fill_zeros_like, kCUDA, FillZerosLikeKernel);
REGISTER_KERNEL(fill_zeros_like, kCUDA, float16, FillZerosLikeKernel<float16>);
REGISTER_KERNEL(fill_zeros_like, kCUDA, bfloat16,
                FillZerosLikeKernel<bfloat16>);

}  // namespace ops
}  // namespace fluid
