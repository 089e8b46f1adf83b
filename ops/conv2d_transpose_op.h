// The geometry of conv2d_transpose, shared by its CPU kernels
// (conv2d_transpose_op.cc) and CUDA kernels (conv2d_transpose_op.cu). Free
// of Eigen so that nvcc can compile it.
//
// conv2d_transpose of Input [N, C_in, H, W] by Filter [C_in, C_out / groups,
// kh, kw] is the input gradient of the conv2d that maps an image
// [N, C_out, Ho, Wo] to [N, C_in, H, W] by the same filter bank (conv2d's
// filters [M, C / groups, kh, kw] with M = C_in, C = C_out). So the layout
// below is that conv2d's: its sweep runs over the transpose's *output*
// planes, and its "output" plane is the transpose's input. The forward pass
// is that conv2d's col2im of W^T X, the input gradient its forward
// convolution of dY, the filter gradient its filter gradient with the roles
// of image and output gradient swapped.
#pragma once

#include <string>
#include <vector>

#include "ops/conv_geometry.h"

namespace fluid {
namespace ops {

// The transpose's output extent along one axis without output_size:
// (in - 1) stride - 2 pad + dilation (k - 1) + 1; the smallest extent whose
// conv2d sweep gives back `in`. The largest is that plus stride - 1.
inline int64_t TransposeOutputSize(int64_t in, int64_t kernel, int64_t stride,
                                   int64_t pad, int64_t dilation) {
  return (in - 1) * stride - 2 * pad + dilation * (kernel - 1) + 1;
}

// The conv2d behind conv2d_transpose of `in` [N, C_in, H, W] by `filter`
// [C_in, C_out / groups, kh, kw] giving planes of out_h x out_w.
inline ConvLayout TransposeLayout(const ConvAttrs& a, const Shape& in,
                                  const Shape& filter, int64_t out_h,
                                  int64_t out_w) {
  ConvLayout l;
  math::ConvGeometry& g = l.g;
  g.channels = filter[1];
  g.in_h = out_h;
  g.in_w = out_w;
  g.kernel_h = filter[2];
  g.kernel_w = filter[3];
  g.stride_h = a.stride_h;
  g.stride_w = a.stride_w;
  g.pad_h = a.pad_h;
  g.pad_w = a.pad_w;
  g.dilation_h = a.dilation_h;
  g.dilation_w = a.dilation_w;
  g.out_h = in[2];
  g.out_w = in[3];
  l.groups = a.groups;
  l.group_filters = filter[0] / a.groups;
  l.image = a.groups * g.InputSize();
  return l;
}

// The layout of a kernel's Input and Filter whose output planes are
// out_h x out_w (the Output's, or Output@GRAD's); Ctx is ExecutionContext.
template <typename Ctx>
ConvLayout MakeTransposeLayout(const Ctx& ctx, const std::string& op,
                               const Shape& out) {
  return TransposeLayout(ReadConvAttrs(ctx, op), ctx.Input("Input").shape(),
                         ctx.Input("Filter").shape(), out[2], out[3]);
}

}  // namespace ops
}  // namespace fluid
