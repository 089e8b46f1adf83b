// CPU helpers for kernels over 16-bit float tensors that reuse a float32
// computation: the elements are converted to float a chunk at a time into
// buffers on the stack, the float computation runs on the chunk, and its
// results are rounded once into the 16-bit output. Chunks are split over the
// executor's pool as ParallelFor splits float32 work; nothing is allocated.
#pragma once

#include <algorithm>
#include <type_traits>
#include <vector>

#include "ops/half_math.h"
#include "ops/op_helpers.h"

namespace fluid {
namespace ops {

// dst[i] = src[i] as float, i < n: eight float16 at a time where the CPU
// has F16C, one at a time otherwise (the same values, ToCompute's).
template <typename T>
inline void ToFloats(const T* src, float* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  if constexpr (std::is_same_v<T, float16>) {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i,
                       _mm256_cvtph_ps(_mm_loadu_si128(
                           reinterpret_cast<const __m128i*>(src + i))));
  }
#endif
  for (; i < n; ++i) dst[i] = ToCompute(src[i]);
}

// dst[i] = src[i] rounded to T, i < n (FromCompute's values, eight float16
// at a time where the CPU has F16C).
template <typename T>
inline void FromFloats(const float* src, T* dst, int64_t n) {
  int64_t i = 0;
#if defined(__F16C__)
  if constexpr (std::is_same_v<T, float16>) {
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(
          reinterpret_cast<__m128i*>(dst + i),
          _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  }
#endif
  for (; i < n; ++i) dst[i] = FromCompute<T>(src[i]);
}

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
      ToFloats(a + c, fa, len);
      if (b != nullptr) ToFloats(b + c, fb, len);
      fn(static_cast<const float*>(fa),
         b != nullptr ? static_cast<const float*>(fb) : nullptr,
         static_cast<float*>(fo), len);
      FromFloats(static_cast<const float*>(fo), out + c, len);
    }
  });
}

// `count` floats of the calling thread's row buffer `slot` (0 to 3), for a
// 16-bit kernel's chunk to widen its rows into: grown as needed and reused
// across steps, so the hot path allocates nothing once it has grown.
inline float* ThreadRow(int slot, int64_t count) {
  thread_local std::vector<float> rows[4];
  std::vector<float>& r = rows[slot];
  if (static_cast<int64_t>(r.size()) < count) r.resize(count);
  return r.data();
}

}  // namespace ops
}  // namespace fluid
