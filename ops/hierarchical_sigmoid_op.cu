// CUDA kernels for hierarchical_sigmoid and its gradient (schema, shape
// inference and the paths in hierarchical_sigmoid_op.cc). Label, PathTable
// and PathCode are copied to the host, where the paths are read and
// checked by the CPU kernel's code, then uploaded. Each row's loss and each
// W row's gradient are summed in a fixed order (no atomics): the same bits
// on every run.
#include <vector>

#include "ops/cuda/touched_rows.cuh"
#include "ops/hierarchical_sigmoid_op.h"

namespace fluid {
namespace ops {
namespace {

// The paths on the host and their node and bit lists on the device.
struct DevicePaths {
  HsigmoidPaths host;
  Tensor holders[2];
  const int64_t* node = nullptr;
  const int64_t* bit = nullptr;
};

void ReadPaths(const ExecutionContext& ctx, DevicePaths* p) {
  Tensor label, table, code;
  cuda::Download(ctx, ctx.Input("Label"), &label);
  const bool custom = ctx.HasInput("PathTable");
  if (custom) {
    cuda::Download(ctx, ctx.Input("PathTable"), &table);
    cuda::Download(ctx, ctx.Input("PathCode"), &code);
  }
  p->host = ReadHsigmoidPaths(ctx, label, custom ? &table : nullptr,
                              custom ? &code : nullptr);
  p->node = cuda::Upload(ctx, p->host.node, &p->holders[0]);
  p->bit = cuda::Upload(ctx, p->host.bit, &p->holders[1]);
}

template <typename T>
struct HsigmoidNodes {
  const T* x;
  const T* w;
  const T* bias;
  const int64_t* node;
  const int64_t* bit;
  T* pre;
  T* terms;
  int64_t dim, length;
  __device__ void operator()(int64_t e) const {
    const int64_t n = node[e];
    if (n < 0) {
      pre[e] = T(0);
      terms[e] = T(0);
      return;
    }
    const int64_t i = e / length;
    T z = bias != nullptr ? bias[n] : T(0);
    for (int64_t k = 0; k < dim; ++k) z += x[i * dim + k] * w[n * dim + k];
    pre[e] = HsigmoidSoftplus(z);
    terms[e] = HsigmoidNodeLoss(pre[e], z, bit[e]);
  }
};

template <typename T>
struct HsigmoidRowSum {
  const T* terms;
  const int64_t* node;
  T* out;
  int64_t length;
  __device__ void operator()(int64_t i) const {
    T s = T(0);
    for (int64_t j = 0; j < length; ++j)
      if (node[i * length + j] >= 0) s += terms[i * length + j];
    out[i] = s;
  }
};

template <typename T>
const T* OptionalData(const ExecutionContext& ctx, const char* slot) {
  return ctx.HasInput(slot) ? ctx.Input(slot).data<T>() : nullptr;
}

template <typename T>
void HsigmoidKernel(const ExecutionContext& ctx) {
  DevicePaths p;
  ReadPaths(ctx, &p);
  const int64_t rows = p.host.rows, length = p.host.length;
  const int64_t n = rows * length;
  Tensor terms;
  HsigmoidNodes<T> f{
      ctx.Input("X").data<T>(),
      ctx.Input("W").data<T>(),
      OptionalData<T>(ctx, "Bias"),
      p.node,
      p.bit,
      ctx.Output("PreOut")->mutable_data<T>(Shape({rows, length}), ctx.place()),
      terms.mutable_data<T>(Shape({n > 0 ? n : 1}), ctx.place()),
      p.host.dim,
      length};
  cuda::ForEach(cuda::Dev(ctx), n, f);
  HsigmoidRowSum<T> sum{
      f.terms, p.node,
      ctx.Output("Out")->mutable_data<T>(Shape({rows, 1}), ctx.place()),
      length};
  cuda::ForEach(cuda::Dev(ctx), rows, sum);
  cuda::Dev(ctx).Wait();  // the path lists are freed on return
}

template <typename T>
struct HsigmoidNodeGrads {
  const T* pre;
  const T* dout;
  const int64_t* node;
  const int64_t* bit;
  T* g;
  int64_t length;
  __device__ void operator()(int64_t e) const {
    g[e] = node[e] < 0 ? T(0)
                       : HsigmoidNodeGrad(pre[e], bit[e]) * dout[e / length];
  }
};

template <typename T>
struct HsigmoidInputGrad {
  const T* g;
  const T* w;
  const int64_t* node;
  T* dx;
  int64_t dim, length;
  __device__ void operator()(int64_t e) const {
    const int64_t i = e / dim, k = e % dim;
    T acc = T(0);
    for (int64_t j = 0; j < length; ++j) {
      const int64_t n = node[i * length + j];
      if (n >= 0) acc += g[i * length + j] * w[n * dim + k];
    }
    dx[e] = acc;
  }
};

template <typename T>
void HsigmoidGradKernel(const ExecutionContext& ctx) {
  DevicePaths p;
  ReadPaths(ctx, &p);
  const int64_t rows = p.host.rows, length = p.host.length;
  const int64_t n = rows * length;
  const Tensor& pre = ctx.Input("PreOut");
  const Tensor& dout = ctx.Input(GradSlot("Out"));
  FLUID_ENFORCE(pre.shape() == Shape({rows, length}) && dout.numel() == rows,
                ctx.type(), ": PreOut '", ctx.InputName("PreOut"), "' ",
                pre.shape(), " and Out@GRAD '", ctx.InputName(GradSlot("Out")),
                "' ", dout.shape(), " must be [", rows, ", ", length, "] and [",
                rows, ", 1], as the forward run's");
  Tensor g_t;
  HsigmoidNodeGrads<T> ng{
      pre.data<T>(),
      dout.data<T>(),
      p.node,
      p.bit,
      g_t.mutable_data<T>(Shape({n > 0 ? n : 1}), ctx.place()),
      length};
  cuda::ForEach(cuda::Dev(ctx), n, ng);
  if (ctx.HasOutput(GradSlot("X"))) {
    HsigmoidInputGrad<T> ig{
        ng.g,       ctx.Input("W").data<T>(),
        p.node,     cuda::OutputLike<T>(ctx, GradSlot("X"), ctx.Input("X")),
        p.host.dim, length};
    cuda::ForEach(cuda::Dev(ctx), rows * p.host.dim, ig);
  }
  const TouchedRows t = CollectTouchedRows(p.host.node.data(), n);
  if (ctx.HasOutput(GradSlot("W")))
    cuda::TouchedTableGrad<T>(ctx, GradSlot("W"), ctx.Input("W").shape(),
                              ctx.Attr<bool>("is_sparse"), t, ng.g,
                              ctx.Input("X").data<T>(), length);
  if (ctx.HasOutput(GradSlot("Bias")) && ctx.HasInput("Bias"))
    cuda::TouchedTableGrad<T>(ctx, GradSlot("Bias"), ctx.Input("Bias").shape(),
                              false, t, ng.g, nullptr, length);
  cuda::Dev(ctx).Wait();  // the scratch tensors are freed on return
}

}  // namespace

REGISTER_FLOAT_KERNELS(hierarchical_sigmoid, kCUDA, HsigmoidKernel);
REGISTER_FLOAT_KERNELS(hierarchical_sigmoid_grad, kCUDA, HsigmoidGradKernel);

}  // namespace ops
}  // namespace fluid
