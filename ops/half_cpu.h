// CPU helpers for kernels over 16-bit float tensors that reuse a float32
// computation: the elements are converted to float a chunk at a time into
// buffers on the stack, the float computation runs on the chunk, and its
// results are rounded once into the 16-bit output. Chunks are split over the
// executor's pool as ParallelFor splits float32 work; nothing is allocated.
#pragma once

#include <algorithm>

#include "ops/half_math.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

// Elements per chunk: three float buffers of it stay in L1.
constexpr int64_t kHalfChunk = 1024;

// For each chunk of [0, n): fn(in0, in1, out, len) on float copies of the
// chunk of `a` (and of `b` when it is not null; in1 is null then), then the
// chunk of `out` = the rounded results. `out` may alias `a` or `b`. `cost`
// is the float work per element, as for ParallelFor.
template <typename T, typename Fn>
void HalfChunks(const CPUDeviceContext& dev, int64_t n, double cost, const T* a,
                const T* b, T* out, Fn fn) {
  ParallelFor(dev, n, cost, [&](int64_t begin, int64_t end) {
    float fa[kHalfChunk], fb[kHalfChunk], fo[kHalfChunk];
    for (int64_t c = begin; c < end; c += kHalfChunk) {
      const int64_t len = std::min(kHalfChunk, end - c);
      for (int64_t i = 0; i < len; ++i) fa[i] = ToCompute(a[c + i]);
      if (b != nullptr)
        for (int64_t i = 0; i < len; ++i) fb[i] = ToCompute(b[c + i]);
      fn(static_cast<const float*>(fa),
         b != nullptr ? static_cast<const float*>(fb) : nullptr,
         static_cast<float*>(fo), len);
      for (int64_t i = 0; i < len; ++i) out[c + i] = FromCompute<T>(fo[i]);
    }
  });
}

}  // namespace ops
}  // namespace fluid
