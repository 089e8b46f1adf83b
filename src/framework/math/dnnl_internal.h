// What the oneDNN wrappers (dnnl_context.cc, dnnl_gemm.cc, dnnl_conv.cc)
// share; included only by them, and only when FLUID_WITH_DNNL is defined.
//
// Primitives are cached per calling thread, keyed by everything that shapes
// them (dims, layouts, attrs and the thread count oneDNN was created for):
// the first call of a shape creates the primitive and its memory objects,
// later calls only point those at the tensors and execute. The per-thread
// caches need no lock; a thread's cache lives as long as the thread.
#pragma once

#ifdef FLUID_WITH_DNNL

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

namespace fluid {
namespace math {
namespace dnnl_internal {

// The CPU engine, created once.
const dnnl::engine& Engine();
// The calling thread's stream on Engine().
dnnl::stream& ThreadStream();

// Makes oneDNN run the calling thread's next primitives with `threads`
// threads (with the OpenMP runtime, the calling thread's team size).
void UseThreads(int threads);

// The calling thread's scratchpad, at least `bytes` long (grows, never
// shrinks; valid until the thread's next call).
void* Scratchpad(size_t bytes);

// A cache key: the fields that shape one primitive.
using Key = std::array<int64_t, 24>;

// A primitive with its arguments, the memory objects re-pointed at each
// call's tensors through set_data_handle.
struct Step {
  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory> args;
};

// A memory object with no buffer yet (set_data_handle gives it one).
inline dnnl::memory Unbound(const dnnl::memory::desc& md) {
  return dnnl::memory(md, Engine(), DNNL_MEMORY_NONE);
}

// Owns a buffer of `bytes` (64-byte aligned) for the life of a cache entry:
// the operands oneDNN wants in its own layout.
class OwnedBuffer {
 public:
  explicit OwnedBuffer(size_t bytes);
  ~OwnedBuffer();
  OwnedBuffer(const OwnedBuffer&) = delete;
  OwnedBuffer& operator=(const OwnedBuffer&) = delete;
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
};

}  // namespace dnnl_internal
}  // namespace math
}  // namespace fluid

#endif  // FLUID_WITH_DNNL
