// sequence_erase's host work, shared by the CPU and CUDA kernels: which
// rows survive and the LoD they leave.
#pragma once

#include <cstdint>
#include <vector>

#include "src/framework/lod.h"

namespace fluid {
namespace ops {

// Copies the tokens of x[0..rows) that are not in `tokens` to out (room for
// rows values) and returns how many it kept; *out_lod receives the offsets
// of the kept rows of each of lod's sequences.
template <typename T>
int64_t EraseTokens(const T* x, const LoD& lod,
                    const std::vector<int32_t>& tokens, T* out, LoD* out_lod) {
  out_lod->assign(1, 0);
  int64_t kept = 0;
  for (int64_t i = 0; i < LoDCount(lod); ++i) {
    for (int64_t r = lod[i]; r < lod[i + 1]; ++r) {
      bool erase = false;
      for (int32_t t : tokens) erase = erase || x[r] == static_cast<T>(t);
      if (!erase) out[kept++] = x[r];
    }
    out_lod->push_back(kept);
  }
  return kept;
}

}  // namespace ops
}  // namespace fluid
