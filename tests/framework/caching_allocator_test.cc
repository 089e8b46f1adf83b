// The caching allocator's policy, over a host backing allocator whose calls
// are counted (the CUDA build puts cudaMalloc/cudaFree behind it).
#include "src/framework/caching_allocator.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "src/framework/enforce.h"

namespace fluid {
namespace {

struct Counting {
  int allocs = 0, frees = 0, fail_next = 0;
  size_t limit = SIZE_MAX, live = 0;
  std::vector<std::pair<void*, size_t>> blocks;
  CachingAllocator::Backing backing() {
    return {[this](size_t n) -> void* {
              if (fail_next > 0 || live + n > limit) {
                if (fail_next > 0) --fail_next;
                return nullptr;
              }
              ++allocs;
              live += n;
              void* p = std::malloc(n);
              blocks.emplace_back(p, n);
              return p;
            },
            [this](void* p) {
              ++frees;
              for (auto& b : blocks)
                if (b.first == p) live -= b.second;
              std::free(p);
            }};
  }
};

TEST(CachingAllocator, TheBlockFreedLastIsHandedOutFirst) {
  Counting c;
  CachingAllocator a(c.backing());
  void* x = a.Allocate(4096);
  void* y = a.Allocate(4096);
  a.Free(x);
  a.Free(y);
  // Equal sizes: the most recent free wins, every time, so one tensor that
  // is freed and reallocated step after step keeps its block.
  for (int step = 0; step < 5; ++step) {
    void* p = a.Allocate(4096);
    EXPECT_EQ(p, y) << "step " << step;
    a.Free(p);
  }
  EXPECT_EQ(c.allocs, 2);
}

TEST(CachingAllocator, ZeroBytesGetsARealBlock) {
  Counting c;
  CachingAllocator a(c.backing());
  void* p = a.Allocate(0);
  EXPECT_NE(p, nullptr);
  a.Free(p);
}

TEST(CachingAllocator, SteadyStateStepsDoNotReachTheBackingAllocator) {
  Counting c;
  CachingAllocator a(c.backing());
  for (int step = 0; step < 50; ++step) {
    std::vector<void*> ptrs;
    for (size_t n : {1000, 4096, 200000, 37, 4096})
      ptrs.push_back(a.Allocate(n));
    for (void* p : ptrs) a.Free(p);
  }
  EXPECT_EQ(c.allocs, 5) << "only the first step allocates";
  EXPECT_EQ(a.stats().in_use_bytes, 0u);
  EXPECT_GT(a.stats().cached_bytes, 0u);
  a.EmptyCache();
  EXPECT_EQ(c.frees, 5);
  EXPECT_EQ(a.stats().cached_bytes, 0u);
}

// Bounded: the cache holds at most the peak in use. A burst that came
// before (an evaluation of large batches) does not push a steady state's
// blocks out to the backing allocator at every step: the blocks cached
// longest go first.
TEST(CachingAllocator, ABoundedCacheKeepsTheSteadyStateNotAnOldBurst) {
  Counting c;
  CachingAllocator a(c.backing());
  a.set_bounded_cache(true);
  std::vector<void*> burst;
  for (int i = 0; i < 4; ++i) burst.push_back(a.Allocate(64 << 10));
  for (void* p : burst) a.Free(p);
  const size_t peak = a.stats().peak_in_use_bytes;
  EXPECT_EQ(a.stats().cached_bytes, peak);
  int after_first = 0;
  for (int step = 0; step < 20; ++step) {
    // Sizes the burst's blocks do not serve (more than twice as large).
    void* x = a.Allocate(8 << 10);
    void* y = a.Allocate(16 << 10);
    a.Free(x);
    a.Free(y);
    EXPECT_LE(a.stats().cached_bytes, a.stats().peak_in_use_bytes);
    if (step == 0) after_first = c.allocs;
  }
  EXPECT_EQ(c.allocs, after_first) << "the steady state kept its blocks";
  EXPECT_EQ(a.stats().peak_in_use_bytes, peak);
  // One 64 KiB block of the burst made room for both.
  EXPECT_EQ(c.frees, 1);
}

TEST(CachingAllocator, BestFitWithBoundedWaste) {
  Counting c;
  CachingAllocator a(c.backing());
  void* big = a.Allocate(1 << 20);
  void* small = a.Allocate(4096);
  a.Free(big);
  a.Free(small);
  EXPECT_EQ(a.Allocate(4000), small) << "the smallest block that fits";
  // 1 MiB is more than twice 100 KiB: not reused for it.
  void* mid = a.Allocate(100 << 10);
  EXPECT_NE(mid, big);
  EXPECT_EQ(a.Allocate(600 << 10), big);
  EXPECT_EQ(c.allocs, 3);
}

TEST(CachingAllocator, OutOfMemoryReleasesTheCacheAndRetries) {
  Counting c;
  c.limit = 3 << 20;
  CachingAllocator a(c.backing());
  void* p = a.Allocate(2 << 20);
  a.Free(p);                      // cached, still counted against the limit
  void* q = a.Allocate(3 << 20);  // fails, empties the cache, retries
  EXPECT_NE(q, nullptr);
  EXPECT_EQ(c.frees, 1);
  try {
    a.Allocate(1 << 20);
    FAIL() << "expected an out-of-memory error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
    EXPECT_NE(std::string(e.what()).find("out of device memory"),
              std::string::npos);
  }
}

TEST(CachingAllocator, DoubleFreeIsAnError) {
  Counting c;
  CachingAllocator a(c.backing());
  void* p = a.Allocate(10);
  a.Free(p);
  EXPECT_THROW(a.Free(p), Error);
  int x = 0;
  EXPECT_THROW(a.Free(&x), Error);
}

}  // namespace
}  // namespace fluid
