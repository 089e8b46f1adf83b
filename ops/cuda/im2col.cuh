// The column matrices of convolutions on the device: Im2Col unfolds
// images into them, Col2Im is its adjoint (conv2d and conv2d_transpose).
#pragma once

#include <cstdint>

#include "ops/half_math.h"
#include "src/framework/math/im2col.h"

namespace fluid {
namespace ops {

// Unfolds `images` consecutive images x [images, C, H, W] into column
// matrices: entry (r, p) of image j, r = (c kh + ki) kw + kj and
// p = oh Wo + ow, goes to col[j * image_offset + r * ld + p]; it is the
// pixel tap (ki, kj) of channel c sees at output (oh, ow), or 0 in the
// padding. C is one group's channels, images `image_stride` elements apart
// (all groups). One thread per entry.
template <typename T>
struct Im2Col {
  math::ConvGeometry g;
  const T* x;
  T* col;
  int64_t rows, cols, ld, image_offset;  // rows = K, cols = P
  int64_t image_stride;
  __device__ void operator()(int64_t i) const {
    const int64_t p = i % cols;
    const int64_t t = i / cols;
    const int64_t r = t % rows, j = t / rows;
    const int64_t ow = p % g.out_w, oh = p / g.out_w;
    const int64_t kj = r % g.kernel_w, t2 = r / g.kernel_w;
    const int64_t ki = t2 % g.kernel_h, c = t2 / g.kernel_h;
    const int64_t h = oh * g.stride_h - g.pad_h + ki * g.dilation_h;
    const int64_t w = ow * g.stride_w - g.pad_w + kj * g.dilation_w;
    T v = T(0);
    if (h >= 0 && h < g.in_h && w >= 0 && w < g.in_w)
      v = x[j * image_stride + (c * g.in_h + h) * g.in_w + w];
    col[j * image_offset + r * ld + p] = v;
  }
};

// The adjoint of Im2Col (same layout parameters): each pixel of dx
// [images, C, H, W] is the sum of the column entries copied from it,
// gathered over the kernel taps (ki, kj) in increasing order, the order in
// which the CPU's col2im adds them. One thread per pixel, each writing its
// own: no atomics. Like Im2Col, C is one group's channels, images
// `image_stride` elements apart. The column entries are of TCol (float32
// for the 16-bit types), summed in ComputeType<T>.
template <typename T, typename TCol>
struct Col2Im {
  math::ConvGeometry g;
  const TCol* col;
  T* dx;
  int64_t rows, cols, ld, image_offset, image_stride;
  __device__ void operator()(int64_t i) const {
    const int64_t w = i % g.in_w;
    int64_t t = i / g.in_w;
    const int64_t h = t % g.in_h;
    t /= g.in_h;
    const int64_t c = t % g.channels, j = t / g.channels;
    using Acc = ComputeType<T>;
    const TCol* cj = col + j * image_offset;
    Acc acc = Acc(0);
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      // h = oh * stride_h - pad_h + ki * dilation_h for some output row oh?
      const int64_t th = h + g.pad_h - ki * g.dilation_h;
      if (th < 0) break;  // and for every larger ki
      if (th % g.stride_h != 0) continue;
      const int64_t oh = th / g.stride_h;
      if (oh >= g.out_h) continue;
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        const int64_t tw = w + g.pad_w - kj * g.dilation_w;
        if (tw < 0) break;
        if (tw % g.stride_w != 0) continue;
        const int64_t ow = tw / g.stride_w;
        if (ow >= g.out_w) continue;
        const int64_t r = (c * g.kernel_h + ki) * g.kernel_w + kj;
        acc += static_cast<Acc>(cj[r * ld + oh * g.out_w + ow]);
      }
    }
    dx[j * image_stride + (c * g.in_h + h) * g.in_w + w] = static_cast<T>(acc);
  }
};

}  // namespace ops
}  // namespace fluid
