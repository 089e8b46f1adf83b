// Per-thread scratch memory for kernels that need temporaries (the column
// matrix of a convolution, a transposed gradient, partial sums).
//
// Each thread owns a few numbered slots; a slot grows to the largest request
// it has seen and is never shrunk, so a kernel run again on the same shapes
// allocates nothing. The memory belongs to the calling thread and lives until
// it exits: a pointer must not be kept past the kernel call that got it, and
// two live buffers of one thread must use different slots. Pool threads each
// have their own slots, so work run under ParallelFor may use any slot the
// launching thread is not itself holding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace fluid {
namespace ops {

enum ScratchSlot : int {
  kScratchCol = 0,      // im2col output / col2im input
  kScratchTmp = 1,      // GEMM result or gathered output gradient
  kScratchPartial = 2,  // per-chunk partial sums, held by the launching thread
  kScratchFilter = 3,   // rearranged filters, held by the launching thread
  kScratchPacked = 4,   // filters packed for the GEMM kernel, likewise
  kScratchMasks = 5,    // edge masks of an im2col
  kScratchSlots = 6,
};

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ~ScratchBuffer() { std::free(data_); }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  // At least `bytes` bytes, 64-byte aligned; earlier contents are lost when
  // the buffer grows.
  void* Reserve(size_t bytes) {
    if (bytes > capacity_) {
      std::free(data_);
      data_ = nullptr;
      capacity_ = 0;
      size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
      data_ = std::aligned_alloc(kAlign, rounded);
      if (data_ == nullptr) throw std::bad_alloc();
      capacity_ = rounded;
    }
    return data_;
  }

 private:
  static constexpr size_t kAlign = 64;
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

// `bytes` bytes in the calling thread's slot `slot`.
inline void* ThreadScratchBytes(ScratchSlot slot, size_t bytes) {
  thread_local ScratchBuffer buffers[kScratchSlots];
  return buffers[slot].Reserve(bytes > 0 ? bytes : 1);
}

// `count` elements of T in the calling thread's slot `slot`.
template <typename T>
T* ThreadScratch(ScratchSlot slot, int64_t count) {
  size_t n = count > 0 ? static_cast<size_t>(count) : 0;
  return static_cast<T*>(ThreadScratchBytes(slot, n * sizeof(T)));
}

}  // namespace ops
}  // namespace fluid
