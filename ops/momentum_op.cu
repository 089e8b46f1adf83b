// CUDA kernel for momentum (schema in momentum_op.cc; the update rule is
// MomentumFunctor in optimizer_functors.h). One launch per parameter
// updates Param and Velocity; the learning rate is read on the device.
#include "ops/cuda/device_scalar.cuh"
#include "ops/optimizer_functors.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct MomentumUpdate {
  cuda::ScalarIn lr;
  T mu, wd;
  bool nesterov;
  const T* p;
  const T* g;
  const T* v;
  T* p_out;
  T* v_out;
  __device__ void operator()(int64_t i) const {
    const MomentumFunctor<T> f{static_cast<T>(lr.Get()), mu, wd, nesterov};
    f(p[i], g[i], v[i], &p_out[i], &v_out[i]);
  }
};

template <typename T>
void MomentumKernel(const ExecutionContext& ctx) {
  const cuda::ScalarIn lr = cuda::ScalarInput(ctx, "LearningRate");
  const T mu = static_cast<T>(ctx.Attr<float>("mu"));
  const T wd = static_cast<T>(ctx.Attr<float>("weight_decay"));
  const bool nesterov = ctx.Attr<bool>("use_nesterov");
  const Tensor& param = ctx.Input("Param");
  const Tensor& grad = ctx.Input("Grad");
  const Tensor& velocity = ctx.Input("Velocity");
  const int64_t n = param.numel();
  FLUID_ENFORCE(grad.numel() == n && velocity.numel() == n, "momentum: Param '",
                ctx.InputName("Param"), "' ", param.shape(), ", Grad '",
                ctx.InputName("Grad"), "' ", grad.shape(), " and Velocity '",
                ctx.InputName("Velocity"), "' ", velocity.shape(),
                " must have the same shape");
  MomentumUpdate<T> u;
  u.lr = lr;
  u.mu = mu;
  u.wd = wd;
  u.nesterov = nesterov;
  u.p = param.data<T>();
  u.g = grad.data<T>();
  u.v = velocity.data<T>();
  u.p_out = ctx.Output("ParamOut")->mutable_data<T>(param.shape(), ctx.place());
  u.v_out =
      ctx.Output("VelocityOut")->mutable_data<T>(velocity.shape(), ctx.place());
  cuda::ForEach(cuda::Dev(ctx), n, u);
}

}  // namespace

REGISTER_FLOAT_KERNELS(momentum, kCUDA, MomentumKernel);

}  // namespace ops
}  // namespace fluid
