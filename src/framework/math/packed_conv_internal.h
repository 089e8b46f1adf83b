// What the two sources of the packed convolution (packed_conv.h) share:
// packed_conv.cc holds the staging, the panels and Eigen's kernel, the
// scratch layouts and the choice of kernel; packed_conv_avx512.cc holds the
// direct kernels, compiled only where the CPU has AVX-512. Included by
// those two files alone; nothing here is part of the library's interface.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "src/framework/math/im2col.h"
#include "src/framework/math/int_math.h"
#include "src/framework/math/packed_conv.h"

namespace fluid {
namespace math {
namespace packed_internal {

// The most phases of a strided sweep (packed_conv.cc explains the phases).
constexpr int64_t kMaxPhases = kMaxConvPhases;

// Column rows of one group: the depth of the convolution's product.
inline int64_t Depth(const PackedConvShape& s) { return s.g.ColRows(); }

// Column rows per depth block (at most 192, or s.depth_block).
int64_t DepthBlock(const PackedConvShape& s);

// A column row: its channel's plane in an image, the shift of its kernel
// tap (the run for output positions [p, p + n) is the plane's [p + shift,
// p + shift + n), where inside the plane), and which column of the kernel
// it is (for the edge masks).
struct Tap {
  int64_t channel;
  int64_t shift;
  int64_t column;
};

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
Staging StagingOf(const ConvGeometry& g);

// Entries of the masks of one kernel column: one per output position and a
// panel's worth past the last (packed_conv.cc).
int64_t MaskStride(const ConvGeometry& g);

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
inline int64_t DirectFilters(const PackedConvShape& s) {
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
inline int64_t VectorsPerImage(int64_t p, int64_t lanes) {
  return CeilDiv(p, lanes);
}

// Entries of the direct kernels' edge masks per vector (VectorMasks): per
// vector of an image, one per kernel column, its positions, and none.
template <typename T>
int64_t VectorMaskCount(const ConvGeometry& g) {
  return (g.kernel_w + 2) *
         VectorsPerImage(g.out_h * g.out_w, DirectLanes<T>());
}

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

// Taps of one group's channels; `channel` is the offset of the tap's
// staged plane from the group's first.
void MakeTaps(const ConvGeometry& g, const Staging& st, Tap* taps);

// masks[j MaskStride + q] = whether kernel column j reads inside its phase
// plane's row (`wp` wide) at output position q (q mod Wo's column, also
// past the last); outside it sees the padding.
template <typename T>
void MakeMasks(const ConvGeometry& g, int64_t wp, Bits<T>* masks);

// The staged copy (Staging) of channels [0, channels) of `nb` images, the
// first at x, `image_stride` apart, of planes H x W.
template <typename T>
void StageImages(const ConvGeometry& g, const Staging& st, int64_t channels,
                 const T* x, int64_t image_stride, int64_t nb, T* staged);

// Images PackedFilterGrad stages at a time: about 4096 positions.
inline int64_t GradImages(const ConvGeometry& g, int64_t nb) {
  return std::clamp<int64_t>(4096 / std::max<int64_t>(g.out_h * g.out_w, 1), 1,
                             std::max<int64_t>(nb, 1));
}

// Column rows padded to whole tiles.
inline int64_t GradDepth(const PackedConvShape& s) {
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
                  GradScratch<T>* c);

#if defined(__AVX512F__)
// The direct kernels (packed_conv_avx512.cc), for float and double.

// PackedConvImages on the direct kernel, after the staging, taps and masks.
template <typename T>
void DirectImages(const PackedConvShape& s, const T* packed, const Staging& st,
                  const Scratch<T>& sc, int64_t nb, T* y);

// PackedFilterGrad: dW of `nb` images, staged and swept block by block.
template <typename T>
void FilterGradImages(const PackedConvShape& s, const T* x, const T* dy,
                      int64_t nb, T* scratch, T* dw, bool accumulate);
#endif

}  // namespace packed_internal
}  // namespace math
}  // namespace fluid
