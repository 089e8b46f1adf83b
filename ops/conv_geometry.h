// The window attrs, geometry and layout of conv2d, shared by its CPU
// kernels (conv2d_op.cc) and CUDA kernels (conv2d_op.cu). Free of Eigen so
// that nvcc can compile it.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "src/framework/enforce.h"
#include "src/framework/math/im2col.h"
#include "src/framework/types.h"

namespace fluid {
namespace ops {

// "[a, b]": attr lists in error messages.
inline std::string Ints(const std::vector<int32_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

struct ConvAttrs {
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  // Input channels and filters split into `groups` equal parts; part g of
  // the filters sees only part g of the channels.
  int64_t groups;
};

// Reads and checks the window attrs; Ctx is InferShapeContext or
// ExecutionContext.
template <typename Ctx>
ConvAttrs ReadConvAttrs(const Ctx& ctx, const std::string& op) {
  const auto& s = ctx.template Attr<std::vector<int32_t>>("strides");
  const auto& p = ctx.template Attr<std::vector<int32_t>>("paddings");
  const auto& d = ctx.template Attr<std::vector<int32_t>>("dilations");
  int32_t groups = ctx.template Attr<int32_t>("groups");
  FLUID_ENFORCE(s.size() == 2 && s[0] > 0 && s[1] > 0, op,
                ": strides must be two positive ints, got ", Ints(s));
  FLUID_ENFORCE(p.size() == 2 && p[0] >= 0 && p[1] >= 0, op,
                ": paddings must be two non-negative ints, got ", Ints(p));
  FLUID_ENFORCE(d.size() == 2 && d[0] > 0 && d[1] > 0, op,
                ": dilations must be two positive ints, got ", Ints(d));
  FLUID_ENFORCE(groups >= 1, op, ": groups must be positive, got ", groups);
  return {s[0], s[1], p[0], p[1], d[0], d[1], groups};
}

// The sweep of a filter `filter` [M, C / groups, kh, kw] over one group of
// channels of images `in` [N, C, H, W]: `channels` is C / groups, and an
// image is `groups` such inputs one after the other.
inline math::ConvGeometry MakeGeometry(const ConvAttrs& a, const Shape& in,
                                       const Shape& filter) {
  math::ConvGeometry g;
  g.channels = in[1] / a.groups;
  g.in_h = in[2];
  g.in_w = in[3];
  g.kernel_h = filter[2];
  g.kernel_w = filter[3];
  g.stride_h = a.stride_h;
  g.stride_w = a.stride_w;
  g.pad_h = a.pad_h;
  g.pad_w = a.pad_w;
  g.dilation_h = a.dilation_h;
  g.dilation_w = a.dilation_w;
  g.out_h = math::ConvOutputSize(g.in_h, g.kernel_h, g.stride_h, g.pad_h,
                                 g.dilation_h);
  g.out_w = math::ConvOutputSize(g.in_w, g.kernel_w, g.stride_w, g.pad_w,
                                 g.dilation_w);
  return g;
}

// A convolution as the kernels see it: the sweep over one group of
// channels, the number of groups, the filters of each group and the input
// elements of one whole image (every group).
struct ConvLayout {
  math::ConvGeometry g;
  int64_t groups, group_filters, image;
};

// The layout of the op's Input and Filter under its attrs; Ctx is
// ExecutionContext.
template <typename Ctx>
ConvLayout MakeLayout(const Ctx& ctx, const std::string& op) {
  const Shape& x = ctx.Input("Input").shape();
  const Shape& w = ctx.Input("Filter").shape();
  const ConvAttrs a = ReadConvAttrs(ctx, op);
  ConvLayout l;
  l.g = MakeGeometry(a, x, w);
  l.groups = a.groups;
  l.group_filters = w[0] / a.groups;
  l.image = a.groups * l.g.InputSize();
  return l;
}

// A convolution of dY giving (a phase of) dX for `l`: dY's M / groups
// channels of Ho x Wo in, C / groups filters out, the kernel, padding and
// output plane still to set.
inline ConvLayout OverOutputGrad(const ConvLayout& l) {
  ConvLayout t = l;
  t.g.channels = l.group_filters;
  t.g.in_h = l.g.out_h;
  t.g.in_w = l.g.out_w;
  t.group_filters = l.g.channels;
  t.image = l.groups * t.g.InputSize();
  return t;
}

}  // namespace ops
}  // namespace fluid
