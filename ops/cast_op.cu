// CUDA kernel for cast (schema, shape inference and grad maker in
// cast_op.cc).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/dtype_visit.h"

namespace fluid {
namespace ops {
namespace {

template <typename In, typename Out>
struct CastFunctor {
  const In* x;
  Out* out;
  __device__ void operator()(int64_t i) const {
    out[i] = static_cast<Out>(x[i]);
  }
};

template <typename In>
void CastKernel(const ExecutionContext& ctx) {
  Tensor* out = ctx.Output("Out");
  if (out == nullptr) return;
  const Tensor& x = ctx.Input("X");
  VisitDtype(DtypeAttr(ctx.Attr<int32_t>("out_dtype"), "cast", "out_dtype"),
             [&](auto o) {
               using Out = decltype(o);
               CastFunctor<In, Out> f;
               f.x = x.data<In>();
               f.out = out->mutable_data<Out>(ctx.place());
               cuda::ForEach(cuda::Dev(ctx), x.numel(), f);
             });
}

}  // namespace

REGISTER_FLOAT_KERNELS(cast, kCUDA, CastKernel);
REGISTER_KERNEL(cast, kCUDA, int32_t, CastKernel<int32_t>);
REGISTER_KERNEL(cast, kCUDA, int64_t, CastKernel<int64_t>);
REGISTER_KERNEL(cast, kCUDA, float16, CastKernel<float16>);
REGISTER_KERNEL(cast, kCUDA, bfloat16, CastKernel<bfloat16>);

}  // namespace ops
}  // namespace fluid
