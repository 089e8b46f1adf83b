// CUDA kernels for norm and norm_grad (schemas and the CPU kernels in
// norm_op.cc): one thread per normalised fibre (p, q) of X's [pre, n, post]
// view, summing its n elements in order (deterministic).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/norm_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct NormFibre {
  NormDims d;
  T eps;
  const T* x;
  T* out;
  T* norm;
  __device__ void operator()(int64_t j) const {
    const int64_t base = (j / d.post) * d.n * d.post + j % d.post;
    T s = 0;
    for (int64_t i = 0; i < d.n; ++i)
      s += x[base + i * d.post] * x[base + i * d.post];
    const T nv = sqrt(s + eps);
    norm[j] = nv;
    for (int64_t i = 0; i < d.n; ++i)
      out[base + i * d.post] = x[base + i * d.post] / nv;
  }
};

template <typename T>
struct NormGradFibre {
  NormDims d;
  const T* x;
  const T* norm;
  const T* dout;
  T* dx;
  __device__ void operator()(int64_t j) const {
    const int64_t base = (j / d.post) * d.n * d.post + j % d.post;
    T s = 0;
    for (int64_t i = 0; i < d.n; ++i)
      s += x[base + i * d.post] * dout[base + i * d.post];
    const T nv = norm[j], k = s / (nv * nv * nv);
    for (int64_t i = 0; i < d.n; ++i) {
      const int64_t at = base + i * d.post;
      dx[at] = dout[at] / nv - x[at] * k;
    }
  }
};

template <typename T>
void NormKernel(const ExecutionContext& ctx) {
  const NormDims d = ReadNormDims(ctx);
  const Tensor& x = ctx.Input("X");
  Shape ns = x.shape();
  const int axis = ctx.Attr<int32_t>("axis");
  ns[axis < 0 ? axis + ns.rank() : axis] = 1;
  NormFibre<T> f{d, static_cast<T>(ctx.Attr<float>("epsilon")), x.data<T>(),
                 cuda::OutputLike<T>(ctx, "Out", x),
                 ctx.Output("Norm")->mutable_data<T>(ns, ctx.place())};
  cuda::ForEach(cuda::Dev(ctx), d.pre * d.post, f);
}

template <typename T>
void NormGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const NormDims d = ReadNormDims(ctx);
  const Tensor& x = ctx.Input("X");
  NormGradFibre<T> f{d, x.data<T>(), ctx.Input("Norm").data<T>(),
                     ctx.Input(GradSlot("Out")).data<T>(),
                     cuda::OutputLike<T>(ctx, GradSlot("X"), x)};
  cuda::ForEach(cuda::Dev(ctx), d.pre * d.post, f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(norm, kCUDA, NormKernel);
REGISTER_FLOAT_KERNELS(norm_grad, kCUDA, NormGradKernel);

}  // namespace ops
}  // namespace fluid
