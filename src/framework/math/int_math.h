// Integer helpers shared by the kernels' host code and the trace writers.
#pragma once

#include <cstdint>

namespace fluid {

// a / b rounded up, for a >= 0 and b > 0.
constexpr int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// a / b rounded down (towards minus infinity), for b > 0.
constexpr int64_t FloorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -CeilDiv(-a, b);
}

// Writes v in decimal (a '-' first when negative) to out, which holds at
// least 20 chars; returns the count. No allocation and no locale, so a
// signal handler may call it.
inline int FormatDecimal(int64_t v, char* out) {
  char digits[20];
  int n = 0, len = 0;
  uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  do {
    digits[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (v < 0) out[len++] = '-';
  while (n > 0) out[len++] = digits[--n];
  return len;
}

}  // namespace fluid
