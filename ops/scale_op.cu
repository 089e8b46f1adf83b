// CUDA kernel for scale (schema and grad maker in scale_op.cc).
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

// The three forms of the CPU kernel, with the same operation order.
enum class ScaleForm { kNoBias, kBiasAfter, kBiasBefore };

template <typename T, ScaleForm kForm>
struct ScaleFunctor {
  const T* x;
  T* out;
  T scale, bias;
  __device__ void operator()(int64_t i) const {
    if constexpr (kForm == ScaleForm::kNoBias) {
      out[i] = x[i] * scale;
    } else if constexpr (kForm == ScaleForm::kBiasAfter) {
      out[i] = x[i] * scale + bias;
    } else {
      out[i] = (x[i] + bias) * scale;
    }
  }
};

template <typename T>
void ScaleKernel(const ExecutionContext& ctx) {
  // An unneeded gradient (Out bound to the empty name) is not computed.
  if (!ctx.HasOutput("Out")) return;
  const Tensor& x = ctx.Input("X");
  const T scale = static_cast<T>(ctx.Attr<float>("scale"));
  const T bias = static_cast<T>(ctx.Attr<float>("bias"));
  T* out = cuda::OutputData<T>(ctx, "Out");
  const T* in = x.data<T>();
  const auto& dev = cuda::Dev(ctx);
  const int64_t n = x.numel();
  if (bias == T(0)) {
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

}  // namespace ops
}  // namespace fluid
