// CUDA kernels for sequence_unpad and its gradient (schemas in
// sequence_unpad_op.cc): Length is read back to the host (Out's size and
// LoD depend on it), then one thread per element through the CPU kernels'
// index map (ops/sequence_pad_op.h).
#include <vector>

#include "ops/cuda/sequence_helpers.cuh"
#include "ops/sequence_pad_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct UnpadFunctor {
  PadMap m;
  const T* x;
  T* out;
  __device__ void operator()(int64_t k) const { out[k] = x[m.PaddedOf(k)]; }
};

template <typename T>
struct UnpadGradFunctor {
  PadMap m;
  const T* dout;
  T* dx;
  __device__ void operator()(int64_t k) const {
    const int64_t p = m.PackedOf(k);
    dx[k] = p >= 0 ? dout[p] : T(0);
  }
};

LoD LengthsToLoD(const Tensor& length, const Shape& x) {
  std::vector<int64_t> host(static_cast<size_t>(length.numel()));
  if (!host.empty()) {
    FLUID_CUDA_CHECK(cudaMemcpy(host.data(), length.data<int64_t>(),
                                sizeof(int64_t) * host.size(),
                                cudaMemcpyDeviceToHost));
  }
  return UnpadLoD(host, x);
}

template <typename T>
void SequenceUnpadKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  LoD lod = LengthsToLoD(ctx.Input("Length"), x.shape());
  Tensor* out = ctx.Output("Out");
  Shape shape{lod.back()};
  for (int i = 2; i < x.shape().rank(); ++i) shape.push_back(x.shape()[i]);
  out->Resize(shape);
  const auto& dev = cuda::Dev(ctx);
  UnpadFunctor<T> f;
  f.x = x.data<T>();
  f.out = out->mutable_data<T>(ctx.place());
  if (out->numel() > 0) {
    f.m = PadMap{cuda::CopyLoDsToDevice(dev, {&lod}).lod[0], LoDCount(lod),
                 x.shape()[1], x.shape().Product(2, x.shape().rank())};
    cuda::ForEach(dev, out->numel(), f);
  }
  out->set_lod(std::move(lod));
}

template <typename T>
void SequenceUnpadGradKernel(const ExecutionContext& ctx) {
  if (!ctx.HasOutput(GradSlot("X"))) return;
  const Tensor& x = ctx.Input("X");
  const LoD lod = LengthsToLoD(ctx.Input("Length"), x.shape());
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const auto& dev = cuda::Dev(ctx);
  UnpadGradFunctor<T> f;
  const int64_t width = x.shape().Product(2, x.shape().rank());
  FLUID_ENFORCE(dout.numel() == lod.back() * width, "Out@GRAD has shape ",
                dout.shape(), " but Out has ", lod.back(), " rows of ", width);
  f.dout = dout.data<T>();
  f.dx = cuda::OutputData<T>(ctx, GradSlot("X"));
  if (x.numel() == 0) return;
  f.m = PadMap{cuda::CopyLoDsToDevice(dev, {&lod}).lod[0], LoDCount(lod),
               x.shape()[1], width};
  cuda::ForEach(dev, x.numel(), f);
}

}  // namespace

REGISTER_FLOAT_KERNELS(sequence_unpad, kCUDA, SequenceUnpadKernel);
REGISTER_FLOAT_KERNELS(sequence_unpad_grad, kCUDA, SequenceUnpadGradKernel);

}  // namespace ops
}  // namespace fluid
