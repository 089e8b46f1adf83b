// Integer helpers shared by the kernels' host code.
#pragma once

#include <cstdint>

namespace fluid {

// a / b rounded up, for a >= 0 and b > 0.
constexpr int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace fluid
