// The host-side CUDA runtime of the emulation: devices, errors, device
// memory on the host heap (with red zones and poisoned contents), copies,
// streams and events. Everything completes before the call returns.
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "cuda_runtime.h"
#include "internal.h"

struct CUstream_st {
  int device;
  unsigned flags;
};
struct CUevent_st {
  int device;
  unsigned flags;
  bool recorded;
};

namespace cuda_emu {
namespace {

constexpr size_t kRedZone = 256;       // bytes before and after each allocation
constexpr unsigned char kFill = 0xFF;  // poison and red zone: NaN, or -1

bool EnvFlag(const char* name, bool dflt) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return dflt;
  return !(std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0 ||
           std::strcmp(v, "false") == 0 || std::strcmp(v, "no") == 0);
}

Options ReadOptions() {
  Options o;
  if (const char* v = std::getenv("CUDA_EMU_DEVICES")) o.devices = std::atoi(v);
  if (o.devices < 0) o.devices = 0;
  if (const char* v = std::getenv("CUDA_EMU_SMS"))
    o.multiprocessors = std::atoi(v);
  if (o.multiprocessors < 1) o.multiprocessors = 1;
  if (const char* v = std::getenv("CUDA_EMU_SCHED"))
    o.threads = std::strcmp(v, "threads") == 0;
  o.poison = EnvFlag("CUDA_EMU_POISON", true);
  o.redzones = EnvFlag("CUDA_EMU_REDZONE", true);
  o.strict = EnvFlag("CUDA_EMU_STRICT", true);
  o.reverse = EnvFlag("CUDA_EMU_REVERSE", false);
  o.trace = EnvFlag("CUDA_EMU_TRACE", false);
  if (const char* v = std::getenv("CUDA_EMU_MEM_LIMIT"))
    o.memory_limit = std::strtoull(v, nullptr, 10);
  return o;
}

thread_local cudaError_t t_last_error = cudaSuccess;
thread_local int t_device = 0;

cudaError_t Fail(cudaError_t e) {
  t_last_error = e;
  return e;
}

struct Allocation {
  size_t size;
  int device;
  unsigned char* raw;
};

struct Heap {
  std::mutex mu;
  std::map<uintptr_t, Allocation> live;  // user pointer -> allocation
  size_t bytes = 0;
};
Heap& TheHeap() {
  static Heap* heap = new Heap();  // outlives static destructors
  return *heap;
}

struct Handles {
  std::mutex mu;
  std::set<const CUstream_st*> streams;
  std::set<const CUevent_st*> events;
};
Handles& TheHandles() {
  static Handles* h = new Handles();
  return *h;
}

// The allocation holding p (p may be its end), heap lock held.
const std::pair<const uintptr_t, Allocation>* FindLocked(Heap& h, uintptr_t p) {
  auto it = h.live.upper_bound(p);
  if (it == h.live.begin()) return nullptr;
  --it;
  if (p > it->first + it->second.size) return nullptr;
  return &*it;
}

bool IsDevicePointer(const void* p) {
  Heap& h = TheHeap();
  std::lock_guard<std::mutex> lock(h.mu);
  auto* a = FindLocked(h, reinterpret_cast<uintptr_t>(p));
  return a != nullptr &&
         reinterpret_cast<uintptr_t>(p) < a->first + a->second.size;
}

const unsigned char* FillPattern() {
  static unsigned char pattern[kRedZone];
  static bool init = [] {
    std::memset(pattern, kFill, sizeof(pattern));
    return true;
  }();
  (void)init;
  return pattern;
}

bool RangesOverlap(const void* a, size_t an, const void* b, size_t bn) {
  uintptr_t x = reinterpret_cast<uintptr_t>(a);
  uintptr_t y = reinterpret_cast<uintptr_t>(b);
  return x < y + bn && y < x + an;
}

const char* KindName(cudaMemcpyKind k) {
  switch (k) {
    case cudaMemcpyHostToHost:
      return "cudaMemcpyHostToHost";
    case cudaMemcpyHostToDevice:
      return "cudaMemcpyHostToDevice";
    case cudaMemcpyDeviceToHost:
      return "cudaMemcpyDeviceToHost";
    case cudaMemcpyDeviceToDevice:
      return "cudaMemcpyDeviceToDevice";
    case cudaMemcpyDefault:
      return "cudaMemcpyDefault";
  }
  return "invalid cudaMemcpyKind";
}

cudaError_t Copy(const char* api, void* dst, const void* src, size_t count,
                 cudaMemcpyKind kind) {
  if (count == 0) return cudaSuccess;
  if (dst == nullptr || src == nullptr) {
    Report("%s: null pointer (dst %p, src %p, %zu bytes)", api, dst, src,
           count);
    return Fail(cudaErrorInvalidValue);
  }
  const bool dst_dev = IsDevicePointer(dst), src_dev = IsDevicePointer(src);
  bool want_dst_dev, want_src_dev;
  switch (kind) {
    case cudaMemcpyHostToHost:
      want_dst_dev = false;
      want_src_dev = false;
      break;
    case cudaMemcpyHostToDevice:
      want_dst_dev = true;
      want_src_dev = false;
      break;
    case cudaMemcpyDeviceToHost:
      want_dst_dev = false;
      want_src_dev = true;
      break;
    case cudaMemcpyDeviceToDevice:
      want_dst_dev = true;
      want_src_dev = true;
      break;
    case cudaMemcpyDefault:
      want_dst_dev = dst_dev;
      want_src_dev = src_dev;
      break;
    default:
      Report("%s: invalid kind %d", api, static_cast<int>(kind));
      return Fail(cudaErrorInvalidMemcpyDirection);
  }
  if (want_dst_dev != dst_dev || want_src_dev != src_dev) {
    Report("%s(%s): dst %p is %s memory and src %p is %s memory", api,
           KindName(kind), dst, dst_dev ? "device" : "host", src,
           src_dev ? "device" : "host");
    return Fail(cudaErrorInvalidValue);
  }
  if (dst_dev && !CheckDeviceRange(dst, count, api, "destination"))
    return Fail(cudaErrorInvalidValue);
  if (src_dev && !CheckDeviceRange(src, count, api, "source"))
    return Fail(cudaErrorInvalidValue);
  if (dst != src && RangesOverlap(dst, count, src, count))
    Report("%s: source and destination overlap (dst %p, src %p, %zu bytes)",
           api, dst, src, count);
  std::memmove(dst, src, count);
  return cudaSuccess;
}

cudaError_t Set(const char* api, void* ptr, int value, size_t count) {
  if (count == 0) return cudaSuccess;
  if (!CheckDeviceRange(ptr, count, api, "destination"))
    return Fail(cudaErrorInvalidValue);
  std::memset(ptr, value, count);
  return cudaSuccess;
}

bool ValidStreamOrReport(const char* api, cudaStream_t stream) {
  if (IsValidStream(stream)) return true;
  Report("%s: %p is not a live stream", api, static_cast<void*>(stream));
  return false;
}

bool ValidEvent(cudaEvent_t e) {
  Handles& h = TheHandles();
  std::lock_guard<std::mutex> lock(h.mu);
  return h.events.count(e) != 0;
}

}  // namespace

const Options& Opts() {
  static const Options o = ReadOptions();
  return o;
}

int CurrentDevice() { return t_device; }

void Report(const char* fmt, ...) {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fputs("cuda_emu: ", stderr);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

void SetLastError(cudaError_t error) { t_last_error = error; }

bool FindAllocation(const void* p, uintptr_t* base, size_t* size) {
  Heap& h = TheHeap();
  std::lock_guard<std::mutex> lock(h.mu);
  auto* a = FindLocked(h, reinterpret_cast<uintptr_t>(p));
  if (a == nullptr) return false;
  *base = a->first;
  *size = a->second.size;
  return true;
}

bool IsDeviceRange(const void* p, size_t bytes) {
  Heap& h = TheHeap();
  std::lock_guard<std::mutex> lock(h.mu);
  uintptr_t x = reinterpret_cast<uintptr_t>(p);
  auto* a = FindLocked(h, x);
  if (a == nullptr) return false;
  if (bytes > 0 && x == a->first + a->second.size) return false;
  return x + bytes <= a->first + a->second.size;
}

bool CheckDeviceRange(const void* p, size_t bytes, const char* api,
                      const char* what) {
  if (IsDeviceRange(p, bytes)) return true;
  uintptr_t base;
  size_t size;
  if (p != nullptr && FindAllocation(p, &base, &size)) {
    Report(
        "%s: %s [%p, +%zu bytes) runs %zu bytes past the end of its "
        "device allocation (%p, %zu bytes)",
        api, what, p, bytes,
        reinterpret_cast<uintptr_t>(p) + bytes - (base + size),
        reinterpret_cast<void*>(base), size);
  } else {
    Report("%s: %s %p (%zu bytes) is not device memory", api, what, p, bytes);
  }
  return false;
}

bool IsValidStream(cudaStream_t stream) {
  if (stream == nullptr) return true;
  Handles& h = TheHandles();
  std::lock_guard<std::mutex> lock(h.mu);
  return h.streams.count(stream) != 0;
}

bool CheckRedZones(const char* after) {
  Heap& h = TheHeap();
  std::lock_guard<std::mutex> lock(h.mu);
  const unsigned char* pattern = FillPattern();
  bool ok = true;
  for (auto& kv : h.live) {
    unsigned char* user = reinterpret_cast<unsigned char*>(kv.first);
    const size_t size = kv.second.size;
    unsigned char* front = user - kRedZone;
    unsigned char* back = user + size;
    if (std::memcmp(front, pattern, kRedZone) != 0) {
      size_t first = 0;
      while (front[first] == kFill) ++first;
      Report(
          "%s wrote before the start of device allocation %p (%zu bytes): "
          "byte %zd is modified",
          after, static_cast<void*>(user), size,
          static_cast<ptrdiff_t>(first) - static_cast<ptrdiff_t>(kRedZone));
      std::memset(front, kFill, kRedZone);
      ok = false;
    }
    if (std::memcmp(back, pattern, kRedZone) != 0) {
      size_t first = 0;
      while (back[first] == kFill) ++first;
      Report(
          "%s wrote past the end of device allocation %p (%zu bytes): "
          "byte %zu (%zu past the end) is modified",
          after, static_cast<void*>(user), size, size + first, first);
      std::memset(back, kFill, kRedZone);
      ok = false;
    }
  }
  return ok;
}

}  // namespace cuda_emu

using cuda_emu::Fail;
using cuda_emu::Opts;
using cuda_emu::Report;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return Fail(cudaErrorInvalidValue);
  *count = Opts().devices;
  if (*count == 0) return Fail(cudaErrorNoDevice);
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (Opts().devices == 0) return Fail(cudaErrorNoDevice);
  if (device < 0 || device >= Opts().devices)
    return Fail(cudaErrorInvalidDevice);
  cuda_emu::t_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return Fail(cudaErrorInvalidValue);
  if (Opts().devices == 0) return Fail(cudaErrorNoDevice);
  *device = cuda_emu::t_device;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr,
                                   int device) {
  if (value == nullptr) return Fail(cudaErrorInvalidValue);
  if (device < 0 || device >= Opts().devices)
    return Fail(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
      *value = 1024;
      break;
    case cudaDevAttrMaxBlockDimX:
      *value = 1024;
      break;
    case cudaDevAttrMaxBlockDimY:
      *value = 1024;
      break;
    case cudaDevAttrMaxBlockDimZ:
      *value = 64;
      break;
    case cudaDevAttrMaxGridDimX:
      *value = 2147483647;
      break;
    case cudaDevAttrMaxGridDimY:
      *value = 65535;
      break;
    case cudaDevAttrMaxGridDimZ:
      *value = 65535;
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = 49152;
      break;
    case cudaDevAttrWarpSize:
      *value = 32;
      break;
    case cudaDevAttrMultiProcessorCount:
      *value = Opts().multiprocessors;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *value = 9;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *value = 0;
      break;
    default:
      return Fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* bus_id, int len, int device) {
  if (bus_id == nullptr || len <= 0) return Fail(cudaErrorInvalidValue);
  if (device < 0 || device >= Opts().devices)
    return Fail(cudaErrorInvalidDevice);
  std::snprintf(bus_id, static_cast<size_t>(len), "0000:%02x:00.0", device);
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError:
      return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer:
      return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection:
      return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorUnknown:
      return "cudaErrorUnknown";
  }
  return "cudaErrorUnknown";
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInitializationError:
      return "initialization error";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDevicePointer:
      return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection:
      return "invalid copy direction for memcpy";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    case cudaErrorUnknown:
      return "unknown error";
  }
  return "unrecognized error code";
}

cudaError_t cudaGetLastError(void) {
  cudaError_t e = cuda_emu::t_last_error;
  cuda_emu::t_last_error = cudaSuccess;
  return e;
}

cudaError_t cudaPeekAtLastError(void) { return cuda_emu::t_last_error; }

cudaError_t cudaMalloc(void** ptr, size_t size) {
  using cuda_emu::kRedZone;
  if (ptr == nullptr) return Fail(cudaErrorInvalidValue);
  *ptr = nullptr;
  if (Opts().devices == 0) return Fail(cudaErrorNoDevice);
  if (size == 0) return cudaSuccess;
  cuda_emu::Heap& h = cuda_emu::TheHeap();
  {
    std::lock_guard<std::mutex> lock(h.mu);
    if (Opts().memory_limit != 0 && h.bytes + size > Opts().memory_limit)
      return Fail(cudaErrorMemoryAllocation);
  }
  const size_t total = (kRedZone + size + kRedZone + 255) / 256 * 256;
  unsigned char* raw =
      static_cast<unsigned char*>(std::aligned_alloc(256, total));
  if (raw == nullptr) return Fail(cudaErrorMemoryAllocation);
  unsigned char* user = raw + kRedZone;
  std::memset(raw, cuda_emu::kFill, kRedZone);
  if (Opts().poison) std::memset(user, cuda_emu::kFill, size);
  std::memset(user + size, cuda_emu::kFill, total - kRedZone - size);
  std::lock_guard<std::mutex> lock(h.mu);
  h.live[reinterpret_cast<uintptr_t>(user)] =
      cuda_emu::Allocation{size, cuda_emu::t_device, raw};
  h.bytes += size;
  *ptr = user;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  cuda_emu::Heap& h = cuda_emu::TheHeap();
  unsigned char* raw;
  {
    std::lock_guard<std::mutex> lock(h.mu);
    auto it = h.live.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == h.live.end()) {
      Report("cudaFree: %p is not the start of a live device allocation", ptr);
      return Fail(cudaErrorInvalidValue);
    }
    raw = it->second.raw;
    h.bytes -= it->second.size;
    h.live.erase(it);
  }
  std::free(raw);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count,
                       cudaMemcpyKind kind) {
  return cuda_emu::Copy("cudaMemcpy", dst, src, count, kind);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count,
                            cudaMemcpyKind kind, cudaStream_t stream) {
  if (!cuda_emu::ValidStreamOrReport("cudaMemcpyAsync", stream))
    return Fail(cudaErrorInvalidResourceHandle);
  return cuda_emu::Copy("cudaMemcpyAsync", dst, src, count, kind);
}

cudaError_t cudaMemset(void* ptr, int value, size_t count) {
  return cuda_emu::Set("cudaMemset", ptr, value, count);
}

cudaError_t cudaMemsetAsync(void* ptr, int value, size_t count,
                            cudaStream_t stream) {
  if (!cuda_emu::ValidStreamOrReport("cudaMemsetAsync", stream))
    return Fail(cudaErrorInvalidResourceHandle);
  return cuda_emu::Set("cudaMemsetAsync", ptr, value, count);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream,
                                      unsigned int flags) {
  if (stream == nullptr || (flags & ~1u) != 0)
    return Fail(cudaErrorInvalidValue);
  if (Opts().devices == 0) return Fail(cudaErrorNoDevice);
  auto* s = new CUstream_st{cuda_emu::t_device, flags};
  cuda_emu::Handles& h = cuda_emu::TheHandles();
  std::lock_guard<std::mutex> lock(h.mu);
  h.streams.insert(s);
  *stream = s;
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  cuda_emu::Handles& h = cuda_emu::TheHandles();
  {
    std::lock_guard<std::mutex> lock(h.mu);
    if (stream == nullptr || h.streams.erase(stream) == 0) {
      Report("cudaStreamDestroy: %p is not a live stream",
             static_cast<void*>(stream));
      return Fail(cudaErrorInvalidResourceHandle);
    }
  }
  delete stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (!cuda_emu::ValidStreamOrReport("cudaStreamSynchronize", stream))
    return Fail(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                unsigned int flags) {
  if (flags != 0) return Fail(cudaErrorInvalidValue);
  if (!cuda_emu::ValidStreamOrReport("cudaStreamWaitEvent", stream) ||
      !cuda_emu::ValidEvent(event))
    return Fail(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (event == nullptr || (flags & ~7u) != 0)
    return Fail(cudaErrorInvalidValue);
  if (Opts().devices == 0) return Fail(cudaErrorNoDevice);
  auto* e = new CUevent_st{cuda_emu::t_device, flags, false};
  cuda_emu::Handles& h = cuda_emu::TheHandles();
  std::lock_guard<std::mutex> lock(h.mu);
  h.events.insert(e);
  *event = e;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  cuda_emu::Handles& h = cuda_emu::TheHandles();
  {
    std::lock_guard<std::mutex> lock(h.mu);
    if (event == nullptr || h.events.erase(event) == 0) {
      Report("cudaEventDestroy: %p is not a live event",
             static_cast<void*>(event));
      return Fail(cudaErrorInvalidResourceHandle);
    }
  }
  delete event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!cuda_emu::ValidEvent(event)) {
    Report("cudaEventRecord: %p is not a live event",
           static_cast<void*>(event));
    return Fail(cudaErrorInvalidResourceHandle);
  }
  if (!cuda_emu::ValidStreamOrReport("cudaEventRecord", stream))
    return Fail(cudaErrorInvalidResourceHandle);
  if (stream != nullptr && stream->device != event->device) {
    Report(
        "cudaEventRecord: event of device %d recorded on a stream of "
        "device %d",
        event->device, stream->device);
    return Fail(cudaErrorInvalidResourceHandle);
  }
  event->recorded = true;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  if (!cuda_emu::ValidEvent(event)) {
    Report("cudaEventSynchronize: %p is not a live event",
           static_cast<void*>(event));
    return Fail(cudaErrorInvalidResourceHandle);
  }
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  if (!cuda_emu::ValidEvent(event)) return Fail(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

}  // extern "C"
