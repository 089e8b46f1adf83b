// Device side of the CUDA emulation.
//
// A launch runs its blocks one after another on the calling thread's behalf;
// the threads of a block are either user-space fibers on the calling thread
// (CUDA_EMU_SCHED=fibers, the default) or real OS threads
// (CUDA_EMU_SCHED=threads). Either way every CUDA thread has its own stack
// and registers, so __syncthreads and the warp shuffles have their real
// semantics: a thread blocks until every live thread of its block (warp)
// has arrived. __shared__ variables are function-local statics, which is
// sound because one block runs at a time (launches are serialised).
//
// Checks (see tools/cuda_emu/README.md): launch configuration limits,
// barriers reached from different source lines or by only part of the
// block, shuffles whose mask names lanes that did not take part, deadlocks,
// and writes past the end of device allocations (red zones, checked after
// every launch).
#pragma once

#include <math.h>  // float overloads of exp, log, ... in the global namespace

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_runtime_api.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __shared__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)

struct uint3 {
  unsigned int x, y, z;
};

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;

constexpr int warpSize = 32;

namespace cuda_emu {

#define CUDA_EMU_STR2(x) #x
#define CUDA_EMU_STR(x) CUDA_EMU_STR2(x)
#define CUDA_EMU_HERE __FILE__ ":" CUDA_EMU_STR(__LINE__)

// Block-wide barrier; `site` names the call for the diagnostics.
void SyncThreads(const char* site);

// Exchanges `bytes` (<= 16) within the calling thread's warp: every lane
// passes its value and gets lane (lane + delta)'s, or its own when that lane
// is past the end of its `width`-lane segment.
void ShuffleDown(const char* site, unsigned mask, const void* value,
                 size_t bytes, unsigned delta, int width, void* out);

template <typename T>
inline T ShflDown(const char* site, unsigned mask, T var, unsigned delta,
                  int width) {
  static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 16,
                "shuffle of an unsupported type");
  T out;
  ShuffleDown(site, mask, &var, sizeof(T), delta, width, &out);
  return out;
}

// __shfl_down_sync at one call site, for the types CUDA declares it for;
// anything else converts to one of them (or fails to compile) as with nvcc.
struct WarpShuffle {
  const char* site;
#define CUDA_EMU_SHFL_DOWN(T)                                                \
  T Down(unsigned mask, T var, unsigned delta, int width = warpSize) const { \
    return ShflDown(site, mask, var, delta, width);                          \
  }
  CUDA_EMU_SHFL_DOWN(int)
  CUDA_EMU_SHFL_DOWN(unsigned int)
  CUDA_EMU_SHFL_DOWN(long)
  CUDA_EMU_SHFL_DOWN(unsigned long)
  CUDA_EMU_SHFL_DOWN(long long)
  CUDA_EMU_SHFL_DOWN(unsigned long long)
  CUDA_EMU_SHFL_DOWN(float)
  CUDA_EMU_SHFL_DOWN(double)
#undef CUDA_EMU_SHFL_DOWN
};

template <typename T>
inline T AtomicAddInt(T* address, T val) {
  return __atomic_fetch_add(address, val, __ATOMIC_SEQ_CST);
}
template <typename T>
inline T AtomicAddFloat(T* address, T val) {
  T old;
  __atomic_load(address, &old, __ATOMIC_SEQ_CST);
  T desired;
  do {
    desired = old + val;
  } while (!__atomic_compare_exchange(address, &old, &desired, false,
                                      __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
  return old;
}

// A kernel launch. The launch is checked (configuration, stream), then run
// to completion before Run returns; errors go to cudaGetLastError.
class Launch {
 public:
  Launch(dim3 grid, dim3 block, size_t shared_bytes = 0,
         cudaStream_t stream = nullptr)
      : grid_(grid), block_(block), shared_(shared_bytes), stream_(stream) {}

  // `kernel` is a callable taking copies of `args` (each CUDA thread gets
  // its own copy of the parameters, as on the device).
  template <typename K, typename... A>
  void Run(const char* site, const char* name, K kernel, A... args) {
    struct Body {
      K* kernel;
      std::tuple<A...>* params;
      static void Call(void* self) {
        Body* b = static_cast<Body*>(self);
        std::apply(*b->kernel, *b->params);
      }
    };
    std::tuple<A...> params(std::move(args)...);
    Body body{&kernel, &params};
    Execute(site, name, &Body::Call, &body);
  }

 private:
  void Execute(const char* site, const char* name, void (*fn)(void*),
               void* ctx);
  dim3 grid_, block_;
  size_t shared_;
  cudaStream_t stream_;
};

// Device pointer bookkeeping, for the host-side checks of the other shims.
// True when [p, p + bytes) lies inside one live device allocation.
bool IsDeviceRange(const void* p, size_t bytes);
// As IsDeviceRange, printing a diagnostic naming `what` when it does not.
bool CheckDeviceRange(const void* p, size_t bytes, const char* api,
                      const char* what);
// True when `stream` is null or a live stream.
bool IsValidStream(cudaStream_t stream);
// Prints "cuda_emu: <message>" to stderr.
void Report(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Sets the calling thread's last error (what cudaGetLastError returns).
void SetLastError(cudaError_t error);

}  // namespace cuda_emu

#define __syncthreads() ::cuda_emu::SyncThreads(CUDA_EMU_HERE)
#define __shfl_down_sync ::cuda_emu::WarpShuffle{CUDA_EMU_HERE}.Down

inline void __threadfence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void __threadfence_block() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

inline int atomicAdd(int* address, int val) {
  return ::cuda_emu::AtomicAddInt(address, val);
}
inline unsigned int atomicAdd(unsigned int* address, unsigned int val) {
  return ::cuda_emu::AtomicAddInt(address, val);
}
inline unsigned long long atomicAdd(unsigned long long* address,
                                    unsigned long long val) {
  return ::cuda_emu::AtomicAddInt(address, val);
}
inline float atomicAdd(float* address, float val) {
  return ::cuda_emu::AtomicAddFloat(address, val);
}
inline double atomicAdd(double* address, double val) {
  return ::cuda_emu::AtomicAddFloat(address, val);
}

// Products rounded on their own: never contracted into a fused multiply-add
// with a following addition.
inline float __fmul_rn(float a, float b) {
  float r = a * b;
  __asm__("" : "+x"(r));
  return r;
}
inline double __dmul_rn(double a, double b) {
  double r = a * b;
  __asm__("" : "+x"(r));
  return r;
}
