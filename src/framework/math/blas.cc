#include "src/framework/math/blas.h"

#include <Eigen/Core>
#include <algorithm>
#include <unsupported/Eigen/CXX11/Tensor>

#include "src/framework/cpu_team.h"

namespace fluid {
namespace math {

namespace {

template <typename T>
using RowMat =
    Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <typename T>
using Stride = Eigen::OuterStride<>;

// Row-major GEMM on sub-blocks: lda/ldb/ldc are the row strides.
template <typename T>
void GemmSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                T alpha, const T* a, int64_t lda, const T* b, int64_t ldb,
                T beta, T* c, int64_t ldc) {
  using CMap = Eigen::Map<RowMat<T>, 0, Stride<T>>;
  using CMapC = Eigen::Map<const RowMat<T>, 0, Stride<T>>;
  CMap cm(c, m, n, Stride<T>(ldc));
  CMapC am(a, trans_a ? k : m, trans_a ? m : k, Stride<T>(lda));
  CMapC bm(b, trans_b ? n : k, trans_b ? k : n, Stride<T>(ldb));
  auto product = [&](auto&& lhs, auto&& rhs) {
    if (beta == T(0)) {
      cm.noalias() = alpha * lhs * rhs;
    } else {
      if (beta != T(1)) cm *= beta;
      cm.noalias() += alpha * lhs * rhs;
    }
  };
  if (!trans_a && !trans_b) {
    product(am, bm);
  } else if (trans_a && !trans_b) {
    product(am.transpose(), bm);
  } else if (!trans_a && trans_b) {
    product(am, bm.transpose());
  } else {
    product(am.transpose(), bm.transpose());
  }
}

// Splits C into one block of rows (or columns, when C is wide) per thread
// and runs the single-threaded product on each, on the context's threads
// (RunOnTeam): Eigen's kernel at full speed on every core, no shared state
// between blocks.
template <typename T>
void GemmTeam(const CPUDeviceContext& dev, bool trans_a, bool trans_b,
              int64_t m, int64_t n, int64_t k, T alpha, const T* a, const T* b,
              T beta, T* c) {
  const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n, ldc = n;
  const bool split_rows = m >= n;
  const int64_t extent = split_rows ? m : n;
  // Blocks stay a multiple of 16 so the kernel's panels stay full.
  int64_t block = (extent + dev.num_threads() - 1) / dev.num_threads();
  block = (block + 15) / 16 * 16;
  const int64_t blocks = (extent + block - 1) / block;
  RunOnTeam(dev, blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const int64_t lo = i * block, len = std::min(block, extent - lo);
      if (split_rows) {
        GemmSerial(trans_a, trans_b, len, n, k, alpha,
                   trans_a ? a + lo : a + lo * lda, lda, b, ldb, beta,
                   c + lo * ldc, ldc);
      } else {
        GemmSerial(trans_a, trans_b, m, len, k, alpha, a, lda,
                   trans_b ? b + lo * ldb : b + lo, ldb, beta, c + lo, ldc);
      }
    }
  });
}

}  // namespace

template <typename T>
void Gemm(const CPUDeviceContext& dev, bool trans_a, bool trans_b, int64_t m,
          int64_t n, int64_t k, T alpha, const T* a, const T* b, T beta, T* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    Eigen::Map<RowMat<T>> cm(c, m, n);
    if (beta == T(0)) {
      cm.setZero();
    } else {
      cm *= beta;
    }
    return;
  }
  // Small products are not worth waking the pool for.
  constexpr int64_t kParallelFlops = 1 << 18;
  if (dev.num_threads() > 1 && m * n * k >= kParallelFlops) {
    GemmTeam(dev, trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
  } else {
    GemmSerial(trans_a, trans_b, m, n, k, alpha, a, trans_a ? m : k, b,
               trans_b ? k : n, beta, c, n);
  }
}

template void Gemm<float>(const CPUDeviceContext&, bool, bool, int64_t, int64_t,
                          int64_t, float, const float*, const float*, float,
                          float*);
template void Gemm<double>(const CPUDeviceContext&, bool, bool, int64_t,
                           int64_t, int64_t, double, const double*,
                           const double*, double, double*);

}  // namespace math
}  // namespace fluid
