// CRC-32 (IEEE 802.3, the checksum of zlib, gzip and PNG), used to tell a
// torn or corrupted checkpoint file from a good one. Pure functions;
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace fluid {

// Extends `crc` (the checksum of the bytes so far; 0 for none) with
// `n` more bytes. Crc32Extend(Crc32(a), b) == Crc32(a + b).
uint32_t Crc32Extend(uint32_t crc, const void* data, size_t n);

inline uint32_t Crc32(const void* data, size_t n) {
  return Crc32Extend(0, data, n);
}
inline uint32_t Crc32(std::string_view bytes) {
  return Crc32(bytes.data(), bytes.size());
}

// A checksum as messages show it: "0x0123abcd".
std::string Crc32Text(uint32_t crc);

}  // namespace fluid
