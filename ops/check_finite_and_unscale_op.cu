// CUDA kernel for check_finite_and_unscale (schema, shape inference and the
// per-element rule in check_finite_and_unscale_op.cc and
// ops/loss_scaling.h): the gradients go kGradListSize to a launch
// (ops/cuda/loss_scaling.cuh); the scale and FoundInfinite stay on the
// device, so nothing waits for the host. The quotients are the CPU's to the
// bit (one IEEE division, rounded once).
#include "ops/cuda/device_scalar.cuh"
#include "ops/cuda/loss_scaling.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
__device__ bool UnscaleAt(const cuda::GradList& list, int k, int64_t j,
                          double scale) {
  using C = typename LossScalingCompute<T>::type;
  return UnscaleElement(static_cast<const T*>(list.x[k]),
                        static_cast<T*>(list.out[k]), j, static_cast<C>(scale));
}

struct UnscaleList {
  cuda::GradList list;
  cuda::ScalarIn scale;
  int32_t* found;
  __device__ void operator()(int64_t i) const {
    const int k = list.Find(i);
    const int64_t j = i - list.Begin(k);
    const double s = scale.Get();
    bool finite;
    switch (list.dtype[k]) {
      case DataType::kFloat64:
        finite = UnscaleAt<double>(list, k, j, s);
        break;
      case DataType::kFloat16:
        finite = UnscaleAt<float16>(list, k, j, s);
        break;
      case DataType::kBFloat16:
        finite = UnscaleAt<bfloat16>(list, k, j, s);
        break;
      default:
        finite = UnscaleAt<float>(list, k, j, s);
        break;
    }
    // Every thread that finds one stores the same 1: no atomic needed.
    if (!finite) *found = 1;
  }
};

void CheckFiniteAndUnscaleKernel(const ExecutionContext& ctx) {
  const auto& dev = cuda::Dev(ctx);
  UnscaleList u;
  u.scale = cuda::ScalarInput(ctx, "Scale");
  u.found =
      ctx.Output("FoundInfinite")->mutable_data<int32_t>(Shape{1}, ctx.place());
  cuda::ZeroAsync(dev, u.found, sizeof(int32_t));
  // Shape inference has checked the dtypes; checked again here, as the
  // device's switch reads any other dtype as float32.
  const std::vector<GradPair> pairs = LossScalingGrads(ctx);
  for (const GradPair& p : pairs)
    FLUID_ENFORCE(IsFloatDtype(p.x->dtype()), ctx.type(), ": a gradient is ",
                  p.x->dtype(), "; the gradients must be float32, float64, ",
                  "float16 or bfloat16");
  cuda::ForEachGradList(
      pairs, [](const GradPair&) { return true; },
      [&](const cuda::GradList& list, int64_t n) {
        u.list = list;
        cuda::ForEach(dev, n, u);
      });
}

}  // namespace

REGISTER_KERNEL(check_finite_and_unscale, kCUDA, float,
                CheckFiniteAndUnscaleKernel);
REGISTER_KERNEL(check_finite_and_unscale, kCUDA, double,
                CheckFiniteAndUnscaleKernel);
REGISTER_KERNEL(check_finite_and_unscale, kCUDA, float16,
                CheckFiniteAndUnscaleKernel);
REGISTER_KERNEL(check_finite_and_unscale, kCUDA, bfloat16,
                CheckFiniteAndUnscaleKernel);

}  // namespace ops
}  // namespace fluid
