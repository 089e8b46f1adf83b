// CUDA kernels for dropout and dropout_grad (schemas and the CPU kernels in
// dropout_op.cc). The mask comes from the same function as on the CPU
// (dropout_mask.h), so both places drop the same elements. The step counter
// stays on the device: the mask kernel reads it and a one-thread kernel,
// after it on the stream, advances it. bfloat16 and float16 scale in float
// and round once.
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/dropout_mask.h"
#include "ops/half_math.h"

namespace fluid {
namespace ops {
namespace {

// out null: a replay's mask alone (dropout without Out), X not read.
template <typename T>
struct DropoutMaskFn {
  const T* x;
  T* out;
  T* mask;
  const int64_t* step;   // null: step 0
  int64_t step_offset;   // added to *step (a recompute replay: -1)
  int64_t index_offset;  // added to i (a pipeline's micro-batch)
  uint64_t base, threshold;
  ComputeType<T> scale;
  __device__ void operator()(int64_t i) const {
    const uint64_t key =
        DropoutKey(base, step != nullptr ? *step + step_offset : 0);
    const bool keep = DropoutKeeps(key, i + index_offset, threshold);
    mask[i] = keep ? T(1) : T(0);
    if (out != nullptr)
      out[i] = keep ? FromCompute<T>(ToCompute(x[i]) * scale) : T(0);
  }
};

struct AdvanceStep {
  const int64_t* step;
  int64_t* step_out;
  __device__ void operator()(int64_t) const { step_out[0] = step[0] + 1; }
};

// out = a * s, or a * b * s when b is given.
template <typename T>
struct ScaledProduct {
  const T* a;
  const T* b;
  ComputeType<T> s;
  T* out;
  __device__ void operator()(int64_t i) const {
    out[i] = FromCompute<T>(b != nullptr ? ToCompute(a[i]) * ToCompute(b[i]) * s
                                         : ToCompute(a[i]) * s);
  }
};

template <typename T>
struct Ones {
  T* p;
  __device__ void operator()(int64_t i) const { p[i] = T(1); }
};

template <typename T>
void DropoutKernel(const ExecutionContext& ctx) {
  const DropoutParams d = GetDropoutParams(ctx, true);
  const auto& dev = cuda::Dev(ctx);
  const Tensor& x = ctx.Input("X");
  T* mask = cuda::OutputLike<T>(ctx, "Mask", x);
  // Without Out: a replay's mask alone, from X's shape.
  T* out = ctx.HasOutput("Out") ? cuda::OutputLike<T>(ctx, "Out", x) : nullptr;
  if (d.is_test) {
    if (out != nullptr)
      cuda::ForEach(
          dev, x.numel(),
          ScaledProduct<T>{x.data<T>(), nullptr,
                           static_cast<ComputeType<T>>(d.test_scale), out});
    cuda::ForEach(dev, x.numel(), Ones<T>{mask});
    return;
  }
  const int64_t* step =
      ctx.HasInput("Step") ? ctx.Input("Step").data<int64_t>() : nullptr;
  cuda::ForEach(
      dev, x.numel(),
      DropoutMaskFn<T>{out != nullptr ? x.data<T>() : nullptr, out, mask, step,
                       d.step_offset, d.index_offset, d.base, d.threshold,
                       static_cast<ComputeType<T>>(d.keep_scale)});
  if (step != nullptr && ctx.HasOutput("StepOut")) {
    int64_t* step_out =
        ctx.Output("StepOut")->mutable_data<int64_t>(Shape{1}, ctx.place());
    cuda::ForEach(dev, 1, AdvanceStep{step, step_out});
  }
}

template <typename T>
void DropoutGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const DropoutParams d = GetDropoutParams(ctx, false);
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  T* dx = cuda::OutputLike<T>(ctx, GradSlot("X"), dout);
  const T* mask = d.is_test ? nullptr : ctx.Input("Mask").data<T>();
  const double s = d.is_test ? d.test_scale : d.keep_scale;
  cuda::ForEach(cuda::Dev(ctx), dout.numel(),
                ScaledProduct<T>{dout.data<T>(), mask,
                                 static_cast<ComputeType<T>>(s), dx});
}

}  // namespace

REGISTER_FLOAT_KERNELS(dropout, kCUDA, DropoutKernel);
REGISTER_FLOAT_KERNELS(dropout_grad, kCUDA, DropoutGradKernel);
REGISTER_HALF_KERNELS(dropout, kCUDA, DropoutKernel);
REGISTER_HALF_KERNELS(dropout_grad, kCUDA, DropoutGradKernel);

}  // namespace ops
}  // namespace fluid
