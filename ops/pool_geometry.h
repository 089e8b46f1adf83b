// The attrs and window geometry of pool2d, shared by its CPU kernels
// (pool2d_op.cc) and CUDA kernels (pool2d_op.cu). Free of Eigen so that
// nvcc can compile it.
#pragma once

#include <string>
#include <vector>

#include "ops/conv_geometry.h"
#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

struct PoolAttrs {
  bool is_max = true;
  bool global = false;
  bool exclusive = true;
  bool ceil_mode = false;
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0,
          pad_w = 0;
};

// Reads and checks the attrs; Ctx is InferShapeContext or ExecutionContext.
template <typename Ctx>
PoolAttrs ReadPoolAttrs(const Ctx& ctx, const std::string& op) {
  PoolAttrs a;
  const auto& type = ctx.template Attr<std::string>("pooling_type");
  FLUID_ENFORCE(type == "max" || type == "avg", op,
                ": pooling_type must be \"max\" or \"avg\", got \"", type,
                "\"");
  a.is_max = type == "max";
  a.global = ctx.template Attr<bool>("global_pooling");
  a.exclusive = ctx.template Attr<bool>("exclusive");
  a.ceil_mode = ctx.template Attr<bool>("ceil_mode");
  if (a.global) return a;  // the window is the whole image
  const auto& k = ctx.template Attr<std::vector<int32_t>>("ksize");
  const auto& s = ctx.template Attr<std::vector<int32_t>>("strides");
  const auto& p = ctx.template Attr<std::vector<int32_t>>("paddings");
  FLUID_ENFORCE(k.size() == 2 && k[0] > 0 && k[1] > 0, op,
                ": ksize must be two positive ints, got ", Ints(k));
  FLUID_ENFORCE(s.size() == 2 && s[0] > 0 && s[1] > 0, op,
                ": strides must be two positive ints, got ", Ints(s));
  FLUID_ENFORCE(
      p.size() == 2 && p[0] >= 0 && p[1] >= 0 && p[0] < k[0] && p[1] < k[1], op,
      ": paddings must be two non-negative ints smaller than "
      "ksize ",
      Ints(k), ", got ", Ints(p));
  a.kernel_h = k[0];
  a.kernel_w = k[1];
  a.stride_h = s[0];
  a.stride_w = s[1];
  a.pad_h = p[0];
  a.pad_w = p[1];
  return a;
}

// Output extent along one axis. Floor: windows that fit in the padded input.
// Ceil: one more window when the last stride leaves input uncovered, as long
// as that window starts inside the input or its left padding (PyTorch's
// rule; Fluid 1.x would also emit a window lying wholly in the right
// padding, an empty max and a division by zero in an exclusive average).
// Below 1 when the window does not fit even once.
inline int64_t PoolOutputSize(int64_t in, int64_t k, int64_t s, int64_t p,
                              bool ceil_mode) {
  const int64_t span = in + 2 * p - k;
  if (span < 0) return 0;
  if (!ceil_mode) return span / s + 1;
  int64_t out = (span + s - 1) / s + 1;
  if ((out - 1) * s >= in + p) --out;
  return out;
}

// The count a non-exclusive average of output (oh, ow) divides by: the
// window clipped to the padded input, so padding counts and the part of a
// ceil_mode window past the right padding does not (PyTorch's
// count_include_pad). kh * kw whenever ceil_mode is off.
FLUID_HOSTDEVICE int64_t PaddedWindowArea(const math::ConvGeometry& g,
                                          int64_t oh, int64_t ow) {
  const int64_t h0 = oh * g.stride_h - g.pad_h;
  const int64_t w0 = ow * g.stride_w - g.pad_w;
  const int64_t h1 = h0 + g.kernel_h, w1 = w0 + g.kernel_w;
  const int64_t hmax = g.in_h + g.pad_h, wmax = g.in_w + g.pad_w;
  return ((h1 < hmax ? h1 : hmax) - h0) * ((w1 < wmax ? w1 : wmax) - w0);
}

// The window sweep over images `x` [N, C, H, W]; a global pool is one
// window covering the whole plane.
inline math::ConvGeometry MakeGeometry(const PoolAttrs& a, const Shape& x) {
  math::ConvGeometry g;
  g.channels = x[1];
  g.in_h = x[2];
  g.in_w = x[3];
  if (a.global) {
    g.kernel_h = g.in_h;
    g.kernel_w = g.in_w;
    g.out_h = g.out_w = 1;
    return g;
  }
  g.kernel_h = a.kernel_h;
  g.kernel_w = a.kernel_w;
  g.stride_h = a.stride_h;
  g.stride_w = a.stride_w;
  g.pad_h = a.pad_h;
  g.pad_w = a.pad_w;
  g.out_h =
      PoolOutputSize(g.in_h, g.kernel_h, g.stride_h, g.pad_h, a.ceil_mode);
  g.out_w =
      PoolOutputSize(g.in_w, g.kernel_w, g.stride_w, g.pad_w, a.ceil_mode);
  return g;
}

// What the kernels of pool2d and pool2d_grad read: X, the attrs (checked,
// errors naming the kernel's op), the window sweep over X and the number of
// (image, channel) planes.
struct PoolArgs {
  const Tensor& x;
  PoolAttrs attrs;
  math::ConvGeometry geometry;
  int64_t planes;
};

// Defined in pool2d_op.cc.
PoolArgs ReadPoolArgs(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
