// CUDA kernel for one_hot (schema and shape inference in one_hot_op.cc), one
// thread per element of Out. Indices are not checked on the device: a row
// whose index is outside [0, depth) stays all zeros, which is what the CPU
// kernel gives with allow_out_of_range (without it the CPU kernel raises).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/dtype_visit.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct OneHotFunctor {
  const int64_t* x;
  T* out;
  int64_t depth;
  __device__ void operator()(int64_t i) const {
    out[i] = x[i / depth] == i % depth ? T(1) : T(0);
  }
};

void OneHotKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  VisitDtype(out->dtype(), [&](auto v) {
    using T = decltype(v);
    OneHotFunctor<T> f;
    f.x = x.data<int64_t>();
    f.out = out->mutable_data<T>(ctx.place());
    f.depth = ctx.Attr<int32_t>("depth");
    cuda::ForEach(cuda::Dev(ctx), out->numel(), f);
  });
}

}  // namespace

REGISTER_KERNEL(one_hot, kCUDA, int64_t, OneHotKernel);

}  // namespace ops
}  // namespace fluid
