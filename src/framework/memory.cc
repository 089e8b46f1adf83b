#include "src/framework/memory.h"

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
  if (!place.is_cpu()) {
#ifdef FLUID_WITH_CUDA
    return DeviceAllocator(place.device).Allocate(bytes);
#else
    FLUID_THROW(ErrorCode::kUnimplemented, "no allocator for place ",
                place.ToString(), ": this build has no CUDA (WITH_CUDA=OFF)");
#endif
  }
  // A size within 63 of SIZE_MAX would round to 0.
  void* p = nullptr;
  if (bytes <= SIZE_MAX - 63)
    p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  FLUID_ENFORCE_CODE(p != nullptr, ErrorCode::kResourceExhausted,
                     "out of memory allocating ", bytes, " bytes on cpu");
  return p;
}

void Free(const Place& place, void* ptr) {
  if (!place.is_cpu()) {
#ifdef FLUID_WITH_CUDA
    DeviceAllocator(place.device).Free(ptr);
#endif
    return;
  }
  std::free(ptr);
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
