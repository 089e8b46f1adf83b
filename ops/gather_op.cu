// CUDA kernels for gather and gather_grad (schemas, shape inference and
// checks in gather_op.cc). An index outside X's rows gives a row of zeros
// and no gradient (the device does not stop to check). The gradient is
// computed per element of X@GRAD by walking Index in order, so repeated
// rows sum (or, with overwrite, take the last) in a fixed order.
#include "ops/cuda/cuda_helpers.cuh"
#include "ops/gather_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T, typename I>
struct GatherFill {
  const T* x;
  const I* index;
  int64_t rows, width;
  T* out;
  __device__ void operator()(int64_t e) const {
    const int64_t i = e / width, c = e - i * width;
    const int64_t r = static_cast<int64_t>(index[i]);
    out[e] = r >= 0 && r < rows ? x[r * width + c] : T(0);
  }
};

template <typename T, typename I>
struct GatherGradFill {
  const T* dout;
  const I* index;
  int64_t count, width;
  bool overwrite;
  T* dx;
  __device__ void operator()(int64_t e) const {
    const int64_t r = e / width, c = e - r * width;
    T acc = T(0);
    for (int64_t i = 0; i < count; ++i) {
      if (static_cast<int64_t>(index[i]) != r) continue;
      acc = overwrite ? dout[i * width + c] : acc + dout[i * width + c];
    }
    dx[e] = acc;
  }
};

template <typename T, typename I>
void Gather(const ExecutionContext& ctx, const GatherArgs& a) {
  T* out = cuda::OutputData<T>(ctx, "Out");
  cuda::ForEach(
      cuda::Dev(ctx), a.count * a.width,
      GatherFill<T, I>{a.x.data<T>(), a.index.data<I>(), a.rows, a.width, out});
}

template <typename T>
void GatherKernel(const ExecutionContext& ctx) {
  const GatherArgs a = ReadGatherArgs(ctx);
  if (a.index.dtype() == DataType::kInt32) {
    Gather<T, int32_t>(ctx, a);
  } else {
    Gather<T, int64_t>(ctx, a);
  }
}

template <typename T, typename I>
void GatherGrad(const ExecutionContext& ctx, const GatherArgs& a, T* dx) {
  cuda::ForEach(cuda::Dev(ctx), a.rows * a.width,
                GatherGradFill<T, I>{ctx.Input(GradSlot("Out")).data<T>(),
                                     a.index.data<I>(), a.count, a.width,
                                     ctx.Attr<bool>("overwrite"), dx});
}

template <typename T>
void GatherGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  const GatherArgs a = ReadGatherArgs(ctx);
  FLUID_ENFORCE(ctx.Input(GradSlot("Out")).numel() == a.count * a.width,
                "gather_grad: Out@GRAD '", ctx.InputName(GradSlot("Out")), "' ",
                ctx.Input(GradSlot("Out")).shape(),
                " does not hold one row of X per index");
  T* d = dx->mutable_data<T>(ctx.place());
  if (a.index.dtype() == DataType::kInt32) {
    GatherGrad<T, int32_t>(ctx, a, d);
  } else {
    GatherGrad<T, int64_t>(ctx, a, d);
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(gather, kCUDA, GatherKernel);
REGISTER_KERNEL(gather, kCUDA, int32_t, GatherKernel<int32_t>);
REGISTER_KERNEL(gather, kCUDA, int64_t, GatherKernel<int64_t>);
REGISTER_FLOAT_KERNELS(gather_grad, kCUDA, GatherGradKernel);

}  // namespace ops
}  // namespace fluid
