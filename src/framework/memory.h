// Raw allocation per place. Host memory is 64-byte aligned so that vector
// kernels may use aligned loads. Both host and device memory come from a
// caching allocator per place (src/framework/caching_allocator.h): a block
// freed in one training step is handed out again in the next, so a step
// that frees its temporaries (the executor's eager deletion) asks the
// system for nothing in steady state. The host cache is bounded: it never
// holds more than the most bytes ever in use at once.
//
// Every allocation is counted per place (relaxed atomics): the bytes in use
// now and the most in use at once since the last ResetPeakMemory. These are
// the bytes asked for (every tensor buffer is allocated here), not what the
// cache keeps besides.
#pragma once

#include <cstddef>
#include <cstdint>

#include "src/framework/types.h"

namespace fluid {

void* Allocate(const Place& place, size_t bytes);
// `bytes` is what Allocate was asked for (it is counted back).
void Free(const Place& place, void* ptr, size_t bytes);
// Sets `bytes` at `ptr` (at `place`) to zero; synchronous.
void ZeroBytes(const Place& place, void* ptr, size_t bytes);
// Copies between any two places (host, CUDA devices); synchronous.
void CopyBytes(const Place& dst_place, void* dst, const Place& src_place,
               const void* src, size_t bytes);

// The memory of one place.
struct MemoryUsage {
  int64_t in_use = 0;       // bytes allocated and not yet freed
  int64_t peak = 0;         // the most in_use at once since the last reset
  int64_t cached = 0;       // freed bytes the caching allocator keeps for reuse
  int64_t allocations = 0;  // Allocate calls since the start
  // Blocks the cache had to get from the system (or the CUDA driver) since
  // the start: flat from step to step in a steady state.
  int64_t system_allocations = 0;
};
MemoryUsage GetMemoryUsage(const Place& place);
// Starts a new high-water mark at the bytes in use now.
void ResetPeakMemory(const Place& place);
// Returns the place's cached free blocks to the system.
void ReleaseCachedMemory(const Place& place);

}  // namespace fluid
