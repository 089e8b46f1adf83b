// CUDA kernels for slice and slice_grad (schemas and checks in
// slice_op.cc; the index math in slice_op.h, shared with the CPU).
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/half_math.h"
#include "ops/slice_op.h"

namespace fluid {
namespace ops {
namespace {

// dst[i] = src[Source(i)] (forward), or dst[Source(i)] = src[i] (gradient).
template <typename T>
struct SliceCopy {
  SliceIndex index;
  const T* src;
  T* dst;
  bool scatter;
  __device__ void operator()(int64_t i) const {
    if (scatter) {
      dst[index.Source(i)] = src[i];
    } else {
      dst[i] = src[index.Source(i)];
    }
  }
};

template <typename T>
void SliceKernel(const ExecutionContext& ctx) {
  const Tensor& in = ctx.Input("Input");
  const SliceIndex index = MakeSliceIndex(ctx, in);
  T* out = cuda::OutputData<T>(ctx, "Out");
  cuda::ForEach(cuda::Dev(ctx), ctx.Output("Out")->numel(),
                SliceCopy<T>{index, in.data<T>(), out, false});
}

template <typename T>
void SliceGradKernel(const ExecutionContext& ctx) {
  Tensor* din = ctx.Output(GradSlot("Input"));
  if (din == nullptr) return;
  const SliceIndex index = MakeSliceIndex(ctx, ctx.Input("Input"));
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  T* d = din->mutable_data<T>(ctx.place());
  cuda::ZeroAsync(cuda::Dev(ctx), d, din->bytes());
  cuda::ForEach(cuda::Dev(ctx), dout.numel(),
                SliceCopy<T>{index, dout.data<T>(), d, true});
}

}  // namespace

REGISTER_FLOAT_KERNELS(slice, kCUDA, SliceKernel);
REGISTER_HALF_KERNELS(slice, kCUDA, SliceKernel);
REGISTER_KERNEL(slice, kCUDA, int32_t, SliceKernel<int32_t>);
REGISTER_KERNEL(slice, kCUDA, int64_t, SliceKernel<int64_t>);
REGISTER_FLOAT_KERNELS(slice_grad, kCUDA, SliceGradKernel);
REGISTER_HALF_KERNELS(slice_grad, kCUDA, SliceGradKernel);

}  // namespace ops
}  // namespace fluid
