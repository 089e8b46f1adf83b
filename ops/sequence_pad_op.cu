// CUDA kernels for sequence_pad and its gradient (schemas in
// sequence_pad_op.cc): one thread per element, through the CPU kernels'
// index map (ops/sequence_pad_op.h).
#include "ops/cuda/sequence_helpers.cuh"
#include "ops/sequence_pad_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct PadFunctor {
  PadMap m;
  const T* x;
  const T* pad;
  bool one;
  T* out;
  __device__ void operator()(int64_t k) const {
    const int64_t p = m.PackedOf(k);
    out[k] = p >= 0 ? x[p] : pad[one ? 0 : k % m.width];
  }
};

struct LengthFunctor {
  const int64_t* lod;
  int64_t* len;
  __device__ void operator()(int64_t i) const { len[i] = lod[i + 1] - lod[i]; }
};

template <typename T>
struct PadGradFunctor {
  PadMap m;
  const T* dout;
  T* dx;
  __device__ void operator()(int64_t k) const { dx[k] = dout[m.PaddedOf(k)]; }
};

template <typename T>
void SequencePadKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& pad = ctx.Input("PadValue");
  const LoD& lod = x.lod();
  Tensor* out = ctx.Output("Out");
  const auto& dev = cuda::Dev(ctx);
  PadFunctor<T> f;
  f.x = x.data<T>();
  f.pad = pad.data<T>();
  f.one = pad.numel() == 1;
  f.out = out->mutable_data<T>(ctx.place());
  LengthFunctor l;
  l.len = cuda::OutputData<int64_t>(ctx, "Length");
  if (LoDCount(lod) == 0) return;
  l.lod = cuda::CopyLoDsToDevice(dev, {&lod}).lod[0];
  f.m = PadMap{l.lod, LoDCount(lod), out->shape()[1], RowWidth(x.shape())};
  cuda::ForEach(dev, out->numel(), f);
  cuda::ForEach(dev, LoDCount(lod), l);
}

template <typename T>
void SequencePadGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const Tensor& x = ctx.Input("X");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const LoD& lod = x.lod();
  FLUID_ENFORCE(dout.shape().rank() >= 2 && dout.shape()[0] == LoDCount(lod),
                "Out@GRAD has shape ", dout.shape(), " for ", LoDCount(lod),
                " sequences");
  const auto& dev = cuda::Dev(ctx);
  PadGradFunctor<T> f;
  f.dout = dout.data<T>();
  f.dx = cuda::OutputData<T>(ctx, GradSlot("X"));
  if (x.numel() == 0) return;
  f.m = PadMap{cuda::CopyLoDsToDevice(dev, {&lod}).lod[0], LoDCount(lod),
               dout.shape()[1], RowWidth(x.shape())};
  cuda::ForEach(dev, x.numel(), f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(sequence_pad, kCUDA, SequencePadKernel);
REGISTER_FLOAT_KERNELS(sequence_pad_grad, kCUDA, SequencePadGradKernel);

}  // namespace ops
}  // namespace fluid
