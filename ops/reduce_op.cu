// CUDA kernels for reduce_sum, reduce_mean, reduce_max, reduce_min,
// reduce_prod and their gradients (schemas, shape inference and checks in
// reduce_op.cc; the per-element math in reduce_op.h, shared with the CPU).
// Groups of a few elements are reduced by one thread each; larger ones by a
// block each, in a fixed order (deterministic run to run).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/reduce_op.h"

namespace fluid {
namespace ops {
namespace {

// Groups up to this size are reduced by one thread.
constexpr int64_t kThreadGroup = 64;

template <ReduceKind kKind>
struct CombineOp {
  template <typename A>
  __device__ A operator()(A a, A b) const {
    return ReduceCombine<kKind, A>(a, b);
  }
};

template <ReduceKind kKind, typename T>
struct ReduceByThread {
  ReduceIndex index;
  const T* x;
  T* out;
  __device__ void operator()(int64_t o) const {
    out[o] = ReduceOne<kKind, T>(index, x, o);
  }
};

template <ReduceKind kKind, typename T>
__global__ void ReduceByBlockKernel(ReduceIndex index, const T* x, T* out) {
  using A = ReduceAcc<T>;
  for (int64_t o = blockIdx.x; o < index.outs; o += gridDim.x) {
    const T* g = x + index.Base(o);
    const A start = ReduceStart<kKind, A>(static_cast<A>(g[0]));
    A acc = start;
    for (int64_t r = threadIdx.x; r < index.count; r += blockDim.x)
      acc = ReduceCombine<kKind, A>(acc, static_cast<A>(g[index.Offset(r)]));
    acc = cuda::BlockReduce(acc, CombineOp<kKind>(), start);
    if (threadIdx.x == 0) out[o] = ReduceFinish<kKind, T>(acc, index.count);
  }
}

template <ReduceKind kKind, typename T>
void ReduceKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const ReduceIndex index = MakeReduceIndex(ctx, x);
  T* out = cuda::OutputData<T>(ctx, "Out");
  const auto& dev = cuda::Dev(ctx);
  if (index.count <= kThreadGroup) {
    cuda::ForEach(dev, index.outs,
                  ReduceByThread<kKind, T>{index, x.data<T>(), out});
    return;
  }
  if (index.outs <= 0) return;
  const int64_t blocks = std::min<int64_t>(index.outs, int64_t{65535});
  ReduceByBlockKernel<kKind, T>
      <<<static_cast<unsigned>(blocks), cuda::kThreads, 0, dev.stream()>>>(
          index, x.data<T>(), out);
  cuda::CheckLaunch();
}

template <typename T>
struct ProdStatsFill {
  ReduceIndex index;
  const T* x;
  ProdStats<T>* stats;
  __device__ void operator()(int64_t o) const {
    stats[o] = ProdStatsOf(index, x, o);
  }
};

template <ReduceKind kKind, typename T>
struct ReduceGradFill {
  ReduceGradAt<kKind, T> at;
  T* dx;
  __device__ void operator()(int64_t i) const { dx[i] = at(i); }
};

template <ReduceKind kKind, typename T>
void ReduceGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const Tensor& x = ctx.Input("X");
  const auto& dev = cuda::Dev(ctx);
  ReduceGradAt<kKind, T> at;
  at.index = MakeReduceIndex(ctx, x);
  at.x = x.data<T>();
  at.dout = GetReduceOutGrad(ctx, at.index).template data<T>();
  if (kKind == ReduceKind::kMax || kKind == ReduceKind::kMin)
    at.out = ctx.Input("Out").data<T>();
  if (kKind == ReduceKind::kProd && at.index.outs > 0) {
    auto* stats = static_cast<ProdStats<T>*>(
        dev.Workspace(sizeof(ProdStats<T>) * at.index.outs));
    cuda::ForEach(dev, at.index.outs, ProdStatsFill<T>{at.index, at.x, stats});
    at.stats = stats;
  }
  T* d = dx->mutable_data<T>(ctx.place());
  cuda::ForEach(dev, dx->numel(), ReduceGradFill<kKind, T>{at, d});
}

}  // namespace

#define FLUID_REDUCE_KERNELS(type, kind)                                       \
  REGISTER_KERNEL(type, kCUDA, float, (ReduceKernel<kind, float>));            \
  REGISTER_KERNEL(type, kCUDA, double, (ReduceKernel<kind, double>));          \
  REGISTER_KERNEL(type##_grad, kCUDA, float, (ReduceGradKernel<kind, float>)); \
  REGISTER_KERNEL(type##_grad, kCUDA, double, (ReduceGradKernel<kind, double>))
#define FLUID_REDUCE_INT_KERNELS(type, kind)                            \
  REGISTER_KERNEL(type, kCUDA, int32_t, (ReduceKernel<kind, int32_t>)); \
  REGISTER_KERNEL(type, kCUDA, int64_t, (ReduceKernel<kind, int64_t>))

FLUID_REDUCE_KERNELS(reduce_sum, ReduceKind::kSum);
FLUID_REDUCE_KERNELS(reduce_mean, ReduceKind::kMean);
FLUID_REDUCE_KERNELS(reduce_max, ReduceKind::kMax);
FLUID_REDUCE_KERNELS(reduce_min, ReduceKind::kMin);
FLUID_REDUCE_KERNELS(reduce_prod, ReduceKind::kProd);
FLUID_REDUCE_INT_KERNELS(reduce_sum, ReduceKind::kSum);
FLUID_REDUCE_INT_KERNELS(reduce_max, ReduceKind::kMax);
FLUID_REDUCE_INT_KERNELS(reduce_min, ReduceKind::kMin);
FLUID_REDUCE_INT_KERNELS(reduce_prod, ReduceKind::kProd);

}  // namespace ops
}  // namespace fluid
