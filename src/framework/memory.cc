#include "src/framework/memory.h"

#include <cstdlib>

namespace fluid {

void* Allocate(const Place& place, size_t bytes) {
  FLUID_ENFORCE_CODE(place.is_cpu(), ErrorCode::kUnimplemented,
                     "no allocator for place ", place.ToString(),
                     " in this build");
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  FLUID_ENFORCE_CODE(p != nullptr, ErrorCode::kAborted, "out of memory (",
                     bytes, " bytes)");
  return p;
}

void Free(const Place& place, void* ptr) {
  (void)place;
  std::free(ptr);
}

}  // namespace fluid
