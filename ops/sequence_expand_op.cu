// CUDA kernels for sequence_expand and its gradient (schemas in
// sequence_expand_op.cc): one thread per element of Out (forward) or of X
// (gradient, summing its copies in Out's order, as the CPU kernel does);
// the row mapping is the CPU kernel's (ops/sequence_expand_op.h).
#include "ops/cuda/sequence_helpers.cuh"
#include "ops/sequence_expand_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct ExpandFunctor {
  ExpandMap m;
  int64_t width;
  const T* x;
  T* out;
  __device__ void operator()(int64_t k) const {
    const int64_t o = k / width;
    out[k] = x[m.SourceRow(o) * width + k % width];
  }
};

template <typename T>
struct ExpandGradFunctor {
  ExpandMap m;
  int64_t width;
  const T* dout;
  T* dx;
  __device__ void operator()(int64_t k) const {
    dx[k] = m.GradOf(dout, width, k / width, k % width);
  }
};

// The map over device copies of the LoDs.
ExpandMap DeviceMap(const CUDADeviceContext& dev, const Tensor& x,
                    const LoD& y_lod, const LoD& out_lod) {
  const cuda::DeviceLoDs d =
      cuda::CopyLoDsToDevice(dev, {&x.lod(), &y_lod, &out_lod});
  return ExpandMap{x.has_lod(), d.lod[0], d.lod[1], d.lod[2], LoDCount(y_lod)};
}

template <typename T>
void SequenceExpandKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  const auto& dev = cuda::Dev(ctx);
  ExpandFunctor<T> f;
  f.width = RowWidth(x.shape());
  f.x = x.data<T>();
  f.out = out->mutable_data<T>(ctx.place());
  if (out->numel() == 0) return;
  f.m = DeviceMap(dev, x, ExpandRefLoD(ctx), out->lod());
  cuda::ForEach(dev, out->numel(), f);
}

template <typename T>
void SequenceExpandGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const Tensor& x = ctx.Input("X");
  const LoD& y_lod = ExpandRefLoD(ctx);
  const LoD out_lod = ExpandedLoD(x.lod(), y_lod);
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const auto& dev = cuda::Dev(ctx);
  ExpandGradFunctor<T> f;
  f.width = RowWidth(x.shape());
  FLUID_ENFORCE(dout.numel() == out_lod.back() * f.width, "Out@GRAD has shape ",
                dout.shape(), " but Out has ", out_lod.back(), " rows of ",
                f.width);
  f.dout = dout.data<T>();
  f.dx = cuda::OutputData<T>(ctx, GradSlot("X"));
  if (x.numel() == 0) return;
  f.m = DeviceMap(dev, x, y_lod, out_lod);
  cuda::ForEach(dev, x.numel(), f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(sequence_expand, kCUDA, SequenceExpandKernel);
REGISTER_FLOAT_KERNELS(sequence_expand_grad, kCUDA, SequenceExpandGradKernel);

}  // namespace ops
}  // namespace fluid
