// CUDA kernel for update_loss_scaling (schema and shape inference in
// update_loss_scaling_op.cc, the state machine in ops/loss_scaling.h): one
// thread steps the state on the device, and the gradients go
// kGradListSize to a launch (ops/cuda/loss_scaling.cuh), each thread
// reading FoundInfinite on the device, so nothing waits for the host. On a
// finite step a gradient updated in place costs its threads one read of
// FoundInfinite and no memory traffic.
#include "ops/cuda/loss_scaling.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename S>
struct StepState {
  const int32_t* found;
  const S* prev;
  const int32_t* good_in;
  const int32_t* bad_in;
  S* scaling;
  int32_t* good_out;
  int32_t* bad_out;
  LossScalingAttrs attrs;
  __device__ void operator()(int64_t) const {
    const LossScalingState<S> next =
        NextLossScaling<S>(*found != 0, *prev, *good_in, *bad_in, attrs);
    *scaling = next.scaling;
    *good_out = next.good_steps;
    *bad_out = next.bad_steps;
  }
};

template <typename S>
void StepOnDevice(const ExecutionContext& ctx, const LossScalingAttrs& a) {
  StepState<S> f;
  f.found = ctx.Input("FoundInfinite").data<int32_t>();
  f.prev = ctx.Input("PrevLossScaling").data<S>();
  f.good_in = ctx.Input("InGoodSteps").data<int32_t>();
  f.bad_in = ctx.Input("InBadSteps").data<int32_t>();
  f.scaling = cuda::OutputData<S>(ctx, "LossScaling");
  f.good_out = cuda::OutputData<int32_t>(ctx, "OutGoodSteps");
  f.bad_out = cuda::OutputData<int32_t>(ctx, "OutBadSteps");
  f.attrs = a;
  cuda::ForEach(cuda::Dev(ctx), 1, f);
}

// Element j of pair k: zero bits, or X's bits; U is an unsigned type of the
// element's size.
template <typename U>
__device__ void ZeroOrCopy(const cuda::GradList& list, int k, int64_t j,
                           bool zero) {
  static_cast<U*>(list.out[k])[j] =
      zero ? U(0) : static_cast<const U*>(list.x[k])[j];
}

// Out = found ? 0 : X. With `in_place` (every pair's Out is its X) a finite
// step leaves at once.
struct ZeroIfInfinite {
  cuda::GradList list;
  const int32_t* found;
  bool in_place;
  __device__ void operator()(int64_t i) const {
    const bool zero = *found != 0;
    if (in_place && !zero) return;
    const int k = list.Find(i);
    const int64_t j = i - list.Begin(k);
    if (list.dtype[k] == DataType::kFloat64) {
      ZeroOrCopy<uint64_t>(list, k, j, zero);
    } else if (list.dtype[k] == DataType::kFloat32) {
      ZeroOrCopy<uint32_t>(list, k, j, zero);
    } else {
      ZeroOrCopy<uint16_t>(list, k, j, zero);
    }
  }
};

void UpdateLossScalingKernel(const ExecutionContext& ctx) {
  const LossScalingAttrs a =
      CheckLossScalingAttrs(ctx.op().attrs(), ctx.type());
  if (ctx.Input("PrevLossScaling").dtype() == DataType::kFloat64) {
    StepOnDevice<double>(ctx, a);
  } else {
    StepOnDevice<float>(ctx, a);
  }
  const std::vector<GradPair> pairs = LossScalingGrads(ctx);
  for (const GradPair& p : pairs)
    FLUID_ENFORCE(IsFloatDtype(p.x->dtype()), ctx.type(), ": a gradient is ",
                  p.x->dtype(), "; the gradients must be float32, float64, ",
                  "float16 or bfloat16");
  const auto& dev = cuda::Dev(ctx);
  ZeroIfInfinite z;
  z.found = ctx.Input("FoundInfinite").data<int32_t>();
  for (const bool in_place : {true, false}) {
    z.in_place = in_place;
    cuda::ForEachGradList(
        pairs, [in_place](const GradPair& p) { return p.in_place == in_place; },
        [&](const cuda::GradList& list, int64_t n) {
          z.list = list;
          cuda::ForEach(dev, n, z);
        });
  }
}

}  // namespace

REGISTER_KERNEL(update_loss_scaling, kCUDA, float, UpdateLossScalingKernel);
REGISTER_KERNEL(update_loss_scaling, kCUDA, double, UpdateLossScalingKernel);
REGISTER_KERNEL(update_loss_scaling, kCUDA, float16, UpdateLossScalingKernel);
REGISTER_KERNEL(update_loss_scaling, kCUDA, bfloat16, UpdateLossScalingKernel);

}  // namespace ops
}  // namespace fluid
