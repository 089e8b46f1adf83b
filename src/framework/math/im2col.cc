#include "src/framework/math/im2col.h"

#include <algorithm>
#include <type_traits>

#include "src/framework/math/int_math.h"

namespace fluid {
namespace math {

namespace {

// The outputs [lo, hi) whose input index o * stride + offset lies inside
// [0, in): outside it the kernel tap sees padding.
void ValidRange(int64_t offset, int64_t stride, int64_t in, int64_t out,
                int64_t* lo, int64_t* hi) {
  int64_t l = offset >= 0 ? 0 : CeilDiv(-offset, stride);
  int64_t h = in - offset <= 0 ? 0 : CeilDiv(in - offset, stride);
  l = std::min(l, out);
  h = std::max(l, std::min(h, out));
  *lo = l;
  *hi = h;
}

// The runs copied here are short (8 floats per output row in LeNet's second
// layer), so they are plain loops in blocks of 8, which compile to one
// vector move per block, not a memmove call per run.
template <typename T>
inline void CopyRun(const T* __restrict src, T* __restrict dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int u = 0; u < 8; ++u) dst[i + u] = src[i + u];
  for (; i < n; ++i) dst[i] = src[i];
}

template <typename T>
inline void AddRun(const T* __restrict src, T* __restrict dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int u = 0; u < 8; ++u) dst[i + u] += src[i + u];
  for (; i < n; ++i) dst[i] += src[i];
}

// dst[o] = src[o * stride] for o in [lo, hi). Stride 2 (every strided
// layer of the built-in models) is passed as a compile-time constant, so
// the loop vectorises as loads and a permute.
template <typename T, typename S>
inline void StridedCopy(const T* __restrict src, S stride, int64_t lo,
                        int64_t hi, T* __restrict dst) {
  for (int64_t o = lo; o < hi; ++o) dst[o] = src[o * int64_t(stride)];
}

// dst[o * stride] += src[o] for o in [lo, hi).
template <typename T, typename S>
inline void StridedAdd(const T* __restrict src, S stride, int64_t lo,
                       int64_t hi, T* __restrict dst) {
  for (int64_t o = lo; o < hi; ++o) dst[o * int64_t(stride)] += src[o];
}

// Mostly called with n == 0 (no padding on this run); the test keeps that
// case from paying for the memset the compiler turns the loop into.
template <typename T>
inline void ZeroRun(T* dst, int64_t n) {
  if (n <= 0) return;
  for (int64_t i = 0; i < n; ++i) dst[i] = T(0);
}

// A unit-stride sweep whose output is as wide as the image ("same"
// padding, as a 3x3 kernel with padding 1): the output rows a tap sees form
// one contiguous run of the image shifted by the tap's offset, so a column
// row is one copy of that run, then the |off_w| columns at the padded edge
// of every output row (which the copy filled from the neighbouring image
// row) are zeroed.
bool IsSameWidthUnitStride(const ConvGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1 && g.out_w == g.in_w &&
         g.pad_w < g.in_w;
}

template <typename T>
void SameWidthRow(const ConvGeometry& g, const T* plane, int64_t off_h,
                  int64_t off_w, T* row) {
  const int64_t w = g.out_w;
  int64_t h_lo, h_hi;
  ValidRange(off_h, 1, g.in_h, g.out_h, &h_lo, &h_hi);
  ZeroRun(row, h_lo * w);
  ZeroRun(row + h_hi * w, (g.out_h - h_hi) * w);
  if (h_lo >= h_hi) return;
  // Output entries [begin, end) of the run; source index = entry + shift.
  const int64_t shift = off_h * w + off_w;
  int64_t begin = h_lo * w, end = h_hi * w;
  // Keep the source inside the image: the entries that would read before
  // its start or past its end are edge columns, zeroed below.
  begin = std::max(begin, -shift);
  end = std::min(end, g.in_h * g.in_w - shift);
  ZeroRun(row + h_lo * w, begin - h_lo * w);
  if (end > begin)
    std::copy(plane + begin + shift, plane + end + shift, row + begin);
  ZeroRun(row + std::max(end, begin), h_hi * w - std::max(end, begin));
  const int64_t edge = off_w < 0 ? 0 : w - off_w;
  const int64_t n = off_w < 0 ? -off_w : off_w;
  if (n == 0) return;
  for (int64_t oh = h_lo; oh < h_hi; ++oh)
    for (int64_t i = 0; i < n; ++i) row[oh * w + edge + i] = T(0);
}

template <typename T>
void Im2ColSameWidth(const ConvGeometry& g, const T* im, int64_t ld, T* col) {
  for (int64_t c = 0; c < g.channels; ++c) {
    const T* plane = im + c * g.in_h * g.in_w;
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      const int64_t off_h = ki * g.dilation_h - g.pad_h;
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        T* row = col + ((c * g.kernel_h + ki) * g.kernel_w + kj) * ld;
        SameWidthRow(g, plane, off_h, kj * g.dilation_w - g.pad_w, row);
      }
    }
  }
}

// Col2Im of a unit-stride same-width sweep: the padding entries of each
// column row are zeroed in place, then the row is added to the image as one
// shifted run (the zeros land on the neighbouring image row, adding
// nothing). Each pixel sums the taps in the same order as Col2Im.
template <typename T>
void AddSameWidthRow(const ConvGeometry& g, T* row, int64_t off_h,
                     int64_t off_w, T* plane) {
  const int64_t w = g.out_w;
  int64_t h_lo, h_hi;
  ValidRange(off_h, 1, g.in_h, g.out_h, &h_lo, &h_hi);
  if (h_lo >= h_hi) return;
  const int64_t edge = off_w < 0 ? 0 : w - off_w;
  const int64_t n = off_w < 0 ? -off_w : off_w;
  for (int64_t oh = h_lo; oh < h_hi; ++oh)
    for (int64_t i = 0; i < n; ++i) row[oh * w + edge + i] = T(0);
  const int64_t shift = off_h * w + off_w;
  const int64_t begin = std::max(h_lo * w, -shift);
  const int64_t end = std::min(h_hi * w, g.in_h * g.in_w - shift);
  if (end > begin) AddRun(row + begin, plane + begin + shift, end - begin);
}

}  // namespace

template <typename T>
void Col2ImScratch(const ConvGeometry& g, T* col, int64_t ld, T* im) {
  if (!IsSameWidthUnitStride(g)) {
    Col2Im(g, static_cast<const T*>(col), ld, im);
    return;
  }
  std::fill(im, im + g.InputSize(), T(0));
  for (int64_t c = 0; c < g.channels; ++c) {
    T* plane = im + c * g.in_h * g.in_w;
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      const int64_t off_h = ki * g.dilation_h - g.pad_h;
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        T* row = col + ((c * g.kernel_h + ki) * g.kernel_w + kj) * ld;
        AddSameWidthRow(g, row, off_h, kj * g.dilation_w - g.pad_w, plane);
      }
    }
  }
}

template <typename T>
void Im2Col(const ConvGeometry& g, const T* im, int64_t ld, T* col) {
  if (IsSameWidthUnitStride(g)) {
    Im2ColSameWidth(g, im, ld, col);
    return;
  }
  const int64_t out_h = g.out_h, out_w = g.out_w;
  for (int64_t c = 0; c < g.channels; ++c) {
    const T* plane = im + c * g.in_h * g.in_w;
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      // Output rows [h_lo, h_hi) see image rows; the rest see padding.
      const int64_t off_h = ki * g.dilation_h - g.pad_h;
      int64_t h_lo, h_hi;
      ValidRange(off_h, g.stride_h, g.in_h, out_h, &h_lo, &h_hi);
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        T* row = col + ((c * g.kernel_h + ki) * g.kernel_w + kj) * ld;
        const int64_t off_w = kj * g.dilation_w - g.pad_w;
        int64_t lo, hi;
        ValidRange(off_w, g.stride_w, g.in_w, out_w, &lo, &hi);
        ZeroRun(row, h_lo * out_w);
        ZeroRun(row + h_hi * out_w, (out_h - h_hi) * out_w);
        if (g.stride_w == 1 && lo == 0 && hi == out_w) {
          // No padding along this row (so off_w >= 0): a plain block copy,
          // kept apart from the general loop so it compiles tight.
          for (int64_t oh = h_lo; oh < h_hi; ++oh)
            CopyRun(plane + (oh * g.stride_h + off_h) * g.in_w + off_w,
                    row + oh * out_w, out_w);
          continue;
        }
        for (int64_t oh = h_lo; oh < h_hi; ++oh) {
          T* dst = row + oh * out_w;
          // Indexing from the image row's start keeps every pointer inside
          // the image even when off_w is negative.
          const T* src = plane + (oh * g.stride_h + off_h) * g.in_w;
          ZeroRun(dst, lo);
          if (g.stride_w == 1) {
            CopyRun(src + lo + off_w, dst + lo, hi - lo);
          } else if (g.stride_w == 2) {
            StridedCopy(src + off_w, std::integral_constant<int64_t, 2>(), lo,
                        hi, dst);
          } else {
            StridedCopy(src + off_w, g.stride_w, lo, hi, dst);
          }
          ZeroRun(dst + hi, out_w - hi);
        }
      }
    }
  }
}

template <typename T>
void Col2Im(const ConvGeometry& g, const T* col, int64_t ld, T* im) {
  std::fill(im, im + g.InputSize(), T(0));
  const int64_t out_h = g.out_h, out_w = g.out_w;
  for (int64_t c = 0; c < g.channels; ++c) {
    T* plane = im + c * g.in_h * g.in_w;
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      const int64_t off_h = ki * g.dilation_h - g.pad_h;
      int64_t h_lo, h_hi;
      ValidRange(off_h, g.stride_h, g.in_h, out_h, &h_lo, &h_hi);
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        const T* row = col + ((c * g.kernel_h + ki) * g.kernel_w + kj) * ld;
        const int64_t off_w = kj * g.dilation_w - g.pad_w;
        int64_t lo, hi;
        ValidRange(off_w, g.stride_w, g.in_w, out_w, &lo, &hi);
        if (lo >= hi) continue;
        if (g.stride_w == 1 && lo == 0 && hi == out_w) {
          for (int64_t oh = h_lo; oh < h_hi; ++oh)
            AddRun(row + oh * out_w,
                   plane + (oh * g.stride_h + off_h) * g.in_w + off_w, out_w);
          continue;
        }
        for (int64_t oh = h_lo; oh < h_hi; ++oh) {
          const T* src = row + oh * out_w;
          T* dst = plane + (oh * g.stride_h + off_h) * g.in_w;
          if (g.stride_w == 1) {
            AddRun(src + lo, dst + lo + off_w, hi - lo);
          } else if (g.stride_w == 2) {
            StridedAdd(src, std::integral_constant<int64_t, 2>(), lo, hi,
                       dst + off_w);
          } else {
            StridedAdd(src, g.stride_w, lo, hi, dst + off_w);
          }
        }
      }
    }
  }
}

template void Im2Col<float>(const ConvGeometry&, const float*, int64_t, float*);
template void Im2Col<double>(const ConvGeometry&, const double*, int64_t,
                             double*);
template void Col2Im<float>(const ConvGeometry&, const float*, int64_t, float*);
template void Col2Im<double>(const ConvGeometry&, const double*, int64_t,
                             double*);
template void Col2ImScratch<float>(const ConvGeometry&, float*, int64_t,
                                   float*);
template void Col2ImScratch<double>(const ConvGeometry&, double*, int64_t,
                                    double*);

}  // namespace math
}  // namespace fluid
