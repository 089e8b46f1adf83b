#include "src/framework/caching_allocator.h"

#include <algorithm>

#include "src/framework/enforce.h"

namespace fluid {

CachingAllocator::CachingAllocator(Backing backing)
    : backing_(std::move(backing)) {
  FLUID_ENFORCE(backing_.allocate && backing_.free,
                "CachingAllocator needs allocate and free functions");
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mu_);
  EmptyCacheLocked();
  // Blocks still in use at destruction belong to tensors outliving the
  // allocator; they are released too rather than leaked.
  for (auto& kv : in_use_) backing_.free(kv.first);
  in_use_.clear();
}

void* CachingAllocator::Allocate(size_t bytes) {
  const size_t size = ((bytes == 0 ? 1 : bytes) + kRound - 1) / kRound * kRound;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first <= 2 * size) {
    void* p = it->second.block;
    const size_t got = it->first;
    free_.erase(it);
    in_use_[p] = got;
    stats_.cached_bytes -= got;
    stats_.in_use_bytes += got;
    stats_.peak_in_use_bytes =
        std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
    return p;
  }
  void* p = backing_.allocate(size);
  if (p == nullptr) {
    EmptyCacheLocked();
    p = backing_.allocate(size);
  }
  FLUID_ENFORCE_CODE(p != nullptr, ErrorCode::kResourceExhausted,
                     "out of device memory allocating ", bytes, " bytes (",
                     stats_.in_use_bytes, " bytes in use)");
  ++stats_.backing_allocations;
  in_use_[p] = size;
  stats_.in_use_bytes += size;
  stats_.peak_in_use_bytes =
      std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  return p;
}

void CachingAllocator::Free(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_use_.find(ptr);
  FLUID_ENFORCE_CODE(it != in_use_.end(), ErrorCode::kInternal,
                     "freeing a block this allocator does not hold (double "
                     "free?)");
  const size_t size = it->second;
  in_use_.erase(it);
  stats_.in_use_bytes -= size;
  // The block freed last is the likeliest to be taken again: the blocks
  // cached longest make room for it.
  while (bounded_ && !free_.empty() &&
         stats_.cached_bytes + size > stats_.peak_in_use_bytes)
    EvictOldestLocked();
  if (bounded_ && stats_.cached_bytes + size > stats_.peak_in_use_bytes) {
    backing_.free(ptr);
    ++stats_.backing_frees;
    return;
  }
  // First among the blocks of its size: the block freed last is handed out
  // first (it is the one most likely still in cache, and a steady state
  // keeps reusing the same blocks).
  free_.emplace_hint(free_.lower_bound(size), size, Cached{ptr, frees_++});
  stats_.cached_bytes += size;
}

void CachingAllocator::EvictOldestLocked() {
  auto oldest = std::min_element(free_.begin(), free_.end(),
                                 [](const auto& a, const auto& b) {
                                   return a.second.since < b.second.since;
                                 });
  backing_.free(oldest->second.block);
  ++stats_.backing_frees;
  stats_.cached_bytes -= oldest->first;
  free_.erase(oldest);
}

void CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mu_);
  EmptyCacheLocked();
}

void CachingAllocator::EmptyCacheLocked() {
  for (auto& kv : free_) {
    backing_.free(kv.second.block);
    ++stats_.backing_frees;
  }
  free_.clear();
  stats_.cached_bytes = 0;
}

CachingAllocator::Stats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace fluid
