// CUDA kernel for adam (schema in adam_op.cc; the update rule is AdamFunctor
// in optimizer_functors.h). One launch per parameter updates Param, both
// moments and both beta powers, reading the learning rate and the powers on
// the device.
//
// The powers are normally updated in place, and every thread reads them: the
// block that finishes last (counted with an integer atomic) writes the new
// powers, once every other block has read the old ones.
#include <algorithm>

#include "ops/adam_op.h"
#include "ops/cuda/device_scalar.cuh"
#include "ops/cuda/sparse_rows.cuh"
#include "ops/optimizer_functors.h"
#include "ops/sparse_grad.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct AdamArgs {
  cuda::ScalarIn lr, beta1_pow, beta2_pow;
  AdamAttrs attrs;
  const T* p;
  const T* g;
  const T* m1;
  const T* m2;
  T* p_out;
  T* m1_out;
  T* m2_out;
  cuda::ScalarOut beta1_pow_out, beta2_pow_out;
  bool sparse;  // g unused: the elements and gradients come from `rows`
  cuda::SparseGradView<T> rows;
};

template <typename T>
__global__ void AdamUpdateKernel(int64_t n, AdamArgs<T> a,
                                 unsigned int* blocks_done) {
  const double b1p = a.beta1_pow.Get();
  const double b2p = a.beta2_pow.Get();
  const AdamAttrs& at = a.attrs;
  const AdamFunctor<T> f =
      AdamFunctor<T>::Make(a.lr.Get(), b1p, b2p, at.beta1, at.beta2, at.epsilon,
                           at.weight_decay, at.decoupled);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    if (a.sparse) {
      const int64_t e = a.rows.Elem(i);
      f(a.p[e], a.rows.G(i), a.m1[e], a.m2[e], &a.p_out[e], &a.m1_out[e],
        &a.m2_out[e]);
    } else {
      f(a.p[i], a.g[i], a.m1[i], a.m2[i], &a.p_out[i], &a.m1_out[i],
        &a.m2_out[i]);
    }
  }
  // This block's reads of the powers are done (and visible as done) before
  // it is counted.
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(blocks_done, 1u) + 1 == gridDim.x;
  __syncthreads();
  if (last && threadIdx.x == 0) {
    a.beta1_pow_out.Set(b1p * at.beta1);
    a.beta2_pow_out.Set(b2p * at.beta2);
  }
}

// Sets the per-element pointers; returns the element count.
template <typename T>
int64_t SetDenseArgs(const ExecutionContext& ctx, AdamArgs<T>* a) {
  const auto& [param, grad, moment1, moment2] = GetAdamInputs(ctx);
  a->p = param.data<T>();
  a->g = grad.data<T>();
  a->m1 = moment1.data<T>();
  a->m2 = moment2.data<T>();
  a->p_out = cuda::OutputLike<T>(ctx, "ParamOut", param);
  a->m1_out = cuda::OutputLike<T>(ctx, "Moment1Out", moment1);
  a->m2_out = cuda::OutputLike<T>(ctx, "Moment2Out", moment2);
  return param.numel();
}

// The sparse form updates in place: each pointer is its output too.
template <typename T>
int64_t SetSparseArgs(const ExecutionContext& ctx, AdamArgs<T>* a,
                      cuda::SparseGradScratch* scratch) {
  const int64_t n = ctx.Input("Param").numel();
  FLUID_ENFORCE(
      ctx.Input("Moment1").numel() == n && ctx.Input("Moment2").numel() == n,
      "adam: Moment1 '", ctx.InputName("Moment1"), "' and Moment2 '",
      ctx.InputName("Moment2"), "' must be shaped like Param '",
      ctx.InputName("Param"), "'");
  a->rows = cuda::PrepareSparseGrad<T>(ctx, CheckedSparseGrad(ctx),
                                       ctx.Attr<bool>("lazy_mode"), scratch);
  a->g = nullptr;
  a->p = a->p_out = cuda::UpdatedInPlace<T>(ctx, "Param", "ParamOut");
  a->m1 = a->m1_out = cuda::UpdatedInPlace<T>(ctx, "Moment1", "Moment1Out");
  a->m2 = a->m2_out = cuda::UpdatedInPlace<T>(ctx, "Moment2", "Moment2Out");
  return a->rows.count;
}

template <typename T>
void AdamKernel(const ExecutionContext& ctx) {
  AdamArgs<T> a;
  a.lr = cuda::ScalarInput(ctx, "LearningRate");
  a.beta1_pow = cuda::ScalarInput(ctx, "Beta1Pow");
  a.beta2_pow = cuda::ScalarInput(ctx, "Beta2Pow");
  a.attrs = ReadAdamAttrs(ctx);
  // The CPU kernel also requires both powers to be below 1; their values
  // live on the device and are not checked here.
  cuda::SparseGradScratch scratch;
  a.sparse = HasSparseGrad(ctx);
  const int64_t n =
      a.sparse ? SetSparseArgs(ctx, &a, &scratch) : SetDenseArgs(ctx, &a);
  a.beta1_pow_out =
      cuda::ScalarOutput(ctx, "Beta1PowOut", ctx.Input("Beta1Pow"));
  a.beta2_pow_out =
      cuda::ScalarOutput(ctx, "Beta2PowOut", ctx.Input("Beta2Pow"));

  const auto& dev = cuda::Dev(ctx);
  // At least one block, which writes the powers even when Param is empty.
  const int64_t blocks = std::max<int64_t>(
      1, std::min<int64_t>(CeilDiv(n, cuda::kThreads),
                           int64_t{dev.multiprocessors()} * 32));
  auto* blocks_done =
      static_cast<unsigned int*>(dev.Workspace(sizeof(unsigned int)));
  FLUID_CUDA_CHECK(
      cudaMemsetAsync(blocks_done, 0, sizeof(unsigned int), dev.stream()));
  AdamUpdateKernel<T>
      <<<static_cast<unsigned>(blocks), cuda::kThreads, 0, dev.stream()>>>(
          n, a, blocks_done);
  cuda::CheckLaunch();
  if (a.sparse) dev.Wait();  // the scratch lists are freed on return
}

}  // namespace

REGISTER_FLOAT_KERNELS(adam, kCUDA, AdamKernel);

}  // namespace ops
}  // namespace fluid
