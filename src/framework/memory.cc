#include "src/framework/memory.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "src/framework/caching_allocator.h"

#ifdef FLUID_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace fluid {

namespace {

// The counters of one place.
struct Counters {
  std::atomic<int64_t> in_use{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> allocations{0};
};

// Slot 0: the host; slot 1 + d: CUDA device d (the last slot takes any
// device past it).
constexpr int kSlots = 65;

Counters& CountersOf(const Place& place) {
  static Counters* counters = new Counters[kSlots];
  const int slot = place.is_cpu() ? 0 : 1 + std::min(place.device, kSlots - 2);
  return counters[slot];
}

void CountAllocation(const Place& place, int64_t bytes) {
  Counters& c = CountersOf(place);
  c.allocations.fetch_add(1, std::memory_order_relaxed);
  const int64_t now =
      c.in_use.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = c.peak.load(std::memory_order_relaxed);
  while (now > peak &&
         !c.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

// The host's cache of freed blocks, bounded (see memory.h).
CachingAllocator& HostAllocator() {
  static CachingAllocator* allocator = [] {
    auto* a = new CachingAllocator(CachingAllocator::Backing{
        [](size_t n) -> void* { return std::aligned_alloc(64, n); },
        [](void* p) { std::free(p); }});
    a->set_bounded_cache(true);
    return a;
  }();
  return *allocator;
}

void* AllocateHost(size_t bytes) {
  // A size within a block of SIZE_MAX would round to 0.
  void* p = nullptr;
  if (bytes <= SIZE_MAX - CachingAllocator::kRound) {
    try {
      p = HostAllocator().Allocate(bytes);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kResourceExhausted) throw;
    }
  }
  FLUID_ENFORCE_CODE(p != nullptr, ErrorCode::kResourceExhausted,
                     "out of memory allocating ", bytes, " bytes on cpu");
  return p;
}

#ifdef FLUID_WITH_CUDA
// One caching allocator per device, created on first use; device memory is
// never returned to the driver on the hot path.
CachingAllocator& DeviceAllocator(int device) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<CachingAllocator>>* allocators =
      new std::vector<std::unique_ptr<CachingAllocator>>();
  std::lock_guard<std::mutex> lock(mu);
  if (device >= static_cast<int>(allocators->size()))
    allocators->resize(device + 1);
  auto& slot = (*allocators)[device];
  if (!slot) {
    slot = std::make_unique<CachingAllocator>(
        CachingAllocator::Backing{[device](size_t n) -> void* {
                                    void* p = nullptr;
                                    if (cudaSetDevice(device) != cudaSuccess ||
                                        cudaMalloc(&p, n) != cudaSuccess) {
                                      cudaGetLastError();
                                      return nullptr;
                                    }
                                    return p;
                                  },
                                  [device](void* p) {
                                    cudaSetDevice(device);
                                    cudaFree(p);
                                  }});
  }
  return *slot;
}
#endif

}  // namespace

void* Allocate(const Place& place, size_t bytes) {
  void* p = nullptr;
  if (place.is_cpu()) {
    p = AllocateHost(bytes);
  } else {
#ifdef FLUID_WITH_CUDA
    p = DeviceAllocator(place.device).Allocate(bytes);
#else
    FLUID_THROW(ErrorCode::kUnimplemented, "no allocator for place ",
                place.ToString(), ": this build has no CUDA (WITH_CUDA=OFF)");
#endif
  }
  CountAllocation(place, static_cast<int64_t>(bytes));
  return p;
}

void Free(const Place& place, void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  CountersOf(place).in_use.fetch_sub(static_cast<int64_t>(bytes),
                                     std::memory_order_relaxed);
  if (place.is_cpu()) {
    HostAllocator().Free(ptr);
    return;
  }
#ifdef FLUID_WITH_CUDA
  DeviceAllocator(place.device).Free(ptr);
#endif
}

MemoryUsage GetMemoryUsage(const Place& place) {
  const Counters& c = CountersOf(place);
  MemoryUsage u;
  u.in_use = c.in_use.load(std::memory_order_relaxed);
  u.peak = c.peak.load(std::memory_order_relaxed);
  u.allocations = c.allocations.load(std::memory_order_relaxed);
  CachingAllocator::Stats stats;
  if (place.is_cpu()) {
    stats = HostAllocator().stats();
  } else {
#ifdef FLUID_WITH_CUDA
    stats = DeviceAllocator(place.device).stats();
#endif
  }
  u.cached = static_cast<int64_t>(stats.cached_bytes);
  u.system_allocations = static_cast<int64_t>(stats.backing_allocations);
  return u;
}

void ResetPeakMemory(const Place& place) {
  Counters& c = CountersOf(place);
  c.peak.store(c.in_use.load(std::memory_order_relaxed),
               std::memory_order_relaxed);
}

void ReleaseCachedMemory(const Place& place) {
  if (place.is_cpu()) {
    HostAllocator().EmptyCache();
    return;
  }
#ifdef FLUID_WITH_CUDA
  DeviceAllocator(place.device).EmptyCache();
#endif
}

void ZeroBytes(const Place& place, void* ptr, size_t bytes) {
  if (bytes == 0) return;
  if (place.is_cpu()) {
    std::memset(ptr, 0, bytes);
    return;
  }
#ifdef FLUID_WITH_CUDA
  cudaError_t rc = cudaMemset(ptr, 0, bytes);
  FLUID_ENFORCE_CODE(rc == cudaSuccess, ErrorCode::kAborted, "zeroing ", bytes,
                     " bytes on ", place.ToString(),
                     " failed: ", cudaGetErrorString(rc));
#else
  FLUID_THROW(ErrorCode::kUnimplemented, "no memory at ", place.ToString(),
              ": this build has no CUDA (WITH_CUDA=OFF)");
#endif
}

void CopyBytes(const Place& dst_place, void* dst, const Place& src_place,
               const void* src, size_t bytes) {
  if (bytes == 0) return;
  if (dst_place.is_cpu() && src_place.is_cpu()) {
    std::memmove(dst, src, bytes);
    return;
  }
#ifdef FLUID_WITH_CUDA
  cudaMemcpyKind kind = dst_place.is_cpu()   ? cudaMemcpyDeviceToHost
                        : src_place.is_cpu() ? cudaMemcpyHostToDevice
                                             : cudaMemcpyDeviceToDevice;
  cudaError_t rc = cudaMemcpy(dst, src, bytes, kind);
  FLUID_ENFORCE_CODE(rc == cudaSuccess, ErrorCode::kAborted, "copy of ", bytes,
                     " bytes from ", src_place.ToString(), " to ",
                     dst_place.ToString(), " failed: ", cudaGetErrorString(rc));
#else
  FLUID_THROW(ErrorCode::kUnimplemented, "copy between ", src_place.ToString(),
              " and ", dst_place.ToString(),
              ": this build has no CUDA (WITH_CUDA=OFF)");
#endif
}

}  // namespace fluid
