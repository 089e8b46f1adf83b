// CUDA kernels for sequence_pool and sequence_pool_grad (schemas in
// sequence_pool_op.cc): one thread per output element (forward) or per
// element of X (gradient, which finds its sequence by binary search in the
// offsets); the math is the CPU kernel's (ops/sequence_pool_op.h).
#include "ops/cuda/sequence_helpers.cuh"
#include "ops/sequence_helpers.h"
#include "ops/sequence_pool_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct PoolFunctor {
  SequencePoolType type;
  const int64_t* lod;
  const T* x;
  int64_t width;
  T pad;
  T* out;
  int32_t* index;
  __device__ void operator()(int64_t k) const {
    const int64_t i = k / width;
    const int64_t c = k % width;
    int32_t arg;
    out[k] = PoolSequence(type, x, width, c, lod[i], lod[i + 1], pad, &arg);
    if (index != nullptr) index[k] = arg;
  }
};

template <typename T>
struct PoolGradFunctor {
  SequencePoolType type;
  const int64_t* lod;
  int64_t count;
  int64_t width;
  const T* dout;
  const int32_t* index;
  T* dx;
  __device__ void operator()(int64_t k) const {
    const int64_t r = k / width;
    const int64_t c = k % width;
    const int64_t i = SequenceOfRow(lod, count, r);
    const int64_t o = i * width + c;
    dx[k] = dout[o] * PoolGradWeight<T>(type, r, lod[i], lod[i + 1], index[o]);
  }
};

template <typename T>
void SequencePoolKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const LoD& lod = x.lod();
  const auto& dev = cuda::Dev(ctx);
  PoolFunctor<T> f;
  f.type = ReadSequencePoolType(ctx.op().attrs(), "sequence_pool");
  f.x = x.data<T>();
  f.width = RowWidth(x.shape());
  f.pad = static_cast<T>(ctx.Attr<float>("pad_value"));
  f.out = cuda::OutputData<T>(ctx, "Out");
  f.index = cuda::OutputData<int32_t>(ctx, "MaxIndex");
  const int64_t n = LoDCount(lod) * f.width;
  if (n == 0) return;
  f.lod = cuda::CopyLoDsToDevice(dev, {&lod}).lod[0];
  cuda::ForEach(dev, n, f);
}

template <typename T>
void SequencePoolGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const Tensor& x = ctx.Input("X");
  const LoD& lod = x.lod();
  const auto& dev = cuda::Dev(ctx);
  PoolGradFunctor<T> f;
  f.type = ReadSequencePoolType(ctx.op().attrs(), "sequence_pool_grad");
  f.count = LoDCount(lod);
  f.width = RowWidth(x.shape());
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(dout.numel() == f.count * f.width, "Out@GRAD has shape ",
                dout.shape(), " but X ", Quote(ctx.InputName("X")), " holds ",
                f.count, " sequences of ", f.width, " elements");
  f.dout = dout.data<T>();
  f.index = ctx.Input("MaxIndex").data<int32_t>();
  f.dx = cuda::OutputData<T>(ctx, GradSlot("X"));
  if (x.numel() == 0) return;
  f.lod = cuda::CopyLoDsToDevice(dev, {&lod}).lod[0];
  cuda::ForEach(dev, x.numel(), f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(sequence_pool, kCUDA, SequencePoolKernel);
REGISTER_FLOAT_KERNELS(sequence_pool_grad, kCUDA, SequencePoolGradKernel);

}  // namespace ops
}  // namespace fluid
