// CUDA kernel for adagrad (schema and update rule in adagrad_op.cc and
// state_optimizer.h). A sparse Grad updates the rows it touches.
#include "ops/cuda/sparse_rows.cuh"
#include "ops/cuda/state_optimizer.cuh"
#include "ops/sparse_grad.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct SparseAdagradUpdate {
  cuda::ScalarIn lr;
  AdagradFunctor<T> f;
  cuda::SparseGradView<T> g;
  T* p;
  T* moment;
  __device__ void operator()(int64_t i) const {
    const int64_t e = g.Elem(i);
    const T s = moment[e];
    f(lr.Get(), 0.0, p[e], g.G(i), &s, &p[e], &moment[e]);
  }
};

template <typename T>
void SparseAdagradKernel(const ExecutionContext& ctx) {
  cuda::SparseGradScratch scratch;
  SparseAdagradUpdate<T> u;
  u.lr = cuda::ScalarInput(ctx, "LearningRate");
  u.f = AdagradFunctor<T>::Make(ctx);
  u.g = cuda::PrepareSparseGrad<T>(ctx, CheckedSparseGrad(ctx), true, &scratch);
  u.p = cuda::UpdatedInPlace<T>(ctx, "Param", "ParamOut");
  u.moment = cuda::UpdatedInPlace<T>(ctx, "Moment", "MomentOut");
  cuda::ForEach(cuda::Dev(ctx), u.g.count, u);
  cuda::Dev(ctx).Wait();  // the scratch lists are freed on return
}

template <typename T>
void AdagradKernel(const ExecutionContext& ctx) {
  if (HasSparseGrad(ctx)) return SparseAdagradKernel<T>(ctx);
  cuda::StateOptimizerCudaKernel<T, AdagradFunctor<T>>(ctx);
}

}  // namespace

REGISTER_FLOAT_KERNELS(adagrad, kCUDA, AdagradKernel);

}  // namespace ops
}  // namespace fluid
