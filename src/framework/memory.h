// Raw allocation per place. Host memory is 64-byte aligned so that vector
// kernels may use aligned loads; device memory comes from a per-device
// caching allocator (no cudaMalloc per step).
#pragma once

#include <cstddef>

#include "src/framework/types.h"

namespace fluid {

void* Allocate(const Place& place, size_t bytes);
void Free(const Place& place, void* ptr);
// Sets `bytes` at `ptr` (at `place`) to zero; synchronous.
void ZeroBytes(const Place& place, void* ptr, size_t bytes);
// Copies between any two places (host, CUDA devices); synchronous.
void CopyBytes(const Place& dst_place, void* dst, const Place& src_place,
               const void* src, size_t bytes);

}  // namespace fluid
