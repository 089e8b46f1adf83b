// Raw allocation per place. Host memory is 64-byte aligned so that vector
// kernels may use aligned loads.
#pragma once

#include <cstddef>

#include "src/framework/types.h"

namespace fluid {

void* Allocate(const Place& place, size_t bytes);
void Free(const Place& place, void* ptr);

}  // namespace fluid
