#include "src/framework/math/dnnl_context.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "src/framework/enforce.h"
#include "src/framework/math/dnnl_internal.h"

#ifdef FLUID_WITH_DNNL
#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
#include <omp.h>
#elif DNNL_CPU_THREADING_RUNTIME != DNNL_RUNTIME_SEQ
#error "oneDNN's threading runtime must be OpenMP or sequential"
#endif
#endif

namespace fluid {
namespace math {
namespace {

// FLUID_DNNL in the environment: 0 keeps the 16-bit kernels off oneDNN, 1
// puts them on it; unset, empty or "auto" puts them on it where it runs
// them on AMX tiles (DnnlFasterHere).
bool EnabledByEnvironment() {
  const char* v = std::getenv("FLUID_DNNL");
  if (v == nullptr || *v == '\0' || std::strcmp(v, "auto") == 0)
    return DnnlFasterHere();
  FLUID_ENFORCE(std::strcmp(v, "0") == 0 || std::strcmp(v, "1") == 0,
                "FLUID_DNNL=", v,
                ": expected 0 (the 16-bit products in float32), 1 (on "
                "oneDNN) or auto (on oneDNN where it has AMX)");
  return std::strcmp(v, "1") == 0;
}

std::atomic<bool>& EnabledFlag() {
  static std::atomic<bool> enabled(DnnlBuilt() && EnabledByEnvironment());
  return enabled;
}

}  // namespace

bool DnnlFasterHere() { return DnnlCpuIsa() == "avx512_core_amx"; }

bool DnnlBuilt() {
#ifdef FLUID_WITH_DNNL
  return true;
#else
  return false;
#endif
}

bool DnnlEnabled() { return EnabledFlag().load(std::memory_order_relaxed); }

void SetDnnlEnabled(bool enabled) {
  EnabledFlag().store(enabled && DnnlBuilt(), std::memory_order_relaxed);
}

#ifdef FLUID_WITH_DNNL

std::string DnnlCpuIsa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case dnnl::cpu_isa::all:
      return "all";
  }
  return "unknown";
}

int DnnlThreads() {
#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

namespace dnnl_internal {

const dnnl::engine& Engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& ThreadStream() {
  thread_local dnnl::stream stream(Engine());
  return stream;
}

void UseThreads(int threads) {
#if DNNL_CPU_THREADING_RUNTIME == DNNL_RUNTIME_OMP
  // The team size of the calling thread's next parallel regions: oneDNN's
  // primitives run with as many threads as the kernel's context has, and
  // a serial context (a chunk inside a parallel loop) gets one.
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
#else
  (void)threads;
#endif
}

namespace {

// Grow-only, 64-byte aligned; freed when its thread exits.
struct GrowBuffer {
  void* data = nullptr;
  size_t capacity = 0;
  ~GrowBuffer() { std::free(data); }
  void* Reserve(size_t bytes) {
    if (bytes > capacity) {
      std::free(data);
      capacity = (bytes + 63) / 64 * 64;
      data = std::aligned_alloc(64, capacity);
      if (data == nullptr) {
        capacity = 0;
        throw std::bad_alloc();
      }
    }
    return data;
  }
};

}  // namespace

void* Scratchpad(size_t bytes) {
  thread_local GrowBuffer buffer;
  return buffer.Reserve(bytes > 0 ? bytes : 1);
}

OwnedBuffer::OwnedBuffer(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  data_ = std::aligned_alloc(64, rounded > 0 ? rounded : 64);
  if (data_ == nullptr) throw std::bad_alloc();
}

OwnedBuffer::~OwnedBuffer() { std::free(data_); }

}  // namespace dnnl_internal

#else  // !FLUID_WITH_DNNL

std::string DnnlCpuIsa() { return "none"; }

int DnnlThreads() { return 0; }

#endif  // FLUID_WITH_DNNL

}  // namespace math
}  // namespace fluid
