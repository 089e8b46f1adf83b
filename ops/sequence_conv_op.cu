// CUDA kernels for sequence_conv and its gradient (schemas in
// sequence_conv_op.cc): the column matrix built one thread per element in
// the context's workspace, the products by cuBLAS, and dX one thread per
// element summing its window positions in the CPU kernel's order
// (ops/sequence_conv_op.h).
#include "ops/cuda/sequence_helpers.cuh"
#include "ops/sequence_conv_op.h"

namespace fluid {
namespace ops {
namespace {

template <typename T>
struct Im2ColFunctor {
  ContextMap m;
  const T* x;
  T* col;
  __device__ void operator()(int64_t e) const {
    const int64_t s = m.SourceOf(e);
    col[e] = s >= 0 ? x[s] : T(0);
  }
};

template <typename T>
struct Col2ImFunctor {
  ContextMap m;
  const T* dcol;
  T* dx;
  __device__ void operator()(int64_t e) const { dx[e] = m.GradOf(dcol, e); }
};

// The column matrix's scratch (`col`) and the map over a device copy of
// X's LoD, both in the workspace.
template <typename T>
ContextMap ContextOnDevice(const ExecutionContext& ctx, const Tensor& x,
                           T** col) {
  const int64_t rows = x.shape()[0];
  const int64_t length = ctx.Attr<int32_t>("contextLength");
  const cuda::DeviceLoDs d = cuda::CopyLoDsToDevice(
      cuda::Dev(ctx), {&x.lod()}, sizeof(T) * rows * length * x.shape()[1]);
  *col = static_cast<T*>(d.extra);
  return ContextMap{d.lod[0], LoDCount(x.lod()),
                    ctx.Attr<int32_t>("contextStart"), length, x.shape()[1]};
}

template <typename T>
void SequenceConvKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& w = ctx.Input("Filter");
  T* out = cuda::OutputData<T>(ctx, "Out");
  const int64_t rows = x.shape()[0];
  if (rows == 0) return;
  const auto& dev = cuda::Dev(ctx);
  Im2ColFunctor<T> f;
  f.x = x.data<T>();
  f.m = ContextOnDevice<T>(ctx, x, &f.col);
  const int64_t k = f.m.length * f.m.width;
  cuda::ForEach(dev, rows * k, f);
  cuda::Gemm(dev, false, false, rows, w.shape()[1], k, T(1), f.col, w.data<T>(),
             T(0), out);
}

template <typename T>
void SequenceConvGradKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const Tensor& w = ctx.Input("Filter");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  const int64_t rows = x.shape()[0], n = w.shape()[1];
  FLUID_ENFORCE(dout.numel() == rows * n, "Out@GRAD has shape ", dout.shape(),
                " but Out is [", rows, ", ", n, "]");
  T* dw = cuda::OutputData<T>(ctx, GradSlot("Filter"));
  T* dx = cuda::OutputData<T>(ctx, GradSlot("X"));
  const auto& dev = cuda::Dev(ctx);
  if (rows == 0) {
    if (dw != nullptr) cuda::ZeroAsync(dev, dw, sizeof(T) * w.numel());
    return;
  }
  Im2ColFunctor<T> f;
  f.x = x.data<T>();
  f.m = ContextOnDevice<T>(ctx, x, &f.col);
  const int64_t k = f.m.length * f.m.width;
  if (dw != nullptr) {
    cuda::ForEach(dev, rows * k, f);
    cuda::Gemm(dev, true, false, k, n, rows, T(1), f.col, dout.data<T>(), T(0),
               dw);
  }
  if (dx != nullptr) {
    cuda::Gemm(dev, false, true, rows, k, n, T(1), dout.data<T>(), w.data<T>(),
               T(0), f.col);
    Col2ImFunctor<T> g;
    g.m = f.m;
    g.dcol = f.col;
    g.dx = dx;
    cuda::ForEach(dev, x.numel(), g);
  }
}

}  // namespace

REGISTER_FLOAT_KERNELS(sequence_conv, kCUDA, SequenceConvKernel);
REGISTER_FLOAT_KERNELS(sequence_conv_grad, kCUDA, SequenceConvGradKernel);

}  // namespace ops
}  // namespace fluid
