// CUDA kernel for sum (schema, shape inference and grad maker in
// sum_op.cc). As on the CPU, Out may be one of the inputs (in-place
// accumulation); inputs bound to Out are counted and folded in first, and
// every element adds the remaining inputs in their order, so the result is
// the CPU's to the bit.
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/sum_op.h"

namespace fluid {
namespace ops {
namespace {

// Inputs added per launch: their pointers travel in the kernel's arguments.
constexpr int kGroup = 8;

// A product that is never fused with the following add, as on the CPU
// (Out *= aliased, then Out += X).
__device__ __forceinline__ float MulRounded(float a, float b) {
  return __fmul_rn(a, b);
}
__device__ __forceinline__ double MulRounded(double a, double b) {
  return __dmul_rn(a, b);
}

// How the first group starts from Out.
enum class Start {
  kFirstInput,  // Out = X[0] + ...: no input is Out
  kOut,         // Out = Out + ...: Out is bound once, or a later group
  kOutTimes,    // Out = Out * aliased + ...: Out is bound several times
};

template <typename T>
struct SumGroup {
  const T* xs[kGroup];
  int count;
  Start start;
  T aliased;
  T* out;
  __device__ void operator()(int64_t i) const {
    T acc;
    int j = 0;
    if (start == Start::kFirstInput) {
      acc = xs[0][i];
      j = 1;
    } else if (start == Start::kOut) {
      acc = out[i];
    } else {
      acc = MulRounded(out[i], aliased);
    }
    for (; j < count; ++j) acc += xs[j][i];
    out[i] = acc;
  }
};

template <typename T>
void SumKernel(const ExecutionContext& ctx) {
  if (AnySparseInput(ctx)) {
    FLUID_ENFORCE_CODE(ctx.OutputVar("Out")->IsSelectedRows(),
                       ErrorCode::kUnimplemented, "sum: Out '",
                       ctx.OutputName("Out"),
                       "': a sum of sparse and dense terms runs on the CPU "
                       "only; a sum of sparse terms only runs here");
    cuda::Dev(ctx).Wait();  // the values are copied synchronously
    return ConcatSparseInputs(ctx);
  }
  const size_t num = ctx.InputSize("X");
  Tensor* out = ctx.Output("Out");
  const int64_t numel = out->numel();
  T* o = out->mutable_data<T>(ctx.place());
  const int aliased = CheckSumInputs(ctx, *out, o);
  const auto& dev = cuda::Dev(ctx);
  size_t next = 0;
  bool first = true;
  while (first || next < num) {
    SumGroup<T> g{};
    g.count = 0;
    g.out = o;
    g.aliased = static_cast<T>(aliased);
    while (next < num && g.count < kGroup) {
      const T* p = ctx.Input("X", next++).data<T>();
      if (p != o) g.xs[g.count++] = p;
    }
    const bool init = first;
    first = false;
    if (g.count == 0 && !(init && aliased > 1)) continue;
    if (init && aliased == 0) {
      g.start = Start::kFirstInput;
    } else if (init && aliased > 1) {
      g.start = Start::kOutTimes;
    } else {
      g.start = Start::kOut;
    }
    cuda::ForEach(dev, numel, g);
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(sum, kCUDA, SumKernel);

}  // namespace ops
}  // namespace fluid
