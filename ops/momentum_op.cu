// CUDA kernel for momentum (schema in momentum_op.cc; the update rule is
// MomentumFunctor in optimizer_functors.h). One launch per parameter
// updates Param and Velocity; the learning rate is read on the device.
#include "ops/cuda/device_scalar.cuh"
#include "ops/momentum_op.h"
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
  const MomentumArgs a = ReadMomentumArgs(ctx);
  MomentumUpdate<T> u;
  u.lr = lr;
  u.mu = static_cast<T>(a.mu);
  u.wd = static_cast<T>(a.weight_decay);
  u.nesterov = a.nesterov;
  u.p = a.param.data<T>();
  u.g = a.grad.data<T>();
  u.v = a.velocity.data<T>();
  u.p_out = cuda::OutputLike<T>(ctx, "ParamOut", a.param);
  u.v_out = cuda::OutputLike<T>(ctx, "VelocityOut", a.velocity);
  cuda::ForEach(cuda::Dev(ctx), a.param.numel(), u);
}

}  // namespace

REGISTER_FLOAT_KERNELS(momentum, kCUDA, MomentumKernel);

}  // namespace ops
}  // namespace fluid
