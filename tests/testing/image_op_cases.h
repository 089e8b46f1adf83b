// What the CPU tests (tests/ops/) and CUDA tests (tests/gpu/) of
// conv2d_transpose, bilinear_interp and nearest_interp share: the case
// structs, how a case reads in a failure message and the op desc it builds,
// so that a case means the same on both places.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "src/framework/op_registry.h"
#include "src/framework/tensor.h"

namespace fluid {
namespace testing {

// ---- conv2d_transpose

// Input [n, c, h, w], Filter [c, m / groups, kh, kw]; Output has m
// channels. extra_h / extra_w > 0 ask for output_size that many rows and
// columns past the smallest output (each below the stride).
struct TransposeCase {
  int n, c, h, w, m, kh, kw;
  int stride_h, stride_w, pad_h, pad_w, dil_h = 1, dil_w = 1;
  int groups = 1;
  int extra_h = 0, extra_w = 0;

  int SmallestH() const {
    return (h - 1) * stride_h - 2 * pad_h + dil_h * (kh - 1) + 1;
  }
  int SmallestW() const {
    return (w - 1) * stride_w - 2 * pad_w + dil_w * (kw - 1) + 1;
  }
  int OutH() const { return SmallestH() + extra_h; }
  int OutW() const { return SmallestW() + extra_w; }
  Shape InputShape() const { return Shape{n, c, h, w}; }
  Shape FilterShape() const { return Shape{c, m / groups, kh, kw}; }
  Shape OutputShape() const { return Shape{n, m, OutH(), OutW()}; }
};

inline std::string Describe(const TransposeCase& k) {
  std::ostringstream os;
  os << "N" << k.n << " C" << k.c << " " << k.h << "x" << k.w << " M" << k.m
     << " k" << k.kh << "x" << k.kw << " s" << k.stride_h << "," << k.stride_w
     << " p" << k.pad_h << "," << k.pad_w << " d" << k.dil_h << "," << k.dil_w
     << " g" << k.groups << " out " << k.OutH() << "x" << k.OutW();
  return os.str();
}

// conv2d_transpose of Input `x` and Filter `w` into "y" with the case's
// attrs; output_size is set when the case asks for extra rows or columns
// (or `always_size`).
inline proto::OpDesc TransposeOp(const TransposeCase& k,
                                 const std::string& x = "x",
                                 const std::string& w = "w",
                                 bool always_size = false) {
  std::vector<int32_t> size;
  if (always_size || k.extra_h != 0 || k.extra_w != 0)
    size = {k.OutH(), k.OutW()};
  return MakeOp("conv2d_transpose", {{"Input", {x}}, {"Filter", {w}}},
                {{"Output", {"y"}}},
                {{"strides", std::vector<int32_t>{k.stride_h, k.stride_w}},
                 {"paddings", std::vector<int32_t>{k.pad_h, k.pad_w}},
                 {"dilations", std::vector<int32_t>{k.dil_h, k.dil_w}},
                 {"groups", int32_t{k.groups}},
                 {"output_size", size}});
}

// ---- bilinear_interp, nearest_interp

// X [n, c, h, w] resized to out_h x out_w (or by `scale` when > 0).
struct InterpCase {
  int n, c, h, w, out_h, out_w;
  bool align_corners = true;
  int align_mode = 1;
  float scale = 0;
};

inline std::string Describe(const InterpCase& k) {
  std::ostringstream os;
  os << "N" << k.n << " C" << k.c << " " << k.h << "x" << k.w << " -> "
     << k.out_h << "x" << k.out_w << " align_corners " << k.align_corners
     << " align_mode " << k.align_mode << " scale " << k.scale;
  return os.str();
}

// The attrs of `type` (bilinear_interp or nearest_interp) for a case.
inline AttributeMap InterpAttrs(const std::string& type, const InterpCase& k,
                                const std::string& layout = "NCHW") {
  return {{"out_h", int32_t{k.out_h}},
          {"out_w", int32_t{k.out_w}},
          {"scale", k.scale},
          {"interp_method", type == "bilinear_interp" ? std::string("bilinear")
                                                      : std::string("nearest")},
          {"align_corners", k.align_corners},
          {"align_mode", int32_t{k.align_mode}},
          {"data_layout", layout}};
}

// `type` of "x" into "y"; with `out_size`, that var is OutSize.
inline proto::OpDesc InterpOp(const std::string& type, const InterpCase& k,
                              const std::string& out_size = "",
                              const std::string& layout = "NCHW") {
  std::vector<std::pair<std::string, std::vector<std::string>>> in = {
      {"X", {"x"}}};
  if (!out_size.empty()) in.push_back({"OutSize", {out_size}});
  return MakeOp(type, in, {{"Out", {"y"}}}, InterpAttrs(type, k, layout));
}

// The grad op of `type` reading "x" and "dy" into "dx".
inline proto::OpDesc InterpGradOp(const std::string& type,
                                  const InterpCase& k) {
  return MakeOp(type + "_grad", {{"X", {"x"}}, {"Out@GRAD", {"dy"}}},
                {{"X@GRAD", {"dx"}}}, InterpAttrs(type, k));
}

}  // namespace testing
}  // namespace fluid
