// What group_norm's CPU kernels (group_norm_op.cc) and CUDA kernels
// (group_norm_op.cu) share: X's layout as [N, C, S] or [N, S, C] split into
// groups of channels, read and checked on the host (defined in
// group_norm_op.cc). Free of Eigen so that nvcc can compile the CUDA
// kernels that include it.
#pragma once

#include <cstdint>

#include "ops/hostdevice.h"
#include "src/framework/operator.h"

namespace fluid {
namespace ops {

// X as N examples of C channels of S positions (the product of the spatial
// dims), channels first ("NCHW") or last ("NHWC"); `groups` groups of
// C / groups channels each. Group (n, g) holds C / groups * S elements.
struct GroupNormDims {
  int64_t n = 0;
  int64_t c = 0;
  int64_t s = 0;
  int64_t groups = 0;
  bool channels_last = false;

  FLUID_HOSTDEVICE int64_t group_size() const { return c / groups * s; }
  // The index in X of the k-th element of group (n, g), k in
  // [0, group_size()): channel g * C / groups + k / S, position k % S.
  FLUID_HOSTDEVICE int64_t At(int64_t ni, int64_t g, int64_t k) const {
    const int64_t ch = g * (c / groups) + k / s, pos = k % s;
    return channels_last ? (ni * s + pos) * c + ch : (ni * c + ch) * s + pos;
  }
  // The channel of X's element i.
  FLUID_HOSTDEVICE int64_t ChannelOf(int64_t i) const {
    return channels_last ? i % c : (i / s) % c;
  }
  // The group (n * groups + g) of X's element i.
  FLUID_HOSTDEVICE int64_t GroupOf(int64_t i) const {
    const int64_t ni = i / (c * s);
    return ni * groups + ChannelOf(i) / (c / groups);
  }
  // The index in X of the k-th element of channel ch, k in [0, N * S).
  FLUID_HOSTDEVICE int64_t OfChannel(int64_t ch, int64_t k) const {
    const int64_t ni = k / s, pos = k % s;
    return channels_last ? (ni * s + pos) * c + ch : (ni * c + ch) * s + pos;
  }
};

// group_norm's or group_norm_grad's inputs checked: Scale and Bias (where
// given) hold C values; Mean, Variance N * groups; Y@GRAD X's shape.
GroupNormDims ReadGroupNormDims(const ExecutionContext& ctx);

}  // namespace ops
}  // namespace fluid
