// im2col / col2im for NCHW images: the unfolding that turns a 2-D
// convolution into a matrix product.
//
// For one image [C, H, W] and a kernel [kh, kw], the column matrix has
// C * kh * kw rows (row r = (c * kh + i) * kw + j) and out_h * out_w columns
// (column = oh * out_w + ow); entry (r, col) is the input pixel the kernel tap
// (i, j) of channel c sees at output position (oh, ow), or 0 in the padding.
// Rows are `ld` elements apart, so several images can be unfolded side by
// side into one wide matrix (image b at column offset b * out_h * out_w, with
// ld = batch * out_h * out_w) and the whole batch multiplied by one GEMM.
//
// The functions are pure: no allocation, no shared state; thread-safe for
// disjoint outputs.
#pragma once

#include <cstdint>

namespace fluid {
namespace math {

// The geometry of one 2-D convolution (or pooling) window sweep.
struct ConvGeometry {
  int64_t channels = 0;
  int64_t in_h = 0, in_w = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t out_h = 0, out_w = 0;

  int64_t InputSize() const { return channels * in_h * in_w; }
  int64_t ColRows() const { return channels * kernel_h * kernel_w; }
  int64_t ColCols() const { return out_h * out_w; }
  // A 1x1 kernel with unit stride, no padding and no dilation: the column
  // matrix of an image is the image itself, viewed as [C, H * W].
  bool IsPointwise() const {
    return kernel_h == 1 && kernel_w == 1 && stride_h == 1 && stride_w == 1 &&
           pad_h == 0 && pad_w == 0;
  }
};

// Output extent of a window sweep: (in + 2 pad - (dilation (k - 1) + 1)) /
// stride + 1, or a value < 1 when the window does not fit even once.
inline int64_t ConvOutputSize(int64_t in, int64_t kernel, int64_t stride,
                              int64_t pad, int64_t dilation) {
  int64_t span = in + 2 * pad - (dilation * (kernel - 1) + 1);
  if (span < 0) return 0;
  return span / stride + 1;
}

// Unfolds one image `im` [C, H, W] into `col` (ColRows() rows of ColCols()
// entries, rows `ld` apart). Every entry in those rows is written.
template <typename T>
void Im2Col(const ConvGeometry& g, const T* im, int64_t ld, T* col);

// The adjoint of Im2Col: im = sum over the entries of `col` of their
// contribution to the pixel they were copied from. `im` [C, H, W] is
// overwritten (padding entries of `col` are dropped).
template <typename T>
void Col2Im(const ConvGeometry& g, const T* col, int64_t ld, T* im);

// Col2Im of a `col` the caller no longer needs: the same `im`, faster for
// unit-stride sweeps as wide as the image (3x3 with padding 1), where the
// padding entries of `col` are zeroed in place.
template <typename T>
void Col2ImScratch(const ConvGeometry& g, T* col, int64_t ld, T* im);

}  // namespace math
}  // namespace fluid
