#include "src/framework/math/packed_conv.h"

#include <Eigen/Core>
#include <algorithm>
#include <type_traits>

#include "src/framework/math/int_math.h"

namespace fluid {
namespace math {

namespace {

using Eigen::Index;

// Eigen's block-panel kernel and the packing it reads, as its general matrix
// product instantiates them. A panel of exactly mr rows (a multiple of the
// packet size) is packed as mr consecutive entries per step along the depth.
template <typename T>
struct Kernel {
  using Traits = Eigen::internal::gebp_traits<T, T>;
  using ResMapper =
      Eigen::internal::blas_data_mapper<T, Index, Eigen::ColMajor>;
  using RhsMapper =
      Eigen::internal::const_blas_data_mapper<T, Index, Eigen::ColMajor>;
  using Gebp = Eigen::internal::gebp_kernel<T, T, Index, ResMapper, Traits::mr,
                                            Traits::nr, false, false>;
  using PackRhs = Eigen::internal::gemm_pack_rhs<T, Index, RhsMapper,
                                                 Traits::nr, Eigen::ColMajor>;
  static constexpr int64_t kRows = Traits::mr;
  static_assert(Traits::mr % Traits::LhsProgress == 0,
                "a panel must be whole packets");
};

// Column rows per depth block: a float panel of mr = 48 rows by 192 is
// 36 KiB, so it stays in L1 while the kernel sweeps the filters past it.
constexpr int64_t kMaxDepth = 192;

// Sub-buffers of the scratch start on 64-byte boundaries.
constexpr int64_t kAlignBytes = 64;

template <typename T>
int64_t Aligned(int64_t elements) {
  const int64_t unit = kAlignBytes / static_cast<int64_t>(sizeof(T));
  return CeilDiv(elements, unit) * unit;
}

// Each depth block of packed filters starts on a 64-byte boundary (16
// elements cover it for float and double alike).
int64_t FilterBlock(int64_t elements) { return CeilDiv(elements, 16) * 16; }

int64_t Depth(const PackedConvShape& s) { return s.g.ColRows(); }

int64_t DepthBlock(int64_t depth) {
  return CeilDiv(depth, CeilDiv(depth, kMaxDepth));
}

// A column row: its channel's plane in an image, the shift of its kernel
// tap (the run for output positions [p, p + n) is the plane's [p + shift,
// p + shift + n), where inside the plane), and which column of the kernel
// it is (for the edge masks).
struct Tap {
  int64_t channel;
  int64_t shift;
  int64_t column;
};

// The rows [row, row + len) of a panel: positions [pos, pos + len) of
// image `image`.
struct Segment {
  int64_t row, len, image, pos;
};

// The scratch, carved.
template <typename T>
struct Scratch {
  T* panel;
  T* acc;
  Tap* taps;
  int32_t* masks;
};

template <typename T>
struct Sizes {
  int64_t panel, acc, taps, masks;
};

template <typename T>
Sizes<T> ScratchSizes(const PackedConvShape& s) {
  const int64_t rows = Kernel<T>::kRows;
  Sizes<T> z;
  z.panel = Aligned<T>(rows * DepthBlock(Depth(s)));
  z.acc = Aligned<T>(rows * s.group_filters);
  z.taps =
      Aligned<T>(CeilDiv(Depth(s) * int64_t(sizeof(Tap)), int64_t(sizeof(T))));
  z.masks = Aligned<T>(
      CeilDiv(s.g.kernel_w * s.g.ColCols() * int64_t(sizeof(int32_t)),
              int64_t(sizeof(T))));
  return z;
}

template <typename T>
Scratch<T> Carve(const PackedConvShape& s, T* base) {
  const Sizes<T> z = ScratchSizes<T>(s);
  Scratch<T> c;
  c.panel = base;
  c.acc = c.panel + z.panel;
  c.taps = reinterpret_cast<Tap*>(c.acc + z.acc);
  c.masks = reinterpret_cast<int32_t*>(c.acc + z.acc + z.taps);
  return c;
}

void MakeTaps(const ConvGeometry& g, Tap* taps) {
  int64_t k = 0;
  for (int64_t c = 0; c < g.channels; ++c)
    for (int64_t i = 0; i < g.kernel_h; ++i)
      for (int64_t j = 0; j < g.kernel_w; ++j, ++k) {
        const int64_t shift =
            (i * g.dilation_h - g.pad_h) * g.in_w + j * g.dilation_w - g.pad_w;
        taps[k] = {c * g.in_h * g.in_w, shift, j};
      }
}

// The segments of the panel starting at row r0 of `total`; returns their
// count.
int64_t PanelSegments(const ConvGeometry& g, int64_t rows, int64_t r0,
                      int64_t total, Segment* segs) {
  const int64_t p = g.out_h * g.out_w;
  const int64_t end = std::min(r0 + rows, total);
  int64_t n = 0;
  for (int64_t r = r0; r < end;) {
    const int64_t image = r / p, pos = r % p;
    const int64_t len = std::min(end - r, p - pos);
    segs[n++] = {r - r0, len, image, pos};
    r += len;
  }
  return n;
}

// masks[j Ho Wo + p] = whether kernel column j sees the image (not the
// padding) at output position p.
void MakeMasks(const ConvGeometry& g, int32_t* masks) {
  const int64_t p = g.out_h * g.out_w;
  for (int64_t j = 0; j < g.kernel_w; ++j) {
    const int64_t off = j * g.dilation_w - g.pad_w;
    // Output columns [lo, hi) see the image.
    const int64_t lo = std::clamp<int64_t>(-off, 0, g.out_w);
    const int64_t hi = std::clamp<int64_t>(g.in_w - off, lo, g.out_w);
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      int32_t* m = masks + j * p + oh * g.out_w;
      std::fill(m, m + lo, 0);
      std::fill(m + lo, m + hi, 1);
      std::fill(m + hi, m + g.out_w, 0);
    }
  }
}

// dst[i] = src[i] where m[i], else 0, for i < n.
template <typename T, typename N>
inline void MaskedRun(const T* src, const int32_t* m, N n, T* dst) {
  for (int64_t i = 0; i < int64_t(n); ++i) {
    const T v = src[i];
    dst[i] = m[i] ? v : T(0);
  }
}

// dst[i] for i < n = column row `t` at positions [pos, pos + n) of the
// image whose channel-0 plane starts at `im` (planes of `size`): where the
// whole run lies inside the plane (all but the first and last rows of a
// sweep), one masked copy; else each entry also checked against the plane.
template <typename T, typename N>
inline void TapRun(const T* im, int64_t size, const Tap& t, int64_t pos,
                   const int32_t* m, N n, T* dst) {
  const T* plane = im + t.channel;
  const int64_t from = pos + t.shift;
  if (from >= 0 && from + int64_t(n) <= size) {
    MaskedRun(plane + from, m, n, dst);
    return;
  }
  for (int64_t i = 0; i < int64_t(n); ++i) {
    const int64_t at = from + i;
    dst[i] = m[i] && at >= 0 && at < size ? plane[at] : T(0);
  }
}

// panel [kc][rows] = column rows k0 ... k0 + kc at the panel's positions,
// read from the images `x` (`image_stride` apart, planes of `size`).
template <typename T>
void PackPanel(const ConvGeometry& g, const Tap* taps, int64_t k0, int64_t kc,
               const Segment* segs, int64_t nsegs, const int32_t* masks,
               const T* x, int64_t image_stride, T* panel) {
  constexpr int64_t rows = Kernel<T>::kRows;
  const int64_t p = g.out_h * g.out_w, size = g.in_h * g.in_w;
  if (nsegs == 1 && segs[0].len == rows) {
    // The common case, a panel inside one image: fixed-length runs that
    // compile to a few vector moves.
    const T* im = x + segs[0].image * image_stride;
    const int32_t* mbase = masks + segs[0].pos;
    for (int64_t kk = 0; kk < kc; ++kk) {
      const Tap& t = taps[k0 + kk];
      TapRun(im, size, t, segs[0].pos, mbase + t.column * p,
             std::integral_constant<int64_t, rows>(), panel + kk * rows);
    }
    return;
  }
  for (int64_t kk = 0; kk < kc; ++kk) {
    const Tap& t = taps[k0 + kk];
    T* dst = panel + kk * rows;
    int64_t filled = 0;
    for (int64_t s = 0; s < nsegs; ++s) {
      const Segment& sg = segs[s];
      TapRun(x + sg.image * image_stride, size, t, sg.pos,
             masks + t.column * p + sg.pos, sg.len, dst + sg.row);
      filled = sg.row + sg.len;
    }
    for (int64_t i = filled; i < rows; ++i) dst[i] = T(0);
  }
}

// y's rows of the panel = the accumulator [filters][rows].
template <typename T>
void ScatterPanel(const PackedConvShape& s, int64_t group, const T* acc,
                  const Segment* segs, int64_t nsegs, T* y) {
  constexpr int64_t rows = Kernel<T>::kRows;
  const int64_t p = s.g.out_h * s.g.out_w;
  const int64_t mg = s.group_filters, m = mg * s.groups;
  for (int64_t i = 0; i < nsegs; ++i) {
    const Segment& sg = segs[i];
    T* dst = y + (sg.image * m + group * mg) * p + sg.pos;
    const T* src = acc + sg.row;
    // Whole panels (the common case) as fixed-length moves, not a library
    // call per filter.
    if (sg.len == rows) {
      for (int64_t o = 0; o < mg; ++o)
        for (int64_t k = 0; k < rows; ++k) dst[o * p + k] = src[o * rows + k];
      continue;
    }
    for (int64_t o = 0; o < mg; ++o)
      std::copy(src + o * rows, src + o * rows + sg.len, dst + o * p);
  }
}

}  // namespace

bool PackedConvApplies(const ConvGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1 && g.out_w == g.in_w &&
         g.out_h >= 1 && g.out_w >= 1;
}

int64_t PackedFilterSize(const PackedConvShape& s) {
  const int64_t depth = Depth(s), kc = DepthBlock(depth);
  int64_t size = 0;
  for (int64_t k0 = 0; k0 < depth; k0 += kc)
    size += FilterBlock(std::min(kc, depth - k0) * s.group_filters);
  return size * s.groups;
}

template <typename T>
void PackFilters(const PackedConvShape& s, const T* w, T* packed) {
  const int64_t depth = Depth(s), kc = DepthBlock(depth);
  const int64_t mg = s.group_filters;
  typename Kernel<T>::PackRhs pack;
  for (int64_t gi = 0; gi < s.groups; ++gi) {
    const T* wg = w + gi * mg * depth;
    for (int64_t k0 = 0; k0 < depth; k0 += kc) {
      const int64_t kb = std::min(kc, depth - k0);
      pack(packed, typename Kernel<T>::RhsMapper(wg + k0, depth), kb, mg);
      packed += FilterBlock(kb * mg);
    }
  }
}

template <typename T>
int64_t PackedConvScratchSize(const PackedConvShape& s) {
  const Sizes<T> z = ScratchSizes<T>(s);
  return z.panel + z.acc + z.taps + z.masks;
}

template <typename T>
void PackedConvImages(const PackedConvShape& s, const T* packed, const T* x,
                      int64_t nb, T* scratch, T* y) {
  const ConvGeometry& g = s.g;
  const int64_t rows = Kernel<T>::kRows, mg = s.group_filters;
  const int64_t depth = Depth(s), kc = DepthBlock(depth);
  const int64_t size = g.in_h * g.in_w, image = s.groups * g.channels * size;
  Scratch<T> sc = Carve(s, scratch);
  MakeTaps(g, sc.taps);
  MakeMasks(g, sc.masks);
  const int64_t total = nb * g.out_h * g.out_w;
  Segment segs[Kernel<T>::kRows + 1];
  typename Kernel<T>::Gebp gebp;
  for (int64_t r0 = 0; r0 < total; r0 += rows) {
    const int64_t nsegs = PanelSegments(g, rows, r0, total, segs);
    const T* pg = packed;
    for (int64_t gi = 0; gi < s.groups; ++gi) {
      const T* xg = x + gi * g.channels * size;
      std::fill(sc.acc, sc.acc + rows * mg, T(0));
      for (int64_t k0 = 0; k0 < depth; k0 += kc) {
        const int64_t kb = std::min(kc, depth - k0);
        PackPanel(g, sc.taps, k0, kb, segs, nsegs, sc.masks, xg, image,
                  sc.panel);
        gebp(typename Kernel<T>::ResMapper(sc.acc, rows), sc.panel, pg, rows,
             kb, mg, T(1));
        pg += FilterBlock(kb * mg);
      }
      ScatterPanel(s, gi, sc.acc, segs, nsegs, y);
    }
  }
}

template <typename T>
int64_t MaskedIm2ColScratchSize(const ConvGeometry& g) {
  return Aligned<T>(CeilDiv(g.kernel_w * g.ColCols() * int64_t(sizeof(int32_t)),
                            int64_t(sizeof(T))));
}

template <typename T>
void MaskedIm2Col(const ConvGeometry& g, const T* im, int64_t image_stride,
                  int64_t nb, int64_t ld, T* col, T* scratch) {
  const int64_t p = g.ColCols(), size = g.in_h * g.in_w;
  int32_t* masks = reinterpret_cast<int32_t*>(scratch);
  MakeMasks(g, masks);
  for (int64_t b = 0; b < nb; ++b) {
    const T* x = im + b * image_stride;
    T* row = col + b * p;
    for (int64_t c = 0; c < g.channels; ++c)
      for (int64_t i = 0; i < g.kernel_h; ++i)
        for (int64_t j = 0; j < g.kernel_w; ++j, row += ld) {
          const int64_t shift = (i * g.dilation_h - g.pad_h) * g.in_w +
                                j * g.dilation_w - g.pad_w;
          // Positions [lo, hi) read inside the plane; the rest see padding.
          const int64_t lo = std::clamp<int64_t>(-shift, 0, p);
          const int64_t hi = std::clamp<int64_t>(size - shift, lo, p);
          std::fill(row, row + lo, T(0));
          MaskedRun(x + c * size + lo + shift, masks + j * p + lo, hi - lo,
                    row + lo);
          std::fill(row + hi, row + p, T(0));
        }
  }
}

#define FLUID_PACKED_CONV(T)                                            \
  template void PackFilters<T>(const PackedConvShape&, const T*, T*);   \
  template int64_t PackedConvScratchSize<T>(const PackedConvShape&);    \
  template void PackedConvImages<T>(const PackedConvShape&, const T*,   \
                                    const T*, int64_t, T*, T*);         \
  template int64_t MaskedIm2ColScratchSize<T>(const ConvGeometry&);     \
  template void MaskedIm2Col<T>(const ConvGeometry&, const T*, int64_t, \
                                int64_t, int64_t, T*, T*);
FLUID_PACKED_CONV(float)
FLUID_PACKED_CONV(double)
#undef FLUID_PACKED_CONV

}  // namespace math
}  // namespace fluid
