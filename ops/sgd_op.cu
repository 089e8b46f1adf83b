// CUDA kernel for sgd (schema in sgd_op.cc; the update rule is
// SgdFunctor in optimizer_functors.h). One launch per parameter; the
// learning rate is read on the device. A sparse Grad updates the rows it
// touches (ops/sparse_grad.h), merged on the device in a fixed order.
#include "ops/cuda/device_scalar.cuh"
#include "ops/cuda/sparse_rows.cuh"
#include "ops/optimizer_functors.h"
#include "ops/sgd_op.h"
#include "ops/sparse_grad.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct SgdUpdate {
  cuda::ScalarIn lr;
  const T* p;
  const T* g;
  T* out;
  __device__ void operator()(int64_t i) const {
    const SgdFunctor<T> f{static_cast<T>(lr.Get())};
    out[i] = f(p[i], g[i]);
  }
};

template <typename T>
struct SparseSgdUpdate {
  cuda::ScalarIn lr;
  cuda::SparseGradView<T> g;
  T* p;
  __device__ void operator()(int64_t i) const {
    const SgdFunctor<T> f{static_cast<T>(lr.Get())};
    const int64_t e = g.Elem(i);
    p[e] = f(p[e], g.G(i));
  }
};

template <typename T>
void SparseSgdKernel(const ExecutionContext& ctx, const cuda::ScalarIn& lr) {
  cuda::SparseGradScratch scratch;
  SparseSgdUpdate<T> u;
  u.lr = lr;
  u.g = cuda::PrepareSparseGrad<T>(ctx, CheckedSparseGrad(ctx), true, &scratch);
  u.p = cuda::UpdatedInPlace<T>(ctx, "Param", "ParamOut");
  cuda::ForEach(cuda::Dev(ctx), u.g.count, u);
  cuda::Dev(ctx).Wait();  // the scratch lists are freed on return
}

template <typename T>
void SgdKernel(const ExecutionContext& ctx) {
  const cuda::ScalarIn lr = cuda::ScalarInput(ctx, "LearningRate");
  if (HasSparseGrad(ctx)) return SparseSgdKernel<T>(ctx, lr);
  const auto& [param, grad] = GetSgdInputs(ctx);
  const T* p = param.data<T>();
  const T* g = grad.data<T>();
  // In place when ParamOut is Param: same tensor, same shape, same buffer.
  T* o = cuda::OutputLike<T>(ctx, "ParamOut", param);
  cuda::ForEach(cuda::Dev(ctx), param.numel(), SgdUpdate<T>{lr, p, g, o});
}

}  // namespace

REGISTER_FLOAT_KERNELS(sgd, kCUDA, SgdKernel);

}  // namespace ops
}  // namespace fluid
