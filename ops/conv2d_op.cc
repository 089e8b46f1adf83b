// conv2d: 2-D convolution of NCHW images by an [M, C, kh, kw] filter bank.
//
// Computed as im2col + GEMM. Several images are unfolded side by side into
// one column matrix [C kh kw, images * Ho Wo] so the product is one large
// GEMM instead of a small one per image; the chunk of images is sized to
// keep the column matrix in cache. With a thread pool the chunks run in
// parallel, each with a serial GEMM (no synchronisation inside the product);
// a batch that forms a single chunk uses the pool inside the GEMM instead.
// A 1x1 kernel with unit stride and no padding skips im2col when a chunk is
// one image (the image is its own column matrix), as it is for large images.
// Scratch memory is per thread and reused across calls (ops/conv_workspace.h).
// With groups, each group of channels is its own convolution (its own
// im2col and GEMM against its slice of the filters), run one after another.
// Bias is not part of conv2d: add it with elementwise_add (axis = 1).
//
// Sweeps whose image columns all land in output-wide rows (3x3 with padding
// 1, 1x1 with none, at unit or larger stride) skip the column matrix:
// math/packed_conv.h fills the GEMM kernel's panels straight from the
// images. Their input gradient is computed the same way: at unit stride as
// the convolution of dY by the filters turned around (InputGradIsConv), at
// a larger one phase by phase (PhasedInputGrad).
#include <algorithm>
#include <string>
#include <vector>

#include "ops/conv_chunks.h"
#include "ops/conv_geometry.h"
#include "ops/conv_workspace.h"
#include "ops/half_matrix.h"
#include "ops/op_helpers.h"
#include "src/framework/math/blas.h"
#include "src/framework/math/dnnl_conv.h"
#include "src/framework/math/im2col.h"
#include "src/framework/math/int_math.h"
#include "src/framework/math/packed_conv.h"

namespace fluid {
namespace ops {
namespace {

using math::ConvGeometry;

// Checks Input and Filter and returns Output's shape (-1 where unknown).
Shape ConvOutputShape(const InferShapeContext& ctx, const std::string& op) {
  const std::string& xn = ctx.InputName("Input");
  const std::string& fn = ctx.InputName("Filter");
  Shape x = ctx.GetInputShape("Input");
  Shape f = ctx.GetInputShape("Filter");
  FLUID_ENFORCE(x.rank() == 4, op, ": Input '", xn,
                "' must be 4-D [N, C, H, W], got ", x);
  FLUID_ENFORCE(f.rank() == 4, op, ": Filter '", fn,
                "' must be 4-D [M, C / groups, kh, kw], got ", f);
  for (int i = 0; i < 4; ++i)
    FLUID_ENFORCE(f[i] != 0 && f[i] >= -1, op, ": Filter '", fn,
                  "' has an empty dim: ", f);
  ConvAttrs a = ReadConvAttrs(ctx, op);
  const int64_t groups = a.groups;
  FLUID_ENFORCE(x[1] < 0 || f[1] < 0 || x[1] == f[1] * groups, op, ": Input '",
                xn, "' ", x, " has ", x[1], " channels but Filter '", fn, "' ",
                f, " with groups = ", groups, " expects ", f[1] * groups);
  FLUID_ENFORCE(f[0] < 0 || f[0] % groups == 0, op, ": Filter '", fn, "' ", f,
                " has ", f[0], " filters, not a multiple of groups = ", groups);
  FLUID_ENFORCE(ctx.GetInputDtype("Input") == ctx.GetInputDtype("Filter"), op,
                ": Input '", xn, "' is ", ctx.GetInputDtype("Input"),
                " but Filter '", fn, "' is ", ctx.GetInputDtype("Filter"));
  auto out_dim = [&](int64_t in, int64_t k, int64_t s, int64_t p, int64_t d,
                     const char* what) -> int64_t {
    if (in < 0 || k < 0) return -1;
    int64_t o = math::ConvOutputSize(in, k, s, p, d);
    FLUID_ENFORCE(o >= 1, op, ": Input '", xn, "' ", x,
                  " is too small for Filter '", fn, "' ", f, " along ", what,
                  " (stride ", s, ", padding ", p, ", dilation ", d, ")");
    return o;
  };
  int64_t oh =
      out_dim(x[2], f[2], a.stride_h, a.pad_h, a.dilation_h, "the height");
  int64_t ow =
      out_dim(x[3], f[3], a.stride_w, a.pad_w, a.dilation_w, "the width");
  return Shape{x[0], f[0], oh, ow};
}

void Conv2dInferShape(InferShapeContext* ctx) {
  Shape out = ConvOutputShape(*ctx, "conv2d");
  ctx->SetOutputShape("Output", out);
  ctx->SetOutputDtype("Output", ctx->GetInputDtype("Input"));
}

void Conv2dGradInferShape(InferShapeContext* ctx) {
  Shape want = ConvOutputShape(*ctx, "conv2d_grad");
  Shape got = ctx->GetInputShape(GradSlot("Output"));
  FLUID_ENFORCE(ShapesCompatible(want, got), "conv2d_grad: Output@GRAD '",
                ctx->InputName(GradSlot("Output")), "' has shape ", got,
                " but Input '", ctx->InputName("Input"), "' and Filter '",
                ctx->InputName("Filter"), "' give an output of ", want);
  ctx->ShareShape("Input", GradSlot("Input"));
  ctx->ShareShape("Filter", GradSlot("Filter"));
}

// out += the `count` partials of `size` elements, in order.
template <typename T>
void AddPartials(const T* partial, int64_t count, int64_t size, T* out) {
  for (int64_t c = 0; c < count; ++c) {
    const T* src = partial + c * size;
    for (int64_t i = 0; i < size; ++i) out[i] += src[i];
  }
}

// fn(r, run_dw) for the runs r in [0, runs) on the pool, each writing its
// part of dW into its own partial of `size` elements (run 0 straight into
// dw; all null when dw is), and then the partials added into dw in order:
// the same bits whichever thread ran which run, for a given run count.
// `cost` is the operations per run.
template <typename T, typename Fn>
void RunsIntoPartials(const CPUDeviceContext& dev, int64_t runs, double cost,
                      int64_t size, T* dw, Fn fn) {
  T* partial = dw != nullptr && runs > 1
                   ? ThreadScratch<T>(kScratchPartial, (runs - 1) * size)
                   : nullptr;
  ParallelFor(dev, runs, cost, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      fn(r, dw == nullptr ? nullptr : r == 0 ? dw : partial + (r - 1) * size);
  });
  if (dw != nullptr) AddPartials(partial, runs - 1, size, dw);
}

// Output for `nb` consecutive images x [nb, C, H, W] -> y [nb, M, Ho, Wo],
// one group of channels at a time.
template <typename T>
void ForwardChunk(const CPUDeviceContext& gemm_dev, const ConvLayout& l,
                  const T* w, const T* x, int64_t nb, T* y) {
  const ConvGeometry& g = l.g;
  const int64_t k = g.ColRows(), p = g.ColCols(), mg = l.group_filters;
  const int64_t m = mg * l.groups, ld = nb * p;
  for (int64_t gi = 0; gi < l.groups; ++gi) {
    const T* wg = w + gi * mg * k;
    const T* xg = x + gi * g.InputSize();
    T* yg = y + gi * mg * p;
    if (nb == 1 && g.IsPointwise()) {
      math::Gemm<T>(gemm_dev, false, false, mg, p, k, T(1), wg, xg, T(0), yg);
      continue;
    }
    T* col = ThreadScratch<T>(kScratchCol, k * ld);
    for (int64_t j = 0; j < nb; ++j)
      math::Im2Col(g, xg + j * l.image, ld, col + j * p);
    if (nb == 1) {
      math::Gemm<T>(gemm_dev, false, false, mg, p, k, T(1), wg, col, T(0), yg);
      continue;
    }
    // tmp [mg, nb * P] -> y [nb, M, P], rows gi mg ... of each image
    T* tmp = ThreadScratch<T>(kScratchTmp, mg * ld);
    math::Gemm<T>(gemm_dev, false, false, mg, ld, k, T(1), wg, col, T(0), tmp);
    for (int64_t j = 0; j < nb; ++j)
      for (int64_t o = 0; o < mg; ++o)
        std::copy_n(tmp + o * ld + j * p, p, yg + (j * m + o) * p);
  }
}

// Output positions per chunk on the packed path (math/packed_conv.h): 16
// of the kernel's panels of 48, so that small images still fill them.
constexpr int64_t kPackedChunkRows = 768;

ChunkPlan PlanPackedChunks(const CPUDeviceContext& dev, const ConvGeometry& g,
                           int64_t batch) {
  ChunkPlan plan;
  if (batch <= 0) return plan;
  int64_t per =
      std::clamp<int64_t>(CeilDiv(kPackedChunkRows, g.ColCols()), 1, batch);
  int64_t chunks = CeilDiv(batch, per);
  const int threads = dev.num_threads();
  if (threads > 1 && chunks < threads)
    chunks = std::min<int64_t>(batch, threads);
  plan.per = CeilDiv(batch, chunks);
  plan.chunks = CeilDiv(batch, plan.per);
  return plan;
}

// Whether the packed path computes the convolution `g` of `batch` images:
// its sweep (math::PackedConvApplies) and at least a chunk per thread (a
// smaller batch parallelises inside the GEMM instead).
bool PackedUsable(const CPUDeviceContext& dev, const ConvGeometry& g,
                  int64_t batch) {
  if (!math::PackedConvApplies(g) || batch <= 0) return false;
  return PlanPackedChunks(dev, g, batch).chunks >= dev.num_threads();
}

// The packed path's view of `l` (math/packed_conv.h).
math::PackedConvShape PackedShape(const ConvLayout& l) {
  math::PackedConvShape s;
  s.g = l.g;
  s.groups = l.groups;
  s.group_filters = l.group_filters;
  return s;
}

// y = the convolution `l` of x on the packed path, chunk by chunk;
// `depth_block` as PackedConvShape's.
template <typename T>
void PackedForward(const CPUDeviceContext& dev, const ConvLayout& l, const T* w,
                   const T* x, int64_t n, T* y, int64_t depth_block = 0) {
  math::PackedConvShape s = PackedShape(l);
  s.depth_block = depth_block;
  T* packed = ThreadScratch<T>(kScratchPacked, math::PackedFilterSize(s));
  math::PackFilters(s, w, packed);
  const ChunkPlan plan = PlanPackedChunks(dev, l.g, n);
  const int64_t out_size = l.group_filters * l.groups * l.g.ColCols();
  const int64_t scratch = math::PackedConvScratchSize<T>(s, plan.per);
  double cost = 2.0 * out_size * l.g.ColRows() * plan.per;
  ParallelFor(dev, plan.chunks, cost, [&](int64_t begin, int64_t end) {
    T* buffer = ThreadScratch<T>(kScratchCol, scratch);
    for (int64_t c = begin; c < end; ++c) {
      int64_t i0 = c * plan.per;
      int64_t nb = std::min(plan.per, n - i0);
      math::PackedConvImages(s, packed, x + i0 * l.image, nb, buffer,
                             y + i0 * out_size);
    }
  });
}

// y [n, M, Ho, Wo] = the convolution `l` of x [n, C, H, W] by w.
template <typename T>
void ConvForward(const CPUDeviceContext& dev, const ConvLayout& l, const T* w,
                 const T* x, int64_t n, T* y) {
  if (PackedUsable(dev, l.g, n)) {
    PackedForward(dev, l, w, x, n, y);
    return;
  }
  const ConvGeometry& g = l.g;
  const int64_t m = l.group_filters * l.groups;
  const int64_t in_size = l.image, out_size = m * g.ColCols();
  ChunkPlan plan = PlanChunks(dev, g, n);
  if (plan.chunks == 1) {
    ForwardChunk(dev, l, w, x, n, y);
    return;
  }
  double cost = 2.0 * m * g.ColRows() * g.ColCols() * plan.per;
  ParallelFor(dev, plan.chunks, cost, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      int64_t i0 = c * plan.per;
      int64_t nb = std::min(plan.per, n - i0);
      ForwardChunk(SerialDevice(), l, w, x + i0 * in_size, nb,
                   y + i0 * out_size);
    }
  });
}

template <typename T>
void Conv2dKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  Tensor* out = ctx.Output("Output");
  const ConvLayout l = MakeLayout(ctx, "conv2d");
  T* yd = out->mutable_data<T>();
  ConvForward(ctx.device(), l, w.data<T>(), x.data<T>(), x.shape()[0], yd);
}

// The input gradient of a unit-stride convolution is itself one: of dY by
// the filters with M and C swapped and each kernel turned by 180 degrees,
// padded by dilation (k - 1) - pad on each side, which gives back H x W.
// Computed so, it is an im2col of dY and a GEMM with M kh kw products per
// output, written straight into dX, where col2im would need a GEMM with
// only M products per entry of a column matrix kh kw times dX's size, that
// matrix zeroed first and then folded back into a zeroed dX.
bool InputGradIsConv(const ConvGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1 &&
         g.pad_h <= g.dilation_h * (g.kernel_h - 1) &&
         g.pad_w <= g.dilation_w * (g.kernel_w - 1);
}

// The convolution that maps dY to dX for InputGradIsConv(l.g).
ConvLayout InputGradLayout(const ConvLayout& l) {
  const ConvGeometry& g = l.g;
  ConvLayout t = OverOutputGrad(l);
  t.g.pad_h = g.dilation_h * (g.kernel_h - 1) - g.pad_h;
  t.g.pad_w = g.dilation_w * (g.kernel_w - 1) - g.pad_w;
  t.g.out_h = g.in_h;
  t.g.out_w = g.in_w;
  return t;
}

// Kernel rows (or columns) `first`, first - step, ... (`count` of them):
// all of a kernel's taps turned around, or those of one phase.
struct TapRange {
  int64_t first = 0, count = 0, step = 1;
  int64_t operator[](int64_t t) const { return first - t * step; }
};

// wt [groups C, M / groups, rows.count, cols.count], group by group:
// wt[c, o][a, b] = w[o, c][rows[a], cols[b]].
template <typename T>
void GatherFilterTaps(const ConvLayout& l, const T* w, const TapRange& rows,
                      const TapRange& cols, T* wt) {
  const int64_t taps = l.g.kernel_h * l.g.kernel_w;
  const int64_t cg = l.g.channels, mg = l.group_filters;
  const int64_t kh = rows.count, kw = cols.count;
  for (int64_t gi = 0; gi < l.groups; ++gi)
    for (int64_t o = 0; o < mg; ++o)
      for (int64_t c = 0; c < cg; ++c) {
        const T* src = w + ((gi * mg + o) * cg + c) * taps;
        T* dst = wt + ((gi * cg + c) * mg + o) * kh * kw;
        for (int64_t a = 0; a < kh; ++a)
          for (int64_t b = 0; b < kw; ++b)
            dst[a * kw + b] = src[rows[a] * l.g.kernel_w + cols[b]];
      }
}

// wt [C, M / groups, kh, kw], group by group: wt[c, o] = w[o, c] turned by
// 180 degrees (its taps in reverse order).
template <typename T>
void TurnFilters(const ConvLayout& l, const T* w, T* wt) {
  GatherFilterTaps(l, w, TapRange{l.g.kernel_h - 1, l.g.kernel_h, 1},
                   TapRange{l.g.kernel_w - 1, l.g.kernel_w, 1}, wt);
}

// dy [nb, M, P] viewed as [M, nb * P] (itself for one image).
template <typename T>
const T* GatherOutputGrad(const T* dy, int64_t m, int64_t p, int64_t nb) {
  if (nb == 1) return dy;
  const int64_t ld = nb * p;
  T* t = ThreadScratch<T>(kScratchTmp, m * ld);
  for (int64_t j = 0; j < nb; ++j)
    for (int64_t o = 0; o < m; ++o)
      std::copy_n(dy + (j * m + o) * p, p, t + o * ld + j * p);
  return t;
}

// col [K, nb P] (rows `ld` apart) = the column matrices of `nb` images,
// `image` elements apart.
template <typename T>
void UnfoldImages(const ConvGeometry& g, const T* x, int64_t image, int64_t nb,
                  int64_t ld, T* col) {
  if (math::PackedConvApplies(g)) {
    T* scratch = ThreadScratch<T>(kScratchMasks,
                                  math::MaskedIm2ColScratchSize<T>(g, nb));
    math::MaskedIm2Col(g, x, image, nb, ld, col, scratch);
    return;
  }
  for (int64_t j = 0; j < nb; ++j)
    math::Im2Col(g, x + j * image, ld, col + j * g.ColCols());
}

// Gradients for `nb` consecutive images: dx [nb, C, H, W] (overwritten) and
// dw [M, C / groups kh kw] (this chunk's contribution added when
// `accumulate`, else written); either may be null. One group of channels at
// a time.
template <typename T>
void BackwardChunk(const CPUDeviceContext& gemm_dev, const ConvLayout& l,
                   const T* w, const T* x, const T* dy, int64_t nb, T* dx,
                   T* dw, bool accumulate) {
  const ConvGeometry& g = l.g;
  const int64_t k = g.ColRows(), p = g.ColCols(), mg = l.group_filters;
  const int64_t ld = nb * p;
  const bool direct = nb == 1 && g.IsPointwise();
  const T* dyt = GatherOutputGrad(dy, mg * l.groups, p, nb);
  for (int64_t gi = 0; gi < l.groups; ++gi) {
    const T* dytg = dyt + gi * mg * ld;
    const T* wg = w + gi * mg * k;
    const int64_t offset = gi * g.InputSize();
    if (dw != nullptr) {
      const T* col = x + offset;
      if (!direct) {
        T* c = ThreadScratch<T>(kScratchCol, k * ld);
        UnfoldImages(g, x + offset, l.image, nb, ld, c);
        col = c;
      }
      // dW_g [mg, K] = dY_g [mg, nb P] * col [K, nb P]^T
      math::Gemm<T>(gemm_dev, false, true, mg, k, ld, T(1), dytg, col,
                    accumulate ? T(1) : T(0), dw + gi * mg * k);
    }
    if (dx == nullptr) continue;
    if (direct) {
      math::Gemm<T>(gemm_dev, true, false, k, p, mg, T(1), wg, dytg, T(0),
                    dx + offset);
      continue;
    }
    // dcol [K, nb P] = W_g [mg, K]^T * dY_g [mg, nb P]; reuses the column
    // buffer.
    T* dcol = ThreadScratch<T>(kScratchCol, k * ld);
    math::Gemm<T>(gemm_dev, true, false, k, ld, mg, T(1), wg, dytg, T(0), dcol);
    for (int64_t j = 0; j < nb; ++j)
      math::Col2ImScratch(g, dcol + j * p, ld, dx + offset + j * l.image);
  }
}

// The input gradient of a strided convolution, phase by phase. Input row
// s a + py receives from output row oh through kernel row i exactly when
// i - pad = s (a - oh) + py, so each phase (py, px) of dX (rows py, py + s,
// ...; columns likewise) is a unit-stride convolution of dY by the kernel
// taps of that phase, turned: a phase plane of ceil((H - py) / s) rows
// reading dY rows a + o, where the taps' offsets o are consecutive for
// dilation 1. That runs on the packed path; the plane is then spread into
// dX's phase, and phases no tap reaches (a 1x1 kernel's odd rows) get
// zeros. This replaces a GEMM into a column matrix kh kw times dX's size and
// its col2im. It needs phase rows as wide as dY's (W a multiple of s_w,
// Wo = W / s_w), which makes every phase's sweep one the packed path takes.
//
// The taps of phase `phase` along an axis (dilation 1): kernel rows i with
// i - pad = stride q + phase, last first (their offsets into dY, -q, then
// rise by one), and the padding of that sub-kernel (its first tap's q).
struct PhaseTaps {
  TapRange taps;
  int64_t pad = 0;
};

PhaseTaps TapsOfPhase(int64_t kernel, int64_t pad, int64_t stride,
                      int64_t phase) {
  PhaseTaps p;
  // The last kernel row of the phase: (i - pad - phase) a multiple of
  // stride.
  const int64_t last =
      kernel - 1 - (((kernel - 1 - pad - phase) % stride) + stride) % stride;
  if (last < 0) return p;
  p.taps = TapRange{last, last / stride + 1, stride};
  p.pad = FloorDiv(last - pad, stride);
  return p;
}

// The sweep of phase (py, px) for the taps `rows` and `cols`, or false
// where the phased gradient does not apply.
bool PhaseLayout(const ConvLayout& l, int64_t py, int64_t px,
                 const PhaseTaps& rows, const PhaseTaps& cols, ConvLayout* t) {
  const ConvGeometry& g = l.g;
  *t = OverOutputGrad(l);
  t->g.kernel_h = rows.taps.count;
  t->g.kernel_w = cols.taps.count;
  t->g.pad_h = rows.pad;
  t->g.pad_w = cols.pad;
  t->g.stride_h = t->g.stride_w = 1;
  t->g.dilation_h = t->g.dilation_w = 1;
  t->g.out_h = CeilDiv(g.in_h - py, g.stride_h);
  t->g.out_w = CeilDiv(g.in_w - px, g.stride_w);
  return rows.pad >= 0 && rows.pad < t->g.kernel_h && cols.pad >= 0 &&
         cols.pad < t->g.kernel_w && t->g.out_w == g.out_w;
}

bool PhasedInputGradApplies(const CPUDeviceContext& dev, const ConvLayout& l,
                            int64_t n) {
  const ConvGeometry& g = l.g;
  if (g.stride_h * g.stride_w == 1 ||
      g.stride_h * g.stride_w > math::kMaxConvPhases || g.dilation_h != 1 ||
      g.dilation_w != 1 || g.in_w % g.stride_w != 0 ||
      g.out_w != g.in_w / g.stride_w)
    return false;
  for (int64_t py = 0; py < g.stride_h; ++py)
    for (int64_t px = 0; px < g.stride_w; ++px) {
      const PhaseTaps rows = TapsOfPhase(g.kernel_h, g.pad_h, g.stride_h, py);
      const PhaseTaps cols = TapsOfPhase(g.kernel_w, g.pad_w, g.stride_w, px);
      if (rows.taps.count == 0 || cols.taps.count == 0) continue;
      ConvLayout t;
      if (!PhaseLayout(l, py, px, rows, cols, &t) || !PackedUsable(dev, t.g, n))
        return false;
    }
  return true;
}

// row[b s + px] = src[px][b] for b < pw and px < s: one row of dX from its
// phases' rows.
template <typename T>
void SpreadRow(const T* const* src, int64_t s, int64_t pw, T* row) {
  if (s == 2) {
    // The common stride, interleaved with a constant step so that it
    // vectorises.
    const T* s0 = src[0];
    const T* s1 = src[1];
    for (int64_t b = 0; b < pw; ++b) {
      row[2 * b] = s0[b];
      row[2 * b + 1] = s1[b];
    }
    return;
  }
  for (int64_t px = 0; px < s; ++px)
    for (int64_t b = 0; b < pw; ++b) row[b * s + px] = src[px][b];
}

// dx [n, C, H, W] = the input gradient of `l` for dy, phase by phase
// (PhasedInputGradApplies): every phase's plane first, then one pass over
// dX that interleaves them row by row.
template <typename T>
void PhasedInputGrad(const CPUDeviceContext& dev, const ConvLayout& l,
                     const T* w, const T* dy, int64_t n, T* dx) {
  const ConvGeometry& g = l.g;
  const int64_t planes = n * l.groups * g.channels;
  const int64_t sh = g.stride_h, sw = g.stride_w;
  // Phase planes are at most ceil(H / s_h) rows of W / s_w (W splits
  // evenly).
  const int64_t pw = g.in_w / sw, plane_size = CeilDiv(g.in_h, sh) * pw;
  T* phases = ThreadScratch<T>(kScratchTmp, sh * sw * planes * plane_size);
  // phase[py s_w + px]: that phase's planes, or null where no tap reaches it
  // (zeros: every row reads `zeros`).
  const T* phase[math::kMaxConvPhases] = {};
  T* zeros = ThreadScratch<T>(kScratchMasks, pw);
  std::fill_n(zeros, pw, T(0));
  for (int64_t py = 0; py < sh; ++py)
    for (int64_t px = 0; px < sw; ++px) {
      const PhaseTaps rows = TapsOfPhase(g.kernel_h, g.pad_h, sh, py);
      const PhaseTaps cols = TapsOfPhase(g.kernel_w, g.pad_w, sw, px);
      if (rows.taps.count == 0 || cols.taps.count == 0) continue;
      ConvLayout t;
      PhaseLayout(l, py, px, rows, cols, &t);
      T* wt = ThreadScratch<T>(kScratchFilter, l.groups * g.channels *
                                                   l.group_filters *
                                                   t.g.kernel_h * t.g.kernel_w);
      GatherFilterTaps(l, w, rows.taps, cols.taps, wt);
      // Planes of this phase are ph pw apart: PackedForward's output.
      T* plane = phases + (py * sw + px) * planes * plane_size;
      // Chains of M / groups products before each addition into the
      // output, as the GEMM + col2im path summed: with the packed path's
      // chains of up to 192, float dX was 30% further from double (rms,
      // resnet's 32->64 /2 layer).
      PackedForward(dev, t, wt, dy, n, plane, t.g.channels);
      phase[py * sw + px] = plane;
    }
  ParallelFor(
      dev, planes, 2.0 * g.in_h * g.in_w, [&](int64_t begin, int64_t end) {
        for (int64_t q = begin; q < end; ++q)
          for (int64_t py = 0; py < sh; ++py) {
            // Rows py, py + s_h, ... of dX: row a of phase row py.
            const int64_t ph = CeilDiv(g.in_h - py, sh);
            const T* src[math::kMaxConvPhases];
            for (int64_t a = 0; a < ph; ++a) {
              for (int64_t px = 0; px < sw; ++px) {
                const T* p = phase[py * sw + px];
                src[px] = p ? p + (q * ph + a) * pw : zeros;
              }
              SpreadRow(src, sw, pw, dx + (q * g.in_h + a * sh + py) * g.in_w);
            }
          }
      });
}

// dw = the filter gradient of `n` images on the packed path's direct kernel
// (math::PackedFilterGrad), without a column matrix; false (and nothing
// done) where that does not apply. The images go in one contiguous run per
// thread, each summed into its own partial (the first straight into dW),
// and the partials are added in order: the same bits whichever thread ran
// which run, for a given thread count.
template <typename T>
bool PackedFilterGrad(const CPUDeviceContext& dev, const ConvLayout& l,
                      const T* x, const T* dy, int64_t n, T* dw) {
  const math::PackedConvShape s = PackedShape(l);
  if (!math::PackedFilterGradApplies<T>(s)) return false;
  const int64_t size = l.groups * l.group_filters * l.g.ColRows();
  const int64_t out_size = l.groups * l.group_filters * l.g.ColCols();
  // Runs of `per` images, none empty.
  const int64_t per = CeilDiv(n, std::min<int64_t>(n, dev.num_threads()));
  const int64_t runs = CeilDiv(n, per);
  const int64_t scratch = math::PackedFilterGradScratchSize<T>(s, per);
  RunsIntoPartials(dev, runs, 2.0 * size * l.g.ColCols() * per, size, dw,
                   [&](int64_t r, T* run_dw) {
                     const int64_t i0 = r * per, nb = std::min(per, n - i0);
                     math::PackedFilterGrad(
                         s, x + i0 * l.image, dy + i0 * out_size, nb,
                         ThreadScratch<T>(kScratchCol, scratch), run_dw, false);
                   });
  return true;
}

// dx [n, C, H, W] and dw [M, C / groups, kh, kw] (either may be null) for
// the output gradient dy [n, M, Ho, Wo] of the convolution `l` of x by w.
template <typename T>
void ConvBackward(const CPUDeviceContext& dev, const ConvLayout& l, int64_t n,
                  int64_t m, const T* xd, const T* wd, const T* dyd, T* dxd,
                  T* dwd) {
  const ConvGeometry& g = l.g;
  const int64_t k = g.ColRows();
  const int64_t in_size = l.image, out_size = m * g.ColCols();
  if (dxd != nullptr && InputGradIsConv(g) &&
      PackedUsable(dev, InputGradLayout(l).g, n)) {
    T* wt = ThreadScratch<T>(kScratchFilter, m * k);
    TurnFilters(l, wd, wt);
    PackedForward(dev, InputGradLayout(l), wt, dyd, n, dxd);
    if (dwd == nullptr) return;
    dxd = nullptr;  // the chunks below compute dW only
  }
  if (dxd != nullptr && PhasedInputGradApplies(dev, l, n)) {
    PhasedInputGrad(dev, l, wd, dyd, n, dxd);
    if (dwd == nullptr) return;
    dxd = nullptr;
  }
  if (dwd != nullptr && dxd == nullptr && n > 0 &&
      PackedFilterGrad(dev, l, xd, dyd, n, dwd))
    return;
  ChunkPlan plan = PlanChunks(dev, g, n);
  if (plan.chunks == 0) {
    if (dwd != nullptr) std::fill_n(dwd, m * k, T(0));
    return;
  }
  if (plan.chunks == 1) {
    BackwardChunk(dev, l, wd, xd, dyd, n, dxd, dwd, false);
    return;
  }
  // The chunks go in contiguous runs, a few per thread (for balance); a run
  // adds its chunks' dW in order into its own partial.
  const int threads = dev.num_threads();
  const int64_t runs =
      threads > 1 ? std::min<int64_t>(plan.chunks, 4 * threads) : 1;
  double cost = 4.0 * m * k * g.ColCols() * plan.per * plan.chunks / runs;
  RunsIntoPartials(dev, runs, cost, m * k, dwd, [&](int64_t r, T* run_dw) {
    for (int64_t c = r * plan.chunks / runs; c < (r + 1) * plan.chunks / runs;
         ++c) {
      int64_t i0 = c * plan.per;
      int64_t nb = std::min(plan.per, n - i0);
      BackwardChunk(SerialDevice(), l, wd, xd + i0 * in_size,
                    dyd + i0 * out_size, nb, dxd ? dxd + i0 * in_size : nullptr,
                    run_dw, c != r * plan.chunks / runs);
    }
  });
}

template <typename T>
void Conv2dGradKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  const Tensor& dy = ctx.Input(GradSlot("Output"));
  Tensor* dx = ctx.Output(GradSlot("Input"));
  Tensor* dw = ctx.Output(GradSlot("Filter"));
  if (dx == nullptr && dw == nullptr) return;
  const ConvLayout l = MakeLayout(ctx, "conv2d_grad");
  ConvBackward(ctx.device(), l, x.shape()[0], w.shape()[0], x.data<T>(),
               w.data<T>(), dy.data<T>(), dx ? dx->mutable_data<T>() : nullptr,
               dw ? dw->mutable_data<T>() : nullptr);
}

// The convolution `l` of `n` images in math::ConvDims' terms.
math::ConvDims DnnlDims(const ConvLayout& l, int64_t n) {
  const ConvGeometry& g = l.g;
  math::ConvDims d;
  d.n = n;
  d.c = g.channels * l.groups;
  d.h = g.in_h;
  d.w = g.in_w;
  d.m = l.group_filters * l.groups;
  d.kh = g.kernel_h;
  d.kw = g.kernel_w;
  d.oh = g.out_h;
  d.ow = g.out_w;
  d.stride_h = g.stride_h;
  d.stride_w = g.stride_w;
  d.pad_h = g.pad_h;
  d.pad_w = g.pad_w;
  d.dilation_h = g.dilation_h;
  d.dilation_w = g.dilation_w;
  d.groups = l.groups;
  return d;
}

// conv2d for 16-bit T: on oneDNN, or else in float32 (the operands
// converted, the float32 kernel's ConvForward, the output rounded once).
template <typename T>
void Conv2dHalfKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  Tensor* out = ctx.Output("Output");
  const ConvLayout l = MakeLayout(ctx, "conv2d");
  const CPUDeviceContext& dev = ctx.device();
  const int64_t n = x.shape()[0];
  T* y = out->mutable_data<T>();
  if (math::DnnlConvForward<T>(dev, DnnlDims(l, n), x.data<T>(), w.data<T>(),
                               y))
    return;
  const float* xf = FloatCopy(dev, kHalfIn0, x.data<T>(), x.numel());
  const float* wf = FloatCopy(dev, kHalfIn1, w.data<T>(), w.numel());
  float* yf = HalfScratch(kHalfOut0, out->numel());
  ConvForward(dev, l, wf, xf, n, yf);
  RoundInto(dev, yf, out->numel(), y);
}

// conv2d_grad for 16-bit T: on oneDNN (the filter gradient summed in
// float32), or else in float32 as Conv2dHalfKernel.
template <typename T>
void Conv2dGradHalfKernel(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("Input");
  const Tensor& w = ctx.Input("Filter");
  const Tensor& dy = ctx.Input(GradSlot("Output"));
  Tensor* dx = ctx.Output(GradSlot("Input"));
  Tensor* dw = ctx.Output(GradSlot("Filter"));
  if (dx == nullptr && dw == nullptr) return;
  const ConvLayout l = MakeLayout(ctx, "conv2d_grad");
  const CPUDeviceContext& dev = ctx.device();
  const int64_t n = x.shape()[0];
  T* dxd = dx ? dx->mutable_data<T>() : nullptr;
  T* dwd = dw ? dw->mutable_data<T>() : nullptr;
  if (math::DnnlConvBackward<T>(dev, DnnlDims(l, n), x.data<T>(), w.data<T>(),
                                dy.data<T>(), dxd, dwd))
    return;
  const float* xf = FloatCopy(dev, kHalfIn0, x.data<T>(), x.numel());
  const float* wf = FloatCopy(dev, kHalfIn1, w.data<T>(), w.numel());
  const float* dyf = FloatCopy(dev, kHalfIn2, dy.data<T>(), dy.numel());
  float* dxf = dxd ? HalfScratch(kHalfOut0, x.numel()) : nullptr;
  float* dwf = dwd ? HalfScratch(kHalfOut1, w.numel()) : nullptr;
  ConvBackward(dev, l, n, w.shape()[0], xf, wf, dyf, dxf, dwf);
  if (dxd != nullptr) RoundInto(dev, dxf, x.numel(), dxd);
  if (dwd != nullptr) RoundInto(dev, dwf, w.numel(), dwd);
}

}  // namespace

REGISTER_OP(conv2d)
    .Doc(
        "2-D convolution (cross-correlation) of NCHW images: Output[n, m] "
        "= sum over c of Input[n, c] * Filter[m, c]; with groups, filter m "
        "sees only the channels of its group. No bias.")
    .Input("Input", "images [N, C, H, W]")
    .Input("Filter", "filter bank [M, C / groups, kh, kw]")
    .Output("Output",
            "[N, M, Ho, Wo], Ho = (H + 2 pad_h - (dilation_h "
            "(kh - 1) + 1)) / stride_h + 1, likewise Wo")
    .Attr<std::vector<int32_t>>("strides", {1, 1}, "window step [h, w]")
    .Attr<std::vector<int32_t>>("paddings", {0, 0},
                                "zero padding on each side [h, w]")
    .Attr<std::vector<int32_t>>("dilations", {1, 1},
                                "spacing of the kernel taps [h, w]")
    .Attr<int32_t>("groups", 1,
                   "channel groups: C and M are cut into `groups` "
                   "parts, filter part g convolves channel part g")
    .SetInferShape(Conv2dInferShape)
    .SetGrad(GradSpec("conv2d_grad")
                 .Inputs({"Input", "Filter"})
                 .OutGrads({"Output"})
                 .InGrads({"Input", "Filter"}))
    .CPUKernel<float>(Conv2dKernel<float>)
    .CPUKernel<double>(Conv2dKernel<double>)
    .CPUKernel<bfloat16>(Conv2dHalfKernel<bfloat16>)
    .CPUKernel<float16>(Conv2dHalfKernel<float16>);

REGISTER_GRAD_OP(conv2d_grad)
    .Doc(
        "Gradients of conv2d with respect to Input (col2im of W^T dOut) and "
        "Filter (dOut times the column matrix).")
    .SetInferShape(Conv2dGradInferShape)
    .CPUKernel<float>(Conv2dGradKernel<float>)
    .CPUKernel<double>(Conv2dGradKernel<double>)
    .CPUKernel<bfloat16>(Conv2dGradHalfKernel<bfloat16>)
    .CPUKernel<float16>(Conv2dGradHalfKernel<float16>);

}  // namespace ops
}  // namespace fluid
