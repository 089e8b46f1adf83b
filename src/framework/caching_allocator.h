// CachingAllocator: keeps freed blocks and hands them out again, so that a
// training step that allocates the same sizes as the last one asks the
// backing allocator (cudaMalloc, which synchronises the device) for nothing.
//
// Sizes are rounded up to 512 bytes; a request takes the smallest cached
// block that fits and is at most twice its size (best fit, bounded waste).
// When the backing allocator fails, the cache is released and the request
// retried once. With a bounded cache (set_bounded_cache), a freed block goes
// back to the backing allocator when keeping it would make the cache hold
// more than the most bytes ever in use at once, so that the memory held
// stays under twice the peak in use (a one-off burst, such as an
// evaluation over large batches, is not kept for ever). Thread-safe. The
// backing functions are the caller's; the allocator owns every block it got
// from them until EmptyCache or destruction.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>

namespace fluid {

class CachingAllocator {
 public:
  struct Backing {
    // Returns null on failure (out of memory).
    std::function<void*(size_t)> allocate;
    std::function<void(void*)> free;
  };
  struct Stats {
    size_t in_use_bytes = 0;
    size_t cached_bytes = 0;
    size_t backing_allocations = 0;
    size_t backing_frees = 0;
    size_t peak_in_use_bytes = 0;  // the most in_use_bytes ever
  };

  static constexpr size_t kRound = 512;

  explicit CachingAllocator(Backing backing);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Throws fluid::Error (aborted) when even an empty cache cannot satisfy
  // the request.
  void* Allocate(size_t bytes);
  // `ptr` must come from Allocate and not be freed yet (else an error).
  void Free(void* ptr);
  // Returns every cached (free) block to the backing allocator.
  void EmptyCache();
  Stats stats() const;
  // See the class comment; off by default.
  void set_bounded_cache(bool bounded) {
    std::lock_guard<std::mutex> lock(mu_);
    bounded_ = bounded;
  }

 private:
  void EmptyCacheLocked();

  Backing backing_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;         // size -> block
  std::unordered_map<void*, size_t> in_use_;  // block -> size
  Stats stats_;
  bool bounded_ = false;
};

}  // namespace fluid
