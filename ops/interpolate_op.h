// The sampling rule of bilinear_interp and nearest_interp (Fluid 1.x's
// image resize ops), shared by the CPU kernels (interpolate_op.cc) and the
// CUDA kernels (interpolate_op.cu), so that both take the same taps.
//
// Along each axis an output index k reads the input at a source position:
//   ratio = (in - 1) / (out - 1) with align_corners, else in / out
//           (0 for a one-pixel output);
//   bilinear, align_corners or align_mode 1: src = ratio k;
//   bilinear, neither (align_mode 0):        src = max(ratio (k + 1/2) - 1/2,
//   0); nearest, align_corners: round(ratio k) (halves up); else floor(ratio
//   k).
// Bilinear blends the input at lo = trunc(src) and hi = min(lo + 1, in - 1)
// with weights 1 - lambda and lambda, lambda = src - lo. Bilinear positions
// are computed in the kernel's type; nearest ones in float32, as Fluid (and
// PyTorch's nearest) computes them, so that the same pixel is picked.
#pragma once

#include <cstdint>

#include "ops/hostdevice.h"

namespace fluid {

class ExecutionContext;

namespace ops {

// The two input indices an output index blends and the weight of `hi`.
template <typename T>
struct LinearTap {
  int64_t lo, hi;
  T lambda;
};

template <typename T>
FLUID_HOSTDEVICE T InterpRatio(int64_t in, int64_t out, bool align_corners) {
  if (out <= 1) return T(0);
  return align_corners ? static_cast<T>(in - 1) / static_cast<T>(out - 1)
                       : static_cast<T>(in) / static_cast<T>(out);
}

// The bilinear tap of output index k; `half_pixel` is align_mode 0 without
// align_corners.
template <typename T>
FLUID_HOSTDEVICE LinearTap<T> BilinearTap(int64_t k, int64_t in, T ratio,
                                          bool half_pixel) {
  T src = half_pixel ? ratio * (static_cast<T>(k) + T(0.5)) - T(0.5)
                     : ratio * static_cast<T>(k);
  if (src < T(0)) src = T(0);
  LinearTap<T> t;
  t.lo = static_cast<int64_t>(src);
  if (t.lo > in - 1) t.lo = in - 1;
  t.hi = t.lo + 1 < in - 1 ? t.lo + 1 : in - 1;
  t.lambda = src - static_cast<T>(t.lo);
  return t;
}

// The input index nearest_interp reads for output index k.
FLUID_HOSTDEVICE int64_t NearestIndex(int64_t k, int64_t in, float ratio,
                                      bool align_corners) {
  const float src = ratio * static_cast<float>(k);
  int64_t i = static_cast<int64_t>(align_corners ? src + 0.5f : src);
  return i < in - 1 ? i : in - 1;
}

// One resize as the kernels see it: planes = N C images of in_h x in_w to
// out_h x out_w, and the rule's settings.
struct InterpShape {
  int64_t planes, in_h, in_w, out_h, out_w;
  bool align_corners, half_pixel;
};

// Sizes the kernel's Out (from OutSize's two values `out_size` read on the
// host, else scale or out_h / out_w) and returns the resize; an error names
// a size that is not positive.
InterpShape PrepareInterpOutput(const ExecutionContext& ctx,
                                const int32_t* out_size);
// The resize a grad kernel undoes: X's shape and Out@GRAD's plane.
InterpShape GradInterpShape(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
