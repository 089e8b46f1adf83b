// Image layers over conv2d_transpose, bilinear_interp and nearest_interp:
// the transposed convolution (with its filter, bias and activation) and the
// resizes. Each appends its ops through a ProgramBuilder and returns its
// output var; each is also registered by name in image_layers.cc with
// Fluid 1.x's argument names and defaults (conv2d_transpose, image_resize,
// resize_bilinear, resize_nearest).
#pragma once

#include <string>
#include <vector>

#include "src/builder/program_builder.h"

namespace fluid {
namespace layers {

// The window of conv2d_transpose: output_size, filter_size, stride, padding
// and dilation are [h, w] or one int for both. One of output_size and
// filter_size must be given; without filter_size the filter is sized so
// that the smallest output is output_size.
struct Conv2dTransposeWindow {
  std::vector<int64_t> output_size;
  std::vector<int64_t> filter_size;
  std::vector<int64_t> stride = {1};
  std::vector<int64_t> padding = {0};
  std::vector<int64_t> dilation = {1};
  int64_t groups = 1;
};

// Transposed 2-D convolution over NCHW input [N, C, H, W] by a filter
// [C, num_filters / groups, kh, kw], plus a per-channel bias, then `act`.
std::string Conv2dTranspose(ProgramBuilder* b, const std::string& input,
                            int64_t num_filters,
                            const Conv2dTransposeWindow& window,
                            const std::string& act = "",
                            const ParamAttr& weight = {},
                            const ParamAttr& bias = {}, bool with_bias = true);

// How image_resize sizes and samples its output.
struct ResizeSpec {
  std::string resample = "BILINEAR";  // or "NEAREST"
  std::vector<int64_t> out_shape;     // [out_h, out_w], or empty
  double scale = 0;                   // used when out_shape is empty
  std::string actual_shape;           // an int32 [2] var sizing Out at run time
  bool align_corners = true;
  int64_t align_mode = 1;
};

// Resizes each plane of NCHW `input` as `spec` says (op bilinear_interp or
// nearest_interp); `name`, when not empty, prefixes the output's name.
std::string ImageResize(ProgramBuilder* b, const std::string& input,
                        const ResizeSpec& spec, const std::string& name = "");

// image_resize of `input` (NCHW, known height and width) to the size whose
// shorter side is out_short_len and whose longer keeps the aspect ratio
// (rounded to nearest).
std::string ImageResizeShort(ProgramBuilder* b, const std::string& input,
                             int64_t out_short_len,
                             const std::string& resample = "BILINEAR");

}  // namespace layers
}  // namespace fluid
