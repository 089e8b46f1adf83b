// What the 16-bit (bfloat16, float16) CPU kernels of mul, matmul and conv2d
// share: their float32 path. Where oneDNN does not run a product
// (math/dnnl_context.h), the kernel converts its 16-bit inputs to float32,
// runs the op's float32 kernel code on them and rounds each result once.
//
// The float32 copies live in per-thread buffers that grow to the largest
// request and are never shrunk, so a kernel run again on the same shapes
// allocates nothing. Like ops/conv_workspace.h's slots (which the float32
// code itself uses, hence slots of their own), a pointer must not be kept
// past the kernel call, and two live buffers must use different slots.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>

#include "ops/half_cpu.h"
#include "ops/op_helpers.h"
#include "src/framework/float16.h"

namespace fluid {
namespace ops {

enum HalfSlot : int {
  kHalfIn0 = 0,  // float32 copies of the inputs
  kHalfIn1 = 1,
  kHalfIn2 = 2,
  kHalfOut0 = 3,  // float32 results, rounded into the outputs
  kHalfOut1 = 4,
  kHalfSlots = 5,
};

// `count` floats in the calling thread's slot `slot`, 64-byte aligned.
inline float* HalfScratch(HalfSlot slot, int64_t count) {
  struct Buffer {
    void* data = nullptr;
    size_t capacity = 0;
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffers[kHalfSlots];
  Buffer& b = buffers[slot];
  const size_t bytes =
      sizeof(float) * static_cast<size_t>(count > 0 ? count : 1);
  if (bytes > b.capacity) {
    std::free(b.data);
    b.capacity = (bytes + 63) / 64 * 64;
    b.data = std::aligned_alloc(64, b.capacity);
    if (b.data == nullptr) {
      b.capacity = 0;
      throw std::bad_alloc();
    }
  }
  return static_cast<float*>(b.data);
}

// Elements per conversion task: conversions are cheap, so only long runs
// are worth spreading over the pool.
constexpr double kConvertCost = 4;

// A float32 copy of src[0, count) in slot `slot` (ops/half_cpu.h's
// conversions: float16 eight at a time with F16C), which the caller may
// also write (an accumulation's starting values).
template <typename T>
float* FloatCopy(const CPUDeviceContext& dev, HalfSlot slot, const T* src,
                 int64_t count) {
  float* dst = HalfScratch(slot, count);
  ParallelFor(dev, count, kConvertCost, [&](int64_t lo, int64_t hi) {
    ToFloats(src + lo, dst + lo, hi - lo);
  });
  return dst;
}

// dst[0, count) = src rounded to T (to nearest, ties to even).
template <typename T>
void RoundInto(const CPUDeviceContext& dev, const float* src, int64_t count,
               T* dst) {
  ParallelFor(dev, count, kConvertCost, [&](int64_t lo, int64_t hi) {
    FromFloats(src + lo, dst + lo, hi - lo);
  });
}

}  // namespace ops
}  // namespace fluid
