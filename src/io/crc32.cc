#include "src/io/crc32.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdio>

namespace fluid {

uint32_t Crc32Extend(uint32_t crc, const void* data, size_t n) {
  // zlib takes a uInt length; feed tensors larger than 4 GiB in pieces.
  constexpr size_t kChunk = size_t{1} << 30;
  static_assert(kChunk <= UINT_MAX, "chunk must fit zlib's uInt");
  const auto* p = static_cast<const Bytef*>(data);
  uLong c = crc;
  while (n > 0) {
    size_t len = std::min(n, kChunk);
    c = ::crc32(c, p, static_cast<uInt>(len));
    p += len;
    n -= len;
  }
  return static_cast<uint32_t>(c);
}

std::string Crc32Text(uint32_t crc) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", crc);
  return text;
}

}  // namespace fluid
