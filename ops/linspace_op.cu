// CUDA kernel for linspace (schema and the CPU kernel in linspace_op.cc).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/range_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct LinspaceAt {
  double start, step;
  T* out;
  __device__ void operator()(int64_t i) const {
    out[i] = static_cast<T>(start + i * step);
  }
};

template <typename T>
void LinspaceKernel(const ExecutionContext& ctx) {
  const int64_t n = LinspaceLength(ctx.op().attrs(), ctx.OutputName("Out"));
  const double start = ctx.Attr<double>("start");
  const double step =
      n > 1 ? (ctx.Attr<double>("stop") - start) / (n - 1) : 0.0;
  T* p = ctx.Output("Out")->mutable_data<T>(Shape({n}), ctx.place());
  cuda::ForEach(cuda::Dev(ctx), n, LinspaceAt<T>{start, step, p});
}

}  // namespace

REGISTER_FLOAT_KERNELS(linspace, kCUDA, LinspaceKernel);

}  // namespace ops
}  // namespace fluid
