// CUDA kernel for momentum (schema in momentum_op.cc; the update rule is
// MomentumFunctor in optimizer_functors.h). One launch per parameter
// updates Param and Velocity; the learning rate is read on the device. A
// sparse Grad updates every row, g = 0 where it has none (sparse_grad.h).
#include "ops/cuda/device_scalar.cuh"
#include "ops/cuda/sparse_rows.cuh"
#include "ops/momentum_op.h"
#include "ops/optimizer_functors.h"
#include "ops/sparse_grad.h"

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
struct SparseMomentumUpdate {
  cuda::ScalarIn lr;
  T mu, wd;
  bool nesterov;
  cuda::SparseGradView<T> g;
  T* p;
  T* v;
  __device__ void operator()(int64_t i) const {
    const MomentumFunctor<T> f{static_cast<T>(lr.Get()), mu, wd, nesterov};
    const int64_t e = g.Elem(i);
    f(p[e], g.G(i), v[e], &p[e], &v[e]);
  }
};

template <typename T>
void SparseMomentumKernel(const ExecutionContext& ctx,
                          const cuda::ScalarIn& lr) {
  cuda::SparseGradScratch scratch;
  SparseMomentumUpdate<T> u;
  u.lr = lr;
  u.mu = static_cast<T>(ctx.Attr<float>("mu"));
  u.wd = static_cast<T>(ctx.Attr<float>("weight_decay"));
  u.nesterov = ctx.Attr<bool>("use_nesterov");
  u.g =
      cuda::PrepareSparseGrad<T>(ctx, CheckedSparseGrad(ctx), false, &scratch);
  u.p = cuda::UpdatedInPlace<T>(ctx, "Param", "ParamOut");
  u.v = cuda::UpdatedInPlace<T>(ctx, "Velocity", "VelocityOut");
  cuda::ForEach(cuda::Dev(ctx), u.g.count, u);
  cuda::Dev(ctx).Wait();  // the scratch lists are freed on return
}

template <typename T>
void MomentumKernel(const ExecutionContext& ctx) {
  const cuda::ScalarIn lr = cuda::ScalarInput(ctx, "LearningRate");
  if (HasSparseGrad(ctx)) return SparseMomentumKernel<T>(ctx, lr);
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
