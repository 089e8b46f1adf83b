// pool2d: max or average pooling over NCHW images.
//
// Windows are clipped to the image, so padding never wins a max and, with
// `exclusive`, never counts in an average. Each (image, channel) plane is
// independent, so the kernels split the planes over the thread pool. Within
// a plane, windows that need no clipping take a tight path (2x2 and 3x3
// unrolled), and the max-pool gradient over windows that tile the plane
// (stride = window, no padding: LeNet's 2x2 / 2) writes dx in one pass.
// The max-pool gradient recomputes each window's first maximum from X
// instead of storing indices in the forward pass. bfloat16 and float16
// planes are pooled in float (the float32 kernel's code) and rounded once.
#include <algorithm>
#include <string>
#include <vector>

#include "ops/half_cpu.h"
#include "ops/op_helpers.h"
#include "ops/pool_geometry.h"
#include "src/framework/math/im2col.h"
#include "src/framework/math/int_math.h"

namespace fluid {
namespace ops {

PoolArgs ReadPoolArgs(const ExecutionContext& ctx) {
  const Tensor& x = ctx.Input("X");
  const PoolAttrs a = ReadPoolAttrs(ctx, ctx.type());
  const math::ConvGeometry g = MakeGeometry(a, x.shape());
  return {x, a, g, x.shape()[0] * g.channels};
}

namespace {

using math::ConvGeometry;

// Checks X and the attrs and returns Out's shape (-1 where unknown).
Shape PoolOutputShape(const InferShapeContext& ctx, const std::string& op) {
  const std::string& xn = ctx.InputName("X");
  Shape x = ctx.GetInputShape("X");
  FLUID_ENFORCE(x.rank() == 4, op, ": X '", xn,
                "' must be 4-D [N, C, H, W], got ", x);
  PoolAttrs a = ReadPoolAttrs(ctx, op);
  if (a.global) return Shape{x[0], x[1], 1, 1};
  auto out_dim = [&](int64_t in, int64_t k, int64_t s, int64_t p,
                     const char* what) -> int64_t {
    if (in < 0) return -1;
    int64_t o = PoolOutputSize(in, k, s, p, a.ceil_mode);
    FLUID_ENFORCE(o >= 1, op, ": X '", xn, "' ", x, " is too small along ",
                  what, " for ksize ", k, " with padding ", p);
    return o;
  };
  return Shape{x[0], x[1],
               out_dim(x[2], a.kernel_h, a.stride_h, a.pad_h, "the height"),
               out_dim(x[3], a.kernel_w, a.stride_w, a.pad_w, "the width")};
}

void Pool2dInferShape(InferShapeContext* ctx) {
  ctx->SetOutputShape("Out", PoolOutputShape(*ctx, "pool2d"));
  ctx->SetOutputDtype("Out", ctx->GetInputDtype("X"));
}

void Pool2dGradInferShape(InferShapeContext* ctx) {
  Shape want = PoolOutputShape(*ctx, "pool2d_grad");
  Shape got = ctx->GetInputShape(GradSlot("Out"));
  FLUID_ENFORCE(ShapesCompatible(want, got), "pool2d_grad: Out@GRAD '",
                ctx->InputName(GradSlot("Out")), "' has shape ", got,
                " but X '", ctx->InputName("X"), "' pools to ", want);
  ctx->ShareShape("X", GradSlot("X"));
}

// The window of output (oh, ow), clipped to the image: rows [h0, h1),
// columns [w0, w1).
struct Window {
  int64_t h0, h1, w0, w1;
};

inline Window WindowAt(const ConvGeometry& g, int64_t oh, int64_t ow) {
  int64_t h0 = oh * g.stride_h - g.pad_h;
  int64_t w0 = ow * g.stride_w - g.pad_w;
  return {std::max<int64_t>(h0, 0), std::min(h0 + g.kernel_h, g.in_h),
          std::max<int64_t>(w0, 0), std::min(w0 + g.kernel_w, g.in_w)};
}

// The output columns [lo, hi) whose windows need no clipping left or right.
void InteriorColumns(const ConvGeometry& g, int64_t* lo, int64_t* hi) {
  int64_t l = CeilDiv(g.pad_w, g.stride_w);
  int64_t span = g.in_w + g.pad_w - g.kernel_w;
  int64_t h = span >= 0 ? span / g.stride_w + 1 : 0;
  l = std::min(l, g.out_w);
  *lo = l;
  *hi = std::max(l, std::min(h, g.out_w));
}

// The first maximum of window `win` in plane `x`: ties go to the earliest
// element in row-major order. Branch-free: which element wins is
// data-dependent, and a branch on it would mispredict.
template <typename T>
inline int64_t ArgMax(const T* x, int64_t width, const Window& win) {
  int64_t best = win.h0 * width + win.w0;
  T best_v = x[best];
  for (int64_t h = win.h0; h < win.h1; ++h) {
    for (int64_t w = win.w0; w < win.w1; ++w) {
      const int64_t i = h * width + w;
      const T v = x[i];
      const int64_t take = -static_cast<int64_t>(v > best_v);
      best = (i & take) | (best & ~take);
      best_v = v > best_v ? v : best_v;
    }
  }
  return best;
}

template <typename T>
inline T WindowSum(const T* x, int64_t width, const Window& win) {
  T sum = 0;
  for (int64_t h = win.h0; h < win.h1; ++h)
    for (int64_t w = win.w0; w < win.w1; ++w) sum += x[h * width + w];
  return sum;
}

// The count an average over `win` (output (oh, ow)) divides by.
template <typename T>
inline T Count(const ConvGeometry& g, bool exclusive, const Window& win,
               int64_t oh, int64_t ow) {
  return static_cast<T>(exclusive ? (win.h1 - win.h0) * (win.w1 - win.w0)
                                  : PaddedWindowArea(g, oh, ow));
}

// Interior windows, whole and unclipped: the taps of output column ow are
// p[i * width + j], i < kh, j < kw, with p = x + h0 * width + ow * sw - pad_w.
// KH and KW fix the window at compile time (0: read it from g), so the
// common 2x2 and 3x3 windows become straight-line code. Taps go in row-major
// order, as in ArgMax and WindowSum, so every path agrees to the bit.
template <typename T, bool kMax, int KH, int KW>
void PoolInterior(const ConvGeometry& g, T count, const T* x, int64_t h0,
                  int64_t lo, int64_t hi, T* yr) {
  const int64_t kh = KH ? KH : g.kernel_h, kw = KW ? KW : g.kernel_w;
  const int64_t width = g.in_w, sw = g.stride_w;
  const T* row = x + h0 * width - g.pad_w;
  for (int64_t ow = lo; ow < hi; ++ow) {
    const T* p = row + ow * sw;
    if (kMax) {
      T m = p[0];
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          const T v = p[i * width + j];
          m = v > m ? v : m;
        }
      yr[ow] = m;
    } else {
      T sum = 0;
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) sum += p[i * width + j];
      yr[ow] = sum / count;
    }
  }
}

template <typename T, bool kMax, int KH, int KW>
void PoolInteriorGrad(const ConvGeometry& g, T count, const T* x, const T* dyr,
                      int64_t h0, int64_t lo, int64_t hi, T* dx) {
  const int64_t kh = KH ? KH : g.kernel_h, kw = KW ? KW : g.kernel_w;
  const int64_t width = g.in_w, sw = g.stride_w;
  const int64_t row = h0 * width - g.pad_w;
  for (int64_t ow = lo; ow < hi; ++ow) {
    const int64_t base = row + ow * sw;
    if (kMax) {
      const T* p = x + base;
      int64_t best = 0;
      T m = p[0];
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          const T v = p[i * width + j];
          // A mask rather than a select: the compiler turns the select into
          // a branch, which mispredicts on every other window.
          const int64_t take = -static_cast<int64_t>(v > m);
          m = v > m ? v : m;
          best = ((i * width + j) & take) | (best & ~take);
        }
      dx[base + best] += dyr[ow];
    } else {
      const T share = dyr[ow] / count;
      T* q = dx + base;
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) q[i * width + j] += share;
    }
  }
}

template <typename T, bool kMax>
void PoolRowInterior(const ConvGeometry& g, T count, const T* x, int64_t h0,
                     int64_t lo, int64_t hi, T* yr) {
  if (g.kernel_h == 2 && g.kernel_w == 2) {
    PoolInterior<T, kMax, 2, 2>(g, count, x, h0, lo, hi, yr);
  } else if (g.kernel_h == 3 && g.kernel_w == 3) {
    PoolInterior<T, kMax, 3, 3>(g, count, x, h0, lo, hi, yr);
  } else {
    PoolInterior<T, kMax, 0, 0>(g, count, x, h0, lo, hi, yr);
  }
}

template <typename T, bool kMax>
void PoolRowInteriorGrad(const ConvGeometry& g, T count, const T* x,
                         const T* dyr, int64_t h0, int64_t lo, int64_t hi,
                         T* dx) {
  if (g.kernel_h == 2 && g.kernel_w == 2) {
    PoolInteriorGrad<T, kMax, 2, 2>(g, count, x, dyr, h0, lo, hi, dx);
  } else if (g.kernel_h == 3 && g.kernel_w == 3) {
    PoolInteriorGrad<T, kMax, 3, 3>(g, count, x, dyr, h0, lo, hi, dx);
  } else {
    PoolInteriorGrad<T, kMax, 0, 0>(g, count, x, dyr, h0, lo, hi, dx);
  }
}

// Pools one [H, W] plane into one [Ho, Wo] plane: windows clipped by the
// padding one by one, unclipped ones by PoolInterior.
template <typename T, bool kMax>
void PoolPlane(const ConvGeometry& g, bool exclusive, const T* x, T* y) {
  const int64_t width = g.in_w, out_w = g.out_w;
  const T full = static_cast<T>(g.kernel_h * g.kernel_w);
  int64_t lo, hi;
  InteriorColumns(g, &lo, &hi);
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    T* yr = y + oh * out_w;
    const Window rows = WindowAt(g, oh, 0);
    const bool whole_rows = rows.h1 - rows.h0 == g.kernel_h;
    auto one = [&](int64_t ow) {
      const Window win = WindowAt(g, oh, ow);
      if (kMax) {
        yr[ow] = x[ArgMax(x, width, win)];
      } else {
        yr[ow] = WindowSum(x, width, win) / Count<T>(g, exclusive, win, oh, ow);
      }
    };
    if (!whole_rows) {
      for (int64_t ow = 0; ow < out_w; ++ow) one(ow);
      continue;
    }
    for (int64_t ow = 0; ow < lo; ++ow) one(ow);
    PoolRowInterior<T, kMax>(g, full, x, rows.h0, lo, hi, yr);
    for (int64_t ow = hi; ow < out_w; ++ow) one(ow);
  }
}

// Max-pooling gradient for windows that tile the plane (stride = window,
// no padding, e.g. LeNet's 2x2 / 2): each input pixel is in at most one
// window, so dx is written once, the gradient at each window's first max
// and 0 elsewhere, with no separate zeroing pass.
template <typename T, int KH, int KW>
void MaxGradTiled(const ConvGeometry& g, const T* x, const T* dy, T* dx) {
  const int64_t kh = KH ? KH : g.kernel_h, kw = KW ? KW : g.kernel_w;
  const int64_t width = g.in_w, out_w = g.out_w;
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const int64_t row = oh * kh * width;
    for (int64_t ow = 0; ow < out_w; ++ow) {
      const T* p = x + row + ow * kw;
      int64_t best = 0;
      T m = p[0];
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) {
          const T v = p[i * width + j];
          const int64_t take = -static_cast<int64_t>(v > m);
          m = v > m ? v : m;
          best = ((i * width + j) & take) | (best & ~take);
        }
      // Zero the window, then store at the max: a select per element would
      // compile to branches.
      T* q = dx + row + ow * kw;
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) q[i * width + j] = T(0);
      q[best] = dy[oh * out_w + ow];
    }
    // Columns right of the last window.
    for (int64_t i = 0; i < kh; ++i)
      std::fill(dx + row + i * width + out_w * kw, dx + row + (i + 1) * width,
                T(0));
  }
  // Rows below the last window.
  std::fill(dx + g.out_h * kh * width, dx + g.in_h * width, T(0));
}

// The gradient of PoolPlane: dx (overwritten) from dy.
template <typename T, bool kMax>
void PoolPlaneGrad(const ConvGeometry& g, bool exclusive, const T* x,
                   const T* dy, T* dx) {
  const int64_t width = g.in_w, out_w = g.out_w;
  const T full = static_cast<T>(g.kernel_h * g.kernel_w);
  // (Not when ceil_mode adds a last, partial window.)
  if (kMax && g.stride_h == g.kernel_h && g.stride_w == g.kernel_w &&
      g.pad_h == 0 && g.pad_w == 0 && g.out_h * g.kernel_h <= g.in_h &&
      g.out_w * g.kernel_w <= g.in_w) {
    if (g.kernel_h == 2 && g.kernel_w == 2) {
      MaxGradTiled<T, 2, 2>(g, x, dy, dx);
    } else {
      MaxGradTiled<T, 0, 0>(g, x, dy, dx);
    }
    return;
  }
  int64_t lo, hi;
  InteriorColumns(g, &lo, &hi);
  std::fill_n(dx, g.in_h * width, T(0));
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    const T* dyr = dy + oh * out_w;
    const Window rows = WindowAt(g, oh, 0);
    const bool whole_rows = rows.h1 - rows.h0 == g.kernel_h;
    auto one = [&](int64_t ow) {
      const Window win = WindowAt(g, oh, ow);
      if (kMax) {
        // Recomputed rather than stored: the same first maximum the
        // forward pass took.
        dx[ArgMax(x, width, win)] += dyr[ow];
        return;
      }
      const T share = dyr[ow] / Count<T>(g, exclusive, win, oh, ow);
      for (int64_t h = win.h0; h < win.h1; ++h)
        for (int64_t w = win.w0; w < win.w1; ++w) dx[h * width + w] += share;
    };
    if (!whole_rows) {
      for (int64_t ow = 0; ow < out_w; ++ow) one(ow);
      continue;
    }
    for (int64_t ow = 0; ow < lo; ++ow) one(ow);
    PoolRowInteriorGrad<T, kMax>(g, full, x, dyr, rows.h0, lo, hi, dx);
    for (int64_t ow = hi; ow < out_w; ++ow) one(ow);
  }
}

// pool2d of 16-bit X: each plane converted to float, pooled by the float
// kernel (sums in float), the result rounded once; a thread reuses its
// plane buffers.
template <typename T>
void HalfPool2dKernel(const ExecutionContext& ctx) {
  const PoolArgs p = ReadPoolArgs(ctx);
  const ConvGeometry& g = p.geometry;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const T* xd = p.x.data<T>();
  T* yd = ctx.Output("Out")->mutable_data<T>();
  const double cost = static_cast<double>(out_plane * g.kernel_h * g.kernel_w);
  ParallelFor(ctx.device(), p.planes, cost, [&](int64_t begin, int64_t end) {
    float* x = ThreadRow(0, in_plane);
    float* y = ThreadRow(1, out_plane);
    for (int64_t pl = begin; pl < end; ++pl) {
      ToFloats(xd + pl * in_plane, x, in_plane);
      if (p.attrs.is_max) {
        PoolPlane<float, true>(g, p.attrs.exclusive, x, y);
      } else {
        PoolPlane<float, false>(g, p.attrs.exclusive, x, y);
      }
      FromFloats(y, yd + pl * out_plane, out_plane);
    }
  });
}

// The gradient of HalfPool2dKernel: X and dOut converted per plane, dX
// accumulated in float and rounded once.
template <typename T>
void HalfPool2dGradKernel(const ExecutionContext& ctx, Tensor* dx) {
  const PoolArgs p = ReadPoolArgs(ctx);
  const ConvGeometry& g = p.geometry;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const T* xd = p.x.data<T>();
  const T* dyd = ctx.Input(GradSlot("Out")).data<T>();
  T* dxd = dx->mutable_data<T>();
  const double cost = static_cast<double>(out_plane * g.kernel_h * g.kernel_w);
  ParallelFor(ctx.device(), p.planes, cost, [&](int64_t begin, int64_t end) {
    float* x = ThreadRow(0, in_plane);
    float* dy = ThreadRow(1, out_plane);
    float* d = ThreadRow(2, in_plane);  // overwritten by PoolPlaneGrad
    for (int64_t pl = begin; pl < end; ++pl) {
      ToFloats(xd + pl * in_plane, x, in_plane);
      ToFloats(dyd + pl * out_plane, dy, out_plane);
      if (p.attrs.is_max) {
        PoolPlaneGrad<float, true>(g, p.attrs.exclusive, x, dy, d);
      } else {
        PoolPlaneGrad<float, false>(g, p.attrs.exclusive, x, dy, d);
      }
      FromFloats(d, dxd + pl * in_plane, in_plane);
    }
  });
}

template <typename T>
void FloatPool2dKernel(const ExecutionContext& ctx) {
  const PoolArgs p = ReadPoolArgs(ctx);
  const PoolAttrs& a = p.attrs;
  const ConvGeometry& g = p.geometry;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const T* xd = p.x.data<T>();
  T* yd = ctx.Output("Out")->mutable_data<T>();
  const double cost = static_cast<double>(out_plane * g.kernel_h * g.kernel_w);
  ParallelFor(ctx.device(), p.planes, cost, [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      if (a.is_max) {
        PoolPlane<T, true>(g, a.exclusive, xd + pl * in_plane,
                           yd + pl * out_plane);
      } else {
        PoolPlane<T, false>(g, a.exclusive, xd + pl * in_plane,
                            yd + pl * out_plane);
      }
    }
  });
}

template <typename T>
void FloatPool2dGradKernel(const ExecutionContext& ctx, Tensor* dx) {
  const PoolArgs p = ReadPoolArgs(ctx);
  const PoolAttrs& a = p.attrs;
  const ConvGeometry& g = p.geometry;
  const int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
  const T* xd = p.x.data<T>();
  const T* dyd = ctx.Input(GradSlot("Out")).data<T>();
  T* dxd = dx->mutable_data<T>();
  const double cost = static_cast<double>(out_plane * g.kernel_h * g.kernel_w);
  ParallelFor(ctx.device(), p.planes, cost, [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      if (a.is_max) {
        PoolPlaneGrad<T, true>(g, a.exclusive, xd + pl * in_plane,
                               dyd + pl * out_plane, dxd + pl * in_plane);
      } else {
        PoolPlaneGrad<T, false>(g, a.exclusive, xd + pl * in_plane,
                                dyd + pl * out_plane, dxd + pl * in_plane);
      }
    }
  });
}

template <typename T>
void Pool2dKernel(const ExecutionContext& ctx) {
  if constexpr (IsHalfType<T>::value) {
    HalfPool2dKernel<T>(ctx);
  } else {
    FloatPool2dKernel<T>(ctx);
  }
}

template <typename T>
void Pool2dGradKernel(const ExecutionContext& ctx) {
  Tensor* dx = ctx.Output(GradSlot("X"));
  if (dx == nullptr) return;
  if constexpr (IsHalfType<T>::value) {
    HalfPool2dGradKernel<T>(ctx, dx);
  } else {
    FloatPool2dGradKernel<T>(ctx, dx);
  }
}

}  // namespace

REGISTER_OP(pool2d)
    .Doc(
        "2-D max or average pooling of NCHW images. Windows are clipped to "
        "the image: padding never wins a max; an average divides by the "
        "number of pixels inside the image (exclusive) or by kh * kw.")
    .Input("X", "images [N, C, H, W]")
    .Output("Out",
            "[N, C, Ho, Wo], Ho = (H + 2 pad_h - kh) / stride_h + 1 "
            "(rounded up with ceil_mode), likewise Wo; [N, C, 1, 1] with "
            "global_pooling")
    .Attr<std::string>("pooling_type", "max", "\"max\" or \"avg\"")
    .Attr<std::vector<int32_t>>("ksize", {2, 2}, "window size [kh, kw]")
    .Attr<std::vector<int32_t>>("strides", {1, 1}, "window step [h, w]")
    .Attr<std::vector<int32_t>>("paddings", {0, 0},
                                "padding on each side [h, w], < ksize")
    .Attr<bool>("global_pooling", false,
                "pool each whole plane (ksize, strides, paddings ignored)")
    .Attr<bool>("exclusive", true,
                "avg: divide by the pixels inside the image, not by the "
                "window's pixels inside the padded image (kh * kw unless "
                "ceil_mode cuts the last window)")
    .Attr<bool>("ceil_mode", false,
                "round the output size up: a last, partial window covers "
                "what the stride leaves over (never one starting in the "
                "right padding)")
    .SetInferShape(Pool2dInferShape)
    .SetGrad(GradSpec("pool2d_grad")
                 .Inputs({"X"})
                 .Outputs({"Out"})
                 .OutGrads({"Out"})
                 .InGrads({"X"}))
    .CPUKernel<float>(Pool2dKernel<float>)
    .CPUKernel<double>(Pool2dKernel<double>)
    .CPUKernel<bfloat16>(Pool2dKernel<bfloat16>)
    .CPUKernel<float16>(Pool2dKernel<float16>);

REGISTER_GRAD_OP(pool2d_grad)
    .Doc(
        "Gradient of pool2d: max routes each output gradient to the first "
        "maximum of its window (recomputed from X; the forward Out is not "
        "read on CPU); avg spreads it evenly.")
    .SetInferShape(Pool2dGradInferShape)
    .CPUKernel<float>(Pool2dGradKernel<float>)
    .CPUKernel<double>(Pool2dGradKernel<double>)
    .CPUKernel<bfloat16>(Pool2dGradKernel<bfloat16>)
    .CPUKernel<float16>(Pool2dGradKernel<float16>);

}  // namespace ops
}  // namespace fluid
