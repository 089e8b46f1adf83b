// Random batches for the embedding tests: two id slots "a" and "c" and a
// class "label", each [n, 1] int64.
#pragma once

#include <cstdint>
#include <random>

#include "src/framework/executor.h"

namespace fluid {
namespace testing {

// Ids uniform in [0, rows) (repeats likely), labels in [0, classes); the
// same seed gives the same batch.
inline FeedList IdBatch(uint64_t seed, int64_t n, int64_t rows,
                        int64_t classes) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> id(0, rows - 1), cls(0, classes - 1);
  Tensor a, c, l;
  int64_t* ap = a.mutable_data<int64_t>(Shape{n, 1});
  int64_t* cp = c.mutable_data<int64_t>(Shape{n, 1});
  int64_t* lp = l.mutable_data<int64_t>(Shape{n, 1});
  for (int64_t i = 0; i < n; ++i) {
    ap[i] = id(rng);
    cp[i] = id(rng);
    lp[i] = cls(rng);
  }
  return {{"a", a}, {"c", c}, {"label", l}};
}

}  // namespace testing
}  // namespace fluid
