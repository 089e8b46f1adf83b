// CUDA kernels for cos and cos_grad (schemas in cos_op.cc).
#include "ops/cuda/cuda_helpers.cuh"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct CosAt {
  const T* x;
  T* out;
  __device__ void operator()(int64_t i) const { out[i] = cos(x[i]); }
};

template <typename T>
struct CosGradAt {
  const T* x;
  const T* dout;
  T* dx;
  __device__ void operator()(int64_t i) const { dx[i] = -dout[i] * sin(x[i]); }
};

template <typename T>
void CosKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  CosAt<T> f;
  f.x = x.data<T>();
  f.out = cuda::OutputLike<T>(ctx, "Out", x);
  cuda::ForEach(cuda::Dev(ctx), x.numel(), f);
}

template <typename T>
void CosGradKernel(const ExecutionContext& ctx) {
  if (ctx.Output(GradSlot("X")) == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.shape() == x.shape(), ctx.type(), ": Out@GRAD '",
                ctx.InputName(GradSlot("Out")), "' ", dout.shape(),
                " differs from X '", ctx.InputName("X"), "' ", x.shape());
  CosGradAt<T> f;
  f.x = x.data<T>();
  f.dout = dout.data<T>();
  f.dx = cuda::OutputLike<T>(ctx, GradSlot("X"), x);
  cuda::ForEach(cuda::Dev(ctx), x.numel(), f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(cos, kCUDA, CosKernel);
REGISTER_FLOAT_KERNELS(cos_grad, kCUDA, CosGradKernel);

}  // namespace ops
}  // namespace fluid
