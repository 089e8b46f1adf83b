// One stable hash for the whole project: 64-bit FNV-1a (FNV's prime). Stable
// across processes, builds and machines (std::hash is not), so ranks can
// compare hashes of programs and parameters, and seeds can be derived from
// names. Not for adversarial input: a checksum, not a cryptographic hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fluid {

// The starting value every hash here has used. It is not FNV's published
// offset basis (14695981039346656037, one digit longer); it stays, so that
// stamped program hashes and the initial weights seeded from variable names
// are what they were.
constexpr uint64_t kFnvOffsetBasis = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

// Hashes `n` bytes at `data`, continuing from `h` (chain calls to hash
// several pieces as one).
inline uint64_t Fnv1a64(const void* data, size_t n,
                        uint64_t h = kFnvOffsetBasis) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

inline uint64_t Fnv1a64(std::string_view s, uint64_t h = kFnvOffsetBasis) {
  return Fnv1a64(s.data(), s.size(), h);
}

}  // namespace fluid
