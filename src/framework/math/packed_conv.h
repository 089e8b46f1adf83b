// A convolution computed without a column matrix: the GEMM's left-hand
// panels are filled straight from the images, and Eigen's block-panel kernel
// multiplies each panel by the filters, packed once per call.
//
// im2col + GEMM writes a column matrix kh kw times the size of the images,
// which the GEMM then reads back only to copy it into its own packed panels.
// For a unit-stride sweep whose output is as wide as the image (3x3 with
// padding 1, 1x1 with none: Im2Col's same-width case), the entries of a
// column row at consecutive output positions are one contiguous run of the
// image, shifted by the kernel tap's offset. So a panel (mr consecutive
// output positions by a block of column rows) is filled by one short copy
// per column row from the images; the entries whose tap falls off the left
// or right edge are masked to zero. The images of a call are first staged
// with zeros around every plane, so that runs reaching above or below an
// image read zeros and no run is checked entry by entry; a panel spanning
// two images takes each entry of two full-length runs from its own image.
// The product of a panel and the filters goes to a small accumulator and
// from there to the outputs, so every image of a chunk is written in place,
// with no column matrix, no repacking and no copy of a wide GEMM result.
//
// A strided sweep becomes a unit-stride one over the image's phases: with
// stride 2, the even and odd rows and columns of the image are four planes
// Wo wide, and each tap reads one of them at a shift, again a contiguous run
// along the output positions. The staging splits the images into the phases
// some tap reads (one for a 1x1 kernel, four for 3x3).
//
// The rows of a panel are the output positions of `nb` images in order
// (image b's position p is row b Ho Wo + p), so small images still fill the
// kernel's panels.
//
// Where the CPU has AVX-512 and an image's positions fill whole vectors
// (to within 1/16), a direct kernel replaces the panels and Eigen's kernel:
// 24 accumulators (3 vectors of consecutive output positions by 8 filters)
// take, per column row, 3 masked loads straight from the staged images and
// 8 broadcast filter taps. Nothing is copied into a panel, and the sums go
// from the registers to the output. Its vectors never span two images.
// The direct kernels live in packed_conv_avx512.cc; packed_conv.cc stages
// the images, runs the panels and picks the kernel.
#pragma once

#include <cstdint>

#include "src/framework/math/im2col.h"

namespace fluid {
namespace math {

// Whether `g` is a sweep PackedConv computes: every image column lands in a
// phase plane as wide as the output (ceil(W / stride_w) <= Wo: 3x3 with
// padding 1 or 1x1 without, at any stride; not an unpadded 5x5), and at most
// 16 phases.
bool PackedConvApplies(const ConvGeometry& g);

// The most phases (stride_h stride_w) of a strided sweep PackedConvApplies
// accepts.
constexpr int64_t kMaxConvPhases = 16;

// Which kernel PackedConvImages multiplies with: kAuto picks the direct
// kernel where it applies and does not waste over 1/16 of its vectors,
// kDirect takes it wherever it applies (tests compare the two), kGebp
// always takes the panels and Eigen's kernel.
enum class PackedKernel { kAuto, kDirect, kGebp };

// One convolution layer as PackedConv sees it: the sweep of one group of
// channels `g`, `groups` such groups, `group_filters` filters each.
struct PackedConvShape {
  ConvGeometry g;
  int64_t groups = 1;
  int64_t group_filters = 1;
  // Column rows summed in one chain before they are added to the output
  // (at most 192, the panel's depth; 0: 192).
  int64_t depth_block = 0;
  PackedKernel kernel = PackedKernel::kAuto;
};

// Whether PackedConvImages<T> takes the direct kernel for `s`.
template <typename T>
bool PackedDirect(const PackedConvShape& s);

// Elements the packed filters of every group take (either kernel's layout).
int64_t PackedFilterSize(const PackedConvShape& s);

// Packs the filters `w` [groups group_filters, C / groups, kh, kw] for
// PackedConvImages.
template <typename T>
void PackFilters(const PackedConvShape& s, const T* w, T* packed);

// Whether PackedFilterGrad<T> computes `s`'s filter gradient: a sweep
// PackedConvApplies on a CPU with the direct kernel, and images that fill
// whole vectors exactly (kDirect: any; kGebp: never).
template <typename T>
bool PackedFilterGradApplies(const PackedConvShape& s);

// Scratch elements (64-byte aligned) a PackedFilterGrad call of up to
// `max_images` images needs.
template <typename T>
int64_t PackedFilterGradScratchSize(const PackedConvShape& s,
                                    int64_t max_images);

// dw [groups group_filters, C / groups kh kw] = the filter gradient of `nb`
// images x [nb, groups C, H, W] with output gradient dy [nb, groups
// group_filters, Ho, Wo] (added to dw when `accumulate`), without a column
// matrix: 8 filters by 3 column rows of accumulators, each a vector of
// output positions, sweep the staged images and dY block by block; lane l
// sums the positions l mod the vector length, and the lanes are added at
// the end. Serial; `scratch` holds PackedFilterGradScratchSize(s, nb).
template <typename T>
void PackedFilterGrad(const PackedConvShape& s, const T* x, const T* dy,
                      int64_t nb, T* scratch, T* dw, bool accumulate);

// Scratch elements a PackedConvImages call of up to `max_images` images
// needs (one panel, its accumulator, the taps and masks, and the images
// staged with zeros around each plane); the buffer must be 64-byte aligned.
template <typename T>
int64_t PackedConvScratchSize(const PackedConvShape& s, int64_t max_images);

// y [nb, groups group_filters, Ho, Wo] = the convolution of x [nb, groups C,
// H, W] by the filters `packed` (PackFilters). Serial; `scratch` holds
// PackedConvScratchSize(s, nb) elements.
template <typename T>
void PackedConvImages(const PackedConvShape& s, const T* packed, const T* x,
                      int64_t nb, T* scratch, T* y);

// Im2Col of `nb` images for a sweep PackedConvApplies: image b (at
// im + b image_stride) unfolded at column b Ho Wo of `col` (rows `ld`
// apart), each column row one masked run of the staged images instead of a
// copy and a zeroing per output row. `scratch` (64-byte aligned) holds
// MaskedIm2ColScratchSize(g, nb) elements.
template <typename T>
int64_t MaskedIm2ColScratchSize(const ConvGeometry& g, int64_t max_images);

template <typename T>
void MaskedIm2Col(const ConvGeometry& g, const T* im, int64_t image_stride,
                  int64_t nb, int64_t ld, T* col, T* scratch);

}  // namespace math
}  // namespace fluid
