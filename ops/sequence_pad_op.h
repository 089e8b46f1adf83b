// sequence_pad and sequence_unpad's index map, written once for the CPU and
// CUDA kernels of both: element (i, t, c) of the padded [count, padded,
// width] tensor and element (lod[i] + t, c) of the packed [rows, width] one
// are the same value when t < the length of sequence i.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/hostdevice.h"
#include "ops/sequence_helpers.h"

namespace fluid {
namespace ops {

struct PadMap {
  const int64_t* lod;  // count + 1 offsets
  int64_t count;
  int64_t padded;  // padded length
  int64_t width;   // elements per row

  // The packed element that padded element `k` holds, or -1 for padding.
  FLUID_HOSTDEVICE int64_t PackedOf(int64_t k) const {
    const int64_t c = k % width;
    const int64_t t = (k / width) % padded;
    const int64_t i = k / (width * padded);
    return t < lod[i + 1] - lod[i] ? (lod[i] + t) * width + c : -1;
  }
  // The padded element that packed element `k` goes to.
  FLUID_HOSTDEVICE int64_t PaddedOf(int64_t k) const {
    const int64_t r = k / width;
    const int64_t i = SequenceOfRow(lod, count, r);
    return (i * padded + (r - lod[i])) * width + k % width;
  }
};

// sequence_unpad's Out LoD from Length's values, each checked against X's
// padded length (defined in sequence_unpad_op.cc).
LoD UnpadLoD(const std::vector<int64_t>& lengths, const Shape& x);

}  // namespace ops
}  // namespace fluid
