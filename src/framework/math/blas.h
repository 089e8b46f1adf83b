// Dense linear algebra for CPU kernels. All matrices are row-major.
#pragma once

#include <cstdint>

#include "src/framework/device_context.h"

namespace fluid {
namespace math {

// C[M,N] = alpha * op(A) * op(B) + beta * C, where op(A) is [M,K] (A stored
// [K,M] when trans_a) and op(B) is [K,N] (B stored [N,K] when trans_b).
// Uses Eigen's matrix product; with a thread pool in `dev`, Eigen's tensor
// contraction spreads it over the pool.
template <typename T>
void Gemm(const CPUDeviceContext& dev, bool trans_a, bool trans_b, int64_t m,
          int64_t n, int64_t k, T alpha, const T* a, const T* b, T beta, T* c);

}  // namespace math
}  // namespace fluid
