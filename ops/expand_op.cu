// CUDA kernels for expand and expand_grad (schemas and checks in
// expand_op.cc; the index math in expand_op.h, shared with the CPU). The
// gradient sums each element's copies in a fixed order (deterministic).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/expand_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct ExpandFill {
  ExpandIndex index;
  const T* x;
  T* out;
  __device__ void operator()(int64_t i) const { out[i] = x[index.Source(i)]; }
};

template <typename T>
void ExpandKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const ExpandIndex index = MakeExpandIndex(ctx, x);
  T* out = cuda::OutputData<T>(ctx, "Out");
  cuda::ForEach(cuda::Dev(ctx), ctx.Output("Out")->numel(),
                ExpandFill<T>{index, x.data<T>(), out});
}

template <typename T>
struct ExpandGradFill {
  ExpandIndex index;
  const T* dout;
  T* dx;
  __device__ void operator()(int64_t j) const {
    dx[j] = ExpandGradAt(index, dout, j);
  }
};

template <typename T>
void ExpandGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const ExpandIndex index = MakeExpandIndex(ctx, ctx.Input("X"));
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.numel() == dx->numel() * index.copies,
                "expand_grad: Out@GRAD '", ctx.InputName(GradSlot("Out")), "' ",
                dout.shape(), " does not fit X '", ctx.InputName("X"), "' ",
                dx->shape(), " expanded");
  T* d = dx->mutable_data<T>(ctx.place());
  cuda::ForEach(cuda::Dev(ctx), dx->numel(),
                ExpandGradFill<T>{index, dout.data<T>(), d});
}

}  // namespace

REGISTER_FLOAT_KERNELS(expand, kCUDA, ExpandKernel);
REGISTER_KERNEL(expand, kCUDA, int32_t, ExpandKernel<int32_t>);
REGISTER_KERNEL(expand, kCUDA, int64_t, ExpandKernel<int64_t>);
REGISTER_FLOAT_KERNELS(expand_grad, kCUDA, ExpandGradKernel);

}  // namespace ops
}  // namespace fluid
