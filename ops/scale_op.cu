// CUDA kernel for scale (schema and grad maker in scale_op.cc). bfloat16
// and float16 compute in float and round once.
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/half_math.h"

namespace fluid {
namespace ops {
namespace {

// The three forms of the CPU kernel, with the same operation order.
enum class ScaleForm { kNoBias, kBiasAfter, kBiasBefore };

template <typename T, ScaleForm kForm, typename C = ComputeType<T>>
struct ScaleFunctor {
  const T* x;
  T* out;
  C scale, bias;
  __device__ void operator()(int64_t i) const {
    const C v = ToCompute(x[i]);
    if constexpr (kForm == ScaleForm::kNoBias) {
      out[i] = FromCompute<T>(v * scale);
    } else if constexpr (kForm == ScaleForm::kBiasAfter) {
      out[i] = FromCompute<T>(v * scale + bias);
    } else {
      out[i] = FromCompute<T>((v + bias) * scale);
    }
  }
};

template <typename T>
void ScaleKernel(const ExecutionContext& ctx) {
  // An unneeded gradient (Out bound to the empty name) is not computed.
  if (!ctx.HasOutput("Out")) return;
  using C = ComputeType<T>;
  const Tensor& x = ctx.Input("X");
  const C scale = static_cast<C>(ctx.Attr<float>("scale"));
  const C bias = static_cast<C>(ctx.Attr<float>("bias"));
  T* out = cuda::OutputData<T>(ctx, "Out");
  const T* in = x.data<T>();
  const auto& dev = cuda::Dev(ctx);
  const int64_t n = x.numel();
  if (bias == C(0)) {
    cuda::ForEach(dev, n,
                  ScaleFunctor<T, ScaleForm::kNoBias>{in, out, scale, bias});
  } else if (ctx.Attr<bool>("bias_after_scale")) {
    cuda::ForEach(dev, n,
                  ScaleFunctor<T, ScaleForm::kBiasAfter>{in, out, scale, bias});
  } else {
    cuda::ForEach(
        dev, n, ScaleFunctor<T, ScaleForm::kBiasBefore>{in, out, scale, bias});
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(scale, kCUDA, ScaleKernel);
REGISTER_HALF_KERNELS(scale, kCUDA, ScaleKernel);

}  // namespace ops
}  // namespace fluid
