// A seeded batch for the built-in models: noise images [n, 1, 28, 28] in
// [0, 1) and labels from a fixed rule (the sum of the first `label_pixels`
// pixels, mod 10), so that the models have something to learn. The same
// seed and n give the same batch on every rank and every run.
#pragma once

#include <cstdint>
#include <random>

#include "src/framework/tensor.h"

namespace fluid {
namespace testing {

template <typename T>
void SyntheticBatch(uint32_t seed, int64_t n, Tensor* images, Tensor* labels,
                    int label_pixels = 10) {
  std::mt19937 rng(seed);
  T* x = images->mutable_data<T>(Shape{n, 1, 28, 28});
  int64_t* y = labels->mutable_data<int64_t>(Shape{n, 1});
  for (int64_t i = 0; i < n; ++i) {
    T sum = 0;
    for (int p = 0; p < 784; ++p) {
      x[i * 784 + p] = static_cast<T>(rng() % 1000) / static_cast<T>(1000);
      if (p < label_pixels) sum += x[i * 784 + p];
    }
    y[i] = static_cast<int64_t>(sum) % 10;
  }
}

}  // namespace testing
}  // namespace fluid
