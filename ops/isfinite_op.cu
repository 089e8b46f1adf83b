// CUDA kernels for isinf, isnan and isfinite (schemas and the CPU kernels in
// isfinite_op.cc; the per-element test in isfinite_op.h).
#include <string>

#include "ops/cuda/cuda_helpers.cuh"
#include "ops/isfinite_op.h"

namespace fluid {
namespace ops {
namespace {

// One block: the failing elements counted in a fixed order, then Out.
template <typename T>
__global__ void IsFiniteDeviceKernel(int64_t n, const T* x, FiniteTest test,
                                     bool* out) {
  int64_t count = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    count += FailsFiniteTest(x[i], test) ? 1 : 0;
  count = cuda::BlockReduce(count, cuda::SumOp(), int64_t{0});
  // isfinite answers "all finite", the others "any found".
  if (threadIdx.x == 0)
    out[0] = test == FiniteTest::kNonFinite ? count == 0 : count > 0;
}

template <typename T>
void IsFiniteKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const std::string& type = ctx.type();
  const FiniteTest test = type == "isinf"   ? FiniteTest::kInf
                          : type == "isnan" ? FiniteTest::kNan
                                            : FiniteTest::kNonFinite;
  bool* out = ctx.Output("Out")->mutable_data<bool>(Shape({1}), ctx.place());
  IsFiniteDeviceKernel<T><<<1, cuda::kThreads, 0, cuda::Dev(ctx).stream()>>>(
      x.numel(), x.data<T>(), test, out);
  cuda::CheckLaunch();
}

}  // namespace

REGISTER_FLOAT_KERNELS(isinf, kCUDA, IsFiniteKernel);
REGISTER_FLOAT_KERNELS(isnan, kCUDA, IsFiniteKernel);
REGISTER_FLOAT_KERNELS(isfinite, kCUDA, IsFiniteKernel);

}  // namespace ops
}  // namespace fluid
