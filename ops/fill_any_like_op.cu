// CUDA kernel for fill_any_like (schema and the CPU kernel in
// fill_any_like_op.cc).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/dtype_visit.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct FillWith {
  T* out;
  T value;
  __device__ void operator()(int64_t i) const { out[i] = value; }
};

void FillAnyLikeKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  const int32_t attr = ctx.Attr<int32_t>("dtype");
  const DataType dt =
      attr == -1 ? x.dtype() : DtypeAttr(attr, ctx.type(), "dtype");
  const float value = ctx.Attr<float>("value");
  VisitDtype(dt, [&](auto zero) {
    using T = decltype(zero);
    T* p = out->mutable_data<T>(x.shape(), ctx.place());
    cuda::ForEach(cuda::Dev(ctx), out->numel(),
                  FillWith<T>{p, static_cast<T>(value)});
  });
}

}  // namespace

REGISTER_ANY_DTYPE_KERNEL(fill_any_like, kCUDA, FillAnyLikeKernel);

}  // namespace ops
}  // namespace fluid
