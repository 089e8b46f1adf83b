// CUDA kernel for lars_momentum (schema in lars_momentum_op.cc, rule in
// lars_momentum_op.h): the two norms by a deterministic reduction into the
// context's workspace, then one pass over the elements that reads them and
// the learning rate on the device.
#include "ops/cuda/device_scalar.cuh"
#include "ops/cuda/squared_norm.cuh"
#include "ops/lars_momentum_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct LarsUpdate {
  cuda::ScalarIn lr;
  LarsMomentumFunctor<T> f;
  const double* sq_norms;  // |Param|^2, |Grad|^2
  const T* p;
  const T* g;
  const T* v;
  T* p_out;
  T* v_out;
  __device__ void operator()(int64_t i) const {
    const T local_lr = static_cast<T>(LarsMomentumFunctor<T>::LocalLr(
        lr.Get(), f.coeff, f.wd, sqrt(sq_norms[0]), sqrt(sq_norms[1])));
    f(local_lr, p[i], g[i], v[i], &p_out[i], &v_out[i]);
  }
};

template <typename T>
void LarsMomentumKernel(const ExecutionContext& ctx) {
  LarsUpdate<T> u;
  u.lr = cuda::ScalarInput(ctx, "LearningRate");
  const LarsMomentumArgs a = ReadLarsMomentumArgs(ctx);
  const int64_t n = a.param.numel();
  u.f.mu = a.attrs.mu;
  u.f.coeff = a.attrs.coeff;
  u.f.wd = a.attrs.wd;
  u.p = a.param.data<T>();
  u.g = a.grad.data<T>();
  u.v = a.velocity.data<T>();
  const auto& dev = cuda::Dev(ctx);
  const T* xs[2] = {u.p, u.g};
  auto* scratch = static_cast<double*>(
      dev.Workspace(sizeof(double) * cuda::SquaredNormScratch(n, 2)));
  u.sq_norms = cuda::SquaredNorms<T>(dev, xs, 2, n, scratch);
  u.p_out = cuda::OutputLike<T>(ctx, "ParamOut", a.param);
  u.v_out = cuda::OutputLike<T>(ctx, "VelocityOut", a.velocity);
  cuda::ForEach(dev, n, u);
}

}  // namespace

REGISTER_FLOAT_KERNELS(lars_momentum, kCUDA, LarsMomentumKernel);

}  // namespace ops
}  // namespace fluid
