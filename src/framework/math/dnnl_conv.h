// 2-D convolutions of 16-bit NCHW images on oneDNN (math/dnnl_context.h
// says when oneDNN is used): the forward product and both gradients,
// accumulated in float32 and rounded once to the images' type.
#pragma once

#include <cstdint>

#include "src/framework/device_context.h"

namespace fluid {
namespace math {

// Images [n, c, h, w], filters [m, c / groups, kh, kw], output
// [n, m, oh, ow]; the padding is the same on both sides of each axis, a
// dilation of 1 is a dense kernel.
struct ConvDims {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t m = 0, kh = 0, kw = 0, oh = 0, ow = 0;
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1, groups = 1;
};

// y = the convolution of x by w. Returns false, writing nothing, where
// oneDNN does not run it (not built, switched off, no implementation for T
// on this CPU, or an empty dim). T is bfloat16 or float16. Primitives are
// cached per shape and thread, as DnnlGemm's.
template <typename T>
bool DnnlConvForward(const CPUDeviceContext& dev, const ConvDims& d, const T* x,
                     const T* w, T* y);

// dx (the input gradient) and dw (the filter gradient, summed over the
// images in float32 and rounded once) for the output gradient dy; either
// may be null. Returns false, writing nothing, as DnnlConvForward.
template <typename T>
bool DnnlConvBackward(const CPUDeviceContext& dev, const ConvDims& d,
                      const T* x, const T* w, const T* dy, T* dx, T* dw);

}  // namespace math
}  // namespace fluid
