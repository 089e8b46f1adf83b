// conv2d_transpose: the transposed (fractionally strided) 2-D convolution
// of NCHW images by a [C_in, C_out / groups, kh, kw] filter bank, Fluid's
// op of that name.
//
// It is the input gradient of a conv2d (conv2d_transpose_op.h), and is
// computed as conv2d_op.cc computes that gradient: a chunk of images is laid
// side by side as X [C_in, nb H W], one GEMM per group of channels gives the
// column matrix W^T X [C_out / groups kh kw, nb H W], and col2im folds each
// image's columns into its output planes. The gradients are conv2d's forward
// pass and filter gradient: im2col of dY, then dX = W col and dW = X col^T.
// Chunks are sized to keep the column matrix in cache and run in parallel
// on the pool, each with a serial GEMM; a batch that forms one chunk uses
// the pool inside the GEMM instead. The filter gradient of each run of
// chunks goes to its own partial, added in order: the same bits whichever
// thread ran which run. Scratch memory is per thread and reused
// (ops/conv_workspace.h). Bias is not part of the op: the layer adds it
// with elementwise_add (axis = 1).
#include "ops/conv2d_transpose_op.h"

#include <algorithm>
#include <string>
#include <vector>

#include "ops/conv_chunks.h"
#include "ops/conv_workspace.h"
#include "ops/op_helpers.h"
#include "src/framework/math/blas.h"
#include "src/framework/math/im2col.h"
#include "src/framework/math/int_math.h"

namespace fluid {
namespace ops {
namespace {

using math::ConvGeometry;

// The output extent along one axis (`what`), checked: at least 1, and
// output_size (when `want` > 0) within the stride - 1 extents that a conv2d
// sweep maps back to `in`. -1 where unknown.
int64_t OutputExtent(const std::string& op, const std::string& xn,
                     const Shape& x, int64_t in, int64_t k, int64_t s,
                     int64_t p, int64_t d, int64_t want, const char* what) {
  if (in < 0 || k < 0) return want > 0 ? want : -1;
  FLUID_ENFORCE(in > 0, op, ": Input '", xn, "' ", x, " is empty along ", what);
  const int64_t o = TransposeOutputSize(in, k, s, p, d);
  FLUID_ENFORCE(o >= 1, op, ": Input '", xn, "' ", x, " gives no output along ",
                what, ": (", in, " - 1) * stride ", s, " - 2 * padding ", p,
                " + dilation ", d, " * (", k, " - 1) + 1 = ", o,
                "; lower the padding");
  if (want <= 0) return o;
  FLUID_ENFORCE(
      want >= o &&
              want<o + s, op, ": attr 'output_size' asks ", want, " along ",
                   what, ", which Input '", xn, "' ", x,
                   " cannot reach with stride ", s, ", padding ", p,
                   ", dilation ", d, " and kernel ", k, ": allowed ", o, s> 1
          ? " to " + std::to_string(o + s - 1)
          : std::string());
  return want;
}

// Checks Input, Filter and the attrs and returns Output's shape (-1 where
// unknown).
Shape TransposeOutputShape(const InferShapeContext& ctx,
                           const std::string& op) {
  const std::string& xn = ctx.InputName("Input");
  const std::string& fn = ctx.InputName("Filter");
  Shape x = ctx.GetInputShape("Input");
  Shape f = ctx.GetInputShape("Filter");
  FLUID_ENFORCE(x.rank() == 4, op, ": Input '", xn,
                "' must be 4-D [N, C_in, H, W], got ", x);
  FLUID_ENFORCE(f.rank() == 4, op, ": Filter '", fn,
                "' must be 4-D [C_in, C_out / groups, kh, kw], got ", f);
  for (int i = 0; i < 4; ++i)
    FLUID_ENFORCE(f[i] != 0 && f[i] >= -1, op, ": Filter '", fn,
                  "' has an empty dim: ", f);
  const ConvAttrs a = ReadConvAttrs(ctx, op);
  const auto& os = ctx.Attr<std::vector<int32_t>>("output_size");
  FLUID_ENFORCE(os.empty() || (os.size() == 2 && os[0] > 0 && os[1] > 0), op,
                ": attr 'output_size' must be empty or two positive ints "
                "[h, w], got ",
                Ints(os));
  FLUID_ENFORCE(x[1] < 0 || f[0] < 0 || x[1] == f[0], op, ": Input '", xn, "' ",
                x, " has ", x[1], " channels but Filter '", fn, "' ", f,
                " expects ", f[0], " (its first dim)");
  FLUID_ENFORCE(f[0] < 0 || f[0] % a.groups == 0, op, ": Filter '", fn, "' ", f,
                " has ", f[0],
                " input channels, not a multiple of groups = ", a.groups);
  FLUID_ENFORCE(ctx.GetInputDtype("Input") == ctx.GetInputDtype("Filter"), op,
                ": Input '", xn, "' is ", ctx.GetInputDtype("Input"),
                " but Filter '", fn, "' is ", ctx.GetInputDtype("Filter"));
  const int64_t oh =
      OutputExtent(op, xn, x, x[2], f[2], a.stride_h, a.pad_h, a.dilation_h,
                   os.empty() ? 0 : os[0], "the height");
  const int64_t ow =
      OutputExtent(op, xn, x, x[3], f[3], a.stride_w, a.pad_w, a.dilation_w,
                   os.empty() ? 0 : os[1], "the width");
  return Shape{x[0], f[1] < 0 ? -1 : f[1] * a.groups, oh, ow};
}

void TransposeInferShape(InferShapeContext* ctx) {
  ctx->SetOutputShape("Output", TransposeOutputShape(*ctx, "conv2d_transpose"));
  ctx->SetOutputDtype("Output", ctx->GetInputDtype("Input"));
}

void TransposeGradInferShape(InferShapeContext* ctx) {
  Shape want = TransposeOutputShape(*ctx, "conv2d_transpose_grad");
  Shape got = ctx->GetInputShape(GradSlot("Output"));
  FLUID_ENFORCE(ShapesCompatible(want, got),
                "conv2d_transpose_grad: Output@GRAD '",
                ctx->InputName(GradSlot("Output")), "' has shape ", got,
                " but Input '", ctx->InputName("Input"), "' and Filter '",
                ctx->InputName("Filter"), "' give an output of ", want);
  ctx->ShareShape("Input", GradSlot("Input"));
  ctx->ShareShape("Filter", GradSlot("Filter"));
}

// x [nb, m, p] viewed as [m, nb p] in scratch slot `slot` (x itself for one
// image).
template <typename T>
const T* SideBySide(const T* x, int64_t m, int64_t p, int64_t nb,
                    ScratchSlot slot) {
  if (nb == 1) return x;
  const int64_t ld = nb * p;
  T* t = ThreadScratch<T>(slot, m * ld);
  for (int64_t j = 0; j < nb; ++j)
    for (int64_t o = 0; o < m; ++o)
      std::copy_n(x + (j * m + o) * p, p, t + o * ld + j * p);
  return t;
}

// y [nb, C_out, Ho, Wo] for `nb` consecutive images x [nb, C_in, H, W], one
// group of channels at a time: col2im of W_g^T X_g.
template <typename T>
void ForwardChunk(const CPUDeviceContext& gemm_dev, const ConvLayout& l,
                  const T* w, const T* x, int64_t nb, T* y) {
  const ConvGeometry& g = l.g;
  const int64_t k = g.ColRows(), p = g.ColCols(), mg = l.group_filters;
  const int64_t ld = nb * p;
  const T* xt = SideBySide(x, mg * l.groups, p, nb, kScratchTmp);
  for (int64_t gi = 0; gi < l.groups; ++gi) {
    const T* wg = w + gi * mg * k;
    const T* xg = xt + gi * mg * ld;
    T* yg = y + gi * g.InputSize();
    if (nb == 1 && g.IsPointwise()) {
      math::Gemm<T>(gemm_dev, true, false, k, p, mg, T(1), wg, xg, T(0), yg);
      continue;
    }
    // col [K, nb P] = W_g [mg, K]^T * X_g [mg, nb P]
    T* col = ThreadScratch<T>(kScratchCol, k * ld);
    math::Gemm<T>(gemm_dev, true, false, k, ld, mg, T(1), wg, xg, T(0), col);
    for (int64_t j = 0; j < nb; ++j)
      math::Col2ImScratch(g, col + j * p, ld, yg + j * l.image);
  }
}

template <typename T>
void TransposeForward(const CPUDeviceContext& dev, const ConvLayout& l,
                      const T* w, const T* x, int64_t n, T* y) {
  const ConvGeometry& g = l.g;
  const int64_t in_size = l.group_filters * l.groups * g.ColCols();
  const ChunkPlan plan = PlanChunks(dev, g, n);
  if (plan.chunks == 1) {
    ForwardChunk(dev, l, w, x, n, y);
    return;
  }
  const double cost =
      2.0 * l.group_filters * g.ColRows() * g.ColCols() * plan.per;
  ParallelFor(dev, plan.chunks, cost, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t i0 = c * plan.per, nb = std::min(plan.per, n - i0);
      ForwardChunk(SerialDevice(), l, w, x + i0 * in_size, nb,
                   y + i0 * l.image);
    }
  });
}

template <typename T>
void TransposeKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  Tensor* out = ctx.Output("Output");
  const ConvLayout l =
      MakeTransposeLayout(ctx, "conv2d_transpose", out->shape());
  T* y = out->mutable_data<T>();
  TransposeForward(ctx.device(), l, w.data<T>(), x.data<T>(), x.shape()[0], y);
}

// Gradients for `nb` consecutive images: dx [nb, C_in, H, W] (overwritten)
// and dw [C_in, C_out / groups kh kw] (this chunk's share added when
// `accumulate`, else written); either may be null. The column matrix of dY
// serves both.
template <typename T>
void BackwardChunk(const CPUDeviceContext& gemm_dev, const ConvLayout& l,
                   const T* w, const T* x, const T* dy, int64_t nb, T* dx,
                   T* dw, bool accumulate) {
  const ConvGeometry& g = l.g;
  const int64_t k = g.ColRows(), p = g.ColCols(), mg = l.group_filters;
  const int64_t ld = nb * p, m = mg * l.groups;
  const bool direct = nb == 1 && g.IsPointwise();
  const T* xt = dw != nullptr ? SideBySide(x, m, p, nb, kScratchTmp) : nullptr;
  for (int64_t gi = 0; gi < l.groups; ++gi) {
    const T* col = dy + gi * g.InputSize();
    if (!direct) {
      T* c = ThreadScratch<T>(kScratchCol, k * ld);
      for (int64_t j = 0; j < nb; ++j)
        math::Im2Col(g, dy + j * l.image + gi * g.InputSize(), ld, c + j * p);
      col = c;
    }
    // dW_g [mg, K] (+)= X_g [mg, nb P] * col [K, nb P]^T
    if (dw != nullptr)
      math::Gemm<T>(gemm_dev, false, true, mg, k, ld, T(1), xt + gi * mg * ld,
                    col, accumulate ? T(1) : T(0), dw + gi * mg * k);
    if (dx == nullptr) continue;
    // dX_g [mg, nb P] = W_g [mg, K] * col [K, nb P]
    const T* wg = w + gi * mg * k;
    if (nb == 1) {
      math::Gemm<T>(gemm_dev, false, false, mg, p, k, T(1), wg, col, T(0),
                    dx + gi * mg * p);
      continue;
    }
    T* tmp = ThreadScratch<T>(kScratchMasks, mg * ld);
    math::Gemm<T>(gemm_dev, false, false, mg, ld, k, T(1), wg, col, T(0), tmp);
    for (int64_t j = 0; j < nb; ++j)
      for (int64_t o = 0; o < mg; ++o)
        std::copy_n(tmp + o * ld + j * p, p, dx + (j * m + gi * mg + o) * p);
  }
}

// dx and dw (either may be null) of `n` images, chunk by chunk; chunks go in
// contiguous runs, a few per thread, each run summing its chunks' dW in
// order into its own partial, the partials then added in order.
template <typename T>
void TransposeBackward(const CPUDeviceContext& dev, const ConvLayout& l,
                       int64_t n, const T* x, const T* w, const T* dy, T* dx,
                       T* dw) {
  const ConvGeometry& g = l.g;
  const int64_t m = l.group_filters * l.groups;
  const int64_t size = m * g.ColRows(), in_size = m * g.ColCols();
  const ChunkPlan plan = PlanChunks(dev, g, n);
  if (plan.chunks == 0) {
    if (dw != nullptr) std::fill_n(dw, size, T(0));
    return;
  }
  if (plan.chunks == 1) {
    BackwardChunk(dev, l, w, x, dy, n, dx, dw, false);
    return;
  }
  const int threads = dev.num_threads();
  const int64_t runs =
      threads > 1 ? std::min<int64_t>(plan.chunks, 4 * threads) : 1;
  T* partial = dw != nullptr && runs > 1
                   ? ThreadScratch<T>(kScratchPartial, (runs - 1) * size)
                   : nullptr;
  const double cost = 4.0 * size * g.ColCols() * plan.per * plan.chunks / runs;
  ParallelFor(dev, runs, cost, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      T* run_dw = dw == nullptr ? nullptr
                  : r == 0      ? dw
                                : partial + (r - 1) * size;
      const int64_t first = r * plan.chunks / runs;
      for (int64_t c = first; c < (r + 1) * plan.chunks / runs; ++c) {
        const int64_t i0 = c * plan.per, nb = std::min(plan.per, n - i0);
        BackwardChunk(SerialDevice(), l, w, x + i0 * in_size, dy + i0 * l.image,
                      nb, dx ? dx + i0 * in_size : nullptr, run_dw, c != first);
      }
    }
  });
  if (dw == nullptr) return;
  for (int64_t r = 1; r < runs; ++r) {
    const T* src = partial + (r - 1) * size;
    for (int64_t i = 0; i < size; ++i) dw[i] += src[i];
  }
}

template <typename T>
void TransposeGradKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  const Tensor& dy = ctx.Input(GradSlot("Output"));
  Tensor* dx = ctx.Output(GradSlot("Input"));
  Tensor* dw = ctx.Output(GradSlot("Filter"));
  if (dx == nullptr && dw == nullptr) return;
  const ConvLayout l =
      MakeTransposeLayout(ctx, "conv2d_transpose_grad", dy.shape());
  TransposeBackward(ctx.device(), l, x.shape()[0], x.data<T>(), w.data<T>(),
                    dy.data<T>(), dx ? dx->mutable_data<T>() : nullptr,
                    dw ? dw->mutable_data<T>() : nullptr);
}

}  // namespace

REGISTER_OP(conv2d_transpose)
    .Doc(
        "Transposed 2-D convolution of NCHW images (the input gradient of "
        "conv2d): every input pixel spreads Filter[c_in] over a kh x kw "
        "window of the output, windows `strides` apart. With groups, input "
        "channel group g feeds output channel group g. No bias.")
    .Input("Input", "images [N, C_in, H, W]")
    .Input("Filter", "filter bank [C_in, C_out / groups, kh, kw]")
    .Output("Output",
            "[N, C_out, Ho, Wo], Ho = (H - 1) stride_h - 2 pad_h + "
            "dilation_h (kh - 1) + 1 (likewise Wo), or output_size")
    .Attr<std::vector<int32_t>>("output_size", {},
                                "[h, w] of Output, or empty: the "
                                "smallest; at most stride - 1 more")
    .Attr<std::vector<int32_t>>("strides", {1, 1}, "window step [h, w]")
    .Attr<std::vector<int32_t>>("paddings", {0, 0},
                                "rows and columns cropped from each side "
                                "of the full output [h, w]")
    .Attr<std::vector<int32_t>>("dilations", {1, 1},
                                "spacing of the kernel taps [h, w]")
    .Attr<int32_t>("groups", 1,
                   "channel groups: C_in and C_out are cut into `groups` "
                   "parts, input part g feeds output part g")
    .SetInferShape(TransposeInferShape)
    .SetGrad(GradSpec("conv2d_transpose_grad")
                 .Inputs({"Input", "Filter"})
                 .OutGrads({"Output"})
                 .InGrads({"Input", "Filter"}))
    .CPUKernel<float>(TransposeKernel<float>)
    .CPUKernel<double>(TransposeKernel<double>);

REGISTER_GRAD_OP(conv2d_transpose_grad)
    .Doc(
        "Gradients of conv2d_transpose: Input's is the conv2d of "
        "Output@GRAD by Filter, Filter's the product of Input with the "
        "column matrix of Output@GRAD.")
    .SetInferShape(TransposeGradInferShape)
    .CPUKernel<float>(TransposeGradKernel<float>)
    .CPUKernel<double>(TransposeGradKernel<double>);

}  // namespace ops
}  // namespace fluid
