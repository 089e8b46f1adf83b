#include "src/framework/math/packed_conv.h"

#include <Eigen/Core>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif
#include <algorithm>
#include <cstring>
#include <stdexcept>
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

int64_t DepthBlock(const PackedConvShape& s) {
  const int64_t depth = Depth(s);
  const int64_t most =
      s.depth_block > 0 ? std::min(s.depth_block, kMaxDepth) : kMaxDepth;
  return CeilDiv(depth, CeilDiv(depth, most));
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

// Phases of a strided sweep: with stride s, output column ow of tap
// offset r (= j dilation - pad) reads image column s ow + r = s (ow + cs) +
// pw, where pw = r mod s and cs = floor(r / s). So the image split into its
// s_h s_w phases (rows ph, ph + s_h, ...; columns pw, pw + s_w, ...) turns
// the sweep into a unit-stride one: tap (i, j) reads phase (ph, pw) at
// (oh + rs, ow + cs), a run contiguous along the output positions when the
// phase planes are Wo wide. A unit-stride sweep has one phase.
constexpr int64_t kMaxPhases = kMaxConvPhases;

// A kernel offset `r` along an axis of stride `s`: its phase and its shift
// in phase coordinates.
struct AxisTap {
  int64_t phase, shift;
};

AxisTap AxisTapOf(int64_t r, int64_t s) {
  const int64_t shift = FloorDiv(r, s);
  return {r - shift * s, shift};
}

// The images of a call, staged as phase planes with zeros around every
// plane, so that a tap's run never needs a bounds check: plane `q` (of
// channel c, used phase u of image b: q = (b C + c) phases + u) starts at
// lead + q stride and holds the phase's hp rows of wp = Wo entries (zeros
// past the image), and `gap` zeros follow it (and lead the first), enough
// for the kernel's reach above and below. `lead` and `tail` also cover a
// whole panel's reach past a plane, so that a panel spanning two images
// reads both runs at full length. Only the phases some tap reads are staged.
struct Staging {
  int64_t hp = 0, wp = 0, phases = 0;
  int64_t gap = 0, stride = 0, lead = 0, tail = 0;
  // phase_index[ph s_w + pw] = the plane of phase (ph, pw) among a
  // channel's, or -1 where no tap reads it.
  int64_t phase_index[kMaxPhases];
  // phase_of[u] = ph s_w + pw of used phase u.
  int64_t phase_of[kMaxPhases];
};

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

// Elements the staged copy of `nb` images of `channels` channels takes.
template <typename T>
int64_t StagedSize(const ConvGeometry& g, int64_t channels, int64_t nb) {
  const Staging st = StagingOf<T>(g);
  return st.lead + st.tail + nb * channels * st.phases * st.stride;
}

// Entries of the masks of one kernel column: one per output position and a
// panel's worth past the last, so that a panel spanning two images reads
// its masks as one run (a position's column is its index mod Wo in either
// image).
int64_t MaskStride(const ConvGeometry& g) {
  return g.out_h * g.out_w + Kernel<float>::kRows;
}

// A mask entry: all bits set where the tap sees the image, none where it
// sees the padding; an entry is the image's bits and-ed with its mask.
template <typename T>
using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;

// The direct kernel (AVX-512): vectors of output positions by blocks of
// filters, loaded straight from the staged images.
constexpr int64_t kDirectVecs = 3;     // vectors of positions per tile
constexpr int64_t kDirectFilters = 8;  // filters per block
constexpr int64_t kDirectMaxColumns = 16;
// Column rows per tile of the filter gradient.
constexpr int64_t kGradRows = 3;

// Filters of one group rounded up to whole blocks.
int64_t DirectFilters(const PackedConvShape& s) {
  return CeilDiv(s.group_filters, kDirectFilters) * kDirectFilters;
}

#if defined(__AVX512F__)
constexpr bool kHaveDirect = true;
#else
constexpr bool kHaveDirect = false;
#endif

// Lanes of the direct kernels' vectors (64 bytes).
template <typename T>
constexpr int64_t DirectLanes() {
  return 64 / int64_t(sizeof(T));
}

// Vectors of `lanes` positions one image's `p` positions take.
int64_t VectorsPerImage(int64_t p, int64_t lanes) { return CeilDiv(p, lanes); }

// Entries of the direct kernels' edge masks per vector (VectorMasks): per
// vector of an image, one per kernel column, its positions, and none.
template <typename T>
int64_t VectorMaskCount(const ConvGeometry& g) {
  return (g.kernel_w + 2) *
         VectorsPerImage(g.out_h * g.out_w, DirectLanes<T>());
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

// PackedConvImages's scratch: the panel and its accumulator (Eigen's
// kernel), the taps, the edge masks (bits, then per vector of the direct
// kernel), the direct kernel's run offsets, and the staged images (either
// staging's size).
template <typename T>
struct Scratch {
  T* panel;
  T* acc;
  Tap* taps;
  Bits<T>* masks;
  uint64_t* vector_masks;
  int64_t* offsets;
  T* staged;
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

#if defined(__AVX512F__)

template <typename T>
struct Simd;

template <>
struct Simd<float> {
  using V = __m512;
  using M = __mmask16;
  static constexpr int64_t kLanes = 16;
  static V Zero() { return _mm512_setzero_ps(); }
  static V Load(const float* p) { return _mm512_loadu_ps(p); }
  static V Load(M m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static V Splat(const float* p) { return _mm512_set1_ps(*p); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V Add(V a, V b) { return _mm512_add_ps(a, b); }
  static void Store(M m, float* p, V v) { _mm512_mask_storeu_ps(p, m, v); }
  static void Store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static float Sum(V v) { return _mm512_reduce_add_ps(v); }
  // Lanes whose mask entry (Bits<float>) is set.
  static M Set(const uint32_t* bits) {
    const __m512i v = _mm512_loadu_si512(bits);
    return _mm512_test_epi32_mask(v, v);
  }
};

template <>
struct Simd<double> {
  using V = __m512d;
  using M = __mmask8;
  static constexpr int64_t kLanes = 8;
  static V Zero() { return _mm512_setzero_pd(); }
  static V Load(const double* p) { return _mm512_loadu_pd(p); }
  static V Load(M m, const double* p) { return _mm512_maskz_loadu_pd(m, p); }
  static V Splat(const double* p) { return _mm512_set1_pd(*p); }
  static V Fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V Add(V a, V b) { return _mm512_add_pd(a, b); }
  static void Store(M m, double* p, V v) { _mm512_mask_storeu_pd(p, m, v); }
  static void Store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static double Sum(V v) { return _mm512_reduce_add_pd(v); }
  static M Set(const uint64_t* bits) {
    const __m512i v = _mm512_loadu_si512(bits);
    return _mm512_test_epi64_mask(v, v);
  }
};

static_assert(Simd<float>::kLanes == DirectLanes<float>() &&
                  Simd<double>::kLanes == DirectLanes<double>(),
              "a vector is 64 bytes");

// One tile: up to kDirectVecs vectors of consecutive positions, each inside
// one image; an absent vector has no lanes.
template <typename T>
struct DirectTile {
  using M = typename Simd<T>::M;
  const T* in[kDirectVecs];  // the staged entry of the vector's first position
  T* out[kDirectVecs];       // the output of its first position, filter 0
  M lanes[kDirectVecs];      // the vector's positions
  // masks[j][v]: the positions of vector v where kernel column j sees the
  // image.
  M masks[kDirectMaxColumns][kDirectVecs];
  // whole[j]: kernel column j sees the image at every lane of every vector.
  bool whole[kDirectMaxColumns];
};

template <typename T>
using DirectAcc = typename Simd<T>::V[kDirectFilters][kDirectVecs];

// acc[f][v] += x_v w[f] for one column row: x_v is vector v's run, starting
// `o` past its position's staged entry, masked by m_v unless kPlain (the
// tap sees the image at every lane).
template <typename T, bool kPlain>
inline void DirectTap(DirectAcc<T>& acc, const T* in0, const T* in1,
                      const T* in2, typename Simd<T>::M m0,
                      typename Simd<T>::M m1, typename Simd<T>::M m2, int64_t o,
                      const T* w) {
  using S = Simd<T>;
  using V = typename S::V;
  const V x0 = kPlain ? S::Load(in0 + o) : S::Load(m0, in0 + o);
  const V x1 = kPlain ? S::Load(in1 + o) : S::Load(m1, in1 + o);
  const V x2 = kPlain ? S::Load(in2 + o) : S::Load(m2, in2 + o);
#pragma GCC unroll 8
  for (int64_t f = 0; f < kDirectFilters; ++f) {
    const V wf = S::Splat(w + f);
    acc[f][0] = S::Fma(x0, wf, acc[f][0]);
    acc[f][1] = S::Fma(x1, wf, acc[f][1]);
    acc[f][2] = S::Fma(x2, wf, acc[f][2]);
  }
}

// The whole kernel rows among the column rows [k, end) (kKw column rows
// each, from k, a row's first): the masks of the kKw kernel columns stay in
// registers, and the columns in kWhole (a bit per column) load unmasked.
// Returns where it stopped.
template <typename T, int64_t kKw, unsigned kWhole>
int64_t DirectRows(DirectAcc<T>& acc, const T* in0, const T* in1, const T* in2,
                   const DirectTile<T>& t, const int64_t* offsets, int64_t k,
                   int64_t end, const T* w) {
  typename Simd<T>::M m[kKw][kDirectVecs];
  for (int64_t j = 0; j < kKw; ++j)
    for (int64_t v = 0; v < kDirectVecs; ++v) m[j][v] = t.masks[j][v];
  for (; k + kKw <= end; k += kKw) {
#pragma GCC unroll 8
    for (int64_t j = 0; j < kKw; ++j) {
      // Unrolled, so each test is decided while compiling.
      const int64_t o = offsets[k + j];
      const T* wj = w + (k + j) * kDirectFilters;
      if ((kWhole >> j) & 1u)
        DirectTap<T, true>(acc, in0, in1, in2, m[j][0], m[j][1], m[j][2], o,
                           wj);
      else
        DirectTap<T, false>(acc, in0, in1, in2, m[j][0], m[j][1], m[j][2], o,
                            wj);
    }
  }
  return k;
}

// DirectRows for the kernel widths with their own code (3 and 1), else
// none (returns k).
template <typename T>
int64_t DirectRowsOf(DirectAcc<T>& acc, const T* in0, const T* in1,
                     const T* in2, const DirectTile<T>& t, int64_t kw,
                     const int64_t* offsets, int64_t k, int64_t end,
                     const T* w) {
  unsigned whole = 0;
  for (int64_t j = 0; j < kw; ++j) whole |= unsigned(t.whole[j]) << j;
#define FLUID_DIRECT_ROWS(KW, WHOLE) \
  case WHOLE:                        \
    return DirectRows<T, KW, WHOLE>(acc, in0, in1, in2, t, offsets, k, end, w)
  if (kw == 3) {
    switch (whole) {
      FLUID_DIRECT_ROWS(3, 0u);
      FLUID_DIRECT_ROWS(3, 1u);
      FLUID_DIRECT_ROWS(3, 2u);
      FLUID_DIRECT_ROWS(3, 3u);
      FLUID_DIRECT_ROWS(3, 4u);
      FLUID_DIRECT_ROWS(3, 5u);
      FLUID_DIRECT_ROWS(3, 6u);
      FLUID_DIRECT_ROWS(3, 7u);
    }
  }
  if (kw == 1) {
    switch (whole) {
      FLUID_DIRECT_ROWS(1, 0u);
      FLUID_DIRECT_ROWS(1, 1u);
    }
  }
#undef FLUID_DIRECT_ROWS
  return k;
}

// out(f, v) (+)= the sum over the column rows [k0, k0 + kb) of the rows'
// runs times the filters' taps w[k][f], for the `nf` filters of a block,
// `fstride` apart in the output. Each accumulator sums its products in
// column-row order from zero and is then stored (or added to the output:
// `add`, a later depth block), as Eigen's kernel does with the panels, so
// that both kernels give the same bits. `in_shift` and `out_shift` move the
// tile's inputs and outputs to a group and a block of filters; `kw` is the
// kernel's width (column row k is in kernel column k mod kw).
template <typename T>
void DirectBlock(const DirectTile<T>& t, const int64_t* offsets, int64_t k0,
                 int64_t kb, int64_t kw, const T* w, int64_t nf,
                 int64_t fstride, int64_t in_shift, int64_t out_shift,
                 bool add) {
  using S = Simd<T>;
  using V = typename S::V;
  DirectAcc<T> acc;
#pragma GCC unroll 8
  for (int64_t f = 0; f < kDirectFilters; ++f)
#pragma GCC unroll 3
    for (int64_t v = 0; v < kDirectVecs; ++v) acc[f][v] = S::Zero();
  const T* in0 = t.in[0] + in_shift;
  const T* in1 = t.in[1] + in_shift;
  const T* in2 = t.in[2] + in_shift;
  const int64_t end = k0 + kb;
  // One column row at a time up to a row's start, whole rows, then the rest.
  auto single = [&](int64_t k) {
    const typename S::M* m = t.masks[k % kw];
    DirectTap<T, false>(acc, in0, in1, in2, m[0], m[1], m[2], offsets[k],
                        w + k * kDirectFilters);
  };
  int64_t k = k0;
  for (; k < end && k % kw != 0; ++k) single(k);
  k = DirectRowsOf(acc, in0, in1, in2, t, kw, offsets, k, end, w);
  for (; k < end; ++k) single(k);
#pragma GCC unroll 8
  for (int64_t f = 0; f < kDirectFilters; ++f) {
    if (f >= nf) break;
#pragma GCC unroll 3
    for (int64_t v = 0; v < kDirectVecs; ++v) {
      T* o = t.out[v] + out_shift + f * fstride;
      const V r = add ? S::Add(S::Load(t.lanes[v], o), acc[f][v]) : acc[f][v];
      S::Store(t.lanes[v], o, r);
    }
  }
}
// The filter gradient's direct kernel: dW[f][k] = the sum over positions of
// dY[f] times column row k, as 8 filters x 3 column rows of accumulators,
// each a vector of positions (lane l sums the positions l mod the lanes).

// v, kept in a register: a vector used several times is loaded once, not
// folded into each use as a memory operand.
template <typename V>
inline V InRegister(V v) {
  asm("" : "+v"(v));
  return v;
}

// acc[f][r] += dY_f x_r over the vectors [i0, i1) of one image: dY_f is
// filter f's row (f fstride past dy, or fo[f] past it unless kEvenStride)
// and x_r column row r's run (offsets[r] past x), both from the vector's
// first position, x_r masked by m_r[i]. A vector `partial` (the image's
// short last one) loads dY masked by `last`.
template <typename T, bool kEvenStride>
void GradTile(typename Simd<T>::V (&acc)[kDirectFilters][kGradRows], const T* x,
              const T* dy, int64_t fstride, const int64_t* fo,
              const int64_t* offsets, const typename Simd<T>::M* m0,
              const typename Simd<T>::M* m1, const typename Simd<T>::M* m2,
              int64_t i0, int64_t i1, int64_t partial,
              typename Simd<T>::M last) {
  using S = Simd<T>;
  using V = typename S::V;
  constexpr int64_t lanes = S::kLanes;
  const T* x0p = x + offsets[0];
  const T* x1p = x + offsets[1];
  const T* x2p = x + offsets[2];
  auto step = [&](int64_t i, auto masked) {
    const int64_t pos = i * lanes;
    const V x0 = InRegister(S::Load(m0[i], x0p + pos));
    const V x1 = InRegister(S::Load(m1[i], x1p + pos));
    const V x2 = InRegister(S::Load(m2[i], x2p + pos));
    const T* g = dy + pos;
#pragma GCC unroll 8
    for (int64_t f = 0; f < kDirectFilters; ++f) {
      const T* gp = g + (kEvenStride ? f * fstride : fo[f]);
      const V gf = InRegister(masked ? S::Load(last, gp) : S::Load(gp));
      acc[f][0] = S::Fma(gf, x0, acc[f][0]);
      acc[f][1] = S::Fma(gf, x1, acc[f][1]);
      acc[f][2] = S::Fma(gf, x2, acc[f][2]);
    }
  };
  const int64_t full = std::min(i1, partial < 0 ? i1 : partial);
  for (int64_t i = i0; i < full; ++i) step(i, std::false_type());
  if (partial >= i0 && partial < i1) step(partial, std::true_type());
}
#endif

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

#if defined(__AVX512F__)
// offsets[k] = where column row k's run starts relative to a position's
// staged entry (its plane's offset plus its shift), for the direct kernels.
void TapOffsets(const Tap* taps, int64_t depth, int64_t* offsets) {
  for (int64_t k = 0; k < depth; ++k)
    offsets[k] = taps[k].channel + taps[k].shift;
}

// Vectors of positions a block sweeps before the accumulators go back to
// the lane sums: as many as keep the block's dY rows of every filter of a
// group in 32 KiB of L1, at most 16, while one tile's runs come and go;
// the tiles take turns over each block.
int64_t GradBlock(const PackedConvShape& s) {
  const int64_t vector_bytes = 64;
  return std::clamp<int64_t>(32768 / (DirectFilters(s) * vector_bytes), 2, 16);
}

// masks[j per_image + i] = the lanes of vector i of an image (positions
// i lanes on) where kernel column j sees the image, none past the image's
// last position; row kernel_w holds the vector's positions and row
// kernel_w + 1 no lanes (VectorMaskCount rows in all). `bits` are
// MakeMasks's.
template <typename T>
void VectorMasks(const ConvGeometry& g, const Bits<T>* bits,
                 typename Simd<T>::M* masks) {
  using S = Simd<T>;
  using M = typename S::M;
  constexpr int64_t lanes = S::kLanes;
  const int64_t p = g.out_h * g.out_w, per_image = VectorsPerImage(p, lanes);
  const int64_t ms = MaskStride(g), kw = g.kernel_w;
  for (int64_t i = 0; i < per_image; ++i) {
    const int64_t n = std::min(lanes, p - i * lanes);
    const M valid = static_cast<M>((uint64_t(1) << n) - 1);
    for (int64_t j = 0; j < kw; ++j)
      masks[j * per_image + i] = S::Set(bits + j * ms + i * lanes) & valid;
    masks[kw * per_image + i] = valid;
    masks[(kw + 1) * per_image + i] = 0;
  }
}

// PackedConvImages on the direct kernel, after the staging, taps and masks.
template <typename T>
void DirectImages(const PackedConvShape& s, const T* packed, const Staging& st,
                  const Scratch<T>& sc, int64_t nb, T* y) {
  using S = Simd<T>;
  using M = typename S::M;
  constexpr int64_t lanes = S::kLanes;
  constexpr M kAll = static_cast<M>(~uint64_t(0));
  const ConvGeometry& g = s.g;
  const int64_t p = g.out_h * g.out_w, depth = Depth(s), kc = DepthBlock(s);
  const int64_t mg = s.group_filters, m = mg * s.groups;
  const int64_t fpad = DirectFilters(s);
  const int64_t group_in = g.channels * st.phases * st.stride;
  const int64_t image = s.groups * group_in;
  TapOffsets(sc.taps, depth, sc.offsets);
  M* masks = reinterpret_cast<M*>(sc.vector_masks);
  VectorMasks<T>(g, sc.masks, masks);
  const int64_t per_image = VectorsPerImage(p, lanes);
  const int64_t total = nb * per_image;
  const T* staged = sc.staged + st.lead;
  DirectTile<T> t;
  for (int64_t v0 = 0; v0 < total; v0 += kDirectVecs) {
    for (int64_t v = 0; v < kDirectVecs; ++v) {
      if (v0 + v >= total) {
        // No positions: loads and stores are masked off entirely.
        t.in[v] = t.in[0];
        t.out[v] = t.out[0];
        t.lanes[v] = 0;
        for (int64_t j = 0; j < g.kernel_w; ++j) t.masks[j][v] = 0;
        continue;
      }
      const int64_t b = (v0 + v) / per_image, i = (v0 + v) % per_image;
      t.in[v] = staged + b * image + i * lanes;
      t.out[v] = y + b * m * p + i * lanes;
      t.lanes[v] = masks[g.kernel_w * per_image + i];
      for (int64_t j = 0; j < g.kernel_w; ++j)
        t.masks[j][v] = masks[j * per_image + i];
    }
    for (int64_t j = 0; j < g.kernel_w; ++j)
      t.whole[j] = t.masks[j][0] == kAll && t.masks[j][1] == kAll &&
                   t.masks[j][2] == kAll;
    for (int64_t gi = 0; gi < s.groups; ++gi) {
      const T* pg = packed + gi * fpad * depth;
      for (int64_t f0 = 0; f0 < fpad; f0 += kDirectFilters) {
        const int64_t nf = std::min(kDirectFilters, mg - f0);
        for (int64_t k0 = 0; k0 < depth; k0 += kc)
          DirectBlock(t, sc.offsets, k0, std::min(kc, depth - k0), g.kernel_w,
                      pg + f0 * depth, nf, p, gi * group_in, (gi * mg + f0) * p,
                      k0 > 0);
      }
    }
  }
}
#endif

// Images PackedFilterGrad stages at a time: about 4096 positions.
int64_t GradImages(const ConvGeometry& g, int64_t nb) {
  return std::clamp<int64_t>(4096 / std::max<int64_t>(g.out_h * g.out_w, 1), 1,
                             std::max<int64_t>(nb, 1));
}

// Column rows padded to whole tiles.
int64_t GradDepth(const PackedConvShape& s) {
  return CeilDiv(Depth(s), kGradRows) * kGradRows;
}

// PackedFilterGrad's scratch: the edge masks (bits, then per vector), the
// taps, their offsets and kernel columns (padded to whole tiles), the lane
// sums and the staged images.
template <typename T>
struct GradScratch {
  Bits<T>* bits;
  uint64_t* vector_masks;
  Tap* taps;
  int64_t* offsets;
  int64_t* column;
  T* lanes;
  T* staged;
};

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

#if defined(__AVX512F__)
// dW from FilterGradImages' lane sums: each (filter, column row) vector of
// `lanes` summed across its lanes, stored or (accumulate) added.
template <typename T>
void LaneSumsToFilterGrad(const PackedConvShape& s, const T* lanes, T* dw,
                          bool accumulate) {
  using S = Simd<T>;
  const int64_t width = S::kLanes;
  const int64_t depth = Depth(s), padded = GradDepth(s);
  const int64_t tiles = padded / kGradRows, mg = s.group_filters;
  const int64_t fpad = DirectFilters(s);
  for (int64_t gi = 0; gi < s.groups; ++gi)
    for (int64_t f0 = 0; f0 < fpad; f0 += kDirectFilters)
      for (int64_t t = 0; t < tiles; ++t)
        for (int64_t f = 0; f < kDirectFilters && f0 + f < mg; ++f)
          for (int64_t r = 0; r < kGradRows; ++r) {
            const int64_t k = t * kGradRows + r;
            if (k >= depth) break;
            const T* lane =
                lanes + ((gi * fpad + f0) * padded +
                         (t * kGradRows * kDirectFilters) + f * kGradRows + r) *
                            width;
            const T sum = S::Sum(S::Load(lane));
            T& out = dw[(gi * mg + f0 + f) * depth + k];
            out = accumulate ? out + sum : sum;
          }
}

template <typename T>
void FilterGradImages(const PackedConvShape& s, const T* x, const T* dy,
                      int64_t nb, T* scratch, T* dw, bool accumulate) {
  using S = Simd<T>;
  using M = typename S::M;
  using V = typename S::V;
  constexpr int64_t lanes = S::kLanes;
  const ConvGeometry& g = s.g;
  const int64_t p = g.out_h * g.out_w, depth = Depth(s);
  const int64_t padded = GradDepth(s), tiles = padded / kGradRows;
  const int64_t mg = s.group_filters, m = mg * s.groups;
  const int64_t fpad = DirectFilters(s);
  const int64_t per_image = VectorsPerImage(p, lanes);
  const int64_t nbs = GradImages(g, nb), block = GradBlock(s);
  GradScratch<T> sc;
  GradCarve<T>(s, nb, scratch, &sc);
  const Staging st = StagingOf<T>(g);
  const int64_t group_in = g.channels * st.phases * st.stride;
  const int64_t image = s.groups * group_in;
  MakeTaps(g, st, sc.taps);
  MakeMasks<T>(g, st.wp, sc.bits);
  M* masks = reinterpret_cast<M*>(sc.vector_masks);
  VectorMasks<T>(g, sc.bits, masks);
  // Column rows past the last (a tile's padding) read nothing: mask row
  // kernel_w + 1.
  TapOffsets(sc.taps, depth, sc.offsets);
  for (int64_t k = 0; k < padded; ++k) {
    if (k >= depth) sc.offsets[k] = 0;
    sc.column[k] = k < depth ? sc.taps[k].column : g.kernel_w + 1;
  }
  // An image's short last vector (if any) loads dY with its positions.
  const int64_t partial = p % lanes == 0 ? -1 : per_image - 1;
  const M last = masks[g.kernel_w * per_image + per_image - 1];
  std::fill(sc.lanes, sc.lanes + s.groups * fpad * padded * lanes, T(0));
  for (int64_t b0 = 0; b0 < nb; b0 += nbs) {
    const int64_t count = std::min(nbs, nb - b0);
    StageImages(g, st, s.groups * g.channels, x + b0 * s.groups * g.InputSize(),
                s.groups * g.InputSize(), count, sc.staged);
    const T* staged = sc.staged + st.lead;
    const T* dyb = dy + b0 * m * p;
    const int64_t nvec = count * per_image;
    for (int64_t v0 = 0; v0 < nvec; v0 += block) {
      const int64_t v1 = std::min(nvec, v0 + block);
      for (int64_t gi = 0; gi < s.groups; ++gi)
        for (int64_t t = 0; t < tiles; ++t) {
          const int64_t* col = sc.column + t * kGradRows;
          const M* m0 = masks + col[0] * per_image;
          const M* m1 = masks + col[1] * per_image;
          const M* m2 = masks + col[2] * per_image;
          for (int64_t f0 = 0; f0 < fpad; f0 += kDirectFilters) {
            // Filters past the group's last read its block's first
            // filter's dY again; their sums are never used.
            const int64_t nf = std::min(kDirectFilters, mg - f0);
            int64_t fo[kDirectFilters];
            for (int64_t f = 0; f < kDirectFilters; ++f)
              fo[f] = f < nf ? f * p : 0;
            T* lane = sc.lanes + ((gi * fpad + f0) * padded +
                                  t * kGradRows * kDirectFilters) *
                                     lanes;
            V acc[kDirectFilters][kGradRows];
#pragma GCC unroll 8
            for (int64_t f = 0; f < kDirectFilters; ++f)
#pragma GCC unroll 3
              for (int64_t r = 0; r < kGradRows; ++r)
                acc[f][r] = S::Load(lane + (f * kGradRows + r) * lanes);
            // The block's vectors, image by image.
            for (int64_t v = v0; v < v1;) {
              const int64_t b = v / per_image, i0 = v % per_image;
              const int64_t i1 = std::min(per_image, i0 + (v1 - v));
              const T* xb = staged + b * image + gi * group_in;
              const T* dyf = dyb + (b * m + gi * mg + f0) * p;
              if (nf == kDirectFilters)
                GradTile<T, true>(acc, xb, dyf, p, fo,
                                  sc.offsets + t * kGradRows, m0, m1, m2, i0,
                                  i1, partial, last);
              else
                GradTile<T, false>(acc, xb, dyf, p, fo,
                                   sc.offsets + t * kGradRows, m0, m1, m2, i0,
                                   i1, partial, last);
              v += i1 - i0;
            }
#pragma GCC unroll 8
            for (int64_t f = 0; f < kDirectFilters; ++f)
#pragma GCC unroll 3
              for (int64_t r = 0; r < kGradRows; ++r)
                S::Store(lane + (f * kGradRows + r) * lanes, acc[f][r]);
          }
        }
    }
  }
  LaneSumsToFilterGrad<T>(s, sc.lanes, dw, accumulate);
}
#endif

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
