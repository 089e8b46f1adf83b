// CUDA kernels for top_k and top_k_grad (schemas and shape inference in
// topk_op.cc): one thread per row, with the CPU's selection (topk_op.h).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/topk_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct TopKFunctor {
  const T* x;
  T* vals;
  int64_t* idx;
  int64_t d, k;
  __device__ void operator()(int64_t r) const {
    TopKRow(x + r * d, d, k, vals + r * k, idx + r * k);
  }
};

// One thread per row of X@GRAD: zeros, then the row's k gradients (the
// indices of a row are distinct, so no two threads write one element).
template <typename T>
struct TopKGradFunctor {
  const T* dy;
  const int64_t* idx;
  T* g;
  int64_t d, k;
  __device__ void operator()(int64_t r) const {
    for (int64_t c = 0; c < d; ++c) g[r * d + c] = T(0);
    for (int64_t j = 0; j < k; ++j) g[r * d + idx[r * k + j]] += dy[r * k + j];
  }
};

template <typename T>
void TopKKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  TopKFunctor<T> f;
  f.d = x.shape()[x.shape().rank() - 1];
  f.k = ctx.Attr<int32_t>("k");
  f.x = x.data<T>();
  f.vals = cuda::OutputData<T>(ctx, "Out");
  f.idx = cuda::OutputData<int64_t>(ctx, "Indices");
  cuda::ForEach(cuda::Dev(ctx), f.d > 0 ? x.numel() / f.d : 0, f);
}

template <typename T>
void TopKGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  TopKGradFunctor<T> f;
  f.d = x.shape()[x.shape().rank() - 1];
  f.k = dout.shape()[dout.shape().rank() - 1];
  f.dy = dout.data<T>();
  f.idx = ctx.Input("Indices").data<int64_t>();
  f.g = cuda::OutputData<T>(ctx, GradSlot("X"));
  cuda::ForEach(cuda::Dev(ctx), f.d > 0 ? x.numel() / f.d : 0, f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(top_k, kCUDA, TopKKernel);
REGISTER_FLOAT_KERNELS(top_k_grad, kCUDA, TopKGradKernel);

}  // namespace ops
}  // namespace fluid
