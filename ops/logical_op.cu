// CUDA kernels of the logical ops (schemas in logical_op.cc, functors in
// compare_op.h): one thread per element.
#include "ops/compare_op.h"
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename F>
struct LogicalEach {
  const bool* x;
  const bool* y;
  bool* out;
  __device__ void operator()(int64_t i) const { out[i] = F()(x[i], y[i]); }
};

struct NotEach {
  const bool* x;
  bool* out;
  __device__ void operator()(int64_t i) const { out[i] = !x[i]; }
};

template <typename F>
void LogicalBinaryKernel(const ExecutionContext& ctx) {
  CheckLogicalOperands(ctx);
  const Tensor& x = ctx.Input("X");
  LogicalEach<F> f;
  f.x = x.data<bool>();
  f.y = ctx.Input("Y").data<bool>();
  f.out = cuda::OutputLike<bool>(ctx, "Out", x);
  cuda::ForEach(cuda::Dev(ctx), x.numel(), f);
}

void LogicalNotKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  FLUID_ENFORCE(x.dtype() == DataType::kBool, ctx.type(), ": X '",
                ctx.InputName("X"), "' is ", DataTypeName(x.dtype()),
                "; logical ops take bool tensors");
  NotEach f;
  f.x = x.data<bool>();
  f.out = cuda::OutputLike<bool>(ctx, "Out", x);
  cuda::ForEach(cuda::Dev(ctx), x.numel(), f);
}

}  // namespace

REGISTER_KERNEL(logical_and, kCUDA, bool,
                LogicalBinaryKernel<LogicalAndFunctor>);
REGISTER_KERNEL(logical_or, kCUDA, bool, LogicalBinaryKernel<LogicalOrFunctor>);
REGISTER_KERNEL(logical_xor, kCUDA, bool,
                LogicalBinaryKernel<LogicalXorFunctor>);
REGISTER_KERNEL(logical_not, kCUDA, bool, LogicalNotKernel);

}  // namespace ops
}  // namespace fluid
