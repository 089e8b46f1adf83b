#include "src/framework/math/packed_conv.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "src/framework/math/int_math.h"
#include "src/framework/math/packed_conv_internal.h"

namespace fluid {
namespace math {

namespace {

using Eigen::Index;
using packed_internal::Bits;
using packed_internal::Depth;
using packed_internal::DepthBlock;
using packed_internal::DirectFilters;
using packed_internal::DirectLanes;
using packed_internal::GradCarve;
using packed_internal::GradScratch;
using packed_internal::kDirectFilters;
using packed_internal::kDirectMaxColumns;
using packed_internal::kHaveDirect;
using packed_internal::kMaxPhases;
using packed_internal::MakeMasks;
using packed_internal::MakeTaps;
using packed_internal::MaskStride;
using packed_internal::Scratch;
using packed_internal::StageImages;
using packed_internal::Staging;
using packed_internal::StagingOf;
using packed_internal::Tap;
using packed_internal::VectorMaskCount;
using packed_internal::VectorsPerImage;
#if defined(__AVX512F__)
using packed_internal::DirectImages;
using packed_internal::FilterGradImages;
#endif

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

// The rows [row, row + len) of a panel: positions [pos, pos + len) of
// image `image`.
struct Segment {
  int64_t row, len, image, pos;
};

// Phases of a strided sweep: with stride s, output column ow of tap
// offset r (= j dilation - pad) reads image column s ow + r = s (ow + cs) +
// pw, where pw = r mod s and cs = floor(r / s). So the image split into its
// s_h s_w phases (rows ph, ph + s_h, ...; columns pw, pw + s_w, ...) turns
// the sweep into a unit-stride one: tap (i, j) reads phase (ph, pw) at
// (oh + rs, ow + cs), a run contiguous along the output positions when the
// phase planes are Wo wide. A unit-stride sweep has one phase.

// A kernel offset `r` along an axis of stride `s`: its phase and its shift
// in phase coordinates.
struct AxisTap {
  int64_t phase, shift;
};

AxisTap AxisTapOf(int64_t r, int64_t s) {
  const int64_t shift = FloorDiv(r, s);
  return {r - shift * s, shift};
}

// Elements the staged copy of `nb` images of `channels` channels takes.
template <typename T>
int64_t StagedSize(const ConvGeometry& g, int64_t channels, int64_t nb) {
  const Staging st = StagingOf<T>(g);
  return st.lead + st.tail + nb * channels * st.phases * st.stride;
}

// Carves a scratch buffer into 64-byte-aligned pieces in order; with a
// null base it only counts the elements they take.
template <typename T>
class Carver {
 public:
  explicit Carver(T* base) : base_(base) {}

  // `count` elements of U.
  template <typename U>
  U* Take(int64_t count) {
    U* at = base_ == nullptr ? nullptr : reinterpret_cast<U*>(base_ + used_);
    used_ +=
        Aligned<T>(CeilDiv(count * int64_t(sizeof(U)), int64_t(sizeof(T))));
    return at;
  }

  // Elements of T taken so far.
  int64_t used() const { return used_; }

 private:
  T* base_;
  int64_t used_ = 0;
};

// Carves `base` (null: only counts) for up to `max_images` images; returns
// the elements taken.
template <typename T>
int64_t Carve(const PackedConvShape& s, int64_t max_images, T* base,
              Scratch<T>* c) {
  const int64_t rows = Kernel<T>::kRows;
  Carver<T> at(base);
  Scratch<T> z;
  z.panel = at.template Take<T>(rows * DepthBlock(s));
  z.acc = at.template Take<T>(rows * s.group_filters);
  z.taps = at.template Take<Tap>(Depth(s));
  z.masks = at.template Take<Bits<T>>(s.g.kernel_w * MaskStride(s.g));
  z.vector_masks = at.template Take<uint64_t>(VectorMaskCount<T>(s.g));
  z.offsets = at.template Take<int64_t>(Depth(s));
  z.staged = at.template Take<T>(
      StagedSize<T>(s.g, s.groups * s.g.channels, max_images));
  if (c != nullptr) *c = z;
  return at.used();
}

}  // namespace

namespace packed_internal {

int64_t DepthBlock(const PackedConvShape& s) {
  const int64_t depth = Depth(s);
  const int64_t most =
      s.depth_block > 0 ? std::min(s.depth_block, kMaxDepth) : kMaxDepth;
  return CeilDiv(depth, CeilDiv(depth, most));
}

template <typename T>
Staging StagingOf(const ConvGeometry& g) {
  Staging st;
  st.hp = CeilDiv(g.in_h, g.stride_h);
  st.wp = g.out_w;
  bool used[kMaxPhases] = {};
  int64_t lo = 0, hi = 0;
  for (int64_t i = 0; i < g.kernel_h; ++i)
    for (int64_t j = 0; j < g.kernel_w; ++j) {
      const AxisTap r = AxisTapOf(i * g.dilation_h - g.pad_h, g.stride_h);
      const AxisTap c = AxisTapOf(j * g.dilation_w - g.pad_w, g.stride_w);
      used[r.phase * g.stride_w + c.phase] = true;
      const int64_t shift = r.shift * st.wp + c.shift;
      lo = std::min(lo, shift);
      hi = std::max(hi, shift);
    }
  for (int64_t q = 0; q < kMaxPhases; ++q) {
    st.phase_index[q] = used[q] ? st.phases : -1;
    if (used[q]) st.phase_of[st.phases++] = q;
  }
  const int64_t plane = st.hp * st.wp, p = g.out_h * g.out_w;
  // Output positions [0, p) read [lo, p + hi) of a plane's run.
  st.gap = std::max<int64_t>({0, -lo, p + hi - plane});
  st.stride = plane + st.gap;
  st.lead = st.gap + Kernel<T>::kRows;
  st.tail = st.gap + Kernel<T>::kRows;
  return st;
}

// Entries of the masks of one kernel column: one per output position and a
// panel's worth past the last, so that a panel spanning two images reads
// its masks as one run (a position's column is its index mod Wo in either
// image).
int64_t MaskStride(const ConvGeometry& g) {
  return g.out_h * g.out_w + Kernel<float>::kRows;
}

// Taps of one group's channels; `channel` is the offset of the tap's
// staged plane from the group's first.
void MakeTaps(const ConvGeometry& g, const Staging& st, Tap* taps) {
  int64_t k = 0;
  for (int64_t c = 0; c < g.channels; ++c)
    for (int64_t i = 0; i < g.kernel_h; ++i)
      for (int64_t j = 0; j < g.kernel_w; ++j, ++k) {
        const AxisTap r = AxisTapOf(i * g.dilation_h - g.pad_h, g.stride_h);
        const AxisTap cl = AxisTapOf(j * g.dilation_w - g.pad_w, g.stride_w);
        const int64_t u = st.phase_index[r.phase * g.stride_w + cl.phase];
        taps[k] = {(c * st.phases + u) * st.stride, r.shift * st.wp + cl.shift,
                   j};
      }
}

// The staged copy (Staging) of channels [0, channels) of `nb` images, the
// first at x, `image_stride` apart, of planes H x W.
template <typename T>
void StageImages(const ConvGeometry& g, const Staging& st, int64_t channels,
                 const T* x, int64_t image_stride, int64_t nb, T* staged) {
  const int64_t size = g.in_h * g.in_w, plane = st.hp * st.wp;
  const bool whole =
      st.phases == 1 && g.stride_h == 1 && g.stride_w == 1 && st.wp == g.in_w;
  std::fill(staged, staged + st.lead, T(0));
  T* dst = staged + st.lead;
  for (int64_t b = 0; b < nb; ++b)
    for (int64_t c = 0; c < channels; ++c) {
      const T* src = x + b * image_stride + c * size;
      for (int64_t u = 0; u < st.phases; ++u, dst += st.stride) {
        if (whole) {
          std::copy_n(src, size, dst);
        } else {
          const int64_t ph = st.phase_of[u] / g.stride_w;
          const int64_t pw = st.phase_of[u] % g.stride_w;
          // Phase columns [0, cols) hold image columns; the rest are zeros.
          const int64_t cols = std::min(
              st.wp, CeilDiv(std::max<int64_t>(g.in_w - pw, 0), g.stride_w));
          for (int64_t a = 0; a < st.hp; ++a) {
            T* row = dst + a * st.wp;
            const int64_t ih = a * g.stride_h + ph;
            if (ih >= g.in_h) {
              std::fill(row, row + st.wp, T(0));
              continue;
            }
            const T* in = src + ih * g.in_w + pw;
            if (g.stride_w == 2) {
              // The common stride as a constant, so the loop vectorises.
              for (int64_t bc = 0; bc < cols; ++bc) row[bc] = in[2 * bc];
            } else {
              for (int64_t bc = 0; bc < cols; ++bc)
                row[bc] = in[bc * g.stride_w];
            }
            std::fill(row + cols, row + st.wp, T(0));
          }
        }
        std::fill(dst + plane, dst + st.stride, T(0));
      }
    }
  std::fill(dst, dst + st.tail, T(0));
}

// masks[j MaskStride + q] = whether kernel column j reads inside its phase
// plane's row (`wp` wide) at output position q (q mod Wo's column, also
// past the last); outside it sees the padding.
template <typename T>
void MakeMasks(const ConvGeometry& g, int64_t wp, Bits<T>* masks) {
  const int64_t ms = MaskStride(g);
  for (int64_t j = 0; j < g.kernel_w; ++j) {
    const int64_t off = AxisTapOf(j * g.dilation_w - g.pad_w, g.stride_w).shift;
    // Output columns [lo, hi) read inside their phase plane's row.
    const int64_t lo = std::clamp<int64_t>(-off, 0, g.out_w);
    const int64_t hi = std::clamp<int64_t>(wp - off, lo, g.out_w);
    Bits<T>* m = masks + j * ms;
    // One row, then the rows so far copied after themselves.
    const int64_t row = std::min(g.out_w, ms);
    std::fill(m, m + lo, Bits<T>(0));
    std::fill(m + lo, m + hi, ~Bits<T>(0));
    std::fill(m + hi, m + row, Bits<T>(0));
    for (int64_t done = row; done < ms; done *= 2)
      std::copy_n(m, std::min(done, ms - done), m + done);
  }
}

// Carves `base` (null: only counts) for up to `max_images` images; returns
// the elements taken.
template <typename T>
int64_t GradCarve(const PackedConvShape& s, int64_t max_images, T* base,
                  GradScratch<T>* c) {
  const ConvGeometry& g = s.g;
  Carver<T> at(base);
  GradScratch<T> z;
  z.bits = at.template Take<Bits<T>>(g.kernel_w * MaskStride(g));
  z.vector_masks = at.template Take<uint64_t>(VectorMaskCount<T>(g));
  z.taps = at.template Take<Tap>(Depth(s));
  z.offsets = at.template Take<int64_t>(GradDepth(s));
  z.column = at.template Take<int64_t>(GradDepth(s));
  z.lanes = at.template Take<T>(s.groups * DirectFilters(s) * GradDepth(s) *
                                DirectLanes<T>());
  z.staged = at.template Take<T>(
      StagedSize<T>(g, s.groups * g.channels, GradImages(g, max_images)));
  if (c != nullptr) *c = z;
  return at.used();
}

#define FLUID_PACKED_INTERNAL(T)                                             \
  template Staging StagingOf<T>(const ConvGeometry&);                        \
  template void MakeMasks<T>(const ConvGeometry&, int64_t, Bits<T>*);        \
  template void StageImages<T>(const ConvGeometry&, const Staging&, int64_t, \
                               const T*, int64_t, int64_t, T*);              \
  template int64_t GradCarve<T>(const PackedConvShape&, int64_t, T*,         \
                                GradScratch<T>*);
FLUID_PACKED_INTERNAL(float)
FLUID_PACKED_INTERNAL(double)
#undef FLUID_PACKED_INTERNAL

}  // namespace packed_internal

namespace {

bool DirectPossible(const PackedConvShape& s) {
  return kHaveDirect && s.g.kernel_w <= kDirectMaxColumns &&
         s.kernel != PackedKernel::kGebp;
}

template <typename T>
void PackDirectFilters(const PackedConvShape& s, const T* w, T* packed) {
  const int64_t depth = Depth(s), mg = s.group_filters;
  for (int64_t gi = 0; gi < s.groups; ++gi)
    for (int64_t f0 = 0; f0 < DirectFilters(s); f0 += kDirectFilters)
      for (int64_t k = 0; k < depth; ++k)
        for (int64_t f = f0; f < f0 + kDirectFilters; ++f)
          *packed++ = f < mg ? w[(gi * mg + f) * depth + k] : T(0);
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

// dst[i] = src[i] where m[i] is set, else 0, for i < n.
template <typename T, typename N>
inline void MaskedRun(const T* src, const Bits<T>* m, N n, T* dst) {
  for (int64_t i = 0; i < int64_t(n); ++i) {
    Bits<T> v;
    std::memcpy(&v, src + i, sizeof(v));
    v &= m[i];
    std::memcpy(dst + i, &v, sizeof(v));
  }
}

// dst[i] = (i < split ? a[i] : b[i]) where m[i] is set, else 0, for i < n.
template <typename T, typename N>
inline void MaskedSplitRun(const T* a, const T* b, int64_t split,
                           const Bits<T>* m, N n, T* dst) {
  for (int64_t i = 0; i < int64_t(n); ++i) {
    Bits<T> va, vb;
    std::memcpy(&va, a + i, sizeof(va));
    std::memcpy(&vb, b + i, sizeof(vb));
    const Bits<T> v = (i < split ? va : vb) & m[i];
    std::memcpy(dst + i, &v, sizeof(v));
  }
}

// panel [kc][rows] = column rows k0 ... k0 + kc at the panel's positions,
// read from the staged images (`image_stride` apart; `group` is the offset
// of the group's first plane).
template <typename T>
void PackPanel(const ConvGeometry& g, const Tap* taps, int64_t k0, int64_t kc,
               const Segment* segs, int64_t nsegs, const Bits<T>* masks,
               const T* group, int64_t image_stride, T* panel) {
  constexpr int64_t rows = Kernel<T>::kRows;
  constexpr std::integral_constant<int64_t, rows> kFull;
  const int64_t ms = MaskStride(g);
  if (nsegs == 1 && segs[0].len == rows) {
    // The common case, a panel inside one image: fixed-length runs that
    // compile to a few vector moves.
    const T* im = group + segs[0].image * image_stride + segs[0].pos;
    const Bits<T>* mbase = masks + segs[0].pos;
    for (int64_t kk = 0; kk < kc; ++kk) {
      const Tap& t = taps[k0 + kk];
      MaskedRun(im + t.channel + t.shift, mbase + t.column * ms, kFull,
                panel + kk * rows);
    }
    return;
  }
  if (nsegs == 2 && segs[0].len + segs[1].len == rows) {
    // A panel spanning two images: both runs at full length, each entry
    // taken from its image.
    const int64_t split = segs[0].len;
    const T* a = group + segs[0].image * image_stride + segs[0].pos;
    const T* b = group + segs[1].image * image_stride - split;
    const Bits<T>* mbase = masks + segs[0].pos;
    for (int64_t kk = 0; kk < kc; ++kk) {
      const Tap& t = taps[k0 + kk];
      const int64_t at = t.channel + t.shift;
      MaskedSplitRun(a + at, b + at, split, mbase + t.column * ms, kFull,
                     panel + kk * rows);
    }
    return;
  }
  for (int64_t kk = 0; kk < kc; ++kk) {
    const Tap& t = taps[k0 + kk];
    T* dst = panel + kk * rows;
    int64_t filled = 0;
    for (int64_t s = 0; s < nsegs; ++s) {
      const Segment& sg = segs[s];
      MaskedRun(group + sg.image * image_stride + sg.pos + t.channel + t.shift,
                masks + t.column * ms + sg.pos, sg.len, dst + sg.row);
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

template <typename T>
bool PackedDirect(const PackedConvShape& s) {
  if (!DirectPossible(s)) return false;
  if (s.kernel == PackedKernel::kDirect) return true;
  // The last vector of an image may be short: take the direct kernel when
  // that wastes at most 1/16 of the lanes.
  const int64_t lanes = DirectLanes<T>();
  const int64_t p = s.g.out_h * s.g.out_w;
  const int64_t span = VectorsPerImage(p, lanes) * lanes;
  return (span - p) * 16 <= span;
}

bool PackedConvApplies(const ConvGeometry& g) {
  // Every image column must fall inside its phase plane's Wo-wide rows.
  return g.stride_h >= 1 && g.stride_w >= 1 &&
         g.stride_h * g.stride_w <= kMaxPhases && g.out_h >= 1 &&
         g.out_w >= 1 && CeilDiv(g.in_w, g.stride_w) <= g.out_w;
}

int64_t PackedFilterSize(const PackedConvShape& s) {
  const int64_t depth = Depth(s), kc = DepthBlock(s);
  int64_t size = 0;
  for (int64_t k0 = 0; k0 < depth; k0 += kc)
    size += FilterBlock(std::min(kc, depth - k0) * s.group_filters);
  return std::max(size, depth * DirectFilters(s)) * s.groups;
}

template <typename T>
void PackFilters(const PackedConvShape& s, const T* w, T* packed) {
  if (PackedDirect<T>(s)) {
    PackDirectFilters(s, w, packed);
    return;
  }
  const int64_t depth = Depth(s), kc = DepthBlock(s);
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
int64_t PackedConvScratchSize(const PackedConvShape& s, int64_t max_images) {
  return Carve<T>(s, max_images, nullptr, nullptr);
}

template <typename T>
void PackedConvImages(const PackedConvShape& s, const T* packed, const T* x,
                      int64_t nb, T* scratch, T* y) {
  const ConvGeometry& g = s.g;
  const int64_t rows = Kernel<T>::kRows, mg = s.group_filters;
  const int64_t depth = Depth(s), kc = DepthBlock(s);
  const Staging st = StagingOf<T>(g);
  const int64_t image = s.groups * g.channels * st.phases * st.stride;
  Scratch<T> sc;
  Carve(s, nb, scratch, &sc);
  MakeTaps(g, st, sc.taps);
  MakeMasks<T>(g, st.wp, sc.masks);
  StageImages(g, st, s.groups * g.channels, x, s.groups * g.InputSize(), nb,
              sc.staged);
#if defined(__AVX512F__)
  if (PackedDirect<T>(s)) {
    DirectImages(s, packed, st, sc, nb, y);
    return;
  }
#endif
  const int64_t total = nb * g.out_h * g.out_w;
  Segment segs[Kernel<T>::kRows + 1];
  typename Kernel<T>::Gebp gebp;
  for (int64_t r0 = 0; r0 < total; r0 += rows) {
    const int64_t nsegs = PanelSegments(g, rows, r0, total, segs);
    const T* pg = packed;
    for (int64_t gi = 0; gi < s.groups; ++gi) {
      const T* xg =
          sc.staged + st.lead + gi * g.channels * st.phases * st.stride;
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
bool PackedFilterGradApplies(const PackedConvShape& s) {
  if (!PackedConvApplies(s.g) || !DirectPossible(s)) return false;
  if (s.kernel == PackedKernel::kDirect) return true;
  // A short last vector costs a whole one and splits the blocks at every
  // image; with it, im2col and Eigen's GEMM were as fast or faster (14x14
  // images), without it 1.3 to 2.6 times slower (28x28).
  return s.g.out_h * s.g.out_w % DirectLanes<T>() == 0;
}

template <typename T>
int64_t PackedFilterGradScratchSize(const PackedConvShape& s,
                                    int64_t max_images) {
  return GradCarve<T>(s, max_images, nullptr, nullptr);
}

template <typename T>
void PackedFilterGrad(const PackedConvShape& s, const T* x, const T* dy,
                      int64_t nb, T* scratch, T* dw, bool accumulate) {
#if defined(__AVX512F__)
  FilterGradImages(s, x, dy, nb, scratch, dw, accumulate);
#else
  (void)s, (void)x, (void)dy, (void)nb, (void)scratch, (void)dw,
      (void)accumulate;
  throw std::logic_error("PackedFilterGrad needs AVX-512");
#endif
}

// MaskedIm2Col's scratch: the masks, the taps, then the staged images.
template <typename T>
struct Im2ColScratch {
  Bits<T>* masks;
  Tap* taps;
  T* staged;
};

// Carves `base` (null: only counts) for up to `max_images` images; returns
// the elements taken.
template <typename T>
int64_t Im2ColCarve(const ConvGeometry& g, int64_t max_images, T* base,
                    Im2ColScratch<T>* c) {
  Carver<T> at(base);
  Im2ColScratch<T> z;
  z.masks = at.template Take<Bits<T>>(g.kernel_w * MaskStride(g));
  z.taps = at.template Take<Tap>(g.ColRows());
  z.staged = at.template Take<T>(StagedSize<T>(g, g.channels, max_images));
  if (c != nullptr) *c = z;
  return at.used();
}

template <typename T>
int64_t MaskedIm2ColScratchSize(const ConvGeometry& g, int64_t max_images) {
  return Im2ColCarve<T>(g, max_images, nullptr, nullptr);
}

template <typename T>
void MaskedIm2Col(const ConvGeometry& g, const T* im, int64_t image_stride,
                  int64_t nb, int64_t ld, T* col, T* scratch) {
  const int64_t p = g.ColCols(), ms = MaskStride(g), k = g.ColRows();
  Im2ColScratch<T> z;
  Im2ColCarve(g, nb, scratch, &z);
  Bits<T>* masks = z.masks;
  Tap* taps = z.taps;
  T* staged = z.staged;
  Staging st = StagingOf<T>(g);
  MakeMasks<T>(g, st.wp, masks);
  if (g.stride_h == 1 && g.stride_w == 1 && st.wp == g.in_w) {
    // A plane is the image itself: read it in place, each run clipped to
    // the plane, instead of staging a copy.
    const int64_t size = g.in_h * g.in_w;
    st.stride = size;
    MakeTaps(g, st, taps);
    for (int64_t b = 0; b < nb; ++b) {
      const T* x = im + b * image_stride;
      for (int64_t r = 0; r < k; ++r) {
        const Tap& t = taps[r];
        T* row = col + r * ld + b * p;
        // Positions [lo, hi) read inside the plane; the rest see padding.
        const int64_t lo = std::clamp<int64_t>(-t.shift, 0, p);
        const int64_t hi = std::clamp<int64_t>(size - t.shift, lo, p);
        std::fill(row, row + lo, T(0));
        MaskedRun(x + t.channel + lo + t.shift, masks + t.column * ms + lo,
                  hi - lo, row + lo);
        std::fill(row + hi, row + p, T(0));
      }
    }
    return;
  }
  MakeTaps(g, st, taps);
  StageImages(g, st, g.channels, im, image_stride, nb, staged);
  const int64_t image = g.channels * st.phases * st.stride;
  for (int64_t b = 0; b < nb; ++b) {
    const T* x = staged + st.lead + b * image;
    for (int64_t r = 0; r < k; ++r) {
      const Tap& t = taps[r];
      MaskedRun(x + t.channel + t.shift, masks + t.column * ms, p,
                col + r * ld + b * p);
    }
  }
}

#define FLUID_PACKED_CONV(T)                                                  \
  template bool PackedDirect<T>(const PackedConvShape&);                      \
  template bool PackedFilterGradApplies<T>(const PackedConvShape&);           \
  template int64_t PackedFilterGradScratchSize<T>(const PackedConvShape&,     \
                                                  int64_t);                   \
  template void PackedFilterGrad<T>(const PackedConvShape&, const T*,         \
                                    const T*, int64_t, T*, T*, bool);         \
  template void PackFilters<T>(const PackedConvShape&, const T*, T*);         \
  template int64_t PackedConvScratchSize<T>(const PackedConvShape&, int64_t); \
  template void PackedConvImages<T>(const PackedConvShape&, const T*,         \
                                    const T*, int64_t, T*, T*);               \
  template int64_t MaskedIm2ColScratchSize<T>(const ConvGeometry&, int64_t);  \
  template void MaskedIm2Col<T>(const ConvGeometry&, const T*, int64_t,       \
                                int64_t, int64_t, T*, T*);
FLUID_PACKED_CONV(float)
FLUID_PACKED_CONV(double)
#undef FLUID_PACKED_CONV

}  // namespace math
}  // namespace fluid
