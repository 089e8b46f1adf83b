// CUDA kernel for range (schema and the CPU kernel in range_op.cc).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/range_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct RangeAt {
  double start, step;
  T* out;
  __device__ void operator()(int64_t i) const {
    out[i] = static_cast<T>(start + i * step);
  }
};

template <typename T>
void RangeKernel(const ExecutionContext& ctx) {
  const int64_t n = RangeLength(ctx.op().attrs(), ctx.OutputName("Out"));
  T* p = ctx.Output("Out")->mutable_data<T>(Shape({n}), ctx.place());
  cuda::ForEach(
      cuda::Dev(ctx), n,
      RangeAt<T>{ctx.Attr<double>("start"), ctx.Attr<double>("step"), p});
}

}  // namespace

REGISTER_FLOAT_KERNELS(range, kCUDA, RangeKernel);
REGISTER_KERNEL(range, kCUDA, int32_t, RangeKernel<int32_t>);
REGISTER_KERNEL(range, kCUDA, int64_t, RangeKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
