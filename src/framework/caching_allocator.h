// CachingAllocator: keeps freed blocks and hands them out again, so that a
// training step that allocates the same sizes as the last one asks the
// backing allocator (cudaMalloc, which synchronises the device) for nothing.
//
// Sizes are rounded up to 512 bytes; a request takes the smallest cached
// block that fits and is at most twice its size (best fit, bounded waste).
// When the backing allocator fails, the cache is released and the request
// retried once. With a bounded cache (set_bounded_cache), the cache holds
// at most the most bytes ever in use at once, so that the memory held stays
// under twice the peak in use: a freed block that would overflow it sends
// the blocks cached longest back to the backing allocator first (a one-off
// burst, such as an evaluation over large batches, is not kept for ever,
// and a steady state that frees and takes again the same blocks keeps
// them, whatever ran before it). Thread-safe. The
// backing functions are the caller's; the allocator owns every block it got
// from them until EmptyCache or destruction.
#pragma once

#include <cstddef>
#include <cstdint>
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

  struct Cached {
    void* block;
    uint64_t since;  // when it was cached (a count of frees)
  };
  using FreeList = std::multimap<size_t, Cached>;

  // Returns the block cached longest to the backing allocator (a scan: it
  // runs only when a bounded cache overflows).
  void EvictOldestLocked();

  Backing backing_;
  mutable std::mutex mu_;
  FreeList free_;  // size -> block
  uint64_t frees_ = 0;
  std::unordered_map<void*, size_t> in_use_;  // block -> size
  Stats stats_;
  bool bounded_ = false;
};

}  // namespace fluid
