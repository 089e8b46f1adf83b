// The direct kernels of the packed convolution (packed_conv.h), compiled
// where the CPU has AVX-512: the forward kernel (DirectImages: 3 vectors of
// consecutive output positions by 8 filters of accumulators, the inputs
// loaded masked straight from the staged images) and the filter gradient's
// (FilterGradImages: 8 filters by 3 column rows of accumulators, each a
// vector of positions). packed_conv.cc stages the images, builds the taps
// and masks and decides which kernel runs; without AVX-512 this file
// compiles to nothing and packed_conv.cc never calls into it.
#include "src/framework/math/packed_conv_internal.h"

#if defined(__AVX512F__)
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

namespace fluid {
namespace math {
namespace packed_internal {
namespace {
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

}  // namespace

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

template void DirectImages<float>(const PackedConvShape&, const float*,
                                  const Staging&, const Scratch<float>&,
                                  int64_t, float*);
template void DirectImages<double>(const PackedConvShape&, const double*,
                                   const Staging&, const Scratch<double>&,
                                   int64_t, double*);
template void FilterGradImages<float>(const PackedConvShape&, const float*,
                                      const float*, int64_t, float*, float*,
                                      bool);
template void FilterGradImages<double>(const PackedConvShape&, const double*,
                                       const double*, int64_t, double*, double*,
                                       bool);

}  // namespace packed_internal
}  // namespace math
}  // namespace fluid

#endif  // defined(__AVX512F__)
