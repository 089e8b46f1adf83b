// CUDA kernel for sum (schema, shape inference and grad maker in
// sum_op.cc). As on the CPU, Out may be one of the inputs (in-place
// accumulation); inputs bound to Out are counted and folded in first, and
// every element adds the remaining inputs in their order, so the result is
// the CPU's to the bit.
//
// bfloat16 and float16 terms are added in float and Out is rounded once:
// an input bound to Out is read like any other (Out is written last), and
// past kGroup inputs the float partial sums wait in the workspace.
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/half_math.h"
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
__device__ __forceinline__ int32_t MulRounded(int32_t a, int32_t b) {
  return a * b;
}
__device__ __forceinline__ int64_t MulRounded(int64_t a, int64_t b) {
  return a * b;
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

// One group of 16-bit terms: acc (the float sum of the groups before, none
// for the first) plus this group's terms, into acc or, for the last group,
// rounded into Out.
template <typename T>
struct HalfSumGroup {
  const T* xs[kGroup];
  int count;
  bool first, last;
  float* acc;
  T* out;
  __device__ void operator()(int64_t i) const {
    float a = first ? 0.0f : acc[i];
    for (int j = 0; j < count; ++j) a += ToCompute(xs[j][i]);
    if (last) {
      out[i] = FromCompute<T>(a);
    } else {
      acc[i] = a;
    }
  }
};

template <typename T>
void HalfSum(const ExecutionContext& ctx) {
  const size_t num = ctx.InputSize("X");
  Tensor* out = ctx.Output("Out");
  const int64_t numel = out->numel();
  T* o = out->mutable_data<T>(ctx.place());
  CheckSumInputs(ctx, *out, o);
  const auto& dev = cuda::Dev(ctx);
  float* acc = num > static_cast<size_t>(kGroup)
                   ? static_cast<float*>(dev.Workspace(sizeof(float) * numel))
                   : nullptr;
  for (size_t next = 0; next < num;) {
    HalfSumGroup<T> g{};
    g.first = next == 0;
    while (next < num && g.count < kGroup)
      g.xs[g.count++] = ctx.Input("X", next++).data<T>();
    g.last = next == num;
    g.acc = acc;
    g.out = o;
    cuda::ForEach(dev, numel, g);
  }
}

// Terms added in their own type: float, double, int32 or int64.
template <typename T>
void NativeSum(const ExecutionContext& ctx) {
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

template <typename T>
void SumKernel(const ExecutionContext& ctx) {
  if constexpr (IsHalfType<T>::value) {
    FLUID_ENFORCE_CODE(!AnySparseInput(ctx), ErrorCode::kUnimplemented,
                       "sum: Out '", ctx.OutputName("Out"),
                       "': sparse terms are summed in float32 or float64 "
                       "only, not ",
                       DataTypeName(DataTypeOf<T>::value));
    HalfSum<T>(ctx);
  } else {
    NativeSum<T>(ctx);
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(sum, kCUDA, SumKernel);
REGISTER_HALF_KERNELS(sum, kCUDA, SumKernel);
REGISTER_KERNEL(sum, kCUDA, int32_t, SumKernel<int32_t>);
REGISTER_KERNEL(sum, kCUDA, int64_t, SumKernel<int64_t>);

}  // namespace ops
}  // namespace fluid
