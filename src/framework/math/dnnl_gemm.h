// Row-major products of 16-bit matrices on oneDNN (math/dnnl_context.h says
// when oneDNN is used): bfloat16 or float16 operands, products accumulated
// in float32, each result rounded once to the operands' type.
#pragma once

#include <cstdint>

#include "src/framework/device_context.h"

namespace fluid {
namespace math {

// C_b = alpha * op(A_b) op(B_b) for b in [0, batch): op(A) [m, k] (A stored
// [k, m] when trans_a), op(B) [k, n] (B stored [n, k] when trans_b).
struct GemmBatch {
  bool trans_a = false;
  bool trans_b = false;
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  // Elements from one matrix of the batch to the next; 0: one matrix the
  // batch shares.
  int64_t a_stride = 0;
  int64_t b_stride = 0;
  // false: C_b at c + b m n; true: the products summed into one C [m, n]
  // (the gradient of a shared operand), in float32, rounded once.
  bool sum = false;
};

// Computes `g` on oneDNN with dev.num_threads() threads and returns true;
// returns false, writing nothing, where oneDNN does not run it (not built,
// switched off, no implementation for T on this CPU, or an empty dim).
// T is bfloat16 or float16. The first call of a shape creates and caches
// its primitive (per thread); later calls allocate nothing.
template <typename T>
bool DnnlGemm(const CPUDeviceContext& dev, const GemmBatch& g, const T* a,
              const T* b, T* c);

}  // namespace math
}  // namespace fluid
